"""The runtime, imported once with its API version checked; it is handed to what needs it
below (graph code generation marks the functions it generates with its skip_code)."""

from __future__ import annotations

from .graph.pysource import set_never_intercept

REQUIRED_API = 2  # 2: CallbackWrapper, which optimize/disable/run decorators return

try:
    import framehook.runtime as runtime
except ImportError as e:  # pragma: no cover - packaging error
    raise ImportError(
        "framehook.translator needs framehook-runtime (pip install framehook-runtime>=0.2,<0.3): " + str(e)
    ) from e

# an ImportError naming both versions when the installed runtime is older
runtime.require_api(REQUIRED_API, "framehook.translator")

# the functions generated from graphs run numpy directly: the frame hook leaves them alone
# (graph/ itself needs no runtime: it is handed the runtime's skip_code here)
set_never_intercept(runtime.skip_code)

__all__ = ["runtime", "REQUIRED_API"]
