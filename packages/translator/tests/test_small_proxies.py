"""symbolic/small_proxies.py: an operation's result metadata from shrunk proxies is the one
the full-size run gives (type, dtype, shape), and every case the shortcut cannot vouch for
(an error, a non-proxy operand, an unhandled keyword) is left to the full run."""

from __future__ import annotations

import operator

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import framehook.translator as ft
from framehook.translator.graph import ArrayMeta
from framehook.translator.symbolic.numpy_support import run_on_proxies
from framehook.translator.symbolic.small_proxies import shrunk_result

DTYPES = [np.float64, np.float32, np.int32, np.int64, np.bool_, np.complex128, np.uint8]


def proxy(shape, dtype, fill=1):
    return ArrayMeta(tuple(shape), np.dtype(dtype)).proxy() if fill == 1 else _filled(shape, dtype, fill)


def _filled(shape, dtype, fill):
    base = np.full(1, fill, dtype=dtype)
    return np.lib.stride_tricks.as_strided(base, shape=tuple(shape), strides=(0,) * len(shape))


def full(fn, args, kwargs, method=None):
    """What the tracer ran before: the operation on the full proxies (or the exception)."""
    try:
        if method is not None:
            return run_on_proxies(getattr(args[0], method), args[1:], kwargs)
        return run_on_proxies(fn, args, kwargs)
    except Exception as e:
        return e


def same_meta(fast, slow):
    assert type(fast) is type(slow)
    if isinstance(slow, np.ndarray):
        assert (fast.shape, fast.dtype) == (slow.shape, slow.dtype)
    else:
        assert np.asarray(fast).dtype == np.asarray(slow).dtype


def check(fn, args, kwargs=None, method=None, shrinks=None):
    kwargs = kwargs or {}
    slow = full(fn, args, kwargs, method)
    fast = shrunk_result(run_on_proxies, fn, args, kwargs, method)
    if isinstance(slow, Exception):
        assert fast is None, f"{fn} raised {slow!r} on the full proxies, the shortcut gave {fast!r}"
    elif fast is not None:
        same_meta(fast, slow)
    if shrinks is not None:
        assert (fast is not None) is shrinks
    return fast


dims = st.integers(0, 4)
shapes = st.lists(dims, min_size=0, max_size=3).map(tuple)
BINARY = [operator.add, operator.sub, operator.mul, operator.truediv, operator.floordiv, operator.mod]
BINARY += [operator.pow, operator.lt, operator.eq, operator.and_, operator.lshift]


@settings(max_examples=150, deadline=None)
@given(
    fn=st.sampled_from(BINARY + [np.add, np.arctan2, np.maximum, np.logical_xor]),
    a=shapes,
    b=shapes,
    da=st.sampled_from(DTYPES),
    db=st.sampled_from(DTYPES),
)
def test_elementwise_matches_the_full_run(fn, a, b, da, db):
    check(fn, (proxy(a, da), proxy(b, db)))


@settings(max_examples=80, deadline=None)
@given(
    fn=st.sampled_from(BINARY),
    a=shapes,
    da=st.sampled_from(DTYPES),
    scalar=st.sampled_from([2, -1, 2.5, True, 1j, np.float32(2), np.int8(3), np.uint16(0)]),
    left=st.booleans(),
)
def test_elementwise_with_scalars_matches_the_full_run(fn, a, da, scalar, left):
    args = (scalar, proxy(a, da)) if left else (proxy(a, da), scalar)
    check(fn, args)


@settings(max_examples=60, deadline=None)
@given(fn=st.sampled_from([operator.neg, operator.invert, operator.abs, np.sin, np.sqrt, np.isnan]), a=shapes)
def test_unary_matches_the_full_run(fn, a):
    for dtype in (np.float64, np.int32, np.bool_):
        check(fn, (proxy(a, dtype),))


@settings(max_examples=150, deadline=None)
@given(
    fn=st.sampled_from([operator.matmul, np.matmul]),
    a=st.lists(dims, min_size=1, max_size=4).map(tuple),
    b=st.lists(dims, min_size=1, max_size=4).map(tuple),
    match=st.booleans(),
    dtype=st.sampled_from([np.float64, np.float32, np.int64, np.complex64]),
)
def test_matmul_matches_the_full_run(fn, a, b, match, dtype):
    if match:  # mostly shapes numpy accepts
        b = b[:-2] + (a[-1],) + b[-1:] if len(b) >= 2 else (a[-1],)
    check(fn, (proxy(a, dtype), proxy(b, np.float64)))


@settings(max_examples=150, deadline=None)
@given(
    name=st.sampled_from(["sum", "prod", "min", "max", "mean", "any", "all"]),
    shape=shapes,
    axis=st.one_of(st.none(), st.integers(-4, 3), st.lists(st.integers(-3, 2), max_size=3).map(tuple)),
    keepdims=st.booleans(),
    dtype=st.sampled_from(DTYPES),
    as_method=st.booleans(),
)
def test_reductions_match_the_full_run(name, shape, axis, keepdims, dtype, as_method):
    a = proxy(shape, dtype)
    kwargs = {"axis": axis, "keepdims": keepdims}
    if as_method:
        check(None, (a,), kwargs, method=name)
    else:
        check(getattr(np, name), (a,), kwargs)


def test_what_shrinks_and_what_does_not():
    big = proxy((50, 40), np.float64)
    assert check(operator.mul, (big, proxy((40,), np.float64)), shrinks=True).shape == (50, 40)
    assert check(operator.matmul, (big, proxy((40, 7), np.float64)), shrinks=True).shape == (50, 7)
    assert check(operator.matmul, (proxy((40,), np.float64), proxy((40,), np.float64)), shrinks=True).shape == ()
    assert check(None, (big,), {"axis": 1}, method="sum", shrinks=True).shape == (50,)
    assert check(None, (big, 0), {}, method="max", shrinks=True).shape == (40,)
    # nothing above 1 to shrink, a keyword the shortcut does not know, an unknown function
    check(operator.add, (proxy((1, 1), np.float64), 1.0), shrinks=False)
    check(np.add, (big, big), {"dtype": np.float32}, shrinks=False)
    check(None, (big,), {"axis": 0, "where": True}, method="sum", shrinks=False)
    check(np.cumsum, (big,), shrinks=False)
    check(None, (big,), {}, method="cumsum", shrinks=False)
    check(np.linalg.norm, (big,), shrinks=False)
    # numpy's errors come from the full run
    check(operator.add, (big, proxy((3,), np.float64)), shrinks=False)
    check(operator.matmul, (big, proxy((41, 2), np.float64)), shrinks=False)
    check(None, (big,), {"axis": 2}, method="sum", shrinks=False)
    check(None, (proxy((0, 3), np.float64),), {"axis": 0}, method="min", shrinks=False)


def test_only_uniform_arrays_shrink():
    varied = np.arange(12.0).reshape(3, 4)  # a real array: its values differ
    check(operator.add, (varied, 1.0), shrinks=False)
    check(None, (varied,), {"axis": 0}, method="sum", shrinks=False)
    check(operator.matmul, (varied, proxy((4,), np.float64)), shrinks=False)
    check(operator.add, (np.ones((3, 4)).view(np.matrix), 1.0), shrinks=False)
    check(operator.add, ([1.0, 2.0], proxy((3, 2), np.float64)), shrinks=False)


@pytest.mark.filterwarnings("ignore")
@pytest.mark.parametrize("dtype", ["M8[s]", "m8[s]", "U2", "S2", "f2", "g"])
def test_other_dtypes_and_scalars_match_the_full_run(dtype):
    odd = [np.str_("a"), np.bytes_(b"a"), np.datetime64("2020-01-01"), np.timedelta64(3, "s"), np.float16(2), 1j]
    for scalar in odd:
        for fn in (operator.add, operator.sub, operator.eq, operator.lt, operator.mul, np.maximum, operator.floordiv):
            check(fn, (proxy((4, 3), dtype), scalar))
            check(fn, (scalar, proxy((4, 3), dtype)))


def test_value_errors_are_kept():
    # an integer to a negative integer power raises whatever the size: the full run says so
    ints = _filled((30, 30), np.int64, 2)
    check(operator.pow, (ints, _filled((30,), np.int64, -1)), shrinks=False)
    assert check(operator.pow, (ints, _filled((30,), np.int64, 2)), shrinks=True).dtype == np.int64


@pytest.mark.usefixtures("fresh_translator")
def test_captured_results_unchanged():
    def f(a, b, c):
        d = a * b[None, :] + 2.0
        e = (d @ c).sum(axis=0, keepdims=True)
        return np.maximum(d.max(1), 0.5), e.astype(np.float32) - np.mean(d, axis=(0, 1)), a @ b

    args = (np.random.default_rng(1).standard_normal((9, 7)), np.linspace(0, 1, 7), np.ones((7, 3)))
    got = ft.optimize("eager")(f)(*args)
    want = f(*args)
    for g, w in zip(got, want):
        assert type(g) is type(w) and np.asarray(g).dtype == np.asarray(w).dtype
        np.testing.assert_allclose(g, w)
