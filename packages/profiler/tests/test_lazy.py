"""Call trees are built on first access, never by stop(), and the same whenever built."""

from __future__ import annotations

import sys
import threading

import pytest

from framehook.profiler import Profile, Profiler, _trees

pytestmark = pytest.mark.usefixtures("backend")


def leaf(i):
    return i


def fib(n):
    return n if n < 2 else fib(n - 1) + fib(n - 2)


def worker():
    for i in range(5):
        leaf(i)
    fib(8)


class CountingEvent(_trees.Event):
    __slots__ = ()
    made = 0

    def __init__(self, *args, **kwargs):
        type(self).made += 1
        super().__init__(*args, **kwargs)


@pytest.fixture
def counted(monkeypatch):
    """Counts the Event objects the tree builder makes, and its calls."""
    CountingEvent.made = 0
    calls = []
    real_build = _trees.build

    def build(*args, **kwargs):
        calls.append(1)
        return real_build(*args, **kwargs)

    monkeypatch.setattr(_trees, "Event", CountingEvent)
    monkeypatch.setattr(_trees, "build", build)
    from framehook.profiler import _recording

    monkeypatch.setattr(_recording, "build", build)
    return calls


def record():
    prof = Profiler()
    prof.start()
    t = threading.Thread(target=worker, name="lazy-worker")
    t.start()
    t.join()
    worker()
    profile = prof.stop()
    return prof, profile


def test_stop_builds_no_event(counted):
    prof, profile = record()
    assert CountingEvent.made == 0 and not counted
    # what is known without the trees does not build them either
    assert profile.event_count > 0 and profile.duration_ns > 0
    names = dict(profile.thread_names)
    assert names[threading.main_thread().ident] == threading.main_thread().name
    assert "lazy-worker" in names.values()
    assert "raw events" in repr(profile)
    assert prof.profile is profile
    assert CountingEvent.made == 0 and not counted
    events = profile.events  # first access builds
    assert len(counted) == 1 and CountingEvent.made >= len(events) > 0
    assert all(type(e) is CountingEvent for e in events)
    made = CountingEvent.made
    assert profile.threads and profile.find("fib") and len(list(profile.walk())) == len(events)
    assert len(counted) == 1 and CountingEvent.made == made  # built once


@pytest.mark.parametrize("first", ["threads", "walk", "find", "thread"])
def test_any_access_builds_once(counted, first):
    _, profile = record()
    assert not counted
    if first == "threads":
        assert profile.threads
    elif first == "walk":
        assert next(profile.walk())
    elif first == "find":
        assert profile.find("fib")
    else:
        assert profile.thread("lazy-worker").roots
    assert len(counted) == 1
    assert profile.events and profile.threads
    assert len(counted) == 1


@pytest.mark.parametrize("fmt", ["chrome", "speedscope", "pstats", "text", "svg", "collapsed", "collapsed-calls"])
def test_outputs_build_no_tree(counted, tmp_path, fmt):
    _, profile = record()
    out = tmp_path / "out"
    profile.export(out, fmt)
    assert out.stat().st_size > 0
    assert CountingEvent.made == 0 and not counted


def snapshot(profile):
    """Everything a tree says, comparable between two builds."""
    out = []
    for tree in profile.threads:
        out.append((tree.thread_id, tree.name, tree.index, tree.broken, tree.event_count))
        for e in tree.walk():
            out.append(
                (
                    e.id,
                    e.parent_id,
                    e.thread_id,
                    e.kind,
                    e.name,
                    e.function.filename,
                    e.function.lineno,
                    e.start_ns,
                    e.end_ns,
                    e.exception,
                    e.start_frame,
                    [c.id for c in e.children],
                )
            )
    return out


def test_trees_built_later_are_the_same(monkeypatch, tmp_path):
    prof, now = record()
    early = snapshot(now)  # built at once
    # Later, the program has gone on: sys.path changed, the thread renamed, more threads
    # and calls made, collections run. A second profile of the same recording builds
    # the same trees.
    monkeypatch.setattr(sys, "path", [str(tmp_path)])
    threading.main_thread().name, main_name = "renamed-later", threading.main_thread().name
    try:
        t = threading.Thread(target=worker)
        t.start()
        t.join()
        import gc

        gc.collect()
        later = Profile(now._recording)
        assert later._trees is None
        assert snapshot(later) == early
    finally:
        threading.main_thread().name = main_name
    assert len(early) > 50


@pytest.mark.parametrize("fmt", ["chrome", "speedscope", "pstats", "text", "svg", "collapsed", "collapsed-calls"])
def test_a_profile_that_recorded_nothing_exports_empty(tmp_path, fmt):
    first = Profiler()
    first.start()
    second = Profiler()
    with pytest.warns(Warning, match="already recording"):
        second.start()
    empty = second.stop()
    first.stop()
    assert empty.event_count == 0 and empty.thread_names == [] and empty._tracer is None
    out = tmp_path / "empty"
    empty.export(out, fmt)
    # (collapsed stacks: a line per call path, and there is none)
    assert out.stat().st_size == 0 if fmt.startswith("collapsed") else out.stat().st_size > 0
    assert empty.aggregates().threads == [] and empty.threads == []
