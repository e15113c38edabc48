"""``range()`` with bounds computed in the graph (``SymRange``): its ``for`` loop cannot
unroll, so it is captured whole as a loop node with those bounds."""

from __future__ import annotations

from typing import TYPE_CHECKING, Dict, List, Optional, Tuple

from ...bytecode.kinds import Kind
from ...config import config
from ..breaks import GraphBreak
from ..values import Const, IterV, V
from .carried import LoopAbort


if TYPE_CHECKING:  # pragma: no cover
    from ..roles import Frame


# ---------------------------------------------------------------- ranges with graph bounds
class SymRange(V):
    """``range()`` of graph ints inside a loop body being captured (``range(i)``,
    ``range(j, i)`` on a loop index): only a ``for`` loop over it can use it, and that loop
    becomes a loop node with these bounds (or the enclosing loop unrolls)."""

    __slots__ = ("start", "stop", "step", "fallback")

    def __init__(self, start: V, stop: V, step: int, fallback: Optional[GraphBreak] = None) -> None:
        self.start = start
        self.stop = stop
        self.step = step
        # outside any loop body (``range(k)`` of an int not specialized): the break to raise
        # when its loop cannot be captured, which runs the whole loop in Python as before
        self.fallback = fallback

    def describe(self) -> str:
        return "a range with bounds computed in the graph"


class SymIter(IterV):
    """The iterator of a ``SymRange``: its loop is captured whole, never unrolled."""

    __slots__ = ("bounds",)

    def __init__(self, r: SymRange) -> None:
        super().__init__([])
        self.bounds = r

    def remaining(self) -> int:
        return 0

    def next(self) -> Optional[V]:
        return None  # after the capture: the loop exits

    def rest(self) -> List[V]:
        raise LoopAbort("a range with bounds computed in the graph is iterated other than by a for loop")

    def describe(self) -> str:
        return "an iterator over a range with bounds computed in the graph"


def symbolic_range(
    frame: "Frame", args: List[V], kwargs: Dict[str, V], fallback: Optional[GraphBreak] = None
) -> Optional[SymRange]:
    """``range(*args)`` with a bound that is a graph int only known when the graph runs (a
    loop index), inside a loop body being captured; None: the range is built now. With
    ``fallback`` (the break ``range()`` of an int input that is not specialized raises), also
    outside loop bodies, when a ``for`` loop iterates over it at once."""
    tracer = frame.tracer
    if kwargs or not 1 <= len(args) <= 3 or not any(map(tracer.is_symint, args)):
        return None
    if fallback is None and not tracer.loop_scopes:
        return None
    if fallback is not None and not (config.capture_loops and _iterated_at_once(frame)):
        return None
    parts: List[V] = []
    for a in args:
        if tracer.is_symint(a):
            parts.append(a)
        elif isinstance(a, Const) and type(a.value) is int:
            parts.append(a)
        else:
            return None
    start, stop, step = (
        (Const(0), parts[0], Const(1))
        if len(parts) == 1
        else (parts[0], parts[1], parts[2] if len(parts) == 3 else Const(1))
    )
    if not isinstance(step, Const) or step.value == 0:
        return None  # range() raises, or the direction is unknown: built now (and breaks)
    return SymRange(start, stop, step.value, fallback)


def _iterated_at_once(frame: "Frame") -> bool:
    """Is the value being made (by the call just run) the iterable of a ``for`` loop?"""
    k = frame.ip
    insts = frame.insts
    return k + 1 < len(insts) and insts[k].kind == Kind.GET_ITER and insts[k + 1].kind == Kind.FOR_ITER


def range_progression(it: IterV) -> Optional[Tuple[int, int, int]]:
    """(start, step, count) of the items ``it`` has left, when they are the ints of a range."""
    if it.range is not None:
        rest = it.range[it.pos :]
        return (rest.start, rest.step, len(rest)) if len(rest) >= 2 else None
    items = it.items[it.pos :]
    values = [i.value for i in items if isinstance(i, Const) and type(i.value) is int]
    if len(values) != len(items) or len(values) < 2:
        return None
    start, step = values[0], values[1] - values[0]
    if step == 0 or any(v != start + k * step for k, v in enumerate(values)):
        return None
    return start, step, len(values)
