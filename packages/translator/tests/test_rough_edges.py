"""Rough edges a new user met: graph-break logging, bare ``@optimize``, ``explain()`` keeping
other functions' caches, FRAMEHOOK_LOGS / FRAMEHOOK_DISABLE values."""

from __future__ import annotations

import logging
import os
import subprocess
import sys

import numpy as np
import pytest

import framehook.runtime as rt
import framehook.translator as ft
from framehook.translator import config
from framehook.translator.config import env_flag
from framehook.translator.exc import TranslatorError
from symbolic_helpers import Reports, check_agrees, entries


pytestmark = pytest.mark.usefixtures("fresh_translator")


def prints(x):
    y = x * 2.0
    print("checkpoint")  # FH005
    return y + 1.0


def scale(x):
    return x * 3.0 - 1.0


def shift(x):
    return np.sqrt(np.abs(x)) + 2.0


PRINT_LINE = prints.__code__.co_firstlineno + 2


# ------------------------------------------------------------------ FRAMEHOOK_LOGS=graph_breaks
def test_graph_breaks_are_logged_with_code_and_location(caplog, capsys):
    with caplog.at_level(logging.INFO, logger="framehook.translator.graph_breaks"):
        check_agrees(prints, (np.arange(3.0),))
    capsys.readouterr()
    [msg] = [r.getMessage() for r in caplog.records if r.name == "framehook.translator.graph_breaks"]
    assert msg.startswith("graph break FH005 (I/O or other side effect) in prints at ")
    assert f"{__file__}:{PRINT_LINE}" in msg and "print" in msg
    assert msg.endswith("the rest resumes after it")


def test_a_break_that_cannot_resume_is_logged_as_such(caplog):
    def in_try(x):
        try:
            y = x.tolist()  # FH012 inside a try block, which runs in Python
        except ValueError:
            y = None
        return x * 2.0, y

    with caplog.at_level(logging.INFO, logger="framehook.translator.graph_breaks"):
        check_agrees(in_try, (np.arange(3.0),))
    msgs = [r.getMessage() for r in caplog.records if r.name == "framehook.translator.graph_breaks"]
    assert msgs and all(m.startswith("graph break FH0") for m in msgs)
    assert all(m.endswith(("the rest resumes after it", "then the rest resumes", ")")) for m in msgs)
    assert any("runs in Python" in m or "runs unmodified" in m for m in msgs)


def test_graph_breaks_are_not_logged_unless_asked(caplog, capsys):
    with caplog.at_level(logging.WARNING, logger="framehook.translator"):
        ft.optimize()(prints)(np.arange(3.0))
    capsys.readouterr()
    assert not [r for r in caplog.records if r.name == "framehook.translator.graph_breaks"]


def test_framehook_logs_graph_breaks_env_var():
    code = (
        "import numpy as np, framehook.translator as ft\n"
        "def f(x):\n"
        "    y = x + 1\n"
        "    print('hi')\n"
        "    return y\n"
        "ft.optimize()(f)(np.ones(2))\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", code],
        env=dict(os.environ, FRAMEHOOK_LOGS="graph_breaks"),
        capture_output=True,
        text=True,
        check=True,
    )
    lines = [x for x in out.stderr.splitlines() if "graph_breaks" in x]
    assert len(lines) == 1, out.stderr
    assert lines[0].startswith("[framehook.translator.graph_breaks] INFO: graph break FH005")
    assert "<string>:4" in lines[0]


# ------------------------------------------------------------------ bare @optimize
def test_bare_optimize_decorates_with_the_defaults():
    @ft.optimize
    def triple(x):
        return x * 3.0

    x = np.arange(4.0)
    with Reports() as reports:
        np.testing.assert_array_equal(triple(x), x * 3.0)
        np.testing.assert_array_equal(triple(x), x * 3.0)  # a cache hit
    assert len(reports) == 1 and reports[0].graph is not None
    assert entries(ft.innermost_fn(triple)) == 1
    assert ft.explain(triple)(x).graph_count == 1


def test_bare_optimize_on_a_class_and_a_callable_object():
    @ft.optimize
    class Affine:
        def __init__(self, w):
            self.w = w

        def __call__(self, x):
            return x * self.w + 1.0

    class Square:
        def __call__(self, x):
            return x * x

    x = np.arange(3.0)
    np.testing.assert_array_equal(Affine(2.0)(x), x * 2.0 + 1.0)
    assert entries(ft.innermost_fn(Affine.__call__)) == 1
    sq = ft.optimize(Square())
    np.testing.assert_array_equal(sq(x), x * x)
    assert len(rt.cache_entries(Square.__call__.__code__)) == 1


def test_optimize_with_the_function_first_takes_keyword_settings():
    strict = ft.optimize(prints, nopython=True)
    with pytest.raises(TranslatorError, match="FH005"):
        strict(np.arange(2.0))
    check_agrees(scale, (np.arange(3.0),), optimized=ft.optimize(scale, dynamic=False))


def test_a_callable_of_two_arguments_is_still_a_backend():
    calls = []

    def counting(graph, example_inputs):
        calls.append(len(example_inputs))
        return graph.forward

    check_agrees(scale, (np.arange(3.0),), optimized=ft.optimize(counting)(scale))
    assert calls == [1]


def test_bare_optimize_over_a_two_argument_function_says_what_happened():
    @ft.optimize
    def add(a, b):  # indistinguishable from a backend(graph, example_inputs)
        return a + b

    with pytest.raises(TypeError) as info:
        add(np.ones(2), np.ones(2))
    assert str(info.value) == (
        "optimize(add) took add as the backend (a function of two positional arguments cannot be told from a "
        "backend(graph, example_inputs)), so calling what it returned decorates: that expects a function, "
        "method, class or callable object, got 2 positional and 0 keyword arguments. If add is the function "
        "to optimize (a bare `@optimize` over it), write `@optimize()`"
    )
    with pytest.raises(TypeError, match=r"^optimize\(add\) took add as the backend.*got ndarray"):
        add(np.ones(2))
    with pytest.raises(TypeError, match="expects a function, method, class or callable object, got int"):
        ft.optimize()(3)  # a registered backend: the plain message


# ------------------------------------------------------------------ explain() keeps other caches
def test_explain_keeps_the_caches_of_other_functions():
    opt = ft.optimize("eager")(scale)
    x = np.arange(5.0)
    opt(x)
    assert entries(scale) == 1
    out = ft.explain(shift)(x)
    assert out.graph_count == 1
    with Reports() as reports:
        check_agrees(scale, (x,), optimized=opt)
    assert reports == []  # the entry came back: no retranslation
    assert entries(scale) == 1 and entries(shift) == 0


def test_explain_of_a_compiled_function_translates_it_afresh_and_gives_its_cache_back():
    opt = ft.optimize("eager")(scale)
    x = np.arange(5.0)
    opt(x)
    out = ft.explain(scale)(x)
    assert out.graph_count == 1 and out.op_count == 2
    with Reports() as reports:
        check_agrees(scale, (x,), optimized=opt)
    assert reports == []
    with Reports() as reports:
        opt(np.arange(7.0))  # another shape: a real recompilation
    assert len(reports) == 1


def test_explain_twice_still_translates_and_the_cache_comes_back():
    opt = ft.optimize("eager")(scale)
    x = np.arange(5.0)
    opt(x)
    for _ in range(2):  # the second explain() starts while the first one's entries are kept
        assert ft.explain(scale)(x).graph_count == 1
    with Reports() as reports:
        check_agrees(scale, (x,), optimized=opt)
    assert reports == []


def test_remove_from_cache_and_reset_drop_what_explain_kept():
    opt = ft.optimize("eager")(scale)
    x = np.arange(5.0)
    opt(x)
    ft.explain(shift)(x)
    ft.remove_from_cache(scale)
    with Reports() as reports:
        opt(x)
    assert len(reports) == 1
    ft.explain(shift)(x)
    ft.reset()
    with Reports() as reports:
        opt(x)
    assert len(reports) == 1


def test_explain_keeps_skip_marks():
    def no_numpy(a, b):
        return a + b

    ft.optimize("eager")(no_numpy)(1, 2)
    assert rt.is_skipped(no_numpy.__code__)
    ft.explain(shift)(np.ones(2))
    assert rt.is_skipped(no_numpy.__code__)


# ------------------------------------------------------------------ FRAMEHOOK_LOGS=bogus
def _import_with(env_name, value, code="import framehook.translator"):
    return subprocess.run(
        [sys.executable, "-c", code], env=dict(os.environ, **{env_name: value}), capture_output=True, text=True
    )


def test_bad_framehook_logs_is_one_line_and_the_rest_applies():
    out = _import_with("FRAMEHOOK_LOGS", "bogus", "import framehook.translator.logs")
    assert out.returncode == 0
    lines = out.stderr.splitlines()
    assert len(lines) == 1, out.stderr
    assert "FRAMEHOOK_LOGS='bogus'" in lines[0] and "'bogus'" in lines[0]
    assert "graph_breaks" in lines[0] and "all" in lines[0]  # the valid values
    code = "import logging; from framehook.translator import logs as l; print(l.get_logger('guards').level)"
    out = _import_with("FRAMEHOOK_LOGS", "guards,+nope", code)
    assert out.returncode == 0 and out.stdout.split() == [str(logging.INFO)]
    assert len(out.stderr.splitlines()) == 1 and "'+nope'" in out.stderr


# ------------------------------------------------------------------ FRAMEHOOK_DISABLE values
@pytest.mark.parametrize("value", ["1", "true", "TRUE", "yes", "Yes", "on", " ON "])
def test_framehook_disable_accepts_true_words(monkeypatch, capsys, value):
    monkeypatch.setenv("FRAMEHOOK_DISABLE", value)
    assert env_flag("FRAMEHOOK_DISABLE") is True
    assert ft.optimize()(scale) is scale
    assert capsys.readouterr().err == ""


@pytest.mark.parametrize("value", ["", "0", "false", "No", "OFF"])
def test_framehook_disable_accepts_false_words(monkeypatch, capsys, value):
    monkeypatch.setenv("FRAMEHOOK_DISABLE", value)
    assert env_flag("FRAMEHOOK_DISABLE") is False
    assert ft.optimize()(scale) is not scale
    assert capsys.readouterr().err == ""


def test_framehook_disable_other_values_warn_in_one_line(monkeypatch, capsys):
    monkeypatch.setenv("FRAMEHOOK_DISABLE", "maybe")
    assert env_flag("FRAMEHOOK_DISABLE") is False
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "FRAMEHOOK_DISABLE='maybe'" in err and "true, yes, on" in err
    env_flag("FRAMEHOOK_DISABLE")
    assert capsys.readouterr().err == ""  # once per value


def test_framehook_disable_yes_at_import():
    out = _import_with("FRAMEHOOK_DISABLE", "yes", "from framehook.translator import config; print(config.disable)")
    assert out.returncode == 0 and out.stdout.split() == ["True"] and out.stderr == ""
    assert config.disable is False  # this process: unset
