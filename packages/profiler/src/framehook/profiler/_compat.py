"""Version shims (3.9-3.13), kept apart so the other modules read the same on every version."""
from __future__ import annotations

import sys
import threading
import traceback
import types
from typing import Any, Callable, List, Optional

HAS_GETPROFILE = sys.version_info >= (3, 10)


def shutdown_error_lines(tb: Optional[types.TracebackType]) -> List[str]:
    """The first lines of the interpreter's report of an exception raised by its wait for
    threads at exit (an ignored exception): the header and the traceback's frames. Up to
    3.12 the header names the threading module and the frames show position markers as
    traceback.format_tb does; 3.13 says "on threading shutdown" and shows none."""
    if sys.version_info < (3, 13):
        lines = [f"Exception ignored in: {threading!r}\n"]
        if tb is not None:
            lines.append("Traceback (most recent call last):\n")
            lines.extend(traceback.format_tb(tb))
        return lines
    lines = ["Exception ignored on threading shutdown:\n"]
    if tb is not None:
        lines.append("Traceback (most recent call last):\n")
        for frame in traceback.extract_tb(tb):
            lines.append(f'  File "{frame.filename}", line {frame.lineno}, in {frame.name}\n')
            if frame.line:
                lines.append(f"    {frame.line.strip()}\n")
    return lines


def thread_profile_hook() -> Optional[Callable[..., Any]]:
    """The hook that threading installs on new threads (threading.getprofile is 3.10+)."""
    if HAS_GETPROFILE:
        return threading.getprofile()
    return threading._profile_hook  # type: ignore[attr-defined]  # pragma: no cover


def code_qualname(code: types.CodeType) -> str:
    """co_qualname exists from 3.11; before that the plain name is the best we have."""
    return getattr(code, "co_qualname", code.co_name)
