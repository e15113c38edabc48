"""Warnings and exceptions raised inside a compiled graph point at the user's code: the
generated function's code is in the user's file with each statement on the user's line,
and its globals carry the user's module name, so warning records, module-based warning
filters and tracebacks see what they see for the plain function (graph/codegen.py)."""

from __future__ import annotations

import dis
import importlib
import linecache
import sys
import textwrap
import traceback
import warnings

import numpy as np
import pytest

import framehook.runtime as rt
import framehook.translator as ft
from framehook.translator.backends import numexpr as bn
from framehook.translator.bytecode.linetable import relocate
from framehook.translator.graph import Graph

MAIN = "fh_glines_main"
HELPER = "fh_glines_helper"

HELPER_SOURCE = '''
import numpy as np


def helper(v):
    w = v * 1.0
    return np.log(w)                  # @helper-log


def helper_inv(m):
    return np.linalg.inv(m)           # @helper-inv
'''

MAIN_SOURCE = f'''
import numpy as np
import {HELPER}


def two_lines(x, y):
    a = x * 2
    b = np.log(a - 2)                 # @log
    c = x / y                         # @divide
    return b * c


def same_module_helper(v):
    return np.sqrt(v - 1)             # @same-helper


def calls_same_module(x):
    y = x * 2
    z = same_module_helper(y)
    return z + 1


def calls_other_module(x):
    y = x - 1
    z = {HELPER}.helper(y)            # @other-call
    return z * 2


def other_module_raises(m):
    s = m * 2
    t = {HELPER}.helper_inv(s)        # @other-inv-call
    return t + 1


def looped(x, n):
    acc = x
    for i in range(n):
        acc = acc - 0.5
        acc = np.sqrt(acc)            # @loop-sqrt
    return acc


def singular(m, idx):
    s = m * 2
    t = s[idx]                        # @index
    inv = np.linalg.inv(t)            # @inv
    return inv + 1


def multi_line(x, y):
    s = (np.log(x)                    # @ml-first
         - np.log(y)                  # @ml-second
         + x / y)                     # @ml-third
    return s * 2                      # @ml-return


def fused(x):
    a = x * 2 - 2
    b = np.log(a)                     # @fused-log
    return b * 3 + 1
'''


@pytest.fixture(scope="module")
def mods(tmp_path_factory):
    root = tmp_path_factory.mktemp("glines")
    (root / f"{HELPER}.py").write_text(textwrap.dedent(HELPER_SOURCE))
    (root / f"{MAIN}.py").write_text(textwrap.dedent(MAIN_SOURCE))
    sys.path.insert(0, str(root))
    try:
        yield importlib.import_module(MAIN), importlib.import_module(HELPER)
    finally:
        sys.path.remove(str(root))
        sys.modules.pop(MAIN, None)
        sys.modules.pop(HELPER, None)


pytestmark = pytest.mark.usefixtures("fresh_translator")


def line(module, marker):
    """The line of ``module``'s source ending in ``# @marker``."""
    lines = linecache.getlines(module.__file__)
    hits = [i + 1 for i, text in enumerate(lines) if text.rstrip().endswith(f"# @{marker}")]
    assert len(hits) == 1, (marker, hits)
    return hits[0]


def captured(fn, *args):
    """``fn`` optimized and compiled for ``args``, after checking it runs as one graph
    without breaks (so what the tests see comes from the compiled graph, not from the
    original code). It is compiled here, before the tests look at warnings."""
    out = ft.explain(fn)(*args)
    assert out.graph_count == 1 and out.graph_break_count == 0, str(out)
    ft.reset()
    opt = ft.optimize("eager")(fn)
    opt(*args)
    return opt


def records(fn, *args, action="always"):
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter(action)
        fn(*args)
    return [(w.filename, w.lineno, w.category, str(w.message)) for w in caught]


def user_frame(exc, filename):
    """The innermost traceback entry in ``filename``: (file, line, source text)."""
    rows = [f for f in traceback.extract_tb(exc.__traceback__) if f.filename == filename]
    assert rows, traceback.format_exception(type(exc), exc, exc.__traceback__)
    return rows[-1].filename, rows[-1].lineno, rows[-1].line


def raised(fn, *args):
    with pytest.raises(Exception) as info:
        fn(*args)
    return info.value


# ------------------------------------------------------------------ warnings
def test_warnings_on_two_lines_match_the_plain_function(mods):
    main, _ = mods
    x, y = np.ones(3), np.zeros(3)
    opt = captured(main.two_lines, x + 2, y + 1)
    plain = records(main.two_lines, x, y)
    assert [r[1] for r in plain] == [line(main, "log"), line(main, "divide")]
    assert records(opt, x, y) == plain
    assert all(r[0] == main.__file__ for r in plain)


def test_warning_from_a_same_module_inlined_call_matches_plain(mods):
    main, _ = mods
    x = np.full(3, 0.25)
    opt = captured(main.calls_same_module, x + 1)
    plain = records(main.calls_same_module, x)
    assert [r[1] for r in plain] == [line(main, "same-helper")]
    assert records(opt, x) == plain


def test_warning_lines_hold_while_a_tracer_is_active(mods):
    # 3.14+ line monitoring keeps each line as an unsigned offset from co_firstlineno: a
    # helper defined above the frame came out 256 lines off under a tracer (or coverage)
    main, _ = mods
    x = np.full(3, 0.25)
    opt = captured(main.calls_same_module, x + 1)
    plain = records(main.calls_same_module, x)
    old = sys.gettrace()
    sys.settrace(lambda *a: None)
    try:
        traced = records(opt, x)
    finally:
        sys.settrace(old)
    assert traced == plain


def test_relocate_puts_no_line_before_the_first():
    def g():
        a = 1
        return a

    top = g.__code__.co_firstlineno
    new = relocate(g.__code__, lambda n: 3 if n == top + 1 else 10, "x.py", 8)
    lines = [n for _, n in dis.findlinestarts(new) if n is not None]
    assert 3 in lines and new.co_firstlineno == 3 <= min(lines)


def test_warning_from_a_captured_loop_body_matches_plain(mods):
    main, _ = mods
    x = np.full(3, 2.0)
    out = ft.explain(main.looped)(x + 100, 6)
    assert out.loops and all(n.captured for n in out.loops), str(out)
    opt = captured(main.looped, x + 100, 6)
    plain = records(main.looped, x, 6)
    assert plain and {r[1] for r in plain} == {line(main, "loop-sqrt")}
    assert records(opt, x, 6) == plain


@pytest.mark.parametrize("action", ["error", "ignore"])
def test_module_warning_filters_match_as_for_the_plain_function(mods, action):
    main, _ = mods
    x, y = np.ones(3), np.zeros(3)
    opt = captured(main.two_lines, x + 2, y + 1)
    for fn in (main.two_lines, opt):
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            warnings.filterwarnings(action, category=RuntimeWarning, module=MAIN)
            if action == "error":
                with pytest.raises(RuntimeWarning, match="divide by zero encountered in log"):
                    fn(x, y)
            else:
                fn(x, y)
        assert caught == []
        with warnings.catch_warnings(record=True) as caught:  # another module's filter: no effect
            warnings.simplefilter("always")
            warnings.filterwarnings("error", category=RuntimeWarning, module=HELPER)
            fn(x, y)
        assert len(caught) == 2


def test_a_warning_shown_once_per_location_is_shown_once_for_plain_and_graph(mods):
    main, _ = mods
    x, y = np.ones(3), np.zeros(3)
    opt = captured(main.two_lines, x + 2, y + 1)
    for first, second in ((main.two_lines, opt), (opt, main.two_lines)):
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("default")
            first(x, y)
            assert len(caught) == 2
            second(x, y)  # the module's registry has seen both locations
            assert len(caught) == 2


# ------------------------------------------------------------------ exceptions
@pytest.mark.parametrize(
    "idx,error", [(np.array([0]), np.linalg.LinAlgError), (np.array([5]), IndexError)], ids=["singular", "index"]
)
def test_exception_in_the_graph_has_the_users_file_and_line(mods, idx, error):
    main, _ = mods
    m = np.zeros((2, 2, 2))
    opt = captured(main.singular, m + np.eye(2), np.array([0]))
    plain = raised(main.singular, m, idx)
    compiled = raised(opt, m, idx)
    assert type(compiled) is type(plain) and isinstance(plain, error)
    where = user_frame(plain, main.__file__)
    assert where[1] == line(main, "inv" if error is np.linalg.LinAlgError else "index")
    assert user_frame(compiled, main.__file__) == where


def test_compiled_code_is_in_the_users_file_and_still_skipped(mods):
    main, _ = mods
    out = ft.explain(main.two_lines)(np.full(3, 3.0), np.ones(3))
    forward = out.graphs[0].forward
    assert forward.__code__.co_filename == main.__file__
    assert forward.__globals__["__name__"] == MAIN
    assert rt.is_skipped(forward.__code__)
    assert "def forward(x, y):" in forward.graph_source


def test_operations_on_one_line_are_still_written_as_one_expression(mods):
    main, _ = mods
    source = ft.explain(main.fused)(np.full(3, 3.0)).graphs[0].python_code()
    assert "(x * 2) - 2" in source  # numpy may reuse the temporary, as in plain Python


def test_a_statement_on_several_lines_is_one_expression_with_each_warning_on_its_line(mods):
    main, _ = mods
    x, y = np.zeros(3), np.zeros(3)
    opt = captured(main.multi_line, x + 1, y + 1)
    plain = records(main.multi_line, x, y)
    # the subtraction is reported where its expression starts, as CPython reports it
    expect = [line(main, m) for m in ("ml-first", "ml-second", "ml-first", "ml-third")]
    assert [r[1] for r in plain] == expect
    assert records(opt, x, y) == plain
    source = opt_source(main.multi_line, x + 1, y + 1)
    body = [t.strip() for t in source.splitlines()[1:]]
    # one statement for the sum (numpy reuses its temporaries), one for the line after it
    assert len([t for t in body if " = " in t]) == 2, source
    assert body[0].startswith("add = (") and body[-1].startswith("return "), source


def opt_source(fn, *args):
    return ft.explain(fn)(*args).graphs[0].python_code()


# ------------------------------------------------------------------ inlined from another module
def test_warning_from_another_module_is_reported_at_the_call(mods):
    main, helper = mods
    x = np.ones(3)
    opt = captured(main.calls_other_module, x + 1)
    plain = records(main.calls_other_module, x)
    assert [r[:2] for r in plain] == [(helper.__file__, line(helper, "helper-log"))]
    got = records(opt, x)
    assert [r[:2] for r in got] == [(main.__file__, line(main, "other-call"))]
    assert [r[2:] for r in got] == [r[2:] for r in plain]
    with warnings.catch_warnings():
        warnings.filterwarnings("error", category=RuntimeWarning, module=MAIN)
        with pytest.raises(RuntimeWarning):
            opt(x)


def test_exception_in_another_module_is_reported_at_the_call(mods):
    main, helper = mods
    opt = captured(main.other_module_raises, np.eye(2))
    compiled = raised(opt, np.zeros((2, 2)))
    assert isinstance(compiled, np.linalg.LinAlgError)
    assert user_frame(compiled, main.__file__)[1] == line(main, "other-inv-call")
    plain = raised(main.other_module_raises, np.zeros((2, 2)))
    assert user_frame(plain, helper.__file__)[1] == line(helper, "helper-inv")


# ------------------------------------------------------------------ numexpr backend
def test_numexpr_backend_graph_reports_the_users_line(mods):
    pytest.importorskip("numexpr", reason="numexpr is not installed")
    main, _ = mods
    x = np.ones(3)
    graph = ft.explain(main.fused)(np.full(3, 3.0)).graphs[0]
    forward = bn.numexpr_backend(graph, [x])
    assert forward.fused_graph.meta["fused_kernels"]
    plain = records(main.fused, x)
    assert [r[1] for r in plain] == [line(main, "fused-log")]
    assert records(forward, x) == plain


# ------------------------------------------------------------------ graphs built by hand
def test_graph_without_locations_keeps_its_own_source_lines():
    g = Graph("bare")
    x = g.placeholder("x")
    g.output(g.call(np.linalg.inv, (x,)))
    fn = g.forward
    assert fn.__code__.co_filename.startswith("<framehook graph bare #")
    e = raised(fn, np.zeros((2, 2)))
    row = user_frame(e, fn.__code__.co_filename)
    assert row[2] == "inv = __numpy_linalg_inv(x)"


def test_graph_built_by_hand_reports_its_nodes_stacks():
    g = Graph("hand")
    x = g.placeholder("x")
    a = g.call(np.negative, (x,), stack=("/src/model.py", 40, "f"))
    b = g.call(np.linalg.inv, (a,), stack=("/src/model.py", 12, "f"))
    g.output(b)
    e = raised(g.forward, np.zeros((2, 2)))
    assert [
        (f.filename, f.lineno, f.name) for f in traceback.extract_tb(e.__traceback__) if f.filename == "/src/model.py"
    ] == [("/src/model.py", 12, "forward")]


# ------------------------------------------------------------------ bytecode: relocate
def _sample(a):
    b = a + 1
    c = b / (a - 1)
    return c[0]


def test_relocate_gives_each_line_its_new_number_and_file():
    code = _sample.__code__
    first = code.co_firstlineno
    mapping = {first + 1: 500, first + 2: None, first + 3: 30}  # None: keep the line before
    new = relocate(code, mapping.get, "/elsewhere/x.py", 20)
    assert new.co_filename == "/elsewhere/x.py" and new.co_firstlineno == 20
    lines = {ln for _, ln in dis.findlinestarts(new) if ln is not None}
    assert lines - {20} == {500, 30}
    fn = type(_sample)(new, globals())
    for arg, error, expected in ((1, ZeroDivisionError, 500), (2, TypeError, 30)):
        e = raised(fn, arg)
        assert isinstance(e, error)
        tb = traceback.extract_tb(e.__traceback__)[-1]
        assert (tb.filename, tb.lineno) == ("/elsewhere/x.py", expected)
