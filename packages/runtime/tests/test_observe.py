"""CallObserver: calls of chosen code objects handed to a handler through the hook."""

from __future__ import annotations

import gc
import inspect
import threading
import tracemalloc
import weakref

import pytest

import framehook.runtime as rt
from framehook.runtime.observe import CallObserver, observable, trampoline


@pytest.fixture(autouse=True)
def traced_callbacks():
    """Let trace functions (coverage.py) see the observer's callback run."""
    previous = rt.set_trace_callbacks(True)
    yield
    rt.set_trace_callbacks(previous)


def plain(a, b=2):
    return a + b


def layouts():
    k = 5

    def posonly(a, /, b, *rest, c, d=4, **kw):
        return (a, b, rest, c, d, kw, k)

    def kwonly(*, c):
        return (c, k)

    def cells(a, b):
        def inner():
            return a + b  # a and b are cells of cells()

        return inner()

    return posonly, kwonly, cells


class Base:
    def who(self):
        return "base"


class Child(Base):
    def who(self):
        return "child/" + super().who()  # a __class__ free variable


def fact(n):
    return 1 if n <= 1 else n * fact(n - 1)


def boom(x):
    raise ValueError(x)


def gen():
    yield 1


class Log:
    def __init__(self):
        self.calls = []

    def __call__(self, fn, args, kwargs):
        self.calls.append((fn, args, kwargs))
        return fn(*args, **kwargs)


def test_each_call_goes_to_the_handler_with_its_function_and_arguments():
    log = Log()
    posonly, kwonly, cells = layouts()
    observer = CallObserver(log)
    for fn in (plain, posonly, kwonly, cells, Child.who):
        assert observer.add(fn.__code__)
    with observer:
        assert plain(1) == 3
        assert posonly(1, 2, 3, c=4, e=5) == (1, 2, (3,), 4, 4, {"e": 5}, 5)
        assert kwonly(c=1) == (1, 5)
        assert cells(2, 3) == 5
        assert Child().who() == "child/base"
    assert [(fn.__name__, args, kwargs) for fn, args, kwargs in log.calls[:4]] == [
        ("plain", (1, 2), {}),
        ("posonly", (1, 2, 3), {"c": 4, "d": 4, "e": 5}),
        ("kwonly", (), {"c": 1}),
        ("cells", (2, 3), {}),
    ]
    assert log.calls[0][0] is plain and log.calls[1][0] is posonly
    assert observer.calls == 5 and observer.missed == 0


def test_closures_sharing_a_code_are_told_apart():
    def make(k):
        def f(x):
            return x + k

        return f

    one, two = make(1), make(2)
    log = Log()
    observer = CallObserver(log)
    observer.add(one.__code__)
    with observer:
        assert (one(0), two(0)) == (1, 2)
    assert [fn for fn, _, _ in log.calls] == [one, two]


def test_only_outermost_calls_reach_the_handler():
    log = Log()
    observer = CallObserver(log)
    observer.add(fact.__code__)
    with observer:
        assert fact(5) == 120
        assert fact(3) == 6
    assert [args for _, args, _ in log.calls] == [(5,), (3,)]


def test_the_handler_decides_the_result_and_exceptions_propagate():
    observer = CallObserver(lambda fn, args, kwargs: ("handled", args))
    observer.add(plain.__code__)
    with observer:
        assert plain(1, b=5) == ("handled", (1, 5))
    failing = CallObserver(lambda fn, args, kwargs: fn(*args, **kwargs))
    failing.add(boom.__code__)
    with failing:
        with pytest.raises(ValueError, match="7"):
            boom(7)


def test_identity_and_code_are_untouched_and_nothing_is_left_behind():
    code = plain.__code__
    observer = CallObserver(Log())
    observer.add(code)
    with observer:
        assert plain.__code__ is code
        plain(1)
        assert len(rt.cache_entries(code)) == 1  # at most one entry per code
        plain(2)
        assert len(rt.cache_entries(code)) == 1
    assert rt.cache_entries(code) == [] and not rt.is_skipped(code)
    assert rt.get_eval_frame() is None


def test_codes_the_hook_cannot_see_at_their_start_are_refused():
    observer = CallObserver(Log())
    assert not observable(gen.__code__) and not observer.add(gen.__code__)
    # a parameter that cannot be written in a def (a comprehension's ".0" on 3.9-3.11)
    odd = plain.__code__.replace(co_varnames=(".0", "b"))
    assert not observer.add(odd)
    assert observer.targets() == []
    assert observer.add(plain.__code__) and observer.add(plain.__code__)
    assert observer.targets() == [plain.__code__]


def test_choose_adds_codes_met_later_and_release_stops_observing():
    log = Log()
    observer = CallObserver(log, choose=lambda code: code.co_name in ("plain", "fact"))
    with observer:
        plain(1)
        fact(2)
        boom_code = boom.__code__
        with pytest.raises(ValueError):
            boom(1)
        assert rt.is_skipped(boom_code)  # not chosen: never asked about again
        observer.release(plain.__code__)
        plain(2)
        plain(3)
    assert [fn.__name__ for fn, _, _ in log.calls] == ["plain", "fact"]
    assert not rt.is_skipped(boom_code) and not rt.is_skipped(plain.__code__)


def test_a_choose_that_raises_chooses_nothing():
    def choose(code):
        raise RuntimeError("no")

    log = Log()
    with CallObserver(log, choose=choose):
        assert plain(1) == 3
    assert log.calls == []


def test_other_threads_are_not_observed():
    log = Log()
    observer = CallObserver(log)
    observer.add(plain.__code__)
    results = []
    with observer:
        worker = threading.Thread(target=lambda: results.append(plain(10)))
        worker.start()
        worker.join()
        plain(1)
    assert results == [12] and len(log.calls) == 1


def test_entered_once_at_a_time_and_again_after_exit():
    observer = CallObserver(Log())
    observer.add(plain.__code__)
    with observer:
        with pytest.raises(RuntimeError):
            observer.__enter__()
    with observer:
        plain(1)
    assert observer.calls == 1


def test_trampoline_layout_matches_and_names_the_function():
    posonly, _, _ = layouts()
    code = posonly.__code__
    tramp = trampoline(code, lambda *a, **k: None)
    assert (
        tramp.co_varnames[: code.co_argcount + code.co_kwonlyargcount + 2]
        == code.co_varnames[: code.co_argcount + code.co_kwonlyargcount + 2]
    )
    assert tramp.co_freevars == code.co_freevars
    assert (tramp.co_name, tramp.co_filename, tramp.co_firstlineno) == (
        code.co_name,
        code.co_filename,
        code.co_firstlineno,
    )
    assert inspect.CO_VARARGS & tramp.co_flags and inspect.CO_VARKEYWORDS & tramp.co_flags


def test_many_observed_calls_keep_memory_flat():
    observer = CallObserver(lambda fn, args, kwargs: fn(*args, **kwargs))
    observer.add(plain.__code__)
    with observer:
        for i in range(200):
            plain(i)
        gc.collect()
        tracemalloc.start()
        before = tracemalloc.take_snapshot()
        for i in range(20_000):
            plain(i)
        gc.collect()
        after = tracemalloc.take_snapshot()
        tracemalloc.stop()
    growth = sum(s.size_diff for s in after.compare_to(before, "filename"))
    assert growth < 64 * 1024, f"traced memory grew by {growth} bytes over 20000 observed calls"
    ref = weakref.ref(observer)
    del observer
    gc.collect()
    assert ref() is None


def test_functions_sharing_code_and_globals_keep_their_own_arguments():
    # on 3.9/3.10 the first one found is reused for the others; every argument is passed
    fns = [lambda x, i=i: x + i for i in range(3)]
    log = Log()
    observer = CallObserver(log)
    observer.add(fns[0].__code__)
    with observer:
        assert [f(10) for f in fns] == [10, 11, 12]
    assert [args for _, args, _ in log.calls] == [(10, 0), (10, 1), (10, 2)]
