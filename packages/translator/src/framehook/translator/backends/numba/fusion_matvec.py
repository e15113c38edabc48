"""Matrix-vector products (``A @ x``, ``x @ A``, ``A.T @ x``) written as loops for ``fusion``.

numba compiles ``@`` through BLAS, which it reaches through scipy: without scipy a graph
with a product does not compile at all. As loops it needs nothing, and the elementwise
work around it (``alpha * (A @ x) + beta * (B @ x)``) compiles with it:

* ``A @ x`` is one dot product per row, four rows at a time (their additions overlap);
* ``x @ A`` and ``A.T @ x`` read ``A`` in memory order into a row of sums;
* float32 adds in float64 and rounds once; integers wrap as numpy's do. BLAS adds in its own
  order, so float results agree with numpy's within ``numpy.allclose``, not bit for bit;
* operands whose lengths do not match raise in the kernel: the backend then redoes the call
  eagerly, which raises numpy's error.
"""

from __future__ import annotations

import operator
from dataclasses import dataclass
from typing import Any, List, Optional

import numpy as np

from ...graph import Node, NodeKind
from .fusion_ops import array_meta

DTYPES = tuple(np.dtype(t) for t in (np.float64, np.float32, np.int64, np.int32))


@dataclass(eq=False)
class FusedMatvec:
    """The target of a matrix-vector product as loops: ``rows`` is ``A @ x`` (a sum along
    each row of ``A``), otherwise ``x @ A`` (down the columns); ``transposed`` when the
    graph's matrix was ``A.T`` (then the node reads ``A`` itself)."""

    rows: bool
    dtype: np.dtype
    transposed: Optional[Node] = None  # the ``.T`` node the loops read through
    __name__ = "fused_matvec"

    def __call__(self, *args: Any) -> Any:  # pragma: no cover - only ever written as source
        raise RuntimeError("a fused matrix-vector product is only ever written as numba source")


def _transpose_of(node: Node, user: Node) -> Optional[Node]:
    """The matrix ``m`` when ``node`` is ``m.T`` used by ``user`` alone, or None."""
    if node.kind is NodeKind.GETATTR and node.target == "T" and list(node.users) == [user]:
        base = node.args[0]
        meta = array_meta(base)
        return base if meta is not None and meta.ndim == 2 else None
    return None


def matvec(node: Node) -> Optional[FusedMatvec]:
    """A product of a matrix and a vector of one dtype, as ``FusedMatvec``, or None."""
    if node.kind is not NodeKind.CALL or node.kwargs or len(node.args) != 2:
        return None
    if node.target is not operator.matmul and node.target is not np.matmul:
        return None
    left, right = (array_meta(a) for a in node.args)
    out = array_meta(node)
    if left is None or right is None or out is None or node.meta.get("errstate"):
        return None
    if not left.dtype == right.dtype == out.dtype or out.dtype not in DTYPES or out.ndim != 1:
        return None
    if (left.ndim, right.ndim) == (2, 1):
        base = _transpose_of(node.args[0], node)
        # (A.T) @ x is x @ A: the loops read A in memory order
        return FusedMatvec(False, out.dtype, node.args[0]) if base is not None else FusedMatvec(True, out.dtype)
    if (left.ndim, right.ndim) == (1, 2):
        return FusedMatvec(False, out.dtype)
    return None


def matvec_args(fm: FusedMatvec, node: Node) -> List[Node]:
    """The nodes the loops read: (matrix, vector)."""
    if fm.transposed is not None:
        return [fm.transposed.args[0], node.args[1]]
    return list(node.args) if fm.rows else [node.args[1], node.args[0]]


def matvec_lines(fm: FusedMatvec, out: str, arg: str, names: Any, p: str) -> List[str]:
    """``out = matrix @ vector`` (or ``vector @ matrix``) as loops; ``arg`` is the text
    ``matrix, vector``."""
    a, x, n, m, i, j, r = (f"{p}{s}" for s in ("A", "x", "n", "m", "i", "j", "r"))
    empty = names.bind(np.empty, "numpy_empty")
    res = names.bind(fm.dtype.type, f"numpy_{fm.dtype.name}")
    wide = np.dtype(np.float64) if fm.dtype.kind == "f" else np.dtype(np.int64)
    acc = names.bind(wide.type, f"numpy_{wide.name}")
    lines = [f"{a}, {x} = {arg}", f"{n} = {a}.shape[0]", f"{m} = {a}.shape[1]"]
    inner = m if fm.rows else n
    lines += [f"if {x}.shape[0] != {inner}:", "    raise ValueError('matmul: the operands do not match')"]
    if fm.rows:
        # four rows at a time: four independent sums, each element of x read once for them
        s = [f"{p}s{k}" for k in range(4)]
        lines += [
            f"{r} = {empty}({n}, {res})",
            f"{p}n4 = {n} - {n} % 4",
            f"for {i} in range(0, {p}n4, 4):",
            f"    {s[0]} = {s[1]} = {s[2]} = {s[3]} = {acc}(0)",
            f"    for {j} in range({m}):",
            f"        {p}xj = {acc}({x}[{j}])",
        ]
        lines += [f"        {s[k]} += {a}[{i} + {k}, {j}] * {p}xj" for k in range(4)]
        lines += [f"    {r}[{i} + {k}] = {s[k]}" for k in range(4)]
        lines += [
            f"for {i} in range({p}n4, {n}):",
            f"    {s[0]} = {acc}(0)",
            f"    for {j} in range({m}):",
            f"        {s[0]} += {a}[{i}, {j}] * {acc}({x}[{j}])",
            f"    {r}[{i}] = {s[0]}",
        ]
    else:
        t = f"{p}t"
        lines += [
            f"{t} = {empty}({m}, {acc})",
            f"for {j} in range({m}):",
            f"    {t}[{j}] = 0",
            f"for {i} in range({n}):",
            f"    {p}xi = {acc}({x}[{i}])",
            f"    for {j} in range({m}):",
            f"        {t}[{j}] += {p}xi * {a}[{i}, {j}]",
            f"{r} = {empty}({m}, {res})",
            f"for {j} in range({m}):",
            f"    {r}[{j}] = {t}[{j}]",
        ]
    lines.append(f"{out} = {r}")
    return lines
