"""The rest of a loop body after an exit in its middle (``if c: break`` with more body
after it, the second test of ``while a and b:``): a loop node inside the body that runs
once or not at all."""

from __future__ import annotations

import operator
from typing import TYPE_CHECKING, Any, List, Tuple

from ...graph import Loop, ScalarMeta
from ..values import Tensor, V
from .carried import BodyScope, HeadState, close_body, match_end, open_body, set_results

if TYPE_CHECKING:  # pragma: no cover
    from ..roles import Frame


# ---------------------------------------------------------------- the rest of the body after a break
# ``if <graph value>: break`` followed by more of the body: the rest (the *tail*) runs only
# when the loop goes on. It is traced into a loop node of its own that runs once or not at
# all (``range(0, not cond)``), carrying the loop's carried values: when the loop breaks,
# they are what they were at the break, as in Python. No change to the loop IR is needed.
class Tail:
    __slots__ = ("state", "scope", "run", "open")

    def __init__(self, state: "HeadState", scope: BodyScope, run: Tensor) -> None:
        self.state = state
        self.scope = scope
        self.run = run  # graph bool: the loop goes on (the tail runs once)
        self.open = True


def open_tail(frame: "Frame", region: Any, cond: V, when: bool, extra: Tuple[str, ...] = ()) -> None:
    tracer = frame.tracer
    meta = ScalarMeta(bool, True)
    # Python's truth value of the condition, as the jump takes it: the tail runs when it does not break
    run = Tensor(
        tracer.graph.call(
            operator.not_ if when else operator.truth, (tracer.to_arg(cond),), meta=meta, stack=frame.location()
        ),
        meta,
    )
    state = HeadState(frame, list(region.names) + list(extra), ())
    scope, _ = open_body(frame, state, [], ("_", ScalarMeta(int, 0)))
    region.tail = Tail(state, scope, run)


def leave_tail(frame: "Frame", region: Any) -> None:
    tail = getattr(region, "tail", None)
    if tail is not None and tail.open:
        tail.open = False
        tail.state.leave_scope(frame)


def close_tail(frame: "Frame", region: Any) -> Tuple[str, List[str]]:
    """At the loop head after a tail: record the tail's loop node in the body. '' or why
    not (and Python numbers the tail changes, for the next attempt to carry)."""
    tail = region.tail
    assert tail is not None
    tracer = frame.tracer
    state, scope = tail.state, tail.scope
    if len(frame.stack) != len(state.stack) or any(a is not b for a, b in zip(frame.stack, state.stack)):
        leave_tail(frame, region)
        return "the value stack at its break is not that of the loop head", []
    ends, why, promotable, widen = match_end(frame, state, ())
    leave_tail(frame, region)
    if promotable:
        return "", promotable
    if why:
        return f"after its break, the body: {why}", []
    carried = scope.graph.placeholders[1 : 1 + len(state.leaves)]
    if not scope.graph.operations() and all(ends[k].node is carried[k] for k in range(len(state.leaves))):
        frame.locals.clear()  # nothing after the break: the loop's own exit flag is enough
        frame.locals.update(state.locals)
        return "", []
    close_body(frame, scope, ends, len(state.leaves))
    loop = Loop(scope.graph, len(state.leaves))
    carried_in = tuple(tracer.to_arg(leaf) for leaf in state.leaves)
    invariants = tuple(tracer.lifted_from[ph] for ph in loop.invariants)
    node = tracer.graph.call(loop, (0, tail.run.node, 1, carried_in, invariants), stack=frame.location())
    set_results(frame, state, node, loop.carried)
    region.exit_ops = -1  # the body goes on after its break, in the tail
    return "", []
