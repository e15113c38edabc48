"""Threads: started with _thread or threading, before or while recording, on every backend."""

from __future__ import annotations

import _thread
import gc
import sys
import threading

import pytest

from framehook.profiler import Profiler, _tracer
from fhprof_helpers import only

# Each test runs against every backend this interpreter has.
pytestmark = pytest.mark.usefixtures("backend")

WAIT = 30  # seconds; generous for a loaded machine


def leaf():
    return 1


def other_leaf():
    return 2


def python_children(event):
    return [c.name for c in event.children if c.kind == "python"]


def spawn(worker, *args):
    """Starts worker(*args) with _thread directly; returns (ident, finished event)."""
    finished = threading.Event()

    def run():
        try:
            worker(*args)
        finally:
            finished.set()

    return _thread.start_new_thread(run, ()), finished


def raw_worker(n):
    for _ in range(n):
        leaf()


def test__thread_thread_started_while_recording():
    with Profiler() as prof:
        ident, finished = spawn(raw_worker, 3)
        assert finished.wait(WAIT)
    profile = prof.profile
    tree = profile.thread(ident)
    assert tree.name == f"Thread-{ident}-1"
    assert len([t for t in profile.threads if t.thread_id == ident]) == 1
    w = only(profile, "raw_worker")
    assert w.thread_id == ident and not w.start_frame
    assert python_children(w) == ["leaf"] * 3
    assert all(e.thread_id == ident for e in tree.walk())
    assert w.parent is not None and w.parent.name.endswith("run")
    assert w.parent.parent is None  # the thread's own function is its root


def test__thread_thread_started_while_recording_without_c_calls():
    with Profiler(c_calls=False) as prof:
        ident, finished = spawn(raw_worker, 2)
        assert finished.wait(WAIT)
    w = only(prof.profile, "raw_worker")
    assert w.thread_id == ident and python_children(w) == ["leaf"] * 2
    assert not [e for e in prof.profile.events if e.kind == "c"]


def test__thread_thread_started_before_recording():
    ready = threading.Event()
    go = threading.Event()
    finished = threading.Event()

    def waiting_worker():
        ready.set()
        go.wait()
        for _ in range(3):
            leaf()
        finished.set()

    ident = _thread.start_new_thread(waiting_worker, ())
    assert ready.wait(WAIT)  # running, and blocked in go.wait()
    with Profiler() as prof:
        go.set()
        assert finished.wait(WAIT)
    profile = prof.profile
    assert profile.thread(ident).name == f"Thread-{ident}-1"
    assert len([t for t in profile.threads if t.thread_id == ident]) == 1
    (w,) = [e for e in profile.events if e.name.endswith("waiting_worker")]
    assert w.thread_id == ident and w.start_frame
    assert python_children(w)[-4:-1] == ["leaf"] * 3  # then finished.set()


def test__thread_thread_started_just_before_recording():
    # Started right before start(): the thread may not have run yet when recording
    # starts (its state exists, its id may not be written yet). Either way it is recorded
    # once, under its own id.
    for _ in range(5):
        ident, finished = spawn(raw_worker, 2)
        with Profiler() as prof:
            assert finished.wait(WAIT)
        profile = prof.profile
        main = threading.main_thread().ident
        assert [t.thread_id for t in profile.threads].count(main) == 1
        assert not [e for e in profile.thread(main).walk() if e.name == "raw_worker"]
        assert all(t.thread_id != 0 for t in profile.threads)
        workers = profile.find("raw_worker")
        assert len(workers) <= 1  # it may have finished before start()
        if workers:
            assert workers[0].thread_id == ident
            assert len([t for t in profile.threads if t.thread_id == ident]) == 1


def test_threads_started_by_a__thread_thread_and_several_in_a_row():
    inner_done = []

    def parent_worker():
        ident, finished = spawn(raw_worker, 1)
        assert finished.wait(WAIT)
        inner_done.append(ident)
        other_leaf()

    with Profiler() as prof:
        started = [spawn(parent_worker) for _ in range(3)]
        for _, finished in started:
            assert finished.wait(WAIT)
    profile = prof.profile
    assert len(inner_done) == 3
    parents = [e for e in profile.events if e.name.endswith("parent_worker")]
    assert sorted(p.thread_id for p in parents) == sorted(i for i, _ in started)
    assert all(python_children(p)[-1] == "other_leaf" for p in parents)
    children = profile.find("raw_worker")
    assert len(children) == 3
    for w in children:
        assert python_children(w) == ["leaf"]
    # idents may be reused once a thread is gone, so count trees, not distinct idents
    roots = [t for t in profile.threads if any(e.name.endswith("raw_worker") for e in t.walk())]
    assert len(roots) == 3


def test_threading_thread_started_while_recording_has_one_tree():
    with Profiler() as prof:
        t = threading.Thread(target=raw_worker, args=(4,), name="one-tree")
        t.start()
        t.join()
    profile = prof.profile
    trees = [tree for tree in profile.threads if tree.thread_id == t.ident]
    assert len(trees) == 1 and trees[0].name == "one-tree"
    w = only(profile, "raw_worker")
    assert python_children(w) == ["leaf"] * 4 and not w.start_frame


def test_a_thread_that_starts_after_stop_is_left_alone():
    go = threading.Event()
    seen = []

    def late_worker():
        go.wait()
        seen.append(sys.getprofile())
        leaf()

    prof = Profiler()
    prof.start()
    ident, finished = spawn(late_worker)
    prof.stop()
    go.set()
    assert finished.wait(WAIT)
    assert seen == [None]  # the profile function was taken off that thread at stop
    profile = prof.profile
    assert all(t.thread_id != 0 for t in profile.threads)
    assert not profile.find("leaf")


def test_a_failed_thread_start_is_harmless():
    with Profiler() as prof:
        with pytest.raises(TypeError):
            _thread.start_new_thread(42, ())
        ident, finished = spawn(raw_worker, 1)
        assert finished.wait(WAIT)
    w = only(prof.profile, "raw_worker")
    assert w.thread_id == ident


def _contexts_alive():
    return sum(1 for o in gc.get_objects() if type(o).__name__ == "ThreadContext")


def test_thread_contexts_are_freed():
    gc.collect()
    before = _contexts_alive()
    go = threading.Event()

    def waiting_worker():
        go.wait()
        leaf()

    early, early_done = spawn(waiting_worker)
    prof = Profiler()
    prof.start()
    started = [spawn(raw_worker, 2) for _ in range(3)]
    go.set()
    for _, finished in started + [(early, early_done)]:
        assert finished.wait(WAIT)
    prof.stop()
    assert len(prof.profile.find("raw_worker")) == 3
    del prof
    gc.collect()
    assert _contexts_alive() == before
    assert _tracer.active() is None
