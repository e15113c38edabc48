"""Bad input and failing callbacks: clear errors, the frame body never runs, the data
stack and reference counts stay intact."""

from __future__ import annotations

import sys

import pytest

import framehook.runtime as rt
from runtime_helpers import targeting


def test_callback_exception_reaches_caller_and_body_does_not_run():
    ran = []

    def target(x):
        ran.append(x)
        return x

    def cb(frame, entry, state):
        raise LookupError("callback failed")

    with rt.enable(targeting(target, cb)):
        with pytest.raises(LookupError, match="callback failed"):
            target(1)
        with pytest.raises(LookupError):
            target(2)
    assert ran == []
    assert target(3) == 3


def test_callback_bad_return_type():
    def target():
        return 1

    with rt.enable(targeting(target, lambda *a: 42)):
        with pytest.raises(TypeError, match="must return None or GuardedCode, not int"):
            target()
    assert rt.cache_entries(target.__code__) == []


@pytest.mark.parametrize(
    "replacement_src,what",
    [
        ("def target(a, b, c):\n    return a\n", "argument counts"),
        ("def target(a, b, *c):\n    return a\n", "code kinds"),
        ("def target(x, y):\n    return x\n", "argument names"),
        ("def target(a, b):\n    yield a\n", "code kinds"),
    ],
)
def test_replacement_with_incompatible_layout_is_rejected(replacement_src, what):
    def target(a, b):
        return a + b

    ns: dict = {}
    exec(replacement_src, ns)
    bad = ns["target"].__code__
    with rt.enable(targeting(target, lambda *a: rt.GuardedCode(bad, lambda L: True))):
        with pytest.raises(TypeError, match=f"cannot take the frame's values: {what} differ"):
            target(1, 2)
    assert rt.cache_entries(target.__code__) == []


def test_replacement_with_different_free_variables_is_rejected():
    def make(v):
        def target():
            return v

        return target

    def other(w):
        def target():
            return w

        return target

    target = make(1)
    bad = other(2).__code__
    with rt.enable(targeting(target, lambda *a: rt.GuardedCode(bad, lambda L: True))):
        with pytest.raises(TypeError, match="free variables differ"):
            target()


def test_guarded_code_validates_arguments():
    with pytest.raises(TypeError, match="argument 'code' must be a code object, not str"):
        rt.GuardedCode("code", lambda L: True)
    with pytest.raises(TypeError, match="argument 'check_fn' must be callable, not int"):
        rt.GuardedCode((lambda: 0).__code__, 3)
    g = rt.GuardedCode((lambda: 0).__code__, bool)
    assert "GuardedCode(code=<code object" in repr(g)
    with pytest.raises(AttributeError):
        g.code = None


def test_many_failures_leave_stack_and_refcounts_intact():
    def target(x, y=None):
        return x

    def cb(frame, entry, state):
        raise RuntimeError("no")

    arg = object()
    before = sys.getrefcount(arg)
    with rt.enable(targeting(target, cb)):
        for _ in range(20000):
            try:
                target(arg, y=arg)
            except RuntimeError:
                pass
    assert sys.getrefcount(arg) == before
    assert target(5) == 5


def test_failures_deep_in_recursion_keep_frames_consistent():
    # Recursion pushes frames across data-stack chunks; a failing callback at many depths
    # must discard exactly the refused frame each time.
    def recurse(n):
        if n == 0:
            return refused(n)
        return recurse(n - 1) + 1

    def refused(n):
        return n

    def cb(frame, entry, state):
        raise OverflowError("refused")

    with rt.enable(targeting(refused, cb)):
        for depth in range(0, 400, 13):
            with pytest.raises(OverflowError):
                recurse(depth)
    assert recurse(50) == 50


def test_replacement_raising_propagates_with_its_traceback():
    def target(x):
        return x

    ns: dict = {}
    exec("def target(x):\n    raise KeyError(x)\n", ns)
    with rt.enable(targeting(target, lambda *a: rt.GuardedCode(ns["target"].__code__, lambda L: True))):
        with pytest.raises(KeyError) as info:
            target("k")
    assert info.traceback[-1].name == "target"
