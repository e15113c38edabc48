"""The result of a recording: call trees per thread and the ways to export them."""

from __future__ import annotations

import os
import threading
from typing import TYPE_CHECKING, Any, Callable, Dict, Iterator, List, Optional, Tuple

from ._recording import Recording
from ._trees import Event, ThreadTree

if TYPE_CHECKING:
    from ._aggregate import Aggregates


class Profile:
    """Call trees of every recorded thread, in nanoseconds of the monotonic clock.

    ``events`` holds every event of every thread sorted by start time; each has an ``id``
    (1-based, in that order), a ``parent`` (None at the top of a thread) and a
    ``thread_id``. The trees are built from the raw recording on first access to
    ``threads`` or ``events`` (or anything that walks them), not before; pstats, the
    summary and the flame graph never need them (they use ``aggregates``), and the Chrome
    trace and speedscope are written from the buffers.
    """

    def __init__(self, recording: Recording) -> None:
        self._recording = recording
        self._trees: Optional[Tuple[List[ThreadTree], List[Event]]] = None
        self._aggregates: Optional["Aggregates"] = None
        self._build_lock = threading.Lock()
        self.start_ns, self.end_ns = recording.anchors[1], recording.anchors[3]
        self.clock = recording.clock
        self.memory_bytes = recording.memory_bytes
        #: what bounded each thread's ring of events, as the notes on dropped events name
        #: it: ``max_events`` (the Profiler's argument) unless the recording's owner, like
        #: framehook-profile's default ring, says otherwise
        self.dropped_by = "max_events"

    def _built(self) -> Tuple[List[ThreadTree], List[Event]]:
        trees = self._trees
        if trees is None:
            with self._build_lock:  # two threads asking at once build once
                trees = self._trees
                if trees is None:
                    threads, events, _ = self._recording.build()
                    trees = self._trees = (threads, events)
        return trees

    @property
    def threads(self) -> List[ThreadTree]:
        """One tree per recorded thread, in the order the threads were first seen."""
        return self._built()[0]

    @property
    def events(self) -> List[Event]:
        return self._built()[1]

    def aggregates(self) -> "Aggregates":
        """Calls per function, caller/callee pair and call path (exact, also when
        max_events dropped events), computed by the tracer without the trees."""
        aggregates = self._aggregates
        if aggregates is None:
            with self._build_lock:
                aggregates = self._aggregates
                if aggregates is None:
                    aggregates = self._aggregates = self._recording.aggregates()
        return aggregates

    @property
    def _tracer(self) -> Optional[Any]:
        """The stopped C tracer (None if nothing was recorded): its buffers feed the event
        outputs."""
        return self._recording.tracer if self._recording.threads else None

    @property
    def event_count(self) -> int:
        """Raw events recorded (calls, exits, annotations...), across threads."""
        return self._recording.event_count

    @property
    def thread_names(self) -> List[Tuple[int, str]]:
        """(thread id, name) of each recorded thread, as ``threads`` orders them, without
        building the trees. Thread ids are reused once a thread ends: two recorded threads
        may share one; each has its own name."""
        names = self._recording.thread_names
        return [(ident, names[serial]) for serial, ident in self._recording.threads]

    @property
    def duration_ns(self) -> int:
        return self.end_ns - self.start_ns

    def walk(self) -> Iterator[Event]:
        for thread in self.threads:
            yield from thread.walk()

    def find(self, name: str) -> List[Event]:
        """Events whose name is ``name`` (qualified for Python functions), by start time."""
        return [e for e in self.events if e.name == name]

    def thread(self, key: "int | str") -> ThreadTree:
        """The tree of the thread with this id (an int) or name (a str). Thread ids are
        reused once a thread ends: an id that several recorded threads had is refused. An
        id names the thread itself, not the asyncio tasks it ran (async_tasks), which are
        found by name."""
        if isinstance(key, str):
            found = [tree for tree in self.threads if tree.name == key]
            what = f"named {key!r}"
        else:
            found = [tree for tree in self.threads if tree.thread_id == key and not tree.task]
            what = f"with id {key}"
        if not found:
            raise KeyError(f"no thread {what} was recorded")
        if len(found) > 1:
            raise KeyError(
                f"{len(found)} recorded threads {what} "
                f"({', '.join(repr(t.name) for t in found)}); pick one from "
                "profile.threads"
            )
        return found[0]

    # exporters --------------------------------------------------------------------------
    def to_chrome(self) -> Dict[str, Any]:
        from ._chrome import to_chrome

        return to_chrome(self)

    def to_speedscope(self) -> Dict[str, Any]:
        from ._speedscope import to_speedscope

        return to_speedscope(self)

    def to_pstats(self) -> Dict[Any, Any]:
        from ._pstats import to_pstats

        return to_pstats(self)

    def to_svg(self, title: Optional[str] = None) -> str:
        from ._flamegraph import to_svg

        return to_svg(self, title)

    def to_html(self, title: Optional[str] = None) -> str:
        """A self-contained HTML flame graph (zoom, search), for any browser offline."""
        from ._html import to_html

        return to_html(self, title)

    def summary(self, limit: int = 20) -> str:
        from ._summary import summary

        return summary(self, limit)

    def export(
        self,
        path: "os.PathLike[str] | str",
        format: Optional[str] = None,
        progress: Optional[Callable[[int], None]] = None,
    ) -> str:
        """Write in ``format`` (default: from the extension); returns the absolute path.
        ``progress``: called with the calls written so far after each MiB of a Chrome
        trace or speedscope file. The file appears under its name only once complete (it
        is written next to it under a temporary name, then renamed)."""
        from ._export import write

        return write(self, path, format, progress)

    def __repr__(self) -> str:
        return (
            f"Profile({self.event_count} raw events in {len(self._recording.threads)} "
            f"threads, {self.duration_ns / 1e6:.3f} ms)"
        )
