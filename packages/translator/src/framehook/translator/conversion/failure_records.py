"""Recording a frame whose translation failed, for the conversion loop.

The loop calls ``record_translation_failure(frame.function, frame.f_locals, exc)`` when
converting a frame fails internally and the ``FRAMEHOOK_RECORD_DIR`` environment variable
(or the ``directory`` argument, from ``config.record_dir``) names a directory; the returned
path goes into the error message. The record is written through framehook-records' public
``record_call``, which calls the function once, plainly, to capture its outcome: the loop
calls this with interception disabled (run-only). framehook-records is optional (the
``records`` extra): without it no record is written and this returns None.
"""

from __future__ import annotations

import inspect
import os
import re
import time
import types
from typing import Any

ENV_VAR = "FRAMEHOOK_RECORD_DIR"


def record_directory(directory: str | None = None) -> str | None:
    return directory or os.environ.get(ENV_VAR) or None


def args_from_locals(code: types.CodeType, f_locals: dict) -> tuple[tuple, dict]:
    """Rebuild call arguments from a frame's locals at entry (parameters by position/name)."""
    npos = code.co_argcount
    nkw = code.co_kwonlyargcount
    names = code.co_varnames
    args = [f_locals[n] for n in names[:npos] if n in f_locals]
    kwargs = {n: f_locals[n] for n in names[npos : npos + nkw] if n in f_locals}
    i = npos + nkw
    if code.co_flags & inspect.CO_VARARGS:
        args.extend(f_locals.get(names[i], ()))
        i += 1
    if code.co_flags & inspect.CO_VARKEYWORDS:
        kwargs.update(f_locals.get(names[i], {}))
    return tuple(args), kwargs


def record_translation_failure(
    function: Any, f_locals: dict, error: BaseException, *, directory: str | None = None, decisions: dict | None = None
) -> str | None:
    """Write a record of the failing frame; return its path, or None. Never raises."""
    folder = record_directory(directory)
    if folder is None or not isinstance(function, types.FunctionType):
        return None
    try:
        from framehook.records import record_call
    except ImportError:  # framehook-records is not installed: no records
        return None
    try:
        args, kwargs = args_from_locals(function.__code__, f_locals)
        safe = re.sub(r"[^A-Za-z0-9_.]+", "_", function.__qualname__)
        path = os.path.join(folder, f"{safe}.{os.getpid()}.{time.time_ns()}.fhrec")
        note = f"translation failed: {type(error).__name__}: {error}"
        translator = {"error": note[:2000], "decisions": decisions or {}}
        record_call(function, args, kwargs, path=path, translator=translator, notes=[note[:2000]])
        return path
    except Exception:  # recording is best effort: never mask the original failure
        return None
