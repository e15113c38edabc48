"""Capturing ``while`` loops whose condition the graph computes as ``WhileLoop`` nodes,
from the conditional jump on that condition."""

from __future__ import annotations

import operator
from typing import TYPE_CHECKING, Any, Dict, FrozenSet, List, Optional, Tuple

from ...bytecode.cfg import LOCAL_WRITES
from ...bytecode.kinds import Kind
from ...config import config
from ...graph import ArrayMeta, Graph, ScalarMeta, WhileLoop
from ..breaks import GraphBreak
from ..values import Tensor, V
from .carried import (
    HeadState,
    LoopAbort,
    LoopNote,
    Promoted,
    attempts,
    check_widened,
    close_body,
    live_in,
    loop_heads,
    match_end,
    negated_in_body,
    open_body,
    retrace,
    set_results,
    why_failed,
)
from .for_loops import ForRegion, early_exit, returns_from_loop
from .paths import RETURNS, branch_sides, destinations, jump_sense, same_exit, same_test, settle, stored_names
from .tails import Tail, close_tail, leave_tail, open_tail

if TYPE_CHECKING:  # pragma: no cover
    from ..roles import Frame


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
        frame: "Frame",
        jump: int,
        entry: int,
        exit_: int,
        repeat_when: bool,
        chain: Optional[Tuple[int, int]] = None,
    ) -> None:
        self.names: Tuple[str, ...] = ()  # the loop's carried names
        self.tail: Optional[Tail] = None  # the body after a second exit (``and`` in the condition)
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

    def repeat_sense(self, frame: "Frame", k: int) -> Optional[bool]:
        """At the jump ``k``: the truth value that runs the body again, when ``k`` is this
        loop's condition (None: another branch)."""
        if k == self.jump:
            return self.repeat_when
        sides = branch_sides(frame, k)
        if sides is None:
            return None
        entry, exit_ = settle(frame, self.entry), settle(frame, self.exit)
        for (go, when), (other, _) in (sides, sides[::-1]):
            if settle(frame, other) == exit_ and (settle(frame, go) == entry or same_test(frame, go, entry)):
                return when
        return None


# ``while a and b:``: the jump on ``b`` is a second exit in the body. The rest of the body (to
# the next test of ``a``) is a tail, as for a ``for`` loop's break (``Tail``), that carries the
# next condition too: when ``b`` stops the loop the tail does not run and the condition is the
# value that stops it.
_COND = "<while condition>"  # not a Python name: the tail's slot for the next condition


def _and_chain(frame: "Frame", sides: Any, heads: List[FrozenSet[int]]) -> Optional[Tuple[int, bool, int, Any]]:
    """At a jump before any cycle (``a`` of ``while a and b:`` when the tests are copied to the
    bottom of the loop): (entry, repeat_when, exit, chain) when one side exits and the other
    is straight code to a second jump that leaves for the same exit or enters a cycle the exit
    is not on; None otherwise."""
    for (out, out_when), (stay, _) in (sides, sides[::-1]):
        exit_, entry = settle(frame, out), settle(frame, stay)
        j = entry
        for _ in range(16):
            inst = frame.insts[j]
            if (
                jump_sense(inst) is not None
                or inst.target is not None
                or inst.kind in LOCAL_WRITES
                or inst.kind in RETURNS
                or j + 1 >= len(frame.insts)
            ):
                break
            j += 1
        dest = destinations(frame, j)
        if dest is None or exit_ not in dest.values():
            continue
        go = dest[not next(w for w, d in dest.items() if d == exit_)]
        if heads[go] - heads[exit_] and not any(frame.insts[h].kind == Kind.FOR_ITER for h in heads[go] - heads[exit_]):
            return entry, not out_when, exit_, (j, go)
    return None


def _while_exit(frame: "Frame", region: _WhileRegion, k: int, cond: V) -> bool:
    sides = branch_sides(frame, k)
    if sides is None:
        return False
    exit_ = settle(frame, region.exit)
    for (go, when), (stay, _) in (sides, sides[::-1]):
        if not region.heads[settle(frame, stay)] & region.cycles or not (
            settle(frame, go) == exit_ or same_exit(frame, go, exit_)
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
        open_tail(frame, region, cond, when, (_COND,))
        frame.locals.pop(_COND, None)  # (the tail's own slot stays, as a placeholder)
        return True
    return False


def _close_while_tail(frame: "Frame", region: _WhileRegion, done: "_WhileDone") -> Tuple[str, List[str]]:
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
    why, promotable = close_tail(frame, region)  # type: ignore[arg-type]
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


def capture_while(frame: "Frame", jump: Any, cond: V, error: GraphBreak) -> bool:
    """A branch of the conditional jump ``jump`` needs the graph value ``cond`` (``error``
    is the break it raises otherwise). True: a while loop was captured, the locals hold its
    results and the frame continues at its exit. Inside the trace of a while body, reaching
    that loop's condition ends the trace (``_WhileDone``). False: nothing changed."""
    if error.code not in ("FH002", "FH012") or not config.capture_loops or not _condition_ok(cond):
        return False
    k = frame.flow.index_of(jump)
    region = frame.body_range
    if isinstance(region, ForRegion) and early_exit(frame, region, k, cond):
        return True
    for (head, end), reason in frame.exit_failures.items():
        if head < k < end and "a for loop not captured" not in error.reason:
            error.reason = f"{error.reason} (a for loop not captured: {reason})"
            error.args = (error._message(),)
    if "a for loop not captured" not in error.reason and returns_from_loop(frame, k):
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
    sides = branch_sides(frame, k)
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
        attempts(
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
    frame: "Frame",
    region: _WhileRegion,
    cond: V,
    note: LoopNote,
    promote: Tuple[str, ...] = (),
    widen: Optional[Dict[int, Any]] = None,
    prior: Optional[Graph] = None,
    alt: bool = False,
) -> Any:
    """Like ``for_loops._capture``, for a while loop."""
    tracer = frame.tracer
    live = live_in(frame)
    stored = stored_names(frame, [k for k in range(len(frame.insts)) if region.heads[k] & region.cycles])
    names = [n for n in stored if n in live[region.entry] | live[region.exit]]

    state = HeadState(frame, names, promote, widen)
    region.names = tuple(state.templates)
    scope, (cond_v, *carried) = open_body(
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
        why = why_failed(e)
    finally:
        leave_tail(frame, region)
        state.leave_scope(frame)

    ends: Dict[int, V] = {}
    widen_next: Dict[int, Any] = {}
    if done is not None and not why:
        ends, why, promotable, widen_next = match_end(frame, state, promote)
    if not why and not alt:
        why = check_widened(frame, state, scope, prior, True)
    if not why and alt:
        assert done is not None
        state.restore(frame)
        return scope.graph, [ends[k] for k in range(len(state.leaves))] + [done.cond]
    if not why and scope.unions:
        assert done is not None
        why = retrace(
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
        again = negated_in_body(frame, scope, again)
    close_body(frame, scope, ends, len(state.leaves), (again,))
    loop = WhileLoop(scope.graph, len(state.leaves), region.repeat_when)
    carried_in = tuple(leaf.value if isinstance(leaf, Promoted) else tracer.to_arg(leaf) for leaf in state.leaves)
    invariants = tuple(tracer.lifted_from[ph] for ph in loop.invariants)
    node = tracer.graph.call(loop, (tracer.to_arg(cond), carried_in, invariants), stack=frame.location())
    set_results(frame, state, node, loop.carried, two_typed=True)
    frame.ip = region.exit
    note.captured = True
