"""framehook.runtime: a PEP 523 frame-evaluation hook for CPython 3.9-3.15.

Each thread may set a callback. When a thread with a callback calls a plain Python
function, the callback decides what runs instead: it returns ``None`` (never intercept
this code object again) or ``GuardedCode(code, check_fn)``, which is cached on the code
object and runs, in place of the original, on every later call for which
``check_fn(f_locals)`` is true. See the package README for which frames are intercepted.
"""

from __future__ import annotations

from ._C import (
    CacheEntryInfo,
    CallbackWrapper,
    FrameView,
    GuardChecker,
    GuardedCode,
    cache_entries,
    call_with,
    eval_frame_installed,
    frame_state,
    get_eval_frame,
    is_skipped,
    reset_code,
    set_eval_frame,
    set_guard_error_hook,
    set_trace_callbacks,
    skip_code,
)
from .contexts import disable, enable, run_only
from .version import API_VERSION, __version__, require_api

__all__ = [
    "API_VERSION",
    "CacheEntryInfo",
    "CallbackWrapper",
    "FrameView",
    "GuardChecker",
    "GuardedCode",
    "__version__",
    "cache_entries",
    "call_with",
    "disable",
    "enable",
    "eval_frame_installed",
    "frame_state",
    "get_eval_frame",
    "is_skipped",
    "require_api",
    "reset_code",
    "run_only",
    "set_eval_frame",
    "set_guard_error_hook",
    "set_trace_callbacks",
    "skip_code",
]
