"""``for`` loops that break on a graph value (``if err < tol: break``, at the end of the body
or followed by more of it) captured as loop nodes that exit early; the other shapes of break still unroll
(or run in Python), with the reason. Every call is compared with plain execution (values,
dtypes, exceptions, warnings, mutation of the arguments) on the first call, a cache hit and
a recompilation."""

from __future__ import annotations

import warnings

import numpy as np
import pytest

import framehook.translator as ft
from framehook.translator.graph.evaluate import Interpreter
from symbolic_helpers import assert_same, check_agrees, loop_nodes


pytestmark = pytest.mark.usefixtures("fresh_translator")


def halve_until(x, tol):
    for _ in range(100):
        x = x * 0.5
        err = np.abs(x).max()
        if err < tol:
            break
    return x


def shrink_while_large(x, tol):
    total = x.sum() * 0.0
    for _ in range(50):
        x = x - 0.1 * x
        total = total + x.sum()
        if not (x.max() > tol):
            break
    return x, total


def fill_until(out, a, limit):
    acc = a[0] * 0.0
    for i in range(out.shape[0]):
        acc = acc + a[i]
        out[i] = acc
        if acc > limit:
            break
    return out


def index_stop(x):
    for i in range(10):
        x = x + i
        if i == 6:
            break
    return x


def with_else(x):
    for _ in range(10):
        x = x * 2.0
        if x.sum() > 100:
            break
    else:
        x = -x
    return x


def index_after(x, tol):
    for i in range(20):
        x = x * 0.5
        if x.max() < tol:
            break
    return x, i


def body_after_break(x, tol):
    for _ in range(20):
        if x.max() < tol:
            break
        x = x * 0.5
    return x


def breaks_first(x):
    for i in range(10):
        if i == 6:
            break
        x = x + i
    return x


def counts_after_break(x, tol):
    k = 0
    for _ in range(30):
        r = x.sum()
        if r < tol:
            break
        x = x * 0.5  # the rest of the body runs only when the loop goes on
        k += 1
    return x, k


def reads_after_break(x, idx, tol):
    for k in range(6):
        if x.sum() > tol:
            break
        x = x + x[idx + k]  # an IndexError once idx + k passes the end, after the test
    return x


def divides(x, d):
    for k in range(6):
        x = x / (d - k)  # d == k: a division by zero warns, as in plain code
        if np.abs(x).max() > 1e3:
            break
    return x


def reads(x, idx):
    for k in range(6):
        x = x + x[idx + k]  # an IndexError once idx + k passes the end
        if x.sum() > 1e6:
            break
    return x


V = np.linspace(1.0, 2.0, 5)


def explained(fn, *args):
    out = ft.explain(fn)(*args)
    assert_same(out.result, fn(*args))
    return out


CAPTURED = [
    (halve_until, (V, 1e-3)),
    (shrink_while_large, (V, 0.5)),
    (fill_until, (np.zeros(6), V, 3.5)),
    (index_stop, (V,)),
    (body_after_break, (V, 1e-3)),
    (breaks_first, (V,)),
    (counts_after_break, (V, 1e-3)),
    (reads_after_break, (np.linspace(1.0, 2.0, 12), 0, 1e3)),
]


@pytest.mark.parametrize("fn,args", CAPTURED, ids=[f.__name__ for f, _ in CAPTURED])
def test_captured_as_a_loop_that_exits(fn, args):
    out = explained(fn, *args)
    assert out.graph_count == 1 and out.graph_break_count == 0, str(out)
    assert [note.captured for note in out.loops] == [True], str(out)
    loops = loop_nodes(out.graphs[0])
    assert len(loops) == 1 and loops[0].target.exits


def test_first_call_cache_hit_and_recompilation_agree():
    opt = check_agrees(
        halve_until,
        (V, 1e-3),
        (V, 1e-3),
        (V, 10.0),
        (V, 1e-40),
        (V * 4, 0.25),
        (np.linspace(0, 1, 7), 1e-3),
        (V.astype(np.float32), 1e-3),
    )
    check_agrees(
        fill_until,
        (np.zeros(6), V, 3.5),
        (np.zeros(6), V, 3.5),
        (np.zeros(6), V, 100.0),
        (np.zeros(6), V, -1.0),
        (np.zeros(4), V[:4], 2.5),
    )
    check_agrees(shrink_while_large, (V, 0.5), (V, 0.5), (V, 5.0), (V * 0, 0.5))
    check_agrees(index_stop, (V,), (V,), (np.arange(3),))
    check_agrees(body_after_break, (V, 1e-3), (V, 1e-3), (V, 10.0), (V, -1.0), (V.astype(np.float32), 1e-3))
    check_agrees(breaks_first, (V,), (V,), (np.arange(3),))
    check_agrees(counts_after_break, (V, 1e-3), (V, 1e-3), (V, 100.0), (V, -1.0), (np.arange(4.0), 0.5))
    check_agrees(reads_after_break, (V, 0, 1e3), (V, 0, 1e3), (V, 3, 1e3), (V, 3, 0.0), (V, 0, 8.0))
    assert opt(V, 1e-3).dtype == np.float64


def test_errors_and_warnings_surface_as_in_python():
    check_agrees(reads, (V, 0), (V, 3), (V, 0))  # 3: IndexError at the third iteration

    def run(fn, *args):
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            result = fn(*args)
        return result, [(w.category, str(w.message)) for w in caught]

    opt = ft.optimize("eager")(divides)
    for d in (2, 2, 9, 3):
        want, got = run(divides, V.copy(), d), run(opt, V.copy(), d)
        assert got[1] == want[1] and (d == 9 or got[1]), (d, got[1], want[1])
        assert_same(got[0], want[0])


@pytest.mark.parametrize(
    "fn,args,why",
    [
        (with_else, (V,), "a for-else"),
        # 3.12+: after the loop ``i`` may be unbound (LOAD_FAST_CHECK), after the break not
        (index_after, (V, 1e-3), ("read after a loop that may break", "not the code after the loop")),
    ],
    ids=["with_else", "index_after"],
)
def test_other_breaks_are_not_captured_and_agree(fn, args, why):
    out = explained(fn, *args)
    assert not any(loop_nodes(g) for g in out.graphs), str(out)
    # the branch breaks (FH002) as before, and says why its loop was not captured
    assert [b.code for b in out.break_reasons] == ["FH002"], str(out)
    reason = out.break_reasons[0].reason
    assert "a for loop not captured: " in reason and any(w in reason for w in (why if type(why) is tuple else (why,)))
    check_agrees(fn, args, args)


def returns_inside(x, tol):
    for _ in range(20):
        x = x * 0.5
        if np.abs(x).max() < tol:
            return x
    return x + 100


def test_a_return_inside_the_loop_says_why():
    out = explained(returns_inside, V, 1e-3)
    assert [b.code for b in out.break_reasons] == ["FH002"], str(out)
    assert "a return inside the loop on a graph value" in out.break_reasons[0].reason, str(out)
    check_agrees(returns_inside, (V, 1e-3), (V, 1e-3), (V, 10.0), (V, 1e-40))


def test_graph_interpreter_runs_the_exit():
    def interpreted(graph, example_inputs):
        return lambda *a: Interpreter(graph).run(*a)

    for tol in (1e-3, 10.0, 1e-40):
        assert_same(ft.optimize(backend=interpreted)(halve_until)(V, tol), halve_until(V, tol))
    out = np.zeros(6)
    got = ft.optimize(backend=interpreted)(fill_until)(out, V, 3.5)
    assert_same(got, fill_until(np.zeros(6), V, 3.5))


def row_sums_until(a, tol):
    n = a.shape[0]
    out = np.zeros(n)
    for i in range(n):
        s = a[i, 0] * 0.0
        for j in range(i):  # bounds from the enclosing index: a loop node inside a loop node
            s = s + a[i, j]
            if s > tol:
                break
        out[i] = s
    return out


def test_inner_loop_of_a_nest_exits():
    a = np.arange(36.0).reshape(6, 6)
    out = explained(row_sums_until, a, 7.0)
    assert out.graph_count == 1 and out.graph_break_count == 0, str(out)
    assert [note.captured for note in out.loops] == [True, True], str(out)
    check_agrees(row_sums_until, (a, 7.0), (a, 7.0), (a, 1e9), (a, -1.0), (a[:4, :4].copy(), 7.0))
