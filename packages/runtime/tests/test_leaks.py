"""A million hooked calls leave memory flat; CallbackWrapper calls, scopes and their cycles
keep references and memory flat."""

from __future__ import annotations

import functools
import gc
import resource
import sys
import threading
import tracemalloc
import weakref

import pytest

import framehook.runtime as rt
from runtime_helpers import targeting

CALLS = 1_000_000


def small(a, b=1):
    return a + b


def rss_kib():
    with open("/proc/self/statm") as fh:
        return int(fh.read().split()[1]) * resource.getpagesize() // 1024


def test_million_cache_hits_keep_memory_flat():
    replacement = small.__code__.replace()
    cb = targeting(small, lambda *a: rt.GuardedCode(replacement, lambda L: L["a"] >= 0))
    with rt.enable(cb):
        for i in range(1000):  # warm up caches and freelists
            small(i)
        gc.collect()
        tracemalloc.start()
        rss_before = rss_kib()
        snap_before = tracemalloc.take_snapshot()
        for i in range(CALLS):
            small(i, b=2)
        gc.collect()
        snap_after = tracemalloc.take_snapshot()
        rss_after = rss_kib()
        tracemalloc.stop()
    growth = sum(s.size_diff for s in snap_after.compare_to(snap_before, "filename"))
    assert rt.cache_entries(small.__code__)[0].hits == CALLS + 999
    assert growth < 64 * 1024, f"traced memory grew by {growth} bytes over {CALLS} calls"
    assert rss_after - rss_before < 4096, f"RSS grew by {rss_after - rss_before} KiB over {CALLS} calls"
    rt.reset_code(small.__code__)


def test_many_misses_and_resets_keep_memory_flat():
    def target(x):
        return x

    def cb(frame, entry, state):
        return rt.GuardedCode(frame.f_code.replace(), lambda L: False)  # never hits

    with rt.enable(targeting(target, cb)):
        for i in range(2000):
            target(i)
            rt.reset_code(target.__code__)
        gc.collect()
        tracemalloc.start()
        before = tracemalloc.take_snapshot()
        for i in range(50_000):
            target(i)
            if i % 100 == 0:
                rt.reset_code(target.__code__)
        rt.reset_code(target.__code__)
        gc.collect()
        after = tracemalloc.take_snapshot()
        tracemalloc.stop()
    growth = sum(s.size_diff for s in after.compare_to(before, "filename"))
    assert growth < 64 * 1024, f"traced memory grew by {growth} bytes"


class _Holder:
    def __init__(self):
        self.n = 0

    def _bump(self, k, *, by=1):
        self.n += k * by
        return self.n

    bump = rt.CallbackWrapper(False, _bump)


def _fail(x):
    raise ValueError(x)


def test_callback_wrapper_calls_keep_references_and_memory_flat():
    arg, kwval, callback = object(), object(), targeting(small, lambda *a: None)
    plain = rt.CallbackWrapper(callback, lambda a, b=None: a)
    failing = rt.CallbackWrapper(callback, _fail)
    holder = _Holder()

    def run(n):
        for _ in range(n):
            plain(arg)
            plain(arg, b=kwval)
            holder.bump(1, by=2)
            try:
                failing(arg)
            except ValueError:
                pass

    run(1000)  # warm up
    gc.collect()
    counts = [sys.getrefcount(o) for o in (arg, kwval, callback, plain, failing, holder)]
    tracemalloc.start()
    before = tracemalloc.take_snapshot()
    run(100_000)
    gc.collect()
    after = tracemalloc.take_snapshot()
    tracemalloc.stop()
    assert [sys.getrefcount(o) for o in (arg, kwval, callback, plain, failing, holder)] == counts
    assert holder.n == 2 * 101_000
    growth = sum(s.size_diff for s in after.compare_to(before, "filename"))
    assert growth < 64 * 1024, f"traced memory grew by {growth} bytes"


def test_callback_wrappers_in_cycles_are_freed():
    def cycle():
        w = functools.update_wrapper(rt.CallbackWrapper(None, small), small)
        w.me = w
        return w

    for _ in range(1000):
        cycle()
    gc.collect()
    tracemalloc.start()
    before = tracemalloc.take_snapshot()
    for _ in range(20_000):
        cycle()
    gc.collect()
    after = tracemalloc.take_snapshot()
    tracemalloc.stop()
    growth = sum(s.size_diff for s in after.compare_to(before, "filename"))
    assert growth < 64 * 1024, f"traced memory grew by {growth} bytes"


def test_cache_entry_infos_in_cycles_are_freed():
    # found by the atheris target: a guard that refers to an object holding the info made a
    # cycle the collector never saw, since the info was not tracked
    class Holder:
        pass

    def target(a):
        return a

    def one_cycle():
        holder = Holder()
        guarded = rt.GuardedCode(target.__code__, lambda f_locals: holder is not None)
        rt.call_with(lambda frame, entry, state: guarded if frame.f_code is target.__code__ else None, target, 1)
        holder.info = rt.cache_entries(target.__code__)[0]
        rt.reset_code(target.__code__)
        return weakref.ref(holder), gc.is_tracked(holder.info)

    ref, tracked = one_cycle()
    gc.collect()
    assert tracked
    assert ref() is None, "a cycle through a CacheEntryInfo outlived gc.collect()"


def _raising_callback(frame, entry, state):
    raise RuntimeError("cb")


def test_scopes_keep_references_and_memory_flat():
    callback = _raising_callback
    outer, inner = rt.enable(callback), rt.disable()

    def run(n):
        for _ in range(n):
            with outer:
                with inner:
                    with inner:
                        pass
            try:
                with outer:
                    raise KeyError("body")
            except KeyError:
                pass
            try:
                inner.__exit__(None, None, None)  # not entered: an error, nothing changes
            except RuntimeError:
                pass

    run(1000)  # warm up
    gc.collect()
    counts = [sys.getrefcount(o) for o in (callback, outer, inner)]
    tracemalloc.start()
    before = tracemalloc.take_snapshot()
    run(100_000)
    gc.collect()
    after = tracemalloc.take_snapshot()
    tracemalloc.stop()
    assert [sys.getrefcount(o) for o in (callback, outer, inner)] == counts
    growth = sum(s.size_diff for s in after.compare_to(before, "filename"))
    assert growth < 64 * 1024, f"traced memory grew by {growth} bytes"
    assert rt.get_eval_frame() is None


def test_scopes_in_cycles_and_pending_in_ended_threads_are_freed():
    class Callback:
        def __call__(self, frame, entry, state):
            return None

    def cycle():
        cb = Callback()
        cb.scope = rt.enable(cb)  # scope -> callback -> scope
        return weakref.ref(cb)

    def pending():
        # a thread that ends inside a scope (a generator parked in it): its entry is released
        cb = Callback()

        def gen():
            with rt.enable(cb):
                yield

        g = gen()
        next(g)
        parked.append(g)
        refs.append(weakref.ref(cb))

    refs, parked = [cycle() for _ in range(100)], []
    t = threading.Thread(target=pending)
    t.start()
    t.join()
    gc.collect()
    assert sum(r() is not None for r in refs) == 1  # only the parked generator's callback
    with pytest.raises(RuntimeError, match="not entered on this thread"):
        parked.pop().close()  # its scope exits here, on a thread without the entry
    gc.collect()
    assert all(r() is None for r in refs)
