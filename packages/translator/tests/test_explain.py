"""explain(): graphs, breaks with identifiers and locations, op counts, guards, compile
time, readable text; the FH documentation page is generated from the table."""

from __future__ import annotations

import pathlib

import numpy as np
import pytest

import framehook.runtime as rt
import framehook.translator as ft
from framehook.translator.symbolic import BREAKS, GraphBreak
from framehook.translator.symbolic.breaks import render_markdown

DOC = pathlib.Path(__file__).resolve().parents[3] / "docs" / "graph-breaks.md"


def softmax(x):
    e = np.exp(x - x.max(axis=-1, keepdims=True))
    return e / e.sum(axis=-1, keepdims=True)


def inner_breaks(x):
    if x.sum() > 0:  # data-dependent: breaks
        return softmax(x)
    return x


def test_explain_captured_function():
    out = ft.explain(softmax)(np.ones((2, 3)))
    assert out.graph_count == 1 and out.graph_break_count == 0
    assert out.ops_per_graph == [{".max": 1, "operator.sub": 1, "numpy.exp": 1, ".sum": 1, "operator.truediv": 1}]
    assert out.op_count == 5 and out.compile_time > 0 and len(out.compile_times) == 1
    assert (
        "NDARRAY_MATCH(L['x']): type(L['x']) is numpy.ndarray and (L['x'].dtype is dtype('float64') or "
        "L['x'].dtype == dtype('float64')) and L['x'].shape == (2, 3) and L['x'].strides == (24, 8) and "
        "L['x'].flags.writeable"
    ) in out.guards, out.guards
    np.testing.assert_allclose(out.result, np.full((2, 3), 1 / 3))
    text = str(out)
    assert text.startswith("Graph count: 1\nGraph break count: 0\nOp count: 5\n")
    assert "Graph 1: .max x1" in text and "Guards:\n  " in text
    assert rt.cache_entries(softmax.__code__) == []  # explain leaves no cache entries behind


def test_explain_break_then_callee_captured():
    out = ft.explain(inner_breaks)(np.ones((2, 3)))
    # the branch ends the first graph; the resume function captures softmax (inlined) in a second one
    assert out.graph_break_count == 1 and out.graph_count == 2
    b = out.break_reasons[0]
    assert (b.code, b.filename, b.lineno, b.function) == (
        "FH002",
        __file__,
        inner_breaks.__code__.co_firstlineno + 1,
        "inner_breaks",
    )
    assert "branch" in b.reason and b.hint == BREAKS["FH002"].hint
    assert str(b).startswith(f"FH002 in inner_breaks at {__file__}:")
    assert "hint: " in str(out)


def test_explain_on_wrapped_function_and_bad_input():
    wrapped = ft.optimize("eager")(softmax)
    wrapped(np.ones(3))
    out = ft.explain(wrapped)(np.ones(3))
    assert out.graph_count == 1  # the cache was emptied first, so it compiled again
    with pytest.raises(TypeError, match="explain\\(\\) expects a callable"):
        ft.explain(3)


def test_explain_when_the_function_raises():
    def bad(x):
        return x.reshape(7)

    with pytest.raises(ValueError) as info:
        ft.explain(bad)(np.ones(3))
    report = info.value.explain_output
    assert report.graph_break_count == 1 and report.break_reasons[0].code == "FH009"


def test_failing_assert_breaks_where_it_raises(caplog):
    # 3.14 loads AssertionError with LOAD_COMMON_CONSTANT: a break there must resume like
    # LOAD_ASSERTION_ERROR's does, not fail the whole translation (found by fuzz/)
    namespace: dict = {}  # compiled here: pytest rewrites the asserts of test modules
    exec("def checked(x):\n    y = x * 2\n    assert False\n    return y\n", namespace)
    checked = namespace["checked"]
    with pytest.raises(AssertionError) as info:
        ft.explain(checked)(np.zeros(2))
    report = info.value.explain_output
    assert report.graph_count == 1 and {b.code for b in report.break_reasons} == {"FH009"}, str(report)
    assert not [r for r in caplog.records if "failed" in r.getMessage()]


def test_graph_break_identifiers():
    assert len(BREAKS) >= 15
    for code, kind in BREAKS.items():
        assert code == kind.code and code.startswith("FH") and kind.title and kind.explanation and kind.hint
    e = GraphBreak("FH004", "numpy.foo is not supported")
    assert e.filename is None and "FH004 (unsupported numpy function or arguments)" in str(e)
    e.locate("f.py", 3)
    assert "at f.py:3" in str(e) and e.kind.title == BREAKS["FH004"].title
    e.locate("g.py", 9)  # the first location wins
    assert e.lineno == 3
    with pytest.raises(ValueError, match="unknown graph-break identifier"):
        GraphBreak("FH999", "x")


def test_documentation_page_is_up_to_date():
    assert DOC.read_text() == render_markdown(), "regenerate docs/graph-breaks.md from breaks.render_markdown()"
    for code in BREAKS:
        assert f"## {code}: " in DOC.read_text()


# ------------------------------------------------------------------ guards, readable and by frame


def scaled_sum(x, k, weights):
    y = x * k + weights[0]
    print("between graphs")  # the break
    return y.sum() + len(weights)


def line_after_break():
    import inspect

    lines, first = inspect.getsourcelines(scaled_sum)
    return first + next(i for i, text in enumerate(lines) if text.rstrip().endswith("# the break")) + 1


def test_explain_guards_say_what_they_expect_and_where():
    out = ft.explain(scaled_sum)(np.ones((3, 4)), 2, [1.0, 2.0])
    assert out.graph_break_count == 1
    assert all(isinstance(g, str) for g in out.guards)  # still a list of str
    resume = f"scaled_sum (resume at line {line_after_break()})"
    by_frame = {}
    for g in out.guards:
        by_frame.setdefault(g.frame, []).append(str(g))
    assert list(by_frame) == ["scaled_sum", resume]
    first, second = by_frame["scaled_sum"], by_frame[resume]
    assert "TYPE_MATCH(L['k']): type(L['k']) is int" in first
    assert (
        "NDARRAY_MATCH(L['x']): type(L['x']) is numpy.ndarray and (L['x'].dtype is dtype('float64') or "
        "L['x'].dtype == dtype('float64')) and L['x'].shape == (3, 4) and L['x'].strides == (32, 8) and "
        "L['x'].flags.writeable"
    ) in first
    assert "LENGTH_CHECK(L['weights']): type(L['weights']) is list and len(L['weights']) == 2" in first
    assert "TYPE_MATCH(L['weights'][0]): type(L['weights'][0]) is float" in first
    # the resume function guards what it receives: y computed by graph 1, the list again
    assert any(g.startswith("NDARRAY_MATCH(L['y']): ") and "L['y'].shape == (3, 4)" in g for g in second)
    assert "LENGTH_CHECK(L['weights']): type(L['weights']) is list and len(L['weights']) == 2" in second
    assert not any("L['x']" in g or "L['k']" in g for g in second)
    for texts in by_frame.values():
        assert len(texts) == len(set(texts))  # no duplicates within a frame
        assert "GLOBAL_STATE(___global_state): ___global_state_unchanged()" in texts


def test_explain_guard_text_is_the_check_functions_conditions():
    # the conditions are those debug.dump's guard file and last_decisions list, guard by guard
    out = ft.explain(softmax)(np.ones((2, 3), np.float32))
    decided = ft.last_decisions(softmax)["guards"]
    assert [c for g in out.guards for c in g.conditions] == decided
    for g in out.guards:
        assert str(g) == f"{g.guard.describe()}: " + " and ".join(g.conditions)
        assert g.frame == "softmax"
    assert any("dtype('float32')" in c for c in decided)


def doubled(v):
    return v * 2


def calls_in_a_loop(x):
    total = 0
    for i in range(2):
        print(i)  # the loop statement runs in Python: doubled is a frame of its own
        total = total + doubled(x.astype(np.float32) if i else x)
    return total


def test_explain_merges_recompilations_of_a_frame_without_duplicates():
    out = ft.explain(calls_in_a_loop)(np.ones(3))
    inner = [str(g) for g in out.guards if g.frame == "doubled"]
    # two compilations (float64, then float32): both array guards, the shared one once
    assert len([g for g in inner if g.startswith("NDARRAY_MATCH(L['v']): ")]) == 2
    assert any("dtype('float32')" in g for g in inner) and any("dtype('float64')" in g for g in inner)
    assert inner.count("GLOBAL_STATE(___global_state): ___global_state_unchanged()") == 1
    assert len(inner) == len(set(inner))
    text = str(out)
    assert "\n  doubled:\n    NDARRAY_MATCH(L['v']): " in text
    assert "\n  calls_in_a_loop:\n    " in text


def test_explain_guards_without_a_cache_entry_fall_back_to_the_trace():
    from framehook.translator.explaining import _frame_guards
    from framehook.translator.symbolic import FrameReport

    report = FrameReport(softmax.__code__, guards=["TYPE_MATCH(L['x'])"])
    (g,) = _frame_guards(report, None, "softmax")
    assert g == "TYPE_MATCH(L['x'])" and g.frame == "softmax" and g.guard is None and g.conditions == []
