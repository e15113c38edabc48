"""Static checks of a graph before the numba backend compiles it: where numba's semantics
could differ from plain Python's in a way no run-time check sees.

* ``integer_risk``: integer scalars. Python's integers never overflow and numpy's integer
  scalars warn when they do; numba's are 64-bit and wrap silently. Every integer scalar
  gets a bound on its magnitude in bits (arguments are held to 32 bits at call time, array
  sizes to 48) carried through the arithmetic; a result that could need 64 bits or more
  makes the graph run eager. So do conversions of floats to Python ints (Python's are
  exact at any size) and integer-array ``//``/``%`` (numpy warns on a zero divisor, numba
  gives 0 silently).
* ``mutated_inputs``: which inputs a graph may write, so that a failed kernel run can be
  undone and the graph rerun eager.

The run-time checks (floating-point flags, exceptions, views) live in ``backends/numba/__init__.py``.
"""

from __future__ import annotations

import builtins
import math
import operator
from typing import Any, Dict, List, Optional, Set

import numpy as np

from ...graph import ArrayMeta, Graph, Node, NodeKind, ScalarMeta
from ...graph.ir import IMPURE_METHODS, IMPURE_TARGETS, map_arg
from ...graph.loop import Loop, WhileLoop, is_loop
from .bounds import CHECKED
from .fusion_ops import INT_DIVIDE, constant_divisor

__all__ = ["integer_risk", "mutated_inputs", "user_index", "ARG_INT_BITS", "SIZE_BITS"]

#: integer arguments (Python or numpy scalars) must fit in this many bits, or the call runs eager
ARG_INT_BITS = 31
#: array sizes and dimensions are assumed to fit in this many bits (2**48 elements)
SIZE_BITS = 48
_LIMIT = 63  # a result bounded by 2**63 fits numba's int64
_UNBOUNDED = 10**6

_SUMS = {operator.add, operator.sub, operator.iadd, operator.isub, np.add, np.subtract}
_PRODUCTS = {operator.mul, operator.imul, np.multiply}
_DIVISIONS = {
    operator.floordiv,
    operator.ifloordiv,
    operator.mod,
    operator.imod,
    np.floor_divide,
    np.remainder,
    np.fmod,
    divmod,
    np.divmod,
}
#: integer divisions numba does as numpy when the divisor is a positive constant
_BY_CONSTANT = set(INT_DIVIDE)
_GROWTH_ONE = {
    operator.neg,
    abs,
    operator.abs,
    np.abs,
    np.absolute,
    np.negative,
    operator.invert,
    operator.and_,
    operator.or_,
    operator.xor,
    np.bitwise_and,
    np.bitwise_or,
    np.bitwise_xor,
}
_SAME = {
    operator.pos,
    operator.rshift,
    operator.irshift,
    min,
    max,
    np.minimum,
    np.maximum,
    int,
    operator.index,
    np.int64,
    np.int32,
    np.int16,
    np.int8,
    np.intp,
    np.sign,
}
_POWERS = {operator.pow, operator.ipow, pow, np.power}
_SHIFTS = {operator.lshift, operator.ilshift, np.left_shift}
_SIZES = {len, np.argmax, np.argmin, np.count_nonzero, np.searchsorted, np.size, np.ndim}
_TO_INT = {int, round, math.floor, math.ceil, math.trunc, builtins.round}


def _int_meta(node: Node) -> bool:
    """Is this node an integer scalar (a Python int or a numpy integer scalar)?"""
    meta = node.meta.get("val")
    if isinstance(meta, ScalarMeta):
        return meta.pytype is int
    if isinstance(meta, ArrayMeta):
        return not meta.is_array and meta.dtype.kind in "iu"
    return False


def _float_input(node: Node) -> bool:
    for arg in node.args[:1]:
        if isinstance(arg, Node):
            meta = arg.meta.get("val")
            if isinstance(meta, ScalarMeta):
                return meta.pytype is float
            if isinstance(meta, ArrayMeta):
                return meta.dtype.kind == "f"
        return type(arg) is float
    return False


def _hashable_in(target: Any, group: Set[Any]) -> bool:
    try:
        return target in group
    except TypeError:
        return False


class _Bits:
    """Magnitude bounds, in bits, of the integer scalars of one graph and its loop bodies."""

    def __init__(self) -> None:
        self.bits: Dict[Node, Any] = {}
        self.risk: Optional[str] = None

    def of(self, arg: Any) -> int:
        if isinstance(arg, Node):
            got = self.bits.get(arg)
            if isinstance(got, int):
                return got
            return _UNBOUNDED if _int_meta(arg) else 0
        if type(arg) is bool:
            return 1
        if type(arg) is int:
            return abs(arg).bit_length()
        return 0

    def graph(self, graph: Graph, placeholders: Dict[Node, Any]) -> List[Any]:
        """Bound every node; the output's bounds (a list, one per output item) for loops."""
        out: List[Any] = []
        for node in graph.nodes:
            if node.kind is NodeKind.PLACEHOLDER:
                self.bits[node] = placeholders.get(node, ARG_INT_BITS if _int_meta(node) else 0)
            elif node.kind is NodeKind.OUTPUT:
                items = node.args[0]
                out = [self.of(a) for a in items] if type(items) is tuple else [self.of(items)]
            elif node.kind is NodeKind.CALL and is_loop(node.target):
                self.bits[node] = self.loop(node)
            else:
                self.bits[node] = self.node(node)
            if self.risk is not None:
                break
        return out

    def loop(self, node: Node) -> Any:
        target = node.target
        if isinstance(target, Loop):
            start, stop, step, carried_in, invariants = node.args
            lead = max(self.of(start), self.of(stop)) + 1
        else:
            assert isinstance(target, WhileLoop)
            _, carried_in, invariants = node.args
            lead = 1
        carried = [self.of(a) for a in carried_in]
        body = target.body
        for _ in range(3):  # bounds that still grow after two passes grow without limit
            inputs = [lead, *carried, *(self.of(a) for a in invariants)]
            out = self.graph(body, dict(zip(body.placeholders, inputs)))
            if self.risk is not None:
                return _UNBOUNDED
            grown = [max(c, o) for c, o in zip(carried, out)]
            if grown == carried:
                return tuple(carried)
            carried = grown
        for ph, b in zip(target.carried, carried):
            if b and _int_meta(ph):
                self.risk = (
                    f"an integer carried around a loop ({ph.name}) may outgrow 64 bits "
                    f"(Python's integers do not overflow, numba's do)"
                )
        return _UNBOUNDED

    def node(self, node: Node) -> int:
        if node.kind is NodeKind.GETATTR:
            return SIZE_BITS if node.target in ("shape", "size", "ndim", "itemsize", "nbytes") else 0
        if node.kind is not NodeKind.CALL:
            return _UNBOUNDED if _int_meta(node) else 0
        target, args = node.target, node.args
        if target is operator.getitem and args and isinstance(args[0], Node):
            base = self.bits.get(args[0])
            if isinstance(base, tuple) and type(args[1]) is int:
                return base[args[1]]
            if args[0].kind is NodeKind.GETATTR and args[0].target == "shape":
                return SIZE_BITS
        meta = node.meta.get("val")
        array_int = isinstance(meta, ArrayMeta) and meta.is_array and meta.dtype.kind in "iu"
        by_constant = array_int and _hashable_in(target, _BY_CONSTANT) and constant_divisor(node, meta.dtype)
        if _hashable_in(target, _DIVISIONS) and array_int and not by_constant:
            self.risk = f"integer-array // or % ({node.name}): numpy warns on a zero divisor, numba gives 0 silently"
            return 0
        if (
            _hashable_in(target, _POWERS)
            and array_int
            and not (len(args) > 1 and type(args[1]) is int and args[1] >= 0)
        ):
            self.risk = (
                f"an integer array to a power that is not a constant ({node.name}): "
                f"numpy raises on negative powers, numba does not"
            )
            return 0
        if (
            array_int
            and (meta.dtype.itemsize < 8 or meta.dtype.kind == "u")
            and any(isinstance(a, Node) and isinstance(a.meta.get("val"), ScalarMeta) for a in args)
        ):
            self.risk = (
                f"a Python scalar combined with a {meta.dtype} array ({node.name}): numpy "
                f"raises OverflowError when it is out of the dtype's range, numba wraps it"
            )
            return 0
        if not _int_meta(node):
            return 0
        if _hashable_in(target, _TO_INT) and _float_input(node):
            self.risk = (
                f"a float converted to an integer ({node.name}): Python's int is exact at "
                f"any size and raises on nan and inf, numba's is 64-bit"
            )
            return 0
        ins = [self.of(a) for a in args]
        widest = max(ins, default=0)
        if _hashable_in(target, _SUMS):
            bits = widest + 1
        elif _hashable_in(target, _PRODUCTS):
            bits = sum(ins)
        elif _hashable_in(target, _DIVISIONS) or _hashable_in(target, _GROWTH_ONE):
            bits = widest + 1
        elif _hashable_in(target, _SAME):
            bits = widest
        elif _hashable_in(target, _POWERS):
            k = args[1] if len(args) > 1 else None
            bits = ins[0] * k if type(k) is int and k >= 0 else _UNBOUNDED
        elif _hashable_in(target, _SHIFTS):
            k = args[1] if len(args) > 1 else None
            bits = ins[0] + k if type(k) is int and 0 <= k < 64 else _UNBOUNDED
        elif _hashable_in(target, _SIZES) or target is operator.getitem and not _int_array_read(args):
            bits = SIZE_BITS
        else:
            return _UNBOUNDED  # an integer numba gives as numpy does (an element, a sum): 64-bit
        if bits > _LIMIT:
            self.risk = (
                f"integer arithmetic that may need more than 64 bits ({node.name}): Python's "
                f"integers do not overflow, numba's do"
            )
        return bits


def _int_array_read(args: Any) -> bool:
    """Does ``getitem`` read an element of an integer array (any value of its dtype)?"""
    base = args[0] if args else None
    meta = base.meta.get("val") if isinstance(base, Node) else None
    return not isinstance(meta, ArrayMeta) or meta.is_array


def integer_risk(graph: Graph) -> Optional[str]:
    """Why numba's integers could give another result than Python's here, or None."""
    bits = _Bits()
    bits.graph(graph, {})
    return bits.risk


def _ancestors(node: Node, into: Set[Node]) -> None:
    todo = [node]
    while todo:
        n = todo.pop()
        if n in into:
            continue
        into.add(n)
        todo.extend(n.inputs())


def _written(graph: Graph) -> Set[Node]:
    """The nodes of ``graph`` whose arrays may be written (before views are followed back)."""
    out: Set[Node] = set()
    for node in graph.nodes:
        target = node.target
        written: List[Any] = []
        if node.kind is NodeKind.CALL and is_loop(target):
            body_written = _written(target.body)
            if isinstance(target, Loop):
                _, _, _, carried_in, invariants = node.args
            else:
                _, carried_in, invariants = node.args
            if any(ph in body_written for ph in target.carried):
                written += list(carried_in) + list(invariants)  # carried values may swap roles
            written += [a for ph, a in zip(target.invariants, invariants) if ph in body_written]
        elif node.kind is NodeKind.CALL and (_hashable_in(target, IMPURE_TARGETS) or node.meta.get("impure")):
            written += node.args[:1]
        elif node.kind is NodeKind.CALL_METHOD and target in IMPURE_METHODS:
            written += node.args[:1]
        if "out" in node.kwargs:
            written.append(node.kwargs["out"])
        for arg in written:
            found: List[Node] = []
            map_arg(arg, found.append)
            for n in found:
                _ancestors(n, out)
    return out


def mutated_inputs(graph: Graph) -> List[int]:
    """Positions of the graph's inputs that running it may write (views followed back)."""
    written = _written(graph)
    return [i for i, ph in enumerate(graph.placeholders) if ph in written]


# numpy calls and array methods that index with the values they are given
_INDEXING_CALLS = {
    getattr(np, name)
    for name in ("take", "put", "take_along_axis", "put_along_axis", "choose", "compress", "delete", "insert")
    if hasattr(np, name)
}
_INDEXING_METHODS = {"take", "put", "item", "itemset", "choose", "compress", "__getitem__", "__setitem__"}


def _slices_only(index: Any) -> bool:
    """An index of slices, ``...`` and ``None`` only: numpy and numba clip slices to the
    array, so no value of theirs reads or writes out of range."""
    items = index if type(index) is tuple else (index,)
    return all(type(s) is slice or s is Ellipsis or s is None for s in items)


def _static_item(node: Node) -> bool:
    """A constant position in a value that is not an array (``x.shape[0]``): numba types
    it when it compiles, and refuses one out of range (the graph then runs eager)."""
    base = node.args[0]
    meta = base.meta.get("val") if isinstance(base, Node) else None
    return node.target is operator.getitem and type(node.args[1]) is int and not isinstance(meta, ArrayMeta)


def user_index(graph: Graph) -> Optional[str]:
    """The first node indexing an array with values of the user's (an integer, an array,
    a loop's counter), or None when every index in the graph is a slice: a kernel whose
    other indices are all the loop lowering's (within the ranges it derived) then needs
    no bounds checks, and an out-of-range user index still raises IndexError."""
    for node in graph.nodes:
        target = node.target
        if node.kind is NodeKind.CALL:
            body = getattr(target, "body", None)
            if isinstance(body, Graph):
                found = user_index(body)
                if found is not None:
                    return found
            elif (target is operator.getitem or target is operator.setitem) and not node.meta.get(CHECKED):
                if len(node.args) < 2 or not (_slices_only(node.args[1]) or _static_item(node)):
                    return node.name
            elif _hashable_in(target, _INDEXING_CALLS):
                return node.name
        elif node.kind is NodeKind.CALL_METHOD and target in _INDEXING_METHODS:
            return node.name
    return None
