"""Reductions along one axis (or several) of an array of two or more dimensions (``sum``,
``mean``, ``max``, ``min``, ``argmax``, ``argmin``, ``var``, ``std``, with ``keepdims``; ``ddof``
for the last two), which numba cannot
type with ``axis=``, and whole 1-D reductions (``(a * b).sum()``: the reduced tree is then
computed element by element, never stored), written as loop nests for ``fusion``.

The loops keep numpy's meaning:

* the result's dtype is the one numpy gives (checked against the traced value: ``sum`` of
  int32 is int64, ``mean`` of ints is float64, ``argmax`` is intp);
* along an axis other than the last, numpy adds the slices one after another: so do the
  loops (one accumulator per result element, the input read in memory order), which gives
  numpy's values exactly. Along the last axis numpy adds pairwise: the loops add in order
  (float32 in float64, then rounded), which agrees within ``numpy.allclose``; so do
  reductions over several axes (numpy chooses its own order there);
* ``max``/``min`` propagate NaN; ``argmax``/``argmin`` give the first extreme, or the first
  NaN, as numpy does;
* ``var``/``std`` take two passes as numpy does (the mean, then the squared deviations from
  it), each in numpy's order of adding along an axis other than the last;
* an empty ``max``/``min``/``arg*``/``mean``, or a ``var``/``std`` of no more than ``ddof``
  elements, raises in the kernel (numpy raises or warns): the backend then redoes the call
  eagerly.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, List, Optional, Tuple

import numpy as np

from ...graph import ArrayMeta, Node, NodeKind
from .allocation import new_array

_KINDS = {"sum": "sum", "mean": "mean", "max": "max", "min": "min", "amax": "max", "amin": "min"}
_KINDS.update(argmax="argmax", argmin="argmin", var="var", std="std")
_METHODS = ("sum", "mean", "max", "min", "argmax", "argmin", "var", "std")
#: squared deviations from the mean: two passes
_SPREAD = ("var", "std")
#: input dtypes a reduction is written for
DTYPES = tuple(np.dtype(t) for t in (np.float64, np.float32, np.int64, np.int32))


@dataclass(eq=False)
class FusedReduce:
    """The target of a reduction along one axis (``x.mean(axis=0)``, ``np.max(t, axis=1,
    keepdims=True)``, ``x.argmax(axis=-1)``), which numba cannot type, as a loop nest."""

    kind: str  # sum, mean, max, min, argmax, argmin, var or std
    axis: int  # 0 <= axis < ndim (the first of ``axes``)
    keepdims: bool
    ndim: int = 2
    dtype: np.dtype = np.dtype(np.float64)  # the input's
    out: np.dtype = np.dtype(np.float64)  # the result's (numpy's)
    #: the elementwise tree it reduces, computed element by element (no array for it)
    tree: Optional[Any] = None
    #: every axis reduced, ascending (``sum``/``mean``/``max``/``min`` over several: ``axis=(0, 2)``)
    axes: Tuple[int, ...] = ()
    #: the whole of a 1-D array reduced to a numpy scalar (no result array)
    scalar: bool = False
    #: ``var``/``std``: the divisor is the count less this
    ddof: int = 0
    __name__ = "fused_reduce"

    def __call__(self, *args: Any) -> Any:  # pragma: no cover - only ever written as source
        raise RuntimeError("a fused reduction is only ever written as numba source")


def reduction(node: Node) -> Optional[FusedReduce]:
    """A reduction along one axis of an array of 2+ dimensions, as ``FusedReduce``, or None."""
    if node.kind is NodeKind.CALL_METHOD:
        kind = _KINDS.get(node.target) if node.target in _METHODS else None
    elif node.kind is NodeKind.CALL:
        name = getattr(node.target, "__name__", None)
        kind = _KINDS.get(name) if getattr(np, str(name), None) is node.target else None
    else:
        return None
    if kind is None or not node.args:
        return None
    src = node.args[0].meta.get("val") if isinstance(node.args[0], Node) else None
    if not isinstance(src, ArrayMeta) or not src.is_array or src.dtype not in DTYPES:
        return None
    if src.ndim < 2:  # only the whole of a 1-D array, without an axis or other arguments
        plain = len(node.args) == 1 and node.kwargs in ({}, {"keepdims": False})
        whole = src.ndim == 1 and plain and not kind.startswith("arg") and kind not in _SPREAD
        return _whole_1d(node, kind, src) if whole else None
    extra = dict(node.kwargs)
    if len(node.args) == 2:
        extra.setdefault("axis", node.args[1])
    elif len(node.args) > 2:
        return None
    axis = extra.pop("axis", None)
    keepdims = extra.pop("keepdims", False)
    ddof = extra.pop("ddof", 0) if kind in _SPREAD else 0
    if type(ddof) is not int or ddof < 0:
        return None
    axes = axis if type(axis) is tuple else (axis,)
    if extra or not axes or type(keepdims) is not bool or (len(axes) > 1 and kind.startswith("arg")):
        return None
    if any(type(k) is not int or not -src.ndim <= k < src.ndim for k in axes):
        return None
    axes = tuple(sorted({k % src.ndim for k in axes}))
    if len(axes) != len(set(axis if type(axis) is tuple else (axis,))) or len(axes) == src.ndim:
        return None  # a repeated axis (numpy raises), or all of them (numba reduces those itself)
    meta = node.meta.get("val")
    if not isinstance(meta, ArrayMeta) or not meta.is_array or node.meta.get("errstate"):
        return None
    # the dtype numpy gives, from numpy itself: a lowering that would give another is refused
    probe = getattr(np, kind)(np.ones((1,) * src.ndim, src.dtype), axis=axis, keepdims=keepdims)
    if meta.dtype != probe.dtype or meta.ndim != probe.ndim:
        return None
    return FusedReduce(kind, axes[0], keepdims, src.ndim, src.dtype, probe.dtype, axes=axes, ddof=ddof)


def _whole_1d(node: Node, kind: str, src: ArrayMeta) -> Optional[FusedReduce]:
    """``v.sum()``, ``np.max(v)``... of a 1-D array: one loop and a scalar (numba's own
    reduction needs the array, which a reduced tree would have to allocate first)."""
    meta = node.meta.get("val")
    if not isinstance(meta, ArrayMeta) or meta.is_array or meta.ndim or node.meta.get("errstate"):
        return None
    probe = getattr(np, kind)(np.ones(1, src.dtype))
    if meta.dtype != probe.dtype:
        return None
    return FusedReduce(kind, 0, False, 1, src.dtype, probe.dtype, axes=(0,), scalar=True)


def _typed(names: Any, dtype: np.dtype) -> str:
    return names.bind(dtype.type, f"numpy_{dtype.name}")


def reduce_lines(fr: FusedReduce, out: str, arg: str, names: Any, p: str, prange: str, writer: Any = None) -> List[str]:
    """``out = arg.<kind>(axis=...)`` as loops. ``writer`` (a ``fusion._Writer`` of the
    reduced tree, or None) gives the element at the loop indices."""
    d, a = fr.ndim, fr.axis
    axes = fr.axes or (a,)
    if writer is not None:
        _, _, ext, idx, elem = writer.prepare("")
        lines = list(writer.lines)
    else:
        x = f"{p}x"
        ext, idx = [f"{p}n{k}" for k in range(d)], [f"{p}i{k}" for k in range(d)]
        lines = [f"{x} = {arg}"] + [f"{ext[k]} = {x}.shape[{k}]" for k in range(d)]
        elem = f"{x}[{', '.join(idx)}]"
    kind = fr.kind
    length = " * ".join(ext[k] for k in axes)
    length = f"({length})" if len(axes) > 1 else length
    if kind in _SPREAD:
        return _spread_lines(fr, lines, out, ext, idx, elem, length, names, p)
    if kind != "sum":
        lines += [f"if {length} == 0:", "    raise ValueError('zero-size reduction')"]
    keep = [k for k in range(d) if k not in axes]
    empty = names.bind(np.empty, "numpy_empty")
    # the accumulator's dtype: numpy's result's, but float32 along the last axis adds in
    # float64 (numpy's pairwise sum there is more exact than adding in order)
    acc_dt = fr.out if kind not in ("argmax", "argmin") else fr.dtype
    if kind in ("sum", "mean") and (d - 1 in axes or len(axes) > 1) and acc_dt == np.float32:
        acc_dt = np.dtype(np.float64)
    if kind == "mean" and fr.dtype.kind == "i":
        acc_dt = np.dtype(np.float64)
    at = _typed(names, acc_dt)
    if kind in ("sum", "mean"):
        start = f"{at}(0)"
    elif acc_dt.kind == "f":
        inf = names.bind(np.inf, "numpy_inf")
        start = f"{at}(-{inf})" if kind in ("max", "argmax") else f"{at}({inf})"
    else:
        info = np.iinfo(acc_dt)
        # int64's least value is no literal numba reads: written as an expression
        start = f"{at}(-{info.max} - 1)" if kind in ("max", "argmax") else f"{at}({info.max})"
    v, r = f"{p}v", f"{p}r"
    width = ", ".join(ext[k] for k in keep)
    if not fr.scalar:
        lines += new_array(names, r, f"({width},)", _typed(names, fr.out))
    arg_kind = kind in ("argmax", "argmin")
    if kind in ("max", "min"):
        pick = names.bind(np.maximum if kind == "max" else np.minimum, f"numpy_{kind}imum")

    def update(s: str, si: str, j: str) -> List[str]:
        """Fold ``v`` (at position ``j`` along the axis) into ``s`` (and its position ``si``)."""
        if kind in ("sum", "mean"):
            return [f"{s} = {s} + {v}"]
        if not arg_kind:
            return [f"{s} = {pick}({s}, {v})"]
        better = f"{v} > {s}" if kind == "argmax" else f"{v} < {s}"
        if fr.dtype.kind == "f":  # the first NaN wins, and nothing after it
            better = f"({better}) or ({v} != {v} and {s} == {s})"
        return [f"if {better}:", f"    {s} = {v}", f"    {si} = {j}"]

    def nest(dims: List[int], loop0: str = "range") -> List[str]:
        heads, pad = [], ""
        for n, k in enumerate(dims):
            heads.append(f"{pad}for {idx[k]} in {loop0 if not n else 'range'}({ext[k]}):")
            pad += "    "
        return heads

    rix = ", ".join(idx[k] for k in keep)
    if axes == (d - 1,):
        # one accumulator per result element, the axis innermost
        s, si = f"{p}s", f"{p}si"
        lines += nest(keep, prange)
        pad = "    " * len(keep)
        lines.append(f"{pad}{s} = {start}")
        if arg_kind:
            lines.append(f"{pad}{si} = 0")
        flag = f"{p}nan" if kind in ("max", "min") and fr.dtype.kind == "f" else None
        if flag:
            lines.append(f"{pad}{flag} = False")
        if kind in ("max", "min", "sum", "mean"):
            # four independent lanes. max/min: selects and a NaN flag (no chain of
            # NaN-propagating maximum calls): 10x faster than that chain, 2x faster than one
            # lane. sums: four partial sums, whose adds do not wait on each other (numpy's
            # own pairwise sum adds in another order anyway)
            op = ">" if kind == "max" else "<"

            def fold(acc: str) -> List[str]:
                if kind in ("sum", "mean"):
                    return update(acc, "", "")
                return [f"{acc} = {v} if {v} {op} {acc} else {acc}"] + ([f"{flag} |= {v} != {v}"] if flag else [])

            lanes, j4, n4 = [f"{s}{k}" for k in range(4)], f"{p}j4", f"{p}n4"
            lines.append(f"{pad}{' = '.join(lanes)} = {start}")
            lines.append(f"{pad}{n4} = {length} - {length} % 4")
            lines.append(f"{pad}for {j4} in range(0, {n4}, 4):")
            for k, lane in enumerate(lanes):
                lines += [f"{pad}    {idx[a]} = {j4} + {k}", f"{pad}    {v} = {elem}"]
                lines += [f"{pad}    {t}" for t in fold(lane)]
            lines += [f"{pad}for {idx[a]} in range({n4}, {length}):", f"{pad}    {v} = {elem}"]
            lines += [f"{pad}    {t}" for t in fold(s)]
            if kind in ("sum", "mean"):
                lines.append(f"{pad}{s} = {s} + (({lanes[0]} + {lanes[1]}) + ({lanes[2]} + {lanes[3]}))")
            else:
                lines += [f"{pad}{s} = {lane} if {lane} {op} {s} else {s}" for lane in lanes]
        else:
            lines.append(f"{pad}for {idx[a]} in range({length}):")
            lines.append(f"{pad}    {v} = {elem}")
            lines += [f"{pad}    {t}" for t in update(s, si, idx[a])]
        done = si if arg_kind else f"{s} / {length}" if kind == "mean" else s
        if flag:
            done = f"{names.bind(np.nan, 'numpy_nan')} if {flag} else {s}"
        if fr.scalar:  # numpy's scalar type (a float32 sum adds in float64, then rounds)
            lines.append(f"{out} = {_typed(names, fr.out)}({done})")
            return lines
        lines.append(f"{pad}{r}[{rix}] = {done}")
    else:
        # a row of accumulators, the input read in memory order (numpy's order of adding)
        acc, pos = f"{p}acc", f"{p}pos"
        lines.append(f"{acc} = {empty}(({width},), {at})")
        lines += nest(keep)
        pad = "    " * len(keep)
        lines.append(f"{pad}{acc}[{rix}] = {start}")
        if arg_kind:
            lines.append(f"{pos} = {empty}(({width},), {_typed(names, fr.out)})")
            lines += nest(keep)
            lines.append(f"{pad}{pos}[{rix}] = 0")
        lines += nest(list(range(d)))
        pad = "    " * d
        lines.append(f"{pad}{v} = {elem}")
        if arg_kind:
            cur, cpos = f"{p}c", f"{p}cp"
            lines.append(f"{pad}{cur} = {acc}[{rix}]")
            lines.append(f"{pad}{cpos} = {pos}[{rix}]")
            lines += [f"{pad}{t}" for t in update(cur, cpos, idx[a])]
            lines.append(f"{pad}{acc}[{rix}] = {cur}")
            lines.append(f"{pad}{pos}[{rix}] = {cpos}")
            src = pos
        else:
            lines += [f"{pad}{t}" for t in update(f"{acc}[{rix}]", "", idx[a])]
            src = acc
        lines += nest(keep)
        pad = "    " * len(keep)
        lines.append(
            f"{pad}{r}[{rix}] = {src}[{rix}] / {length}" if kind == "mean" else f"{pad}{r}[{rix}] = {src}[{rix}]"
        )
    shape = [ext[k] if k not in axes else "1" for k in range(d)] if fr.keepdims else [ext[k] for k in keep]
    lines.append(f"{out} = {r}.reshape(({', '.join(shape)},))")
    return lines


def _spread_lines(
    fr: FusedReduce,
    lines: List[str],
    out: str,
    ext: List[str],
    idx: List[str],
    elem: str,
    length: str,
    names: Any,
    p: str,
) -> List[str]:
    """``var``/``std`` along ``fr.axes``: the mean, then the sum of squared deviations from it,
    each pass one accumulator per result element with the input read in memory order."""
    d, axes = fr.ndim, fr.axes
    keep = [k for k in range(d) if k not in axes]
    # numpy adds in the input's float dtype (float64 for ints); float32 along the last axis
    # (pairwise there) or several adds in float64 here, then rounds
    acc_dt = fr.out
    if acc_dt == np.float32 and (d - 1 in axes or len(axes) > 1):
        acc_dt = np.dtype(np.float64)
    at = _typed(names, acc_dt)
    empty = names.bind(np.empty, "numpy_empty")
    width = ", ".join(ext[k] for k in keep)
    rix = ", ".join(idx[k] for k in keep)
    m, s, v, dv, r = f"{p}m", f"{p}s", f"{p}v", f"{p}dv", f"{p}r"

    def nest(dims: List[int]) -> Tuple[List[str], str]:
        return [f"{'    ' * n}for {idx[k]} in range({ext[k]}):" for n, k in enumerate(dims)], "    " * len(dims)

    lines += [f"if {length} <= {fr.ddof}:", "    raise ValueError('too few elements for the degrees of freedom')"]
    lines += [f"{m} = {empty}(({width},), {at})", f"{s} = {empty}(({width},), {at})"]
    heads, pad = nest(keep)
    lines += heads + [f"{pad}{m}[{rix}] = {at}(0)", f"{pad}{s}[{rix}] = {at}(0)"]
    heads, pad = nest(list(range(d)))
    lines += heads + [f"{pad}{v} = {elem}", f"{pad}{m}[{rix}] = {m}[{rix}] + {v}"]
    heads, pad = nest(keep)
    lines += heads + [f"{pad}{m}[{rix}] = {m}[{rix}] / {length}"]
    heads, pad = nest(list(range(d)))
    lines += heads + [f"{pad}{dv} = {elem} - {m}[{rix}]", f"{pad}{s}[{rix}] = {s}[{rix}] + {dv} * {dv}"]
    lines += new_array(names, r, f"({width},)", _typed(names, fr.out))
    heads, pad = nest(keep)
    spread = f"{s}[{rix}] / ({length} - {fr.ddof})"
    if fr.kind == "std":
        spread = f"{names.bind(np.sqrt, 'numpy_sqrt')}({spread})"
    lines += heads + [f"{pad}{r}[{rix}] = {spread}"]
    shape = [ext[k] if k not in axes else "1" for k in range(d)] if fr.keepdims else [ext[k] for k in keep]
    lines.append(f"{out} = {r}.reshape(({', '.join(shape)},))")
    return lines
