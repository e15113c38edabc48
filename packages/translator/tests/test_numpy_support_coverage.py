"""Every numpy function and array method the translator lists as supported
(``symbolic/numpy_support.py``) is called by some test.

``CASES`` covers the ones no other test called: each is captured into one graph with no
break (``explain``), the operation is a node of that graph (or, for the functions answered
from metadata, folded at trace time), and the optimized function agrees exactly with plain
numpy (values, dtypes, shapes, exceptions, arguments) on several inputs, edge cases
included. ``test_every_supported_function_is_called_by_a_test`` compares the support tables
with the calls found in the test sources (this module's cases included), so a function
added to the tables without a test fails it.
"""

from __future__ import annotations

import ast
import copy
from pathlib import Path

import numpy as np
import pytest

import framehook.translator as ft
from framehook.translator.symbolic import numpy_support as nps
from symbolic_helpers import check_agrees

HERE = Path(__file__).resolve().parent
RNG = np.random.default_rng(37)
A = RNG.standard_normal((4, 6))
A32 = A.astype(np.float32)
I = RNG.integers(-5, 9, size=(4, 6))
V = RNG.standard_normal(7)
Z = RNG.standard_normal((3, 4)) + 1j * RNG.standard_normal((3, 4))
N = A.copy()
N[1, 2] = N[3, 0] = np.nan
ALLNAN = np.full((2, 3), np.nan)
E = np.zeros((0, 3))


pytestmark = pytest.mark.usefixtures("fresh_translator")


# ------------------------------------------------------------------ the functions


def amin_(x):
    return np.amin(x, axis=0), np.amin(x)


def min_(x):
    return np.min(x, axis=-1, keepdims=True) + np.min(x)


def angle_(z):
    return np.angle(z), np.angle(z, deg=True)


def around_(x):
    return np.around(x, 2), np.around(x * 1000, -2)


def array_split_(x):
    parts = np.array_split(x, 4)  # uneven: 7 -> 2, 2, 2, 1
    return [p * 2 for p in parts]


def array_split_axis_(x):
    a, b, c = np.array_split(x, [1, 3], axis=1)
    return a.sum() + b.sum() + c, len(np.array_split(x, 5, axis=0))


def asanyarray_(x):
    return np.asanyarray(x) + np.asanyarray([1.0, 2.0, 3.0, 4.0, 5.0, 6.0])


def ascontiguousarray_(x):
    return np.ascontiguousarray(x.T) * 1.5


def atleast_1d_(x, y):
    a = np.atleast_1d(x.sum())  # 0-d -> (1,)
    b, c = np.atleast_1d(y, x)
    return a, b + 1, c


def atleast_3d_(x, v):
    return np.atleast_3d(x), np.atleast_3d(v), np.atleast_3d(x.sum())


def broadcast_arrays_(x, v):
    a, b = np.broadcast_arrays(x[:, :1], v[None, :6])
    return a + b, a.shape, b.shape


def column_stack_(v, w):
    return np.column_stack((v, w)), np.column_stack((v[:, None], w * 2))


def conj_(z):
    return np.conj(z) * z


def copy_(x):
    y = np.copy(x)
    y[0] = 0  # the copy only: x is unchanged
    return y, x.sum()


def delete_(x):
    return np.delete(x, 1), np.delete(x, [0, 2], axis=1), np.delete(x, -1, axis=0)


def delete_slice_(x):
    return np.delete(x, slice(1, 4), axis=1)


def digitize_(x, bins):
    return np.digitize(x, bins), np.digitize(x, bins, right=True)


def dstack_(x, y):
    return np.dstack((x, y)), np.dstack((x[0], y[0]))


def histogram_bin_edges_(x):
    return np.histogram_bin_edges(x, bins=5), np.histogram_bin_edges(x, bins=3, range=(-2.0, 2.0))


def hsplit_(x):
    a, b = np.hsplit(x, 2)
    c, d, e = np.hsplit(x, [1, 4])
    return a - b, c, d, e


def vsplit_(x):
    a, b = np.vsplit(x, 2)
    return a * b, np.vsplit(x, [1])[1]


def imag_real_(z):
    return np.imag(z), np.real(z), np.real(z) + np.imag(z)


def insert_(x):
    return np.insert(x, 1, 5.0), np.insert(x, [0, 2], -1.0, axis=1), np.insert(x, x.shape[0], x[0], axis=0)


def svdvals_(a):
    return np.linalg.svdvals(a)


def logspace_(x):
    return x * np.logspace(0, 2, 6), np.logspace(1, 3, 4, base=2.0)


def min_scalar_type_(x):
    return x.astype(np.min_scalar_type(300)), x.astype(np.min_scalar_type(-3)), np.min_scalar_type(x)


def nan_reductions_(x):
    return (np.nanmax(x, axis=0), np.nanmin(x, axis=1), np.nansum(x), np.nanstd(x, axis=0), np.nanvar(x, ddof=1))


def polyval_(x):
    return np.polyval([2.0, -1.0, 0.5], x), np.polyval(np.array([1, 0, -3]), x)


def ptp_(x):
    return np.ptp(x, axis=0), np.ptp(x)


def quantile_(x):
    return np.quantile(x, 0.25), np.quantile(x, [0.1, 0.5, 0.9], axis=0), np.quantile(x, 0.5, method="nearest")


def ravel_(x):
    return np.ravel(x.T), np.ravel(x, order="F")


def take_(x):
    return np.take(x, [0, 2]), np.take(x, [1, -1], axis=1), np.take(x, [7, -9], axis=1, mode="clip")


def take_out_of_range_(x):
    return np.take(x, [0, 50])


def tri_(x):
    return x * np.tri(4, 6, k=1), np.tri(3, dtype=int)


def var_(x):
    return np.var(x), np.var(x, axis=0, ddof=1), np.var(x, axis=1, keepdims=True)


def conjugate_method_(z):
    return z.conjugate() + z


def take_method_(x):
    return x.take([1, 0], axis=0), x.take(3), x.take([0, 1, 2], mode="wrap")


def view_method_(x):
    return x.view() * 2, x.view(np.int64) if x.dtype == np.float64 else x.view(np.int32)


def reduceat_(x):
    return np.add.reduceat(x, [0, 2, 5], axis=1), np.maximum.reduceat(x, [0, 3]), np.add.reduceat(x[0], [4, 1])


def mT_(x):
    return x.mT @ x, x[None].mT


def view_resize_(x):
    # a view changing the item size rescales the last dimension
    return x.view(np.float32), x.view(np.uint8)[..., :4]


F = [2.0, 0.5]
BINS = np.array([-1.0, 0.0, 0.5, 2.0])
BINS_DOWN = BINS[::-1].copy()

# (the supported name, the function, its calls: the first is explained)
CASES = [
    ("numpy.amin", amin_, [(A,), (I,), (A32[:1],)]),
    ("numpy.min", min_, [(A,), (I[:, :1],)]),
    ("numpy.angle", angle_, [(Z,), (A,), (np.zeros(3, complex),)]),
    ("numpy.around", around_, [(A,), (A32,), (I,)]),
    ("numpy.array_split", array_split_, [(V,), (np.arange(3.0),), (A,)]),
    ("numpy.array_split", array_split_axis_, [(A,), (I,)]),
    ("numpy.asanyarray", asanyarray_, [(A,), (I,)]),
    ("numpy.ascontiguousarray", ascontiguousarray_, [(A,), (A[:, ::2],), (I,)]),
    ("numpy.atleast_1d", atleast_1d_, [(A, V), (I, np.float64(2.0))]),
    ("numpy.atleast_3d", atleast_3d_, [(A, V), (I, V[:1])]),
    ("numpy.broadcast_arrays", broadcast_arrays_, [(A, V), (I, np.arange(6))]),
    ("numpy.column_stack", column_stack_, [(V, V[::-1].copy()), (np.arange(3), np.ones(3, np.float32))]),
    ("numpy.conj", conj_, [(Z,), (A,)]),
    ("numpy.copy", copy_, [(A,), (I,), (A32[:, 0],)]),
    ("numpy.delete", delete_, [(A,), (I,)]),
    ("numpy.delete", delete_slice_, [(A,), (I[:, :3],)]),
    ("numpy.digitize", digitize_, [(A, BINS), (V, BINS_DOWN), (I, BINS)]),
    ("numpy.dstack", dstack_, [(A, A * 2), (I, A32)]),
    ("numpy.histogram_bin_edges", histogram_bin_edges_, [(V,), (np.full(5, 3.0),), (A32,)]),
    ("numpy.hsplit", hsplit_, [(A,), (I,)]),
    ("numpy.vsplit", vsplit_, [(A,), (I,)]),
    ("numpy.imag", imag_real_, [(Z,), (A,)]),
    ("numpy.real", imag_real_, [(Z,), (I,)]),
    ("numpy.insert", insert_, [(A,), (I,), (A32,)]),
    ("numpy.logspace", logspace_, [(A,), (A32,)]),
    ("numpy.min_scalar_type", min_scalar_type_, [(I,), (A,)]),
    ("numpy.nanmax", nan_reductions_, [(N,), (A,)]),
    ("numpy.nanmin", nan_reductions_, [(N,), (N.astype(np.float32),)]),
    ("numpy.nanstd", nan_reductions_, [(N,), (I,)]),
    ("numpy.nansum", nan_reductions_, [(N,)]),
    ("numpy.nanvar", nan_reductions_, [(N,)]),
    ("numpy.polyval", polyval_, [(V,), (A,), (I,)]),
    ("numpy.ptp", ptp_, [(A,), (I,), (np.array([[True, False]]),)]),
    ("numpy.quantile", quantile_, [(A,), (I,), (A32,)]),
    ("numpy.ravel", ravel_, [(A,), (I,), (Z,)]),
    ("numpy.take", take_, [(A,), (I,)]),
    ("numpy.tri", tri_, [(A,), (I[:, :6],)]),
    ("numpy.var", var_, [(A,), (I,), (A32,)]),
    ("conjugate", conjugate_method_, [(Z,), (A,)]),
    ("take", take_method_, [(A,), (I,), (V,)]),
    ("view", view_method_, [(A,), (A32,)]),
    ("view", view_resize_, [(A,), (A32,), (A[:, :2].copy(),)]),
    ("reduceat", reduceat_, [(A,), (I,), (A32,)]),
]
if hasattr(np.ndarray, "mT"):  # numpy >= 2.0
    CASES.append(("mT", mT_, [(A,), (I[:2],), (Z,)]))
if hasattr(np.linalg, "svdvals"):  # numpy >= 2.0
    CASES.append(("numpy.linalg.svdvals", svdvals_, [(A[:4, :4],), (A,), (np.stack([A[:3, :3], A[1:, 3:]]),)]))

FOLDED = set(nps.META_ONLY.values()) | set(nps.SHAPE_QUERIES.values())


def op_label(name):
    """How the graph counts the operation: ``.name`` for a method or attribute, the bare name
    for a ufunc method, numpy's own name for a function (``np.conj`` is the ufunc
    ``numpy.conjugate``)."""
    if name in nps.UFUNC_METHODS:
        return name
    if not name.startswith("numpy."):
        return f".{name}"
    obj = np
    for part in name.split(".")[1:]:
        obj = getattr(obj, part)
    return nps.numpy_name(obj)


@pytest.mark.parametrize("name,fn,calls", CASES, ids=[f"{c[0]}-{c[1].__name__}" for c in CASES])
def test_supported_function_is_captured_and_agrees(name, fn, calls):
    out = ft.explain(fn)(*copy.deepcopy(calls[0]))
    assert out.graph_count == 1 and out.graph_break_count == 0, str(out)
    ops = set(out.graphs[0].op_counts())
    if name in FOLDED:
        assert op_label(name) not in ops, ops  # answered from dtypes and shapes at trace time
    else:
        assert op_label(name) in ops, ops
    ft.reset()
    check_agrees(fn, calls[0], calls[0], *calls[1:], calls[0])


def test_view_of_a_non_contiguous_array_raises_as_numpy_does():
    # a view changing the item size needs a contiguous last axis: numpy's ValueError, from the graph
    check_agrees(view_resize_, (A,), (A[:, ::2],), (A,))


def test_empty_and_error_inputs_agree():
    check_agrees(amin_, (A,), (E,))  # zero-size reduction without identity: ValueError
    check_agrees(insert_, (A,), (E,))
    check_agrees(take_, (A,), (np.zeros((1, 2)),))  # out of range along an axis: IndexError
    check_agrees(take_out_of_range_, (np.arange(60.0),), (A,))  # flat index 50 of 24 elements
    check_agrees(digitize_, (A, BINS), (E, BINS))
    check_agrees(quantile_, (A,), (E,))


def test_all_nan_slices_agree_and_warn_as_numpy_does():
    import warnings

    def run(fn):
        with warnings.catch_warnings(record=True) as seen:
            warnings.simplefilter("always")
            result = fn(ALLNAN.copy())
        return result, sorted({(w.category, str(w.message)) for w in seen})

    opt = ft.optimize("eager")(nan_reductions_)
    run(opt)  # compile
    (want, want_warnings), (got, got_warnings) = run(nan_reductions_), run(opt)
    assert want_warnings and got_warnings == want_warnings
    from symbolic_helpers import assert_same

    assert_same(got, want)


# ------------------------------------------------------------------ supported vs exercised


def supported_names():
    """The support tables' functions (as ``numpy.name``), array methods, ufunc methods and
    array attributes (bare names)."""
    return (
        set(nps.NUMPY_FUNCTIONS.values())
        | set(nps.ARRAY_METHODS)
        | set(nps.UFUNC_METHODS)
        | {a for a in nps.ARRAY_NODE_ATTRS | nps.ARRAY_VALUE_ATTRS if hasattr(np.ndarray, a)}
    )


def called_in_tests():
    """Names used in the test sources: ``np.<f>``, ``np.linalg.<f>`` (``numpy.`` too) and the
    name of every attribute read or method called (``x.view(...)``, ``np.add.reduceat``)."""
    found = set()
    for path in HERE.glob("*.py"):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if not isinstance(node, ast.Attribute):
                continue
            found.add(node.attr)
            owner = node.value
            if isinstance(owner, ast.Name) and owner.id in ("np", "numpy"):
                found.add(f"numpy.{node.attr}")
            elif (
                isinstance(owner, ast.Attribute)
                and isinstance(owner.value, ast.Name)
                and owner.value.id in ("np", "numpy")
            ):
                found.add(f"numpy.{owner.attr}.{node.attr}")
    return found


def test_every_supported_function_is_called_by_a_test():
    missing = sorted(supported_names() - called_in_tests())
    assert not missing, f"supported but called by no test (add a case to CASES): {missing}"


def test_the_cases_here_name_supported_functions():
    names = {name for name, _, _ in CASES}
    assert names <= supported_names(), sorted(names - supported_names())
    # the functions no other test called when this module was written are all here
    assert len(names) >= 40
