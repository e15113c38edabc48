"""Progress of long post-processing, shown on a terminal: events done, events per second.

Whoever processes the events (a writer) calls the Progress with the number of events it
has done so far, as often as it likes: the line is redrawn at most every
``interval`` seconds, and only once the work has taken longer than ``after`` seconds, so a
short run prints nothing. Nothing at all is printed unless the stream is a terminal.
"""

from __future__ import annotations

import time
from typing import Callable, Optional, TextIO


class Progress:
    """A progress line on ``stream``, for ``total`` events if known (else 0)."""

    def __init__(
        self,
        stream: TextIO,
        total: int,
        label: str = "",
        *,
        enabled: Optional[bool] = None,
        after: float = 1.0,
        interval: float = 0.25,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.stream = stream
        self.total = total
        self.label = label
        self.enabled = _is_terminal(stream) if enabled is None else enabled
        self._after = after
        self._interval = interval
        self._clock = clock
        self._start = clock()
        self._next = self._start + after
        self._done = 0
        self._shown = False

    def __call__(self, done: int) -> None:
        self._done = done
        if not self.enabled:
            return
        now = self._clock()
        if now < self._next:
            return
        self._next = now + self._interval
        self._show(now)

    def finish(self) -> None:
        """Ends the line, if one was shown."""
        if self._shown:
            self._show(self._clock())
            self.stream.write("\n")
            self.stream.flush()
            self._shown = False

    def _show(self, now: float) -> None:
        elapsed = now - self._start
        rate = self._done / elapsed if elapsed > 0 else 0.0
        total = f" of {self.total:,}" if self.total else ""
        self.stream.write(f"\r{self.label}: {self._done:,}{total} events, {_si(rate)} events/s\x1b[K")
        self.stream.flush()
        self._shown = True


def _is_terminal(stream: TextIO) -> bool:
    try:
        return stream.isatty()
    except (AttributeError, ValueError):  # no isatty, or closed
        return False


def _si(rate: float) -> str:
    for factor, suffix in ((1e9, "G"), (1e6, "M"), (1e3, "k")):
        if rate >= factor:
            return f"{rate / factor:.1f} {suffix}"
    return f"{rate:.0f}"
