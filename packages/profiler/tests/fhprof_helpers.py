"""Helpers shared by the framehook-profiler tests (conftest puts this folder on sys.path)."""
from __future__ import annotations

import sys
from collections import Counter
from typing import Iterable, List, Tuple


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
    return [e for e in profile.events if e.kind == "python"
            and e.function.path == code.co_filename and e.function.lineno == code.co_firstlineno]
