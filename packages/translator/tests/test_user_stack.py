"""The user's stack in diagnostics: the "from user code:" block of a nopython error is the
stack of the break through the inlined calls (file, line, function, outermost first), and
a recompilation names the Python stack at the call, without framehook's own frames."""

from __future__ import annotations

import logging
import os
import traceback

import numpy as np
import pytest

import framehook.translator as ft
from framehook.translator.exc import CacheLimitExceeded, InternalTranslatorError
from framehook.translator.symbolic import GraphBreak
from framehook.translator.symbolic.tracer import Tracer

HERE = os.path.abspath(__file__)
TRANSLATOR_DIR = os.path.dirname(os.path.abspath(ft.__file__))


pytestmark = pytest.mark.usefixtures("fresh_translator")


def line_of(fn, marker):
    """The line of ``fn``'s source holding ``# <marker>``."""
    lines, first = _source(fn)
    hits = [first + i for i, text in enumerate(lines) if text.rstrip().endswith(f"# {marker}")]
    assert len(hits) == 1, (marker, hits)
    return hits[0]


def _source(fn):
    import inspect

    return inspect.getsourcelines(fn)


def rows(stack):
    return [(os.path.abspath(f.filename), f.lineno, f.name) for f in stack]


def block(message):
    """The "from user code:" block of an error message, as (file, line, function) rows."""
    assert "\n\nfrom user code:\n" in message
    text = message.split("\n\nfrom user code:\n", 1)[1]
    found = []
    for line in text.splitlines():
        if line.startswith('  File "'):
            name, rest = line[len('  File "') :].split('", line ', 1)
            lineno, fn = rest.split(", in ", 1)
            found.append((os.path.abspath(name), int(lineno), fn))
    return found


# ------------------------------------------------------------------ nopython errors


def prints(x):
    y = x + 1
    print("y", y.shape)  # print-line
    return y


def leaf(y):
    z = y * 2
    open(os.devnull)  # open-line
    return z


def middle(y):
    w = y - 1
    return leaf(w) + 1  # middle-call


def calls_helper(x):
    a = x + 1
    b = leaf(a)  # direct-call
    return b


def calls_two_deep(x):
    a = np.exp(x)
    return middle(a) * 2  # outer-call


@ft.optimize("eager", nopython=True)
def decorated(x):
    y = x * 3
    print(y)  # decorated-print
    return y


def test_nopython_break_in_the_frame_shows_its_line():
    with pytest.raises(GraphBreak) as info:
        ft.optimize("eager", nopython=True)(prints)(np.ones(3))
    line = line_of(prints, "print-line")
    message = str(info.value)
    assert message.startswith(
        f"FH005 (I/O or other side effect) at {HERE}:{line}: a call to print()"
    ) or message.startswith(f"FH005 (I/O or other side effect) at {prints.__code__.co_filename}:{line}:")
    assert block(message) == [(HERE, line, "prints")]
    assert rows(info.value.real_stack) == [(HERE, line, "prints")]
    # the block shows the source line, as a traceback does
    assert 'print("y", y.shape)' in message.split("from user code:")[1]


def test_nopython_break_in_a_helper_shows_the_call_chain():
    with pytest.raises(GraphBreak) as info:
        ft.optimize("eager", nopython=True)(calls_helper)(np.ones(3))
    expected = [
        (HERE, line_of(calls_helper, "direct-call"), "calls_helper"),
        (HERE, line_of(leaf, "open-line"), "leaf"),
    ]
    assert f"at {leaf.__code__.co_filename}:{expected[1][1]}: a call to open()" in str(info.value)
    assert block(str(info.value)) == expected
    assert rows(info.value.real_stack) == expected


def test_nopython_break_two_calls_deep():
    with pytest.raises(GraphBreak) as info:
        ft.optimize("eager", nopython=True)(calls_two_deep)(np.ones(3))
    assert block(str(info.value)) == [
        (HERE, line_of(calls_two_deep, "outer-call"), "calls_two_deep"),
        (HERE, line_of(middle, "middle-call"), "middle"),
        (HERE, line_of(leaf, "open-line"), "leaf"),
    ]


def test_nopython_break_in_a_decorated_function_is_not_the_decorator_line():
    # on 3.9/3.10 co_firstlineno of a decorated function is the decorator's line
    with pytest.raises(GraphBreak) as info:
        decorated(np.ones(2))
    assert block(str(info.value)) == [(HERE, line_of(decorated, "decorated-print"), "decorated")]


def test_nopython_stack_is_that_of_each_call():
    # the same helper breaking under two callers: each error has its own chain
    opt = ft.optimize("eager", nopython=True)
    with pytest.raises(GraphBreak) as first:
        opt(calls_helper)(np.ones(3))
    with pytest.raises(GraphBreak) as second:
        opt(calls_two_deep)(np.ones(3))
    assert [r[2] for r in block(str(first.value))] == ["calls_helper", "leaf"]
    assert [r[2] for r in block(str(second.value))] == ["calls_two_deep", "middle", "leaf"]


def test_explain_break_location_is_the_innermost_line():
    report = ft.explain(calls_helper)(np.ones(3))
    reason = report.break_reasons[0]
    assert (os.path.abspath(reason.filename), reason.lineno) == (HERE, line_of(leaf, "open-line"))


def test_internal_error_in_a_helper_carries_the_stack(monkeypatch):
    def boom(self, *args, **kwargs):
        raise ZeroDivisionError("translator bug")

    monkeypatch.setattr(Tracer, "record", boom)

    def only_helper(x):
        return leaf(x)  # only-call

    with pytest.raises(InternalTranslatorError) as info:
        ft.optimize("eager", nopython=True)(only_helper)(np.ones(3))
    assert isinstance(info.value.__cause__, ZeroDivisionError)
    # the first array operation is in leaf (y * 2), reached from only_helper's call
    assert rows(info.value.real_stack) == [
        (HERE, line_of(only_helper, "only-call"), "only_helper"),
        (HERE, line_of(leaf, "open-line") - 1, "leaf"),
    ]
    assert block(str(info.value)) == rows(info.value.real_stack)


# ------------------------------------------------------------------ recompilations


def scaled(x):
    return x * 2


def calls_scaled(f, x):
    return f(x)  # scaled-call


def test_recompile_log_and_guard_fail_fn_show_the_call_stack(caplog):
    fails = []
    f = ft.optimize("eager", guard_fail_fn=fails.append)(scaled)
    calls_scaled(f, np.ones(3))
    with caplog.at_level(logging.INFO, logger="framehook.translator.recompiles"):
        calls_scaled(f, np.ones(3, np.float32))  # recompiling-call
    here = line_of(test_recompile_log_and_guard_fail_fn_show_the_call_stack, "recompiling-call")
    inner = line_of(calls_scaled, "scaled-call")
    assert len(fails) == 1
    stack = rows(fails[0].user_stack)
    # the real stack: the test runner's frames, then this test, then the helper making the call
    assert stack[-2:] == [
        (HERE, here, "test_recompile_log_and_guard_fail_fn_show_the_call_stack"),
        (HERE, inner, "calls_scaled"),
    ]
    assert len(stack) > 2 and not any(path.startswith(TRANSLATOR_DIR + os.sep) for path, _, _ in stack)
    # the frames above this test are exactly the interpreter's
    assert stack[:-2] == rows(traceback.extract_stack())[:-1]
    text = caplog.text
    assert "Recompiling scaled" in text and "expected dtype float64, got dtype float32" in text
    shown = text.split("user's stack at the call (most recent call last):\n", 1)[1]
    assert block("\n\nfrom user code:\n" + shown)[-2:] == stack[-2:]
    assert "calls_scaled(f, np.ones(3, np.float32))" in shown and "return f(x)" in shown


def test_cache_limit_warning_shows_the_last_call_stack(caplog):
    f = ft.optimize("eager")(scaled)
    with ft.config.patch(cache_size_limit=2), caplog.at_level(logging.WARNING, logger="framehook.translator"):
        for dtype in ("float64", "float32", "int64"):
            calls_scaled(f, np.ones(3, dtype))  # limit-call
    warnings = [r.getMessage() for r in caplog.records if "cache_size_limit" in r.getMessage()]
    assert len(warnings) == 1
    inner = line_of(calls_scaled, "scaled-call")
    assert f"(last call from {calls_scaled.__code__.co_filename}:{inner} in calls_scaled)" in warnings[0]
    shown = warnings[0].split("user's stack at the last call (most recent call last):\n", 1)[1]
    assert block("\n\nfrom user code:\n" + shown)[-2:] == [
        (
            HERE,
            line_of(test_cache_limit_warning_shows_the_last_call_stack, "limit-call"),
            "test_cache_limit_warning_shows_the_last_call_stack",
        ),
        (HERE, inner, "calls_scaled"),
    ]


def test_strict_cache_limit_error_shows_the_stack():
    f = ft.optimize("eager", nopython=True)(scaled)
    with ft.config.patch(cache_size_limit=1):
        f(np.ones(2))
        with pytest.raises(CacheLimitExceeded) as info:
            calls_scaled(f, np.ones(3))
    assert " in calls_scaled)" in str(info.value)
    assert "user's stack at the last call" in str(info.value)


def test_user_call_stack_leaves_out_framehook_frames():
    from framehook.translator.conversion.convert_frame import user_call_stack
    import sys

    assert rows(user_call_stack(None)) == []
    here = sys._getframe()
    assert rows(user_call_stack(here))[-1] == (HERE, here.f_lineno, "test_user_call_stack_leaves_out_framehook_frames")
    # a frame of framehook's own (a run/enable helper) is dropped, its callers kept
    seen = []

    def probe():
        seen.append(user_call_stack(sys._getframe(1)))

    wrapper_code = compile(
        "def wrapper():\n    return probe()\n", os.path.join(TRANSLATOR_DIR, "eval_frame.py"), "exec"
    )
    ns = {"probe": probe}
    exec(wrapper_code, ns)

    def caller():
        return ns["wrapper"]()  # through-wrapper

    caller()
    assert rows(seen[0])[-1] == (HERE, line_of(caller, "through-wrapper"), "caller")
