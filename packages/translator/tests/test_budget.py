"""The trace budget (FH015): a trace stops once it has executed config.max_traced_instructions
instructions, recorded config.max_traced_ops graph operations or run config.max_trace_seconds,
the reason naming the budget; results stay those of plain execution, and a frame whose trace
gave up inside a loop is not traced again."""

from __future__ import annotations

import numpy as np
import pytest

import framehook.runtime as rt
import framehook.translator as ft
from framehook.translator import config
from framehook.translator.config import ConfigError
from framehook.translator.exc import TranslatorError
from symbolic_helpers import Reports, check_agrees


pytestmark = pytest.mark.usefixtures("fresh_translator")


def six_ops(x):
    a = x + 1.0
    b = a * 2.0
    c = b - x
    d = c / 3.0
    e = d * d
    return e + a


def index_nest(a, out):
    # branches on the loop indices: no loop can be captured, so the nest unrolls
    n = a.shape[0]
    total = np.zeros(a.shape[1])
    for i in range(n):
        for j in range(n):
            if i < j:
                out[i] = out[i] + a[j] * 0.5
            elif i == j:
                total = total + a[i]
    return total


def budget_breaks(out):
    return [b for b in out.break_reasons if b.code == "FH015"]


def test_the_op_budget_counts_graph_operations_exactly():
    x = np.arange(5.0)
    whole = ft.explain(six_ops)(x)
    ops = whole.op_count
    assert whole.graph_break_count == 0 and ops == 6
    with config.patch(max_traced_ops=ops):
        assert ft.explain(six_ops)(x).graph_break_count == 0
    with config.patch(max_traced_ops=ops - 1):
        out = ft.explain(six_ops)(x)
    [brk] = budget_breaks(out)
    assert "config.max_traced_ops" in brk.reason and str(ops - 1) in brk.reason
    # straight-line code: the graph of the first ops - 1 runs, then the last operation in Python
    assert out.graph_count == 1 and out.op_count == ops - 1
    np.testing.assert_array_equal(out.result, six_ops(x))


def test_budget_break_location_is_deterministic():
    a = np.arange(24.0).reshape(6, 4)
    seen = set()
    for _ in range(3):
        with config.patch(max_traced_ops=7):
            out = ft.explain(index_nest)(a, np.zeros_like(a))
        [brk] = budget_breaks(out)
        seen.add((brk.lineno, brk.reason))
    assert len(seen) == 1


def test_tiny_op_budget_agrees_with_plain_on_every_call():
    a = np.random.default_rng(1).normal(size=(7, 3))
    with config.patch(max_traced_ops=3):
        opt = ft.optimize("eager")(index_nest)
        with Reports() as reports:
            check_agrees(index_nest, (a, np.ones_like(a)))
            # later calls: the cache hit, then new shapes and dtypes
            check_agrees(
                index_nest,
                (a, np.ones_like(a)),
                (a[:5], np.ones_like(a[:5])),
                (a.astype(np.float32), np.ones_like(a, dtype=np.float32)),
                optimized=opt,
            )
        assert any(r.graph_break is not None and r.graph_break.code == "FH015" for r in reports)


def test_giving_up_is_remembered_and_later_calls_do_not_retrace():
    a = np.random.default_rng(2).normal(size=(8, 3))
    opt = ft.optimize("eager")(index_nest)
    with config.patch(max_traced_ops=10):
        with Reports() as first:
            check_agrees(index_nest, (a, np.zeros_like(a)), optimized=opt)
        nest_reports = [r for r in first if r.code is index_nest.__code__]
        assert [r.graph_break.code for r in nest_reports] == ["FH015"]
        assert "config.max_traced_ops" in nest_reports[0].graph_break.reason
        with Reports() as later:
            # the same shapes hit the cache; other shapes would recompile, but the frame gave up
            check_agrees(
                index_nest,
                (a, np.zeros_like(a)),
                (a[:6], np.zeros_like(a[:6])),
                (a[:4, :2], np.zeros_like(a[:4, :2])),
                optimized=opt,
            )
        assert [r for r in later if r.code is index_nest.__code__] == []
    assert rt.is_skipped(index_nest.__code__)
    ft.reset()  # reset() forgets the decision: the frame is traced again
    with Reports() as again:
        opt(a, np.zeros_like(a))
    assert any(r.code is index_nest.__code__ for r in again)


def test_a_budget_break_in_straight_line_code_is_not_a_give_up():
    x = np.arange(4.0)
    opt = ft.optimize("eager")(six_ops)
    with config.patch(max_traced_ops=4):
        check_agrees(six_ops, (x,), optimized=opt)
        with Reports() as reports:
            check_agrees(six_ops, (np.arange(6.0),), optimized=opt)  # a new shape: recompiled
    assert any(r.code is six_ops.__code__ for r in reports)
    assert not rt.is_skipped(six_ops.__code__)


def test_instruction_budget_names_itself():
    with config.patch(max_traced_instructions=12):
        out = ft.explain(six_ops)(np.arange(3.0))
    assert budget_breaks(out)
    assert all("config.max_traced_instructions" in b.reason for b in budget_breaks(out))
    np.testing.assert_array_equal(out.result, six_ops(np.arange(3.0)))


def test_time_budget_names_itself():
    # a budget no trace can keep: the first graph operation is already past it
    with config.patch(max_trace_seconds=1e-12):
        out = ft.explain(index_nest)(np.ones((3, 2)), np.zeros((3, 2)))
    [brk] = budget_breaks(out)[:1]
    assert "config.max_trace_seconds" in brk.reason
    np.testing.assert_array_equal(out.result, index_nest(np.ones((3, 2)), np.zeros((3, 2))))


def test_nopython_raises_the_budget_break():
    with config.patch(max_traced_ops=2):
        strict = ft.optimize("eager", nopython=True)(six_ops)
        with pytest.raises(TranslatorError, match=r"FH015 .*config\.max_traced_ops"):
            strict(np.arange(3.0))


def test_budget_settings_are_validated():
    for name, bad in (
        ("max_traced_ops", 0),
        ("max_traced_ops", True),
        ("max_trace_seconds", 0),
        ("max_trace_seconds", -1.0),
        ("max_trace_seconds", "1"),
        ("max_traced_instructions", 0),
    ):
        with pytest.raises(ConfigError, match=name):
            config.patch(**{name: bad})
    with config.patch(max_trace_seconds=None, max_traced_ops=1, max_traced_instructions=1):
        assert config.max_trace_seconds is None
    assert "max_traced_ops" in config.describe() and "FH015" in config.describe()


def test_the_unroll_limit_is_a_give_up_too():
    a = np.random.default_rng(3).normal(size=(6, 2))
    opt = ft.optimize("eager")(index_nest)
    with config.patch(max_unrolled_iterations=8, max_traced_ops=10**6, max_traced_instructions=10**6):
        with Reports() as first:
            check_agrees(index_nest, (a, np.zeros_like(a)), optimized=opt)
        assert [r.graph_break.code for r in first if r.code is index_nest.__code__] == ["FH010"]
        with Reports() as later:
            check_agrees(index_nest, (a[:5], np.zeros_like(a[:5])), optimized=opt)
        assert [r for r in later if r.code is index_nest.__code__] == []


def test_explain_and_nopython_still_trace_a_frame_that_gave_up():
    a = np.random.default_rng(4).normal(size=(8, 3))
    with config.patch(max_traced_ops=10):
        ft.optimize("eager")(index_nest)(a, np.zeros_like(a))
        ft.optimize("eager")(index_nest)(a[:5], np.zeros_like(a[:5]))
        assert rt.is_skipped(index_nest.__code__)
        out = ft.explain(index_nest)(a, np.zeros_like(a))
        assert [b.code for b in out.break_reasons][:1] == ["FH015"]
        assert rt.is_skipped(index_nest.__code__)  # explain() gives the skip mark back
        ft.reset()
        ft.optimize("eager")(index_nest)(a, np.zeros_like(a))
        strict = ft.optimize("eager", nopython=True, dynamic=False)(index_nest)
        with pytest.raises(TranslatorError, match="FH015"):
            strict(a[:6], np.zeros_like(a[:6]))


def rows_in_python(a):
    b = a * 2.0
    out = []
    for row in b:  # more rows than the unroll limit: refused at once (FH010)
        out.append(float(row.sum()))
    return np.array(out) + 1.0


def test_a_loop_refused_before_it_runs_is_not_a_give_up():
    opt = ft.optimize("eager")(rows_in_python)
    with config.patch(max_unrolled_iterations=4):
        with Reports() as first:
            check_agrees(rows_in_python, (np.ones((6, 2)),), optimized=opt)
        assert [r.graph_break.code for r in first if r.code is rows_in_python.__code__] == ["FH010"]
        with Reports() as later:
            check_agrees(rows_in_python, (np.ones((7, 3)),), optimized=opt)  # traced again
        assert [r for r in later if r.code is rows_in_python.__code__]
    assert not rt.is_skipped(rows_in_python.__code__)
