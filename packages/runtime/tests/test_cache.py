"""The per-code cache: entries, guards, move-to-front, frame_state, reset, freeing."""

from __future__ import annotations

import gc
import weakref

import pytest

import framehook.runtime as rt
from runtime_helpers import targeting


def make_function(src: str, name: str):
    ns: dict = {}
    exec(src, ns)
    return ns[name]


def variant(fn, offset):
    """Code for the same signature that adds `offset` to the result."""
    src = f"def {fn.__name__}(x):\n    return x + {offset}\n"
    return make_function(src, fn.__name__).__code__


def test_guarded_entries_most_recent_first_and_hits():
    f = make_function("def f(x):\n    return x\n", "f")

    # positive numbers run variant 1000, negative ones variant 2000
    def cb(frame, entry, state):
        state.setdefault("misses", []).append(frame.f_locals["x"])
        if frame.f_locals["x"] >= 0:
            return rt.GuardedCode(variant(f, 1000), lambda L: L["x"] >= 0)
        return rt.GuardedCode(variant(f, 2000), lambda L: L["x"] < 0)

    with rt.enable(targeting(f, cb)):
        assert f(1) == 1001
        assert f(2) == 1002
        assert f(-1) == 1999
        assert f(-2) == 1998
        assert f(3) == 1003
    entries = rt.cache_entries(f.__code__)
    assert [e.hits for e in entries] == [2, 1]  # the positive entry was hit last
    assert [e.code.co_consts for e in entries][0] != entries[1].code.co_consts
    assert rt.frame_state(f.__code__) == {"misses": [1, -1]}


def test_cache_entry_argument_is_latest_entry():
    f = make_function("def f(x):\n    return x\n", "f")
    got = []

    def cb(frame, entry, state):
        got.append(entry)
        return rt.GuardedCode(variant(f, frame.f_locals["x"] * 10), lambda L, x=frame.f_locals["x"]: L["x"] == x)

    with rt.enable(targeting(f, cb)):
        assert f(1) == 11
        assert f(2) == 22
    assert got[0] is None
    assert isinstance(got[1], rt.CacheEntryInfo)
    assert got[1].check_fn({"x": 1}) is True


def test_guard_truthiness_not_bool():
    f = make_function("def f(x):\n    return x\n", "f")

    class Truthy:
        def __bool__(self):
            return True

    calls = []

    def cb(frame, entry, state):
        calls.append(1)
        return rt.GuardedCode(variant(f, 5), lambda L: Truthy() if L["x"] else [])

    with rt.enable(targeting(f, cb)):
        assert f(1) == 6
        assert f(1) == 6  # truthy object: hit
        assert f(0) == 5  # [] is false: miss, callback again
    assert len(calls) == 2


def test_guard_raising_calls_hook_then_propagates():
    f = make_function("def f(x):\n    return x\n", "f")
    body_ran = []
    hooked = []

    def guard(L):
        if L["x"] == 13:
            raise KeyError("unlucky")
        return True

    def cb(frame, entry, state):
        return rt.GuardedCode(variant(f, 0), guard)

    def hook(check_fn, code, f_locals, index, last):
        hooked.append((check_fn, code, dict(f_locals), index, last))

    previous = rt.set_guard_error_hook(hook)
    try:
        wrapped = targeting(f, cb)
        with rt.enable(wrapped):
            f(1)
            with pytest.raises(KeyError, match="unlucky"):
                f(13)
            assert rt.get_eval_frame() is wrapped  # still set after the error
    finally:
        assert rt.set_guard_error_hook(previous) is hook
    assert hooked == [(guard, f.__code__, {"x": 13}, 0, True)]
    assert not body_ran


def test_guard_error_hook_that_raises_is_reported_unraisable(monkeypatch):
    import sys

    f = make_function("def f(x):\n    return x\n", "f")
    reports = []
    monkeypatch.setattr(sys, "unraisablehook", lambda info: reports.append(info.exc_type))

    def guard(L):
        raise ValueError("guard")

    def bad_hook(*args):
        raise RuntimeError("hook")

    rt.set_guard_error_hook(bad_hook)
    try:
        with rt.enable(targeting(f, lambda fr, e, s: rt.GuardedCode(variant(f, 0), guard))):
            f(0)  # miss -> entry added (guards run only for existing entries)
            with pytest.raises(ValueError, match="guard"):
                f(0)
    finally:
        rt.set_guard_error_hook(None)
    assert reports == [RuntimeError]


def test_set_guard_error_hook_rejects_non_callable():
    with pytest.raises(TypeError, match="argument 'fn' must be None or a callable"):
        rt.set_guard_error_hook(42)


def test_guard_that_resets_the_cache_is_a_miss():
    f = make_function("def f(x):\n    return x\n", "f")
    calls = []

    def guard(L):
        rt.reset_code(f.__code__)
        return True

    def cb(frame, entry, state):
        calls.append(1)
        return rt.GuardedCode(variant(f, 7), guard)

    with rt.enable(targeting(f, cb)):
        assert f(1) == 8
        assert f(1) == 8  # guard wiped the list: treated as a miss, callback asked again
    assert len(calls) == 2


def test_reset_skip_and_entries_validate_argument():
    for fn in (rt.reset_code, rt.skip_code, rt.cache_entries, rt.is_skipped, rt.frame_state):
        with pytest.raises(TypeError, match="argument 'code' must be a code object"):
            fn(lambda: None)


def test_skip_code_runs_unmodified_even_in_run_only():
    f = make_function("def f(x):\n    return x\n", "f")
    with rt.enable(targeting(f, lambda fr, e, s: rt.GuardedCode(variant(f, 1), lambda L: True))):
        assert f(1) == 2
    rt.skip_code(f.__code__)
    with rt.run_only():
        assert f(1) == 1
    with rt.enable(targeting(f, lambda fr, e, s: pytest.fail("callback must not run for skipped code"))):
        assert f(1) == 1


class WeakGuard:
    """A guard that accepts everything and can be watched through a weak reference."""

    def __call__(self, f_locals):
        return True


def cached_with_weak_guard():
    """A fresh function with one cache entry whose guard is only held by the cache."""
    guard = WeakGuard()
    f = make_function("def f(x):\n    return x\n", "f")
    with rt.enable(targeting(f, lambda fr, e, s: rt.GuardedCode(variant(f, 3), guard))):
        assert f(1) == 4
    return f, weakref.ref(guard)


def test_dropping_code_frees_entries_and_check_functions():
    guard = WeakGuard()
    guard_ref = weakref.ref(guard)
    f = make_function("def f(x):\n    return x\n", "f")
    replacement = variant(f, 3)
    replacement_ref = weakref.ref(replacement) if hasattr(replacement, "__weakref__") else None
    with rt.enable(targeting(f, lambda fr, e, s: rt.GuardedCode(replacement, guard))):  # noqa: F821 - deleted below to drop the references
        assert f(1) == 4
    del guard, replacement
    assert guard_ref() is not None  # held by the cache
    code_ref = weakref.ref(f.__code__)
    del f
    gc.collect()
    assert code_ref() is None
    assert guard_ref() is None
    if replacement_ref is not None:
        assert replacement_ref() is None


def test_reset_code_frees_entries():
    f, guard_ref = cached_with_weak_guard()
    assert guard_ref() is not None
    assert len(rt.cache_entries(f.__code__)) == 1
    rt.reset_code(f.__code__)
    assert rt.cache_entries(f.__code__) == []
    assert rt.frame_state(f.__code__) is None
    assert guard_ref() is None
