"""enable / run_only / disable: the thread's callback as context managers and decorators."""

from __future__ import annotations

import functools
import inspect
from typing import Any, Callable, TypeVar, Union

from ._C import CallbackScope, CallbackWrapper

F = TypeVar("F", bound=Callable[..., Any])
Callback = Union[None, bool, Callable[..., Any]]


class _CallbackContext(CallbackScope):
    """Sets the thread's callback on entry and restores the previous one on exit.

    ``__enter__`` and ``__exit__`` are CallbackScope's C methods: no Python frame runs under
    the scope's callback while entering or exiting, so a callback that raises (or returns
    something invalid) for every frame is still removed on exit. The previous callbacks are
    kept per thread, so one object can be entered on several threads, or re-entered
    recursively, and each exit restores what its entry replaced.
    """

    __slots__ = ()

    def __call__(self, fn: F) -> F:
        if not callable(fn):
            raise TypeError(f"{self.name}() used as a decorator needs a callable, not {type(fn).__name__}")
        if inspect.isgeneratorfunction(fn) or inspect.iscoroutinefunction(fn) or inspect.isasyncgenfunction(fn):
            raise TypeError(
                f"{self.name}() cannot decorate {fn.__qualname__}: generator and coroutine functions "
                "run after the call returns; use it as a context manager around their use instead"
            )

        # a C callable, not a Python function around a with block: no extra frame per call
        return functools.update_wrapper(CallbackWrapper(self.callback, fn), fn)  # type: ignore[return-value]

    def __repr__(self) -> str:
        return f"{self.name}({self.callback!r})"


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
