"""What an elementwise tree ``fusion`` writes as loops may contain: the operators and
ufuncs, the dtypes, and which calls give a new array (one a tree may write into)."""

from __future__ import annotations

import operator
from typing import Any, List, Optional

import numpy as np

from ...graph import ArrayMeta, Node, NodeKind

__all__ = [
    "INFIX",
    "PREFIX",
    "UFUNCS",
    "F8",
    "I8",
    "DTYPES",
    "NARROW",
    "INT_OPS",
    "NEW_ARRAY_CALLS",
    "fresh_array",
    "array_meta",
    "INT_DIVIDE",
    "constant_divisor",
    "int64_wrapping",
]

INFIX = {operator.add: "+", operator.sub: "-", operator.mul: "*", operator.truediv: "/"}
PREFIX = {operator.neg: "-", operator.pos: "+"}
UFUNCS = {
    np.add,
    np.subtract,
    np.multiply,
    np.true_divide,
    np.negative,
    np.minimum,
    np.maximum,
    np.fmin,
    np.fmax,
    np.sqrt,
    np.exp,
    np.log,
    np.abs,
    np.absolute,
    np.tanh,
    np.sin,
    np.cos,
}
F8 = np.dtype(np.float64)
#: the dtypes a tree may have (every node and read of one tree has the same)
DTYPES = tuple(np.dtype(t) for t in (np.float64, np.float32, np.int64, np.int32))
#: dtypes numba's arithmetic widens (int32 + int32 is int64, float32 * 2.0 is float64):
#: every operation's result and every scalar is cast back, which is what numpy gives
#: (integer wraparound included: the low bits of a wider sum are the narrow sum's)
NARROW = (np.dtype(np.float32), np.dtype(np.int32))
#: the operations an integer tree may use (the others give floats, or numba's meaning differs)
INT_OPS = {operator.add, operator.sub, operator.mul, operator.neg, operator.pos, operator.pow}
INT_OPS |= {np.add, np.subtract, np.multiply, np.negative, np.minimum, np.maximum, np.abs, np.absolute, np.clip}

#: integer ``//`` and ``%``, fused only by a constant divisor (``constant_divisor``)
INT_DIVIDE = {operator.floordiv: "//", operator.mod: "%", np.floor_divide: "//", np.remainder: "%"}


def constant_divisor(node: Node, dtype: np.dtype) -> bool:
    """Is ``node`` a signed integer array divided by a positive constant that fits its
    dtype (``x % 7``, ``n // 2``)? Then no divisor is zero and ``MIN // -1`` cannot
    happen (numpy warns on both, numba would not; LLVM's division traps on the second),
    and numba floors as numpy does: the remainder takes the divisor's sign."""
    divisor = node.args[1] if len(node.args) == 2 else None
    return dtype.kind == "i" and type(divisor) is int and 0 < divisor <= np.iinfo(dtype).max


#: calls whose value is a new array (with ``UFUNCS``, the operators and ``np.clip``)
NEW_ARRAY_CALLS = {np.zeros, np.ones, np.empty, np.full, np.zeros_like, np.ones_like, np.empty_like, np.full_like}


def array_meta(arg: Any) -> Optional[ArrayMeta]:
    """The array a graph value was traced as, or None (a scalar, a constant, not an array)."""
    meta = arg.meta.get("val") if isinstance(arg, Node) else None
    return meta if isinstance(meta, ArrayMeta) and meta.is_array else None


def fresh_array(node: Node) -> bool:
    """Is the node's value an array numpy made new for it (not a view, not an input)?"""
    if node.kind is not NodeKind.CALL or node.impure or "out" in node.kwargs:
        return False
    target = node.target
    try:
        return target in NEW_ARRAY_CALLS or target in UFUNCS or target in INFIX or target in PREFIX
    except TypeError:  # an unhashable target
        return False


#: int64 operations written on uint64 (``int64_wrapping``)
_WRAPPING = {operator.add: "+", operator.sub: "-", operator.mul: "*", np.add: "+", np.subtract: "-", np.multiply: "*"}
I8 = np.dtype(np.int64)


def int64_wrapping(names: Any, op: Any, texts: List[str]) -> Optional[str]:
    """int64 arithmetic that wraps as numpy's does, or None for an operation that needs no
    care: numba marks signed adds and multiplies "no signed wrap", so LLVM may assume
    ``b * b >= 0`` and fold a comparison after an overflow; unsigned arithmetic has the
    same bits, defined."""
    u, i = names.bind(np.uint64, "numpy_uint64"), names.bind(np.int64, "numpy_int64")
    if op in _WRAPPING:
        return f"{i}({u}({texts[0]}) {_WRAPPING[op]} {u}({texts[1]}))"
    if op is operator.neg or op is np.negative:
        return f"{i}({u}(0) - {u}({texts[0]}))"
    if op is np.abs or op is np.absolute:
        return f"{i}({u}(0) - {u}({texts[0]}) if {texts[0]} < 0 else {u}({texts[0]}))"
    if op is operator.pow:
        k = int(texts[1])
        return f"{i}({' * '.join([f'{u}({texts[0]})'] * k)})" if k else f"{i}(1)"
    return None
