"""Loop nests whose inner ``range`` is computed from an enclosing loop's index (triangular
nests: Cholesky, LU, Gram-Schmidt) captured as a loop node inside a loop node with graph
bounds (symbolic/loops.py ``SymRange``), not unrolled; every result, dtype, exception,
warning and argument mutation agrees with the plain function, on the first call, a cache
hit and a recompilation; a nest that cannot be captured so unrolls as before."""

from __future__ import annotations

import copy
import warnings

import numpy as np
import pytest

import framehook.translator as ft
from framehook.translator import config
from framehook.translator.graph import Graph, Interpreter, Loop, Node, ScalarMeta
from corpus_helpers import run_case
from loop_kernels import cholesky
from symbolic_helpers import assert_same, check_agrees, loop_nodes

RNG = np.random.default_rng(20)
M = RNG.standard_normal((9, 9))
SPD = M @ M.T + 9 * np.eye(9)
SPD5 = SPD[:5, :5].copy()
TALL = RNG.standard_normal((11, 6))
V = RNG.standard_normal(9)


pytestmark = pytest.mark.usefixtures("fresh_translator")


def graph_bounded(graph):
    """Loop nodes, at any depth, whose range has a bound computed in the graph."""
    found = []
    for n in loop_nodes(graph):
        if type(n.target) is Loop and any(isinstance(b, Node) for b in n.args[:2]):
            found.append(n)
        found += graph_bounded(n.target.body)
    return found


# ---------------------------------------------------------------- kernels
def lu_in_place(a):
    n = a.shape[0]
    for k in range(n):
        for i in range(k + 1, n):
            a[i, k] = a[i, k] / a[k, k]
            a[i, k + 1 :] = a[i, k + 1 :] - a[i, k] * a[k, k + 1 :]
    return a


def gram_schmidt(a):
    m, n = a.shape
    q = np.zeros_like(a)
    r = np.zeros((n, n))
    for j in range(n):
        v = a[:, j].copy()
        for i in range(j):
            r[i, j] = q[:, i] @ a[:, j]
            v = v - r[i, j] * q[:, i]
        r[j, j] = np.linalg.norm(v)
        q[:, j] = v / r[j, j]
    return q, r


def lower_sums(x):
    out = np.zeros_like(x)
    for i in range(x.shape[0]):
        acc = x[i] * 0
        for j in range(i):
            acc = acc + x[j]
        out[i] = acc
    return out


def three_deep(x):
    # range(j, i): both bounds from enclosing indices, three loops deep
    total = np.zeros_like(x)
    for i in range(x.shape[0]):
        for j in range(i):
            for k in range(j, i):
                total = total + x[k] * (i - j)
    return total


def backwards(x):
    out = x.copy()
    for i in range(x.shape[0]):
        for j in range(i, -1, -2):
            out[i] = out[i] * 0.5 + out[j]
    return out


def float32_nest(x):
    acc = np.zeros(x.shape[1], dtype=np.float32)
    for i in range(x.shape[0]):
        for j in range(i + 1):
            acc = acc + x[j] * np.float32(0.5)
    return acc


CAPTURED = [
    (cholesky, [(SPD,), (SPD5,)]),
    (lu_in_place, [(SPD.copy(),), (SPD5.copy(),)]),
    (gram_schmidt, [(TALL,), (TALL[:, :4].copy(),)]),
    (lower_sums, [(V,), (V[:6].copy(),)]),
    (three_deep, [(V,), (V[:5].copy(),)]),
    (backwards, [(V,), (V[:7].copy(),)]),
    (float32_nest, [(M.astype(np.float32),), (M[:6].astype(np.float32),)]),
]


@pytest.mark.parametrize("fn,calls", CAPTURED, ids=[f.__name__ for f, _ in CAPTURED])
def test_triangular_nest_is_a_loop_in_a_loop(fn, calls):
    out = ft.explain(fn)(*copy.deepcopy(calls[0]))
    assert out.graph_count == 1 and out.graph_break_count == 0, str(out)
    assert any(n.captured and n.iterations is None for n in out.loops), str(out)
    assert "bounds computed in the graph" in str(out)
    assert graph_bounded(out.graphs[0]), str(out.graphs[0])
    assert_same(out.result, fn(*copy.deepcopy(calls[0])))
    # first call, cache hit, another shape recompiles, first inputs again
    run_case(fn, calls, 1, [])


def test_graph_size_does_not_grow_with_the_matrix():
    def spd(n):
        m = RNG.standard_normal((n, n))
        return m @ m.T + n * np.eye(n)

    small = ft.explain(cholesky)(spd(12))
    large = ft.explain(cholesky)(spd(40))
    assert small.ops_per_graph == large.ops_per_graph
    with config.patch(capture_loops=False):
        unrolled = ft.explain(cholesky)(SPD)
    assert sum(unrolled.ops_per_graph[0].values()) > 3 * sum(small.ops_per_graph[0].values())


def test_large_nests_stay_inside_the_trace_budget():
    # unrolled, a 100x100 nest records thousands of operations and gives up (FH015);
    # captured, it is the same few dozen operations as a small one
    m = RNG.standard_normal((100, 100))
    a = m @ m.T + 100 * np.eye(100)
    for fn, args in ((cholesky, (a,)), (gram_schmidt, (m,))):
        out = ft.explain(fn)(*args)
        assert out.graph_count == 1 and out.graph_break_count == 0, str(out)
        assert sum(out.ops_per_graph[0].values()) < config.max_traced_ops / 5, str(out)
        assert graph_bounded(out.graphs[0])
        assert_same(out.result, fn(*args))


def test_generated_code_is_a_nest_with_variable_bounds():
    out = ft.explain(lower_sums)(V)
    code = out.graphs[0].python_code()
    assert code.count("for ") == 2, code
    inner = [line.strip() for line in code.splitlines() if line.strip().startswith("for ")][1]
    assert inner.startswith("for j") and "range(0, i" in inner, code
    assert_same(out.graphs[0].forward(V), lower_sums(V))


def test_inner_loop_errors_surface_as_in_python():
    def reads_past_the_end(x):
        acc = x[0] * 0
        for i in range(x.shape[0]):
            for j in range(i + 3):
                acc = acc + x[j]  # j reaches len(x) in the last outer iterations
        return acc

    with pytest.raises(IndexError):
        reads_past_the_end(V)
    check_agrees(reads_past_the_end, (V,), (V[:2].copy(),))
    ok = V[:1].copy()  # one outer iteration: j < 3 reads past the end at once
    check_agrees(reads_past_the_end, (ok,))


def _warned(fn, args):
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        try:
            result = ("return", fn(*args))
        except Exception as e:  # the exception is compared too
            result = ("raise", (type(e), str(e)))
    return result, [(w.category, str(w.message), w.lineno) for w in caught]


def test_warnings_inside_the_nest_match_plain_python():
    def divides(x):
        out = np.zeros_like(x)
        for i in range(x.shape[0]):
            for j in range(i):
                out[i] = out[i] + x[j] / (x[i] - x[i])  # 0/0 and x/0: RuntimeWarnings
        return out

    x = np.arange(6.0)
    want = _warned(divides, (x.copy(),))
    opt = ft.optimize("eager")(divides)
    for _ in range(2):  # the compiling call, then a cache hit
        got = _warned(opt, (x.copy(),))
        assert got[1] == want[1]
        assert_same(got[0][1], want[0][1])


def test_zero_and_negative_trip_counts():
    def shifted(x):
        acc = np.zeros_like(x)
        for i in range(x.shape[0]):
            for j in range(i - 4):  # no iterations while i < 5
                acc = acc + x[j]
            for j in range(i, i - 3, -1):  # three iterations each time
                acc = acc * 0.5 + x[j]
        return acc

    out = ft.explain(shifted)(V)
    assert out.graph_break_count == 0 and len(graph_bounded(out.graphs[0])) == 2, str(out)
    check_agrees(shifted, (V,), (V[:3].copy(),))


def test_index_read_after_the_inner_loop_unrolls_the_outer():
    def last_index(x):
        acc = np.zeros_like(x)
        for i in range(x.shape[0]):
            j = 0
            for j in range(i):
                acc = acc + x[j]
            acc = acc + j  # the inner loop variable after the loop
        return acc

    out = ft.explain(last_index)(V)
    assert any("is read after the loop" in n.reason for n in out.loops), str(out)
    assert not graph_bounded(out.graphs[0])
    check_agrees(last_index, (V,))


def test_temporaries_of_one_iteration_are_not_carried():
    def temp(x):
        out = np.zeros_like(x)
        for i in range(x.shape[0]):
            for j in range(i):
                t = x[: j + 1].sum()  # a new length every iteration, dead at the loop head
                out[i] = out[i] + t
        return out

    out = ft.explain(temp)(V)
    assert graph_bounded(out.graphs[0]), str(out)
    check_agrees(temp, (V,))


def test_nest_with_the_interpreter_and_numexpr_backends():
    def interpreted(graph, example_inputs):
        return lambda *a: Interpreter(graph).run(*a)

    opt = ft.optimize(backend=interpreted)(gram_schmidt)
    assert_same(opt(TALL), gram_schmidt(TALL))
    pytest.importorskip("numexpr")
    q, r = ft.optimize("numexpr")(gram_schmidt)(TALL)
    want_q, want_r = gram_schmidt(TALL)
    np.testing.assert_allclose(q, want_q, rtol=1e-12)
    np.testing.assert_allclose(r, want_r, rtol=1e-12)


def test_debug_dump_of_a_nest_is_runnable(tmp_path):
    from framehook.translator import debug

    ft.optimize("eager")(lower_sums)(V)
    written = debug.dump(lower_sums, tmp_path)
    graphs = [p for p in written if "graph" in str(p) and str(p).endswith(".py")]
    assert graphs
    assert_same(debug.load_graph(graphs[0])(V), lower_sums(V))


def test_range_of_an_index_outside_a_loop_body_is_unchanged():
    # not inside a loop being captured: range() needs its bound now, as before
    def f(x, n):
        for i in range(n):
            x = x + i
        return x

    check_agrees(f, (V, 5))
    out = ft.explain(f)(V, 5)
    assert out.graph_break_count == 0 and not graph_bounded(out.graphs[0])


# ---------------------------------------------------------------- the IR
def test_loop_node_with_graph_bounds_runs_and_prints():
    body = Graph("body")
    j = body.placeholder("j", ScalarMeta(int))
    acc = body.placeholder("acc")
    body.output((body.call(np.add, (acc, j)),))
    inner = Loop(body, 1)
    outer = Graph("outer")
    a = outer.placeholder("a")
    n = outer.placeholder("n", ScalarMeta(int))
    stop = outer.call(__import__("operator").add, (n, 2), meta=ScalarMeta(int))
    node = outer.call(inner, (1, stop, 1, (a,), ()))
    outer.output(outer.call(__import__("operator").getitem, (node, 0)))
    code = outer.python_code()
    assert "in range(1, add, 1):" in code, code
    want = np.zeros(2) + sum(range(1, 5))
    assert_same(outer.forward(np.zeros(2), 3), want)
    assert_same(Interpreter(outer).run(np.zeros(2), 3), want)
    assert "add" in node.format()


# ---------------------------------------------------------------- nests at their first iteration
def first_changes(x):
    acc = 0
    for i in range(x.shape[0]):
        for j in range(3):
            acc = acc + x[i] * j  # an int before the first iteration, an array after
    return acc


def test_nest_is_captured_at_its_first_iteration():
    out = ft.explain(lower_sums)(V)
    outer = [n for n in out.loops if n.captured and n.iterations is not None]
    assert [n.iterations for n in outer] == [V.shape[0]], str(out)  # all of them: none traced straight
    with config.patch(capture_loops=False):
        unrolled = ft.explain(lower_sums)(V)
    assert sum(out.ops_per_graph[0].values()) < sum(unrolled.ops_per_graph[0].values()) / 3


def test_nest_whose_first_iteration_changes_a_type_is_captured_at_the_second():
    x = RNG.standard_normal((9, 4))
    out = ft.explain(first_changes)(x)
    assert out.graph_count == 1 and out.graph_break_count == 0, str(out)
    assert [n.iterations for n in out.loops if n.captured and n.iterations and n.iterations > 3] == [8], str(out)
    assert_same(out.result, first_changes(x))
    run_case(first_changes, [(x,), (x[:6].copy(),)], 1, [])
