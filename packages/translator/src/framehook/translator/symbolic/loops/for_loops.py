"""Capturing ``for`` loops over ranges (and over ``SymRange``) as loop nodes, with an
early exit (``if <graph value>: break``) at the end of the body or before a tail."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Dict, List, Optional, Tuple

from ...bytecode.behaviour import BEHAVIOUR
from ...bytecode.cfg import local_names
from ...bytecode.kinds import Kind
from ...config import config
from ...graph import Graph, Loop, ScalarMeta
from ..breaks import GraphBreak
from ..values import Const, IterV, V
from .carried import (
    HeadState,
    LoopAbort,
    LoopNote,
    Promoted,
    attempts,
    check_widened,
    close_body,
    folded_value,
    live_in,
    loop_heads,
    match_end,
    negated_in_body,
    open_body,
    retrace,
    set_results,
    why_failed,
)
from .paths import RETURNS, branch_sides, same_exit, settle, stored_names
from .ranges import SymIter, range_progression
from .tails import Tail, close_tail, leave_tail, open_tail

if TYPE_CHECKING:  # pragma: no cover
    from ..roles import Frame


class _BodyDone(Exception):
    """The body trace came back to the loop head."""


class ForRegion:
    """The instructions of a ``for`` body: strictly between its FOR_ITER and its exit; and
    the body's early exit once the trace has met it (``early_exit``)."""

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
        self.tail: Optional[Tail] = None

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


def exits_early(frame: "Frame", inst: Any) -> bool:
    """Does the body of the ``for`` loop whose FOR_ITER is ``inst`` pop the iterator (a
    ``break`` or a ``return`` inside it)? Such a loop is captured at its first iteration,
    since tracing that iteration straight would stop at the break."""
    flow = frame.flow
    head, end = flow.index_of(inst), flow.index_of(inst.target)
    depths = flow.stack_depths
    d = depths.get(head)
    return d is not None and any(frame.insts[k].kind in _ITER_POPS and depths.get(k) == d for k in range(head + 1, end))


def _after_pops(frame: "Frame", k: int, depth: int) -> int:
    """From ``k``: past the instructions that drop the loop's iterator (and its index slot
    where there is one), and past jumps. ``depth``: the stack depth at the loop head."""
    depths = frame.flow.stack_depths
    below = depth - (2 if BEHAVIOUR.iterators_take_two_slots else 1)
    for _ in range(6):
        k = settle(frame, k)
        if frame.insts[k].kind in _LOOP_ENDS and depths.get(k, depth) > below:
            k += 1
        else:
            break
    return settle(frame, k)


def early_exit(frame: "Frame", region: ForRegion, k: int, cond: V) -> bool:
    """At the conditional jump ``k`` on the graph value ``cond`` inside a for body: when one
    side breaks out of the loop, keep the exit and go on along the other side (True)."""
    sides = branch_sides(frame, k)
    if sides is None:
        return False
    depth = frame.flow.stack_depths.get(region.head)
    for (go, when), (stay, _) in (sides, sides[::-1]):
        out = settle(frame, go)
        if (
            frame.insts[out].kind not in _ITER_POPS
            or frame.flow.stack_depths.get(out) != depth
            or not region.admits(settle(frame, stay))
            and settle(frame, stay) != region.head
        ):
            continue
        if region.exit_at is not None:
            raise LoopAbort("a second exit from the loop on a graph value")
        if depth is None:  # pragma: no cover - the loop head's depth is known where its FOR_ITER runs
            raise LoopAbort("the stack depth at the loop head is not known")
        broken, ended = _after_pops(frame, out, depth), _after_pops(frame, region.end, depth)
        if not same_exit(frame, broken, ended):
            if any(same_exit(frame, broken, p) for p in range(ended + 1, min(ended + 64, len(frame.insts)))):
                raise LoopAbort(
                    "a for-else: its else clause runs only when the loop does not break, which the graph does not tell"
                )
            raise LoopAbort("the code the break leads to is not the code after the loop (a return)")
        region.exit_at, region.exit_when, region.exit_cond = k, when, cond
        frame.ip = stay
        region.exit_locals = dict(frame.locals)
        open_tail(frame, region, cond, when)
        region.exit_ops = len(region.tail.scope.parent.operations())  # type: ignore[union-attr]
        return True
    return False


# reasons a nest's capture at its first iteration may fail and not at its second (the first
# iteration sets a name, or changes a value's type); on others, trying again is wasted work
_FIRST_ITERATION_ONLY = ("changes from", "becomes", "unset before the loop")


def holds_loop(frame: "Frame", inst: Any) -> bool:
    """Does the body of the ``for`` loop whose FOR_ITER is ``inst`` hold another ``for`` loop?
    Such a nest is captured at its first iteration: traced straight, that iteration would
    trace (and capture) the inner loop once more for nothing. When that fails, the second
    iteration tries again, as for any loop."""
    flow = frame.flow
    head, end = flow.index_of(inst), flow.index_of(inst.target)
    return any(frame.insts[k].kind == Kind.FOR_ITER for k in range(head + 1, end))


def returns_from_loop(frame: "Frame", k: int) -> bool:
    """Is the conditional jump ``k`` inside a ``for`` loop, with a side that returns (within a
    few straight instructions)?"""
    heads = loop_heads(frame)
    if not any(frame.insts[h].kind == Kind.FOR_ITER for h in heads[k]):
        return False
    sides = branch_sides(frame, k)
    for go, _ in sides or ():
        j = settle(frame, go)
        for _ in range(8):
            inst = frame.insts[j]
            if inst.kind in RETURNS:
                return True
            if inst.target is not None or j + 1 >= len(frame.insts):
                break
            j += 1
    return False


def capture_loop(frame: "Frame", inst: Any, it: IterV) -> bool:
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
        attempts(lambda promote, widen, prior: _capture(frame, inst, it, note, promote, widen, prior))
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


def _capture(
    frame: "Frame",
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
    which returns what it traced (and changes nothing) for ``retrace`` to compare."""
    tracer = frame.tracer
    symbolic = isinstance(it, SymIter)
    head = frame.flow.index_of(inst)
    end = frame.flow.index_of(inst.target)
    if symbolic:
        bounds = it.bounds  # type: ignore[attr-defined]
        start_v, stop_v, step, count = bounds.start, bounds.stop, bounds.step, None
    else:
        progression = range_progression(it)
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
    stored = [n for n in stored_names(frame, range(head + 1, end)) if n != var]
    names = [n for n in stored if n in live[head]]

    state = HeadState(frame, names, promote, widen)
    index_meta = ScalarMeta(int, start_v.value if isinstance(start_v, Const) else start_v.meta.hint)
    scope, (index_v, *carried) = open_body(
        frame, state, [n for n in stored if n not in names], (var, index_meta), alt=alt
    )
    region = frame.body_range = ForRegion(head, end, frame.body_range, tuple(state.templates))
    frame.stack.append(index_v)  # what FOR_ITER pushes
    why = ""
    promotable: List[str] = []
    try:
        frame.run()
        why = "a return inside the loop"
    except _BodyDone:
        if region.tail is not None:
            why, promotable = close_tail(frame, region)
            if promotable:
                why = f"the body changes the Python number {promotable[0]!r} after its break"
    except (LoopAbort, GraphBreak, Exception) as e:
        why = why_failed(e)
    finally:
        leave_tail(frame, region)
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
        ends, why, promotable, widen_next = match_end(frame, state, promote)
    if not why and not alt:  # the first trace checked the widened numbers (``retrace`` the rest)
        why = check_widened(frame, state, scope, prior, count is None)
    if not why and alt:
        state.restore(frame)
        return scope.graph, [ends[k] for k in range(len(state.leaves))] + [region.exit_cond]
    if not why and scope.unions:
        why = retrace(
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
            flag = negated_in_body(frame, scope, flag)
        extra = (flag,)
    close_body(frame, scope, ends, len(state.leaves), extra)
    loop = Loop(scope.graph, len(state.leaves), exits)
    location = frame.location()
    carried_in = tuple(leaf.value if isinstance(leaf, Promoted) else tracer.to_arg(leaf) for leaf in state.leaves)
    invariants = tuple(tracer.lifted_from[ph] for ph in loop.invariants)
    node = tracer.graph.call(
        loop, (tracer.to_arg(start_v), tracer.to_arg(stop_v), step, carried_in, invariants), stack=location
    )
    fold = None if count is None or exits else (lambda k: folded_value(state.leaves[k], ends[k], carried[k], count))
    set_results(frame, state, node, loop.carried, fold, two_typed=count is None)
    if exits:
        frame.locals.pop(var, None)  # not read after the loop (checked above)
        if count is not None:
            it.pos += count
    elif count is not None:
        frame.locals[var] = Const(start + (count - 1) * step)
        it.pos += count
    note.captured = True
