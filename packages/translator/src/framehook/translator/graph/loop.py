"""Loops in graphs.

A loop node is a ``call`` node whose target is a ``Loop``: it runs a body graph once per
value of ``range(start, stop, step)``. The body's placeholders are, in order, the loop
index, the loop-carried values and the loop invariants; its output is the tuple of the
carried values for the next iteration. The node's arguments are
``(start, stop, step, carried_in, invariants)`` and its value is the tuple of carried
values after the last iteration. ``start`` and ``stop`` are ints or graph ints (nodes: a
bound computed from an enclosing loop's index, ``range(i + 1, n)``); ``step`` is an int.
Code generation writes the body inline as a Python ``for`` loop, so a captured 100-step
loop is one loop in the generated code, not 100 copies of its body. A loop that ``exits``
early (a ``break`` on a graph value at the end of the body) has one more body output after
the carried values, the exit flag: the loop stops after an iteration whose flag is true.

A while-loop node's target is a ``WhileLoop``: its body's placeholders are the condition
(unused by the body), the carried values and the invariants; its output is the carried
values then the next condition. The node's arguments are ``(cond_in, carried_in,
invariants)``: the body runs while ``bool(cond)`` is ``repeat_when``, testing each new
condition as the user's ``while`` does (code generation writes ``while c:``).
"""

from __future__ import annotations

from typing import Any, List, Tuple

from .ir import Graph, LoopTarget, Node, may_raise

__all__ = ["Loop", "WhileLoop", "is_loop", "with_body"]


class _BodyLayout(LoopTarget):
    """Placeholders of a loop body: one leading value (the index or the condition), then
    the ``n_carried`` carried values, then the invariants."""

    body: Graph
    n_carried: int

    @property
    def carried(self) -> List[Node]:
        return self.body.placeholders[1 : 1 + self.n_carried]

    @property
    def invariants(self) -> List[Node]:
        return self.body.placeholders[1 + self.n_carried :]


class Loop(_BodyLayout):
    """The target of a loop node (callable, so a graph interpreter can run it as a call)."""

    graph_target_name = "loop"
    __name__ = "loop"

    def __init__(self, body: Graph, n_carried: int, exits: bool = False) -> None:
        placeholders = body.placeholders
        if body.output_node is None:
            raise ValueError("a loop body needs its output node")
        if len(placeholders) < 1 + n_carried:
            raise ValueError(
                f"a loop body needs an index and {n_carried} carried inputs, it has {len(placeholders)} placeholders"
            )
        if type(exits) is not bool:
            raise TypeError(f"exits must be a bool, got {type(exits).__name__}")
        out = body.output_node.args[0]
        if type(out) is not tuple or len(out) != n_carried + exits:
            raise ValueError(
                f"a loop body must output a tuple of its {n_carried} carried values"
                + (" and the exit flag" if exits else "")
            )
        self.body = body
        self.n_carried = n_carried
        self.exits = exits

    @property
    def index(self) -> Node:
        return self.body.placeholders[0]

    @property
    def impure(self) -> bool:
        """True when running the body has an effect beyond its result (mutation, an exception)."""
        return any(n.impure or may_raise(n) for n in self.body.operations())

    def __call__(
        self, start: int, stop: int, step: int, carried: Tuple[Any, ...], invariants: Tuple[Any, ...]
    ) -> Tuple[Any, ...]:
        forward = self.body.forward
        values = tuple(carried)
        if not self.exits:
            for i in range(start, stop, step):
                values = forward(i, *values, *invariants)
            return values
        for i in range(start, stop, step):
            *head, stop_now = forward(i, *values, *invariants)
            values = tuple(head)
            if stop_now:
                break
        return values

    def __repr__(self) -> str:
        return f"<loop over {self.body!r}>"


class WhileLoop(_BodyLayout):
    """The target of a while-loop node (callable, like ``Loop``)."""

    graph_target_name = "while_loop"
    __name__ = "while_loop"

    def __init__(self, body: Graph, n_carried: int, repeat_when: bool = True) -> None:
        if body.output_node is None:
            raise ValueError("a while-loop body needs its output node")
        if len(body.placeholders) < 1 + n_carried:
            raise ValueError(
                f"a while-loop body needs a condition and {n_carried} carried inputs, "
                f"it has {len(body.placeholders)} placeholders"
            )
        out = body.output_node.args[0]
        if type(out) is not tuple or len(out) != n_carried + 1:
            raise ValueError(
                f"a while-loop body must output a tuple of its {n_carried} carried values and the next condition"
            )
        if type(repeat_when) is not bool:
            raise TypeError(f"repeat_when must be a bool, got {type(repeat_when).__name__}")
        self.body = body
        self.n_carried = n_carried
        self.repeat_when = repeat_when

    @property
    def condition(self) -> Node:
        return self.body.placeholders[0]

    @property
    def impure(self) -> bool:
        """Always: testing the condition may raise, and the loop may never end."""
        return True

    def __call__(self, cond: Any, carried: Tuple[Any, ...], invariants: Tuple[Any, ...]) -> Tuple[Any, ...]:
        forward = self.body.forward
        values = tuple(carried)
        when = self.repeat_when
        while (True if cond else False) is when:
            *head, cond = forward(cond, *values, *invariants)
            values = tuple(head)
        return values

    def __repr__(self) -> str:
        return f"<while loop over {self.body!r}>"


def is_loop(target: Any) -> bool:
    """A for-loop or while-loop node's target."""
    return type(target) is Loop or type(target) is WhileLoop


def with_body(loop: Any, body: Graph) -> Any:
    """The same loop (its kind, carried values, exits or repeat condition) over another
    body: a pass that rewrites a graph rewrites each loop's body too."""
    if type(loop) is Loop:
        return Loop(body, loop.n_carried, loop.exits)
    return WhileLoop(body, loop.n_carried, loop.repeat_when)
