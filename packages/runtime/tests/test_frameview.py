"""The read-only frame view given to callbacks, on every version."""

from __future__ import annotations

import sys

import pytest

import framehook.runtime as rt
from runtime_helpers import targeting

CONST = 7


def make_closure():
    captured = [1, 2]

    def target(a, b=2, *rest, key, opt=None, **extra):
        return a, b, rest, key, opt, extra, captured

    return target


def test_view_attributes():
    target = make_closure()
    got = {}

    def cb(frame, entry, state):
        got["code"] = frame.f_code
        got["globals"] = frame.f_globals
        got["builtins"] = frame.f_builtins
        got["locals"] = dict(frame.f_locals)
        got["lasti"] = frame.f_lasti
        got["lineno"] = frame.f_lineno
        got["back"] = frame.f_back
        got["function"] = frame.function
        got["repr"] = repr(frame)
        with pytest.raises(TypeError):
            frame.f_locals["a"] = 5  # read-only mapping
        with pytest.raises(AttributeError):
            frame.f_code = None
        return None

    def caller():
        return target(1, 3, 4, key="k", extra=9)

    with rt.enable(targeting(target, cb)):
        assert caller() == (1, 3, (4,), "k", None, {"extra": 9}, [1, 2])
    assert got["code"] is target.__code__
    assert got["globals"] is globals()
    assert got["builtins"]["len"] is len
    assert got["locals"] == {
        "a": 1,
        "b": 3,
        "rest": (4,),
        "key": "k",
        "opt": None,
        "extra": {"extra": 9},
        "captured": [1, 2],
    }
    assert got["lasti"] == -1
    assert got["lineno"] == target.__code__.co_firstlineno
    assert got["back"].f_code is caller.__code__
    assert got["function"] is target
    assert "FrameView of target" in got["repr"]


def test_view_locals_include_argument_cells():
    def target(a, b):
        def inner():
            return a + b

        return inner()

    got = {}

    def cb(frame, entry, state):
        got.update(frame.f_locals)
        return rt.GuardedCode(frame.f_code.replace(), lambda L: True)

    with rt.enable(targeting(target, cb)):
        assert target(2, 5) == 7
        assert target(3, 5) == 8  # cached copy still builds cells from the arguments
    assert got == {"a": 2, "b": 5}
    rt.reset_code(target.__code__)


def test_view_is_dead_after_callback():
    def target():
        return 1

    kept = []

    def cb(frame, entry, state):
        kept.append(frame)
        return None

    with rt.enable(targeting(target, cb)):
        target()
    view = kept[0]
    assert "released" in repr(view)
    for attr in ("f_code", "f_globals", "f_builtins", "f_locals", "f_lasti", "f_lineno", "f_back", "function"):
        with pytest.raises(RuntimeError, match="after its callback returned"):
            getattr(view, attr)
    rt.reset_code(target.__code__)


def test_function_is_none_when_unknown_on_old_versions():
    # exec'ing a function's code creates a frame without a function object
    def target():
        return CONST

    got = []

    def cb(frame, entry, state):
        got.append(frame.function)
        return None

    with rt.enable(targeting(target, cb)):
        exec(target.__code__, {"CONST": 1})  # no function has this code with these globals
    if sys.version_info >= (3, 10):
        assert got == []  # 3.10+: exec'd frames carry a locals mapping and are not intercepted
    else:
        assert got == [None]  # 3.9 builds a function-like frame, but no function has it
    rt.reset_code(target.__code__)
