"""Capturing ``for`` loops over ranges and ``while`` loops as loops in the graph.

Unrolling a 100-step time-stepping loop gives a graph 100 times its body and costs 100
body traces. Instead, after the first iteration has been traced as straight-line code,
the interpreter traces the body once more with every array (or graph number) it
reassigns replaced by a placeholder of a *body graph*, and the loop index by a symbolic
int. When that trace comes back to the loop head with each reassigned value of the same
kind (dtype, ndim, static dimensions) and every other value unchanged, each remaining
iteration would trace to the very same graph, so the remaining iterations become one
loop node (``graph/loop.py``). Anything else — a break or return in the body, a branch
on the index, a container made before the loop being mutated, a value whose shape grows,
a graph break — abandons the attempt, restores the interpreter's state and unrolls the
loop as before; the reason is kept in ``Tracer.loop_notes`` for ``explain()``.

Values the body reads from outside (a kernel, a parameter) enter the body graph as loop
invariants: ``lift`` adds a body placeholder for an outer node the first time the body
uses it. Python numbers the body changes (``t += dt``) make a second attempt carry them as
graph numbers (``_Promoted``); one updated by a single operation with a constant gets its
final value computed at trace time (``_folded``), so it is a Python number after the loop.
Only names whose value at the loop head is read (by the body before it stores them, or after
the loop: ``live_in``) are carried; a temporary of one iteration is not a value of the loop.

Inside a body being captured, ``range()`` of a bound computed from a loop index
(``for j in range(i)``, ``range(i + 1, n)``) is a ``SymRange``: its loop cannot unroll, so
it is captured at once (with no first iteration traced as straight-line code) as a loop
node whose bounds are graph ints; when that fails, the enclosing loop unrolls instead and
the inner bounds are constants again. A triangular nest is then one loop node holding
another, not hundreds of unrolled copies.

A ``while`` loop whose condition the graph computes (``while err > tol:``) is captured the
same way from its condition's jump (``capture_while``): the body is traced once, to the
next test of the condition, and becomes a ``WhileLoop`` node that carries the condition
with the values. When the body cannot be captured, the branch breaks (FH002) as before.

An exit in the middle of a body (``if c: break`` with more body after it, the second test
of ``while a and b:``) makes the rest of the body a *tail*: a loop node inside the body
that runs once or not at all (``_Tail``). A Python number that an iteration turns into a
numpy scalar (``s = 0.0; s += a[k]``) is carried *widened* (``loop_types.py``). A nest is
captured at its first iteration (``holds_loop``), and ``range(k)`` of an automatic dynamic
int is a ``SymRange`` outside loop bodies too (its loop falls back to the FH011 break).
"""

from __future__ import annotations

import contextlib
import operator
import re
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Dict, FrozenSet, Iterable, Iterator, List, Optional, Tuple

from ..bytecode.behaviour import BEHAVIOUR
from ..bytecode.cfg import LOCAL_WRITES, local_names
from ..bytecode.kinds import Kind
from ..config import config
from ..graph import ArrayMeta, Graph, Loop, ScalarMeta, TupleMeta, WhileLoop
from .breaks import GraphBreak
from .loop_types import same_trace, widened
from .values import Const, IterV, Tensor, TupleV, V, next_serial

if TYPE_CHECKING:  # pragma: no cover
    from .interpreter import FrameTracer
    from .tracer import Tracer

__all__ = [
    "LoopAbort",
    "LoopNote",
    "SymRange",
    "SymIter",
    "capture_loop",
    "capture_while",
    "exits_early",
    "holds_loop",
    "symbolic_range",
    "lift",
    "left_body",
    "live_in",
]

_IMMUTABLE = (int, float, complex, bool, str, bytes, type(None), range, slice)


class LoopAbort(Exception):
    """The loop body cannot be captured as a loop (the loop is unrolled instead).
    ``promotable``: Python numbers the body changes (``k += 1``, ``t += dt``), which a
    second attempt carries through the loop as graph numbers. ``widen``: carried leaves
    (by position) that are Python numbers at the head and numpy scalars after one
    iteration, with that numpy scalar's meta; ``body``: the body graph traced with them
    as Python numbers, which the next attempt must match (``loop_types.py``)."""

    def __init__(
        self,
        why: str,
        promotable: Tuple[str, ...] = (),
        widen: Optional[Dict[int, Any]] = None,
        body: Optional[Graph] = None,
    ) -> None:
        super().__init__(why)
        self.promotable = promotable
        self.widen = widen or {}
        self.body = body


class _Promoted:
    """A Python number at the loop head that the body changes: a carried graph number in
    the body, its value at the head the loop's input."""

    def __init__(self, name: str, value: Any) -> None:
        self.name = name
        self.value = value
        self.meta = ScalarMeta(type(value), value)


# a carried number updated by one of these with a constant has a final value the trace can
# compute with the same Python arithmetic the loop does (so it stays a Python number after)
_FOLDABLE = {
    operator.add: operator.add,
    operator.iadd: operator.add,
    operator.sub: operator.sub,
    operator.isub: operator.sub,
    operator.mul: operator.mul,
    operator.imul: operator.mul,
}
_MAX_FOLDED = 1_000_000


class _BodyDone(Exception):
    """The body trace came back to the loop head."""


@dataclass
class LoopNote:
    """What happened to one loop: captured (``reason`` empty) or unrolled, and why."""

    filename: str
    lineno: int
    iterations: Optional[int]  # None: bounds or condition computed in the graph
    captured: bool
    reason: str = ""
    kind: str = "for"  # or "while"

    def __str__(self) -> str:
        where = f"{self.filename}:{self.lineno}"
        if self.kind == "while":
            if self.captured:
                return f"while loop at {where}: captured as one loop (condition computed in the graph)"
            return f"while loop at {where}: not captured, runs in Python ({self.reason})"
        if self.captured:
            count = "bounds computed in the graph" if self.iterations is None else f"{self.iterations} iterations"
            return f"loop at {where}: captured as one loop ({count})"
        return f"loop at {where}: unrolled ({self.reason})"


class _Scope:
    """A loop body being recorded: its graph, the graph around it, and the outer nodes
    it uses (each with its body placeholder)."""

    __slots__ = ("graph", "parent", "lifted", "unions", "alt")

    def __init__(self, graph: Graph, parent: Graph, alt: bool = False) -> None:
        self.graph = graph
        self.parent = parent
        self.lifted: Dict[Any, Any] = {}
        self.unions: List[Any] = []  # two-typed values of inner loops (``loop_types.py``)
        self.alt = alt  # those values are taken as their Python number type


def lift(tracer: "Tracer", node: Any, level: int) -> Any:
    """``node`` as a value of the body at ``tracer.loop_scopes[level]`` (adding loop
    invariants to every body between its graph and that one)."""
    if level < 0:
        raise ValueError(f"node {node.name} belongs to a graph that is not being recorded")
    scope = tracer.loop_scopes[level]
    if node.graph is scope.graph:
        return node
    outer = node if node.graph is scope.parent else lift(tracer, node, level - 1)
    ph = scope.lifted.get(outer)
    if ph is None:
        ph = scope.graph.placeholder(_base(outer.name), outer.meta.get("val"))
        scope.lifted[outer] = ph
        tracer.lifted_from[ph] = outer
    return ph


def _base(name: str) -> str:
    """``add_3`` -> ``add``: the graph numbers the name again."""
    return re.sub(r"_[0-9]+$", "", name)


# ---------------------------------------------------------------- loop-carried values
# A template records the structure of a local at the loop head: ("T", k) for the k-th
# carried graph value, ("tuple", [templates]) for a tuple, ("same", v) for a value that
# must still be there at the end of the body, ("absent",) for an unset name.


def _is_number(v: Optional[V]) -> bool:
    return isinstance(v, Const) and type(v.value) in (int, float)


def _flatten(v: Optional[V], leaves: List[Any], index: Dict[Any, int], promote: Optional[str] = None) -> Any:
    if v is None:
        return ("absent",)
    if promote is not None and _is_number(v):
        leaves.append(_Promoted(promote, v.value))  # type: ignore[union-attr]
        return ("T", len(leaves) - 1)
    if isinstance(v, Tensor):
        k = index.get(v.node)
        if k is None:
            k = index[v.node] = len(leaves)
            leaves.append(v)
        return ("T", k)
    if isinstance(v, TupleV):
        return ("tuple", [_flatten(i, leaves, index) for i in v.items])
    return ("same", v)


def _rebuild(template: Any, values: List[V]) -> Optional[V]:
    kind = template[0]
    if kind == "T":
        return values[template[1]]
    if kind == "tuple":
        return TupleV([_rebuild(t, values) for t in template[1]])  # type: ignore[misc]
    if kind == "same":
        return template[1]
    return None


def _set_locals(frame: "FrameTracer", templates: Dict[str, Any], values: List[V]) -> None:
    for name, template in templates.items():
        v = _rebuild(template, values)
        if v is None:
            frame.locals.pop(name, None)
        else:
            frame.locals[name] = v


def _same_value(a: V, b: V) -> bool:
    if a is b:
        return True
    if isinstance(a, Const) and isinstance(b, Const) and type(a.value) is type(b.value):
        if isinstance(a.value, _IMMUTABLE):
            try:
                return bool(a.value == b.value)
            except Exception:  # pragma: no cover - comparisons of these types don't raise
                return False
        return a.value is b.value
    return False


def _compatible(head: Any, end: Any) -> bool:
    """The body traced with ``head`` traces the same again with ``end``."""
    if isinstance(head, TupleMeta) or isinstance(end, TupleMeta):  # a named tuple: item by item
        return (
            isinstance(head, TupleMeta)
            and isinstance(end, TupleMeta)
            and head.pytype is end.pytype
            and len(head.items) == len(end.items)
            and all(map(_compatible, head.items, end.items))
        )
    if isinstance(head, ScalarMeta) or isinstance(end, ScalarMeta):
        return isinstance(head, ScalarMeta) and isinstance(end, ScalarMeta) and head.pytype is end.pytype
    if not (isinstance(head, ArrayMeta) and isinstance(end, ArrayMeta)):
        return False
    if head.pytype is not end.pytype or head.dtype != end.dtype or len(head.shape) != len(end.shape):
        return False
    return all(
        (type(x) is int) == (type(y) is int) and (type(x) is not int or x == y) for x, y in zip(head.shape, end.shape)
    )


def _match(template: Any, v: Optional[V], out: Dict[int, V]) -> str:
    """Fill ``out`` with the end value of each carried leaf; '' or why the body changed."""
    kind = template[0]
    if kind == "absent":
        return "" if v is None else "the body sets a name that is unset before the loop"
    if v is None:
        return "the body deletes a name"
    if kind == "T":
        if not isinstance(v, Tensor):
            return f"a graph value becomes {v.describe()}"
        k = template[1]
        if k in out and out[k] is not v:
            return "two names for one value part ways"
        out[k] = v
        return ""
    if kind == "tuple":
        if not isinstance(v, TupleV) or len(v.items) != len(template[1]):
            return f"a tuple becomes {v.describe()}"
        for t, item in zip(template[1], v.items):
            why = _match(t, item, out)
            if why:
                return why
        return ""
    return "" if _same_value(template[1], v) else f"{template[1].describe()} becomes {v.describe()}"


# ---------------------------------------------------------------- liveness and loop heads
# A name the body stores is carried only when its value at the loop head can be read:
# by the body before the body stores it, or after the loop. The others (temporaries of one
# iteration) are not values of the loop at all, and need not exist before it.
def live_in(frame: "FrameTracer") -> List[FrozenSet[str]]:
    """For each instruction of the frame, the local names some path from it reads before
    storing them (``ControlFlow.live_locals``)."""
    return frame.flow.live_locals


def loop_heads(frame: "FrameTracer") -> List[FrozenSet[int]]:
    """For each instruction, the heads of the natural loops holding it
    (``ControlFlow.natural_loop_heads``)."""
    return frame.flow.natural_loop_heads


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
    frame: "FrameTracer", args: List[V], kwargs: Dict[str, V], fallback: Optional[GraphBreak] = None
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


def _iterated_at_once(frame: "FrameTracer") -> bool:
    """Is the value being made (by the call just run) the iterable of a ``for`` loop?"""
    k = frame.ip
    insts = frame.insts
    return k + 1 < len(insts) and insts[k].kind == Kind.GET_ITER and insts[k + 1].kind == Kind.FOR_ITER


# ---------------------------------------------------------------- the capture
def _progression(it: IterV) -> Optional[Tuple[int, int, int]]:
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


def _stored_names(frame: "FrameTracer", indices: Iterable[int]) -> List[str]:
    names: Dict[str, None] = {}
    for k in indices:
        inst = frame.insts[k]
        if inst.kind in LOCAL_WRITES:
            for name in local_names(inst):
                names[name] = None
    return list(names)


class _ForRegion:
    """The instructions of a ``for`` body: strictly between its FOR_ITER and its exit; and
    the body's early exit once the trace has met it (``_early_exit``)."""

    __slots__ = (
        "head",
        "end",
        "outer",
        "exit_at",
        "exit_when",
        "exit_cond",
        "exit_locals",
        "exit_ops",
        "names",
        "tail",
    )

    def __init__(self, head: int, end: int, outer: Any, names: Tuple[str, ...] = ()) -> None:
        self.head = head
        self.end = end
        self.outer = outer
        self.exit_at: Optional[int] = None  # the conditional jump that breaks out
        self.exit_when = True  # the truth value of exit_cond that breaks out
        self.exit_cond: Optional[V] = None
        self.exit_locals: Dict[str, Any] = {}
        self.exit_ops = 0
        self.names = names  # the loop's carried names
        self.tail: Optional[_Tail] = None

    def admits(self, k: int) -> bool:
        return self.head < k < self.end

    def left(self, k: int) -> Exception:
        if k == self.head:
            return _BodyDone()
        return LoopAbort("control leaves the loop body (a break, or a jump out of the loop)")


# ---------------------------------------------------------------- early exits of for loops
# ``for ...: <body>; if <graph value>: break`` is captured as a loop node that exits early:
# the body is traced once; at the conditional jump whose one side pops the iterator (a break)
# the condition is kept and the trace goes on along the other side. The break must be the
# body's last effect (no operation or assignment after it on the way back to the loop head),
# and the code the break leads to must be the code after the loop (3.12+ copy it to the
# break's side): the trace then continues after the loop whichever way the loop ended.
_ITER_POPS = frozenset({Kind.POP_TOP, Kind.POP_ITER})
_LOOP_ENDS = frozenset({Kind.END_FOR, Kind.POP_TOP, Kind.POP_ITER})
_RETURNS = frozenset({Kind.RETURN, Kind.RETURN_CONST})


def exits_early(frame: "FrameTracer", inst: Any) -> bool:
    """Does the body of the ``for`` loop whose FOR_ITER is ``inst`` pop the iterator (a
    ``break`` or a ``return`` inside it)? Such a loop is captured at its first iteration,
    since tracing that iteration straight would stop at the break."""
    flow = frame.flow
    head, end = flow.index_of(inst), flow.index_of(inst.target)
    depths = flow.stack_depths
    d = depths.get(head)
    return d is not None and any(frame.insts[k].kind in _ITER_POPS and depths.get(k) == d for k in range(head + 1, end))


def _after_pops(frame: "FrameTracer", k: int, depth: int) -> int:
    """From ``k``: past the instructions that drop the loop's iterator (and its index slot
    where there is one), and past jumps. ``depth``: the stack depth at the loop head."""
    depths = frame.flow.stack_depths
    below = depth - (2 if BEHAVIOUR.iterators_take_two_slots else 1)
    for _ in range(6):
        k = _settle(frame, k)
        if frame.insts[k].kind in _LOOP_ENDS and depths.get(k, depth) > below:
            k += 1
        else:
            break
    return _settle(frame, k)


def _same_exit(frame: "FrameTracer", a: int, b: int) -> bool:
    """Do the code at ``a`` and at ``b`` do the same (one place, or copies of straight-line
    code ending in a return)?"""
    for _ in range(32):
        a, b = _settle(frame, a), _settle(frame, b)
        if a == b:
            return True
        x, y = frame.insts[a], frame.insts[b]
        if x.opname != y.opname or x.target is not None or y.target is not None or x.argval != y.argval:
            return False
        if x.kind in _RETURNS:
            return True
        a, b = a + 1, b + 1
    return False


def _early_exit(frame: "FrameTracer", region: _ForRegion, k: int, cond: V) -> bool:
    """At the conditional jump ``k`` on the graph value ``cond`` inside a for body: when one
    side breaks out of the loop, keep the exit and go on along the other side (True)."""
    sides = _sides(frame, k)
    if sides is None:
        return False
    depth = frame.flow.stack_depths.get(region.head)
    for (go, when), (stay, _) in (sides, sides[::-1]):
        out = _settle(frame, go)
        if (
            frame.insts[out].kind not in _ITER_POPS
            or frame.flow.stack_depths.get(out) != depth
            or not region.admits(_settle(frame, stay))
            and _settle(frame, stay) != region.head
        ):
            continue
        if region.exit_at is not None:
            raise LoopAbort("a second exit from the loop on a graph value")
        if depth is None:  # pragma: no cover - the loop head's depth is known where its FOR_ITER runs
            raise LoopAbort("the stack depth at the loop head is not known")
        broken, ended = _after_pops(frame, out, depth), _after_pops(frame, region.end, depth)
        if not _same_exit(frame, broken, ended):
            if any(_same_exit(frame, broken, p) for p in range(ended + 1, min(ended + 64, len(frame.insts)))):
                raise LoopAbort(
                    "a for-else: its else clause runs only when the loop does not break, which the graph does not tell"
                )
            raise LoopAbort("the code the break leads to is not the code after the loop (a return)")
        region.exit_at, region.exit_when, region.exit_cond = k, when, cond
        frame.ip = stay
        region.exit_locals = dict(frame.locals)
        _open_tail(frame, region, cond, when)
        region.exit_ops = len(region.tail.scope.parent.operations())  # type: ignore[union-attr]
        return True
    return False


# ---------------------------------------------------------------- the rest of the body after a break
# ``if <graph value>: break`` followed by more of the body: the rest (the *tail*) runs only
# when the loop goes on. It is traced into a loop node of its own that runs once or not at
# all (``range(0, not cond)``), carrying the loop's carried values: when the loop breaks,
# they are what they were at the break, as in Python. No change to the loop IR is needed.
class _Tail:
    __slots__ = ("state", "scope", "run", "open")

    def __init__(self, state: "_State", scope: _Scope, run: Tensor) -> None:
        self.state = state
        self.scope = scope
        self.run = run  # graph bool: the loop goes on (the tail runs once)
        self.open = True


def _open_tail(frame: "FrameTracer", region: Any, cond: V, when: bool, extra: Tuple[str, ...] = ()) -> None:
    tracer = frame.tracer
    meta = ScalarMeta(bool, True)
    # Python's truth value of the condition, as the jump takes it: the tail runs when it does not break
    run = Tensor(
        tracer.graph.call(
            operator.not_ if when else operator.truth, (tracer.to_arg(cond),), meta=meta, stack=frame.location()
        ),
        meta,
    )
    state = _State(frame, list(region.names) + list(extra), ())
    scope, _ = _open_body(frame, state, [], ("_", ScalarMeta(int, 0)))
    region.tail = _Tail(state, scope, run)


def _leave_tail(frame: "FrameTracer", region: Any) -> None:
    tail = getattr(region, "tail", None)
    if tail is not None and tail.open:
        tail.open = False
        tail.state.leave_scope(frame)


def _close_tail(frame: "FrameTracer", region: Any) -> Tuple[str, List[str]]:
    """At the loop head after a tail: record the tail's loop node in the body. '' or why
    not (and Python numbers the tail changes, for the next attempt to carry)."""
    tail = region.tail
    assert tail is not None
    tracer = frame.tracer
    state, scope = tail.state, tail.scope
    if len(frame.stack) != len(state.stack) or any(a is not b for a, b in zip(frame.stack, state.stack)):
        _leave_tail(frame, region)
        return "the value stack at its break is not that of the loop head", []
    ends, why, promotable, widen = _match_end(frame, state, ())
    _leave_tail(frame, region)
    if promotable:
        return "", promotable
    if why:
        return f"after its break, the body: {why}", []
    carried = scope.graph.placeholders[1 : 1 + len(state.leaves)]
    if not scope.graph.operations() and all(ends[k].node is carried[k] for k in range(len(state.leaves))):
        frame.locals.clear()  # nothing after the break: the loop's own exit flag is enough
        frame.locals.update(state.locals)
        return "", []
    _close_body(frame, scope, ends, len(state.leaves))
    loop = Loop(scope.graph, len(state.leaves))
    carried_in = tuple(tracer.to_arg(leaf) for leaf in state.leaves)
    invariants = tuple(tracer.lifted_from[ph] for ph in loop.invariants)
    node = tracer.graph.call(loop, (0, tail.run.node, 1, carried_in, invariants), stack=frame.location())
    _results(frame, state, node, loop.carried)
    region.exit_ops = -1  # the body goes on after its break, in the tail
    return "", []


# reasons a nest's capture at its first iteration may fail and not at its second (the first
# iteration sets a name, or changes a value's type); on others, trying again is wasted work
_FIRST_ITERATION_ONLY = ("changes from", "becomes", "unset before the loop")


def holds_loop(frame: "FrameTracer", inst: Any) -> bool:
    """Does the body of the ``for`` loop whose FOR_ITER is ``inst`` hold another ``for`` loop?
    Such a nest is captured at its first iteration: traced straight, that iteration would
    trace (and capture) the inner loop once more for nothing. When that fails, the second
    iteration tries again, as for any loop."""
    flow = frame.flow
    head, end = flow.index_of(inst), flow.index_of(inst.target)
    return any(frame.insts[k].kind == Kind.FOR_ITER for k in range(head + 1, end))


def _returns_from_loop(frame: "FrameTracer", k: int) -> bool:
    """Is the conditional jump ``k`` inside a ``for`` loop, with a side that returns (within a
    few straight instructions)?"""
    heads = loop_heads(frame)
    if not any(frame.insts[h].kind == Kind.FOR_ITER for h in heads[k]):
        return False
    sides = _sides(frame, k)
    for go, _ in sides or ():
        j = _settle(frame, go)
        for _ in range(8):
            inst = frame.insts[j]
            if inst.kind in _RETURNS:
                return True
            if inst.target is not None or j + 1 >= len(frame.insts):
                break
            j += 1
    return False


def left_body(frame: "FrameTracer") -> Exception:
    """What to raise when the body trace reaches an instruction outside the body."""
    return frame.body_range.left(frame.ip)  # type: ignore[union-attr]


def capture_loop(frame: "FrameTracer", inst: Any, it: IterV) -> bool:
    """Capture the rest of the loop whose FOR_ITER is ``inst`` (called before it advances
    ``it``). True: the loop node is recorded, the locals hold its results and ``it`` is
    exhausted. False: nothing changed, the loop unrolls. Over a ``SymRange`` the loop cannot
    unroll: a failure raises ``LoopAbort`` and the enclosing loop unrolls instead."""
    symbolic = isinstance(it, SymIter)
    early = not symbolic and id(inst) not in frame.loop_counts and not exits_early(frame, inst)
    if not symbolic and it.remaining() < config.min_captured_loop_iterations + early:
        return False  # (at the first iteration of a nest: as many left after it as otherwise)
    tracer = frame.tracer
    note = LoopNote(frame.code.co_filename, frame.lineno, None if symbolic else it.remaining(), False)
    try:
        if symbolic and id(inst) in frame.loop_failed:
            raise LoopAbort("its body could not be captured with constant bounds either")
        _attempts(lambda promote, widen, prior: _capture(frame, inst, it, note, promote, widen, prior))
    except LoopAbort as e:
        note.reason = str(e)
        if early and any(w in note.reason for w in _FIRST_ITERATION_ONLY):
            return False  # the second iteration tries again (its note is the one kept)
        if not symbolic:
            frame.loop_failed.add(id(inst))
        if exits_early(frame, inst):  # the break then says why the loop was not captured
            frame.exit_failures[(frame.flow.index_of(inst), frame.flow.index_of(inst.target))] = note.reason
    tracer.loop_notes.append(note)
    fallback = it.bounds.fallback if symbolic else None  # type: ignore[attr-defined]
    if fallback is not None and not note.captured and not tracer.loop_scopes:
        fallback.reason = f"{fallback.reason} (the loop was not captured: {note.reason})"
        fallback.args = (fallback._message(),)
        raise fallback
    if symbolic and not note.captured:
        raise LoopAbort(
            f"the loop at line {note.lineno} over a range computed from a loop index cannot be captured ({note.reason})"
        )
    return note.captured


def _attempts(capture: Any) -> None:
    """Run ``capture(promote, widen, prior)``: first as the frame has it, then carrying the
    Python numbers the body changes as graph numbers, then carrying those an iteration makes
    numpy scalars widened; the last failure propagates."""
    promote: Tuple[str, ...] = ()
    widen: Dict[int, Any] = {}
    prior: Optional[Graph] = None
    while True:
        try:
            capture(promote, widen, prior)
            return
        except LoopAbort as e:
            if e.promotable and not promote:
                promote = e.promotable
            elif e.widen and not widen:
                widen, prior = e.widen, e.body
            else:
                raise


class _State:
    """The frame's state at a loop head, and how to rebuild it after a failed attempt."""

    def __init__(
        self, frame: "FrameTracer", names: List[str], promote: Tuple[str, ...], widen: Optional[Dict[int, Any]] = None
    ) -> None:
        tracer = frame.tracer
        self.leaves: List[Any] = []  # Tensor, or _Promoted for a Python number made a graph number
        index: Dict[Any, int] = {}
        self.templates = {
            n: _flatten(
                frame.load_local(n) if n in frame.locals else None, self.leaves, index, n if n in promote else None
            )
            for n in names
        }
        self.widen = dict(widen or {})
        # the body's view of each leaf: a widened Python number is the numpy scalar it becomes
        self.metas = [self.widen.get(k, leaf.meta) for k, leaf in enumerate(self.leaves)]
        self.locals = dict(frame.locals)
        self.stack = list(frame.stack)
        self.counts = dict(frame.loop_counts)
        self.frame_bits = (frame.ip, frame.cur_index, frame.lineno, frame.kw_names, frame.body_range)
        self.tracer_bits = (tracer.mutation_floor, tracer.graph)
        self.errstate = (list(tracer.errstate_blocks), tracer.graph.errstate)

    def leave_scope(self, frame: "FrameTracer") -> None:
        """Back in the graph around the body (the body trace ended, however it ended)."""
        tracer = frame.tracer
        tracer.loop_scopes.pop()
        frame.ip, frame.cur_index, frame.lineno, frame.kw_names, frame.body_range = self.frame_bits
        tracer.mutation_floor, tracer.graph = self.tracer_bits
        # the errstate blocks open at the loop head (the body may have aborted inside one)
        tracer.errstate_blocks[:] = self.errstate[0]
        tracer.graph.errstate = self.errstate[1]

    def restore(self, frame: "FrameTracer") -> None:
        frame.locals.clear()
        frame.locals.update(self.locals)
        frame.stack[:] = self.stack
        frame.loop_counts.clear()
        frame.loop_counts.update(self.counts)


def _open_body(
    frame: "FrameTracer", state: _State, dead: List[str], *first: Tuple[str, Any], alt: bool = False
) -> Tuple[_Scope, List[Tensor]]:
    """A new body graph with placeholders ``first`` (name, meta) then one per carried
    leaf, entered: the locals hold the placeholders, dead names are unset."""
    tracer = frame.tracer
    body = Graph(f"{tracer.graph.name}_loop", names_from=tracer.root_graph)
    body.meta.update(tracer.root_graph.meta)  # the frame it comes from, for the node's own compiled body
    body.errstate = tracer.graph.errstate  # inside an errstate block: the body runs under it too
    scope = _Scope(body, tracer.graph, alt)
    heads = [Tensor(body.placeholder(name, meta), meta) for name, meta in first]
    carried = [
        Tensor(body.placeholder(leaf.name if isinstance(leaf, _Promoted) else _base(leaf.node.name), meta), meta)
        for leaf, meta in zip(state.leaves, state.metas)
    ]
    _set_locals(frame, state.templates, carried)  # type: ignore[arg-type]
    for name in dead:
        frame.locals.pop(name, None)  # the body stores it before any read
    tracer.loop_scopes.append(scope)
    tracer.graph = body
    tracer.mutation_floor = next_serial()
    return scope, heads + carried


def _why(e: BaseException) -> str:
    if isinstance(e, LoopAbort):
        return str(e)
    if isinstance(e, GraphBreak):
        return f"{e.code} in the body: {e.reason}"
    return f"{type(e).__name__} in the body"  # StopTrace (a break site inside the loop) and the like


def _match_end(
    frame: "FrameTracer", state: _State, promote: Tuple[str, ...]
) -> Tuple[Dict[int, V], str, List[str], Dict[int, Any]]:
    """The carried values at the end of the body, or why they do not continue the loop
    (and the Python numbers an iteration makes numpy scalars, to widen)."""
    widen: Dict[int, Any] = {}
    ends: Dict[int, V] = {}
    promotable: List[str] = []
    why = ""
    if len(frame.stack) != len(state.stack) or any(a is not b for a, b in zip(frame.stack, state.stack)):
        return ends, "the body changes the value stack", promotable, widen  # pragma: no cover - balanced
    for n, t in state.templates.items():
        end_v = frame.locals.get(n)
        why = _match(t, end_v, ends)
        if why and t[0] == "same" and _is_number(t[1]) and isinstance(end_v, (Const, Tensor)) and not promote:
            promotable.append(n)  # a number the body changes: try again carrying it
            why = ""
        elif why:
            return ends, f"{n!r}: {why}", promotable, widen
    if promotable:
        return ends, f"the body changes the Python number {promotable[0]!r}", promotable, widen
    first = ""
    for k, (leaf, meta) in enumerate(zip(state.leaves, state.metas)):
        if not _compatible(meta, ends[k].meta):
            what = leaf.name if isinstance(leaf, _Promoted) else leaf.node.name
            if not state.widen and widened(meta, ends[k].meta):
                widen[k] = ends[k].meta  # try again carrying it as that numpy scalar
                first = first or f"{what} changes from {meta} to {ends[k].meta} in one iteration"
                continue
            return ends, f"{what} changes from {meta} to {ends[k].meta} in one iteration", promotable, {}
    return ends, first, promotable, widen


@contextlib.contextmanager
def _inside_body(tracer: Any, scope: _Scope) -> Iterator[None]:
    """Records into ``scope``'s body graph for the block, once its trace has ended."""
    tracer.loop_scopes.append(scope)
    tracer.graph = scope.graph
    try:
        yield
    finally:
        tracer.loop_scopes.pop()
        tracer.graph = scope.parent


def _negated_in_body(frame: "FrameTracer", scope: _Scope, value: V) -> Tensor:
    """``not value``, computed at the end of the body."""
    tracer = frame.tracer
    with _inside_body(tracer, scope):
        node = scope.graph.call(
            operator.not_, (tracer.to_arg(value),), meta=ScalarMeta(bool, True), stack=frame.location()
        )
    return Tensor(node, ScalarMeta(bool, True))


def _close_body(frame: "FrameTracer", scope: _Scope, ends: Dict[int, V], n: int, extra: Tuple[Any, ...] = ()) -> None:
    """The body graph's output: the carried values at its end (then ``extra``)."""
    tracer = frame.tracer
    with _inside_body(tracer, scope):
        outputs = tuple(tracer.to_arg(ends[k]) for k in range(n)) + tuple(tracer.to_arg(v) for v in extra)
    scope.graph.output(outputs)
    scope.graph.eliminate_dead_code()


def _results(
    frame: "FrameTracer", state: _State, node: Any, carried_ph: List[Any], fold: Any = None, two_typed: bool = False
) -> None:
    """The locals after the loop: each carried name from the loop node's value.
    ``two_typed``: the loop may run no iteration, so a widened number may still be the
    Python number after it; the enclosing body checks that this does not matter."""
    tracer = frame.tracer
    location = frame.location()
    results: List[V] = []
    for k, ph in enumerate(carried_ph):
        folded = fold(k) if fold is not None else None
        if folded is not None:
            results.append(folded)
            continue
        meta = ph.meta["val"]
        union = two_typed and k in state.widen
        if union and tracer.loop_scopes[-1].alt:
            meta = state.leaves[k].meta
        results.append(Tensor(tracer.graph.call(operator.getitem, (node, k), meta=meta, stack=location), meta))
        if union:
            tracer.loop_scopes[-1].unions.append(results[-1].node)
    frame.stack[:] = state.stack
    frame.locals.clear()
    frame.locals.update(state.locals)
    _set_locals(frame, state.templates, results)


def _check_widened(frame: "FrameTracer", state: _State, scope: _Scope, prior: Optional[Graph], two_typed: bool) -> str:
    """'' when the widened numbers of ``state`` are carried right: the first iteration
    traced with them as Python numbers (``prior``) is this one, and where the loop may run
    no iteration there is an enclosing body to check the code after it."""
    if not state.widen:
        return ""
    tracer = frame.tracer
    names = ", ".join(repr(n) for n, t in state.templates.items() if t[0] == "T" and t[1] in state.widen)
    if prior is None:  # pragma: no cover - a widening attempt always follows a traced one
        return f"{names}: a Python number made a numpy scalar by the body"
    loose = [prior.placeholders[1 + k] for k in state.widen]
    differs = same_trace(prior, scope.graph, loose, tracer.lifted_from.get)
    if differs:
        return (
            f"{names} is a Python number before the loop and a numpy scalar after an iteration, and the "
            f"first iteration does not do the same with either ({differs})"
        )
    if two_typed and not tracer.loop_scopes:
        return (
            f"{names} is a Python number before the loop and a numpy scalar after an iteration, and the loop "
            "may run no iteration: its type after the loop is not known"
        )
    return ""


def _retrace(frame: "FrameTracer", state: _State, scope: _Scope, ends: List[Any], again: Any) -> str:
    """The body just traced holds values of inner loops that are Python numbers or numpy
    scalars depending on their trip counts: trace it again (``again``) taking them as the
    Python numbers, and '' when both traces do the same."""
    tracer = frame.tracer
    notes = len(tracer.loop_notes)
    state.restore(frame)
    try:
        graph, ends2 = again()
    except LoopAbort as e:
        return f"an inner loop leaves a Python number or a numpy scalar by its trip count, and {e}"
    finally:
        del tracer.loop_notes[notes:]  # the inner loops' notes are those of the first trace
    differs = same_trace(
        scope.graph,
        graph,
        scope.unions,
        tracer.lifted_from.get,
        (
            [v.node if isinstance(v, Tensor) else v for v in ends],
            [v.node if isinstance(v, Tensor) else v for v in ends2],
        ),
    )
    if differs:
        return (
            "an inner loop leaves a Python number or a numpy scalar by its trip count, and the code after it "
            f"does not do the same with either ({differs})"
        )
    return ""


def _capture(
    frame: "FrameTracer",
    inst: Any,
    it: IterV,
    note: LoopNote,
    promote: Tuple[str, ...] = (),
    widen: Optional[Dict[int, Any]] = None,
    prior: Optional[Graph] = None,
    alt: bool = False,
) -> Any:
    """Trace the body and record the loop node. ``widen``/``prior``: see ``LoopAbort``;
    ``alt``: a second trace taking the two-typed values of inner loops as Python numbers,
    which returns what it traced (and changes nothing) for ``_retrace`` to compare."""
    tracer = frame.tracer
    symbolic = isinstance(it, SymIter)
    head = frame.flow.index_of(inst)
    end = frame.flow.index_of(inst.target)
    if symbolic:
        bounds = it.bounds  # type: ignore[attr-defined]
        start_v, stop_v, step, count = bounds.start, bounds.stop, bounds.step, None
    else:
        progression = _progression(it)
        if progression is None:
            raise LoopAbort("it does not iterate over a range of ints")
        start, step, count = progression
        start_v, stop_v = Const(start), Const(start + count * step)
    first = frame.insts[head + 1]
    if first.kind not in (Kind.STORE_LOCAL, Kind.STORE_LOAD_LOCAL):
        raise LoopAbort("the loop variable is not a plain local name")
    var = local_names(first)[0]
    live = live_in(frame)
    if symbolic and var in live[end]:
        raise LoopAbort(f"the loop variable {var!r} is read after the loop (its last value is not known)")
    stored = [n for n in _stored_names(frame, range(head + 1, end)) if n != var]
    names = [n for n in stored if n in live[head]]

    state = _State(frame, names, promote, widen)
    index_meta = ScalarMeta(int, start_v.value if isinstance(start_v, Const) else start_v.meta.hint)
    scope, (index_v, *carried) = _open_body(
        frame, state, [n for n in stored if n not in names], (var, index_meta), alt=alt
    )
    region = frame.body_range = _ForRegion(head, end, frame.body_range, tuple(state.templates))
    frame.stack.append(index_v)  # what FOR_ITER pushes
    why = ""
    promotable: List[str] = []
    try:
        frame.run()
        why = "a return inside the loop"
    except _BodyDone:
        if region.tail is not None:
            why, promotable = _close_tail(frame, region)
            if promotable:
                why = f"the body changes the Python number {promotable[0]!r} after its break"
    except (LoopAbort, GraphBreak, Exception) as e:
        why = _why(e)
    finally:
        _leave_tail(frame, region)
        state.leave_scope(frame)

    ends: Dict[int, V] = {}
    widen_next: Dict[int, Any] = {}
    if not why and frame.locals.get(var) is not index_v:
        why = f"the body reassigns the loop variable {var!r}"
    exits = region.exit_at is not None
    if not why and exits:
        if var in live[end]:
            why = f"the loop variable {var!r} is read after a loop that may break (its last value is not known)"
        elif region.exit_ops >= 0 and (
            len(scope.graph.operations()) != region.exit_ops
            or any(frame.locals.get(n) is not region.exit_locals.get(n) for n in state.templates)
        ):
            why = "the body goes on after its break (only a break at the end of the body is captured)"
    if not why:
        ends, why, promotable, widen_next = _match_end(frame, state, promote)
    if not why and not alt:  # the first trace checked the widened numbers (``_retrace`` the rest)
        why = _check_widened(frame, state, scope, prior, count is None)
    if not why and alt:
        state.restore(frame)
        return scope.graph, [ends[k] for k in range(len(state.leaves))] + [region.exit_cond]
    if not why and scope.unions:
        why = _retrace(
            frame,
            state,
            scope,
            [ends[k] for k in range(len(state.leaves))] + [region.exit_cond],
            lambda: _capture(frame, inst, it, LoopNote("", 0, None, False), promote, widen, prior, True),
        )
    if why:
        state.restore(frame)
        raise LoopAbort(why, tuple(promotable), widen_next, scope.graph if widen_next else None)

    extra: Tuple[Any, ...] = ()
    if exits:
        flag = region.exit_cond
        if not region.exit_when:
            flag = _negated_in_body(frame, scope, flag)
        extra = (flag,)
    _close_body(frame, scope, ends, len(state.leaves), extra)
    loop = Loop(scope.graph, len(state.leaves), exits)
    location = frame.location()
    carried_in = tuple(leaf.value if isinstance(leaf, _Promoted) else tracer.to_arg(leaf) for leaf in state.leaves)
    invariants = tuple(tracer.lifted_from[ph] for ph in loop.invariants)
    node = tracer.graph.call(
        loop, (tracer.to_arg(start_v), tracer.to_arg(stop_v), step, carried_in, invariants), stack=location
    )
    fold = None if count is None or exits else (lambda k: _folded(state.leaves[k], ends[k], carried[k], count))
    _results(frame, state, node, loop.carried, fold, two_typed=count is None)
    if exits:
        frame.locals.pop(var, None)  # not read after the loop (checked above)
        if count is not None:
            it.pos += count
    elif count is not None:
        frame.locals[var] = Const(start + (count - 1) * step)
        it.pos += count
    note.captured = True


# ---------------------------------------------------------------- while loops
# A conditional jump on a graph value whose one side enters a cycle the other side is not on
# starts a loop: ``while err > tol:`` (the condition at the top, or copied to the bottom by
# the compiler). The body is traced from where the jump continues the loop until control
# comes to a jump on a graph value that leaves for the same exit and otherwise continues at
# the same place (the same jump, or the compiler's copy at the bottom): each iteration runs
# the body and computes the next condition, so the loop node carries the condition with the
# values, and the generated code tests it each time round (``while c: ...``).


class _WhileDone(Exception):
    """The while body trace came to the loop's condition again."""

    def __init__(self, cond: V, repeat_when: bool) -> None:
        super().__init__("the loop condition")
        self.cond = cond
        self.repeat_when = repeat_when


def _jump_sense(inst: Any) -> Optional[bool]:
    """The truth value on which a jump that pops its operand and tests its truth jumps
    (None: another instruction, or a test against None)."""
    if inst.kind != Kind.BRANCH or inst.keeps_operand or inst.condition not in ("true", "false"):
        return None
    return inst.condition == "true"


def _settle(frame: "FrameTracer", k: int) -> int:
    """Where control really goes from ``k``: past no-ops and unconditional jumps."""
    for _ in range(8):  # a chain of jumps is short; a cycle of them is not followed for ever
        inst = frame.insts[k]
        if inst.kind == Kind.NOP:
            k += 1
        elif inst.kind == Kind.JUMP and inst.target is not None:
            k = frame.flow.index_of(inst.target)
        else:
            return k
    return k


def _sides(frame: "FrameTracer", k: int) -> Optional[Tuple[Tuple[int, bool], Tuple[int, bool]]]:
    """((jump target, truth value going there), (next instruction, truth value going there))."""
    inst = frame.insts[k]
    sense = _jump_sense(inst)
    if sense is None or inst.target is None:
        return None
    return (frame.flow.index_of(inst.target), sense), (k + 1, not sense)


class _WhileRegion:
    """The instructions of a while body: those on the cycles its entry is on and its exit is
    not. The entry is admitted once: coming back to it means the condition was decided at
    trace time."""

    __slots__ = (
        "cycles",
        "heads",
        "entry",
        "exit",
        "jump",
        "repeat_when",
        "entered",
        "outer",
        "names",
        "tail",
        "exit_ops",
        "pre",
        "chain",
    )

    def __init__(
        self,
        frame: "FrameTracer",
        jump: int,
        entry: int,
        exit_: int,
        repeat_when: bool,
        chain: Optional[Tuple[int, int]] = None,
    ) -> None:
        self.names: Tuple[str, ...] = ()  # the loop's carried names
        self.tail: Optional[_Tail] = None  # the body after a second exit (``and`` in the condition)
        self.exit_ops = 0
        self.heads = loop_heads(frame)
        # ``chain``: (the second test's jump, where it continues the loop) when the entry is
        # that test, before the cycle (3.12+ copy ``while a and b:``'s tests to the bottom)
        self.pre = frozenset(range(entry, chain[0] + 1)) if chain else frozenset()
        self.cycles = self.heads[chain[1] if chain else entry] - self.heads[exit_]
        self.jump = jump
        self.entry = entry
        self.exit = exit_
        self.repeat_when = repeat_when
        self.entered = False
        self.outer = frame.body_range
        self.chain = chain

    def admits(self, k: int) -> bool:
        if k == self.entry:
            if self.entered:
                return False
            self.entered = True
            return True
        return k in self.pre or bool(self.heads[k] & self.cycles)

    def left(self, k: int) -> Exception:
        if k == self.entry:
            return LoopAbort("the loop condition is decided at trace time inside the body")
        return LoopAbort("control leaves the loop body (a break, a return, or a jump out of the loop)")

    def repeat_sense(self, frame: "FrameTracer", k: int) -> Optional[bool]:
        """At the jump ``k``: the truth value that runs the body again, when ``k`` is this
        loop's condition (None: another branch)."""
        if k == self.jump:
            return self.repeat_when
        sides = _sides(frame, k)
        if sides is None:
            return None
        entry, exit_ = _settle(frame, self.entry), _settle(frame, self.exit)
        for (go, when), (other, _) in (sides, sides[::-1]):
            if _settle(frame, other) == exit_ and (_settle(frame, go) == entry or _same_test(frame, go, entry)):
                return when
        return None


def _destinations(frame: "FrameTracer", k: int) -> Optional[Dict[bool, int]]:
    sides = _sides(frame, k)
    return None if sides is None else {when: _settle(frame, go) for go, when in sides}


def _same_test(frame: "FrameTracer", a: int, b: int) -> bool:
    """Do the code at ``a`` and at ``b`` compute the same test and go to the same places on it
    (3.12+ copy a loop's condition, ``and``/``or`` included, to the bottom of the loop)?"""
    for _ in range(32):
        a, b = _settle(frame, a), _settle(frame, b)
        if a == b:
            return True
        x, y = frame.insts[a], frame.insts[b]
        if _jump_sense(x) is not None and _jump_sense(y) is not None:
            return _destinations(frame, a) == _destinations(frame, b)
        if x.opname != y.opname or x.target is not None or y.target is not None or x.argval != y.argval:
            return False
        a, b = a + 1, b + 1
    return False


# ``while a and b:``: the jump on ``b`` is a second exit in the body. The rest of the body (to
# the next test of ``a``) is a tail, as for a ``for`` loop's break (``_Tail``), that carries the
# next condition too: when ``b`` stops the loop the tail does not run and the condition is the
# value that stops it.
_COND = "<while condition>"  # not a Python name: the tail's slot for the next condition


def _and_chain(frame: "FrameTracer", sides: Any, heads: List[FrozenSet[int]]) -> Optional[Tuple[int, bool, int, Any]]:
    """At a jump before any cycle (``a`` of ``while a and b:`` when the tests are copied to the
    bottom of the loop): (entry, repeat_when, exit, chain) when one side exits and the other
    is straight code to a second jump that leaves for the same exit or enters a cycle the exit
    is not on; None otherwise."""
    for (out, out_when), (stay, _) in (sides, sides[::-1]):
        exit_, entry = _settle(frame, out), _settle(frame, stay)
        j = entry
        for _ in range(16):
            inst = frame.insts[j]
            if (
                _jump_sense(inst) is not None
                or inst.target is not None
                or inst.kind in LOCAL_WRITES
                or inst.kind in _RETURNS
                or j + 1 >= len(frame.insts)
            ):
                break
            j += 1
        dest = _destinations(frame, j)
        if dest is None or exit_ not in dest.values():
            continue
        go = dest[not next(w for w, d in dest.items() if d == exit_)]
        if heads[go] - heads[exit_] and not any(frame.insts[h].kind == Kind.FOR_ITER for h in heads[go] - heads[exit_]):
            return entry, not out_when, exit_, (j, go)
    return None


def _while_exit(frame: "FrameTracer", region: _WhileRegion, k: int, cond: V) -> bool:
    sides = _sides(frame, k)
    if sides is None:
        return False
    exit_ = _settle(frame, region.exit)
    for (go, when), (stay, _) in (sides, sides[::-1]):
        if not region.heads[_settle(frame, stay)] & region.cycles or not (
            _settle(frame, go) == exit_ or _same_exit(frame, go, exit_)
        ):  # 3.12+ copy the exit's code
            continue
        if region.tail is not None:
            raise LoopAbort("a third exit from the loop on a graph value")
        tracer = frame.tracer
        meta = ScalarMeta(bool, True)
        stop = Tensor(
            tracer.graph.call(operator.truth, (not region.repeat_when,), meta=meta, stack=frame.location()), meta
        )
        frame.locals[_COND] = stop
        frame.ip = stay
        _open_tail(frame, region, cond, when, (_COND,))
        frame.locals.pop(_COND, None)  # (the tail's own slot stays, as a placeholder)
        return True
    return False


def _close_while_tail(frame: "FrameTracer", region: _WhileRegion, done: "_WhileDone") -> Tuple[str, List[str]]:
    """At the loop's next test after a tail: the tail's loop node, and the next condition
    (a Python bool) from it in ``done``."""
    tracer = frame.tracer
    meta = ScalarMeta(bool, True)
    again = Tensor(
        tracer.graph.call(
            operator.truth if done.repeat_when == region.repeat_when else operator.not_,
            (tracer.to_arg(done.cond),),
            meta=meta,
            stack=frame.location(),
        ),
        meta,
    )
    frame.locals[_COND] = again
    why, promotable = _close_tail(frame, region)  # type: ignore[arg-type]
    done.cond = frame.locals.pop(_COND, done.cond)
    done.repeat_when = region.repeat_when
    return why, promotable


def _condition_ok(v: V) -> bool:
    """A value the generated ``while`` can test as the jump does: a 0-d array, a numpy
    scalar, or a graph number."""
    if not isinstance(v, Tensor) or v.is_named_tuple:
        return False
    meta = v.meta
    return isinstance(meta, ScalarMeta) or isinstance(meta, ArrayMeta) and meta.ndim == 0


def capture_while(frame: "FrameTracer", jump: Any, cond: V, error: GraphBreak) -> bool:
    """A branch of the conditional jump ``jump`` needs the graph value ``cond`` (``error``
    is the break it raises otherwise). True: a while loop was captured, the locals hold its
    results and the frame continues at its exit. Inside the trace of a while body, reaching
    that loop's condition ends the trace (``_WhileDone``). False: nothing changed."""
    if error.code not in ("FH002", "FH012") or not config.capture_loops or not _condition_ok(cond):
        return False
    k = frame.flow.index_of(jump)
    region = frame.body_range
    if isinstance(region, _ForRegion) and _early_exit(frame, region, k, cond):
        return True
    for (head, end), reason in frame.exit_failures.items():
        if head < k < end and "a for loop not captured" not in error.reason:
            error.reason = f"{error.reason} (a for loop not captured: {reason})"
            error.args = (error._message(),)
    if "a for loop not captured" not in error.reason and _returns_from_loop(frame, k):
        error.reason = (
            f"{error.reason} (a for loop not captured: a return inside the loop on a graph value; "
            "only `if <graph value>: break` leaves a captured for loop)"
        )
        error.args = (error._message(),)
    if isinstance(region, _WhileRegion):
        again = region.repeat_sense(frame, k)
        if again is not None:
            raise _WhileDone(cond, again)
        if _while_exit(frame, region, k, cond):
            return True
    sides = _sides(frame, k)
    if sides is None:
        return False
    heads = loop_heads(frame)
    # the side that enters a cycle the other is not on (a for loop's cycle: a break out of it)
    shapes = [
        (go, when, other)
        for (go, when), (other, _) in (sides, sides[::-1])
        if heads[go] - heads[other] and not any(frame.insts[h].kind == Kind.FOR_ITER for h in heads[go] - heads[other])
    ]
    chain = None
    if not shapes:
        found = _and_chain(frame, sides, heads)
        if found is None:
            return False  # an if, not a loop
        entry, repeat_when, exit_, chain = found
    elif len(shapes) != 1:
        return False  # an if, not a loop
    else:
        entry, repeat_when, exit_ = shapes[0]
    while region is not None:  # a second exit of a while loop being captured: not a loop of its own
        if isinstance(region, _WhileRegion) and region.jump == k:
            return False
        if isinstance(region, _WhileRegion) and (heads[entry] - heads[exit_]) & region.cycles:
            raise LoopAbort("a second exit from the loop on a graph value (a break, or `and`/`or` in its condition)")
        region = region.outer
    note = LoopNote(frame.code.co_filename, frame.lineno, None, False, kind="while")
    try:
        _attempts(
            lambda promote, widen, prior: _capture_while(
                frame, _WhileRegion(frame, k, entry, exit_, repeat_when, chain), cond, note, promote, widen, prior
            )
        )
    except LoopAbort as e:
        note.reason = str(e)
        # the break says why the loop runs in Python (a resumed trace keeps no loop notes)
        error.reason = f"{error.reason} (a while loop not captured: {note.reason})"
        error.args = (error._message(),)
    frame.tracer.loop_notes.append(note)
    return note.captured


def _capture_while(
    frame: "FrameTracer",
    region: _WhileRegion,
    cond: V,
    note: LoopNote,
    promote: Tuple[str, ...] = (),
    widen: Optional[Dict[int, Any]] = None,
    prior: Optional[Graph] = None,
    alt: bool = False,
) -> Any:
    """Like ``_capture``, for a while loop."""
    tracer = frame.tracer
    live = live_in(frame)
    stored = _stored_names(frame, [k for k in range(len(frame.insts)) if region.heads[k] & region.cycles])
    names = [n for n in stored if n in live[region.entry] | live[region.exit]]

    state = _State(frame, names, promote, widen)
    region.names = tuple(state.templates)
    scope, (cond_v, *carried) = _open_body(
        frame, state, [n for n in stored if n not in names], ("cond", ScalarMeta(bool, True)), alt=alt
    )
    frame.body_range = region
    frame.ip = region.entry
    done: Optional[_WhileDone] = None
    why = ""
    promotable: List[str] = []
    try:
        frame.run()
        why = "a return inside the loop"
    except _WhileDone as d:
        done = d
        if region.tail is not None:
            why, promotable = _close_while_tail(frame, region, d)
            if promotable:
                why = f"the body changes the Python number {promotable[0]!r} after its second exit"
    except (LoopAbort, GraphBreak, Exception) as e:
        why = _why(e)
    finally:
        _leave_tail(frame, region)
        state.leave_scope(frame)

    ends: Dict[int, V] = {}
    widen_next: Dict[int, Any] = {}
    if done is not None and not why:
        ends, why, promotable, widen_next = _match_end(frame, state, promote)
    if not why and not alt:
        why = _check_widened(frame, state, scope, prior, True)
    if not why and alt:
        assert done is not None
        state.restore(frame)
        return scope.graph, [ends[k] for k in range(len(state.leaves))] + [done.cond]
    if not why and scope.unions:
        assert done is not None
        why = _retrace(
            frame,
            state,
            scope,
            [ends[k] for k in range(len(state.leaves))] + [done.cond],
            lambda: _capture_while(
                frame,
                _WhileRegion(frame, region.jump, region.entry, region.exit, region.repeat_when, region.chain),
                cond,
                LoopNote("", 0, None, False, kind="while"),
                promote,
                widen,
                prior,
                True,
            ),
        )
    if why:
        state.restore(frame)
        raise LoopAbort(why, tuple(promotable), widen_next, scope.graph if widen_next else None)
    assert done is not None
    again = done.cond
    if done.repeat_when != region.repeat_when:  # the copy at the bottom tests the other way round
        again = _negated_in_body(frame, scope, again)
    _close_body(frame, scope, ends, len(state.leaves), (again,))
    loop = WhileLoop(scope.graph, len(state.leaves), region.repeat_when)
    carried_in = tuple(leaf.value if isinstance(leaf, _Promoted) else tracer.to_arg(leaf) for leaf in state.leaves)
    invariants = tuple(tracer.lifted_from[ph] for ph in loop.invariants)
    node = tracer.graph.call(loop, (tracer.to_arg(cond), carried_in, invariants), stack=frame.location())
    _results(frame, state, node, loop.carried, two_typed=True)
    frame.ip = region.exit
    note.captured = True


def _folded(leaf: Any, end: V, placeholder: Tensor, count: int) -> Optional[Const]:
    """The value after the loop of a promoted number the body updates by a constant
    (``k += 1``, ``t = t + 0.1``), computed here with the loop's own Python arithmetic;
    None when it must come from the graph."""
    if not isinstance(leaf, _Promoted) or not isinstance(end, Tensor) or count > _MAX_FOLDED:
        return None
    node = end.node
    op = _FOLDABLE.get(getattr(node, "target", None))
    args = getattr(node, "args", ())
    if op is None or len(args) != 2 or args[0] is not placeholder.node or type(args[1]) not in (int, float):
        return None
    value = leaf.value
    for _ in range(count):
        value = op(value, args[1])
    if type(value) is not leaf.meta.pytype:
        return None  # pragma: no cover - _compatible already required the same type
    return Const(value)
