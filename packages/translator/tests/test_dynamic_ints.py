"""Automatic dynamic ints (``config.automatic_dynamic_ints``): an int input whose value changed
between compilations is guarded on its type only, so one cache entry serves every later
value, and where Python needs its value the trace breaks (FH011) instead of specializing.
Every call is compared with plain execution (values, dtypes, exceptions, warnings, mutation
of the arguments)."""

from __future__ import annotations

import warnings

import numpy as np
import pytest

import framehook.translator as ft
from framehook.translator import config
from framehook.translator.graph import Node
from loop_kernels import fill_row
from symbolic_helpers import Reports, assert_same, check_agrees, entries, loop_nodes


pytestmark = pytest.mark.usefixtures("fresh_translator")


def fill_all(a):
    n = a.shape[0]
    out = np.zeros_like(a)
    for i in range(n):
        fill_row(out, a, i, n)
    return out


def steps(x, k):
    for _ in range(k):
        x = x * 0.5 + 1.0
    return x + k


def scaled_tail(x, k):
    return x[k:] / (k - 3)


K = 2


def uses_global(x):
    if K > 1:
        return x[:K] * K
    return x - K


def make_closure(k):
    def inner(x):
        return x[:k] + k

    return inner


def square(n):
    return np.arange(float(n * n)).reshape(n, n) * 1.5 - 3.0


def row_calls(n):
    return [((np.zeros((n, n)), square(n), i, n), {}) for i in range(n)]


def translations(reports, fn):
    return [r for r in reports if r.code is fn.__code__]


def test_helper_with_a_new_index_each_call_is_translated_twice():
    calls = row_calls(7)
    with Reports() as reports:
        opt = check_agrees(fill_row, *calls)
        check_agrees(fill_row, *calls, optimized=opt)  # every value again: cache hits
    mine = translations(reports, fill_row)
    assert len(mine) == 2, [str(r.graph_break) for r in mine]
    assert mine[0].graph_break is None  # the first value: specialized, captured
    assert mine[1].graph_break.code == "FH011" and "L['i']" in mine[1].graph_break.reason
    assert "automatic_dynamic_ints" in mine[1].graph_break.reason
    assert 1 <= entries(fill_row) <= 2
    assert "EQUALS_MATCH(L['i'])" in mine[0].guards and mine[1].guards == []  # it gave up: runs unmodified


def test_first_call_cache_hit_recompilation_and_a_new_shape_agree():
    opt = ft.optimize("eager")(fill_row)
    a5, a6 = square(5), square(6)
    sequence = [
        (np.zeros((5, 5)), a5, 0, 5),
        (np.zeros((5, 5)), a5, 0, 5),  # first call, hit
        (np.zeros((5, 5)), a5, 3, 5),
        (np.zeros((5, 5)), a5, 4, 5),  # recompile (dynamic), hit
        (np.zeros((6, 6)), a6, 2, 6),
        (np.zeros((6, 6)), a6, 5, 6),  # a new shape
        (np.zeros((5, 5)), a5, 9, 5),
    ]  # IndexError, as plain
    with Reports() as reports:
        check_agrees(fill_row, *sequence, optimized=opt)
    assert len(translations(reports, fill_row)) <= 4
    assert entries(fill_row) <= 4


def test_many_values_keep_one_or_two_entries():
    with Reports() as reports:
        opt = check_agrees(steps, *[(np.arange(4.0), k) for k in (3, 4, 0, 7, 12, 1, -2, 5, 30, 2)])
    assert entries(steps) <= 2
    # the frame twice: the loop over range(k) of the dynamic int is a loop node (no break)
    assert len(reports) == 2, [str(r.graph_break) for r in reports]
    assert all(r.graph_break is None for r in reports)
    dynamic = reports[-1]
    assert [n.captured and n.iterations is None for n in dynamic.loops] == [True], [str(n) for n in dynamic.loops]
    (node,) = loop_nodes(dynamic.graph)
    assert isinstance(node.args[1], Node), node.format()  # the bound is the graph int k
    guards = ft.last_decisions(steps)["guards"]  # of the entry the last call (k=2) ran
    assert not any("L['k'] ==" in g for g in guards), guards
    with Reports() as more:
        check_agrees(steps, *[(np.arange(4.0), k) for k in (8, 9, 10, 11)], optimized=opt)
    assert more == []


def counted_steps(x, k):
    total = 0
    for i in range(k):
        x = x * 0.5 + i
        total += i
    return x, total


def last_index(x, k):
    i = -1
    for i in range(k):
        x = x + i
    return x, i  # the loop variable after the loop: not captured, runs in Python


def test_dynamic_range_loop_node_carries_python_numbers():
    with Reports() as reports:
        check_agrees(counted_steps, *[(np.arange(3.0), k) for k in (2, 5, 0, 1, 9, -3)])
    assert len(reports) == 2 and all(r.graph_break is None for r in reports), [str(r.graph_break) for r in reports]
    assert loop_nodes(reports[-1].graph)


def test_dynamic_range_loop_that_cannot_be_captured_runs_in_python():
    with Reports() as reports:
        check_agrees(last_index, *[(np.arange(3.0), k) for k in (2, 5, 0, 1, 9, -3)])
    breaks = [r.graph_break for r in reports if r.graph_break is not None]
    assert breaks and breaks[0].code == "FH011", [str(b) for b in breaks]
    assert "the loop was not captured" in breaks[0].reason and "read after the loop" in breaks[0].reason
    assert entries(last_index) <= 2


def test_range_of_a_dynamic_int_kept_for_later_still_breaks():
    def later(x, k):
        r = range(k)
        for _ in r:
            x = x + 1.0
        return x

    with Reports() as reports:
        check_agrees(later, *[(np.arange(3.0), k) for k in (2, 5, 0, 7)])
    assert any(r.graph_break is not None and r.graph_break.code == "FH011" for r in reports)


def test_switched_off_specializes_on_every_value():
    with config.patch(automatic_dynamic_ints=False):
        with Reports() as reports:
            check_agrees(fill_row, *row_calls(5))
        mine = translations(reports, fill_row)
        assert len(mine) == 5 and all(r.graph_break is None for r in mine)
        assert "EQUALS_MATCH(L['i'])" in mine[-1].guards


def test_dynamic_true_still_specializes_where_the_value_is_needed():
    opt = ft.optimize("eager", dynamic=True)(fill_row)
    with Reports() as reports:
        check_agrees(fill_row, *row_calls(4), optimized=opt)
    mine = translations(reports, fill_row)
    assert len(mine) == 4 and all(r.graph_break is None for r in mine)


def test_graph_int_keeps_its_warnings_and_errors():
    def run(fn, k):
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            try:
                result = ("return", fn(np.arange(6.0), k))
            except Exception as e:
                result = ("raise", (type(e), str(e)))
        return result, [(w.category, str(w.message)) for w in caught]

    opt = ft.optimize("eager")(scaled_tail)
    with Reports() as reports:
        for k in (1, 1, 2, 3, 5, 4, 3, 7):  # 3: division by zero warns; 7: an empty slice
            want, got = run(scaled_tail, k), run(opt, k)
            assert got[1] == want[1], (k, got[1], want[1])
            assert got[0][0] == want[0][0]
            assert_same(got[0][1], want[0][1])
    assert len(reports) == 2  # x[k:] and k - 3 stay in the graph: no break, one dynamic entry
    assert all(r.graph_break is None for r in reports)


def test_int_global_goes_dynamic():
    global K
    opt = ft.optimize("eager")(uses_global)
    x = np.arange(5.0)
    try:
        with Reports() as reports:
            for k in (2, 3, 4, 2, 0, 5):
                K = k
                check_agrees(uses_global, (x,), optimized=opt)
    finally:
        K = 2
    assert len(translations(reports, uses_global)) <= 3  # K == 2; dynamic: breaks at the branch
    assert entries(uses_global) <= 2
    assert any(r.graph_break is not None and "G['K']" in r.graph_break.reason for r in reports)


def test_int_closure_cell_goes_dynamic():
    x = np.arange(6.0)
    with Reports() as reports:
        for k in (1, 2, 3, 4, 5):
            inner = make_closure(k)
            check_agrees(inner, (x,), optimized=ft.optimize("eager")(inner))
    mine = [r for r in reports if r.code is make_closure(0).__code__]
    assert len(mine) == 2 and all(r.graph_break is None for r in mine)


def test_explain_shows_the_break_of_the_dynamic_int():
    with config.patch(max_unrolled_iterations=2):  # the driver's loop left to Python: calls from Python
        out = ft.explain(lambda a: fill_rows_of_two(a))(square(6))
    assert_same(out.result, fill_rows_of_two(square(6)))
    codes = [b.code for b in out.break_reasons]
    assert codes.count("FH011") == 1, [str(b) for b in out.break_reasons]
    b = out.break_reasons[codes.index("FH011")]
    assert b.function == "fill_row" and "config.automatic_dynamic_ints" in b.reason
    helper_guards = [g for g in out.guards if g.frame == "fill_row"]
    assert any(g.startswith("EQUALS_MATCH(L['i'])") for g in helper_guards)  # the first value only


def fill_rows_of_two(a):
    n = a.shape[0]
    out = np.zeros_like(a)
    for i in range(n):
        fill_row(out, a, i, 2)
    return out
