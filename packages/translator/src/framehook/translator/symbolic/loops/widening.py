"""Loop-carried Python numbers that a loop turns into numpy scalars.

``s = 0.0`` before ``for k in range(i): s += a[i, k] * a[k, i]`` is a Python float at the
loop head and a numpy float64 after one iteration. Such a value is carried *widened*: the
body is traced with it as the numpy scalar, and the loop node gets the Python number as
its input unchanged, so the generated code runs the first iteration on the Python number
(as plain Python does) and returns it untouched when the loop runs no iteration. That is
right when the first iteration does the same with either type: the body traced with the
Python number (the failed attempt before) and with the numpy scalar must record the same
operations with the same results' types (``same_trace``), apart from the widened inputs.

After a loop whose trip count is only known when the graph runs (bounds computed in the
graph, a while loop), the widened value is a Python number or a numpy scalar depending on
that count: a *two-typed* value. The enclosing loop body (there always is one for such a
``for`` loop) is then traced twice, with the value taken as each type in turn, and must
come out the same but for those values' own types: the code after the inner loop then does
the same with either. Outside any loop body being captured the loop is not captured.
"""

from __future__ import annotations

import operator
from typing import Any, Callable, Dict, Iterable, Optional, Tuple

import numpy as np

from ...graph import ArrayMeta, Graph, Loop, ScalarMeta, WhileLoop
from ...graph.ir import Node

__all__ = ["widened", "same_trace"]

_WIDENABLE = (int, float)


def widened(head: Any, end: Any) -> bool:
    """A Python number at the loop head (``head``'s meta) that one iteration turns into a
    numpy scalar of a number kind (``end``'s meta)."""
    return (
        isinstance(head, ScalarMeta)
        and head.pytype in _WIDENABLE
        and isinstance(end, ArrayMeta)
        and not end.is_array
        and end.dtype.kind in "biufc"
    )


def _same_meta(a: Any, b: Any) -> bool:
    if isinstance(a, ScalarMeta) and isinstance(b, ScalarMeta):
        return a.pytype is b.pytype  # the hint is the value seen, not a type
    return bool(a == b)


def _same_const(a: Any, b: Any) -> bool:
    if a is b:
        return True
    if type(a) is not type(b):
        return False
    if isinstance(a, (np.ndarray, np.generic)):
        return bool(a.shape == b.shape and a.dtype == b.dtype and np.array_equal(a, b, equal_nan=a.dtype.kind in "fc"))
    if isinstance(a, float) and a != a:
        return b != b
    try:
        return bool(a == b)
    except Exception:  # pragma: no cover - constants in graphs compare plainly
        return False


def _same_arg(a: Any, b: Any, pairs: Dict[Node, Node]) -> bool:
    if isinstance(a, Node) or isinstance(b, Node):
        if not (isinstance(a, Node) and isinstance(b, Node)):
            return False
        return pairs.get(a, a) is b
    t = type(a)
    if t is not type(b):
        return False
    if t in (tuple, list):
        return len(a) == len(b) and all(_same_arg(x, y, pairs) for x, y in zip(a, b))
    if t is dict:
        return list(a) == list(b) and all(_same_arg(a[k], b[k], pairs) for k in a)
    if t is slice:
        return all(_same_arg(x, y, pairs) for x, y in ((a.start, b.start), (a.stop, b.stop), (a.step, b.step)))
    return _same_const(a, b)


# on a scalar (immutable) an in-place operator is the plain one: ``s += x`` records iadd on
# a numpy scalar and add on a Python number, doing the same
_IN_PLACE = {
    operator.iadd: operator.add,
    operator.isub: operator.sub,
    operator.imul: operator.mul,
    operator.itruediv: operator.truediv,
    operator.ifloordiv: operator.floordiv,
    operator.imod: operator.mod,
    operator.ipow: operator.pow,
    operator.iand: operator.and_,
    operator.ior: operator.or_,
    operator.ixor: operator.xor,
    operator.ilshift: operator.lshift,
    operator.irshift: operator.rshift,
}


def _plain(node: Node) -> Any:
    val = node.meta.get("val")
    scalar = isinstance(val, ScalarMeta) or isinstance(val, ArrayMeta) and not val.is_array
    return _IN_PLACE.get(node.target, node.target) if scalar and type(node.target) is not str else node.target


def _same_target(a: Any, b: Any) -> bool:
    if a is b:
        return True
    if type(a) is not type(b) or type(a) not in (Loop, WhileLoop):
        return a == b if isinstance(a, str) else False
    if (
        a.n_carried != b.n_carried
        or getattr(a, "exits", None) != getattr(b, "exits", None)
        or getattr(a, "repeat_when", None) != getattr(b, "repeat_when", None)
    ):
        return False
    return same_trace(a.body, b.body) == ""


def same_trace(
    a: Graph,
    b: Graph,
    loose: Iterable[Node] = (),
    outer: Optional[Callable[[Node], Any]] = None,
    results: Optional[Tuple[Any, Any]] = None,
) -> str:
    """'' when ``b`` records the same operations as ``a`` with results of the same types;
    else what differs. ``loose``: nodes of ``a`` whose types may differ (the two-typed
    values); ``outer``: the enclosing graph's node a loop-body placeholder stands for
    (``Tracer.lifted_from``), so two bodies reading the same outer values match;
    ``results``: values of each trace (nodes, constants) that must correspond too."""
    loose = set(loose)
    pa, pb = a.placeholders, b.placeholders
    if len(pa) != len(pb):
        return "a different number of inputs"
    pairs: Dict[Node, Node] = {}
    for x, y in zip(pa, pb):
        if x not in loose and not _same_meta(x.meta.get("val"), y.meta.get("val")):
            return f"input {x.name} is {x.meta.get('val')} or {y.meta.get('val')}"
        if outer is not None and outer(x) is not outer(y):
            return f"input {x.name} stands for another value"
        pairs[x] = y
    oa, ob = a.operations(), b.operations()
    if len(oa) != len(ob):
        return f"{len(oa)} or {len(ob)} operations"
    for x, y in zip(oa, ob):
        if (
            x.kind is not y.kind
            or not _same_target(_plain(x), _plain(y))
            or not _same_arg(x.args, y.args, pairs)
            or not _same_arg(x.kwargs, y.kwargs, pairs)
        ):
            return f"{x.format()} or {y.format()}"
        if x not in loose and not _same_meta(x.meta.get("val"), y.meta.get("val")):
            return f"{x.name} is {x.meta.get('val')} or {y.meta.get('val')}"
        pairs[x] = y
    if results is not None and not _same_arg(results[0], results[1], pairs):
        return "the values at the end of the body"
    return ""
