"""The runtime, imported once with its API version checked."""
from __future__ import annotations

REQUIRED_API = 1

try:
    import framehook.runtime as runtime
except ImportError as e:  # pragma: no cover - packaging error
    raise ImportError(
        "framehook.translator needs framehook-runtime (pip install framehook-runtime>=0.1,<0.2): " + str(e)
    ) from e

_found = getattr(runtime, "API_VERSION", None)
if _found != REQUIRED_API:  # pragma: no cover - only with a mismatched install
    raise ImportError(
        f"framehook.translator {__import__('framehook.translator').translator.__version__} needs the runtime API "
        f"version {REQUIRED_API}, but the installed framehook-runtime "
        f"{getattr(runtime, '__version__', '?')} provides API version {_found}")

__all__ = ["runtime", "REQUIRED_API"]
