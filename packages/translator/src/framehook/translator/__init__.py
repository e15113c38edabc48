"""framehook.translator: decides, per Python frame, what guarded code to run instead.

Public entry points (``optimize``, ``disable``, ``run``, ...) need the runtime extension
and are imported on first use, so that the guard, source, context and bytecode modules
work on their own.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

__version__ = "0.1.0"

from .config import config  # noqa: E402

# name -> submodule providing it; resolved lazily by __getattr__
_LAZY = {
    "optimize": "eval_frame",
    "optimize_assert": "eval_frame",
    "disable": "eval_frame",
    "run": "eval_frame",
    "innermost_fn": "eval_frame",
    "remove_from_cache": "eval_frame",
    "reset": "eval_frame",
    "OptimizeContext": "eval_frame",
    "register_bytecode_hook": "conversion.convert_frame",
    "last_decisions": "conversion.convert_frame",
    "register_backend": "backends",
    "lookup_backend": "backends",
    "list_backends": "backends",
    "set_logs": "logs",
    "CompileId": "guards.contexts",
    "TraceId": "guards.contexts",
    "register_global_state": "guards.contexts",
    "Guard": "guards",
    "GuardKind": "guards",
    "explain": "explaining",
    "export": "exporting",
    "Exported": "exporting",
    "ExportError": "exporting",
    "ExportGuardError": "exporting",
}

if TYPE_CHECKING:  # the lazy names as type checkers and editors should see them
    from . import debug
    from .backends import list_backends, lookup_backend, register_backend
    from .guards.contexts import CompileId, TraceId, register_global_state
    from .conversion.convert_frame import last_decisions, register_bytecode_hook
    from .eval_frame import (
        OptimizeContext,
        disable,
        innermost_fn,
        optimize,
        optimize_assert,
        remove_from_cache,
        reset,
        run,
    )
    from .explaining import explain
    from .exporting import ExportError, Exported, ExportGuardError, export
    from .guards import Guard, GuardKind
    from .logs import set_logs

# submodules reachable as attributes (``framehook.translator.debug.dump``)
_SUBMODULES = ("debug",)

# written out (not built from _LAZY) so that linters and type checkers can read it
__all__ = [
    "__version__",
    "config",
    "debug",
    "optimize",
    "optimize_assert",
    "disable",
    "run",
    "innermost_fn",
    "remove_from_cache",
    "reset",
    "OptimizeContext",
    "register_bytecode_hook",
    "last_decisions",
    "register_backend",
    "lookup_backend",
    "list_backends",
    "set_logs",
    "CompileId",
    "TraceId",
    "register_global_state",
    "Guard",
    "GuardKind",
    "explain",
    "export",
    "Exported",
    "ExportError",
    "ExportGuardError",
]


def __getattr__(name: str) -> Any:
    if name in _SUBMODULES:
        return importlib.import_module(f".{name}", __name__)
    module_name = _LAZY.get(name)
    if module_name is None:
        raise AttributeError(f"module 'framehook.translator' has no attribute {name!r}")
    module = importlib.import_module(f".{module_name}", __name__)
    value = getattr(module, name)
    globals()[name] = value
    return value


def __dir__() -> list:
    return sorted(set(globals()) | set(_LAZY) | set(_SUBMODULES))
