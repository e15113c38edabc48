"""Names of recorded threads, one per thread context rather than per thread id.

Thread ids are reused once a thread ends (Linux hands the next thread the same id at
once), so a name keyed by id would go to every thread that ever had it. The tracer numbers
its thread contexts instead (a serial per context, in creation order); a context is named
from `threading` where it knows the thread:

- threads running when recording starts: their names then, each given to the first
  context recorded under its id (start() makes those contexts before any other);
- threads `threading` starts while recording: the name when the thread starts, from the
  thread hook that runs on it, with the serial of the context recording it.

A thread renamed while recording keeps its last name as of stop. Any other context (a
thread started with `_thread`) is ``Thread-<id>-<n>``: the n-th recorded thread with that id.
An asyncio task's context (async_tasks) is named after the task.
"""

from __future__ import annotations

import threading
import weakref
from typing import Dict, Iterable, Optional, Tuple


class _Known:
    """A thread threading told us of: its name, and the thread while it may be renamed."""

    __slots__ = ("name", "ref")

    def __init__(self, thread: threading.Thread) -> None:
        self.name = thread.name
        self.ref: Optional["weakref.ReferenceType[threading.Thread]"] = weakref.ref(thread)

    def settle(self) -> None:
        thread = self.ref() if self.ref is not None else None
        if thread is not None:
            self.name = thread.name
        self.ref = None


class ThreadNames:
    """Collects what `threading` says about the recorded threads; names them at the end."""

    def __init__(self) -> None:
        self._at_start: Dict[int, _Known] = {}
        self._by_serial: Dict[int, _Known] = {}

    def note_start(self) -> None:
        """Threads running as recording starts (called just before the tracer starts)."""
        self._at_start = {t.ident: _Known(t) for t in threading.enumerate() if t.ident is not None}

    def note_thread_started(self, serial: Optional[int]) -> None:
        """On a thread `threading` has just started: the context ``serial`` records it."""
        if serial is not None:
            self._by_serial[serial] = _Known(threading.current_thread())

    def note_stop(self) -> None:
        """Recording has stopped: the names as they are now (threads may be renamed)."""
        for known in list(self._at_start.values()) + list(self._by_serial.values()):
            known.settle()

    def names(self, threads: Iterable[Tuple[int, int]], tasks: Iterable[Tuple[int, str]] = ()) -> Dict[int, str]:
        """Serial -> name, for the (serial, thread id) pairs of the recorded threads in
        creation order (the tracer's ``threads``), of which those in ``tasks`` (serial,
        task name) are asyncio tasks."""
        seen: Dict[int, int] = {}  # thread id -> its contexts so far
        out: Dict[int, str] = {serial: task_track_name(name) for serial, name in tasks}
        for serial, ident in threads:
            if serial in out:
                continue
            n = seen[ident] = seen.get(ident, 0) + 1
            known = self._by_serial.get(serial)
            if known is None and n == 1:
                known = self._at_start.get(ident)
            out[serial] = known.name if known is not None else f"Thread-{ident}-{n}"
        return out


def task_track_name(name: str) -> str:
    """The track of an asyncio task: its name, said to be a task (asyncio's own names,
    ``Task-<n>``, say so already)."""
    return name if name.startswith("Task-") else f"Task {name}"
