"""Every way of calling reaches the hook, also after its call sites specialized.

Where CPython inlines calls between Python functions past an installed eval function
(3.15), the hook is armed per call of a marked function instead (marks.c). These tests
hold on every version: a code given cache entries after its call sites specialized (with no
callback set, or while skipped) runs its entry on the very next call, whatever the route.
"""

from __future__ import annotations

import asyncio
import dis
import functools
import sys
import threading

import pytest

import framehook.runtime as rt
from framehook.runtime import _C

MARK, REPLACED = 123456789, 987654321  # targets spell MARK as a literal: a constant
WARM = 300  # calls enough for every call site on the way to specialize
# A site that failed to specialize many times retries after an exponential back-off,
# at most 4,096 executions (Include/internal/pycore_backoff.h)
BACKED_OFF = 2 * 4096


@pytest.fixture(autouse=True)
def fresh_route_codes():
    """The routes' codes are constants of the route functions: shared by every call."""
    yield
    for route in ROUTES:
        rt.reset_code(route()[0])


def replaced(code):
    """The same code returning REPLACED where it returned MARK (the same layout)."""
    consts = tuple(REPLACED if type(c) is int and c == MARK else c for c in code.co_consts)
    assert consts != code.co_consts
    return code.replace(co_consts=consts)


class Switch:
    """A callback giving `target` an entry while on, and skipping every code otherwise."""

    def __init__(self, target):
        self.target = target
        self.on = False
        self.asked = 0

    def __call__(self, frame, entry, state):
        if frame.f_code is self.target and self.on:
            self.asked += 1
            return rt.GuardedCode(replaced(self.target), lambda L: True)
        return None


# ---- the ways of calling: each gives the target's code and a call through the route ----
def plain():
    def target(x):
        return 123456789

    return target.__code__, lambda: target(1)


def keywords():
    def target(x, y=2):
        return 123456789

    return target.__code__, lambda: target(1, y=3)


def star_args():
    def target(*a, **k):
        return 123456789

    args, kwargs = (1, 2), {"z": 3}
    return target.__code__, lambda: target(*args, **kwargs)


def method():
    class C:
        def target(self):
            return 123456789

    c = C()
    return C.target.__code__, lambda: c.target()


def super_call():
    class Base:
        def target(self):
            return 123456789

    class Derived(Base):
        def target(self):
            return super().target()

    d = Derived()
    return Base.target.__code__, lambda: d.target()


def init():
    class C:
        def __init__(self):
            self.v = 123456789

    return C.__init__.__code__, lambda: C().v


def init_inherited():
    class Base:
        def __init__(self, x):
            self.v = 123456789

    class Derived(Base):
        pass

    return Base.__init__.__code__, lambda: Derived(1).v


def prop():
    class C:
        @property
        def target(self):
            return 123456789

    c = C()
    return C.target.fget.__code__, lambda: c.target


def getitem():
    class C:
        def __getitem__(self, k):
            return 123456789

    c = C()
    return C.__getitem__.__code__, lambda: c[0]


def getattribute():
    class C:
        def __getattribute__(self, name):
            return 123456789

    c = C()
    return C.__getattribute__.__code__, lambda: c.anything


def partial():
    def target(a, b):
        return 123456789

    p = functools.partial(target, 1)
    return target.__code__, lambda: p(2)


def from_c():
    def target(x):
        return 123456789

    return target.__code__, lambda: list(map(target, [1]))[0]


def closure_made_later():
    def make(k):
        def target(x):
            return 123456789 + 0 * k

        return target

    first = make(0)

    def call():
        # the call site below specialized for earlier closures of the same code
        fn = first if call.n < WARM else make(call.n)
        call.n += 1
        return fn(1)

    call.n = 0
    return first.__code__, call


def recursion():
    def target(n):
        return 123456789 if n == 0 else target(n - 1)

    return target.__code__, lambda: target(3)


def from_generator():
    def target(x):
        return 123456789

    def gen():
        while True:
            yield target(1)

    g = gen()
    return target.__code__, lambda: next(g)


def from_coroutine():
    def target(x):
        return 123456789

    async def coro():
        return target(1)

    def call():
        c = coro()
        try:
            c.send(None)
        except StopIteration as stop:
            return stop.value
        raise AssertionError("the coroutine did not finish")

    return target.__code__, call


ROUTES = [
    plain,
    keywords,
    star_args,
    method,
    super_call,
    init,
    init_inherited,
    prop,
    getitem,
    getattribute,
    partial,
    from_c,
    closure_made_later,
    recursion,
    from_generator,
    from_coroutine,
]


def warm(call):
    for _ in range(WARM):
        call()


INIT_SITES_IGNORE_HOOK = sys.version_info[:2] == (3, 13)


def skip_init_sites_on_313(route):
    if route in (init, init_inherited) and INIT_SITES_IGNORE_HOOK:
        pytest.skip(
            "CPython 3.13's CALL_ALLOC_AND_ENTER_INIT enters __init__ without checking for an eval "
            "function, and its specializer makes it while one is installed (fixed in 3.14)"
        )


@pytest.mark.parametrize("route", ROUTES, ids=lambda r: r.__name__)
def test_entries_given_after_specializing_are_run(route):
    skip_init_sites_on_313(route)
    target, call = route()
    warm(call)  # call sites specialize with no callback set
    switch = Switch(target)
    with rt.enable(switch):
        warm(call)  # every code decided: skipped
        assert call() == MARK
        switch.on = True
        rt.reset_code(target)  # undecided again while call sites point at it
        assert call() == REPLACED
        for _ in range(WARM):  # sites that retry specializing meanwhile must not inline it
            assert call() == REPLACED  # the entry, not the callback
        assert switch.asked == 1
        switch.on = False
        rt.reset_code(target)
        assert call() == MARK  # skipped again
        warm(call)
        switch.on = True
        rt.reset_code(target)
        assert call() == REPLACED
    assert call() == MARK  # no callback: the entry is not consulted
    with rt.run_only():
        assert call() == REPLACED
    rt.reset_code(target)


@pytest.mark.parametrize("route", [plain, method, init, closure_made_later], ids=lambda r: r.__name__)
def test_entries_given_on_first_activation_are_run(route):
    skip_init_sites_on_313(route)
    target, call = route()
    warm(call)
    switch = Switch(target)
    switch.on = True
    with rt.enable(switch):
        assert call() == REPLACED
    rt.reset_code(target)


def test_thread_without_callback_runs_codes_unmodified():
    target, call = plain()
    switch = Switch(target)
    switch.on = True
    results = []
    with rt.enable(switch):
        assert call() == REPLACED
        worker = threading.Thread(target=lambda: results.append(call()))
        worker.start()
        worker.join()
    assert results == [MARK]
    rt.reset_code(target)


def test_callbacks_set_from_eight_threads_while_others_run_specialized_code():
    """Threads set and clear callbacks while others run warm code: each thread's calls are
    seen exactly when it has a callback, as with an installed hook."""
    errors = []
    barrier = threading.Barrier(8)

    def worker(i):
        try:
            target, call = plain()
            switch = Switch(target)
            switch.on = True
            barrier.wait()
            for _ in range(20):
                warm(call)
                assert call() == MARK
                with rt.enable(switch):
                    assert call() == REPLACED
                    rt.reset_code(target)  # reset from this thread while others call
                    assert call() == REPLACED
                assert call() == MARK
        except BaseException as exc:  # reported below
            errors.append(exc)

    threads = [threading.Thread(target=worker, args=(i,)) for i in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == []


def test_reset_from_inside_the_callback():
    target, call = plain()
    calls = []

    def cb(frame, entry, state):
        if frame.f_code is target:
            calls.append(1)
            rt.reset_code(target)
            return rt.GuardedCode(replaced(target), lambda L: True)
        return None

    warm(call)
    with rt.enable(cb):
        assert call() == REPLACED
        assert call() == REPLACED
    assert len(calls) == 1
    rt.reset_code(target)


def specialized_calls(fn):
    return [i.opname for i in dis.get_instructions(fn, adaptive=True) if i.opname.startswith("CALL")]


armed_per_call = pytest.mark.skipif(
    _C._marks_stats() is None,
    reason="on this CPython the hook is an installed eval function, which keeps calls from specializing",
)


@armed_per_call
def test_skipped_code_is_called_by_specialized_sites_while_a_callback_is_set():
    def target(x):
        return x

    def driver():
        return target(1)

    with rt.enable(lambda frame, entry, state: None):
        warm(driver)
        assert not _C._is_marked(target)
        assert "CALL_PY_EXACT_ARGS" in specialized_calls(driver)
        rt.reset_code(target.__code__)  # undecided again: marked, the site falls back
        assert _C._is_marked(target)
        driver()  # skipped again by the callback
        assert not _C._is_marked(target)
        warm(driver)
        assert "CALL_PY_EXACT_ARGS" in specialized_calls(driver)


@armed_per_call
def test_skip_code_and_no_callback_give_functions_back_their_fast_path():
    def target(x):
        return x

    def driver():
        return target(1)

    def cb(frame, entry, state):
        return rt.GuardedCode(frame.f_code, lambda L: True) if frame.f_code is target.__code__ else None

    with rt.enable(cb):
        warm(driver)
        assert _C._is_marked(target)  # it has an entry
        assert "CALL_PY_EXACT_ARGS" not in specialized_calls(driver)
    driver()  # no callback: unmarked at its first call
    assert not _C._is_marked(target)
    for _ in range(BACKED_OFF):
        driver()
    assert "CALL_PY_EXACT_ARGS" in specialized_calls(driver)
    with rt.enable(cb):
        assert _C._is_marked(target)  # marked again on activation
        rt.skip_code(target.__code__)
        driver()
        assert not _C._is_marked(target)
    rt.reset_code(target.__code__)


@armed_per_call
def test_skipped_codes_reset_with_no_callback_are_marked_at_activation_without_a_heap_walk():
    def target(x):
        return x

    # distinct codes, as a translator's reset or a CallObserver's exit resets them
    fns = [type(target)(target.__code__.replace(co_name=f"target_{i}"), globals()) for i in range(20)]
    with rt.enable(lambda frame, entry, state: None):
        for fn in fns:
            assert fn(1) == 1  # skipped at its first call, and unmarked
    assert not any(_C._is_marked(fn) for fn in fns)
    fns.append(type(target)(fns[0].__code__, globals()))  # made while its code is skipped
    sweeps = _C._marks_stats()["sweeps"]
    for fn in fns:
        rt.reset_code(fn.__code__)  # no callback set: marked at the next activation
    assert _C._marks_stats()["sweeps"] == sweeps
    asked = []
    with rt.enable(lambda frame, entry, state: asked.append(frame.f_code)):
        assert _C._marks_stats()["sweeps"] == sweeps  # from the skipped set, not the heap
        assert all(_C._is_marked(fn) for fn in fns)
        for fn in fns:
            assert fn(2) == 2
    assert {fn.__code__ for fn in fns} <= set(asked)
    for fn in fns:
        rt.reset_code(fn.__code__)


@armed_per_call
def test_generators_and_class_bodies_are_never_marked():
    def gen():
        yield 1

    async def coro():
        return 1

    with rt.enable(lambda frame, entry, state: None):
        assert not _C._is_marked(gen)
        assert not _C._is_marked(coro)
        assert list(gen()) == [1]
        assert asyncio.run(coro()) == 1


@armed_per_call
def test_functions_made_while_active_are_marked_and_while_idle_are_not():
    def make():
        def inner():
            return 1

        return inner

    idle = make()
    assert not _C._is_marked(idle)
    with rt.enable(lambda frame, entry, state: None):
        made = make()
        assert _C._is_marked(made)
        assert made() == 1
        assert not _C._is_marked(made)  # skipped at its first call


def test_marks_stats_and_is_marked_arguments():
    with pytest.raises(TypeError, match="must be a function"):
        _C._is_marked(len)
    stats = _C._marks_stats()
    if sys.version_info >= (3, 15):
        assert set(stats) == {"active", "sweeps", "marks", "unmarks", "type_walks", "idle", "inits_with_entries"}
    else:
        assert stats is None


@armed_per_call
def test_init_entries_install_the_hook_until_reset():
    """CALL_ALLOC_AND_ENTER_INIT checks only the class's version before entering __init__:
    while an __init__ has entries the eval function is installed as well."""
    target, call = init()

    def f(x):
        return x

    def driver():
        return f(1)

    switch = Switch(target)
    switch.on = True
    with rt.enable(switch):
        assert call() == REPLACED
        assert _C._marks_stats()["inits_with_entries"] == 1
        for _ in range(BACKED_OFF):
            driver()
        assert "CALL_PY_EXACT_ARGS" not in specialized_calls(driver)  # installed: nothing specializes
        switch.on = False
        rt.reset_code(target)
        assert _C._marks_stats()["inits_with_entries"] == 0
        assert call() == MARK  # skipped; the eval function goes at the next marked call
        for _ in range(BACKED_OFF):
            driver()
        assert "CALL_PY_EXACT_ARGS" in specialized_calls(driver)
