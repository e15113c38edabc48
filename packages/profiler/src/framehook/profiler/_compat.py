"""Version shims (3.9-3.15), kept apart so the other modules read the same on every version."""

from __future__ import annotations

import sys
import threading
import traceback
import types
from typing import Any, Callable, Optional

HAS_GETPROFILE = sys.version_info >= (3, 10)


def shutdown_error_report(exc: BaseException, tb: Optional[types.TracebackType]) -> str:
    """The interpreter's report of an exception raised by its wait for threads at exit (an
    ignored exception), `tb` being the traceback from threading's frame down. Up to 3.12
    the header names the threading module and the frames show position markers as
    traceback.format_tb does; 3.13 and 3.14 say "on threading shutdown", show none, and
    end with "Name: message" even for an empty message; from 3.15 the frames and the last
    line are as the traceback module formats them."""
    if sys.version_info < (3, 13):
        lines = [f"Exception ignored in: {threading!r}\n"]
        if tb is not None:
            lines.append("Traceback (most recent call last):\n")
            lines.extend(traceback.format_tb(tb))
        lines.append(_plain_exception_line(exc))
        return "".join(lines)
    lines = ["Exception ignored on threading shutdown:\n"]
    if tb is not None:
        lines.append("Traceback (most recent call last):\n")
    if sys.version_info >= (3, 15):
        if tb is not None:
            lines.extend(traceback.format_tb(tb))
        lines.extend(traceback.format_exception_only(exc))
        return "".join(lines)
    if tb is not None:
        for frame in traceback.extract_tb(tb):
            lines.append(f'  File "{frame.filename}", line {frame.lineno}, in {frame.name}\n')
            if frame.line:
                lines.append(f"    {frame.line.strip()}\n")
    lines.append(_plain_exception_line(exc))
    return "".join(lines)


def _plain_exception_line(exc: BaseException) -> str:
    cls = type(exc)
    name = cls.__qualname__ if cls.__module__ in ("builtins", "__main__") else f"{cls.__module__}.{cls.__qualname__}"
    try:
        message = str(exc)
    except Exception:
        message = "<exception str() failed>"
    return f"{name}: {message}\n"


# The interpreter calls threading._shutdown at exit once up to 3.14. From 3.15 it calls it
# again as long as threads of threading's run, and stops at the first call that raises.
EXIT_WAIT_REPEATS_UNTIL_IT_RAISES = sys.version_info >= (3, 15)


class _WaitEnded(BaseException):
    """Raised by the stand-in for the interpreter's wait, to end its calls (never shown)."""


def no_second_exit_wait() -> None:
    """Stands in for threading._shutdown once the command line's wait at exit was ended:
    the interpreter goes on to exit without waiting (again), as after its own wait raised.
    Where it would call the stand-in until it raises, it raises an exception that a one-off
    sys.unraisablehook keeps from being reported."""
    if not EXIT_WAIT_REPEATS_UNTIL_IT_RAISES:
        return
    ended = _WaitEnded()
    previous = sys.unraisablehook

    def hook(unraisable: Any) -> None:
        sys.unraisablehook = previous
        if unraisable.exc_value is not ended:
            previous(unraisable)

    sys.unraisablehook = hook
    raise ended


def thread_profile_hook() -> Optional[Callable[..., Any]]:
    """The hook that threading installs on new threads (threading.getprofile is 3.10+)."""
    if HAS_GETPROFILE:
        return threading.getprofile()
    return threading._profile_hook  # type: ignore[attr-defined]  # pragma: no cover


def code_qualname(code: types.CodeType) -> str:
    """co_qualname exists from 3.11; before that the plain name is the best we have."""
    return getattr(code, "co_qualname", code.co_name)
