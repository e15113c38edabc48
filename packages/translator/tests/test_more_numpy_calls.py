"""Calls that used to break graphs: ``np.ndarray(shape, dtype)`` as a constructor and
``np.histogram`` (FH004), ``x.shape = ...`` (FH006, now an in-place reshape in the graph)
and a slice bound read from an array element (FH012, now a graph int). Each function agrees
exactly with the plain one (values, dtypes, shapes, exceptions, arguments after the call) on
the first call, a cache hit and a recompilation, and ``explain`` shows what is captured."""

from __future__ import annotations

import numpy as np
import pytest

import framehook.translator as ft
from framehook.translator.symbolic import add_observer, remove_observer
from symbolic_helpers import check_agrees, entries

# numpy 2.5 deprecates ``x.shape = ...``; test_shape_assignment_warns_as_plain checks that the
# warning is the same as plain, so the other tests leave it out of the summary.
pytestmark = [
    pytest.mark.usefixtures("fresh_translator"),
    pytest.mark.filterwarnings("ignore:Setting the shape on a NumPy array:DeprecationWarning"),
]

RNG = np.random.default_rng(20)
X = RNG.standard_normal(6)
M = RNG.standard_normal((4, 6))


def captured(fn, *args, graphs=1):
    out = ft.explain(fn)(*args)
    assert out.graph_count == graphs and out.graph_break_count == 0, str(out)
    return out


def breaks_of(fn, *args):
    """The break codes of the translations of one optimized call (which may raise)."""
    reports = []
    add_observer(reports.append)
    try:
        ft.optimize("eager")(fn)(*args)
    except Exception:  # the plain function raises too (compared by check_agrees)
        pass
    finally:
        remove_observer(reports.append)
    return [r.graph_break.code for r in reports if r.graph_break is not None]


def ops(out):
    return [
        str(n.target) if isinstance(n.target, str) else getattr(n.target, "__name__", "")
        for g in out.graphs
        for n in g.nodes
    ]


# ----------------------------------------------------------------- np.ndarray(...)
def ndarray_filled(x):
    a = np.ndarray((2, x.shape[0]), dtype=np.float32)
    a[0] = x
    a[1] = x * 2
    return a + 1


def ndarray_like(x):
    a = np.ndarray(x.shape, x.dtype, order="F")
    a[...] = x
    return a, a.dtype


def ndarray_positional_dtype(x):
    a = np.ndarray(3, np.int16)
    a[:] = 7
    return a * x[:3].astype(np.int16)


def test_ndarray_constructor_is_captured():
    check_agrees(ndarray_filled, (X,), (X,), (X[:4],), (X.astype(np.float32),))
    out = captured(ndarray_filled, X)
    assert "ndarray" in ops(out), str(out)
    check_agrees(ndarray_like, (M,), (M,), (M.astype(np.int32),))
    captured(ndarray_like, M)
    check_agrees(ndarray_positional_dtype, (X,), (X * 3,))
    captured(ndarray_positional_dtype, X)


def test_ndarray_order_is_kept():
    def f(x):
        a = np.ndarray(x.shape, x.dtype, order="F")
        a[...] = x
        return a

    got = ft.optimize("eager")(f)(M)
    assert got.flags.f_contiguous and not got.flags.c_contiguous
    np.testing.assert_array_equal(got, M)


def ndarray_over_buffer(x):
    a = np.ndarray((2,), dtype=x.dtype, buffer=x)
    return a * 2


def test_ndarray_over_a_buffer_breaks_and_agrees():
    check_agrees(ndarray_over_buffer, (X.copy(),), (X.copy(),))
    out = ft.explain(ndarray_over_buffer)(X.copy())
    assert [b.code for b in out.break_reasons] == ["FH004"] and "buffer=" in out.break_reasons[0].reason, str(out)


def ndarray_bad_shape(x):
    return np.ndarray((-1, 2), dtype=x.dtype)


def test_ndarray_errors_agree():
    check_agrees(ndarray_bad_shape, (X,), (X,))


# ----------------------------------------------------------------- np.histogram
def hist_bins(x):
    h, e = np.histogram(x, bins=4)
    return h, e, h.sum()


def hist_edges_range(x, lo, hi):
    h, e = np.histogram(x, np.linspace(lo, hi, 5), density=True)
    h2, e2 = np.histogram(x * 2, 3, (lo, hi), weights=np.abs(x))
    return h, e, h2, e2


def hist_auto(x):
    return np.histogram(x, bins="auto")


def test_histogram_is_captured():
    check_agrees(hist_bins, (X,), (X,), (M,), (X.astype(np.float32),), (np.arange(5),))
    out = captured(hist_bins, X)
    assert "histogram" in ops(out)
    check_agrees(hist_edges_range, (X, -1.0, 1.0), (X, -1.0, 1.0), (X, -2.0, 3.0), (M, 0, 1))
    captured(hist_edges_range, X, -1.0, 1.0)


def test_histogram_errors_agree():
    nan = X.copy()
    nan[2] = np.nan
    check_agrees(hist_bins, (X,), (nan,))  # "autodetected range of [nan, nan] is not finite", at run time
    check_agrees(hist_edges_range, (X, 1.0, -1.0))


def test_histogram_with_bins_from_values_breaks():
    check_agrees(hist_auto, (X,), (X,), (M,))
    out = ft.explain(hist_auto)(X)
    assert [b.code for b in out.break_reasons] == ["FH011"] and "'auto'" in out.break_reasons[0].reason, str(out)


# ----------------------------------------------------------------- x.shape = ...
def shape_of_result(x):
    y = x * 2
    y.shape = (2, -1)
    return y.sum(axis=0), y.shape, len(y)


def shape_of_argument(x):
    x.shape = (x.size,)
    return x + 1


def shape_seen_by_aliases(x):
    y = x + 1
    z = y
    box = [y]
    y.shape = (3, 2)
    return z.T, box[0].shape, box


def shape_after_uses(x):
    y = x.copy()
    s = y.sum()
    t = y[1:] * 2
    y.shape = (3, 2)
    return y, s, t


def shape_not_in_place(x):
    y = x.T * 1.0  # F-ordered: the in-place reshape is impossible
    y.shape = (y.size,)
    return y


def shape_wrong_size(x):
    y = x * 1
    y.shape = (4,)
    return y


def shape_of_same_object(x):
    y = x * 2
    z = np.asarray(y)  # the same object as y
    y.shape = (2, 3)
    return z.shape, z


def test_shape_assignment_is_an_in_place_reshape():
    check_agrees(shape_of_result, (X,), (X,), (np.arange(8.0),), (X.astype(np.float32),))
    out = captured(shape_of_result, X)
    assert "setattr" in ops(out), str(out)
    check_agrees(shape_of_argument, (M,), (M,), (M[:2].copy(),))  # the argument's shape after the call too
    captured(shape_of_argument, M.copy())
    check_agrees(shape_seen_by_aliases, (X,), (X,))
    captured(shape_seen_by_aliases, X)
    check_agrees(shape_after_uses, (X,), (X,))
    captured(shape_after_uses, X)


def test_shape_assignment_errors_are_numpys():
    # AttributeError("Incompatible shape for in-place modification ...") from the graph
    check_agrees(shape_not_in_place, (M,), (M,))
    with pytest.raises(AttributeError, match="in-place"):  # raised by the graph: no break
        ft.optimize("eager", nopython=True)(shape_not_in_place)(M)
    check_agrees(shape_wrong_size, (X,), (X,))
    ft.reset()
    assert breaks_of(shape_wrong_size, X) == ["FH009"]  # known at trace time: runs in Python and raises


def test_shape_assignment_of_an_aliased_array_breaks():
    check_agrees(shape_of_same_object, (X,), (X,))
    out = ft.explain(shape_of_same_object)(X)
    assert [b.code for b in out.break_reasons] == ["FH006"], str(out)
    assert "same object" in out.break_reasons[0].reason


def test_shape_assignment_with_dynamic_dimensions():
    opt = check_agrees(shape_of_result, (X,), (np.arange(8.0),), (np.arange(10.0),), (np.arange(12.0),))
    assert entries(shape_of_result) == 2  # the second length made the dimension dynamic
    del opt


# ----------------------------------------------------------------- slice bounds from array elements
def bound_from_element(x, idx):
    head = x[: idx[0]]
    return head.sum(), head * 2, x[idx[1] : idx[0]]


def bound_stored(x, idx):
    out = x.copy()
    out[idx[0] :] = 0
    return out


def bound_of_wrong_kind(x, idx):
    return x[: idx[0]]


def test_slice_bound_from_an_array_element_stays_in_the_graph():
    idx = np.array([4, 1])
    opt = check_agrees(bound_from_element, (X, idx), (X, idx))
    # other values of the bounds run the same graph: no recompilation
    for other in (np.array([2, 0]), np.array([6, 3]), np.array([-1, -4]), np.array([9, 7])):
        check_agrees(bound_from_element, (X, other), optimized=opt)
    assert entries(bound_from_element) == 1
    check_agrees(bound_from_element, (X, idx.astype(np.uint8)), optimized=opt)  # recompiles: other dtype
    assert entries(bound_from_element) == 2
    captured(bound_from_element, X, idx)
    check_agrees(bound_stored, (X, idx), (X, np.array([0, 0])), (M, np.array([2, 1])))
    captured(bound_stored, X, idx)


def test_slice_bound_of_other_kinds_agree():
    # a float element raises TypeError, a 1-d array element too: as in plain Python
    check_agrees(bound_of_wrong_kind, (X, np.array([2.0])), (X, np.array([[2]])), (X, np.array([True])))
    ft.reset()
    assert breaks_of(bound_of_wrong_kind, X, np.array([2.0])) == ["FH012"]  # not a bound the graph takes


def test_numexpr_backend_agrees():
    pytest.importorskip("numexpr")
    idx = np.array([4, 1])
    for fn, args in (
        (bound_from_element, (X, idx)),
        (shape_of_result, (X,)),
        (hist_bins, (X,)),
        (ndarray_filled, (X,)),
    ):
        ft.reset()
        opt = ft.optimize("numexpr")(fn)
        check_agrees(fn, args, args, optimized=opt)


def test_shape_assignment_warns_as_plain():
    """numpy 2.5 deprecates shape assignment: the warning comes from the user's line, on the
    first call and on a cache hit, as in plain Python (no warning at all on older numpy)."""
    import warnings

    def seen(fn):
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            fn(X)
        return [(w.category, str(w.message), w.filename, w.lineno) for w in caught]

    want = seen(shape_of_result)
    opt = ft.optimize("eager")(shape_of_result)
    assert seen(opt) == want
    assert seen(opt) == want


def shape_of_a_returned_input(x):
    y = x * 2
    z = y.real  # for a real array, y itself
    z.shape = (2, 3)
    return y.shape, y, z


def test_shape_assignment_of_an_array_an_operation_returned_as_is_breaks():
    check_agrees(shape_of_a_returned_input, (X,), (X,))
    ft.reset()
    assert breaks_of(shape_of_a_returned_input, X) == ["FH006"]
