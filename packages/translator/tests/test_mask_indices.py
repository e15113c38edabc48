"""Boolean masks among other indices (``x[m, 0]``, ``x[0, m]``, ``x[m, 1:3]``, ``x[:, m]``,
``x[m, idx]``) and 0-d masks (``x[x.sum() > 0]``), read and stored, in the graph with
numpy's semantics: a mask is the integer arrays of its ``nonzero()``, an advanced index of
data-dependent length (a fresh symbolic dimension) broadcast with the other advanced
indices and placed where they are, or first when a slice, None or Ellipsis separates them.
Every function agrees exactly with the plain one (values, dtypes, shapes, exceptions,
arguments after the call) on the first call, on cache hits and for other mask contents."""

from __future__ import annotations

import random
import warnings

import numpy as np
import pytest

import framehook.translator as ft
from framehook.translator.graph import SymDim
from symbolic_helpers import check_agrees, entries

X3 = np.arange(60.0).reshape(3, 4, 5) - 20
X2 = np.arange(20.0).reshape(4, 5) - 7
M3 = np.array([True, False, True])
M4 = np.array([True, True, False, True])
M5 = np.array([False, True, True, False, True])
IDX = np.array([0, 2])


pytestmark = pytest.mark.usefixtures("fresh_translator")


def variants(mask):
    """The same mask shape with other contents: none, all, and the complement true."""
    return [mask, np.zeros_like(mask), np.ones_like(mask), ~mask]


# ----------------------------------------------------------------- reading
def first_col(x, m):
    return x[m, 0]


def first_row(x, m):
    return x[0, m]


def rows_slice(x, m):
    return x[m, 1:3] * 2


def all_rows(x, m):
    return x[:, m].sum(axis=0)


def with_ints(x, m, idx):
    return x[m, idx]


def with_column_ints(x, m, idx):
    return x[m, idx[:, None]]  # (2, 1) broadcast with (N,): (2, N)


def separated(x, m):
    return x[0, :, m]  # int and mask separated by a slice: N first


def adjacent(x, m):
    return x[:, m, 0]  # mask and int side by side: N in place


def ellipsis_none(x, m):
    return x[m, ..., 0], x[..., x[0, 0] > -30], x[m, None, 1]


def two_d_mask(x, m):
    return x[m, 1] + x[m].sum()


def with_python_bools(x, m):
    return x[m, True], x[True, m], x[m, None]


READS = [
    (first_col, X2, M4, ()),
    (first_row, X2, M5, ()),
    (rows_slice, X2, M4, ()),
    (all_rows, X2, M5, ()),
    (with_ints, X2, M4, (IDX,)),
    (with_column_ints, X2, M4, (IDX,)),
    (separated, X3, M5, ()),
    (adjacent, X3, M4, ()),
    (ellipsis_none, X3, M3, ()),
    (two_d_mask, X3, X3[:, :, 0] > 0, ()),
    (with_python_bools, X2, M4, ()),
]


@pytest.mark.parametrize("dtype", [np.float64, np.float32, np.complex128, np.int32], ids=lambda d: np.dtype(d).name)
@pytest.mark.parametrize("fn,x,m,extra", READS, ids=[r[0].__name__ for r in READS])
def test_masks_among_other_indices(fn, x, m, extra, dtype):
    x = (x * (1 + 1j) if np.dtype(dtype).kind == "c" else x).astype(dtype)
    calls = [(x, v) + extra for v in variants(m)]
    if fn is with_ints:  # N must be 2 (the integer array's length) or 1: others raise, as numpy does
        calls = [(x, v) + extra for v in (m & (np.arange(len(m)) < 2), np.eye(len(m), dtype=bool)[1], m)]
    with ft.config.patch(verify_backend=True):  # every result matches the graph's metadata
        check_agrees(fn, *calls)
    assert entries(fn) == 1, "other mask contents are cache hits"
    out = ft.explain(fn)(*calls[0])
    assert out.graph_count == 1 and out.graph_break_count == 0, str(out)


def meta_of(fn, *args):
    out = ft.explain(fn)(*args)
    assert out.graph_count == 1 and out.graph_break_count == 0, str(out)
    node = out.graphs[0].output_node.args[0]
    return node.meta["val"].shape


def sym(shape):
    return tuple("N" if isinstance(d, SymDim) else d for d in shape)


def test_result_shapes_follow_numpy_placement():
    assert sym(meta_of(first_col, X2, M4)) == ("N",)
    assert sym(meta_of(first_row, X2, M5)) == ("N",)
    assert sym(meta_of(lambda x, m: x[m, 1:3], X2, M4)) == ("N", 2)
    assert sym(meta_of(lambda x, m: x[:, m], X2, M5)) == (4, "N")
    assert sym(meta_of(separated, X3, M5)) == ("N", 4)  # moved to the front
    assert sym(meta_of(adjacent, X3, M4)) == (3, "N")  # kept in place
    assert sym(meta_of(lambda x, m: x[m, None, 1], X3, M3)) == ("N", 1, 5)
    assert sym(meta_of(lambda x, m: x[..., m], X3, M5)) == (3, 4, "N")
    assert sym(meta_of(with_ints, X2, np.array([True, False, False, True]), IDX)) == (2,)  # N must broadcast with 2
    assert sym(meta_of(with_column_ints, X2, M4, IDX)) == (2, "N")
    assert sym(meta_of(lambda x, m: x[m, np.array([1])], X2, M4)) == ("N",)
    assert sym(meta_of(lambda x: x[x.sum() > 0], X2)) == ("N", 4, 5)
    assert sym(meta_of(lambda x: x[x.sum() > 0, 1], X2)) == ("N", 5)
    assert sym(meta_of(lambda x: x[:, x[0, :, 0] > 0, 0], X3)) == (3, "N")
    assert sym(meta_of(lambda x, m: x[m, False], X2, M4 & (np.arange(4) == 1))) == (
        0,
        5,
    )  # False: N is 0 (or numpy raises)


# ----------------------------------------------------------------- 0-d masks
def zero_d(x):
    return x[x.sum() > 0], x[x.max() > 3, 1], x[np.bool_(True)], x[np.bool_(False), 0], x[x[0, 0] > 0, ..., 1]


def zero_d_store(x, k):
    x[x.sum() > k] = 0.5
    x[x.min() < k, 0] = -1
    return x


def test_zero_d_masks():
    for dtype in (np.float64, np.float32, np.complex128):
        x = X2.astype(dtype)
        check_agrees(zero_d, (x,), (-x,), (x * 0,))
        check_agrees(zero_d_store, (x.copy(), 0.0), (x.copy(), 1e9), (x.copy(), -1e9))
    out = ft.explain(zero_d)(X2)
    assert out.graph_count == 1 and out.graph_break_count == 0, str(out)
    out = ft.explain(zero_d_store)(X2.copy(), 0.0)
    assert out.graph_count == 1 and out.graph_break_count == 0, str(out)
    assert out.ops_per_graph[0]["operator.setitem"] == 2


# ----------------------------------------------------------------- storing
def store_scalar(x, m):
    x[m, 0] = -1.0
    x[0, x[1] > 0] = 7
    return x


def store_array(x, m, v):
    x[m, 1:3] = v  # v broadcast to (N, 2)
    return x


def store_inplace(x, m):
    x[m, 1:] += 1
    x[:, x[0] > 3] *= 2
    return x


def store_with_ints(x, m, idx, v):
    x[m, idx] = v
    return x


def store_number_input(x, m, k):
    x[m, -1] = k  # k stays a graph input (not specialized)
    return x


def test_mask_stores():
    for dtype in (np.float64, np.float32, np.complex128):
        x = X2.astype(dtype)
        check_agrees(store_scalar, *[(x.copy(), v) for v in variants(M4)])
        check_agrees(
            store_array,
            (x.copy(), M4, np.array([10.0, 20.0])),
            (x.copy(), ~M4, np.array([[1.0, 2.0]])),
            (x.copy(), M4, np.ones((3, 2))),
            (x.copy(), M4, np.ones((2, 2))),
        )  # wrong N raises
        check_agrees(store_inplace, *[(x.copy(), v) for v in variants(M4)])
        check_agrees(
            store_with_ints, (x.copy(), M4 & (np.arange(4) < 2), IDX, np.array([5.0, 6.0])), (x.copy(), M4, IDX, 3.0)
        )
        check_agrees(store_number_input, (x.copy(), M4, 2.5), (x.copy(), ~M4, -1.5), (x.copy(), M4, 4.0))
    assert entries(store_number_input) == 3  # one per dtype: the number is not specialized
    for fn, args in (
        (store_scalar, (X2.copy(), M4)),
        (store_array, (X2.copy(), M4, np.ones(2))),
        (store_inplace, (X2.copy(), M4)),
        (store_with_ints, (X2.copy(), ~M4 | (np.arange(4) == 1), IDX, 1.0)),
    ):
        out = ft.explain(fn)(*args)
        assert out.graph_count == 1 and out.graph_break_count == 0, str(out)


def test_stores_that_numpy_rejects_break_cleanly():
    def too_many_dims(x, m):
        x[m, 0] = np.ones((2, 3))  # (2, 3) cannot broadcast to (N,)
        return x

    def complex_into_float(x, m):
        x[m, 0] = 1j
        return x

    for fn in (too_many_dims, complex_into_float):
        check_agrees(fn, (X2.copy(), M4), (X2.copy(), M4))
        with pytest.raises(Exception) as info:
            ft.explain(fn)(X2.copy(), M4)
        out = info.value.explain_output
        assert [b.code for b in out.break_reasons] == ["FH009"], str(out)


# ----------------------------------------------------------------- what still breaks, and raises
def test_wrong_mask_shapes_raise_as_numpy():
    check_agrees(first_col, (X2, M5), (X2, M3))
    with pytest.raises(IndexError) as info:
        ft.explain(first_col)(X2, M5)
    out = info.value.explain_output
    assert [b.code for b in out.break_reasons] == ["FH009"], str(out)
    assert "boolean index did not match" in out.break_reasons[0].reason
    # N that does not broadcast with the integer array: numpy raises when the graph runs
    check_agrees(with_ints, (X2, M4, IDX), (X2, np.ones(4, bool), IDX), (X2, np.zeros(4, bool), IDX))
    check_agrees(lambda x, m: x[m, 0, 0, 0], (X2, M4))  # too many indices


def test_masks_nested_in_sequences_break_with_a_hint():
    def in_list(x, m):
        return x[[m]]

    def in_nested_tuple(x, m):
        return x[(m, 0), 1]

    for fn in (in_list, in_nested_tuple):
        check_agrees(fn, (X2, M4), (X2, M4))
        try:
            out = ft.explain(fn)(X2, M4)
        except Exception as e:
            out = e.explain_output
        assert [b.code for b in out.break_reasons][:1] == ["FH011"], str(out)
        assert "nested sequence of an index" in out.break_reasons[0].reason
        assert "np.where" in out.break_reasons[0].hint


# ----------------------------------------------------------------- dynamic shapes, loops, backends
def dynamic(x, m):
    y = x[m, 1:]
    x[m, 0] = y.sum(axis=1)
    return y * 2, len(y), x[:, x[0] > 0], x


def test_masks_under_dynamic_shapes():
    rng = np.random.default_rng(0)
    with ft.config.patch(verify_backend=True):
        opt = ft.optimize("eager")(dynamic)
        for n in (3, 5, 7, 9, 5):
            x = rng.standard_normal((n, 4))
            check_agrees(dynamic, (x, rng.random(n) > 0.5), (x, np.zeros(n, bool)), optimized=opt)
    assert entries(dynamic) == 2  # the second size recompiles with dynamic dimensions, then hits


def in_loop(x):
    for i in range(10):
        x[x[:, 0] > 3, 0] += i
        x[x[:, 1] > 3, 1:] = x[x[:, 1] > 3, 1:] * 0.5
    return x


def test_masks_in_a_captured_loop():
    check_agrees(in_loop, (X2.copy(),), (-X2,), (X2 * 3,))
    out = ft.explain(in_loop)(X2.copy())
    assert out.graph_break_count == 0 and [n.captured for n in out.loops] == [True], str(out)


def test_masks_with_the_numexpr_backend():
    pytest.importorskip("numexpr")

    def f(x, m):
        return np.exp(x[m, 0]) * 2 + 1, x[:, x[0] > 0] * 3 - 1

    check_agrees(f, (X2, M4), (X2, ~M4), optimized=ft.optimize("numexpr")(f))


# ----------------------------------------------------------------- random indices against numpy
def _random_case(rng):
    ndim = rng.randint(0, 4)
    shape = tuple(rng.choice([0, 1, 2, 3, 4]) if rng.random() < 0.1 else rng.choice([1, 2, 3, 4]) for _ in range(ndim))
    x = np.arange(int(np.prod(shape)), dtype=rng.choice([np.float64, np.float32, np.int32])).reshape(shape)
    items, args, dim, ellipsis = [], {}, 0, False
    for _ in range(rng.randint(1, 4)):
        kind = rng.choice(["mask", "mask", "mask0", "int", "slice", "none", "ellipsis", "intarr", "bool", "mask2"])
        name = f"a{len(args)}"
        d = shape[dim] if dim < ndim else 2
        if kind == "ellipsis" and not ellipsis:
            ellipsis = True
            items.append("...")
        elif kind == "none":
            items.append("None")
        elif kind == "bool":
            items.append(rng.choice(["True", "False"]))
        elif kind == "mask0":
            args[name] = np.bool_(rng.random() < 0.6) if rng.random() < 0.5 else np.array(rng.random() < 0.6)
            items.append(name)
        elif kind in ("mask", "mask2"):
            nd = 2 if kind == "mask2" else 1
            mshape = tuple(shape[dim : dim + nd]) if dim + nd <= ndim else (d,) * nd
            args[name] = np.array([rng.random() < 0.5 for _ in range(int(np.prod(mshape)))], bool).reshape(mshape)
            items.append(name)
            dim += nd
        elif kind == "int":
            items.append(str(rng.randint(-d, d - 1) if d else 0))
            dim += 1
        elif kind == "slice":
            items.append(rng.choice([":", "1:", "::2", ":-1", "1:3"]))
            dim += 1
        elif kind == "intarr":
            ashape = rng.choice([(1,), (2,), (3,), (2, 1), (1, 2), ()])
            args[name] = np.array(
                [rng.randint(0, max(d - 1, 0)) for _ in range(int(np.prod(ashape)))], np.intp
            ).reshape(ashape)
            items.append(name)
            dim += 1
    if not any(getattr(v, "dtype", None) == np.bool_ for v in args.values()):
        args[f"a{len(args)}"] = np.array(rng.random() < 0.5)
        items.append(f"a{len(args) - 1}")
    return x, args, ", ".join(items) + ("," if len(items) == 1 and rng.random() < 0.5 else "")


def test_random_mask_indices_agree_with_numpy():
    """Random index tuples mixing masks (1-d, 2-d, 0-d), ints, slices, None, Ellipsis, Python
    bools and integer arrays, read and stored, each with several mask contents on one compiled
    entry: the results agree with numpy, and match the graph's metadata (verify_backend)."""
    rng = random.Random(1234)
    captured = 0
    for case in range(250):
        x, args, expr = _random_case(rng)
        names = list(args)
        store = case % 3 == 0
        body = f"    x[{expr}] = v\n    return x\n" if store else f"    return x[{expr}]\n"
        ns = {"np": np}
        exec(f"def f(x, {', '.join(names)}{', v' if store else ''}):\n{body}", ns)
        f = ns["f"]
        value = rng.choice([-1.0, 2, np.ones(1) * 5, np.arange(2.0), np.float32(3)])

        def call(reseed):
            a = {
                n: (
                    np.array(rng.random() < 0.5, bool).reshape(v.shape)
                    if v.ndim == 0
                    else np.array([rng.random() < 0.5 for _ in range(v.size)], bool).reshape(v.shape)
                )
                if reseed and v.dtype == np.bool_ and isinstance(v, np.ndarray)
                else v
                for n, v in args.items()
            }
            return (x.copy(),) + tuple(a[n] for n in names) + ((value,) if store else ())

        ft.reset()
        with ft.config.patch(verify_backend=True), warnings.catch_warnings():
            warnings.simplefilter("ignore")
            opt = ft.optimize("eager")(f)
            try:
                check_agrees(f, call(False), call(True), call(True), call(True), optimized=opt)
            except AssertionError as e:
                raise AssertionError(f"x{x.shape} {x.dtype} {expr!r} store={store}: {e}") from None
            try:
                out = ft.explain(f)(*call(False))
            except Exception:
                continue  # numpy raises for this index: checked above to agree
            if out.graph_break_count == 0:
                captured += 1
    assert captured > 100
