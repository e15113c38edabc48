"""enable / run_only / disable as context managers and decorators; require_api."""

from __future__ import annotations

import sys
import threading

import pytest

import framehook.runtime as rt


def cb_a(frame, entry, state):
    return None


def cb_b(frame, entry, state):
    return None


def test_nesting_restores_previous_callback():
    with rt.enable(cb_a):
        assert rt.get_eval_frame() is cb_a
        with rt.run_only():
            assert rt.get_eval_frame() is False
            with rt.disable():
                assert rt.get_eval_frame() is None
            assert rt.get_eval_frame() is False
        with rt.enable(cb_b):
            assert rt.get_eval_frame() is cb_b
        assert rt.get_eval_frame() is cb_a
    assert rt.get_eval_frame() is None


def test_restores_on_exception():
    with pytest.raises(ZeroDivisionError):
        with rt.enable(cb_a):
            1 / 0
    assert rt.get_eval_frame() is None


def test_same_object_reentered_and_used_on_threads():
    ctx = rt.enable(cb_a)
    with ctx:
        with rt.disable():
            with ctx:
                assert rt.get_eval_frame() is cb_a
            assert rt.get_eval_frame() is None
        assert rt.get_eval_frame() is cb_a

    seen = []

    def worker():
        with ctx:
            seen.append(rt.get_eval_frame())
        seen.append(rt.get_eval_frame())

    t = threading.Thread(target=worker)
    t.start()
    t.join()
    assert seen == [cb_a, None]


def test_decorators_wrap_calls():
    @rt.disable()
    def inner():
        return rt.get_eval_frame()

    @rt.enable(cb_b)
    def outer(x):
        return x, rt.get_eval_frame(), inner()

    assert outer(3) == (3, cb_b, None)
    assert outer.__name__ == "outer"
    assert rt.get_eval_frame() is None

    @rt.run_only()
    def ro():
        return rt.get_eval_frame()

    assert ro() is False
    # the decorators return the runtime's C wrapper: no Python frame between caller and fn
    for wrapped, original_name in ((outer, "outer"), (inner, "inner"), (ro, "ro")):
        assert type(wrapped) is rt.CallbackWrapper and wrapped.__wrapped__.__name__ == original_name
    assert outer.callback is cb_b and inner.callback is None and ro.callback is False

    def caller_name():
        return sys._getframe(1).f_code.co_name

    assert rt.disable()(caller_name)() == "test_decorators_wrap_calls"


def test_decorator_rejects_generators_and_non_callables():
    def gen():
        yield 1

    async def coro():
        return 1

    with pytest.raises(TypeError, match="cannot decorate"):
        rt.enable(cb_a)(gen)
    with pytest.raises(TypeError, match="cannot decorate"):
        rt.disable()(coro)
    with pytest.raises(TypeError, match="needs a callable"):
        rt.run_only()(42)


def test_enable_rejects_non_callable():
    with pytest.raises(TypeError, match="argument 'callback' must be callable"):
        rt.enable(None)
    assert "enable(" in repr(rt.enable(cb_a))


def test_require_api():
    rt.require_api(1, "framehook-test")
    rt.require_api(2, "framehook-test")  # 2: CallbackWrapper
    with pytest.raises(ImportError, match=r"needs framehook-runtime API 99 .*provides API 2"):
        rt.require_api(99, "framehook-test")
    with pytest.raises(TypeError, match="'min_version' must be an int"):
        rt.require_api("1", "x")
    with pytest.raises(TypeError, match="'min_version' must be an int"):
        rt.require_api(True, "x")
    with pytest.raises(TypeError, match="'package' must be a str"):
        rt.require_api(1, None)
    assert rt.__version__ == "0.2.0" and rt.API_VERSION == 2


def test_call_with_sets_and_restores_callback():
    def probe(x, *, y=0):
        return x + y, rt.get_eval_frame()

    assert rt.call_with(cb_a, probe, 1, y=2) == (3, cb_a)
    assert rt.get_eval_frame() is None
    with rt.enable(cb_b):
        assert rt.call_with(False, probe, 1) == (1, False)
        assert rt.call_with(None, probe, 1) == (1, None)
        assert rt.get_eval_frame() is cb_b


def test_call_with_restores_on_exception_and_nests():
    def boom():
        assert rt.get_eval_frame() is cb_a
        return rt.call_with(cb_b, lambda: 1 / 0)

    with pytest.raises(ZeroDivisionError):
        rt.call_with(cb_a, boom)
    assert rt.get_eval_frame() is None


def test_call_with_validates_arguments():
    with pytest.raises(TypeError, match="takes a callback and a function"):
        rt.call_with(cb_a)
    with pytest.raises(TypeError, match="argument 'callback' must be None, False or a callable"):
        rt.call_with(1, len, [])
    with pytest.raises(TypeError, match="argument 'fn' must be callable"):
        rt.call_with(cb_a, 42)
    assert rt.get_eval_frame() is None
