"""The runtime, imported once with its API version checked; it is handed to what needs it
below (graph code generation marks the functions it generates with its skip_code)."""

from __future__ import annotations

import types
from typing import Any

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


def never_intercept(*modules: types.ModuleType) -> None:
    """Mark the code of every function the modules define (their classes' methods too) as
    never intercepted: framehook's own code that compiled code calls would otherwise reach
    the frame callback once per function, to be skipped there (about 25 us each, in the
    first call that meets them)."""

    def mark(obj: Any, module_name: str) -> None:
        fn = getattr(obj, "__func__", obj)  # staticmethod, classmethod
        code = getattr(fn, "__code__", None)
        if isinstance(code, types.CodeType) and getattr(fn, "__module__", None) == module_name:
            runtime.skip_code(code)

    for module in modules:
        for value in list(vars(module).values()):
            if isinstance(value, type) and value.__module__ == module.__name__:
                for member in list(vars(value).values()):
                    if isinstance(member, property):
                        for part in (member.fget, member.fset, member.fdel):
                            if part is not None:
                                mark(part, module.__name__)
                    else:
                        mark(member, module.__name__)
            else:
                mark(value, module.__name__)


__all__ = ["runtime", "REQUIRED_API", "never_intercept"]
