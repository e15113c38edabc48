"""``while`` loops whose condition the graph computes (``while err > tol:``) captured as a
while-loop node (symbolic/loops.py ``capture_while``, graph/loop.py ``WhileLoop``): the
condition is tested each time round inside the generated code; results, dtypes,
exceptions, warnings and argument mutation agree with the plain function on the first
call, a cache hit and a recompilation; a loop that cannot be captured breaks (FH002) and
runs in Python as before."""

from __future__ import annotations

import copy
import linecache
import warnings

import numpy as np
import pytest

import framehook.translator as ft
from framehook.translator import config
from framehook.translator.graph import Graph, Interpreter, ScalarMeta, WhileLoop
from corpus_helpers import run_case
from loop_kernels import jacobi_until
from symbolic_helpers import assert_same, check_agrees

RNG = np.random.default_rng(21)
DIAG = np.diag(np.full(8, 20.0)) + RNG.standard_normal((8, 8))
B = RNG.standard_normal(8)


pytestmark = pytest.mark.usefixtures("fresh_translator")


def while_nodes(graph):
    found = []
    for n in graph.operations():
        body = getattr(n.target, "body", None)
        if type(n.target) is WhileLoop:
            found.append(n)
        if isinstance(body, Graph):
            found += while_nodes(body)
    return found


# ---------------------------------------------------------------- captured
def never_runs(x, tol):
    err = np.abs(x).max()
    while err < tol:  # false at once for these inputs
        x = x * 2
        err = np.abs(x).max()
    return x, err


def halve_until_small(x):
    while np.abs(x).sum() > 1.0:  # the condition is the whole expression
        x = x * 0.5
    return x


def not_converged(x):
    done = np.all(x < 1)
    while not done:
        x = x / 3
        done = np.all(x < 1)
    return x


def in_place(x, tol):
    while x.max() > tol:  # mutates its argument, as the plain loop does
        x *= 0.5
    return x


def search(x, limit):
    k = 0
    while x[k] < limit:  # the index is a carried graph int
        k += 1
    return k


def newton_sqrt(a):
    y = a.copy()
    while np.max(np.abs(y * y - a)) > 1e-12 * np.max(a):
        y = 0.5 * (y + a / y)
    return y


def until_small(x):
    while True:  # the exit is a break in the middle: the same loop, rotated
        x = x * 0.5
        if x.sum() < 1:
            break
    return x


def with_inner_nest(x):
    k = 0
    while x.sum() > 1:
        x = x * 0.5
        k += 1
        for j in range(k):  # bounds from the carried counter: a loop node inside
            x[0] = x[0] + 0.001 * j
    return x, k


def both_tests(x, tol):
    # ``and``: the second test is an exit in the middle of the body (3.12+ copy both tests
    # to the bottom of the loop)
    err = np.abs(x).max()
    k = 0
    while err > tol and k < 30:
        x = x * 0.5
        err = np.abs(x).max()
        k += 1
    return x, k


def both_arrays(x, tol):
    err = np.abs(x).max()
    total = x.sum()
    while err > tol and total > 0.1:
        x = x * 0.5
        err = np.abs(x).max()
        total = x.sum()
    return x, total


def either_test(x, tol):
    k = 0
    while not (np.abs(x).max() <= tol or k >= 30):
        x = x * 0.5
        k += 1
    return x, k


def breaks_on_count(x, tol):
    k = 0
    while x.max() > tol:
        x = x * 0.5
        k += 1
        if k > 3:
            break  # the rest (the next test) runs only when the loop goes on
    return x, k


def break_then_more(x, tol):
    while x.max() > tol:
        x = x * 0.5
        if x.min() < 0.01:
            break
        x = x + 0.001  # skipped by the iteration that breaks
    return x


CAPTURED = [
    (both_tests, [(B * 40, 0.01), (np.arange(12.0), 1e-30)]),
    (both_arrays, [(np.abs(B) * 40, 0.01), (np.arange(12.0), 1e-3)]),
    (either_test, [(B * 40, 0.01), (np.arange(12.0), 1e-30)]),
    (breaks_on_count, [(np.arange(40.0), 1.0), (np.arange(12.0), 1e-9)]),
    (break_then_more, [(np.arange(1.0, 41.0), 0.05), (np.arange(1.0, 13.0), 1e-3)]),
    (until_small, [(B * 40,), (np.arange(12.0),)]),
    (with_inner_nest, [(np.abs(B) * 40,), (np.arange(12.0),)]),
    (jacobi_until, [(DIAG, B), (DIAG[:5, :5].copy(), B[:5].copy())]),
    (never_runs, [(B, 0.5), (B.astype(np.float32), 0.5)]),
    (halve_until_small, [(B * 40,), (np.arange(12.0),)]),
    (not_converged, [(np.abs(B) * 50,), (np.arange(20.0),)]),
    (in_place, [(np.abs(B) * 9, 1.0), (np.arange(12.0), 2.0)]),
    (search, [(np.arange(10.0), 6.5), (np.arange(10, dtype=np.int64), 3)]),
    (newton_sqrt, [(np.abs(B) + 1,), (np.arange(1.0, 6.0),)]),
]


@pytest.mark.parametrize("fn,calls", CAPTURED, ids=[f.__name__ for f, _ in CAPTURED])
def test_while_with_a_graph_condition_is_one_node(fn, calls):
    out = ft.explain(fn)(*copy.deepcopy(calls[0]))
    assert out.graph_count == 1 and out.graph_break_count == 0, str(out)
    assert [n.kind for n in out.loops if n.captured].count("while") == 1, str(out)
    assert "captured as one loop (condition computed in the graph)" in str(out)
    assert len(while_nodes(out.graphs[0])) == 1, str(out.graphs[0])
    assert_same(out.result, fn(*copy.deepcopy(calls[0])))
    run_case(fn, calls, 1, [])


def test_second_exits_agree_whichever_test_stops_the_loop():
    x = np.abs(B) * 40
    check_agrees(both_tests, (x, 0.01), (x, 0.01), (x, 1e-30), (x, 1e3), (x * 0, 0.5), (x.astype(np.float32), 0.01))
    check_agrees(both_arrays, (x, 0.01), (x, 0.01), (x, 1e-30), (-x, 0.01), (x * 1e-4, 1e-9))
    check_agrees(either_test, (x, 0.01), (x, 1e-30), (x, 1e3))
    check_agrees(breaks_on_count, (x, 1.0), (x, 1e9), (x, 1e-9))
    check_agrees(break_then_more, (x, 0.05), (x, 1e9), (x, -1.0), (x * 1e-3, 0.0))


def three_tests(x, lo, hi):
    s = x.sum()
    while s > lo and s < hi and x.min() > 0:
        x = x * 0.9
        s = x.sum()
    return x, s


def test_a_third_exit_is_not_captured_and_says_so():
    out = ft.explain(three_tests)(np.arange(1.0, 6.0), 1.0, 100.0)
    assert any(b.code == "FH002" and "a while loop not captured" in b.reason for b in out.break_reasons), str(out)
    assert "third exit" in str(out)
    check_agrees(three_tests, (np.arange(1.0, 6.0), 1.0, 100.0), (np.arange(1.0, 6.0), 100.0, 200.0))


def test_counter_comes_back_a_python_int():
    got = ft.optimize("eager")(jacobi_until)(DIAG, B)
    want = jacobi_until(DIAG, B)
    assert type(got[1]) is int and got[1] == want[1] > 3
    assert_same(got, want)


def test_generated_code_tests_the_condition_each_time_round():
    out = ft.explain(halve_until_small)(B * 40)
    code = out.graphs[0].python_code()
    assert code.count("while ") == 1 and "for " not in code, code
    out = ft.explain(not_converged)(np.arange(20.0))
    assert "while not " in out.graphs[0].python_code()


def test_while_inside_a_captured_for_loop():
    def steps(x, n):
        for _ in range(n):
            x = x + 1.0
            while x.sum() > 10:
                x = x * 0.5
        return x

    out = ft.explain(steps)(B, 12)
    assert out.graph_break_count == 0, str(out)
    assert any(n.kind == "for" and n.captured for n in out.loops), str(out)
    assert while_nodes(out.graphs[0]), str(out)
    check_agrees(steps, (B, 12), (B * 3, 7))


def test_condition_errors_and_warnings_match_plain_python():
    def ambiguous_later(x):
        s = x.sum(keepdims=True).reshape(())
        while s > 1:
            s = s * x[:2] * 0  # the next condition is a 2-element array: ValueError
        return s

    x = np.arange(1.0, 5.0)
    with pytest.raises(ValueError):
        ambiguous_later(x)
    check_agrees(ambiguous_later, (x,))

    def warns(x):
        v = x.sum()
        while v > 1e-300:
            v = v / (x[0] - x[0]) * 0 + v * 1e-100  # 0/0: RuntimeWarning each iteration
        return v

    def run(fn):
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            result = fn(np.arange(3.0))
        return result, [(w.category, str(w.message), w.lineno) for w in caught]

    want = run(warns)
    opt = ft.optimize("eager")(warns)
    for _ in range(2):  # compiling call, cache hit
        got = run(opt)
        assert got[1] == want[1] and got[1]
        assert_same(got[0], want[0])


def test_body_errors_surface_as_in_python():
    check_agrees(search, (np.arange(5.0), 99.0))  # IndexError after five iterations


def test_interpreter_and_numexpr_backends_run_a_while_node():
    def interpreted(graph, example_inputs):
        return lambda *a: Interpreter(graph).run(*a)

    opt = ft.optimize(backend=interpreted)(jacobi_until)
    assert_same(opt(DIAG, B), jacobi_until(DIAG, B))
    pytest.importorskip("numexpr")
    got = ft.optimize("numexpr")(halve_until_small)(B * 40)
    np.testing.assert_allclose(got, halve_until_small(B * 40), rtol=1e-12)


def test_debug_dump_of_a_while_loop_is_runnable(tmp_path):
    from framehook.translator import debug

    ft.optimize("eager")(halve_until_small)(B * 40)
    written = debug.dump(halve_until_small, tmp_path)
    graphs = [p for p in written if "graph" in str(p) and str(p).endswith(".py")]
    assert graphs
    assert_same(debug.load_graph(graphs[0])(B * 40), halve_until_small(B * 40))


# ---------------------------------------------------------------- not captured
def prints(x):
    x = x + 1  # a graph before the loop, a resumed one after it
    while x.max() > 1:
        x = x * 0.5
        print("step")  # the body breaks (FH005)
    return x * 2


def grows(x):
    while x.sum() < 50:
        x = np.append(x, 1.0)  # a new shape every iteration
    return x


@pytest.mark.parametrize(
    "fn,args,why",
    [
        (prints, (np.arange(5.0),), "FH005"),
        (grows, (np.ones(3),), "changes from"),
    ],
    ids=["body_breaks", "grows"],
)
def test_uncapturable_while_breaks_as_before(fn, args, why, capsys):
    out = ft.explain(fn)(*copy.deepcopy(args))
    first = out.break_reasons[0]
    assert first.code == "FH002" and "a while loop not captured" in first.reason and why in first.reason, str(out)
    assert linecache.getline(first.filename, first.lineno).strip().startswith("while "), str(out)
    assert not any(while_nodes(g) for g in out.graphs)
    check_agrees(fn, copy.deepcopy(args))


def test_capture_can_be_turned_off():
    with config.patch(capture_loops=False):
        out = ft.explain(halve_until_small)(B * 40)
        check_agrees(halve_until_small, (B * 40,))
    assert [b.code for b in out.break_reasons][:1] == ["FH002"] and not out.loops, str(out)


def test_if_on_an_array_is_not_a_loop():
    def branch(x):
        for _ in range(5):
            if x.sum() > 0:  # both sides stay in the for loop: a branch, FH002 as before
                x = x - 1
        return x

    out = ft.explain(branch)(B)
    assert not [n for n in out.loops if n.kind == "while"], str(out)
    check_agrees(branch, (B,))


# ---------------------------------------------------------------- the IR
def test_while_loop_ir_validates_and_runs():
    body = Graph("body")
    body.placeholder("c", ScalarMeta(bool))
    x = body.placeholder("x")
    half = body.call(np.multiply, (x, 0.5))
    body.output((half, body.call(np.greater, (body.call(np.sum, (half,)), 1.0))))
    loop = WhileLoop(body, 1)
    assert loop.carried == [x] and loop.invariants == [] and loop.impure
    (result,) = loop(True, (np.full(2, 4.0),), ())
    assert_same(result, np.full(2, 0.5))
    (result,) = WhileLoop(body, 1, repeat_when=False)(True, (np.full(2, 4.0),), ())
    assert_same(result, np.full(2, 4.0))
    with pytest.raises(ValueError, match="condition"):
        WhileLoop(body, 2)
    with pytest.raises(TypeError, match="repeat_when"):
        WhileLoop(body, 1, repeat_when=1)
    outer = Graph("outer")
    a = outer.placeholder("a")
    start = outer.call(np.greater, (outer.call(np.sum, (a,)), 1.0))
    node = outer.call(loop, (start, (a,), ()))
    outer.output(outer.call(__import__("operator").getitem, (node, 0)))
    assert "while c:" in outer.python_code()
    assert_same(outer.forward(np.full(2, 4.0)), np.full(2, 0.5))
    assert_same(Interpreter(outer).run(np.full(2, 4.0)), np.full(2, 0.5))
    assert "while_loop" in str(outer)
