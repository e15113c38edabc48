"""Loops over ranges captured as one loop in the graph (symbolic/loops.py, graph/loop.py):
results agree exactly with the plain function, the graph does not grow with the number of
iterations, and every body that cannot be captured unrolls with its reason reported."""

from __future__ import annotations

import numpy as np
import pytest

import framehook.translator as ft
from framehook.translator import config
from framehook.translator.graph import Graph, Interpreter, Loop, ScalarMeta
from symbolic_helpers import assert_same, check_agrees, loop_nodes
from loop_kernels import jacobi

RNG = np.random.default_rng(7)
U = RNG.standard_normal((12, 12))
V1 = RNG.standard_normal(16)


pytestmark = pytest.mark.usefixtures("fresh_translator")


# ---------------------------------------------------------------- captured loops
def uses_index(x, n=10):
    acc = np.zeros_like(x)
    for i in range(n):
        acc = acc + x * i - (i % 3)
    return acc


def fill_rows(x):
    out = np.zeros_like(x)
    for i in range(x.shape[0]):
        out[i] = x[i] * i + x[i - 1]
    return out


def nested(x):
    for i in range(6):
        for j in range(5):
            x = x * 0.9 + j - i
    return x


def two_carried(p, v, dt=0.01, steps=20):
    for _ in range(steps):
        a = -p
        v = v + dt * a
        p = p + dt * v
    return p, v


def tuple_state(x):
    state = (x, x * 2)
    for _ in range(8):
        a, b = state
        state = (b * 0.5, a + b)
    return state


def invariant_closure(x, k):
    def step(y):
        return np.tanh(y @ k)

    for _ in range(9):
        x = step(x)
    return x


def stepped_range(x):
    for i in range(20, 2, -3):
        x = x + i
    return x


def scalar_carried(x, t):
    for _ in range(7):
        t = t * 1.5
        x = x + t
    return x, t


CAPTURED = [
    (jacobi, (U, 50)),
    (uses_index, (V1,)),
    (fill_rows, (U,)),
    (nested, (V1,)),
    (two_carried, (V1, V1[::-1].copy())),
    (tuple_state, (V1,)),
    (invariant_closure, (U[:3], U[:, :12] / 10)),
    (stepped_range, (V1,)),
    (scalar_carried, (V1, 0.5)),
]


@pytest.mark.parametrize("fn,args", CAPTURED, ids=[f.__name__ for f, _ in CAPTURED])
def test_captured_loop_agrees_and_is_one_loop(fn, args):
    out = ft.explain(fn)(*args)
    assert out.graph_count == 1 and out.graph_break_count == 0, str(out)
    assert out.loops and all(n.captured for n in out.loops), str(out)
    assert loop_nodes(out.graphs[0]), str(out)
    assert_same(out.result, fn(*args))
    check_agrees(fn, args)


def test_graph_size_and_trace_do_not_grow_with_the_steps():
    small = ft.explain(jacobi)(U, 10)
    large = ft.explain(jacobi)(U, 1000)  # more than config.max_unrolled_iterations
    assert large.graph_break_count == 0
    assert small.ops_per_graph == large.ops_per_graph
    assert len(large.graphs[0].python_code().splitlines()) == len(small.graphs[0].python_code().splitlines())
    assert_same(large.result, jacobi(U, 1000))


def test_loop_code_is_a_python_for_loop():
    out = ft.explain(jacobi)(U, 30)
    code = out.graphs[0].python_code()
    assert code.count("for ") == 1 and "in range(1, 30, 1):" in code
    assert "graph jacobi_loop(" in str(out.graphs[0])  # the body is listed under its node
    assert out.ops_per_graph[0]["loop"] == 1
    assert "captured as one loop (29 iterations)" in str(out)


def test_cache_hit_and_recompilation_on_new_step_count():
    opt = ft.optimize("eager")(jacobi)
    for steps in (12, 12, 40):
        assert_same(opt(U, steps), jacobi(U, steps))
    for shape in ((6, 9), (6, 9)):
        u = RNG.standard_normal(shape)
        assert_same(opt(u, 12), jacobi(u, 12))


def test_loop_index_errors_surface_as_in_python():
    def f(x):
        out = 0.0
        for i in range(12):
            out = out + x[i]  # x has 10 rows: IndexError at i == 10, as in plain Python
        return out

    x = np.arange(10.0)
    with pytest.raises(IndexError):
        f(x)
    with pytest.raises(IndexError):
        ft.optimize("eager")(f)(x)


def test_captured_loop_with_the_interpreter_backend():
    def interpreted(graph, example_inputs):
        return lambda *a: Interpreter(graph).run(*a)

    opt = ft.optimize(backend=interpreted)(two_carried)
    assert_same(opt(V1, V1 * 2), two_carried(V1, V1 * 2))


def test_numexpr_backend_runs_captured_loops():
    pytest.importorskip("numexpr")
    opt = ft.optimize("numexpr")(uses_index)
    np.testing.assert_allclose(opt(V1), uses_index(V1), rtol=1e-12)


def test_debug_dump_of_a_captured_loop_is_runnable(tmp_path):
    from framehook.translator import debug

    opt = ft.optimize("eager")(jacobi)
    opt(U, 20)
    written = debug.dump(jacobi, tmp_path)
    graphs = [p for p in written if "graph" in str(p) and str(p).endswith(".py")]
    assert graphs
    forward = debug.load_graph(graphs[0])
    assert_same(forward(20, U) if "steps" in forward.__code__.co_varnames[:1] else forward(U), jacobi(U, 20))


# ---------------------------------------------------------------- loops that unroll
def grows(x):
    for _ in range(6):
        x = np.concatenate([x, x[:1]])
    return x


def changes_dtype(x):
    for _ in range(6):
        x = (x * 2).astype(np.float32) if x.dtype == np.float64 else x.astype(np.float64)
    return x


def appends(x):
    parts = []
    for i in range(6):
        parts.append(x * i)
    return np.stack(parts)


def python_counter(x):
    k = 0
    for _ in range(6):
        k += 1
        x = x + k
    return x


def python_counter_to_string(x):
    label = ""
    for _ in range(6):
        label = label + "a"  # a str that changes each iteration: not a number to carry
        x = x + len(label)
    return x


def reassigns_index(x):
    for i in range(8):
        i = i * 2
        x = x + i
    return x


def over_arrays(x):
    for w in [x, x * 2, x * 3, x * 4, x * 5, x * 6]:
        x = x + w
    return x


def branch_on_index(x):
    for i in range(8):
        if i % 2:
            x = x + 1
        else:
            x = x * 0.5
    return x


UNROLLED = [
    (grows, (V1,), "changes from"),
    (changes_dtype, (V1,), "changes from"),
    (appends, (V1,), "made before the loop"),
    (python_counter_to_string, (V1,), "'label'"),
    (reassigns_index, (V1,), "reassigns the loop variable"),
    (over_arrays, (V1,), "range of ints"),
    (branch_on_index, (V1,), "FH"),
]


@pytest.mark.parametrize("fn,args,why", UNROLLED, ids=[f.__name__ for f, _, _ in UNROLLED])
def test_uncapturable_loop_unrolls_with_a_reason(fn, args, why):
    out = ft.explain(fn)(*args)
    assert out.graph_count == 1 and out.graph_break_count == 0, str(out)
    assert out.loops and not out.loops[0].captured and why in out.loops[0].reason, str(out)
    assert "unrolled (" in str(out)
    assert not loop_nodes(out.graphs[0])
    check_agrees(fn, args)


def time_stepping(u, steps, dt):
    t = 0.0
    k = 0
    for _ in range(steps):
        u = u + dt * (np.roll(u, 1) - 2 * u + np.roll(u, -1)) * t
        t += dt  # Python numbers the body changes: carried through the loop
        k += 1
    return u, t, k, np.zeros(k % 5)  # t and k are plain Python numbers again after it


def data_dependent_scale(x, n):
    s = 1.0
    for i in range(n):
        x = x * 0.5
        s = s * 0.5 + 0.25  # two operations: s comes out of the graph, not folded here
        x = x + s
    return x, s


@pytest.mark.parametrize(
    "fn,args",
    [(python_counter, (V1,)), (time_stepping, (np.linspace(0, 1, 16), 40, 0.01)), (data_dependent_scale, (V1, 9))],
)
def test_python_numbers_the_body_changes_are_carried(fn, args):
    out = ft.explain(fn)(*args)
    assert out.loops and out.loops[0].captured, str(out)
    assert out.graph_count == 1 and out.graph_break_count == 0, str(out)
    assert len(loop_nodes(out.graphs[0])) == 1
    opt = check_agrees(fn, args, args)
    result = opt(*args)
    plain = fn(*args)
    # the counters come back as the same Python numbers, bit for bit
    for got, want in zip(
        result if isinstance(result, tuple) else (result,), plain if isinstance(plain, tuple) else (plain,)
    ):
        assert type(got) is type(want)


def test_return_inside_the_loop_unrolls():
    def f(x):
        for i in range(10):
            x = x + i
            if i == 7:
                return x * 2
        return x

    out = ft.explain(f)(V1)
    assert not out.loops[0].captured
    check_agrees(f, (V1,))


def test_loop_capture_can_be_turned_off_and_has_a_threshold():
    with config.patch(capture_loops=False):
        out = ft.explain(jacobi)(U, 20)
    assert not out.loops and not loop_nodes(out.graphs[0])
    with config.patch(min_captured_loop_iterations=30):
        out = ft.explain(jacobi)(U, 20)  # 19 left after the first: below the threshold
    assert not out.loops and not loop_nodes(out.graphs[0])
    with config.patch(min_captured_loop_iterations=19):
        out = ft.explain(jacobi)(U, 20)
    assert out.loops[0].captured
    with pytest.raises(ValueError, match="min_captured_loop_iterations"):
        config.min_captured_loop_iterations = 0


def test_break_after_a_captured_loop_resumes():
    def f(x):
        for _ in range(10):
            x = x * 0.5 + 1
        print("done")
        return x + 1

    out = ft.explain(f)(V1)
    assert [b.code for b in out.break_reasons] == ["FH003"] or out.graph_break_count == 1
    assert any(n.captured for n in out.loops)
    check_agrees(f, (V1,))


# ---------------------------------------------------------------- the IR
def test_loop_ir_validates_and_runs():
    body = Graph("body")
    i = body.placeholder("i", ScalarMeta(int))
    x = body.placeholder("x")
    body.output((body.call(np.add, (x, i)),))
    loop = Loop(body, 1)
    assert loop.index is i and loop.carried == [x] and loop.invariants == [] and not loop.impure
    (result,) = loop(0, 4, 1, (np.zeros(2),), ())
    assert_same(result, np.full(2, 6.0))
    with pytest.raises(ValueError, match="carried"):
        Loop(body, 3)
    no_out = Graph("b")
    no_out.placeholder("i")
    with pytest.raises(ValueError, match="output"):
        Loop(no_out, 0)
    bad = Graph("b")
    bad.placeholder("i")
    bad.placeholder("x")
    bad.output([1])
    with pytest.raises(ValueError, match="tuple"):
        Loop(bad, 1)
    outer = Graph("outer")
    a = outer.placeholder("a")
    node = outer.call(loop, (0, 3, 1, (a,), ()))
    outer.output(outer.call(__import__("operator").getitem, (node, 0)))
    assert "for i in range(0, 3, 1):" in outer.python_code()
    assert_same(outer.forward(np.ones(2)), np.full(2, 4.0))
    assert_same(Interpreter(outer).run(np.ones(2)), np.full(2, 4.0))
