"""Scalar accumulators in loop nests (``s = 0.0`` then ``s += a[i, k] * a[j, k]`` in an
inner loop, as Cholesky and LU are usually written): ``s`` is a Python number before the
inner loop and a numpy scalar after one iteration. It is carried widened
(symbolic/loops/widening.py): the nest is captured whole, and every value, dtype, Python type,
exception, warning and argument mutation agrees with plain Python, including inner loops
that run no iteration (where ``s`` stays the Python number); where the type left by the
loop would change what the code after it does, the outer loop unrolls as before."""

from __future__ import annotations

import copy
import warnings

import numpy as np
import pytest

import framehook.translator as ft
from corpus_helpers import run_case
from loop_kernels import cholesky_sums, lu_sums
from symbolic_helpers import assert_same, check_agrees, loop_nodes

RNG = np.random.default_rng(21)


def spd(n, dtype=np.float64):
    m = RNG.standard_normal((n, n))
    return (m @ m.T + n * np.eye(n)).astype(dtype)


pytestmark = pytest.mark.usefixtures("fresh_translator")


def nested_loops(graph):
    """Loop nodes inside loop nodes, at any depth."""
    return [inner for n in loop_nodes(graph) for inner in loop_nodes(n.target.body) + nested_loops(n.target.body)]


def dot_rows(a):
    out = np.zeros(a.shape[0])
    for i in range(a.shape[0]):
        s = 0.0
        for k in range(i):
            s = s + a[i, k] * a[k, i]
        out[i] = s
    return out


def int_start(x):
    out = np.zeros(x.shape[0], dtype=x.dtype)
    for i in range(x.shape[0]):
        s = 0  # int + x's dtype: int32 stays int32, float32 stays float32
        for k in range(i):
            s += x[k]
        out[i] = s
    return out


def running_total(a):
    # the accumulator of the outer loop takes the inner loop's two-typed sum
    total = 0.0
    for i in range(a.shape[0]):
        s = 0.0
        for k in range(i):
            s += a[i, k]
        total = total + s
    return total


def sum_left_behind(a):
    # the inner sum outlives the nest: its type depends on the last trip count
    s = 0.0
    for i in range(a.shape[0]):
        s = 0.0
        for k in range(i - 2):
            s += a[i, k]
    return s


def looks_at_the_type(a):
    out = np.zeros(a.shape[0])
    for i in range(a.shape[0]):
        s = 0.0
        for k in range(i):
            s += a[i, k]
        out[i] = 1.0 if type(s) is float else 2.0  # tells a zero-trip loop apart
    return out


def branches_on_the_type(a):
    # the first iteration adds twice as much while s is still a Python float
    out = np.zeros(a.shape[0])
    for i in range(a.shape[0]):
        s = 0.0
        for k in range(i):
            s = s + a[i, k] * (2 if type(s) is float else 1)
        out[i] = s
    return out


CAPTURED = [
    (cholesky_sums, [(spd(7),), (spd(4),)]),
    (lu_sums, [(spd(7),), (spd(5),)]),
    (dot_rows, [(spd(6),), (spd(3),)]),
    (int_start, [(np.arange(7, dtype=np.int32),), (np.arange(4, dtype=np.int32),)]),
    (int_start, [(np.linspace(0, 1, 6, dtype=np.float32),), (np.linspace(0, 1, 3, dtype=np.float32),)]),
    (running_total, [(spd(6),), (spd(3),)]),
]


@pytest.mark.parametrize("fn,calls", CAPTURED, ids=[f"{f.__name__}-{c[0][0].dtype}" for f, c in CAPTURED])
def test_accumulator_nest_is_captured_whole(fn, calls):
    out = ft.explain(fn)(*copy.deepcopy(calls[0]))
    assert out.graph_count == 1 and out.graph_break_count == 0, str(out)
    assert all(n.captured for n in out.loops), str(out)
    assert any(n.iterations is None for n in out.loops), str(out)
    assert nested_loops(out.graphs[0]), str(out.graphs[0])
    assert_same(out.result, fn(*copy.deepcopy(calls[0])))
    # first call, cache hit, another shape recompiles, first inputs again
    run_case(fn, calls, 1, [])


def test_zero_trip_inner_loops_leave_the_python_number():
    # row 0 (and, for the int-start case, the whole of a 1-row input) runs no inner iteration
    check_agrees(dot_rows, (spd(6),), (spd(2),), (spd(1),))
    check_agrees(running_total, (spd(6),), (spd(2),), (spd(1),))
    check_agrees(int_start, (np.arange(5),), (np.arange(2),), (np.arange(1),))
    check_agrees(cholesky_sums, (spd(6),), (spd(2),), (spd(1),), (spd(6, np.float32),))
    check_agrees(lu_sums, (spd(6),), (spd(2),), (-spd(3),))


def test_result_types_follow_plain_python():
    # a Python float while nothing was added, a numpy float64 after
    assert type(running_total(spd(1))) is float
    out = ft.optimize("eager")(running_total)
    for n in (6, 1, 2):
        a = spd(n)
        assert_same(out(a), running_total(a))


def test_sum_left_behind_by_the_nest():
    a = spd(6)
    out = ft.explain(sum_left_behind)(a)
    assert out.graph_break_count == 0, str(out)
    assert any("an inner loop leaves a Python number or a numpy scalar" in n.reason for n in out.loops), str(out)
    assert_same(out.result, sum_left_behind(a))
    check_agrees(sum_left_behind, (spd(6),), (spd(3),), (spd(2),))


def test_code_that_sees_the_type_after_the_loop_unrolls_the_outer():
    out = ft.explain(looks_at_the_type)(spd(5))
    assert out.graph_count == 1 and out.graph_break_count == 0, str(out)
    assert any("does not do the same with either" in n.reason for n in out.loops), str(out)
    assert not nested_loops(out.graphs[0]), str(out.graphs[0])
    check_agrees(looks_at_the_type, (spd(5),), (spd(3),))


def test_first_iteration_that_depends_on_the_type_is_not_widened():
    out = ft.explain(branches_on_the_type)(spd(5))
    assert any("first iteration does not do the same" in n.reason for n in out.loops), str(out)
    check_agrees(branches_on_the_type, (spd(5),), (spd(3),))


def test_top_level_while_loop_with_a_python_start_is_not_captured():
    # no enclosing loop body to check the code after it: the while loop stays in Python
    def halves(x, tol):
        s = 0.0
        k = 0
        while x[k] > tol:
            s = s + x[k]
            k += 1
        return s, type(s).__name__  # float when the loop runs no iteration

    x = np.array([4.0, 2.0, 1.0, 0.5, 0.0])
    out = ft.explain(halves)(x, 0.75)
    assert "may run no iteration" in str(out), str(out)
    check_agrees(halves, (x, 0.75), (x, 10.0), (x, 3.0))


def _warned(fn, args):
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        try:
            result = ("return", fn(*args))
        except Exception as e:  # the exception is compared too
            result = ("raise", (type(e), str(e)))
    return result, [(w.category, str(w.message)) for w in caught]


def test_warnings_and_exceptions_match_plain_python():
    def divides(a):
        out = np.zeros(a.shape[0])
        for i in range(a.shape[0]):
            s = 0.0
            for k in range(i):
                s += a[i, k] / a[k, k]  # 0/0: RuntimeWarning
            out[i] = np.sqrt(s)  # sqrt of a negative: RuntimeWarning
        return out

    def raises(a):
        out = np.zeros(a.shape[0])
        for i in range(a.shape[0]):
            s = 0.0
            for k in range(i):
                s += a[i, k + 2]  # IndexError past the last column
            out[i] = s
        return out

    a = np.array([[0.0, -1.0, 2.0], [-3.0, 0.0, 1.0], [1.0, -5.0, 0.0]])
    for fn in (divides, raises):
        want = _warned(fn, (a.copy(),))
        opt = ft.optimize("eager")(fn)
        for _ in range(2):  # the compiling call, then a cache hit
            got = _warned(opt, (a.copy(),))
            assert got[1] == want[1]
            assert got[0][0] == want[0][0]
            if want[0][0] == "raise":
                assert got[0][1] == want[0][1]
            else:
                assert_same(got[0][1], want[0][1])
