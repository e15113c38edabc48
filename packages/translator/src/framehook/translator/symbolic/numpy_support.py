"""Which numpy functions and array methods the symbolic interpreter captures, and how
their results' metadata is found (by running them on one-element proxies)."""
from __future__ import annotations

import warnings
from typing import Any, Callable, Dict, FrozenSet, Optional

import numpy as np

__all__ = ["NUMPY_FUNCTIONS", "CREATION", "LINALG", "ARRAY_METHODS", "ARRAY_VALUE_ATTRS", "ARRAY_NODE_ATTRS",
           "UFUNC_METHODS", "is_numpy_callable", "numpy_name", "run_on_proxies", "SHAPE_QUERIES",
           "is_numpy_module", "SIZE_ARGS", "SIZE_METHOD_ARGS"]


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
identity tri indices"""
#: functions whose arguments may be arrays
GENERAL_NAMES = """array asarray asanyarray ascontiguousarray copy diag diagflat meshgrid
sum mean std var prod max min amax amin argmax argmin all any median cumsum cumprod nansum nanmean nanmax nanmin
nanstd nanvar average percentile quantile ptp
reshape transpose swapaxes moveaxis expand_dims squeeze ravel concatenate stack vstack hstack dstack column_stack
split array_split hsplit vsplit tile repeat broadcast_to broadcast_arrays flip fliplr flipud roll rot90 atleast_1d
atleast_2d atleast_3d pad diff gradient take take_along_axis sort argsort triu tril trace diagonal
outer inner dot vdot matmul einsum tensordot kron cross where clip round around nan_to_num real imag angle conj
sinc isclose interp convolve correlate cov corrcoef histogram_bin_edges
append insert delete searchsorted digitize polyval"""
#: answered from dtypes and shapes alone (folded at trace time)
META_ONLY_NAMES = "result_type promote_types can_cast min_scalar_type"
LINALG_NAMES = "norm inv solve det cholesky pinv matrix_power slogdet eigvalsh"

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
CREATION_ARRAY_ARGS = {np.full: ({1}, {"fill_value"}), np.full_like: ({0, 1}, {"a", "fill_value"}),
                       np.linspace: ({0, 1}, {"start", "stop"}), np.logspace: ({0, 1}, {"start", "stop"}),
                       np.zeros_like: ({0}, {"a"}), np.ones_like: ({0}, {"a"}), np.empty_like: ({0}, {"prototype"})}

#: arguments of non-ufunc functions that may be Python numbers computed at run time (values,
#: never sizes or axes); every other Python-number argument is specialized (guarded on its value)
VALUE_ARGS = {np.where: ({1, 2}, {"x", "y"}), np.clip: ({1, 2}, {"a_min", "a_max", "min", "max"}),
              np.full: ({1}, {"fill_value"}), np.full_like: ({1}, {"fill_value"}),
              np.linspace: ({0, 1}, {"start", "stop"}), np.logspace: ({0, 1}, {"start", "stop"}),
              np.nan_to_num: (set(), {"nan", "posinf", "neginf"}), np.isclose: ({1}, {"b"}),
              np.dot: ({0, 1}, set()), np.outer: ({0, 1}, set()), np.power: ({0, 1}, set())}

#: arguments that are sizes (shapes, lengths, counts): a graph int there (a dynamic
#: dimension read in the code) stays in the graph and makes the result's dimensions symbolic;
#: the result's ndim and dtype never depend on the value
SIZE_ARGS = {np.zeros: ({0}, {"shape"}), np.ones: ({0}, {"shape"}), np.empty: ({0}, {"shape"}),
             np.full: ({0}, {"shape"}), np.zeros_like: (set(), {"shape"}), np.ones_like: (set(), {"shape"}),
             np.empty_like: (set(), {"shape"}), np.full_like: (set(), {"shape"}),
             np.arange: ({0, 1, 2}, {"start", "stop", "step"}), np.linspace: ({2}, {"num"}),
             np.logspace: ({2}, {"num"}), np.eye: ({0, 1, 2}, {"N", "M", "k"}), np.identity: ({0}, {"n"}),
             np.tri: ({0, 1, 2}, {"N", "M", "k"}), np.indices: ({0}, {"dimensions"}),
             np.reshape: ({1}, {"shape", "newshape"}), np.broadcast_to: ({1}, {"shape"}),
             np.repeat: ({1}, {"repeats"}), np.tile: ({1}, {"reps"})}
#: array methods whose positional arguments are sizes
SIZE_METHOD_ARGS = {"reshape": None, "repeat": {0}}   # None: every positional argument

ARRAY_METHODS: FrozenSet[str] = frozenset("""sum mean std var prod max min argmax argmin all any cumsum cumprod
reshape transpose swapaxes squeeze ravel flatten astype copy clip round dot conj conjugate repeat take sort argsort
diagonal trace fill view""".split())
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


def run_on_proxies(fn: Callable[..., Any], args: Any, kwargs: Any, linalg: bool = False) -> Any:
    """Call ``fn`` on proxy values, quietly (no numpy warnings, no floating-point errors)."""
    if linalg:
        args = tuple(_identity_proxy(a) for a in args)
    with np.errstate(all="ignore"), warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return fn(*args, **kwargs)


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
            raise fr.brk("FH009", f"{what}: boolean index did not match the array along dimension {i}; "
                                  f"dimension is {a} but the boolean dimension is {b}")


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
    meta = ArrayMeta((SymDim(f"s{tracer.next_sym()}"),) + tuple(om.shape[mask.meta.ndim:]), om.dtype)
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
    target = np.zeros((1,) + tuple(1 for _ in om.shape[mask.meta.ndim:]), om.dtype)
    try:
        run_on_proxies(operator.setitem, (target, np.ones(1, bool), sample), {})
    except Exception as e:
        raise fr.brk("FH009", f"boolean-mask assignment raised {type(e).__name__}: {e}") from None
    tracer.graph.call(operator.setitem, (tracer.to_arg(obj), tracer.to_arg(mask), tracer.to_arg(value)),
                      stack=tracer.stack_location())
