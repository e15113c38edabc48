"""Tagged calls: calls through registered classes or methods record their instance.

This generalises what PyTorch's tracer does for nn.Module.__call__ and Optimizer.step: the
call records the instance's class, a per-class instance number (assigned when the trees
are built) and the dtype and shape of every numpy array among the instance's attributes.
"""

from __future__ import annotations

import sys
import types
from typing import Any, Callable, Dict, Tuple, TypeVar

T = TypeVar("T")

# code object -> the target it was registered through (for untag_calls and listing)
_registry: Dict[types.CodeType, object] = {}

ArrayInfo = Tuple[str, str, Tuple[int, ...]]


def _code_of(target: object) -> types.CodeType:
    """The code object whose calls a target stands for."""
    if isinstance(target, type):
        call = target.__dict__.get("__call__")
        if call is None:
            for base in target.__mro__[1:]:
                if "__call__" in base.__dict__ and base is not object:
                    call = base.__dict__["__call__"]
                    break
        if call is None:
            raise TypeError(f"tag_calls: class {target.__qualname__} defines no __call__ to tag")
        target = call
    func = getattr(target, "__func__", target)  # bound methods, classmethods, staticmethods
    code = getattr(func, "__code__", None)
    if not isinstance(code, types.CodeType):
        raise TypeError(f"tag_calls needs a Python function, method or a class with a Python __call__; got {target!r}")
    if code.co_argcount < 1:
        name = getattr(func, "__qualname__", code.co_name)
        raise TypeError(f"tag_calls: {name} takes no argument to use as the instance")
    return code


def tag_calls(target: T) -> T:
    """Register a class (its ``__call__``) or a method: calls through it record their instance.

    Returns ``target`` unchanged, so it also works as a decorator. Takes effect at once,
    also for a profiler that is recording.
    """
    _registry[_code_of(target)] = target
    _update_recording()
    return target


def untag_calls(target: object) -> None:
    """Undo :func:`tag_calls` (a no-op when the target was not registered)."""
    _registry.pop(_code_of(target), None)
    _update_recording()


def _update_recording() -> None:
    """Hands the registry to the tracer that is recording, if any."""
    from . import _tracer

    active = _tracer.active()
    if active is not None:
        active.retag(tagged_codes())


def tagged_codes() -> Tuple[types.CodeType, ...]:
    return tuple(_registry)


def _is_ndarray(value: object) -> bool:
    numpy = sys.modules.get("numpy")  # never import numpy on the user's behalf
    return numpy is not None and isinstance(value, numpy.ndarray)


def describe(instance: Any) -> Tuple[type, str, Tuple[ArrayInfo, ...]]:
    """Called by the tracer the first time it sees a tagged instance on a thread."""
    cls = type(instance)
    arrays = []
    attrs = getattr(instance, "__dict__", None)
    if isinstance(attrs, dict):
        for name, value in list(attrs.items()):
            if isinstance(name, str) and _is_ndarray(value):
                arrays.append((name, str(value.dtype), tuple(int(n) for n in value.shape)))
    return cls, cls.__qualname__, tuple(arrays)


DescribeFn = Callable[[Any], Tuple[type, str, Tuple[ArrayInfo, ...]]]
