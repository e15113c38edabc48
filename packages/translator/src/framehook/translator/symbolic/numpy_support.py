"""Which numpy functions and array methods the symbolic interpreter captures, and how
their results' metadata is found (by running them on one-element proxies)."""

from __future__ import annotations

import contextlib
import operator
import threading
import warnings
from typing import Any, Callable, Dict, FrozenSet, List, Optional, Tuple

import numpy as np

from ..graph import ArrayMeta
from .roles import Frame
from .values import Const, DictV, ListV, Tensor, TupleV, V

__all__ = [
    "NUMPY_FUNCTIONS",
    "CREATION",
    "LINALG",
    "ARRAY_METHODS",
    "ARRAY_VALUE_ATTRS",
    "ARRAY_NODE_ATTRS",
    "UFUNC_METHODS",
    "is_numpy_callable",
    "numpy_name",
    "run_on_proxies",
    "SHAPE_QUERIES",
    "is_numpy_module",
    "SIZE_ARGS",
    "SIZE_METHOD_ARGS",
    "VALUE_DEPENDENT_DTYPE",
    "is_mask",
    "mask_index_getitem",
    "mask_index_setitem",
]


def _collect(module: Any, names: str) -> Dict[Any, str]:
    out: Dict[Any, str] = {}
    prefix = "numpy." if module is np else f"numpy.{module.__name__.rsplit('.', 1)[-1]}."
    for name in names.split():
        fn = getattr(module, name, None)
        if fn is not None:
            out[fn] = prefix + name
    return out


#: creation functions: every argument must be known at trace time, except these
CREATION_NAMES = """zeros ones empty full zeros_like ones_like empty_like full_like arange linspace logspace eye
identity tri indices ndarray"""
#: functions whose arguments may be arrays
GENERAL_NAMES = """array asarray asanyarray ascontiguousarray copy diag diagflat meshgrid
sum mean std var prod max min amax amin argmax argmin all any median cumsum cumprod nansum nanmean nanmax nanmin
nanstd nanvar average percentile quantile ptp
reshape transpose swapaxes moveaxis expand_dims squeeze ravel concatenate stack vstack hstack dstack column_stack
split array_split hsplit vsplit tile repeat broadcast_to broadcast_arrays flip fliplr flipud roll rot90 atleast_1d
atleast_2d atleast_3d pad diff gradient take take_along_axis sort argsort triu tril trace diagonal
outer inner dot vdot matmul einsum tensordot kron cross where clip round around nan_to_num real imag angle conj
sinc isclose interp convolve correlate cov corrcoef histogram histogram_bin_edges
append insert delete searchsorted digitize polyval"""
#: answered from dtypes and shapes alone (folded at trace time)
META_ONLY_NAMES = "result_type promote_types can_cast min_scalar_type"
#: ``slogdet``, ``eigh``, ``eig``, ``svd`` and ``qr`` return named tuples on numpy 2 (plain tuples
#: before): one node holds the result, its items are read by ``getitem`` nodes
LINALG_NAMES = "norm inv solve det cholesky pinv matrix_power slogdet eigvalsh eigh eig eigvals svd svdvals qr"

CREATION: Dict[Any, str] = _collect(np, CREATION_NAMES)
NUMPY_FUNCTIONS: Dict[Any, str] = {**CREATION, **_collect(np, GENERAL_NAMES)}
LINALG: Dict[Any, str] = _collect(np.linalg, LINALG_NAMES)
NUMPY_FUNCTIONS.update(LINALG)
#: functions answered from metadata alone
SHAPE_QUERIES: Dict[Any, str] = _collect(np, "shape ndim size")
META_ONLY: Dict[Any, str] = _collect(np, META_ONLY_NAMES)
NUMPY_FUNCTIONS.update(META_ONLY)
NUMPY_FUNCTIONS.update(SHAPE_QUERIES)

#: which arguments of a creation function may be arrays (by position and name)
CREATION_ARRAY_ARGS = {
    np.full: ({1}, {"fill_value"}),
    np.full_like: ({0, 1}, {"a", "fill_value"}),
    np.linspace: ({0, 1}, {"start", "stop"}),
    np.logspace: ({0, 1}, {"start", "stop"}),
    np.zeros_like: ({0}, {"a"}),
    np.ones_like: ({0}, {"a"}),
    np.empty_like: ({0}, {"prototype"}),
}

#: arguments of non-ufunc functions that may be Python numbers computed at run time (values,
#: never sizes or axes); every other Python-number argument is specialized (guarded on its value)
VALUE_ARGS = {
    np.where: ({1, 2}, {"x", "y"}),
    np.clip: ({1, 2}, {"a_min", "a_max", "min", "max"}),
    np.full: ({1}, {"fill_value"}),
    np.full_like: ({1}, {"fill_value"}),
    np.linspace: ({0, 1}, {"start", "stop"}),
    np.logspace: ({0, 1}, {"start", "stop"}),
    np.nan_to_num: (set(), {"nan", "posinf", "neginf"}),
    np.isclose: ({1}, {"b"}),
    np.dot: ({0, 1}, set()),
    np.outer: ({0, 1}, set()),
    np.power: ({0, 1}, set()),
    np.histogram: ({2}, {"range"}),
}

#: arguments that are sizes (shapes, lengths, counts): a graph int there (a dynamic
#: dimension read in the code) stays in the graph and makes the result's dimensions symbolic;
#: the result's ndim and dtype never depend on the value
SIZE_ARGS = {
    np.zeros: ({0}, {"shape"}),
    np.ones: ({0}, {"shape"}),
    np.empty: ({0}, {"shape"}),
    np.full: ({0}, {"shape"}),
    np.zeros_like: (set(), {"shape"}),
    np.ones_like: (set(), {"shape"}),
    np.empty_like: (set(), {"shape"}),
    np.full_like: (set(), {"shape"}),
    np.arange: ({0, 1, 2}, {"start", "stop", "step"}),
    np.linspace: ({2}, {"num"}),
    np.logspace: ({2}, {"num"}),
    np.eye: ({0, 1, 2}, {"N", "M", "k"}),
    np.identity: ({0}, {"n"}),
    np.tri: ({0, 1, 2}, {"N", "M", "k"}),
    np.indices: ({0}, {"dimensions"}),
    np.reshape: ({1}, {"shape", "newshape"}),
    np.broadcast_to: ({1}, {"shape"}),
    np.repeat: ({1}, {"repeats"}),
    np.tile: ({1}, {"reps"}),
    np.ndarray: ({0}, {"shape"}),
    np.histogram: ({1}, {"bins"}),
}
#: array methods whose positional arguments are sizes
SIZE_METHOD_ARGS = {"reshape": None, "repeat": {0}}  # None: every positional argument

ARRAY_METHODS: FrozenSet[str] = frozenset(
    """sum mean std var prod max min argmax argmin all any cumsum cumprod
reshape transpose swapaxes squeeze ravel flatten astype copy clip round dot conj conjugate repeat take sort argsort
diagonal trace fill view""".split()
)
#: attributes answered from metadata
ARRAY_VALUE_ATTRS: FrozenSet[str] = frozenset({"shape", "ndim", "dtype", "size", "itemsize", "nbytes"})
#: attributes that are new arrays (graph nodes)
ARRAY_NODE_ATTRS: FrozenSet[str] = frozenset({"T", "real", "imag", "mT"})
UFUNC_METHODS: FrozenSet[str] = frozenset({"reduce", "accumulate", "outer", "reduceat"})


def is_numpy_module(obj: Any) -> bool:
    name = getattr(obj, "__name__", "")
    return obj is np or (isinstance(name, str) and name.startswith("numpy."))


def is_numpy_callable(fn: Any) -> bool:
    try:
        if isinstance(fn, np.ufunc) or fn in NUMPY_FUNCTIONS:
            return True
    except TypeError:  # unhashable
        return False
    owner = getattr(fn, "__self__", None)
    return isinstance(owner, np.ufunc) and getattr(fn, "__name__", "") in UFUNC_METHODS


def numpy_name(fn: Any) -> str:
    if isinstance(fn, np.ufunc):
        return f"numpy.{fn.__name__}"
    owner = getattr(fn, "__self__", None)
    if isinstance(owner, np.ufunc):
        return f"numpy.{owner.__name__}.{fn.__name__}"
    try:
        name = NUMPY_FUNCTIONS.get(fn) or SHAPE_QUERIES.get(fn)
    except TypeError:
        name = None
    return name or f"{getattr(fn, '__module__', '?')}.{getattr(fn, '__name__', repr(fn))}"


def _identity_proxy(value: Any) -> Any:
    """Linear-algebra functions reject singular proxies: give square ones the identity."""
    if isinstance(value, np.ndarray) and value.ndim >= 2 and value.shape[-1] == value.shape[-2]:
        eye = np.eye(value.shape[-1], dtype=value.dtype)
        return np.broadcast_to(eye, value.shape).copy()
    return value


def view_proxy(proxy: Any) -> Any:
    """``proxy`` with a contiguous last axis, for ``.view(dtype)``: numpy changes the item size
    of a view only along a contiguous last axis, which the zero-stride proxies lack. (The
    real array's layout is checked by numpy when the graph runs, raising as plain code does.)"""
    if not isinstance(proxy, np.ndarray) or proxy.ndim == 0:
        return proxy
    row = np.zeros(proxy.shape[-1], proxy.dtype)
    return np.lib.stride_tricks.as_strided(
        row, shape=proxy.shape, strides=(0,) * (proxy.ndim - 1) + (proxy.dtype.itemsize,)
    )


class _ThisThread:
    """A warning filter's message pattern that matches only on the thread that made it: the
    filter list is shared by every thread, and a translation must not silence (or turn into
    errors) the warnings of code another thread runs meanwhile."""

    __slots__ = ("ident",)

    def __init__(self) -> None:
        self.ident = threading.get_ident()

    def match(self, text: str) -> bool:
        return threading.get_ident() == self.ident

    def __repr__(self) -> str:
        return f"<framehook translation on thread {self.ident}>"


@contextlib.contextmanager
def _in_front(action: str) -> Any:
    """A filter with ``action`` for every warning of this thread as the first warning filter
    inside, then taken out of the same list."""
    entry = (action, _ThisThread(), Warning, None, 0)
    filters = warnings.filters  # the list in force now (catch_warnings blocks rebind it)
    filters.insert(0, entry)
    try:
        yield
    finally:
        for i, found in enumerate(filters):
            if found is entry:
                del filters[i]
                break


def warnings_ignored() -> Any:
    """Ignore every warning inside, leaving the warning machinery as it was.

    ``warnings.catch_warnings()`` would tell the warnings module its filters changed when it
    restores them, and every module would then forget the warnings it has already shown
    (a "default" or "once" warning of the user's would be shown again after each
    translation). An ignore filter put in front of the current list and taken out again
    changes nothing an ignored warning could have recorded."""
    return _in_front("ignore")


def warnings_raised() -> Any:
    """Every warning inside raises (as ``warnings_ignored``, without touching the machinery's
    state: an "error" action records nothing). For values computed at trace time: a warning
    would be shown once, at the translator's line, and never on a cache hit."""
    return _in_front("error")


def run_on_proxies(fn: Callable[..., Any], args: Any, kwargs: Any, linalg: bool = False) -> Any:
    """Call ``fn`` on proxy values, quietly (no numpy warnings, no floating-point errors)."""
    if linalg:
        args = tuple(_identity_proxy(a) for a in args)
    with np.errstate(all="ignore"), warnings_ignored():
        return fn(*args, **kwargs)


def _real_for_real_input(fn: Any) -> bool:
    """Does ``fn`` (``eig``, ``eigvals``) return real values for a real matrix whose eigenvalues
    are real? numpy before 2.5 does (complex ones only when some eigenvalue is complex: the
    result's dtype depends on the values); numpy 2.5 always returns complex values."""
    try:
        with np.errstate(all="ignore"):
            result = fn(np.eye(1))
    except Exception:  # pragma: no cover - defensive: then the result cannot be described
        return True
    first = result[0] if isinstance(result, tuple) else result
    return np.asarray(first).dtype.kind != "c"


#: functions whose result's dtype depends on the values of a real argument on this numpy
#: (captured for complex arguments only, whose result is complex whatever the values)
VALUE_DEPENDENT_DTYPE: Dict[Any, str] = {
    fn: name
    for fn, name in (
        (getattr(np.linalg, "eig", None), "numpy.linalg.eig"),
        (getattr(np.linalg, "eigvals", None), "numpy.linalg.eigvals"),
    )
    if fn is not None and _real_for_real_input(fn)
}


def known_function_name(fn: Any) -> Optional[str]:
    try:
        return NUMPY_FUNCTIONS.get(fn)
    except TypeError:
        return None


# ---------------------------------------------------------------- boolean masks
def _check_mask(fr: Any, obj: Any, mask: Any, what: str) -> None:
    """``mask`` (a boolean graph array) can index ``obj``: its dimensions match the leading
    ones of ``obj`` (symbolic dimensions are checked by numpy when the graph runs)."""
    om, mm = obj.meta, mask.meta
    if mm.ndim == 0:
        raise fr.brk("FH011", f"{what} with a 0-d boolean index (adds a dimension of data-dependent size)")
    if mm.ndim > om.ndim:
        raise fr.brk("FH009", f"{what}: too many indices for an array of {om.ndim} dimensions")
    for i, (a, b) in enumerate(zip(om.shape, mm.shape)):
        if isinstance(a, int) and isinstance(b, int) and a != b:
            raise fr.brk(
                "FH009",
                f"{what}: boolean index did not match the array along dimension {i}; "
                f"dimension is {a} but the boolean dimension is {b}",
            )


def mask_getitem(fr: Any, obj: Any, mask: Any) -> Any:
    """``obj[mask]``: one dimension of data-dependent size (a fresh ``SymDim``, so its size
    is never read at trace time: ``.shape`` and ``len()`` break with FH011) followed by the
    dimensions of ``obj`` the mask does not cover."""
    from ..graph import ArrayMeta, SymDim
    from .values import Tensor
    import operator

    _check_mask(fr, obj, mask, "boolean-mask indexing")
    tracer = fr.tracer
    om = obj.meta
    meta = ArrayMeta((SymDim(f"s{tracer.next_sym()}"),) + tuple(om.shape[mask.meta.ndim :]), om.dtype)
    node = tracer.graph.call(operator.getitem, (tracer.to_arg(obj), tracer.to_arg(mask)), stack=tracer.stack_location())
    node.meta["val"] = meta
    return Tensor(node, meta)


def mask_setitem(fr: Any, obj: Any, mask: Any, value: Any) -> None:
    """``obj[mask] = value``, in place, in the graph. The value must cast to the array's
    dtype (checked on one element); its length is checked by numpy when the graph runs."""
    from .values import Tensor
    import operator

    _check_mask(fr, obj, mask, "boolean-mask assignment")
    tracer = fr.tracer
    om = obj.meta
    if isinstance(value, Tensor):
        vmeta = value.meta
        if getattr(vmeta, "ndim", 0) > 1 + om.ndim - mask.meta.ndim:
            raise fr.brk("FH009", "boolean-mask assignment of a value with too many dimensions")
        sample = vmeta.proxy() if not hasattr(vmeta, "shape") else np.zeros((), vmeta.dtype)[()]
    else:
        sample = tracer.to_proxy(value)
    target = np.zeros((1,) + tuple(1 for _ in om.shape[mask.meta.ndim :]), om.dtype)
    try:
        run_on_proxies(operator.setitem, (target, np.ones(1, bool), sample), {})
    except Exception as e:
        raise fr.brk("FH009", f"boolean-mask assignment raised {type(e).__name__}: {e}") from None
    tracer.graph.call(
        operator.setitem, (tracer.to_arg(obj), tracer.to_arg(mask), tracer.to_arg(value)), stack=tracer.stack_location()
    )


# ---------------------------------------------------------------- masks among other indices
def is_mask(v: Any) -> bool:
    """A boolean array or numpy bool computed in the graph (a 0-d one included)."""
    return isinstance(v, Tensor) and isinstance(v.meta, ArrayMeta) and v.meta.dtype == np.bool_


class _Fancy:
    """Where the stand-in of a mask goes in the index run on proxies: a 1-d integer array of
    the length tried for the mask's number of true elements (all zeros: a valid index)."""

    __slots__ = ()


_FANCY = _Fancy()
#: two lengths tried for a number of true elements that nothing fixes: the result's dimensions
#: that differ between the two runs are the data-dependent ones
_TRY_LENGTHS = (2, 3)


def _mask_index_meta(fr: Any, obj: Any, idx: Any, what: str) -> Any:
    """The metadata of ``obj[idx]`` where ``idx`` is a mask of any ndim (0-d included) or a
    tuple index holding masks among ints, slices, None, Ellipsis and integer arrays.

    numpy reads a boolean index of ndim k as the k integer arrays of its ``nonzero()`` (a 0-d
    one adds a dimension of size 1 to the array and indexes it with ``[0]`` or ``[]``): each
    is an *advanced* index of length N, the number of true elements, broadcast with the other
    advanced indices (integer arrays, and then ints too), and the broadcast dimensions go where
    the advanced indices are, or first when a slice, None or Ellipsis separates them. So the
    index is run on proxies with each mask replaced by that many integer arrays: the result's
    dimensions that change with the length tried are the data-dependent one (a fresh
    ``SymDim``); when another advanced index fixes N by broadcasting (an integer array of
    length 5: N must be 5 or 1) the dimension is that length, and numpy checks N when the graph
    runs. The masks' own dimensions are checked against the array's here when both are static
    (numpy's IndexError otherwise); symbolic ones are checked by numpy when the graph runs."""
    from ..graph import SymDim
    from .values import SliceV, TupleV
    import operator

    tracer = fr.tracer
    om = obj.meta
    items = list(idx.items) if isinstance(idx, TupleV) else [idx]
    symbolic = not om.is_static
    counts: List[Optional[int]] = []  # dimensions of ``obj`` each item covers (None: the Ellipsis)
    proxies: List[Any] = []  # the items that are not masks, on proxies
    forced = set()  # lengths the other advanced indices (or an empty mask) fix N to
    for it in items:
        if is_mask(it):
            mm = it.meta
            counts.append(mm.ndim)
            if not mm.is_static:
                symbolic = True
            elif mm.size == 0:
                forced.add(0)
            continue
        if (
            isinstance(it, SliceV)
            or isinstance(it, Tensor)
            and isinstance(it.meta, ArrayMeta)
            and not it.meta.is_static
        ):
            symbolic = True
        p = tracer.to_proxy(it)
        proxies.append(p)
        if p is None:
            counts.append(0)
        elif p is Ellipsis:
            counts.append(None)
        elif isinstance(p, (bool, np.bool_)):
            counts.append(0)  # a 0-d boolean known at trace time: N is 1 or 0
            if not p:
                forced.add(0)
        elif isinstance(p, (np.ndarray, list, tuple)):
            try:
                arr = np.asarray(p)
            except Exception:
                arr = None  # numpy raises when the index is run on proxies below
            if arr is None or arr.dtype != np.bool_:
                counts.append(1)
                if arr is not None and arr.ndim and arr.shape[-1] != 1:
                    forced.add(arr.shape[-1])
            else:
                counts.append(arr.ndim)  # a boolean index known at trace time: its N is known
                n = (1 if arr else 0) if arr.ndim == 0 else int(np.count_nonzero(arr))
                if n != 1:
                    forced.add(n)
        else:
            counts.append(1)  # an int, a slice
    known = sum(c for c in counts if c is not None)
    ellipsis = max(om.ndim - known, 0)
    # the masks' dimensions against the array's; the index run on proxies; the proxy array's
    # shape, with a dimension of size 1 added where each 0-d mask is (as numpy does)
    shape = [d if isinstance(d, int) else max(d.hint if d.hint is not None else 2, 1) for d in om.shape]
    index_parts: List[Any] = []
    dim = 0  # position in ``obj``'s dimensions
    added = 0  # dimensions added for the 0-d masks before it
    others = iter(proxies)
    for it, c in zip(items, counts):
        if not is_mask(it):
            index_parts.append(next(others))
            dim += ellipsis if c is None else c
            continue
        mm = it.meta
        if mm.ndim == 0:
            shape.insert(dim + added, 1)
            added += 1
            index_parts.append(_FANCY)
            continue
        for j, b in enumerate(mm.shape):
            if dim + j >= om.ndim:
                raise fr.brk("FH009", f"{what}: too many indices for an array of {om.ndim} dimensions")
            a = om.shape[dim + j]
            if isinstance(a, int) and isinstance(b, int) and a != b:
                raise fr.brk(
                    "FH009",
                    f"{what}: boolean index did not match indexed array along axis {dim + j}; "
                    f"size of axis is {a} but size of corresponding boolean axis is {b}",
                )
        index_parts.extend([_FANCY] * mm.ndim)
        dim += mm.ndim
    base = np.zeros(1, om.dtype)

    def run(n: int) -> Any:
        arr = np.lib.stride_tricks.as_strided(base, shape=tuple(shape), strides=(0,) * len(shape))
        index = tuple(np.zeros(n, np.intp) if p is _FANCY else p for p in index_parts)
        return run_on_proxies(operator.getitem, (arr, index), {})

    try:
        if forced:
            first = run(min(forced))
            dims: List[Any] = list(first.shape)
        else:
            first, second = run(_TRY_LENGTHS[0]), run(_TRY_LENGTHS[1])
            dims = [a if a == b else SymDim(f"s{tracer.next_sym()}") for a, b in zip(first.shape, second.shape)]
    except Exception as e:
        raise fr.brk("FH009", f"{what} raised {type(e).__name__}: {e}") from None
    if symbolic:
        dims = [SymDim(f"s{tracer.next_sym()}") if isinstance(d, int) else d for d in dims]
    return ArrayMeta(tuple(dims), first.dtype)


def mask_index_getitem(fr: Any, obj: Any, idx: Any) -> Any:
    """``obj[m, 0]``, ``obj[:, m]``, ``obj[m, idx]``, ``obj[m0]`` (a 0-d mask), ...: one
    getitem node with the index as written; the dimension the masks give is data-dependent
    (see ``_mask_index_meta``)."""
    import operator

    meta = _mask_index_meta(fr, obj, idx, "indexing with a boolean mask")
    tracer = fr.tracer
    node = tracer.graph.call(operator.getitem, (tracer.to_arg(obj), tracer.to_arg(idx)), stack=tracer.stack_location())
    node.meta["val"] = meta
    return Tensor(node, meta)


def mask_index_setitem(fr: Any, obj: Any, idx: Any, value: Any) -> None:
    """``obj[m, 0] = value`` (and the other indices of ``mask_index_getitem``), in place, in the
    graph. Checked here: the index (as for reading), that the value casts to the array's dtype
    and that its static dimensions broadcast to the indexed shape's (numpy checks the
    data-dependent one when the graph runs, raising as the plain code does)."""
    from ..graph import ScalarMeta, format_shape
    import operator

    what = "boolean-mask assignment"
    meta = _mask_index_meta(fr, obj, idx, what)
    tracer = fr.tracer
    dtype = obj.meta.dtype
    try:
        if isinstance(value, Tensor) and isinstance(value.meta, ArrayMeta):
            vshape: Tuple[Any, ...] = value.meta.shape
            run_on_proxies(operator.setitem, (np.zeros(1, dtype), Ellipsis, np.zeros(1, value.meta.dtype)), {})
        elif isinstance(value, Tensor) and isinstance(value.meta, ScalarMeta):
            vshape = ()
            run_on_proxies(operator.setitem, (np.zeros((), dtype), Ellipsis, value.meta.proxy()), {})
        else:
            sample = tracer.to_proxy(value)
            vshape = np.shape(sample)
            run_on_proxies(operator.setitem, (np.zeros(vshape, dtype), Ellipsis, sample), {})
    except Exception as e:
        raise fr.brk("FH009", f"{what} raised {type(e).__name__}: {e}") from None
    dims = list(vshape)
    while len(dims) > meta.ndim and dims[0] == 1:
        dims.pop(0)  # numpy drops leading dimensions of size 1 of the value
    mismatch = len(dims) > meta.ndim or any(
        isinstance(a, int) and isinstance(b, int) and a != 1 and a != b
        for a, b in zip(reversed(dims), reversed(meta.shape))
    )
    if mismatch:
        raise fr.brk(
            "FH009",
            f"{what}: shape mismatch: value array of shape {format_shape(tuple(vshape))} could "
            f"not be broadcast to indexing result of shape {format_shape(meta.shape)}",
        )
    tracer.graph.call(
        operator.setitem, (tracer.to_arg(obj), tracer.to_arg(idx), tracer.to_arg(value)), stack=tracer.stack_location()
    )


# ---------------------------------------------------------------- calls captured with conditions
def check_special_call(fr: Any, fn: Any, args: List[Any], kwargs: Dict[str, Any]) -> None:
    """Break on the forms of ``numpy.ndarray(...)`` and ``numpy.histogram(...)`` the graph
    cannot hold: an ndarray over another object's memory, bins chosen from the values."""
    from .values import Const

    if fn is np.ndarray:
        # ndarray(shape, dtype=float, buffer=None, offset=0, strides=None, order=None)
        names = ("shape", "dtype", "buffer", "offset", "strides", "order")
        given = dict(zip(names, args))
        given.update(kwargs)
        for name in ("buffer", "offset", "strides"):
            v = given.get(name)
            if v is not None and not (
                isinstance(v, Const) and v.value in (None, 0) and (name == "offset" or v.value is None)
            ):
                raise fr.brk(
                    "FH004",
                    f"numpy.ndarray with {name}= (an array over another object's memory); "
                    "only numpy.ndarray(shape, dtype, order=...) is captured",
                )
    elif fn is np.histogram:
        bins = args[1] if len(args) > 1 else kwargs.get("bins")
        if isinstance(bins, Const) and isinstance(bins.value, str):
            raise fr.brk(
                "FH011",
                f"numpy.histogram with bins={bins.value!r}: the number of bins depends on "
                "the values; pass a number of bins or the edges",
            )


# ---------------------------------------------------------------- ``x.shape = ...``
def reshaped(a: np.ndarray, done: None) -> np.ndarray:
    """``a`` after the ``setattr(a, "shape", ...)`` node ``done``: the same object, which the
    nodes that use it next read with its new shape (the node orders them after the store)."""
    return a


#: operations whose result is never the very array object they were given (a new array, a
#: new view, a number or None): an array only these have used may change its shape in place
#: without any other graph value seeing it. Others (``np.asarray``, ``x.real`` of a real
#: array, in-place operators, ``out=``, ``np.atleast_1d``, ...) may return the same object.
_FRESH_TARGETS = frozenset(
    {
        operator.add,
        operator.sub,
        operator.mul,
        operator.truediv,
        operator.floordiv,
        operator.mod,
        operator.pow,
        operator.matmul,
        operator.neg,
        operator.pos,
        operator.abs,
        operator.invert,
        operator.and_,
        operator.or_,
        operator.xor,
        operator.lshift,
        operator.rshift,
        operator.lt,
        operator.le,
        operator.eq,
        operator.ne,
        operator.gt,
        operator.ge,
        operator.getitem,
        operator.setitem,
        np.copy,
        np.reshape,
        np.transpose,
        np.concatenate,
        np.stack,
        np.where,
        np.dot,
        np.matmul,
        np.outer,
        np.zeros_like,
        np.ones_like,
        np.empty_like,
        np.full_like,
        np.sum,
        np.mean,
        np.cumsum,
        np.diff,
        np.sort,
        np.clip,
    }
)
_FRESH_METHODS = frozenset(
    {
        "copy",
        "reshape",
        "ravel",
        "flatten",
        "transpose",
        "swapaxes",
        "sum",
        "mean",
        "std",
        "var",
        "prod",
        "max",
        "min",
        "argmax",
        "argmin",
        "all",
        "any",
        "cumsum",
        "cumprod",
        "dot",
        "fill",
        "sort",
        "take",
        "diagonal",
        "trace",
        "clip",
        "round",
    }
)


def _keeps_identity_apart(user: Any) -> bool:
    """Is ``user``'s result certainly not the array object it took as an input?"""
    from ..graph import ScalarMeta
    from ..graph.ir import NodeKind

    val = user.meta.get("val")
    if isinstance(val, ScalarMeta) or isinstance(val, ArrayMeta) and not val.is_array:
        return True  # a number
    if "out" in user.kwargs:
        return False
    if user.kind is NodeKind.CALL:
        target = user.target
        if target is operator.getitem:
            # indexing an array makes a new object; an item of a tuple (a loop's results, a
            # named tuple) is an object other nodes may hold too
            base = user.args[0] if user.args else None
            meta = getattr(base, "meta", {}).get("val") if base is not None else None
            return isinstance(meta, ArrayMeta) and meta.is_array
        try:
            return isinstance(target, np.ufunc) or target in _FRESH_TARGETS
        except TypeError:  # pragma: no cover - unhashable targets
            return False
    if user.kind is NodeKind.CALL_METHOD:
        if user.target == "astype":
            return "copy" not in user.kwargs and len(user.args) <= 2
        return user.target in _FRESH_METHODS
    return user.kind is NodeKind.GETATTR and user.target in ("T", "mT")


def store_shape(fr: Any, obj: Any, value: Any) -> None:
    """``obj.shape = value`` on an array computed or read by the trace: recorded as an in-place
    reshape (``setattr(obj, "shape", value)`` in the graph) and ``obj`` -- every name, container item and alias holding the
    same symbolic value -- now stands for its result, with the new metadata. Breaks when
    another graph value may be the same array object (it would keep the old shape)."""
    from ..graph import SymDim

    tracer = fr.tracer
    meta = obj.meta
    if not meta.is_array:
        raise fr.brk("FH009", f"assignment to .shape of {obj.describe()} raises AttributeError")
    node = obj.node
    from ..graph.ir import NodeKind

    if node.kind is not NodeKind.PLACEHOLDER and node.target is not reshaped and not _keeps_identity_apart(node):
        raise fr.brk(
            "FH006",
            f"assignment to .shape of an array that {node.name} ({node.kind.value} "
            f"{getattr(node.target, '__name__', node.target)}) may have returned as the same "
            "object as its input (which would keep the old shape)",
        )
    for user in list(node.users):
        if not _keeps_identity_apart(user):
            raise fr.brk(
                "FH006",
                f"assignment to .shape of an array that {user.name} "
                f"({user.kind.value} {getattr(user.target, '__name__', user.target)}) may "
                "hold as the same object (it would keep the old shape)",
            )
    sized = [False]
    value = specialize_numbers(fr, tracer.as_plain(value, True), "the shape assigned", sized)
    if any(isinstance(v, Tensor) and isinstance(v.meta, ArrayMeta) for v in _leaves(value)):
        raise fr.brk("FH011", "assignment to .shape of a shape computed from array values")
    try:
        result = run_on_proxies(np.reshape, (meta.proxy(), tracer.to_proxy(value)), {})
    except Exception as e:
        raise fr.brk("FH009", f"assignment to .shape raised {type(e).__name__}: {e}") from None
    # the store itself is a ``setattr`` call in the generated code, so numpy's own errors and
    # warnings (its deprecation of shape assignment, on numpy 2.5) come from the user's line
    stack = tracer.stack_location()
    store = tracer.graph.call(setattr, (tracer.to_arg(obj), "shape", tracer.to_arg(value)), stack=stack)
    store.meta["impure"] = True  # the array changes even when nothing reads it again
    new = tracer.graph.call(reshaped, (tracer.to_arg(obj), store), stack=stack)
    new_meta = ArrayMeta(tuple(result.shape), meta.dtype, meta.pytype)
    if sized[0] or not meta.is_static:
        new_meta = ArrayMeta(tuple(SymDim(f"s{tracer.next_sym()}", d) for d in result.shape), meta.dtype, meta.pytype)
    new.meta["val"] = new_meta
    obj.node = new
    obj.meta = new_meta


def _leaves(v: Any) -> List[Any]:
    from .values import flatten

    return flatten([v])


# ---------------------------------------------------------------- slice bounds from array values
def slice_bound(fr: Any, v: Any) -> Any:
    """A slice bound that is an integer numpy scalar (or 0-d integer array) computed in the
    graph -- ``x[:idx[0]]`` -- as a graph int (``operator.index`` of it, as numpy takes
    the bound), so the slice stays in the graph with a length of symbolic size; anything
    else unchanged."""
    from ..graph import ScalarMeta

    if not (isinstance(v, Tensor) and isinstance(v.meta, ArrayMeta) and v.meta.ndim == 0 and v.meta.dtype.kind in "iu"):
        return v
    tracer = fr.tracer
    node = tracer.graph.call(operator.index, (tracer.to_arg(v),), stack=tracer.stack_location())
    meta = ScalarMeta(int, None)  # no value known: proxies use 1
    node.meta["val"] = meta
    return Tensor(node, meta)


def specialize_numbers(fr: Frame, v: V, why: str = "", sizes: Any = None) -> V:
    """``v`` with its graph numbers specialized (guarded on their value); with ``sizes`` (a
    one-element list, set to True when one is kept), graph ints stay in the graph."""
    v = fr.tracer.as_plain(v)  # a named tuple computed in the graph: the tuple of its items
    if isinstance(v, Tensor) and not v.is_array:
        if sizes is not None and fr.tracer.is_symint(v):
            sizes[0] = True
            return v
        return Const(fr.const_of(v, why))
    if isinstance(v, (TupleV, ListV)):
        return type(v)([specialize_numbers(fr, i, why, sizes) for i in v.items])
    if isinstance(v, DictV):
        return DictV({k: specialize_numbers(fr, i, why, sizes) for k, i in v.items.items()})
    return v
