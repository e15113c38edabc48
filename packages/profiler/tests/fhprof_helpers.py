"""Helpers shared by the framehook-profiler tests (conftest puts this folder on sys.path)."""

from __future__ import annotations

import contextlib
import fcntl
import gc
import os
import shutil
import subprocess
import sys
from collections import Counter
from typing import Iterable, Iterator, List, Tuple


import pytest

from framehook.profiler import Event, Profile

SETUP_TIMEOUT = 300  # seconds for an installer (apt-get, npm) before it is taken as stuck
NPM_CACHE = os.path.join(os.path.expanduser("~"), ".cache", "framehook-profiler")


def run_for_setup(cmd: List[str], **kwargs) -> str:
    """How an installer command ended; a stuck one (no network) is stopped."""
    try:
        return f"exit {subprocess.call(cmd, stdout=subprocess.DEVNULL, timeout=SETUP_TIMEOUT, **kwargs)}"
    except subprocess.TimeoutExpired:
        return f"timed out after {SETUP_TIMEOUT} s"


def npm_package(spec: str, folder: str, wanted: str) -> str:
    """The path of ``wanted`` (relative to node_modules) of the npm package ``spec``,
    installed once into ~/.cache/framehook-profiler/<folder>; skips the test, saying why,
    when npm is missing or the install fails (no network)."""
    cache = os.path.join(NPM_CACHE, folder)
    path = os.path.join(cache, "node_modules", wanted)
    if not os.path.exists(path):
        if not shutil.which("npm"):
            pytest.skip(f"npm is not installed; it is needed to fetch {spec}")
        os.makedirs(cache, exist_ok=True)
        # the matrix runs interpreters side by side: one npm install into the cache at a time
        with open(os.path.join(cache, ".lock"), "w") as lock:
            fcntl.flock(lock, fcntl.LOCK_EX)
            ended = "installed by another run"
            if not os.path.exists(path):
                ended = run_for_setup(["npm", "install", "--no-audit", "--no-fund", "--prefix", cache, spec])
        if not os.path.exists(path):
            pytest.skip(f"npm install {spec} did not install it ({ended})")
    return path


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
