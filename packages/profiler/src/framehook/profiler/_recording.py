"""A stopped tracer's recording, kept raw: trees are built from it only when asked for."""

from __future__ import annotations

import types
from typing import TYPE_CHECKING, Any, Dict, FrozenSet, List, Optional, Tuple

from . import _tracer
from ._names import PathShortener
from ._trees import Event, ThreadTree, _Clock, build

if TYPE_CHECKING:
    from ._aggregate import Aggregates


class Recording:
    """What one profiler recorded: the tracer (which holds the per-thread event buffers),
    the names of its threads, and what building the trees needs that may change once the
    program goes on (the code to hide, sys.path for short file names), fixed at stop.

    ``tracer`` is None when nothing was recorded (another profiler was recording)."""

    def __init__(
        self,
        tracer: Optional[Any],
        thread_names: Dict[int, str],
        internal: FrozenSet[types.CodeType] = frozenset(),
        muted: FrozenSet[types.CodeType] = frozenset(),
        shorten: Optional[PathShortener] = None,
    ) -> None:
        self.tracer = tracer
        self.thread_names = thread_names  # serial of a recorded thread -> its name
        self.internal = internal
        self.muted = muted
        self.shorten = shorten if shorten is not None else PathShortener()
        recorded = tracer is not None and tracer.state != "new"
        self.threads: List[Tuple[int, int]] = tracer.threads if recorded else []
        self.anchors: Tuple[int, int, int, int] = tracer.anchors if recorded else (0, 0, 0, 0)
        self.clock: str = _tracer.clock_name()
        self.memory_bytes: int = tracer.memory if recorded else 0
        self.event_count: int = tracer.event_count if self.threads else 0

    def aggregates(self) -> "Aggregates":
        """The tracer's exact aggregates, named (no Python object per call)."""
        from ._aggregate import Aggregates, aggregate

        if not self.threads:
            return Aggregates([], {}, {}, {}, [])
        names = self.thread_names
        return aggregate(self.tracer, lambda thread: names[thread["serial"]], self.shorten)

    def build(self) -> Tuple[List[ThreadTree], List[Event], _Clock]:
        """The call trees (a new set on every call): the one costly step, O(events)."""
        if not self.threads:
            return [], [], _Clock(self.anchors)
        raw = self.tracer.collect()
        return build(raw, self.thread_names, self.internal, self.shorten, self.muted)
