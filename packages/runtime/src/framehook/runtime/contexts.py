"""enable / run_only / disable: the thread's callback as context managers and decorators."""

from __future__ import annotations

import functools
import inspect
import threading
from typing import Any, Callable, List, Optional, TypeVar, Union

from ._C import CallbackWrapper, set_eval_frame

F = TypeVar("F", bound=Callable[..., Any])
Callback = Union[None, bool, Callable[..., Any]]


class _CallbackContext:
    """Sets the thread's callback on entry and restores the previous one on exit.

    The previous callbacks are kept per thread, so one object can be entered on several
    threads, or re-entered recursively, and each exit restores what its entry replaced.
    """

    def __init__(self, callback: Callback, name: str) -> None:
        self._callback = callback
        self._name = name
        self._saved = threading.local()

    def _stack(self) -> List[Callback]:
        stack: Optional[List[Callback]] = getattr(self._saved, "stack", None)
        if stack is None:
            stack = self._saved.stack = []
        return stack

    def __enter__(self) -> "_CallbackContext":
        self._stack().append(set_eval_frame(self._callback))
        return self

    def __exit__(self, *exc: object) -> None:
        set_eval_frame(self._stack().pop())

    def __call__(self, fn: F) -> F:
        if not callable(fn):
            raise TypeError(f"{self._name}() used as a decorator needs a callable, not {type(fn).__name__}")
        if inspect.isgeneratorfunction(fn) or inspect.iscoroutinefunction(fn) or inspect.isasyncgenfunction(fn):
            raise TypeError(
                f"{self._name}() cannot decorate {fn.__qualname__}: generator and coroutine functions "
                "run after the call returns; use it as a context manager around their use instead"
            )

        # a C callable, not a Python function around a with block: no extra frame per call
        return functools.update_wrapper(CallbackWrapper(self._callback, fn), fn)  # type: ignore[return-value]

    def __repr__(self) -> str:
        return f"{self._name}({self._callback!r})"


def enable(callback: Callable[..., Any]) -> _CallbackContext:
    """Intercept this thread's calls with ``callback`` inside the block or decorated function."""
    if not callable(callback):
        raise TypeError(f"enable() argument 'callback' must be callable, not {type(callback).__name__}")
    return _CallbackContext(callback, "enable")


def run_only() -> _CallbackContext:
    """Reuse cached code inside the block without calling any callback; misses run normally."""
    return _CallbackContext(False, "run_only")


def disable() -> _CallbackContext:
    """Run everything unmodified inside the block or decorated function."""
    return _CallbackContext(None, "disable")
