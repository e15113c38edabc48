"""What a kernel call does beyond the compiled function, planned once per graph so that a
call of a small graph costs little more than numba's own entry point: the arguments'
types as one key (or None: an argument numba is not given), and the result given back as
plain code gives it (types, the inputs returned as they are, views of inputs refused)."""

from __future__ import annotations

import operator
from typing import Any, Callable, Dict, List, Optional, Sequence

import numpy as np

from ...graph import ArrayMeta, Graph, Node, NodeKind, ScalarMeta, pysource
from .checks import ARG_INT_BITS

__all__ = ["VIEW", "arg_key", "args_ok", "restorer", "may_return_input_memory", "relinked"]

VIEW = object()  # a returned array that is part of an input
_ARG_INT = 2**ARG_INT_BITS
# C- and F-contiguous, aligned, writeable: the flags numba's array types tell apart (not
# OWNDATA: a view and an array of its own take the same compiled code)
_FLAG_BITS = 0x1 | 0x2 | 0x100 | 0x400
_DTYPE_OK: Dict[np.dtype, bool] = {}


def arg_key(args: Sequence[Any]) -> tuple:
    """The arguments' types as the compiled entry points are keyed: an array by its
    dtype, rank and layout flags, another value by its type. An integer out of
    ``ARG_INT_BITS`` gets a key no entry point has; ``args_ok`` checks the rest once per new key."""
    key: List[Any] = []
    for a in args:
        t = type(a)
        if t is np.ndarray:
            key.append((a.dtype, a.ndim, a.flags.num & _FLAG_BITS))
        elif t is float:
            key.append(t)
        elif t is int or isinstance(a, np.integer):  # the range is the value's, not the type's
            key.append(t if -_ARG_INT <= int(a) <= _ARG_INT else None)
        else:
            key.append(t)
    return tuple(key)


def args_ok(args: Sequence[Any]) -> bool:
    """Are these arguments given to numba? (not another type, a big-endian array, an
    integer out of ``ARG_INT_BITS``)"""
    for a in args:
        t = type(a)
        if t is np.ndarray:
            d = a.dtype
            ok = _DTYPE_OK.get(d)
            if ok is None:
                ok = _DTYPE_OK[d] = d.kind in "biufc" and d.byteorder != ">"
            if not ok:
                return False
        elif t is int or isinstance(a, np.integer):
            if not -_ARG_INT <= int(a) <= _ARG_INT:
                return False
        elif not (t is float or t is bool or t is complex or isinstance(a, np.generic) and a.dtype.kind in "bfc"):
            return False
    return True


def _output(graph: Graph) -> Any:
    return graph.output_node.args[0] if graph.output_node is not None else None


def _nodes(spec: Any, into: List[Node]) -> None:
    if isinstance(spec, Node):
        into.append(spec)
    elif type(spec) in (tuple, list):
        for s in spec:
            _nodes(s, into)
    elif type(spec) is dict:
        for s in spec.values():
            _nodes(s, into)


Fix = Optional[Callable[[Any, Sequence[Any]], Any]]  # None: the value as numba gives it


def _fixer(spec: Any, placeholders: Dict[Node, int]) -> Fix:
    if isinstance(spec, Node):
        if spec in placeholders:
            i = placeholders[spec]
            return lambda value, args: args[i]
        meta = spec.meta.get("val")
        want: Any = None
        if isinstance(meta, ArrayMeta) and not meta.is_array:
            want = meta.pytype
        elif isinstance(meta, ScalarMeta) and meta.pytype in (int, float, bool, complex):
            want = meta.pytype
        if want is None:
            return None
        return lambda value, args: value if type(value) is want else want(value)
    if type(spec) in (tuple, list):
        parts = [_fixer(s, placeholders) for s in spec]
        if type(spec) is tuple and all(p is None for p in parts):
            return None
        kind = type(spec)
        return lambda value, args: kind(v if p is None else p(v, args) for p, v in zip(parts, value))
    if type(spec) is dict:  # numba gives its typed dict: give a dict, in the same order
        items = [(k, _fixer(s, placeholders)) for k, s in spec.items()]
        return lambda value, args: {k: value[k] if p is None else p(value[k], args) for k, p in items}
    return None


def _generic(out: Any, placeholders: Dict[Node, int]) -> Callable[[Any, Sequence[Any]], Any]:
    """The restorer for an output naming one node more than once: each node's value is
    given once and reused (plain code returns the same object twice, numba two)."""

    def one(spec: Any, value: Any, args: Sequence[Any], seen: Dict[Node, Any]) -> Any:
        if isinstance(spec, Node):
            if spec not in seen:
                fix = _fixer(spec, placeholders)
                seen[spec] = value if fix is None else fix(value, args)
            return seen[spec]
        if type(spec) in (tuple, list):
            return type(spec)(one(s, v, args, seen) for s, v in zip(spec, value))
        if type(spec) is dict:
            return {k: one(s, value[k], args, seen) for k, s in spec.items()}
        return value

    return lambda value, args: one(out, value, args, {})


def restorer(graph: Graph) -> Fix:
    """Gives results the types plain code gives (numba returns Python floats for numpy
    scalars, and new array objects for the arguments returned as they are); None when
    numba's value is always given as it is."""
    out = _output(graph)
    placeholders = {n: i for i, n in enumerate(graph.placeholders)}
    nodes: List[Node] = []
    _nodes(out, nodes)
    if len(set(nodes)) < len(nodes):
        return _generic(out, placeholders)
    return _fixer(out, placeholders)


def _maybe_array(node: Node) -> bool:
    meta = node.meta.get("val")
    return not isinstance(meta, (ArrayMeta, ScalarMeta)) or isinstance(meta, ArrayMeta) and meta.is_array


# operators whose array result is always a new array, in numpy and in numba
_FRESH = set(pysource.BINARY_OPS) | {operator.neg, operator.invert}


def _fresh(node: Node) -> bool:
    """Is the node's array always new (never memory of an input)?"""
    if node.kind is not NodeKind.CALL or "out" in node.kwargs:
        return False
    target = node.target
    return isinstance(target, np.ufunc) or _hashable(target) and target in _FRESH


def _hashable(x: Any) -> bool:
    try:
        hash(x)
    except TypeError:
        return False
    return True


def may_return_input_memory(graph: Graph) -> bool:
    """Can a returned array (not an input returned as it is) share an input's memory? Not
    when no input or no computed output is an array, nor when every computed output
    array is new (an arithmetic operator's, a ufunc's)."""
    placeholders = set(graph.placeholders)
    nodes: List[Node] = []
    _nodes(_output(graph), nodes)
    outs = [n for n in nodes if n not in placeholders and _maybe_array(n) and not _fresh(n)]
    return bool(outs) and any(_maybe_array(p) for p in placeholders)


def relinked(value: Any, args: Sequence[Any]) -> Any:
    """The result with every returned array that is a whole input (numba gives a new
    array object over the same memory) replaced by that input, as plain code returns
    it; ``VIEW`` when a returned array is part of an input (plain's is a view linked
    to it by ``.base``, numba's is not)."""
    t = type(value)
    if t is np.ndarray:
        for a in args:
            if type(a) is np.ndarray and a is not value and np.may_share_memory(a, value):
                if (
                    a.__array_interface__["data"][0] == value.__array_interface__["data"][0]
                    and a.shape == value.shape
                    and a.strides == value.strides
                    and a.dtype == value.dtype
                ):
                    return a
                return VIEW
        return value
    if t is tuple or t is list:
        items = [relinked(v, args) for v in value]
        return VIEW if any(v is VIEW for v in items) else t(items)
    if t is dict:
        entries = {k: relinked(v, args) for k, v in value.items()}
        return VIEW if any(v is VIEW for v in entries.values()) else entries
    return value
