"""Explicit checks of the user's integer indices, so that kernels compile without
numba's bounds checks.

numba checks bounds on every index of a kernel or on none (``boundscheck``). A kernel
whose graph indexes an array with a value of the user's (``a[i, i]`` in a loop,
``w[0, 1]``) used to compile with every check on, which also checks each element access
of the loops ``fusion`` writes and keeps LLVM from vectorising them (a 1000x1000 add
ran 2-3x slower). Instead, each such basic index, made of integers and slices only, gets
a statement of its own before it that raises ``IndexError`` where numpy would (the
backend then redoes the call eager, which raises numpy's own error); slices need no
check (numpy and numba clip them). Any other index the user gives (an array, ``None``,
``...``, a boolean) keeps numba's checks on for the whole kernel (``checks.user_index``).
"""

from __future__ import annotations

import operator
from typing import Any, Dict, List, Optional, Tuple

from ...graph import ArrayMeta, Graph, Node, NodeKind, ScalarMeta
from ...graph.ir import map_arg
from ...graph.loop import is_loop, with_body
from ...graph.pysource import replace_call

__all__ = ["IndexCheck", "insert", "expand", "CHECKED"]

#: the meta key of an indexing node whose integer indices a check before it covers
CHECKED = "index_checked"


class IndexCheck:
    """The target of a check node; its arguments are the array, then the integer indices
    (``axes[k]`` is the array axis of the ``k``-th)."""

    __name__ = "index_check"

    def __init__(self, axes: List[int]) -> None:
        self.axes = axes

    def __call__(self, *args: Any) -> Any:  # pragma: no cover - only ever written as source
        raise RuntimeError("an index check is only ever written as numba source")


def _integer(item: Any) -> bool:
    if type(item) is int:
        return True
    meta = item.meta.get("val") if isinstance(item, Node) else None
    if isinstance(meta, ScalarMeta):
        return meta.pytype is int
    return isinstance(meta, ArrayMeta) and not meta.is_array and meta.dtype.kind in "iu"


def _axes(node: Node) -> Optional[List[Tuple[int, Any]]]:
    """(axis, index) of each integer in a checkable basic index of an array, or None."""
    if node.kind is not NodeKind.CALL or node.kwargs or len(node.args) < 2:
        return None
    if node.target is not operator.getitem and node.target is not operator.setitem:
        return None
    base, index = node.args[0], node.args[1]
    meta = base.meta.get("val") if isinstance(base, Node) else None
    if not isinstance(meta, ArrayMeta) or not meta.is_array or not meta.ndim:
        return None
    items = index if type(index) is tuple else (index,)
    if len(items) > meta.ndim:
        return None
    found = []
    for axis, item in enumerate(items):
        if type(item) is slice:
            continue
        if not _integer(item):
            return None
        found.append((axis, item))
    return found or None


def insert(graph: Graph) -> Tuple[Graph, List[IndexCheck]]:
    """A copy of the graph with a check node before each checkable index (the graph
    itself when there is none)."""
    checks: List[IndexCheck] = []
    new = _copy(graph, None, checks)
    return (new, checks) if checks else (graph, [])


def _copy(graph: Graph, parent: Optional[Graph], checks: List[IndexCheck]) -> Graph:
    new = Graph(graph.name, names_from=parent)
    new.meta = dict(graph.meta)
    mapping: Dict[Node, Node] = {}

    def m(arg: Any) -> Any:
        return map_arg(arg, lambda n: mapping[n])

    for node in graph.nodes:
        if node.kind is NodeKind.PLACEHOLDER:
            made = new.placeholder(node.target, node.meta.get("val"))
        elif node.kind is NodeKind.CALL and is_loop(node.target):
            loop = node.target
            body = _copy(loop.body, new, checks)
            made = new._add(node.kind, with_body(loop, body), m(node.args), m(node.kwargs), node.name)
        elif node.kind is NodeKind.OUTPUT:
            made = new._add(node.kind, node.target, m(node.args), m(node.kwargs), node.name)
        else:
            found = _axes(node)
            if found is not None:
                check = IndexCheck([axis for axis, _ in found])
                args = (mapping[node.args[0]], *(m(item) for _, item in found))
                # no user: a statement of its own, written where it stands, before the index
                # (not marked impure: fusion may still move trees across it)
                check_node = new._add(NodeKind.CALL, check, args, {}, f"{node.name}_check")
                check_node.meta = {k: v for k, v in node.meta.items() if k in ("stack", "errstate")}
                checks.append(check)
            made = new._add(node.kind, node.target, m(node.args), m(node.kwargs), node.name)
            made.meta = dict(node.meta, **({CHECKED: True} if found is not None else {}))
            mapping[node] = made
            continue
        made.meta = dict(node.meta)
        mapping[node] = made
    return new


def expand(source: str, checks: List[IndexCheck], names: Any) -> str:
    """The source with each check node's line replaced by its ``if ...: raise`` lines."""
    lines = source.split("\n")
    for check in checks:

        def write(var: str, arg: str, axes: List[int] = check.axes) -> List[str]:
            array, *items = arg.split(", ")  # names and integer literals: a value used twice is never folded
            out = []
            for axis, at in zip(axes, items):
                n = f"{array}.shape[{axis}]"
                out += [f"if not (-{n} <= {at} < {n}):", "    raise IndexError('index out of range')"]
            return out

        replace_call(lines, check, names, write)
    return "\n".join(lines)
