"""Sliced elementwise stores, elementwise trees and axis reductions written as explicit
loop nests, for the numba backend.

A statement such as ``b[1:-1, 1:-1] = 0.2 * (a[1:-1, :-2] + a[1:-1, 2:] + ...)`` is one
``setitem`` node fed by a tree of elementwise nodes over slices. numpy evaluates each node
into a temporary array; numba's array expressions do the same over strided views (and
broadcast slowly). Written as one loop nest over the stored region
(``b[i, j] = 0.2 * (a[i, j - 1] + ...)``) it reads each element once and allocates nothing,
which is where hand-written numba stencils win. Likewise an elementwise tree over matrices
becomes one loop nest into a new array. Other modules write the rest: ``fusion_reduce``
(reductions along any axes, ``argmax``/``argmin``, with a private elementwise tree computed
element by element), ``fusion_matvec`` (``A @ x``, ``x @ A``, ``A.T @ x``) and
``fusion_masked`` (``v[(r >= lo) & (r < hi)].mean()``); transcendental ufuncs are left out
of the trees, to numpy's own loops (``numpy_ufuncs``).

``rewrite`` gives a copy of the graph where each of these is one call node whose target is
a ``FusedStore``, ``FusedReduce``, ``FusedMatvec`` or ``FusedMasked``; ``expand`` replaces
the line the code generator wrote for it with the loops. Fusing keeps numpy's meaning:

* every node and read of a tree has one dtype (float64, float32, int64 or int32), is used
  once (by the tree), computed after the last write that could change what it reads and
  outside captured ``np.errstate`` blocks. float32 and int32 results are cast back after
  every operation (numba widens them; numpy 2 does not), and a Python scalar is cast as
  numpy 2 casts it; integer trees only add, subtract, multiply, negate, take min/max/abs
  and small powers (they wrap alike in both) and divide by a positive constant;
* numpy evaluates the whole right-hand side of a store before writing: a read of the stored
  array itself goes straight into the loop only when it reads the element being written or
  one the loop has not written yet (same slice steps, a constant offset that is not behind
  in the loop's order); any other read of it goes through one temporary (the values first,
  then the store), as numpy does;
* a read of another array that shares memory with the stored one at run time, or whose
  extent is not the loop's (or 1 where the graph broadcasts it), raises inside the kernel:
  the backend then redoes the call with the eager code, which gives plain numpy's result or
  error. So do an empty ``max``/``min``/``mean`` (numpy raises or warns);
* sums add in numpy's order along columns and sequentially along rows (numpy adds a row
  pairwise): the results agree within ``numpy.allclose``.
"""

from __future__ import annotations

import importlib.util
import math
import operator
from dataclasses import dataclass, field
from typing import Any, Dict, List, Optional, Tuple, Union

import numpy as np

from ...graph import ArrayMeta, Graph, Node, NodeKind, ScalarMeta
from ...graph.pysource import render_arg, replace_call
from ...graph.ir import map_arg
from ...graph.loop import is_loop, with_body
from .allocation import new_array
from .fusion_ops import DTYPES, INT_DIVIDE, constant_divisor, fresh_array, int64_wrapping
from .fusion_ops import F8 as _F8
from .fusion_ops import I8 as _I8
from .fusion_ops import INFIX as _INFIX
from .fusion_ops import INT_OPS as _INT_OPS
from .fusion_ops import NARROW as _NARROW
from .fusion_ops import PREFIX as _PREFIX
from .fusion_ops import UFUNCS as _UFUNCS
from .fusion_masked import FusedMasked, masked, masked_lines
from .fusion_matvec import FusedMatvec, matvec, matvec_args, matvec_lines
from .fusion_reduce import FusedReduce, reduce_lines, reduction
from .numpy_ufuncs import NumpyUfunc, left_to_numpy, numpy_ufunc, ufunc_lines

_F4 = np.dtype(np.float32)
#: numpy 2 gives a Python scalar the array's dtype (NEP 50); numpy 1 chose by its value
_WEAK_SCALARS = int(np.__version__.split(".")[0]) >= 2

__all__ = ["FusedStore", "FusedReduce", "FusedMatvec", "rewrite", "expand", "VERSION"]

#: the global a parallel loop is written with (the backend binds it to ``numba.prange``)
PRANGE = "__fh_prange"
#: part of the kernel cache key: a change to the loops written here never reuses a kernel
VERSION = "fusion-10"

#: write ``A @ x`` as loops only where numba cannot compile it: its ``@`` reaches BLAS through
#: scipy, and BLAS beats the loops 1.7-3.6x at n=1000 when it has a core to itself
MATVEC_LOOPS = importlib.util.find_spec("scipy") is None
#: lower 1-D float32/int32 trees too, which numba's array expressions would widen (the
#: graph then falls back on the type check): off until test_backend_numba's promotion
#: test uses a graph fusion does not lower. 1-D float64/int64 trees are lowered: numba's
#: array expressions fuse their arithmetic but not ``np.clip`` or a tree spanning a loop
#: body's statements (mandel_steps 0.97x -> 0.37x plain)
NARROW_1D = False

#: an index bound: None (the dimension's end), an int, or a graph int
_Bound = Union[None, int, Node]


@dataclass
class _Read:
    base: Node
    starts: List[_Bound]
    stops: List[_Bound]
    broadcast: List[bool]

    @property
    def ndim(self) -> int:
        return len(self.starts)

    @property
    def base_ndim(self) -> int:
        return self.base.meta["val"].ndim


@dataclass(eq=False)
class FusedStore:
    """The target of a fused store's call node: ``dst[region] = expr`` as data."""

    dst: Optional[Node]  # None: a new array, the node's value
    starts: List[_Bound]
    stops: List[_Bound]
    expr: Any  # nested tuples: ("read", i) | ("scalar", node or literal) | ("op", target, args)
    reads: List[_Read]
    through_temp: bool
    nodes: List[Node] = field(default_factory=list)  # the value's tree, replaced by the loops
    args: List[Node] = field(default_factory=list)
    dtype: np.dtype = _F8  # of the value, every node and every read
    #: an in-place operator's store (``a += tree``): the node's value is ``dst`` itself
    gives_dst: bool = False
    __name__ = "fused_store"

    def __call__(self, *args: Any) -> Any:  # pragma: no cover - only ever written as source
        raise RuntimeError("a fused store is only ever written as numba source")


# ---------------------------------------------------------------- finding fusable stores


def _is_f8_array(node: Any, ndim: int, dtype: np.dtype = _F8) -> bool:
    meta = node.meta.get("val") if isinstance(node, Node) else None
    return isinstance(meta, ArrayMeta) and meta.is_array and meta.dtype == dtype and meta.ndim == ndim


def _is_scalar(arg: Any, dtype: np.dtype = _F8) -> bool:
    """A scalar operand of a tree of ``dtype`` that numpy 2 converts to ``dtype`` (a Python
    scalar is weak) exactly as the cast the loop writes does."""
    if type(arg) is float:  # written as a literal: finite (and in range of a float32 tree)
        limit = float(np.finfo(dtype).max) if dtype.kind == "f" else -1.0
        return math.isfinite(arg) and abs(arg) <= limit
    if type(arg) is int:  # exact as a float; in range of an integer tree (numpy raises past it)
        return abs(arg) < min(2**53, 2 ** (8 * dtype.itemsize - 1) if dtype.kind == "i" else 2**53)
    if not isinstance(arg, Node):
        return False
    meta = arg.meta.get("val")
    if isinstance(meta, ScalarMeta):
        # a run-time Python number: only where no cast can round or overflow it differently
        if dtype == _F8:
            return meta.pytype in (int, float)
        if dtype == _F4:
            # numpy 2 casts a Python float to the float32 tree's dtype first (NEP 50), as the
            # loop does; an overflow in that cast sets the FPU flag the kernel's caller checks
            return meta.pytype is float and _WEAK_SCALARS
        return meta.pytype is int and dtype.itemsize == 8
    return isinstance(meta, ArrayMeta) and not meta.is_array and meta.dtype == dtype


def _int_bound(arg: Any) -> bool:
    if arg is None or type(arg) is int:
        return True
    if not isinstance(arg, Node):
        return False
    meta = arg.meta.get("val")
    if isinstance(meta, ScalarMeta):
        return meta.pytype is int
    return isinstance(meta, ArrayMeta) and not meta.is_array and meta.dtype.kind == "i"


def _region(index: Any, ndim: int) -> Optional[Tuple[List[_Bound], List[_Bound]]]:
    """Per-dimension (starts, stops) of a basic index of slices with step 1, or None."""
    items = index if type(index) is tuple else (index,)
    if len(items) > ndim or any(type(s) is not slice for s in items):
        return None
    items = items + (slice(None),) * (ndim - len(items))
    starts, stops = [], []
    for s in items:
        if s.step not in (None, 1) or not (_int_bound(s.start) and _int_bound(s.stop)):
            return None
        starts.append(s.start)
        stops.append(s.stop)
    return starts, stops


class _Finder:
    """Builds the expression tree of one store's value, collecting its reads and nodes."""

    def __init__(self, ndim: int, dtype: np.dtype = _F8) -> None:
        self.ndim = ndim
        self.dtype = dtype
        self.reads: List[_Read] = []
        self.nodes: List[Node] = []  # the tree's nodes (removed from the graph)

    def tree(self, arg: Any, user: Node, shape: Tuple[Any, ...]) -> Any:
        if _is_scalar(arg, self.dtype):
            return ("scalar", arg)
        if not _is_f8_array(arg, self.ndim, self.dtype):
            meta = arg.meta.get("val") if isinstance(arg, Node) else None
            if isinstance(meta, ArrayMeta) and 0 < meta.ndim < self.ndim and _is_f8_array(arg, meta.ndim, self.dtype):
                return self._read(arg, [None] * meta.ndim, [None] * meta.ndim, arg, shape)
            return None
        whole = [None] * self.ndim
        if self._private(arg, user):
            target, args = arg.target, arg.args
            if target is operator.getitem and len(args) == 2 and _is_f8_array(args[0], self.ndim, self.dtype):
                region = _region(args[1], self.ndim)
                if region is not None:
                    self.nodes.append(arg)
                    return self._read(args[0], region[0], region[1], arg, shape)
            op = self._op(arg)
            if op is not None:
                self.nodes.append(arg)
                parts = []
                for a in args:
                    part = self.tree(a, arg, shape)
                    if part is None:
                        return None
                    parts.append(part)
                return ("op", op, tuple(parts))
        # an array computed before the store (or an input): read whole
        return self._read(arg, list(whole), list(whole), arg, shape)

    def _private(self, node: Node, user: Node) -> bool:
        return (
            node.kind is NodeKind.CALL
            and not node.kwargs
            and list(node.users) == [user]
            and user.inputs().count(node) == 1
            and not node.meta.get("errstate")
            and not node.impure
        )

    def _op(self, node: Node) -> Any:
        target, n = node.target, len(node.args)
        if self.dtype.kind == "i":
            try:
                if target in INT_DIVIDE:
                    return target if constant_divisor(node, self.dtype) else None
                if target not in _INT_OPS:
                    return None
            except TypeError:
                return None
        if target in _INFIX and n == 2 or target in _PREFIX and n == 1:
            return target
        # small integer powers: numba multiplies them out (a float's within a few ulp of
        # numpy's pow; an integer's wraps alike up to 4)
        if (
            target is operator.pow
            and n == 2
            and type(node.args[1]) is int
            and 0 <= node.args[1] <= _MAX_POWER[self.dtype.kind]
        ):
            return target
        if target is np.clip and n == 3:  # written as minimum(maximum(x, lo), hi): numpy's values, NaN too
            return target
        try:
            known = target in _UFUNCS
        except TypeError:
            return None
        return target if known and n == target.nin and not left_to_numpy(target, self.dtype) else None

    def _read(self, base: Node, starts: List[_Bound], stops: List[_Bound], node: Node, shape: Tuple[Any, ...]) -> Any:
        meta = node.meta["val"]
        # a dimension of extent 1 (when traced) where the value's is not: broadcast (the
        # kernel checks the extents on each run)
        lead = self.ndim - meta.ndim
        broadcast = [_seen_one(meta.shape[k]) and not _seen_one(shape[k + lead]) for k in range(meta.ndim)]
        self.reads.append(_Read(base, starts, stops, broadcast))
        return ("read", len(self.reads) - 1)


#: the largest integer exponent a tree multiplies out, by dtype kind
_MAX_POWER = {"f": 8, "i": 4}


def _seen_one(dim: Any) -> bool:
    return dim == 1 or getattr(dim, "hint", None) == 1


def _constant_start(bound: _Bound) -> Optional[int]:
    """A start known to be a non-negative int (so the loop offset is a constant)."""
    if bound is None:
        return 0
    return bound if type(bound) is int and bound >= 0 else None


def _behind(read: _Read, starts: List[_Bound], stops: List[_Bound]) -> bool:
    """Could the loop read an element of the stored array it has already written?"""
    offsets = []
    for k, (rs, ws) in enumerate(zip(read.starts, starts)):
        if read.broadcast[k]:
            return True
        a, b = _constant_start(rs), _constant_start(ws)
        if a is not None and b is not None:
            offsets.append(a - b)
        elif rs is ws and rs is not None:
            offsets.append(0)
        else:
            return True
    for off in offsets:
        if off:
            return off < 0
    return False


def _write_after(nodes: List[Node], between: List[Node]) -> bool:
    """Is anything after the first of ``nodes`` in ``between`` (the nodes before the
    store) a write or a loop? A tree moves to its store only when nothing between could
    change what it reads."""
    first = min(between.index(n) for n in nodes)
    return any(n.impure or n.kind is NodeKind.CALL and is_loop(n.target) for n in between[first:])


def _fused(store: Node, between: List[Node]) -> Optional[FusedStore]:
    """The fused form of a ``setitem`` node, or None where fusing could change the result."""
    if store.kwargs or len(store.args) != 3 or store.users or store.meta.get("errstate"):
        return None
    dst, index, value = store.args
    meta = dst.meta.get("val") if isinstance(dst, Node) else None
    if not isinstance(meta, ArrayMeta) or not meta.is_array or meta.dtype not in DTYPES or not meta.ndim:
        return None
    ndim = meta.ndim
    region = _region(index, ndim)
    vmeta = value.meta.get("val") if isinstance(value, Node) else None
    if region is None or not _is_f8_array(value, ndim, meta.dtype):
        return None
    finder = _Finder(ndim, meta.dtype)
    expr = finder.tree(value, store, tuple(vmeta.shape))
    if expr is None or not finder.nodes or expr[0] != "op":
        return None
    # the tree's nodes move to the store: nothing between them may write what they read
    if _write_after(finder.nodes, between):
        return None
    temp = any(r.base is dst and _behind(r, *region) for r in finder.reads)
    fs = FusedStore(dst, region[0], region[1], expr, finder.reads, temp, finder.nodes, dtype=meta.dtype)
    fs.__name__ = f"fused_store_{store.name}"
    return fs


#: in-place operators fused as a store of ``dst op tree`` over the whole of ``dst``
_IN_PLACE = {operator.iadd: operator.add, operator.isub: operator.sub, operator.imul: operator.mul}


def _fused_in_place(node: Node, between: List[Node]) -> Optional[FusedStore]:
    """``a += tree`` (``-=``, ``*=``) on an array, with ``tree`` of the same rank and dtype,
    as one loop nest writing ``a``: numpy computes the tree into a temporary first."""
    if node.kwargs or len(node.args) != 2 or node.meta.get("errstate"):
        return None
    dst, value = node.args
    meta = dst.meta.get("val") if isinstance(dst, Node) else None
    if not isinstance(meta, ArrayMeta) or not meta.is_array or meta.dtype not in DTYPES or not meta.ndim:
        return None
    ndim = meta.ndim
    vmeta = value.meta.get("val") if isinstance(value, Node) else None
    if not _is_f8_array(value, ndim, meta.dtype) or tuple(vmeta.shape) != tuple(meta.shape):
        return None
    finder = _Finder(ndim, meta.dtype)
    whole: List[_Bound] = [None] * ndim
    own = finder._read(dst, list(whole), list(whole), dst, tuple(meta.shape))
    tree = finder.tree(value, node, tuple(meta.shape))
    if tree is None or not finder.nodes or tree[0] != "op":
        return None
    if _write_after(finder.nodes, between):
        return None
    temp = any(r.base is dst and _behind(r, whole, whole) for r in finder.reads)
    expr = ("op", _IN_PLACE[node.target], (own, tree))
    fs = FusedStore(dst, whole, list(whole), expr, finder.reads, temp, finder.nodes, dtype=meta.dtype, gives_dst=True)
    fs.__name__ = f"fused_in_place_{node.name}"
    return fs


def _fused_new(node: Node, between: List[Node]) -> Optional[FusedStore]:
    """An elementwise tree over arrays computed into a new array by one loop nest
    (numba's array expressions broadcast slowly and leave some ufuncs out), or None."""
    meta = node.meta.get("val")
    if (
        node.kind is not NodeKind.CALL
        or node.kwargs
        or node.meta.get("errstate")
        or node.impure
        or not isinstance(meta, ArrayMeta)
        or meta.ndim < (1 if NARROW_1D or meta.dtype not in _NARROW else 2)
        or meta.dtype not in DTYPES
        or not _is_f8_array(node, meta.ndim, meta.dtype)
    ):
        return None
    finder = _Finder(meta.ndim, meta.dtype)
    op = finder._op(node)
    if op is None:
        return None
    parts = []
    for a in node.args:
        part = finder.tree(a, node, tuple(meta.shape))
        if part is None:
            return None
        parts.append(part)
    if not finder.reads:
        return None
    if finder.nodes:
        if _write_after(finder.nodes, between):
            return None
    fs = FusedStore(None, [None] * meta.ndim, [None] * meta.ndim, ("op", op, tuple(parts)), finder.reads, False)
    fs.dtype = meta.dtype
    fs.nodes = finder.nodes
    fs.__name__ = f"fused_{node.name}"
    return fs


def _reuse(fs: FusedStore, root: Node) -> None:
    """Write a new-array tree into an array it reads whole that dies there (numpy's own
    temporary elision, ``out = out + w[k] * x[k:k + n]``): no allocation, one array less
    in the cache. Only a fresh array (``fusion_ops.fresh_array``) read once, at the element being written,
    by this tree alone."""
    meta = root.meta["val"]
    tree = set(fs.nodes) | {root}
    for r in fs.reads:
        base = r.base
        bmeta = base.meta.get("val")
        if (
            isinstance(bmeta, ArrayMeta)
            and bmeta.is_array
            and bmeta.dtype == fs.dtype
            and tuple(bmeta.shape) == tuple(meta.shape)
            and r.ndim == meta.ndim
            and not any(r.broadcast)
            and all(b is None for b in r.starts + r.stops)
            and base not in tree
            and len(base.users) == 1
            and next(iter(base.users)) in tree
            and sum(q.base is base for q in fs.reads) == 1
            and fresh_array(base)
        ):
            fs.dst, fs.gives_dst = base, True
            return


def _fused_args(fs: FusedStore) -> List[Node]:
    """The nodes the loop nest reads: arrays, scalars, index bounds (each once)."""
    found: List[Node] = []

    def add(x: Any) -> None:
        if isinstance(x, Node) and x not in found:
            found.append(x)

    if fs.dst is not None:
        add(fs.dst)
    for b in fs.starts + fs.stops:
        add(b)
    for r in fs.reads:
        add(r.base)
        for b in r.starts + r.stops:
            add(b)

    def walk(e: Any) -> None:
        if e[0] == "scalar":
            add(e[1])
        elif e[0] == "op":
            for part in e[2]:
                walk(part)

    walk(fs.expr)
    return found


def rewrite(graph: Graph) -> Tuple[Graph, List[Any]]:
    """A copy of the graph with every fusable store as one ``FusedStore`` call and every
    axis reduction as one ``FusedReduce`` call (the graph itself when there is none)."""
    fused: List[Any] = []
    new = _copy(graph, None, fused)
    return (new, fused) if fused else (graph, [])


def _copy(graph: Graph, parent: Optional[Graph], fused: List[FusedStore]) -> Graph:
    plans: Dict[Node, FusedStore] = {}
    gone: set = set()
    ops = [n for n in graph.nodes if n.kind not in (NodeKind.PLACEHOLDER, NodeKind.OUTPUT)]
    for i in reversed(range(len(ops))):  # users first: each tree is taken whole
        node = ops[i]
        if node in gone:
            continue
        if node.kind is NodeKind.CALL and node.target is operator.setitem:
            fs: Any = _fused(node, ops[:i])
        elif node.kind is NodeKind.CALL and any(node.target is t for t in _IN_PLACE):
            fs = _fused_in_place(node, ops[:i])
        else:
            fs = masked(node) or reduction(node)
            if isinstance(fs, FusedMasked):
                if _write_after(fs.nodes, ops[:i]):
                    fs = None  # a write between the condition's first part and the reduction
            elif fs is not None:
                inner = node.args[0]
                if inner in ops and list(inner.users) == [node] and not inner.impure:
                    fs.tree = _fused_new(inner, ops[: ops.index(inner)])
                    if fs.tree is not None:
                        fs.tree.nodes = [inner, *fs.tree.nodes]
                        if any(n.impure for n in ops[ops.index(inner) : i]):
                            fs.tree = None
            else:
                fs = (matvec(node) if MATVEC_LOOPS else None) or numpy_ufunc(node) or _fused_new(node, ops[:i])
                if isinstance(fs, FusedStore):
                    _reuse(fs, node)
        if isinstance(fs, (FusedMasked, NumpyUfunc)):
            plans[node] = fs
            gone.update(fs.nodes)
        elif isinstance(fs, FusedMatvec):
            plans[node] = fs
            gone.update([fs.transposed] if fs.transposed is not None else [])
        elif fs is not None:
            plans[node] = fs
            gone.update(fs.nodes if isinstance(fs, FusedStore) else fs.tree.nodes if fs.tree else ())
    new = Graph(graph.name, names_from=parent)
    new.meta = dict(graph.meta)
    mapping: Dict[Node, Node] = {}

    def m(arg: Any) -> Any:
        return map_arg(arg, lambda n: mapping[n])

    for node in graph.nodes:
        if node in gone:
            continue
        if node.kind is NodeKind.PLACEHOLDER:
            made = new.placeholder(node.target, node.meta.get("val"))
        elif isinstance(plans.get(node), (FusedMasked, NumpyUfunc)):
            made = new._add(NodeKind.CALL, plans[node], tuple(mapping[a] for a in plans[node].args), {}, node.name)
            fused.append(plans[node])
        elif isinstance(plans.get(node), FusedMatvec):
            made = new._add(
                NodeKind.CALL, plans[node], tuple(mapping[a] for a in matvec_args(plans[node], node)), {}, node.name
            )
            fused.append(plans[node])
        elif isinstance(plans.get(node), FusedReduce):
            fr = plans[node]
            args = [node.args[0]] if fr.tree is None else _fused_args(fr.tree)
            made = new._add(NodeKind.CALL, fr, tuple(mapping[a] for a in args), {}, node.name)
            if fr.tree is not None:
                fr.tree.args = [mapping[a] for a in args]
                _remap(fr.tree, mapping)
            fused.append(fr)
        elif node in plans:
            fs = plans[node]
            fs.args = _fused_args(fs)
            made = new._add(NodeKind.CALL, fs, tuple(mapping[a] for a in fs.args), {}, node.name)
            fs.args = [mapping[a] for a in fs.args]
            _remap(fs, mapping)
            fused.append(fs)
        elif node.kind is NodeKind.CALL and is_loop(node.target):
            loop = node.target
            body = _copy(loop.body, new, fused)
            made = new._add(node.kind, with_body(loop, body), m(node.args), m(node.kwargs), node.name)
        else:
            made = new._add(node.kind, node.target, m(node.args), m(node.kwargs), node.name)
        made.meta = dict(node.meta)
        if isinstance(made.target, (FusedStore, FusedReduce, FusedMatvec, FusedMasked, NumpyUfunc)):
            made.meta["impure"] = True  # its own statement: never folded into an expression
        mapping[node] = made
    return new


def _remap(fs: FusedStore, mapping: Dict[Node, Node]) -> None:
    def one(x: Any) -> Any:
        return mapping[x] if isinstance(x, Node) else x

    fs.dst = one(fs.dst)
    fs.starts = [one(b) for b in fs.starts]
    fs.stops = [one(b) for b in fs.stops]
    for r in fs.reads:
        r.base = one(r.base)
        r.starts = [one(b) for b in r.starts]
        r.stops = [one(b) for b in r.stops]

    def walk(e: Any) -> Any:
        if e[0] == "scalar":
            return ("scalar", one(e[1]))
        if e[0] == "op":
            return ("op", e[1], tuple(walk(p) for p in e[2]))
        return e

    fs.expr = walk(fs.expr)


# ---------------------------------------------------------------- writing the loop nest


class _Writer:
    def __init__(self, fs: FusedStore, names: Any, prefix: str, parallel: bool) -> None:
        self.parallel = parallel
        self.fs = fs
        self.names = names
        self.p = prefix
        self.lines: List[str] = []
        self.var: Dict[Node, str] = {}
        for k, a in enumerate(fs.args):
            v = f"{prefix}a{k}"
            self.lines.append(f"{v} = {render_arg(a, names)}")
            self.var[a] = v
        self.count = 0

    def fresh(self) -> str:
        self.count += 1
        return f"{self.p}t{self.count}"

    def text(self, x: Any) -> str:
        return self.var[x] if isinstance(x, Node) else repr(x)

    def bounds(self, array: str, k: int, start: _Bound, stop: _Bound) -> Tuple[str, str]:
        """(start, extent) of one sliced dimension as Python's slicing gives them; a start
        that is a non-negative constant stays a literal (the loop indices are then known
        non-negative, and numba drops its wraparound test)."""
        n = self.fresh()
        self.lines.append(f"{n} = {array}.shape[{k}]")

        def norm(b: _Bound, default: str) -> str:
            if b is None:
                return default
            if type(b) is int:
                return f"min({b}, {n})" if b >= 0 else f"max({n} + {b}, 0)"
            v = self.fresh()
            self.lines.append(f"{v} = {self.text(b)}")
            self.lines.append(f"{v} = min(max({v} + {n} if {v} < 0 else {v}, 0), {n})")
            return v

        if start is None or type(start) is int and start >= 0:
            lo = str(start or 0)  # past the end: the extent below is 0 all the same
        else:
            lo = self.fresh()
            self.lines.append(f"{lo} = {norm(start, '0')}")
        hi = norm(stop, n)
        ext = self.fresh()
        self.lines.append(f"{ext} = max({hi} - {lo}, 0)")
        return lo, ext

    def span(self, array: str, ndim: int) -> Tuple[str, str]:
        lo, hi = self.fresh(), self.fresh()
        self.lines.append(f"{lo} = {self.names.bind(np.intp, 'numpy_intp')}({array}.ctypes.data)")
        self.lines.append(f"{hi} = {lo} + {array}.itemsize")
        for k in range(ndim):
            e = self.fresh()
            self.lines.append(f"{e} = ({array}.shape[{k}] - 1) * {array}.strides[{k}]")
            self.lines.append(f"if {e} < 0:")
            self.lines.append(f"    {lo} += {e}")
            self.lines.append("else:")
            self.lines.append(f"    {hi} += {e}")
        return lo, hi

    def write(self, out: str) -> List[str]:
        """The loop nest; a new array's is assigned to ``out``."""
        fs = self.fs
        ndim = len(fs.starts)
        dst, wlo, wext, idx, value = self.prepare(out)
        dt = self.names.bind(fs.dtype.type, f"numpy_{fs.dtype.name}")
        if fs.dst is None:
            self.lines += new_array(self.names, dst, f"({', '.join(wext)},)", dt)
            self._nest(idx, wlo, wext, f"{dst}[{', '.join(idx)}] = {value}", self.parallel)
        elif fs.through_temp:
            tmp = self.fresh()
            self.lines += new_array(self.names, tmp, f"({', '.join(wext)},)", dt)
            rel = ", ".join(idx[k] if wlo[k] == "0" else f"{idx[k]} - {wlo[k]}" for k in range(ndim))
            self._nest(idx, wlo, wext, f"{tmp}[{rel}] = {value}", self.parallel)
            self._nest(idx, wlo, wext, f"{dst}[{', '.join(idx)}] = {tmp}[{rel}]", self.parallel)
        else:
            # rows in parallel only when no row reads an element another row writes
            alone = all(r.base is not fs.dst or r.starts == fs.starts for r in fs.reads)
            self._nest(idx, wlo, wext, f"{dst}[{', '.join(idx)}] = {value}", self.parallel and alone)
        if fs.gives_dst:
            self.lines.append(f"{out} = {dst}")
        return self.lines

    def prepare(self, out: str) -> Tuple[str, List[str], List[str], List[str], str]:
        """The checks before the loops; (the array written, its region's starts and
        extents, the index variables, the value at those indices)."""
        fs = self.fs
        ndim = len(fs.starts)
        bounds = []
        for r in fs.reads:
            base = self.var[r.base]
            bounds.append(list(zip(*(self.bounds(base, k, r.starts[k], r.stops[k]) for k in range(r.ndim)))))
        if fs.dst is None:
            # a new array: each extent is that of a read not broadcast along it (numpy's rule)
            wlo, wext = ["0"] * ndim, ["1"] * ndim
            for k in range(ndim):
                for r, (_, rext) in zip(fs.reads, bounds):
                    kr = k - (ndim - r.ndim)
                    if kr >= 0 and not r.broadcast[kr]:
                        wext[k] = rext[kr]
                        break
            dst = out
        else:
            dst = self.var[fs.dst]
            wlo, wext = (list(t) for t in zip(*(self.bounds(dst, k, fs.starts[k], fs.stops[k]) for k in range(ndim))))
        idx = [f"{self.p}i{k}" for k in range(ndim)]
        reads = []
        seen_apart = set()
        for r, (rlo, rext) in zip(fs.reads, bounds):
            base = self.var[r.base]
            lead = ndim - r.ndim  # a read of fewer dimensions lines up with the last ones
            ok = " and ".join(
                f"{rext[k]} == 1" if r.broadcast[k] else f"{rext[k]} == {wext[k + lead]}" for k in range(r.ndim)
            )
            self.lines.append(f"if not ({ok}):")
            self.lines.append("    raise ValueError('operands could not be broadcast together')")
            if fs.dst is not None and r.base is not fs.dst and r.base not in seen_apart:
                seen_apart.add(r.base)
                self._apart(dst, ndim, base, r.base_ndim)
            parts = []
            for k in range(r.ndim):
                i = idx[k + lead]
                if r.broadcast[k]:
                    parts.append(rlo[k])
                    continue
                a, b = _literal(rlo[k]), _literal(wlo[k + lead])
                if a is not None and b is not None:
                    off = a - b
                    parts.append(i if not off else f"{i} + {off}" if off > 0 else f"{i} - {-off}")
                else:
                    d = self.fresh()
                    self.lines.append(f"{d} = {rlo[k]} - {wlo[k + lead]}")
                    parts.append(f"{i} + {d}")
            reads.append(f"{base}[{', '.join(parts)}]")
        return dst, wlo, wext, idx, self.expr(fs.expr, reads)

    def _apart(self, dst: str, ndim: int, other: str, other_ndim: int) -> None:
        """Raise when two different arrays of the store share memory (the eager code then
        runs the call, with numpy's own handling of the overlap)."""
        dlo, dhi = self.span(dst, ndim)
        olo, ohi = self.span(other, other_ndim)
        self.lines.append(f"if {dst}.size and {other}.size and {olo} < {dhi} and {dlo} < {ohi}:")
        self.lines.append("    raise ValueError('the store overlaps an array it reads')")

    def _nest(self, idx: List[str], lo: Tuple[str, ...], ext: Tuple[str, ...], body: str, parallel: bool) -> None:
        pad = ""
        for k in range(len(idx)):
            loop = PRANGE if parallel and not k else "range"
            self.lines.append(f"{pad}for {idx[k]} in {loop}({lo[k]}, {lo[k]} + {ext[k]}):")
            pad += "    "
        self.lines.append(pad + body)

    def expr(self, e: Any, reads: List[str]) -> str:
        dtype = self.fs.dtype
        cast = self.names.bind(dtype.type, f"numpy_{dtype.name}") if dtype in _NARROW else ""
        if e[0] == "read":
            return reads[e[1]]
        if e[0] == "scalar":
            return f"{cast}({self.text(e[1])})" if cast else self.text(e[1])
        _, op, parts = e
        texts = [self.expr(p, reads) for p in parts]
        if op is operator.pow:  # the exponent stays an int literal (numba's fast integer power)
            texts[1] = repr(parts[1][1])
        if dtype == _I8:
            wrapped = int64_wrapping(self.names, op, texts)
            if wrapped is not None:
                return wrapped
        if op in _INFIX or op in INT_DIVIDE:
            text = f"({texts[0]} {_INFIX.get(op) or INT_DIVIDE[op]} {texts[1]})"
        elif op in _PREFIX:
            text = f"({_PREFIX[op]}{texts[0]})"
        elif op is operator.pow:
            text = f"({texts[0]} ** {texts[1]})"
        elif op is np.clip:
            low, high = self.names.bind(np.maximum, "numpy_maximum"), self.names.bind(np.minimum, "numpy_minimum")
            text = f"{high}({low}({texts[0]}, {texts[1]}), {texts[2]})"
        else:
            name = self.names.bind(op, f"numpy_{op.__name__}")
            text = f"{name}({', '.join(texts)})"
        return f"{cast}({text})" if cast else text


def _literal(text: str) -> Optional[int]:
    try:
        return int(text)
    except ValueError:
        return None


def expand(source: str, fused: List[Any], names: Any, parallel: bool = False) -> str:
    """The source with each fused store's call line replaced by its loop nest (outer loops
    whose iterations are independent as ``PRANGE`` when ``parallel``)."""
    lines = source.split("\n")
    for n, fs in enumerate(fused):
        p = f"_fh{n}_"

        def write(var: str, arg: str, fs: Any = fs, p: str = p) -> List[str]:
            if isinstance(fs, FusedMasked):
                return masked_lines(fs, var, arg, names, p)
            if isinstance(fs, FusedMatvec):
                return matvec_lines(fs, var, arg, names, p)
            if isinstance(fs, NumpyUfunc):
                return ufunc_lines(fs, var, arg, names, p)
            if isinstance(fs, FusedReduce):
                writer = None if fs.tree is None else _Writer(fs.tree, names, p, parallel)
                return reduce_lines(fs, var, arg, names, p, PRANGE if parallel else "range", writer)
            return _Writer(fs, names, p, parallel).write(var)

        replace_call(lines, fs, names, write)
    return "\n".join(lines)
