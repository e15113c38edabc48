"""Loop-carried Python numbers that a loop turns into numpy scalars: now
``symbolic/loops/widening.py`` (this path is kept for its importers)."""

from .loops.widening import same_trace, widened

__all__ = ["widened", "same_trace"]
