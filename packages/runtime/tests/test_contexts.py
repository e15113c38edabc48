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


# ---- a misbehaving callback never keeps a scope from restoring the previous one -------------
class Misbehaves(Exception):
    pass


def _raises(frame, entry, state):
    raise Misbehaves(frame.f_code.co_name)


def _returns_junk(frame, entry, state):
    return 42  # neither None nor GuardedCode: TypeError to the caller


def _returns_wrong_layout(frame, entry, state):
    return rt.GuardedCode((lambda *much, **more: 0).__code__, bool)  # TypeError: layout differs


def _raising_guard(f_locals):
    raise Misbehaves("guard")


def _caches_raising_guard(frame, entry, state):
    # runs the frame now; every later call of the code raises from its guard
    return rt.GuardedCode(frame.f_code, _raising_guard)


MISBEHAVIOURS = {
    "raises": _raises,
    "returns-junk": _returns_junk,
    "wrong-layout": _returns_wrong_layout,
    "raising-guard": _caches_raising_guard,
}


class Counting:
    """Wraps a callback, counting the frames it is asked about."""

    def __init__(self, callback):
        self.callback, self.calls = callback, []

    def __call__(self, frame, entry, state):
        self.calls.append(frame.f_code.co_name)
        return self.callback(frame, entry, state)


def _forget_runtime_code_decisions():
    # Earlier tests' callbacks may have marked the runtime's own Python code skipped (a
    # callback returning None does): forget that, so these tests see it as a fresh callback would.
    from framehook.runtime import contexts

    for value in list(vars(contexts).values()) + list(vars(contexts._CallbackContext).values()):
        code = getattr(value, "__code__", None)
        if code is not None:
            rt.reset_code(code)


SCOPES = ["enable", "enable-around-disable", "enable-around-run_only", "enable-in-enable", "decorator", "call_with"]


def _use_scope(scope, cb):
    # Runs with the misbehaving callback `cb` in a scope of kind `scope` around a body that
    # calls no Python function (the scope objects are made before, outside). Returns the
    # callback seen inside.
    outer, inner = rt.enable(cb), {"disable": rt.disable(), "run_only": rt.run_only(), "in": rt.enable(cb_a)}
    decorated = rt.enable(cb)(rt.get_eval_frame)  # a C function as fn: nothing to intercept
    if scope == "enable":
        with outer:
            inside = rt.get_eval_frame()
    elif scope == "enable-around-disable":
        with outer:
            with inner["disable"]:
                inside = rt.get_eval_frame()
            assert rt.get_eval_frame() is cb
    elif scope == "enable-around-run_only":
        with outer:
            with inner["run_only"]:
                inside = rt.get_eval_frame()
            assert rt.get_eval_frame() is cb
    elif scope == "enable-in-enable":
        with inner["in"]:
            with outer:
                inside = rt.get_eval_frame()
            assert rt.get_eval_frame() is cb_a
    elif scope == "decorator":
        inside = decorated()
    else:
        inside = rt.call_with(cb, rt.get_eval_frame)
    return inside


@pytest.mark.parametrize("scope", SCOPES)
@pytest.mark.parametrize("misbehaviour", sorted(MISBEHAVIOURS))
def test_scope_restores_previous_callback_whatever_the_callback_does(scope, misbehaviour):
    _forget_runtime_code_decisions()
    cb = Counting(MISBEHAVIOURS[misbehaviour])
    error = None
    for _ in range(2):  # twice: the raising guard bites from the second call of a code on
        try:
            inside = _use_scope(scope, cb)
        except BaseException as e:  # noqa: BLE001 - what escaped is the assertion below
            error = e
        finally:
            # C calls only: safe with any callback left set (a Python helper would be intercepted)
            callback, installed, _ = rt.get_eval_frame(), rt.eval_frame_installed(), rt.set_eval_frame(None)
        assert (callback, installed, error) == (None, False, None)
    assert inside is (None if scope == "enable-around-disable" else False if "run_only" in scope else cb)
    # neither entering nor exiting ran a Python frame under the callback
    assert cb.calls == []


@pytest.mark.parametrize("misbehaviour", sorted(MISBEHAVIOURS))
def test_body_exception_propagates_and_callback_is_restored(misbehaviour):
    _forget_runtime_code_decisions()
    cb = Counting(MISBEHAVIOURS[misbehaviour])
    try:
        with pytest.raises(ZeroDivisionError):
            with rt.enable(cb_b):
                with rt.enable(cb):
                    1 / 0
            # (pytest.raises's own __exit__ is a Python frame: it runs after both scopes exited)
    finally:
        callback, installed, _ = rt.get_eval_frame(), rt.eval_frame_installed(), rt.set_eval_frame(None)
    assert (callback, installed, cb.calls) == (None, False, [])


def test_exit_without_entry_is_an_error_and_changes_nothing():
    ctx = rt.enable(cb_a)
    with pytest.raises(RuntimeError, match="not entered on this thread"):
        ctx.__exit__(None, None, None)
    with ctx:
        pass
    with pytest.raises(RuntimeError, match="not entered on this thread"):
        ctx.__exit__(None, None, None)
    assert rt.get_eval_frame() is None


def test_scope_entered_in_a_thread_that_exits_inside_it():
    # a generator suspended inside a scope, dropped by a thread that then ends: the thread's
    # pending entry is released with it, and the hook removed
    def worker():
        def gen():
            with rt.enable(cb_b):
                yield rt.get_eval_frame()

        g = gen()
        seen.append(next(g))
        held.append(g)  # never resumed here

    seen, held = [], []
    t = threading.Thread(target=worker)
    t.start()
    t.join()
    assert seen == [cb_b] and not rt.eval_frame_installed()
    # closing it here exits the scope on a thread that never entered it: an error, no change
    with pytest.raises(RuntimeError, match="not entered on this thread"):
        held.pop().close()
    assert rt.get_eval_frame() is None
