"""The numba backend's wider loop lowering (``fusion``, ``fusion_reduce``, ``fusion_matvec``):
float32, int64 and int32 trees and stores, reductions along any axis of 3-D arrays and
``argmax``/``argmin``, mixed-rank broadcasting and matrix-vector products give numpy's
values, dtypes and shapes.

Each property test lowers one captured graph, checks it was lowered to loops (not left to
numba's array expressions), compiles the kernel once per dtype and layout, and runs it on
hypothesis-drawn arrays (empty, one element, negative, NaN, transposed). A kernel that
raises is fine only where numpy raises or warns: the backend then redoes the call eagerly.
"""

from __future__ import annotations

import inspect
import math
import operator
import sys
import warnings
from typing import Any, Callable, Dict, List, Tuple

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

numba = pytest.importorskip("numba", reason="numba is not installed for this interpreter")
from framehook.translator.backends import numba as bnb  # noqa: E402
from framehook.translator.backends.numba import fusion  # noqa: E402
from framehook.translator.graph import NodeKind  # noqa: E402
from test_backend_numba import assert_as_plain, captured_graph, numba_cache  # noqa: E402,F401 - the cache fixture

DTYPES = [np.float64, np.float32, np.int64, np.int32]
PROPERTY = settings(max_examples=40, deadline=None, suppress_health_check=list(HealthCheck))


def _kernel(fn: Callable[..., Any], args: Tuple[Any, ...]) -> Tuple[Any, List[Any]]:
    """The numba kernel ``lower`` writes for ``fn``'s graph, and what ``fusion`` lowered."""
    graph = captured_graph(fn, *args)
    fused = fusion.rewrite(graph)[1]
    lowered = bnb.lower(graph, args)
    assert lowered.reason is None, lowered.reason
    scope: Dict[str, Any] = dict(lowered.scope)
    exec(compile(lowered.source, "<fused>", "exec"), scope)  # noqa: S102 - the generated kernel
    kernel = numba.njit(boundscheck=True)(scope["forward"])
    # the graph takes its inputs in the order it first reads them
    params = list(inspect.signature(fn).parameters)
    order = [params.index(n.target) for n in graph.nodes if n.kind is NodeKind.PLACEHOLDER]
    return (lambda *args: kernel(*[args[k] for k in order])), fused


def _elements(dtype: Any) -> st.SearchStrategy:
    if np.dtype(dtype).kind == "i":
        info = np.iinfo(dtype)  # the whole range: overflow wraps as numpy's does
        return st.integers(int(info.min), int(info.max))
    return st.floats(-1e3, 1e3, width=np.dtype(dtype).itemsize * 8) | st.just(float("nan"))


def _array(dtype: Any, shape: Tuple[int, ...]) -> st.SearchStrategy:
    return hnp.arrays(dtype, shape, elements=_elements(dtype))


def _plain(fn: Callable[..., Any], args: Tuple[Any, ...]) -> Tuple[str, Any]:
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        try:
            return "ok", fn(*args)
        except (ArithmeticError, ValueError, IndexError, RuntimeWarning) as e:
            return "raise", e


def _agree(got: Any, want: Any, sums: bool, spread: float = 0.0, terms: Any = 0.0) -> None:
    """``spread``: how far the inputs' rounding may move a sum, in units of the result's
    epsilon (its terms' count times the sum of their magnitudes); ``terms``: per element, the
    magnitudes an elementwise result adds up, a rounding of which may survive a cancellation."""
    got = got if isinstance(got, tuple) else (got,)
    want = want if isinstance(want, tuple) else (want,)
    assert len(got) == len(want)
    for g, w in zip(got, want):
        # a scalar result: numba gives a Python number where numpy gives a numpy scalar (the
        # backend's call path gives numpy's type back: callpath.restorer)
        if np.ndim(w) == 0 and not isinstance(w, np.ndarray):
            g, w = np.asarray(g, dtype=np.asarray(w).dtype if type(g) in (int, float) else None), np.asarray(w)
        assert isinstance(g, np.ndarray) and g.dtype == w.dtype and g.shape == w.shape, (g, w)
        if w.dtype.kind == "i" or not sums:
            # integers wrap identically; elementwise floats, max/min, arg* are exact up to
            # the last bit of a libm call
            tol = 0.0 if w.dtype.kind == "i" else 4 * np.finfo(w.dtype).eps
            if np.ndim(terms) == 0:
                np.testing.assert_allclose(g, w, rtol=tol, atol=tol * terms, equal_nan=True)
            else:
                close = np.isclose(g, w, rtol=tol, atol=tol * terms, equal_nan=True)
                assert close.all(), (g[~close], w[~close], terms[~close])
        else:  # sums added in another order: within the rounding of the terms' magnitudes
            # (int64 terms near 2**63 lose a thousand in float64 before they are even added)
            atol = 1e-2 + np.finfo(w.dtype).eps * spread if w.dtype.kind == "f" else 1e-2
            np.testing.assert_allclose(g, w, rtol=1e-4, atol=atol, equal_nan=True)


def _check(kernel: Any, fn: Callable[..., Any], args: Tuple[Any, ...], sums: bool = False, terms: Any = None) -> None:
    """``terms(*args)``: per element, the magnitudes ``fn`` adds (see ``_agree``)."""
    status, want = _plain(fn, args)
    before = [a.copy() if isinstance(a, np.ndarray) else a for a in args]
    try:
        got = kernel(*args)
    except (ValueError, ZeroDivisionError):
        assert status == "raise", f"the kernel raised where numpy gives {want!r}"
        return
    if status == "raise":  # numpy only warned (e.g. an overflow): the values still agree
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            want = fn(*[b.copy() if isinstance(b, np.ndarray) else b for b in before])
    spread = 0.0
    for a in before:
        if isinstance(a, np.ndarray) and a.dtype.kind in "iuf" and a.size:
            with np.errstate(all="ignore"):
                magnitude = float(np.abs(a.astype(np.float64)).sum()) * a.size
            spread += magnitude if np.isfinite(magnitude) else 0.0
    if terms is not None:
        with np.errstate(all="ignore"):
            terms = np.nan_to_num(terms(*before), nan=0.0, posinf=0.0)
    _agree(got, want, sums, spread, 0.0 if terms is None else terms)


# ---------------------------------------------------------------- elementwise trees, stores


def _tree(a, b):
    return (a * 3 + b) * (a - b) - np.maximum(a, -b)


def _ftree(a, b):
    return np.sqrt(np.abs(a) + 1.0) * 0.5 + np.exp(b / 1000.0) - a**2


def _ftree_terms(a, b):
    # a float32 result near 0.09 from terms near 1 keeps their last bit's rounding, which a
    # fused loop may round otherwise (found by hypothesis: a=0.9921875, b=-1000)
    a, b = a.astype(np.float64), b.astype(np.float64)
    return np.sqrt(np.abs(a) + 1.0) * 0.5 + np.exp(b / 1000.0) + a**2


def _store(a, b):
    b[1:-1, 1:] = a[1:-1, :-1] * 2 + a[:-2, 1:] - b[1:-1, 1:]
    return b


@pytest.mark.parametrize("dtype", DTYPES)
def test_trees_and_stores_of_every_dtype_are_loops_and_agree(dtype):
    ex = (np.ones((3, 4), dtype), np.ones((3, 4), dtype))
    tree, fused = _kernel(_tree, ex)
    assert [type(f) for f in fused] == [fusion.FusedStore] and fused[0].dtype == np.dtype(dtype)
    store, fused = _kernel(_store, ex)
    assert [type(f) for f in fused] == [fusion.FusedStore] and fused[0].dst is not None
    shapes = st.tuples(st.integers(0, 5), st.integers(0, 5))

    @PROPERTY
    @given(data=st.data(), shape=shapes, flip=st.booleans())
    def prop(data, shape, flip):
        a, b = (data.draw(_array(dtype, shape)) for _ in range(2))
        if flip:  # transposed (non-contiguous) inputs
            a, b = np.ascontiguousarray(a.T).T, np.ascontiguousarray(b.T).T
        _check(tree, _tree, (a, b))
        _check(store, _store, (a, b.copy()))

    prop()


def _whole(a, b):
    return (a * b + 1).sum(), np.max(a - b), (a * 2).mean(), np.min(b * b), a.sum()


@pytest.mark.parametrize("dtype", [np.float64, np.int64])
def test_whole_1d_reductions_of_trees_are_one_loop_and_agree(dtype):
    ex = (np.ones(5, dtype), np.ones(5, dtype))
    kernel, fused = _kernel(_whole, ex)
    reduces = [f for f in fused if isinstance(f, fusion.FusedReduce)]
    assert len(reduces) == 5 and all(f.scalar for f in reduces)
    assert sum(f.tree is not None for f in reduces) == 4  # a.sum() reads a itself

    @PROPERTY
    @given(data=st.data(), n=st.integers(0, 11))
    def prop(data, n):
        a, b = (data.draw(_array(dtype, (n,))) for _ in range(2))
        _check(kernel, _whole, (a, b), sums=True)

    prop()


@pytest.mark.parametrize("dtype", DTYPES)
def test_whole_1d_reductions_run_as_plain(dtype):
    # float32 and int32 trees are numba's own in 1-D (fusion.NARROW_1D): the type check
    # sends a graph numba would widen to eager
    a = np.arange(9).astype(dtype)
    assert_as_plain(_whole, (a, np.ones(9, dtype)), (a * 3, a[::-1].copy()), (a[:0], a[:0]))


def _powers(a, b):
    # every term non-negative: a sum with cancellation would magnify each term's last-ulp
    # difference, which is not what is compared here
    return np.abs(a) ** 5 + (b * 0.5) ** 6 + a**8 * 1e-3 + np.abs(b) ** 7


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_float_powers_up_to_8_are_multiplied_out_and_agree_with_numpys_pow(dtype):
    ex = (np.ones((3, 4), dtype), np.ones((3, 4), dtype))
    kernel, fused = _kernel(_powers, ex)
    assert [type(f) for f in fused] == [fusion.FusedStore] and len(fused[0].nodes) >= 7

    @PROPERTY
    @given(data=st.data(), shape=st.tuples(st.integers(0, 4), st.integers(0, 5)))
    def prop(data, shape):
        elements = st.floats(-30, 30, width=np.dtype(dtype).itemsize * 8) | st.just(float("nan"))
        a, b = (data.draw(hnp.arrays(dtype, shape, elements=elements)) for _ in range(2))
        _check(kernel, _powers, (a, b))

    prop()


def _clipped(a, b):
    return np.clip(a * 2 - b, -3, 5) + np.clip(b, a, 40) * 3


@pytest.mark.parametrize("dtype", DTYPES)
def test_clip_in_a_tree_is_fused_and_agrees(dtype):
    ex = (np.ones((3, 4), dtype), np.ones((3, 4), dtype))
    kernel, fused = _kernel(_clipped, ex)
    assert [type(f) for f in fused] == [fusion.FusedStore] and len(fused[0].nodes) == 5

    @PROPERTY
    @given(data=st.data(), shape=st.tuples(st.integers(0, 5), st.integers(0, 5)))
    def prop(data, shape):
        _check(kernel, _clipped, (data.draw(_array(dtype, shape)), data.draw(_array(dtype, shape))))

    prop()


def _chain(x, w):
    out = np.zeros(x.shape[0] - 2, x.dtype)
    out = out + w[0] * x[:-2]
    out = np.maximum(out + w[1] * x[1:-1], 0)
    t = x[2:] * w[2]
    return out - t, t


def _kept(a, b):
    t = a * 2.0
    return t + b, t  # t is returned too: it must not be overwritten


@pytest.mark.parametrize("dtype", [np.float64, np.int64])
def test_a_tree_writes_into_a_new_array_it_reads_that_dies_there(dtype):
    x, w = np.arange(10).astype(dtype), np.array([2, -1, 3]).astype(dtype)
    kernel, fused = _kernel(_chain, (x, w))
    reused = [f for f in fused if isinstance(f, fusion.FusedStore) and f.gives_dst]
    # the running sum writes into the zeros it starts from; t, returned too, keeps its own
    assert len(reused) == 1 and reused[0].dst.target is np.zeros, fused
    for k in (1, 3, -2):  # the kernel is compiled for this length (the zeros' size is traced)
        _check(kernel, _chain, (x * k - 7, w * k))
    _, fused = _kernel(_kept, (np.ones(4), np.ones(4)))
    assert fused and not any(f.gives_dst for f in fused)
    _, fused = _kernel(lambda a, b: (a + 1.0) * b, (np.ones(4), np.ones(4)))
    assert fused and not any(f.gives_dst for f in fused)  # an input is never written
    notes = assert_as_plain(_chain, (x, w), (np.arange(17).astype(dtype), w), (np.arange(2).astype(dtype), w))
    assert any(n.status == "compiled" for n in notes), [str(n) for n in notes]


def _in_place(a, b):
    a += b * 3 - a
    a -= b * b
    a *= b + 1
    return a


@pytest.mark.parametrize("dtype", DTYPES)
def test_in_place_operators_on_arrays_are_stores_and_agree(dtype):
    ex = (np.ones((3, 4), dtype), np.ones((3, 4), dtype))
    kernel, fused = _kernel(_in_place, ex)
    assert [type(f) for f in fused] == [fusion.FusedStore] * 3
    assert all(f.gives_dst and f.dst is not None for f in fused)

    @PROPERTY
    @given(data=st.data(), shape=st.tuples(st.integers(0, 5), st.integers(0, 5)), flip=st.booleans())
    def prop(data, shape, flip):
        a, b = (data.draw(_array(dtype, shape)) for _ in range(2))
        if flip:
            a, b = np.ascontiguousarray(a.T).T, np.ascontiguousarray(b.T).T
        status, want = _plain(_in_place, (a.copy(), b))
        got = a.copy()
        try:
            out = kernel(got, b)
        except (ValueError, ZeroDivisionError):
            assert status == "raise"
            return
        assert out is got or np.shares_memory(out, got)  # the kernel wrote the array it was given
        if status == "raise":
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                want = _in_place(a.copy(), b)
        _agree(got, want, False)

    prop()


def _accumulate(x, h):
    n = x.shape[0] - h.shape[0] + 1
    y = np.zeros(n, dtype=x.dtype)
    for k in range(h.shape[0]):
        y += h[k] * x[k : k + n]
    return y


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_in_place_stores_run_as_plain_with_aliases_and_bad_taps(dtype):
    x = np.linspace(0.0, 1.0, 50).astype(dtype)
    # compiled, then the same array as both operands (numpy reads the operand first)
    notes = assert_as_plain(_in_place, (x.copy(), x[::-1].copy()), (x.copy(), x.copy()))
    assert any(n.status == "compiled" for n in notes), [str(n) for n in notes]
    shared = x.copy()
    assert_as_plain(_in_place, (x.copy(), x[::-1].copy()), (shared, shared))
    notes = assert_as_plain(_accumulate, (x, np.ones(4, dtype)), (x, np.arange(4).astype(dtype)))
    assert any(n.status == "compiled" for n in notes), [str(n) for n in notes]


def _to(x, dt):
    return x.astype(dt) * 2


@pytest.mark.parametrize(
    "dt, takes",
    [(np.dtype("float32"), True), (np.dtype("int16"), True), (np.dtype("float16"), False), (np.dtype(">f8"), False)],
)
def test_dtype_objects_are_globals_numba_takes_when_it_has_the_dtype(dt, takes):
    x = np.arange(5.0)
    lowered = bnb.lower(captured_graph(lambda x: _to(x, dt), x), (x,))
    assert (lowered.reason is None) == takes, lowered.reason
    if not takes:
        assert f"dtype({str(dt)!r})" in lowered.reason or repr(dt) in lowered.reason, lowered.reason


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="huge pages are asked for on Linux only")
def test_large_new_arrays_ask_for_huge_pages_and_agree():
    a = np.arange(1024 * 640, dtype=np.float64).reshape(1024, 640)  # 5 MiB: over numpy's 4 MiB
    b = a[::-1].copy()
    lowered = bnb.lower(captured_graph(_tree, a, b), (a, b))
    assert "__fh_madvise" in lowered.source
    kernel, _ = _kernel(_tree, (a, b))
    _check(kernel, _tree, (a, b))
    small = np.ones((3, 4))
    _check(kernel, _tree, (small, small * 2))  # under the threshold: no advice, same values


def test_new_arrays_are_plain_empties_elsewhere_than_linux(monkeypatch):
    from framehook.translator.backends.numba import allocation
    from framehook.translator.graph import pysource

    monkeypatch.setattr(sys, "platform", "darwin")
    names = pysource._Names()
    assert allocation.new_array(names, "out", "(3,)", "f8") == ["out = __numpy_empty((3,), f8)"]
    monkeypatch.setattr(sys, "platform", "linux")
    lines = allocation.new_array(names, "out", "(3,)", "f8")
    assert lines[0] == "out = __numpy_empty((3,), f8)" and "madvise" in lines[2]


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_float_math_keeps_the_float_dtype(dtype):
    ex = (np.ones((3, 4), dtype), np.ones((3, 4), dtype))
    kernel, fused = _kernel(_ftree, ex)
    # exp is numpy's loop (numpy_ufuncs): the trees before and after it are loops
    assert [type(f).__name__ for f in fused] == ["FusedStore", "NumpyUfunc", "FusedStore"]
    assert all(f.dtype == np.dtype(dtype) for f in fused)

    @PROPERTY
    @given(data=st.data(), shape=st.tuples(st.integers(0, 4), st.integers(1, 5)))
    def prop(data, shape):
        _check(kernel, _ftree, (data.draw(_array(dtype, shape)), data.draw(_array(dtype, shape))), terms=_ftree_terms)

    prop()


def _pairs(x, y, m, v):
    d = np.sqrt((x[:, None] - y[None, :]) ** 2 + 1.0)
    return d, m - v, m * x[:, None]


def test_mixed_ranks_broadcast_as_numpy():
    rng = np.random.default_rng(5)
    ex = (rng.random(3), rng.random(4), rng.random((3, 4)), rng.random(4))
    kernel, fused = _kernel(_pairs, ex)
    assert len(fused) == 3 and all(isinstance(f, fusion.FusedStore) for f in fused)

    @PROPERTY
    @given(data=st.data(), n=st.integers(0, 5), m=st.integers(0, 5), bad=st.booleans())
    def prop(data, n, m, bad):
        f = np.float64
        x, y = data.draw(_array(f, (n,))), data.draw(_array(f, (m,)))
        mat, v = data.draw(_array(f, (n, m))), data.draw(_array(f, (m + (bad and m > 1),)))
        _check(kernel, _pairs, (x, y, mat, v))

    prop()


# ---------------------------------------------------------------- reductions


def _reduce3(t):
    return (
        t.sum(axis=0),
        t.sum(axis=1, keepdims=True),
        np.max(t, axis=1),
        np.min(t, axis=2),
        t.mean(axis=-1),
        t.argmax(axis=1),
        np.argmin(t, axis=2),
        np.argmax(t, axis=0),
    )


@pytest.mark.parametrize("dtype", DTYPES)
def test_reductions_of_3d_arrays_along_each_axis_agree(dtype):
    kernel, fused = _kernel(_reduce3, (np.ones((2, 3, 4), dtype),))
    kinds = sorted((f.kind, f.axis, f.keepdims, f.out.name) for f in fused)
    s = np.sum(np.ones(1, dtype)).dtype.name  # int32 sums to int64
    mean = "float32" if dtype is np.float32 else "float64"
    d = np.dtype(dtype).name
    assert kinds == sorted(
        [
            ("sum", 0, False, s),
            ("sum", 1, True, s),
            ("max", 1, False, d),
            ("min", 2, False, d),
            ("mean", 2, False, mean),
            ("argmax", 1, False, "int64"),
            ("argmin", 2, False, "int64"),
            ("argmax", 0, False, "int64"),
        ]
    )

    @PROPERTY
    @given(data=st.data(), shape=st.tuples(*[st.integers(0, 4)] * 3), flip=st.booleans())
    def prop(data, shape, flip):
        t = data.draw(_array(dtype, shape))
        _check(kernel, _reduce3, (t.transpose(2, 1, 0) if flip else t,), sums=True)

    prop()


def _reduce_axes(t):
    return t.sum(axis=(0, 2)), np.max(t, axis=(1, 2), keepdims=True), t.mean(axis=(0, -2)), t.min(axis=(2, 0))


@pytest.mark.parametrize("dtype", DTYPES)
def test_reductions_over_several_axes_agree(dtype):
    kernel, fused = _kernel(_reduce_axes, (np.ones((2, 3, 4), dtype),))
    assert sorted((f.kind, f.axes, f.keepdims) for f in fused) == [
        ("max", (1, 2), True),
        ("mean", (0, 1), False),
        ("min", (0, 2), False),
        ("sum", (0, 2), False),
    ]

    @PROPERTY
    @given(data=st.data(), shape=st.tuples(*[st.integers(0, 4)] * 3), flip=st.booleans())
    def prop(data, shape, flip):
        t = data.draw(_array(dtype, shape))
        _check(kernel, _reduce_axes, (t.transpose(1, 0, 2) if flip else t,), sums=True)

    prop()


def test_a_mean_of_int64s_near_the_limits_agrees_within_float64s_rounding():
    # hypothesis found it: two terms near -2**63 and 2**63 cancel, and the mean of the rest
    # is off by a third after a float64 sum in another order than numpy's (each term is
    # rounded by 2048 before it is added); numpy's own order is no more exact
    t = np.ones((3, 4, 3), np.int64)
    t[0, 0, 1], t[2, 1, 1] = -9223372036854093312, 9223372036854130881
    kernel, _ = _kernel(_reduce_axes, (np.ones((2, 3, 4), np.int64),))
    _check(kernel, _reduce_axes, (t.transpose(1, 0, 2),), sums=True)


def _spread(t):
    return (
        t.var(axis=0),
        np.std(t, axis=1, keepdims=True),
        t.std(axis=-1, ddof=1),
        np.var(t, axis=(0, 2)),
        (t * 2 - 1).std(axis=1),  # of a tree, computed element by element in both passes
    )


@pytest.mark.parametrize("dtype", DTYPES)
def test_var_and_std_along_axes_are_two_pass_loops_and_agree(dtype):
    kernel, fused = _kernel(_spread, (np.ones((2, 3, 4), dtype),))
    out = "float32" if dtype is np.float32 else "float64"  # numpy's: ints give float64
    assert sorted((f.kind, f.axes, f.keepdims, f.ddof, f.out.name, f.tree is not None) for f in fused) == [
        ("std", (1,), False, 0, out, True),
        ("std", (1,), True, 0, out, False),
        ("std", (2,), False, 1, out, False),
        ("var", (0,), False, 0, out, False),
        ("var", (0, 2), False, 0, out, False),
    ]

    @PROPERTY
    @given(data=st.data(), shape=st.tuples(*[st.integers(0, 4)] * 3), flip=st.booleans())
    def prop(data, shape, flip):
        t = data.draw(_array(dtype, shape))
        t = t.transpose(2, 1, 0) if flip else t
        status, want = _plain(_spread, (t,))
        try:
            got = kernel(t)
        except ValueError:  # too few elements for ddof: numpy warns; the backend redoes it
            assert status == "raise", f"the kernel raised where numpy gives {want!r}"
            return
        if status == "raise":  # numpy only warned (an int64 tree wrapped): the values still agree
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                want = _spread(t)
        # the mean is added in another order than numpy's pairwise one (last or several axes),
        # and its rounding, squared, is what the two can differ by: bound by the inputs' scale
        with np.errstate(all="ignore"):
            read = [t] * 4 + [t * 2 - 1]
        eps = np.finfo(np.float32 if dtype is np.float32 else np.float64).eps
        for g, w, x, kind in zip(got, want, read, ("var", "std", "std", "var", "std")):
            assert g.dtype == w.dtype and g.shape == w.shape, (g, w)
            finite = np.abs(x[np.isfinite(x)].astype(np.float64))
            scale = float(finite.max()) if finite.size else 0.0
            bound = 64 * eps * scale * scale
            atol = max(bound if kind == "var" else math.sqrt(bound), 1e-2)
            np.testing.assert_allclose(g, w, rtol=1e-4, atol=atol, equal_nan=True)

    prop()


def test_var_with_an_unusual_argument_is_left_to_numpy():
    from framehook.translator.backends.numba.fusion_reduce import reduction

    def spreads(x):
        return x.var(axis=0, ddof=-1), x.std(axis=1, dtype=np.float32), x.var(0, np.float64), x.var()

    graph = captured_graph(spreads, np.ones((3, 4)))
    calls = [n for n in graph.nodes if n.kind in (NodeKind.CALL_METHOD, NodeKind.CALL)]
    assert len(calls) == 4 and [reduction(n) for n in calls] == [None] * 4


def _ties(x):
    return x.argmax(axis=1), x.argmin(axis=0), x.max(axis=1), np.min(x, axis=0)


def test_arg_reductions_pick_the_first_extreme_and_the_first_nan():
    kernel, _ = _kernel(_ties, (np.ones((2, 3)),))
    x = np.array([[1.0, 3.0, 3.0, -np.inf], [np.nan, 2.0, np.nan, 9.0], [-np.inf] * 4, [0.0, -0.0, 5.0, np.nan]])
    for v in (x, x.T, x[::-1], x[:, :1]):
        _check(kernel, _ties, (v,))
    # rows long enough for the four lanes and a remainder, NaN in each lane position
    rng = np.random.default_rng(11)
    for k in range(8):
        w = rng.choice([-np.inf, -1.0, 0.0, 2.0, 7.0], size=(3, 4 * 3 + k))
        w[k % 3, k] = np.nan
        _check(kernel, _ties, (w,))


def _softmax_rows(x):
    e = np.exp(x - x.max(axis=1, keepdims=True))
    return e / e.sum(axis=1, keepdims=True), ((x - 1.0) ** 2).sum(axis=0)


def test_reductions_through_the_backend_compile_and_agree_on_edge_cases():
    rng = np.random.default_rng(2)
    x = rng.standard_normal((5, 4)).astype(np.float32)
    nan = x.copy()
    nan[1, 2] = np.nan
    notes = assert_as_plain(_softmax_rows, (x,), (nan,), (x[:, :1],), (x.T,), (np.ones((0, 3), np.float32),))
    assert "compiled" in [n.status for n in notes], [str(n) for n in notes]


# ---------------------------------------------------------------- matrix-vector products


def _products(a, x, y):
    # no 1-D arithmetic on the products: numba's array expressions widen int32 and float32
    # (the backend's type check sends such a graph eager)
    return a @ x, y @ a, a.T @ y, a[:, :1] @ y[:1]


@pytest.fixture
def matvec_loops(monkeypatch):
    """Products as loops even where scipy gives numba its own ``@``."""
    monkeypatch.setattr(fusion, "MATVEC_LOOPS", True)


@pytest.mark.parametrize("dtype", DTYPES)
def test_matrix_vector_products_are_loops_and_agree(dtype, matvec_loops):
    ex = (np.ones((3, 4), dtype), np.ones(4, dtype), np.ones(3, dtype))
    fn = _products
    kernel, fused = _kernel(fn, ex)
    mvs = [f for f in fused if isinstance(f, fusion.FusedMatvec)]
    assert sorted((f.rows, f.transposed is not None) for f in mvs) == [
        (False, False),
        (False, True),
        (True, False),
        (True, False),
    ], mvs

    @PROPERTY
    @given(data=st.data(), n=st.integers(0, 6), m=st.integers(0, 9), bad=st.booleans(), flip=st.booleans())
    def prop(data, n, m, bad, flip):
        a = data.draw(_array(dtype, (m, n)) if flip else _array(dtype, (n, m)))
        a = a.T if flip else a
        x = data.draw(_array(dtype, (m + (bad and m > 0),)))
        y = data.draw(_array(dtype, (n,)))
        if np.dtype(dtype).kind == "f":  # NaN or not, BLAS order: no NaN for a clean allclose
            a, x, y = (np.nan_to_num(v) for v in (a, x, y))
        _check(kernel, fn, (a, x, y), sums=True)

    prop()


def _gesummv(alpha, beta, a, b, x):
    return alpha * (a @ x) + beta * (b @ x)


def test_a_gesummv_graph_compiles_without_scipy_and_agrees(matvec_loops):
    rng = np.random.default_rng(4)
    a, b, x = rng.random((6, 5)), rng.random((6, 5)), rng.random(5)
    graph = captured_graph(_gesummv, 1.5, 1.2, a, b, x)
    assert not [n for n in graph.nodes if n.target is operator.matmul and n in fusion.rewrite(graph)[0].nodes]
    assert "@" not in bnb.lower(graph, (1.5, 1.2, a, b, x)).source
    notes = assert_as_plain(
        _gesummv, (1.5, 1.2, a, b, x), (0.5, -2.0, a[:, :3], b[:, :3], x[:3]), (1.0, 1.0, a, b, x[:4])
    )
    assert "compiled" in [n.status for n in notes], [str(n) for n in notes]


# ---------------------------------------------------------------- masked reductions


def _binned(r, v, lo, hi):
    return (
        v[(r >= lo) & (r < hi)].mean(),
        np.sum(v[np.logical_or(r < lo, r > 2.5)]),
        v[r != lo].max(),
        v[(v <= hi) & (r > 0)].min(),
    )


def test_masked_reductions_are_one_loop_and_agree():
    ex = (np.ones(4), np.ones(4), 0.5, 1.5)
    kernel, fused = _kernel(_binned, ex)
    assert sorted(f.kind for f in fused if isinstance(f, fusion.FusedMasked)) == ["max", "mean", "min", "sum"]
    # values on and around the bounds (the graph holds lo and hi as traced), NaN, infinities
    near = st.sampled_from([-np.inf, -1.0, 0.0, 0.5, 1.0, 1.5, 2.5, 3.0, np.inf, np.nan]) | _elements(np.float64)

    @PROPERTY
    @given(data=st.data(), n=st.sampled_from([0, 1, 2, 7, 30]), bad=st.booleans())
    def prop(data, n, bad):
        r = data.draw(hnp.arrays(np.float64, n, elements=near))
        v = data.draw(hnp.arrays(np.float64, n + bad, elements=near))
        _check(kernel, _binned, (r, v, 0.5, 1.5), sums=True)

    prop()


def _radial(x, y, v, nbins):
    r = np.sqrt(x**2 + y**2)
    rmax = r.max()
    out = np.zeros(nbins)
    for i in range(nbins):
        out[i] = v[(r >= rmax * i / nbins) & (r < rmax * (i + 1) / nbins)].mean()
    return out


def test_radial_binning_compiles_and_agrees_with_empty_bins():
    rng = np.random.default_rng(7)
    x, y, v = rng.random(50), rng.random(50), rng.random(50)
    notes = assert_as_plain(_radial, (x, y, v, 4), (x[:3], y[:3], v[:3], 5))
    assert "compiled" in [n.status for n in notes], [str(n) for n in notes]


def _mask_then_write(r, v):
    m = r > 0.5
    r[:2] = 0.0  # the mask was taken before: the loop cannot compare r after this write
    return v[m].sum(), r


def test_a_mask_is_never_moved_past_a_write():
    args = (np.arange(4.0), np.ones(4))
    assert not [
        f for f in fusion.rewrite(captured_graph(_mask_then_write, *args))[1] if isinstance(f, fusion.FusedMasked)
    ]
    assert_as_plain(_mask_then_write, args)
