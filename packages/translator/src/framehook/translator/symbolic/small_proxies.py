"""A recorded operation's result metadata from proxies shrunk to one element per dimension.

``Tracer.record`` learns what an operation returns (type, dtype, shape) by running it on
proxies: arrays of the right shape whose memory is one element (zero strides). numpy still
computes every element of the result, so a multiply of two 1000x1000 proxies costs what the
real one does, and a first call paid for every operation of the frame twice. For the
operations below the result's dtype and type do not depend on the sizes, and its shape
follows from the input shapes by a rule checked here first, so they run on proxies whose
dimensions above 1 are shrunk to 1 (same ndim, so the same type resolution), and the
result is broadcast (a view, no copy) back to the full shape:

- elementwise operations: the ``operator`` arithmetic, comparison and bitwise functions,
  and numpy ufuncs without a core signature, called with positional operands only;
- ``matmul`` (``@``, ``numpy.matmul``) of two arrays;
- the reductions ``sum prod min max mean any all`` (function or method) with an ``axis``,
  ``keepdims`` or ``dtype``: only the reduced dimensions shrink.

Only uniform proxies shrink: arrays with every stride 0 hold one value, so a slice of them
holds the same values (an error that depends on the values, such as an integer raised to a
negative power, is raised alike). Anything else, or a shrunk run that raises, returns None
and the caller runs the operation on the full proxies, so error messages are numpy's own.
"""

from __future__ import annotations

import operator
from typing import Any, Callable, Dict, Optional, Sequence, Tuple

import numpy as np

__all__ = ["shrunk_result"]

_ELEMENTWISE = frozenset(
    (
        operator.add,
        operator.sub,
        operator.mul,
        operator.truediv,
        operator.floordiv,
        operator.mod,
        operator.pow,
        operator.lshift,
        operator.rshift,
        operator.and_,
        operator.or_,
        operator.xor,
        operator.lt,
        operator.le,
        operator.eq,
        operator.ne,
        operator.gt,
        operator.ge,
        operator.neg,
        operator.pos,
        operator.abs,
        operator.invert,
    )
)
_MATMUL = (operator.matmul, np.matmul)
_REDUCTION_METHODS = frozenset(("sum", "prod", "min", "max", "mean", "any", "all"))
_REDUCTION_FUNCTIONS = frozenset(
    getattr(np, name)
    for name in ("sum", "prod", "min", "max", "amin", "amax", "mean", "any", "all")
    if hasattr(np, name)
)
_REDUCTION_KWARGS = frozenset(("axis", "keepdims", "dtype"))
_NUMBERS = (int, float, complex, bool)


def _uniform(a: Any) -> bool:
    """A plain array whose elements all share one memory location (a proxy)."""
    return type(a) is np.ndarray and not a.dtype.hasobject and not any(a.strides)


def _shrink(a: np.ndarray, dims: Sequence[int]) -> np.ndarray:
    """``a`` with the dimensions ``dims`` cut to their first element (those above 1)."""
    index = tuple(slice(0, 1) if i in dims and d > 1 else slice(None) for i, d in enumerate(a.shape))
    return a[index]


def _all_dims(a: np.ndarray) -> range:
    return range(a.ndim)


def _run(run: Callable[..., Any], fn: Any, args: Sequence[Any], kwargs: Dict[str, Any]) -> Any:
    try:
        return run(fn, tuple(args), kwargs)
    except Exception:  # numpy's own message comes from the full run
        return None


def _elementwise(run: Callable[..., Any], fn: Any, args: Sequence[Any]) -> Any:
    arrays = [a for a in args if isinstance(a, np.ndarray)]
    if not arrays or any(not (_uniform(a) or isinstance(a, (np.generic,) + _NUMBERS)) for a in args):
        return None
    if all(d <= 1 for a in arrays for d in a.shape):
        return None  # nothing to shrink
    try:
        shape = np.broadcast_shapes(*(a.shape for a in arrays))
    except ValueError:
        return None
    small = [_shrink(a, _all_dims(a)) if isinstance(a, np.ndarray) else a for a in args]
    return _widened(_run(run, fn, small, {}), shape)


def _matmul(run: Callable[..., Any], fn: Any, args: Sequence[Any]) -> Any:
    if len(args) != 2 or not all(_uniform(a) and a.ndim >= 1 for a in args):
        return None
    a, b = args
    k = a.shape[-1]
    if (b.shape[-2] if b.ndim >= 2 else b.shape[0]) != k:
        return None
    try:
        batch = np.broadcast_shapes(a.shape[:-2], b.shape[:-2])
    except ValueError:
        return None
    # numpy's rule: (..., n, k) @ (..., k, m) -> (batch..., n, m), a 1-d side has no n or m
    shape = batch + a.shape[-2:-1] + (b.shape[-1:] if b.ndim >= 2 else ())
    if k <= 1 and all(d <= 1 for d in shape):
        return None
    result = _run(run, fn, (_shrink(a, _all_dims(a)), _shrink(b, _all_dims(b))), {})
    return _widened(result, shape)


def _widened(result: Any, shape: Tuple[int, ...]) -> Any:
    """``result`` (an array from shrunk operands) as a view of the full ``shape``."""
    if shape == () and isinstance(result, np.generic):
        return result  # a vector dot product: a numpy scalar either way
    if type(result) is not np.ndarray or result.ndim != len(shape):
        return None
    try:
        return np.broadcast_to(result, shape)
    except ValueError:  # pragma: no cover - the shapes were checked before the run
        return None


def _axes(axis: Any, ndim: int) -> Optional[Tuple[int, ...]]:
    """The reduced dimensions of an ``axis`` argument; None when numpy would reject it (or
    when it is of a kind not handled here)."""
    if axis is None:
        return tuple(range(ndim))
    items = axis if type(axis) is tuple else (axis,)
    if not all(type(i) is int for i in items):
        return None
    if not all(-ndim <= i < ndim for i in items):
        return None
    dims = tuple(i % ndim for i in items) if ndim else ()
    return dims if len(set(dims)) == len(dims) else None


def _reduction(call: Callable[..., Any], a: Any, rest: Sequence[Any], kwargs: Dict[str, Any]) -> Any:
    """``call(array, *rest, **kwargs)`` with the reduced dimensions of ``a`` shrunk."""
    if not _uniform(a) or not set(kwargs) <= _REDUCTION_KWARGS or len(rest) > 1:
        return None
    if rest and "axis" in kwargs:
        return None
    axis = rest[0] if rest else kwargs.get("axis")
    dims = _axes(axis, a.ndim)
    if dims is None or all(a.shape[i] <= 1 for i in dims):
        return None
    try:
        return call(_shrink(a, dims), *rest, **kwargs)
    except Exception:  # numpy's own message comes from the full run
        return None


def shrunk_result(
    run: Callable[..., Any], fn: Any, args: Sequence[Any], kwargs: Dict[str, Any], method: Optional[str] = None
) -> Any:
    """The result of ``fn(*args, **kwargs)`` (``method``: of ``args[0].<method>(*args[1:],
    **kwargs)``) computed by ``run`` on shrunk proxies, with the full result's type, dtype
    and shape; None when the operation is not one of those handled, or not on proxies."""
    try:
        if method is not None:
            if method in _REDUCTION_METHODS and args:
                return _reduction(lambda x, *r, **kw: run(getattr(x, method), r, kw), args[0], args[1:], kwargs)
            return None
        if fn in _ELEMENTWISE or (
            isinstance(fn, np.ufunc) and fn.signature is None and fn.nout == 1 and len(args) == fn.nin
        ):
            return None if kwargs else _elementwise(run, fn, args)
        if any(fn is m for m in _MATMUL):
            return None if kwargs else _matmul(run, fn, args)
        if fn in _REDUCTION_FUNCTIONS and args:
            return _reduction(lambda x, *r, **kw: run(fn, (x,) + r, kw), args[0], args[1:], kwargs)
    except TypeError:  # an unhashable callable
        return None
    return None
