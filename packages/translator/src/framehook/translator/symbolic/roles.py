"""The frame interpreter and the tracer as the modules below them see them.

``interpreter.FrameTracer`` runs a frame and ``tracer.Tracer`` builds its graph; both call
into calls, objects, side effects, loops and errstate, which call back into them. Those
modules name them in annotations only, through the structural types below, so that no
module imports the interpreter or the tracer it serves (and the layers have no circle).
"""

from __future__ import annotations

from typing import Any, Protocol

__all__ = ["Frame", "TraceState"]


class Frame(Protocol):
    """The interpreter of one frame (``interpreter.FrameTracer``): its stack, locals,
    instructions, tracer and break helpers."""

    def __getattr__(self, name: str) -> Any: ...


class TraceState(Protocol):
    """The tracer of one translation (``tracer.Tracer``): the graph, the guards, the side
    effects and the budget."""

    def __getattr__(self, name: str) -> Any: ...
