"""User entry points: optimize / optimize_assert / disable / run, and cache management.

@optimize(backend="eager")          # decorator (functions, methods, callable objects, classes)
def f(x): ...
@optimize                           # bare: the defaults (backend "eager")
def f2(x): ...
with optimize("eager"):             # or context manager: every call inside is translated
    g(x)
@disable                            # never translate inside
def h(): ...
"""

from __future__ import annotations

import functools
import inspect
import threading
import types
from typing import Any, Callable, Optional, Union

from . import logs as fh_logging
from ._runtime import runtime
from .backends import CompilerFn, backend_name, lookup_backend
from .config import config, env_flag
from .conversion.convert_frame import ConvertFrame, reset_state
from .hooks import Hooks
from .conversion.set_aside import set_aside

__all__ = [
    "optimize",
    "optimize_assert",
    "disable",
    "run",
    "innermost_fn",
    "remove_from_cache",
    "reset",
    "OptimizeContext",
    "DisableContext",
    "RunOnlyContext",
]

log = fh_logging.get_logger("translator")

Callback = Union[None, bool, Callable[..., Any]]


def innermost_fn(fn: Any) -> Any:
    """The function under any number of optimize/disable/run wrappers (what the cache is keyed on)."""
    while hasattr(fn, "_framehook_orig_callable"):
        fn = fn._framehook_orig_callable
        if not callable(fn):  # pragma: no cover - would be a corrupted wrapper
            raise TypeError("a framehook wrapper holds a non-callable")
    return fn


class _Context:
    """Sets the thread's runtime callback inside a ``with`` block or a wrapped call."""

    _kind = "context"

    def __init__(self, callback: Callback) -> None:
        self.callback = callback
        self._saved = threading.local()

    def __enter__(self) -> "_Context":
        stack = getattr(self._saved, "stack", None)
        if stack is None:
            stack = self._saved.stack = []
        stack.append(runtime.set_eval_frame(self.callback))
        return self

    def __exit__(self, *exc: Any) -> None:
        runtime.set_eval_frame(self._saved.stack.pop())

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        if len(args) != 1 or kwargs or not callable(args[0]):
            raise TypeError(self._misuse(args, kwargs))
        fn = innermost_fn(args[0])
        if inspect.isclass(fn):
            # wrap the class in place: construction and calls of its instances
            for name in ("__init__", "__call__"):
                if name in fn.__dict__:
                    setattr(fn, name, self(fn.__dict__[name]))
            return fn
        # a C callable: the callback is set around each call with no Python frame of ours
        wrapper = runtime.CallbackWrapper(self.callback, fn)
        functools.update_wrapper(wrapper, fn)
        wrapper._framehook_orig_callable = fn
        wrapper._framehook_context = self
        return wrapper

    def _misuse(self, args: tuple, kwargs: dict) -> str:
        return f"{self._kind}(...) expects a function, method, class or callable object, {self._got(args, kwargs)}"

    @staticmethod
    def _got(args: tuple, kwargs: dict) -> str:
        if len(args) == 1 and not kwargs:
            return f"got {type(args[0]).__name__}: {args[0]!r:.80}"
        return f"got {len(args)} positional and {len(kwargs)} keyword arguments"


class OptimizeContext(_Context):
    _kind = "optimize"

    def __init__(self, callback: ConvertFrame) -> None:
        super().__init__(callback)
        self._convert = callback

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        wrapper = super().__call__(*args, **kwargs)
        fn = innermost_fn(args[0])
        code = getattr(fn, "__code__", None)
        if isinstance(code, types.CodeType):  # what its first call would do, done now
            f_globals = getattr(fn, "__globals__", None)
            self._convert.prepare_code(code, f_globals if type(f_globals) is dict else None)
        return wrapper

    def _misuse(self, args: tuple, kwargs: dict) -> str:
        backend = getattr(self.callback, "compiler_fn", None)
        if backend is None or getattr(backend, "compiler_name", None) is not None:
            return super()._misuse(args, kwargs)
        # an unregistered backend that was perhaps the function under a bare ``@optimize``
        # (one of two positional arguments cannot be told from a backend): said first
        name = backend_name(backend)
        return (
            f"optimize({name}) took {name} as the backend (a function of two positional arguments cannot "
            "be told from a backend(graph, example_inputs)), so calling what it returned decorates: that "
            f"expects a function, method, class or callable object, {self._got(args, kwargs)}. If {name} "
            "is the function to optimize (a bare `@optimize` over it), write `@optimize()`"
        )

    def __enter__(self) -> "OptimizeContext":
        if config.raise_on_ctx_manager_usage:
            raise RuntimeError(
                "optimize(...) used as a context manager while config.raise_on_ctx_manager_usage "
                "is set; use it as a decorator"
            )
        super().__enter__()
        return self


class DisableContext(_Context):
    _kind = "disable"

    def __init__(self) -> None:
        super().__init__(None)


class RunOnlyContext(_Context):
    _kind = "run"

    def __init__(self) -> None:
        super().__init__(False)


class _NullContext:
    """What optimize() returns when the translator is disabled: leaves everything alone."""

    def __enter__(self) -> "_NullContext":
        return self

    def __exit__(self, *exc: Any) -> None:
        return None

    def __call__(self, fn: Any) -> Any:
        if not callable(fn):
            raise TypeError(f"optimize(...) expects a callable, got {type(fn).__name__}")
        return fn


def _check_optional_callable(name: str, value: Any) -> None:
    if value is not None and not callable(value):
        raise TypeError(f"optimize(): {name} must be callable or None, got {type(value).__name__}")


def _disabled_by_env() -> bool:
    return config.disable or env_flag("FRAMEHOOK_DISABLE")


def _is_target_not_backend(value: Any) -> bool:
    """Was ``value``, given as the backend, the function to optimize (bare ``@optimize``)?"""
    if isinstance(value, str) or not callable(value) or getattr(value, "compiler_name", None) is not None:
        return False  # a name, bad input (reported by lookup_backend) or a registered backend
    if inspect.isclass(value) or hasattr(value, "_framehook_orig_callable"):
        return True
    try:
        signature = inspect.signature(value)
    except (TypeError, ValueError):
        return False  # no signature to tell by (a C callable): a backend, as documented
    try:
        signature.bind(None, None)
    except TypeError:
        return True  # cannot be called as backend(graph, example_inputs)
    return False


def optimize(
    backend: Union[str, CompilerFn] = "eager",
    *,
    nopython: bool = False,
    dynamic: Optional[bool] = None,
    guard_export_fn: Optional[Callable[..., Any]] = None,
    guard_fail_fn: Optional[Callable[..., Any]] = None,
    guard_filter_fn: Optional[Callable[..., Any]] = None,
    disable: bool = False,
) -> Union[OptimizeContext, _NullContext]:
    """Translate the frames run inside the decorated callable or ``with`` block.

    backend: a registered name (``list_backends()``) or ``callable(graph, example_inputs) -> callable``.
    nopython: raise translation errors (with the user's stack) instead of running unmodified.
    dynamic: True: shape-polymorphic from the start; False: always specialize; None: automatic.
    guard_export_fn: called with the guards of every compiled entry.
    guard_fail_fn: called with a GuardFail(reason, code) when cached guards fail.
    guard_filter_fn: called with the guards of each compiled entry (a list of Guard: .name,
        .kind, .describe()); returns one bool per guard, False dropping a guard the user
        vouches for (``lambda gs: [g.kind.name != "GLOBAL_STATE" for g in gs]``).
    disable: return a no-op decorator (also when config.disable is set or FRAMEHOOK_DISABLE is
        1, true, yes or on, in any case).

    Bare ``@optimize`` (no parentheses) decorates with these defaults, as does ``optimize(fn,
    nopython=...)``: a class, an optimize/disable wrapper, or a callable that cannot be called
    with two positional arguments is what to optimize, not a backend (a backend is called as
    ``backend(graph, example_inputs)``).
    """
    if _is_target_not_backend(backend):
        return optimize(
            nopython=nopython,
            dynamic=dynamic,
            guard_export_fn=guard_export_fn,
            guard_fail_fn=guard_fail_fn,
            guard_filter_fn=guard_filter_fn,
            disable=disable,
        )(backend)
    for name, value in (("nopython", nopython), ("disable", disable)):
        if not isinstance(value, bool):
            raise TypeError(f"optimize(): {name} must be True or False, got {value!r}")
    if not (dynamic is None or dynamic is True or dynamic is False):  # 1 == True, but 1 is not valid
        raise TypeError(f"optimize(): dynamic must be None, True or False, got {dynamic!r}")
    _check_optional_callable("guard_export_fn", guard_export_fn)
    _check_optional_callable("guard_fail_fn", guard_fail_fn)
    _check_optional_callable("guard_filter_fn", guard_filter_fn)
    if disable or _disabled_by_env():
        return _NullContext()
    compiler_fn = lookup_backend(backend)
    hooks = Hooks(guard_export_fn=guard_export_fn, guard_fail_fn=guard_fail_fn, guard_filter_fn=guard_filter_fn)
    return OptimizeContext(ConvertFrame(compiler_fn, hooks, strict=nopython, dynamic=dynamic))


def optimize_assert(
    backend: Union[str, CompilerFn] = "eager",
    *,
    dynamic: Optional[bool] = None,
    guard_export_fn: Optional[Callable[..., Any]] = None,
    guard_fail_fn: Optional[Callable[..., Any]] = None,
    guard_filter_fn: Optional[Callable[..., Any]] = None,
) -> Union[OptimizeContext, _NullContext]:
    """``optimize(..., nopython=True)``: every translation error is raised."""
    return optimize(
        backend,
        nopython=True,
        dynamic=dynamic,
        guard_export_fn=guard_export_fn,
        guard_fail_fn=guard_fail_fn,
        guard_filter_fn=guard_filter_fn,
    )


def disable(fn: Optional[Callable[..., Any]] = None) -> Any:
    """Run ``fn`` (or the ``with`` block) with no interception at all."""
    ctx = DisableContext()
    return ctx if fn is None else ctx(fn)


def run(fn: Optional[Callable[..., Any]] = None) -> Any:
    """Run ``fn`` (or the block) using already compiled code only; never compile."""
    ctx = RunOnlyContext()
    return ctx if fn is None else ctx(fn)


def _code_of(f: Any) -> Optional[types.CodeType]:
    if isinstance(f, types.CodeType):
        return f
    f = innermost_fn(f)
    for candidate in (f, getattr(f, "__func__", None), getattr(type(f), "__call__", None)):
        code = getattr(innermost_fn(candidate), "__code__", None)  # the class's __call__ may be wrapped
        if isinstance(code, types.CodeType):
            return code
    return None


def remove_from_cache(f: Any) -> None:
    """Drop the compiled entries of ``f`` (function, method, wrapper or code object)."""
    code = _code_of(f)
    if code is None:
        log.warning("remove_from_cache: could not find the code object of %r; resetting everything", f)
        reset()
        return
    runtime.reset_code(code)
    set_aside.discard(code)  # entries explain() kept aside would come back otherwise


def reset() -> None:
    """Forget every compiled entry, compile id and logged-once message."""
    reset_state()
