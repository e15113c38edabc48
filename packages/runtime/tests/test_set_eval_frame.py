"""set_eval_frame: per-thread callbacks, the None/False/callable modes, installation."""

from __future__ import annotations

import sys
import threading

import pytest

import framehook.runtime as rt
from runtime_helpers import targeting


def add(a, b):
    return a + b


def test_returns_previous_and_none_turns_off():
    def cb(frame, entry, state):
        return None

    assert rt.set_eval_frame(cb) is None
    assert rt.get_eval_frame() is cb
    assert rt.set_eval_frame(False) is cb
    assert rt.get_eval_frame() is False
    assert rt.set_eval_frame(None) is False
    assert rt.get_eval_frame() is None


@pytest.mark.parametrize("bad", [True, 0, 1, "cb", 3.5, object()])
def test_invalid_callback_is_type_error_and_changes_nothing(bad):
    def cb(frame, entry, state):
        return None

    rt.set_eval_frame(cb)
    try:
        with pytest.raises(TypeError, match="argument 'callback' must be None, False or a callable"):
            rt.set_eval_frame(bad)
        assert rt.get_eval_frame() is cb
    finally:
        rt.set_eval_frame(None)


def test_hook_installed_only_while_a_callback_is_set():
    assert not rt.eval_frame_installed()
    rt.set_eval_frame(lambda *a: None)
    assert rt.eval_frame_installed()
    rt.set_eval_frame(False)
    assert rt.eval_frame_installed()
    rt.set_eval_frame(None)
    assert not rt.eval_frame_installed()


def test_callback_receives_frame_entry_and_state():
    seen = []

    def cb(frame, entry, state):
        seen.append((frame.f_code, entry, type(state)))
        return None

    rt.set_eval_frame(targeting(add, cb))
    try:
        assert add(1, 2) == 3
    finally:
        rt.set_eval_frame(None)
    assert (add.__code__, None, dict) in seen


def test_none_result_skips_code_forever():
    calls = []

    def skipped(x):
        return x * 2

    def cb(frame, entry, state):
        if frame.f_code is skipped.__code__:
            calls.append(1)
        return None

    rt.reset_code(skipped.__code__)
    with rt.enable(cb):
        assert [skipped(i) for i in range(5)] == [0, 2, 4, 6, 8]
    assert calls == [1]
    assert rt.is_skipped(skipped.__code__)
    rt.reset_code(skipped.__code__)
    assert not rt.is_skipped(skipped.__code__)


def test_run_only_reuses_cache_and_never_calls_callback():
    def target(x):
        return x + 1

    replacement = (lambda x: x + 100).__code__.replace(co_name="target", co_varnames=("x",))
    calls = []

    def cb(frame, entry, state):
        if frame.f_code is target.__code__:
            calls.append(1)
            return rt.GuardedCode(replacement, lambda f_locals: f_locals["x"] < 10)
        return None

    with rt.enable(targeting(target, cb)):
        assert target(1) == 101
    assert calls == [1]
    with rt.run_only():
        assert target(2) == 102  # cached entry reused
        assert target(50) == 51  # miss: runs unmodified, no callback
    assert calls == [1]
    assert [e.hits for e in rt.cache_entries(target.__code__)] == [1]
    rt.reset_code(target.__code__)


def test_threads_have_their_own_callbacks():
    def work(x):
        return x * 3

    results = {}
    barrier = threading.Barrier(3)

    def runner(tag):
        seen = []

        def cb(frame, entry, state):
            if frame.f_code is work.__code__:
                seen.append((tag, frame.f_locals["x"]))
                # a guard that never holds: every call of this thread reaches its callback
                return rt.GuardedCode(frame.f_code.replace(), lambda f_locals: False)
            return None

        rt.set_eval_frame(cb)
        try:
            barrier.wait()
            assert rt.get_eval_frame() is cb
            assert [work(tag_value[tag]) for _ in range(2)] == [tag_value[tag] * 3] * 2
            barrier.wait()
        finally:
            rt.set_eval_frame(None)
        results[tag] = seen

    def plain():
        barrier.wait()
        assert rt.get_eval_frame() is None
        results["plain"] = work(5)
        barrier.wait()

    tag_value = {"a": 1, "b": 2}
    threads = [threading.Thread(target=runner, args=(t,)) for t in ("a", "b")]
    threads.append(threading.Thread(target=plain))
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert results["a"] == [("a", 1), ("a", 1)]
    assert results["b"] == [("b", 2), ("b", 2)]
    assert results["plain"] == 15
    assert not rt.eval_frame_installed()
    rt.reset_code(work.__code__)


def test_thread_exiting_with_callback_set_uninstalls_hook():
    started = threading.Event()

    def runner():
        rt.set_eval_frame(lambda *a: None)
        started.set()

    t = threading.Thread(target=runner)
    t.start()
    t.join()
    assert started.is_set()
    assert not rt.eval_frame_installed()


def test_chains_to_and_restores_previously_installed_eval_function(shim):
    shim.install()
    try:
        before = shim.calls()
        rt.set_eval_frame(lambda *a: None)
        assert rt.eval_frame_installed()
        add(1, 2)
        assert shim.calls() > before  # our hook forwarded the frame to the shim
        rt.set_eval_frame(None)
        assert shim.installed()  # restored exactly
    finally:
        shim.uninstall()
    assert shim.is_default()


def test_callback_set_during_callback_persists():
    def other(frame, entry, state):
        return None

    def cb(frame, entry, state):
        rt.set_eval_frame(other)
        return None

    def f():
        return 1

    rt.reset_code(f.__code__)
    rt.set_eval_frame(cb)
    try:
        f()
        assert rt.get_eval_frame() is other
    finally:
        rt.set_eval_frame(None)
    rt.reset_code(f.__code__)


def test_annotate_functions_are_intercepted_where_they_exist():
    if sys.version_info < (3, 14):
        pytest.skip("annotations are evaluated when the function is defined before 3.14 (no __annotate__, PEP 649)")
    ns: dict = {}
    # compiled without this module's future import, which would make the annotations strings
    exec(compile("def f(x: int) -> str:\n    return str(x)\n", "<annotated>", "exec", dont_inherit=True), ns)
    f = ns["f"]
    seen = []

    def cb(frame, cache_entry, frame_state):
        seen.append(frame.f_code)
        return None

    with rt.enable(cb):
        annotations = f.__annotations__
    assert annotations == {"x": int, "return": str}
    assert f.__annotate__.__code__ in seen
