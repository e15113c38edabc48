"""Reductions of the elements a comparison selects (``v[(r >= lo) & (r < hi)].mean()``, the
inner loop of radial binning) written as one loop for ``fusion``.

numpy (and numba's array expressions) build a boolean array per comparison, one for the
``&``, then the selected elements, then reduce them. One loop over the elements tests the
condition and adds in place: no array at all. It keeps numpy's meaning:

* the compared arrays and the reduced one must have one shape (checked on each run; numpy
  broadcasts comparisons, and raises on a mask of another shape: the kernel raises and the
  backend redoes the call eagerly);
* comparisons are of float64 or int64 arrays with Python numbers or float64 scalars, which
  numpy 2 and numba both compare in float64 (or exactly, int with int);
* elements are taken in C order, as boolean indexing takes them; the sum adds them in order
  (numpy adds the selected array pairwise: the results agree within ``numpy.allclose``);
* nothing selected: a ``sum`` is 0.0, and a ``mean``/``max``/``min`` raises in the kernel
  (numpy warns or raises), so the eager code gives numpy's result.
"""

from __future__ import annotations

import math
import operator
from dataclasses import dataclass, field
from typing import Any, List, Optional

import numpy as np

from ...graph import ArrayMeta, Node, NodeKind, ScalarMeta
from ..infix import COMPARISONS

# & and | on bools (not and/or): no branch per comparison, which random data mispredicts
_LOGIC = {operator.and_: "&", operator.or_: "|", np.logical_and: "&", np.logical_or: "|"}
_F8, _I8, _BOOL = np.dtype(np.float64), np.dtype(np.int64), np.dtype(bool)


@dataclass(eq=False)
class FusedMasked:
    """The target of ``values[condition].<kind>()`` as one loop: ``cond`` is nested tuples
    (``("cmp", op, left, right)`` | ``("logic", op, left, right)`` | ``("mask", i)``), a leaf
    ``("read", i)`` (an array of ``args``), ``("arg", i)`` (a graph scalar) or ``("scalar",
    literal)``; ``args`` are the reduced array, then the arrays and scalars read."""

    kind: str  # sum, mean, max or min
    cond: Any
    args: List[Node] = field(default_factory=list)  # the reduced array first
    nodes: List[Node] = field(default_factory=list)  # replaced by the loop
    __name__ = "fused_masked"

    def __call__(self, *args: Any) -> Any:  # pragma: no cover - only ever written as source
        raise RuntimeError("a fused masked reduction is only ever written as numba source")


def _array(arg: Any, dtypes: Any, ndim: int) -> bool:
    meta = arg.meta.get("val") if isinstance(arg, Node) else None
    return isinstance(meta, ArrayMeta) and meta.is_array and meta.dtype in dtypes and meta.ndim == ndim


def _private(node: Any, user: Node) -> bool:
    return (
        isinstance(node, Node)
        and node.kind is NodeKind.CALL
        and not node.kwargs
        and list(node.users) == [user]
        and user.inputs().count(node) == 1
        and not node.meta.get("errstate")
        and not node.impure
    )


def _scalar(arg: Any) -> bool:
    if type(arg) is float:
        return math.isfinite(arg)
    if type(arg) is int:
        return abs(arg) < 2**53
    meta = arg.meta.get("val") if isinstance(arg, Node) else None
    if isinstance(meta, ScalarMeta):
        return meta.pytype in (int, float)
    return isinstance(meta, ArrayMeta) and not meta.is_array and meta.dtype == _F8


class _Cond:
    def __init__(self, ndim: int, values: Node) -> None:
        self.ndim = ndim
        self.args: List[Node] = [values]
        self.nodes: List[Node] = []

    def arg(self, node: Node) -> int:
        if node not in self.args:
            self.args.append(node)
        return self.args.index(node)

    def operand(self, arg: Any) -> Any:
        if _scalar(arg):
            return ("arg", self.arg(arg)) if isinstance(arg, Node) else ("scalar", arg)
        if _array(arg, (_F8, _I8), self.ndim):
            return ("read", self.arg(arg))
        return None

    def tree(self, arg: Any, user: Node) -> Any:
        if _private(arg, user) and len(arg.args) == 2 and _array(arg, (_BOOL,), self.ndim):
            try:
                cmp, logic = COMPARISONS.get(arg.target), _LOGIC.get(arg.target)
            except TypeError:
                return None
            make = self.operand if cmp else self.tree if logic else None
            if make is None:
                return None
            self.nodes.append(arg)
            parts = [make(a) if cmp else make(a, arg) for a in arg.args]
            if any(p is None for p in parts):
                return None
            return ("cmp" if cmp else "logic", cmp or logic, parts[0], parts[1])
        if _array(arg, (_BOOL,), self.ndim):  # a mask computed before: read as it is
            return ("mask", self.arg(arg))
        return None


def masked(node: Node) -> Optional[FusedMasked]:
    """``values[condition].sum()`` (``mean``, ``max``, ``min``; method or ``np.`` function) of
    a float64 array, as ``FusedMasked``, or None."""
    if node.kind is NodeKind.CALL_METHOD and node.target in ("sum", "mean", "max", "min"):
        kind = node.target
    elif node.kind is NodeKind.CALL and node.target in (np.sum, np.mean, np.max, np.min):
        kind = {np.sum: "sum", np.mean: "mean", np.max: "max", np.min: "min"}[node.target]
    else:
        return None
    if len(node.args) != 1 or node.kwargs or node.meta.get("errstate") or node.impure:
        return None
    picked = node.args[0]
    if not _private(picked, node) or picked.target is not operator.getitem:
        return None
    values, index = picked.args
    meta = values.meta.get("val") if isinstance(values, Node) else None
    if not _array(values, (_F8,), getattr(meta, "ndim", -1)) or meta.ndim < 1:
        return None
    cond = _Cond(meta.ndim, values)
    tree = cond.tree(index, picked)
    if tree is None or tree[0] == "mask":  # a mask alone: nothing to fuse away
        return None
    return FusedMasked(kind, tree, cond.args, [picked, *cond.nodes])


def masked_lines(fm: FusedMasked, out: str, arg: str, names: Any, p: str) -> List[str]:
    """``out = values[cond].<kind>()`` as one loop nest; ``arg`` is the text of the args."""
    a = [f"{p}a{k}" for k in range(len(fm.args))]
    ndim = fm.args[0].meta["val"].ndim
    lines = [f"{', '.join(a)}, = {arg},"]
    same = " and ".join(
        f"{v}.shape == {a[0]}.shape" for v in a[1:] if getattr(fm.args[a.index(v)].meta["val"], "is_array", False)
    )
    if same:
        lines += [f"if not ({same}):", "    raise ValueError('the mask and the values differ in shape')"]
    idx = [f"{p}i{k}" for k in range(ndim)]
    at = ", ".join(idx)

    def text(e: Any) -> str:
        if e[0] == "read" or e[0] == "mask":
            return f"{a[e[1]]}[{at}]"
        if e[0] == "arg":
            return a[e[1]]
        if e[0] == "scalar":
            return repr(e[1])
        return f"({text(e[2])} {e[1]} {text(e[3])})"

    s, c, v = f"{p}s", f"{p}c", f"{p}v"
    inf = names.bind(np.inf, "numpy_inf")
    start = {"sum": "0.0", "mean": "0.0", "max": f"-{inf}", "min": inf}[fm.kind]
    lines += [f"{s} = {start}", f"{c} = 0"]
    pad = ""
    for k in range(ndim):
        lines.append(f"{pad}for {idx[k]} in range({a[0]}.shape[{k}]):")
        pad += "    "
    if fm.kind in ("sum", "mean"):
        # no branch: a select, as the selected elements are scattered at random
        k = f"{p}k"
        lines += [f"{pad}{k} = {text(fm.cond)}", f"{pad}{c} += {k}", f"{pad}{s} += {a[0]}[{at}] if {k} else 0.0"]
    else:
        lines += [
            f"{pad}if {text(fm.cond)}:",
            f"{pad}    {v} = {a[0]}[{at}]",
            f"{pad}    {c} += 1",
        ]  # NaN propagates, as numpy's maximum.reduce does
        better = ">" if fm.kind == "max" else "<"
        lines.append(f"{pad}    {s} = {v} if ({v} {better} {s} or {v} != {v}) and {s} == {s} else {s}")
    if fm.kind != "sum":
        lines += [f"if {c} == 0:", "    raise ValueError('zero-size reduction')"]
    lines.append(f"{out} = {s} / {c}" if fm.kind == "mean" else f"{out} = {s}")
    return lines
