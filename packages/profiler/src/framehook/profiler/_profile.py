"""The result of a recording: call trees per thread and the ways to export them."""
from __future__ import annotations

import os
from typing import TYPE_CHECKING, Any, Callable, Dict, Iterator, List, Optional, Tuple, Union

from ._trees import Event, ThreadTree

if TYPE_CHECKING:
    from ._aggregate import Aggregates

TreesBuilder = Callable[[], Tuple[List[ThreadTree], List[Event]]]


class Profile:
    """Call trees of every recorded thread, in nanoseconds of the monotonic clock.

    ``events`` holds every event of every thread sorted by start time; each has an ``id``
    (1-based, in that order), a ``parent`` (None at the top of a thread) and a
    ``thread_id``. Given a builder instead of the trees, they are built on first access;
    pstats, the summary and the flame graph never need them (they use ``aggregates``).
    """

    def __init__(self, threads: Union[List[ThreadTree], TreesBuilder],
                 events: Optional[List[Event]], start_ns: int, end_ns: int, clock: str,
                 memory_bytes: int,
                 aggregates: Optional[Callable[[], "Aggregates"]] = None,
                 tracer: Optional[Any] = None) -> None:
        self._tracer = tracer  # the stopped C tracer: its buffers feed the event outputs
        self._trees = None if callable(threads) else (threads, events or [])
        self._build_trees = threads if callable(threads) else None
        self._make_aggregates = aggregates
        self._aggregates: Optional["Aggregates"] = None
        self.start_ns = start_ns
        self.end_ns = end_ns
        self.clock = clock
        self.memory_bytes = memory_bytes

    def _built(self) -> Tuple[List[ThreadTree], List[Event]]:
        if self._trees is None:
            assert self._build_trees is not None
            self._trees = self._build_trees()
        return self._trees

    @property
    def threads(self) -> List[ThreadTree]:
        return self._built()[0]

    @property
    def events(self) -> List[Event]:
        return self._built()[1]

    def aggregates(self) -> "Aggregates":
        """Calls per function, caller/callee pair and call path (exact, also when
        max_events dropped events), computed by the tracer without the trees."""
        if self._aggregates is None:
            from ._aggregate import Aggregates
            if self._make_aggregates is None:  # nothing was recorded
                self._aggregates = Aggregates([], {}, {}, {}, [])
            else:
                self._aggregates = self._make_aggregates()
        return self._aggregates

    @property
    def event_count(self) -> int:
        """Raw events recorded (calls, exits, annotations...), across threads."""
        return sum(t.event_count for t in self.threads)

    @property
    def duration_ns(self) -> int:
        return self.end_ns - self.start_ns

    def walk(self) -> Iterator[Event]:
        for thread in self.threads:
            yield from thread.walk()

    def find(self, name: str) -> List[Event]:
        """Events whose name is ``name`` (qualified for Python functions), by start time."""
        return [e for e in self.events if e.name == name]

    def thread(self, thread_id: int) -> ThreadTree:
        for tree in self.threads:
            if tree.thread_id == thread_id:
                return tree
        raise KeyError(f"thread {thread_id} was not recorded")

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

    def summary(self, limit: int = 20) -> str:
        from ._summary import summary
        return summary(self, limit)

    def export(self, path: "os.PathLike[str] | str", format: Optional[str] = None,
               progress: Optional[Callable[[int], None]] = None) -> str:
        """Write in ``format`` (default: from the extension); returns the absolute path.
        ``progress``: called with the calls written so far after each MiB of a Chrome
        trace or speedscope file."""
        from ._export import write
        return write(self, path, format, progress)

    def __repr__(self) -> str:
        return (f"Profile({len(self.events)} events in {len(self.threads)} threads, "
                f"{self.duration_ns / 1e6:.3f} ms)")
