"""The runtime, imported once with its API version checked."""

from __future__ import annotations

REQUIRED_API = 2  # 2: CallbackWrapper, which optimize/disable/run decorators return

try:
    import framehook.runtime as runtime
except ImportError as e:  # pragma: no cover - packaging error
    raise ImportError(
        "framehook.translator needs framehook-runtime (pip install framehook-runtime>=0.2,<0.3): " + str(e)
    ) from e

# an ImportError naming both versions when the installed runtime is older
runtime.require_api(REQUIRED_API, "framehook.translator")

__all__ = ["runtime", "REQUIRED_API"]
