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
    if x.sum() > 0:   # data-dependent: breaks
        return softmax(x)
    return x


def test_explain_captured_function():
    out = ft.explain(softmax)(np.ones((2, 3)))
    assert out.graph_count == 1 and out.graph_break_count == 0
    assert out.ops_per_graph == [{".max": 1, "operator.sub": 1, "numpy.exp": 1, ".sum": 1, "operator.truediv": 1}]
    assert out.op_count == 5 and out.compile_time > 0 and len(out.compile_times) == 1
    assert "NDARRAY_MATCH(L['x'])" in out.guards
    np.testing.assert_allclose(out.result, np.full((2, 3), 1 / 3))
    text = str(out)
    assert text.startswith("Graph count: 1\nGraph break count: 0\nOp count: 5\n")
    assert "Graph 1: .max x1" in text and "Guards:\n  " in text
    assert rt.cache_entries(softmax.__code__) == []   # explain leaves no cache entries behind


def test_explain_break_then_callee_captured():
    out = ft.explain(inner_breaks)(np.ones((2, 3)))
    # the branch ends the first graph; the resume function captures softmax (inlined) in a second one
    assert out.graph_break_count == 1 and out.graph_count == 2
    b = out.break_reasons[0]
    assert (b.code, b.filename, b.lineno, b.function) == ("FH002", __file__, inner_breaks.__code__.co_firstlineno + 1,
                                                          "inner_breaks")
    assert "branch" in b.reason and b.hint == BREAKS["FH002"].hint
    assert str(b).startswith(f"FH002 in inner_breaks at {__file__}:")
    assert "hint: " in str(out)


def test_explain_on_wrapped_function_and_bad_input():
    wrapped = ft.optimize("eager")(softmax)
    wrapped(np.ones(3))
    out = ft.explain(wrapped)(np.ones(3))
    assert out.graph_count == 1   # the cache was emptied first, so it compiled again
    with pytest.raises(TypeError, match="explain\\(\\) expects a callable"):
        ft.explain(3)


def test_explain_when_the_function_raises():
    def bad(x):
        return x.reshape(7)

    with pytest.raises(ValueError) as info:
        ft.explain(bad)(np.ones(3))
    report = info.value.explain_output
    assert report.graph_break_count == 1 and report.break_reasons[0].code == "FH009"


def test_graph_break_identifiers():
    assert len(BREAKS) >= 15
    for code, kind in BREAKS.items():
        assert code == kind.code and code.startswith("FH") and kind.title and kind.explanation and kind.hint
    e = GraphBreak("FH004", "numpy.foo is not supported")
    assert e.filename is None and "FH004 (unsupported numpy function or arguments)" in str(e)
    e.locate("f.py", 3)
    assert "at f.py:3" in str(e) and e.kind.title == BREAKS["FH004"].title
    e.locate("g.py", 9)   # the first location wins
    assert e.lineno == 3
    with pytest.raises(ValueError, match="unknown graph-break identifier"):
        GraphBreak("FH999", "x")


def test_documentation_page_is_up_to_date():
    assert DOC.read_text() == render_markdown(), "regenerate docs/graph-breaks.md from breaks.render_markdown()"
    for code in BREAKS:
        assert f"## {code}: " in DOC.read_text()
