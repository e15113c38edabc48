"""Named tuples returned by graph operations (numpy 2's ``EighResult``, ``SVDResult``,
``QRResult``, ``SlogdetResult``, ``EigResult``): the call is one node holding the whole
tuple, its items are ``getitem`` nodes, and the tuple reads like one (fields, unpacking,
``len``, iteration, slicing). Returned, stored or kept across a graph break it is the very
object numpy returned. Every function agrees exactly with the plain one (values, dtypes,
shapes, types, exceptions) on the first call, on cache hits and after recompilations."""

from __future__ import annotations

import operator

import numpy as np
import pytest

import framehook.translator as ft
from framehook.translator.graph import ArrayMeta, NodeKind, SymDim, TupleMeta
from framehook.translator.graph.ir import Graph
from framehook.translator.symbolic import numpy_support as nps
from framehook.translator.backends.verify import check_result
from symbolic_helpers import assert_same, check_agrees, entries

DTYPES = [np.float32, np.float64, np.complex64, np.complex128]


pytestmark = pytest.mark.usefixtures("fresh_translator")


def spd(n, dtype=np.float64, seed=0):
    """A Hermitian positive-definite matrix of ``dtype`` (complex ones have imaginary parts)."""
    rng = np.random.default_rng(seed)
    a = rng.standard_normal((n, n))
    if np.dtype(dtype).kind == "c":
        a = a + 1j * rng.standard_normal((n, n))
    return (a @ a.conj().T + n * np.eye(n)).astype(dtype)


def rect(m, n, dtype=np.float64, seed=1):
    rng = np.random.default_rng(seed)
    a = rng.standard_normal((m, n))
    if np.dtype(dtype).kind == "c":
        a = a + 1j * rng.standard_normal((m, n))
    return a.astype(dtype)


def captured(fn, *args, graphs=1):
    """explain(): one graph (by default), no break; returns the graph."""
    out = ft.explain(fn)(*args)
    assert out.graph_count == graphs and out.graph_break_count == 0, str(out)
    return out.graphs[0]


def call_nodes(graph, target):
    return [n for n in graph.nodes if n.kind is NodeKind.CALL and n.target is target]


def assert_meta_describes(meta, value):
    """``meta`` describes ``value``: type, dtype, ndim and every static dimension."""
    if isinstance(meta, TupleMeta):
        assert type(value) is meta.pytype and len(value) == len(meta.items), (meta, type(value))
        for m, v in zip(meta.items, value):
            assert_meta_describes(m, v)
        return
    assert isinstance(meta, ArrayMeta)
    assert type(value) is meta.pytype, (meta, type(value))
    assert value.dtype == meta.dtype, (meta, value.dtype)
    assert np.ndim(value) == meta.ndim, (meta, np.shape(value))
    for d, n in zip(meta.shape, np.shape(value)):
        assert not isinstance(d, int) or d == n, (meta, np.shape(value))


# ----------------------------------------------------------------- each function, each dtype
def eigh_unpacked(a):
    w, v = np.linalg.eigh(a)
    return v @ np.diag(w) @ v.conj().T, w.dtype, v.dtype


def eigh_fields(a):
    res = np.linalg.eigh(a)
    return res.eigenvalues * 2, res.eigenvectors[:, 0], res


def eigh_lower_upper(a):
    return np.linalg.eigh(a, UPLO="U")[0] - np.linalg.eigh(a)[0]


def svd_reduced(a):
    u, s, vt = np.linalg.svd(a, full_matrices=False)
    return (u * s) @ vt, s


def svd_full(a):
    res = np.linalg.svd(a)
    return res.U.shape, res.S, res.Vh.shape, res


def svd_values_only(a):
    return np.linalg.svd(a, compute_uv=False) + np.linalg.svd(a, full_matrices=False, compute_uv=False)


def qr_modes(a):
    q, r = np.linalg.qr(a)
    qc, rc = np.linalg.qr(a, mode="complete")
    h, tau = np.linalg.qr(a, mode="raw")  # a plain tuple on every numpy
    return q @ r, qc.shape, rc.shape, np.linalg.qr(a, mode="r"), h.T, tau


def slogdet_parts(a):
    sign, logdet = np.linalg.slogdet(a)
    res = np.linalg.slogdet(a * 2)
    return sign * np.exp(logdet), res.sign, res.logabsdet, res


def eig_whole(a):
    return np.linalg.eig(a)


def eig_values(a):
    w, v = np.linalg.eig(a)
    return w, v, np.linalg.eigvals(a)


def stacked(a):
    b = np.stack([a, a * 2])
    w, v = np.linalg.eigh(b)  # batched: one result per matrix
    u, s, vt = np.linalg.svd(b)
    return w, v, s, np.linalg.slogdet(b)


SQUARE = [
    eigh_unpacked,
    eigh_fields,
    eigh_lower_upper,
    svd_reduced,
    svd_full,
    svd_values_only,
    qr_modes,
    slogdet_parts,
    stacked,
]


@pytest.mark.parametrize("dtype", DTYPES, ids=lambda d: np.dtype(d).name)
@pytest.mark.parametrize("fn", SQUARE, ids=lambda f: f.__name__)
def test_named_tuple_results_are_captured(fn, dtype):
    a, b = spd(3, dtype), spd(3, dtype, seed=5)
    opt = check_agrees(fn, (a,), (b,), (a,))
    assert entries(fn) == 1  # the later calls hit the cache
    check_agrees(fn, (spd(4, dtype),), optimized=opt)  # another shape: a recompilation
    graph = captured(fn, a)
    assert "getitem" in str(graph) or fn is svd_values_only


@pytest.mark.parametrize("dtype", DTYPES + [np.int64], ids=lambda d: np.dtype(d).name)
@pytest.mark.parametrize(
    "name,kwargs",
    [
        ("eigh", {}),
        ("svd", {}),
        ("svd", {"full_matrices": False}),
        ("svd", {"compute_uv": False}),
        ("qr", {}),
        ("qr", {"mode": "complete"}),
        ("qr", {"mode": "raw"}),
        ("slogdet", {}),
        ("eig", {}),
    ],
    ids=lambda v: v if isinstance(v, str) else "-".join(f"{k}={x}" for k, x in v.items()) or "default",
)
def test_metadata_is_what_numpy_returns(name, kwargs, dtype):
    """The node's metadata (named tuple type, each item's dtype and shape) is what numpy
    returns for inputs of that dtype: float32 eigenvalues for float32, real singular values
    and eigh eigenvalues for complex, complex eig results (or a break, see below)."""
    fn = getattr(np.linalg, name)
    shapes = [(3, 3)] if name in ("eigh", "slogdet", "eig") else [(3, 3), (4, 2), (2, 4)]
    for shape in shapes:
        a = rect(*shape, dtype=np.float64).astype(dtype) if name != "eigh" else spd(3, dtype)

        def f(x):
            return fn(x, **kwargs)

        want = f(a)
        out = ft.explain(f)(a)
        if fn in nps.VALUE_DEPENDENT_DTYPE and np.dtype(dtype).kind != "c":
            assert [b.code for b in out.break_reasons] == ["FH004"], str(out)
            assert "pass a complex array" in out.break_reasons[0].reason
            check_agrees(f, (a,))
            continue
        assert out.graph_count == 1 and out.graph_break_count == 0, str(out)
        (node,) = call_nodes(out.graphs[0], fn)
        if type(want) is tuple:  # qr(mode="raw"): a plain tuple, read item by item in the graph
            items = {u.args[1]: u.meta["val"] for u in node.users if u.target is operator.getitem}
            assert node.meta["val"] is None and sorted(items) == list(range(len(want)))
            for i, v in enumerate(want):
                assert_meta_describes(items[i], v)
        else:
            assert_meta_describes(node.meta["val"], want)
        assert_same(out.result, want)
        ft.reset()


def test_eig_of_real_matrices_follows_numpy():
    """numpy before 2.5 returns real eig results when every eigenvalue is real and complex ones
    otherwise (a dtype that depends on the values): that breaks (FH004) and runs in Python;
    numpy 2.5 always returns complex results, which are captured. Complex inputs are captured
    on every numpy."""
    real_eigs = spd(3)
    rotation = np.array([[0.0, -1.0], [1.0, 0.0]])
    for fn in (eig_whole, eig_values):
        check_agrees(fn, (real_eigs,), (rotation,), (rotation.astype(np.float32),))
        out = ft.explain(fn)(rotation)
        if np.linalg.eig in nps.VALUE_DEPENDENT_DTYPE:
            assert {b.code for b in out.break_reasons} == {"FH004"}, str(out)
        else:
            assert out.graph_count == 1 and out.graph_break_count == 0, str(out)
        captured(fn, rotation.astype(complex))
        check_agrees(fn, (rotation.astype(complex),), (real_eigs.astype(np.complex64),))
    assert type(ft.optimize("eager")(eig_whole)(rotation.astype(complex))) is type(eig_whole(rotation))


# ----------------------------------------------------------------- the tuple protocol
def _describe(r):
    return type(r).__name__, isinstance(r, tuple), r._fields, len(r), r[-1], r[:1], r[0:5]


def protocol(a):
    r = np.linalg.eigh(a)
    d = r._asdict()
    items = [v * 1 for v in r]
    w, *rest = r
    pairs = dict(zip(r._fields, r))
    return (
        _describe(r),
        d["eigenvalues"] + 1,
        items,
        rest,
        np.concatenate([*r[0:1], r.eigenvalues]),
        bool(r),
        r + (1,),
        (1,) + tuple(r),
        pairs["eigenvectors"],
        np.linalg.norm(*r[1:]),
        hasattr(r, "eigenvalues"),
        type(r) is type(np.linalg.eigh(a)),
        r.count(None) if False else len(list(r)),
        np.stack(r[1:] * 2),
    )


def test_named_tuple_reads_like_a_tuple():
    a = spd(3)
    check_agrees(protocol, (a,), (spd(3, seed=4),), (spd(3, np.complex128),))
    assert entries(protocol) == 2  # float64 then complex128
    graph = captured(protocol, a)
    # the second one only gives its type, but stays: an unused linalg call may raise, as in Python
    assert len(call_nodes(graph, np.linalg.eigh)) == 2


def returns_it(a):
    res = np.linalg.svd(a + 1)
    return res


def returns_it_in_containers(a):
    res = np.linalg.qr(a)
    sl = np.linalg.slogdet(a)
    return [res, sl], {"qr": res, "r": res.R}, (sl, sl.sign)


def test_returned_named_tuple_is_the_object_numpy_made():
    a = spd(3)
    for fn in (returns_it, returns_it_in_containers):
        check_agrees(fn, (a,), (a * 2,), (rect(4, 3),))
        graph = captured(fn, a)
        assert graph.output_node is not None
    got = ft.optimize("eager")(returns_it)(a)
    assert type(got).__name__ == "SVDResult" and type(got) is type(np.linalg.svd(a))
    assert_same(got.S, np.linalg.svd(a + 1).S)
    out = ft.optimize("eager")(returns_it_in_containers)(a)
    assert type(out[0][0]) is type(np.linalg.qr(a)) and type(out[2][0]) is type(np.linalg.slogdet(a))
    assert out[1]["qr"] is out[0][0]  # one object, as in the plain function


def errors(a, k):
    r = np.linalg.eigh(a)
    if k == 0:
        return r.nonexistent
    if k == 1:
        return r[5]
    return r[k - 3]


def test_errors_on_named_tuples_agree():
    a = spd(2)
    check_agrees(errors, (a, 0), (a, 1), (a, 2), (a, 4))
    with pytest.raises(AttributeError) as info:
        ft.explain(errors)(a, 0)
    out = info.value.explain_output
    assert [b.code for b in out.break_reasons] == ["FH009"] and "AttributeError" in out.break_reasons[0].reason
    check_agrees(eigh_unpacked, (rect(2, 3),), (np.eye(2, dtype=np.float16),), (np.full((2, 2), np.nan),))


# ----------------------------------------------------------------- breaks, loops, side effects
def across_a_break(a):
    r = np.linalg.svd(a + 1)
    order = sorted([2, 1])  # FH003: the graph so far runs, then this in Python
    return r.U * r.S[order[0]], r, r.Vh.sum()


def test_named_tuple_kept_across_a_graph_break():
    a = spd(3)
    check_agrees(across_a_break, (a,), (a,), (a * 3,))
    out = ft.explain(across_a_break)(a)
    assert out.graph_count == 2 and [b.code for b in out.break_reasons] == ["FH003"], str(out)
    assert all(r.resume_failure is None for r in out.frames)
    assert type(ft.optimize("eager")(across_a_break)(a)[1]) is type(np.linalg.svd(a))


def carried_through_a_loop(a):
    res = np.linalg.eigh(a)
    for i in range(10):
        res = np.linalg.eigh(a + res.eigenvalues[0] * 0 + i)
    return res, res.eigenvalues.sum()


def test_named_tuple_carried_through_a_captured_loop():
    a = spd(3)
    check_agrees(carried_through_a_loop, (a,), (a * 2,), (spd(3, np.complex128),))
    out = ft.explain(carried_through_a_loop)(a)
    assert out.graph_break_count == 0 and [n.captured for n in out.loops] == [True], str(out)


SAVED = None


def stores_global(a):
    global SAVED
    SAVED = np.linalg.qr(a)
    return SAVED.R.sum()


def test_named_tuple_stored_to_a_global():
    global SAVED
    a = spd(3)
    opt = ft.optimize("eager")(stores_global)
    for x in (a, a * 2):
        SAVED = None
        want = stores_global(x)
        plain = SAVED
        SAVED = None
        assert_same(opt(x), want)
        assert type(SAVED) is type(plain)
        assert_same(SAVED, plain)
    captured(stores_global, a)


# ----------------------------------------------------------------- dynamic shapes, backends
def decompositions(a):
    w, v = np.linalg.eigh(a @ a.T)
    u, s, vt = np.linalg.svd(a, full_matrices=False)
    q, r = np.linalg.qr(a)
    return w, v, u * s, vt, np.linalg.svd(a), q @ r


def test_named_tuples_under_dynamic_shapes():
    seen = []

    def backend(graph, inputs):
        seen.append(graph)
        return graph.forward

    with ft.config.patch(verify_backend=True):
        opt = ft.optimize(backend)(decompositions)
        for n in (2, 3, 4, 5, 3):
            check_agrees(decompositions, (rect(n, 3),), optimized=opt)
    assert entries(decompositions) == 2  # the second size recompiles with a dynamic first dimension
    (eigh,) = call_nodes(seen[-1], np.linalg.eigh)
    meta = eigh.meta["val"]
    assert isinstance(meta, TupleMeta) and all(isinstance(d, SymDim) for d in meta.items[0].shape)


def test_named_tuples_with_the_numexpr_backend():
    pytest.importorskip("numexpr")

    def f(a):
        w, v = np.linalg.eigh(a)
        return np.exp(w) * 2 + 1, v * 3 - 1, np.linalg.svd(a)

    check_agrees(f, (spd(3),), (spd(3, seed=9),), optimized=ft.optimize("numexpr")(f))


def test_verify_backend_checks_named_tuples():
    res = np.linalg.eigh(spd(2))
    g = Graph("g")
    node = g.placeholder(
        "x", TupleMeta((ArrayMeta((2,), np.dtype(np.float64)), ArrayMeta((2, 2), np.dtype(np.float64))), type(res))
    )
    problems = []
    check_result(node, res, "output", problems)
    assert problems == []
    check_result(node, tuple(res), "output", problems)
    assert problems == ["output: expected EighResult of 2, got tuple of 2"]
    problems = []
    check_result(node, type(res)(res[0].astype(np.float32), res[1]), "output", problems)
    assert problems == ["output.eigenvalues: expected ndarray float64(2,), got ndarray float32(2,)"]
