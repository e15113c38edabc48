"""Helpers shared by the framehook-profiler tests (conftest puts this folder on sys.path)."""

from __future__ import annotations

import contextlib
import gc
import sys
from collections import Counter
from typing import Iterable, Iterator, List, Tuple


from framehook.profiler import Event, Profile


def shape(event: Event, kinds: Tuple[str, ...] = ("python", "c", "annotation")) -> tuple:
    """(name, (children...)) of an event, keeping only the given kinds."""
    return (event.name, tuple(shape(c, kinds) for c in event.children if c.kind in kinds))


def only(profile: Profile, name: str) -> Event:
    found = profile.find(name)
    assert len(found) == 1, f"expected one {name!r}, found {found}"
    return found[0]


def subtree_counts(events: Iterable[Event]) -> Counter:
    counts: Counter = Counter()
    for event in events:
        for e in event.walk():
            counts[(e.kind, e.name)] += 1
    return counts


def main_thread_events(profile: Profile) -> List[Event]:
    import threading

    return list(profile.thread(threading.main_thread().ident).walk())


PY312 = sys.version_info[:2] == (3, 12)


def exception_exits_are_seen(backend: str) -> bool:
    """Whether a Python frame left by an exception can be told from a return: everywhere
    but the profile function of CPython 3.12, which reports it as a return of None."""
    return backend == "monitoring" or not PY312


def calls_of(profile: Profile, func) -> List[Event]:
    """Events of a Python function (matched by its code's file and first line)."""
    code = getattr(func, "__func__", func).__code__
    return [
        e
        for e in profile.events
        if e.kind == "python" and e.function.path == code.co_filename and e.function.lineno == code.co_firstlineno
    ]


def chrome_spans(doc: dict) -> List[dict]:
    """The calls of a Chrome trace document: its begin/end ("B"/"E") events paired into
    complete-event-like dicts (ph "X", with dur, and the end's args merged), grouped by
    track in call order. Checks on the way that each track's events are balanced and its
    timestamps never go back."""
    open_by_track: dict = {}
    last_ts: dict = {}
    spans: List[dict] = []
    for ev in doc["traceEvents"]:
        if ev["ph"] not in ("B", "E"):
            continue
        track = (ev["pid"], ev["tid"])
        assert ev["ts"] >= last_ts.get(track, 0), ev
        last_ts[track] = ev["ts"]
        stack = open_by_track.setdefault(track, [])
        if ev["ph"] == "B":
            span = {
                "ph": "X",
                "name": ev["name"],
                "cat": ev.get("cat", ""),
                "ts": ev["ts"],
                "pid": ev["pid"],
                "tid": ev["tid"],
                "args": dict(ev.get("args", {})),
            }
            stack.append(span)
            spans.append(span)
        else:
            assert stack, f"an end event with no open call: {ev}"
            span = stack.pop()
            span["dur"] = round(ev["ts"] - span["ts"], 3)
            span["args"].update(ev.get("args", {}))
    assert all(not stack for stack in open_by_track.values()), "calls left open"
    order = {}
    for span in spans:
        order.setdefault(span["tid"], len(order))
    return sorted(spans, key=lambda s: order[s["tid"]])


@contextlib.contextmanager
def no_collections() -> Iterator[None]:
    """Garbage from earlier tests (a dropped Profiler, say) must not be finalized inside
    one of the two runs: its __del__ would be a node only that run's tree has."""
    gc.collect()
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if enabled:
            gc.enable()
