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
"""
from __future__ import annotations

import operator
import re
import weakref
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Dict, FrozenSet, Iterable, List, Optional, Tuple

from ..bytecode.behaviour import BEHAVIOUR
from ..config import config
from ..graph import ArrayMeta, Graph, Loop, ScalarMeta, TupleMeta, WhileLoop
from .breaks import GraphBreak
from .values import Const, IterV, Tensor, TupleV, V, next_serial

if TYPE_CHECKING:  # pragma: no cover
    from .interpreter import FrameTracer
    from .tracer import Tracer

__all__ = ["LoopAbort", "LoopNote", "SymRange", "SymIter", "capture_loop", "capture_while", "exits_early",
           "symbolic_range", "lift", "left_body", "live_in"]

_STORES = frozenset({"STORE_FAST", "DELETE_FAST", "STORE_FAST_STORE_FAST", "STORE_FAST_LOAD_FAST",
                     "LOAD_FAST_AND_CLEAR"})
_IMMUTABLE = (int, float, complex, bool, str, bytes, type(None), range, slice)


class LoopAbort(Exception):
    """The loop body cannot be captured as a loop (the loop is unrolled instead).
    ``promotable``: Python numbers the body changes (``k += 1``, ``t += dt``), which a
    second attempt carries through the loop as graph numbers."""

    def __init__(self, why: str, promotable: Tuple[str, ...] = ()) -> None:
        super().__init__(why)
        self.promotable = promotable


class _Promoted:
    """A Python number at the loop head that the body changes: a carried graph number in
    the body, its value at the head the loop's input."""

    def __init__(self, name: str, value: Any) -> None:
        self.name = name
        self.value = value
        self.meta = ScalarMeta(type(value), value)


# a carried number updated by one of these with a constant has a final value the trace can
# compute with the same Python arithmetic the loop does (so it stays a Python number after)
_FOLDABLE = {operator.add: operator.add, operator.iadd: operator.add, operator.sub: operator.sub,
             operator.isub: operator.sub, operator.mul: operator.mul, operator.imul: operator.mul}
_MAX_FOLDED = 1_000_000


class _BodyDone(Exception):
    """The body trace came back to the loop head."""


@dataclass
class LoopNote:
    """What happened to one loop: captured (``reason`` empty) or unrolled, and why."""

    filename: str
    lineno: int
    iterations: Optional[int]   # None: bounds or condition computed in the graph
    captured: bool
    reason: str = ""
    kind: str = "for"           # or "while"

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

    __slots__ = ("graph", "parent", "lifted")

    def __init__(self, graph: Graph, parent: Graph) -> None:
        self.graph = graph
        self.parent = parent
        self.lifted: Dict[Any, Any] = {}


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
        leaves.append(_Promoted(promote, v.value))   # type: ignore[union-attr]
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
    if isinstance(head, TupleMeta) or isinstance(end, TupleMeta):   # a named tuple: item by item
        return (isinstance(head, TupleMeta) and isinstance(end, TupleMeta) and head.pytype is end.pytype
                and len(head.items) == len(end.items) and all(map(_compatible, head.items, end.items)))
    if isinstance(head, ScalarMeta) or isinstance(end, ScalarMeta):
        return isinstance(head, ScalarMeta) and isinstance(end, ScalarMeta) and head.pytype is end.pytype
    if not (isinstance(head, ArrayMeta) and isinstance(end, ArrayMeta)):
        return False
    if head.pytype is not end.pytype or head.dtype != end.dtype or len(head.shape) != len(end.shape):
        return False
    return all((type(x) is int) == (type(y) is int) and (type(x) is not int or x == y)
               for x, y in zip(head.shape, end.shape))


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


# ---------------------------------------------------------------- liveness
# A name the body stores is carried only when its value at the loop head can be read:
# by the body before the body stores it, or after the loop. The others (temporaries of one
# iteration) are not values of the loop at all, and need not exist before it.
_READS = frozenset({"LOAD_FAST", "LOAD_FAST_CHECK", "LOAD_FAST_BORROW", "LOAD_FAST_AND_CLEAR", "DELETE_FAST",
                    "LOAD_FAST_LOAD_FAST", "LOAD_FAST_BORROW_LOAD_FAST_BORROW"})
_live_cache: "weakref.WeakKeyDictionary[Any, List[FrozenSet[str]]]" = weakref.WeakKeyDictionary()


def _names_of(inst: Any) -> Tuple[str, ...]:
    return inst.argval if isinstance(inst.argval, tuple) else (inst.argval,)


def live_in(frame: "FrameTracer") -> List[FrozenSet[str]]:
    """For each instruction of the frame, the local names some path from it reads before
    storing them."""
    cached = _live_cache.get(frame.flow)
    if cached is not None:
        return cached
    uses: List[FrozenSet[str]] = []
    kills: List[FrozenSet[str]] = []
    for inst in frame.insts:
        op = inst.opname
        if op in _READS:
            uses.append(frozenset(_names_of(inst)))
            kills.append(frozenset())
        elif op == "STORE_FAST_LOAD_FAST":
            stored, loaded = inst.argval
            uses.append(frozenset() if loaded == stored else frozenset({loaded}))
            kills.append(frozenset({stored}))
        elif op in _STORES:
            uses.append(frozenset())
            kills.append(frozenset(_names_of(inst)))
        else:
            uses.append(frozenset())
            kills.append(frozenset())
    successors = frame.flow.successors
    live: List[FrozenSet[str]] = [frozenset()] * len(uses)
    changed = True
    while changed:
        changed = False
        for k in range(len(uses) - 1, -1, -1):
            out: FrozenSet[str] = frozenset().union(*(live[j] for j in successors[k]))
            new = (out - kills[k]) | uses[k]
            if new != live[k]:
                live[k] = new
                changed = True
    _live_cache[frame.flow] = live
    return live


_heads_cache: "weakref.WeakKeyDictionary[Any, List[FrozenSet[int]]]" = weakref.WeakKeyDictionary()


def _walk(edges: List[List[int]], start: int, stop: int) -> set:
    seen = {start}
    todo = [start]
    while todo:
        k = todo.pop()
        if k == stop:
            continue
        for j in edges[k]:
            if j not in seen:
                seen.add(j)
                todo.append(j)
    return seen


def loop_heads(frame: "FrameTracer") -> List[FrozenSet[int]]:
    """For each instruction, the heads of the natural loops holding it: for a jump back from
    ``u`` to ``v``, what ``v`` reaches that reaches ``u`` without passing ``v`` again (so an
    inner loop does not hold the rest of its outer loop, unlike ``ControlFlow.loop_heads``)."""
    cached = _heads_cache.get(frame.flow)
    if cached is not None:
        return cached
    flow = frame.flow
    heads: List[set] = [set() for _ in frame.insts]
    for u, outs in enumerate(flow.successors):
        for v in outs:
            if v <= u:
                body = _walk(flow.successors, v, -1) & _walk(flow.predecessors, u, v)
                if u in body:
                    for k in body:
                        heads[k].add(v)
    cached = _heads_cache[flow] = [frozenset(h) for h in heads]
    return cached


# ---------------------------------------------------------------- ranges with graph bounds
class SymRange(V):
    """``range()`` of graph ints inside a loop body being captured (``range(i)``,
    ``range(j, i)`` on a loop index): only a ``for`` loop over it can use it, and that loop
    becomes a loop node with these bounds (or the enclosing loop unrolls)."""

    __slots__ = ("start", "stop", "step")

    def __init__(self, start: V, stop: V, step: int) -> None:
        self.start = start
        self.stop = stop
        self.step = step

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
        return None   # after the capture: the loop exits

    def rest(self) -> List[V]:
        raise LoopAbort("a range with bounds computed in the graph is iterated other than by a for loop")

    def describe(self) -> str:
        return "an iterator over a range with bounds computed in the graph"


def symbolic_range(frame: "FrameTracer", args: List[V], kwargs: Dict[str, V]) -> Optional[SymRange]:
    """``range(*args)`` with a bound that is a graph int only known when the graph runs (a
    loop index), inside a loop body being captured; None: the range is built now."""
    tracer = frame.tracer
    if kwargs or not tracer.loop_scopes or not 1 <= len(args) <= 3 or not any(map(tracer.is_symint, args)):
        return None
    parts: List[V] = []
    for a in args:
        if tracer.is_symint(a):
            parts.append(a)
        elif isinstance(a, Const) and type(a.value) is int:
            parts.append(a)
        else:
            return None
    start, stop, step = (Const(0), parts[0], Const(1)) if len(parts) == 1 else (
        parts[0], parts[1], parts[2] if len(parts) == 3 else Const(1))
    if not isinstance(step, Const) or step.value == 0:
        return None   # range() raises, or the direction is unknown: built now (and breaks)
    return SymRange(start, stop, step.value)


# ---------------------------------------------------------------- the capture
def _progression(it: IterV) -> Optional[Tuple[int, int, int]]:
    """(start, step, count) of the items ``it`` has left, when they are the ints of a range."""
    if it.range is not None:
        rest = it.range[it.pos:]
        return (rest.start, rest.step, len(rest)) if len(rest) >= 2 else None
    items = it.items[it.pos:]
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
        if inst.opname in _STORES:
            for name in _names_of(inst):
                names[name] = None
    return list(names)


class _ForRegion:
    """The instructions of a ``for`` body: strictly between its FOR_ITER and its exit; and
    the body's early exit once the trace has met it (``_early_exit``)."""

    __slots__ = ("head", "end", "outer", "exit_at", "exit_when", "exit_cond", "exit_locals", "exit_ops")

    def __init__(self, head: int, end: int, outer: Any) -> None:
        self.head = head
        self.end = end
        self.outer = outer
        self.exit_at: Optional[int] = None   # the conditional jump that breaks out
        self.exit_when = True                # the truth value of exit_cond that breaks out
        self.exit_cond: Optional[V] = None
        self.exit_locals: Dict[str, Any] = {}
        self.exit_ops = 0

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
_ITER_POPS = frozenset({"POP_TOP", "POP_ITER"})
_LOOP_ENDS = frozenset({"END_FOR", "POP_TOP", "POP_ITER"})
_RETURNS = frozenset({"RETURN_VALUE", "RETURN_CONST"})


def exits_early(frame: "FrameTracer", inst: Any) -> bool:
    """Does the body of the ``for`` loop whose FOR_ITER is ``inst`` pop the iterator (a
    ``break`` or a ``return`` inside it)? Such a loop is captured at its first iteration,
    since tracing that iteration straight would stop at the break."""
    flow = frame.flow
    head, end = flow.index_of(inst), flow.index_of(inst.target)
    depths = flow.stack_depths
    d = depths.get(head)
    return d is not None and any(frame.insts[k].opname in _ITER_POPS and depths.get(k) == d
                                 for k in range(head + 1, end))


def _after_pops(frame: "FrameTracer", k: int, depth: int) -> int:
    """From ``k``: past the instructions that drop the loop's iterator (and its index slot
    where there is one), and past jumps. ``depth``: the stack depth at the loop head."""
    depths = frame.flow.stack_depths
    below = depth - (2 if BEHAVIOUR.iterators_take_two_slots else 1)
    for _ in range(6):
        k = _settle(frame, k)
        if frame.insts[k].opname in _LOOP_ENDS and depths.get(k, depth) > below:
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
        if x.opname in _RETURNS:
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
        if frame.insts[out].opname not in _ITER_POPS or frame.flow.stack_depths.get(out) != depth \
                or not region.admits(_settle(frame, stay)) and _settle(frame, stay) != region.head:
            continue
        if region.exit_at is not None:
            raise LoopAbort("a second exit from the loop on a graph value")
        if depth is None or not _same_exit(frame, _after_pops(frame, out, depth), _after_pops(frame, region.end, depth)):
            raise LoopAbort("the code the break leads to is not the code after the loop (a for-else, or a return)")
        region.exit_at, region.exit_when, region.exit_cond = k, when, cond
        region.exit_locals = dict(frame.locals)
        region.exit_ops = len(frame.tracer.graph.operations())
        frame.ip = stay
        return True
    return False


def left_body(frame: "FrameTracer") -> Exception:
    """What to raise when the body trace reaches an instruction outside the body."""
    return frame.body_range.left(frame.ip)   # type: ignore[union-attr]


def capture_loop(frame: "FrameTracer", inst: Any, it: IterV) -> bool:
    """Capture the rest of the loop whose FOR_ITER is ``inst`` (called before it advances
    ``it``). True: the loop node is recorded, the locals hold its results and ``it`` is
    exhausted. False: nothing changed, the loop unrolls. Over a ``SymRange`` the loop cannot
    unroll: a failure raises ``LoopAbort`` and the enclosing loop unrolls instead."""
    symbolic = isinstance(it, SymIter)
    if not symbolic and it.remaining() < config.min_captured_loop_iterations:
        return False
    tracer = frame.tracer
    note = LoopNote(frame.code.co_filename, frame.lineno, None if symbolic else it.remaining(), False)
    try:
        if symbolic and id(inst) in frame.loop_failed:
            raise LoopAbort("its body could not be captured with constant bounds either")
        try:
            _capture(frame, inst, it, note)
        except LoopAbort as e:
            if not e.promotable:
                raise
            _capture(frame, inst, it, note, promote=e.promotable)
    except LoopAbort as e:
        note.reason = str(e)
        if not symbolic:
            frame.loop_failed.add(id(inst))
        if exits_early(frame, inst):   # the break then says why the loop was not captured
            frame.exit_failures[(frame.flow.index_of(inst), frame.flow.index_of(inst.target))] = note.reason
    tracer.loop_notes.append(note)
    if symbolic and not note.captured:
        raise LoopAbort(f"the loop at line {note.lineno} over a range computed from a loop index cannot be "
                        f"captured ({note.reason})")
    return note.captured


class _State:
    """The frame's state at a loop head, and how to rebuild it after a failed attempt."""

    def __init__(self, frame: "FrameTracer", names: List[str], promote: Tuple[str, ...]) -> None:
        tracer = frame.tracer
        self.leaves: List[Any] = []    # Tensor, or _Promoted for a Python number made a graph number
        index: Dict[Any, int] = {}
        self.templates = {n: _flatten(frame.load_local(n) if n in frame.locals else None, self.leaves, index,
                                      n if n in promote else None) for n in names}
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


def _open_body(frame: "FrameTracer", state: _State, dead: List[str], *first: Tuple[str, Any]) -> Tuple[_Scope, List[Tensor]]:
    """A new body graph with placeholders ``first`` (name, meta) then one per carried
    leaf, entered: the locals hold the placeholders, dead names are unset."""
    tracer = frame.tracer
    body = Graph(f"{tracer.graph.name}_loop", names_from=tracer.root_graph)
    body.meta.update(tracer.root_graph.meta)   # the frame it comes from, for the node's own compiled body
    body.errstate = tracer.graph.errstate      # inside an errstate block: the body runs under it too
    scope = _Scope(body, tracer.graph)
    heads = [Tensor(body.placeholder(name, meta), meta) for name, meta in first]
    carried = [Tensor(body.placeholder(leaf.name if isinstance(leaf, _Promoted) else _base(leaf.node.name),
                                       leaf.meta), leaf.meta) for leaf in state.leaves]
    _set_locals(frame, state.templates, carried)  # type: ignore[arg-type]
    for name in dead:
        frame.locals.pop(name, None)   # the body stores it before any read
    tracer.loop_scopes.append(scope)
    tracer.graph = body
    tracer.mutation_floor = next_serial()
    return scope, heads + carried


def _why(e: BaseException) -> str:
    if isinstance(e, LoopAbort):
        return str(e)
    if isinstance(e, GraphBreak):
        return f"{e.code} in the body: {e.reason}"
    return f"{type(e).__name__} in the body"   # StopTrace (a break site inside the loop) and the like


def _match_end(frame: "FrameTracer", state: _State, promote: Tuple[str, ...]) -> Tuple[Dict[int, V], str, List[str]]:
    """The carried values at the end of the body, or why they do not continue the loop."""
    ends: Dict[int, V] = {}
    promotable: List[str] = []
    why = ""
    if len(frame.stack) != len(state.stack) or any(a is not b for a, b in zip(frame.stack, state.stack)):
        return ends, "the body changes the value stack", promotable   # pragma: no cover - compilers keep it balanced
    for n, t in state.templates.items():
        end_v = frame.locals.get(n)
        why = _match(t, end_v, ends)
        if why and t[0] == "same" and _is_number(t[1]) and isinstance(end_v, (Const, Tensor)) and not promote:
            promotable.append(n)   # a number the body changes: try again carrying it
            why = ""
        elif why:
            return ends, f"{n!r}: {why}", promotable
    if promotable:
        return ends, f"the body changes the Python number {promotable[0]!r}", promotable
    for k, leaf in enumerate(state.leaves):
        if not _compatible(leaf.meta, ends[k].meta):
            what = leaf.name if isinstance(leaf, _Promoted) else leaf.node.name
            return ends, f"{what} changes from {leaf.meta} to {ends[k].meta} in one iteration", promotable
    return ends, "", promotable


def _close_body(frame: "FrameTracer", scope: _Scope, ends: Dict[int, V], n: int, extra: Tuple[Any, ...] = ()) -> None:
    """The body graph's output: the carried values at its end (then ``extra``)."""
    tracer = frame.tracer
    tracer.loop_scopes.append(scope)
    tracer.graph = scope.graph
    try:
        outputs = tuple(tracer.to_arg(ends[k]) for k in range(n)) + tuple(tracer.to_arg(v) for v in extra)
    finally:
        tracer.loop_scopes.pop()
        tracer.graph = scope.parent
    scope.graph.output(outputs)
    scope.graph.eliminate_dead_code()


def _results(frame: "FrameTracer", state: _State, node: Any, carried_ph: List[Any],
             fold: Any = None) -> None:
    """The locals after the loop: each carried name from the loop node's value."""
    tracer = frame.tracer
    location = frame.location()
    results: List[V] = []
    for k, ph in enumerate(carried_ph):
        folded = fold(k) if fold is not None else None
        if folded is not None:
            results.append(folded)
            continue
        meta = ph.meta["val"]
        results.append(Tensor(tracer.graph.call(operator.getitem, (node, k), meta=meta, stack=location), meta))
    frame.stack[:] = state.stack
    frame.locals.clear()
    frame.locals.update(state.locals)
    _set_locals(frame, state.templates, results)


def _capture(frame: "FrameTracer", inst: Any, it: IterV, note: LoopNote, promote: Tuple[str, ...] = ()) -> None:
    tracer = frame.tracer
    symbolic = isinstance(it, SymIter)
    head = frame.flow.index_of(inst)
    end = frame.flow.index_of(inst.target)
    if symbolic:
        bounds = it.bounds   # type: ignore[attr-defined]
        start_v, stop_v, step, count = bounds.start, bounds.stop, bounds.step, None
    else:
        progression = _progression(it)
        if progression is None:
            raise LoopAbort("it does not iterate over a range of ints")
        start, step, count = progression
        start_v, stop_v = Const(start), Const(start + count * step)
    first = frame.insts[head + 1]
    if first.opname not in ("STORE_FAST", "STORE_FAST_LOAD_FAST"):
        raise LoopAbort("the loop variable is not a plain local name")
    var = _names_of(first)[0]
    live = live_in(frame)
    if symbolic and var in live[end]:
        raise LoopAbort(f"the loop variable {var!r} is read after the loop (its last value is not known)")
    stored = [n for n in _stored_names(frame, range(head + 1, end)) if n != var]
    names = [n for n in stored if n in live[head]]

    state = _State(frame, names, promote)
    index_meta = ScalarMeta(int, start_v.value if isinstance(start_v, Const) else start_v.meta.hint)
    scope, (index_v, *carried) = _open_body(frame, state, [n for n in stored if n not in names], (var, index_meta))
    region = frame.body_range = _ForRegion(head, end, frame.body_range)
    frame.stack.append(index_v)   # what FOR_ITER pushes
    why = ""
    try:
        frame.run()
        why = "a return inside the loop"
    except _BodyDone:
        pass
    except (LoopAbort, GraphBreak, Exception) as e:
        why = _why(e)
    finally:
        state.leave_scope(frame)

    ends: Dict[int, V] = {}
    promotable: List[str] = []
    if not why and frame.locals.get(var) is not index_v:
        why = f"the body reassigns the loop variable {var!r}"
    exits = region.exit_at is not None
    if not why and exits:
        if var in live[end]:
            why = f"the loop variable {var!r} is read after a loop that may break (its last value is not known)"
        elif len(scope.graph.operations()) != region.exit_ops or any(
                frame.locals.get(n) is not region.exit_locals.get(n) for n in state.templates):
            why = "the body goes on after its break (only a break at the end of the body is captured)"
    if not why:
        ends, why, promotable = _match_end(frame, state, promote)
    if why:
        state.restore(frame)
        raise LoopAbort(why, tuple(promotable))

    extra: Tuple[Any, ...] = ()
    if exits:
        flag = region.exit_cond
        if not region.exit_when:
            tracer.loop_scopes.append(scope)
            tracer.graph = scope.graph
            try:
                flag = Tensor(scope.graph.call(operator.not_, (tracer.to_arg(flag),), meta=ScalarMeta(bool, True),
                                               stack=frame.location()), ScalarMeta(bool, True))
            finally:
                tracer.loop_scopes.pop()
                tracer.graph = scope.parent
        extra = (flag,)
    _close_body(frame, scope, ends, len(state.leaves), extra)
    loop = Loop(scope.graph, len(state.leaves), exits)
    location = frame.location()
    carried_in = tuple(leaf.value if isinstance(leaf, _Promoted) else tracer.to_arg(leaf) for leaf in state.leaves)
    invariants = tuple(tracer.lifted_from[ph] for ph in loop.invariants)
    node = tracer.graph.call(loop, (tracer.to_arg(start_v), tracer.to_arg(stop_v), step, carried_in, invariants),
                             stack=location)
    fold = None if count is None or exits else (lambda k: _folded(state.leaves[k], ends[k], carried[k], count))
    _results(frame, state, node, loop.carried, fold)
    if exits:
        frame.locals.pop(var, None)   # not read after the loop (checked above)
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
_NO_OPS = frozenset({"NOP", "NOT_TAKEN"})
_JUMPS = frozenset({"JUMP_FORWARD", "JUMP_ABSOLUTE", "JUMP_BACKWARD", "JUMP_BACKWARD_NO_INTERRUPT", "JUMP",
                    "JUMP_NO_INTERRUPT"})


class _WhileDone(Exception):
    """The while body trace came to the loop's condition again."""

    def __init__(self, cond: V, repeat_when: bool) -> None:
        super().__init__("the loop condition")
        self.cond = cond
        self.repeat_when = repeat_when


def _jump_sense(inst: Any) -> Optional[bool]:
    """The truth value on which a POP_JUMP_IF_TRUE/FALSE jumps (None: another instruction)."""
    op = inst.opname
    if not op.startswith("POP_JUMP") or op.endswith("NONE"):
        return None
    return op.endswith("IF_TRUE")


def _settle(frame: "FrameTracer", k: int) -> int:
    """Where control really goes from ``k``: past no-ops and unconditional jumps."""
    for _ in range(8):   # a chain of jumps is short; a cycle of them is not followed for ever
        inst = frame.insts[k]
        if inst.opname in _NO_OPS:
            k += 1
        elif inst.opname in _JUMPS and inst.target is not None:
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

    __slots__ = ("cycles", "heads", "entry", "exit", "jump", "repeat_when", "entered", "outer")

    def __init__(self, frame: "FrameTracer", jump: int, entry: int, exit_: int, repeat_when: bool) -> None:
        self.heads = loop_heads(frame)
        self.cycles = self.heads[entry] - self.heads[exit_]
        self.jump = jump
        self.entry = entry
        self.exit = exit_
        self.repeat_when = repeat_when
        self.entered = False
        self.outer = frame.body_range

    def admits(self, k: int) -> bool:
        if k == self.entry:
            if self.entered:
                return False
            self.entered = True
            return True
        return bool(self.heads[k] & self.cycles)

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
            if _settle(frame, go) == entry and _settle(frame, other) == exit_:
                return when
        return None


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
    if isinstance(region, _WhileRegion):
        again = region.repeat_sense(frame, k)
        if again is not None:
            raise _WhileDone(cond, again)
    sides = _sides(frame, k)
    if sides is None:
        return False
    heads = loop_heads(frame)
    # the side that enters a cycle the other is not on (a for loop's cycle: a break out of it)
    shapes = [(go, when, other) for (go, when), (other, _) in (sides, sides[::-1])
              if heads[go] - heads[other] and not any(frame.insts[h].opname == "FOR_ITER"
                                                      for h in heads[go] - heads[other])]
    if len(shapes) != 1:
        return False   # an if, not a loop
    entry, repeat_when, exit_ = shapes[0]
    while region is not None:   # a second exit of a while loop being captured: not a loop of its own
        if isinstance(region, _WhileRegion) and region.jump == k:
            return False
        if isinstance(region, _WhileRegion) and (heads[entry] - heads[exit_]) & region.cycles:
            raise LoopAbort("a second exit from the loop on a graph value (a break, or `and`/`or` in its condition)")
        region = region.outer
    note = LoopNote(frame.code.co_filename, frame.lineno, None, False, kind="while")
    try:
        try:
            _capture_while(frame, _WhileRegion(frame, k, entry, exit_, repeat_when), cond, note)
        except LoopAbort as e:
            if not e.promotable:
                raise
            _capture_while(frame, _WhileRegion(frame, k, entry, exit_, repeat_when), cond, note, e.promotable)
    except LoopAbort as e:
        note.reason = str(e)
        # the break says why the loop runs in Python (a resumed trace keeps no loop notes)
        error.reason = f"{error.reason} (a while loop not captured: {note.reason})"
        error.args = (error._message(),)
    frame.tracer.loop_notes.append(note)
    return note.captured


def _capture_while(frame: "FrameTracer", region: _WhileRegion, cond: V, note: LoopNote,
                   promote: Tuple[str, ...] = ()) -> None:
    tracer = frame.tracer
    live = live_in(frame)
    stored = _stored_names(frame, [k for k in range(len(frame.insts)) if region.heads[k] & region.cycles])
    names = [n for n in stored if n in live[region.entry] | live[region.exit]]

    state = _State(frame, names, promote)
    scope, (cond_v, *carried) = _open_body(frame, state, [n for n in stored if n not in names],
                                           ("cond", ScalarMeta(bool, True)))
    frame.body_range = region
    frame.ip = region.entry
    done: Optional[_WhileDone] = None
    why = ""
    try:
        frame.run()
        why = "a return inside the loop"
    except _WhileDone as d:
        done = d
    except (LoopAbort, GraphBreak, Exception) as e:
        why = _why(e)
    finally:
        state.leave_scope(frame)

    ends: Dict[int, V] = {}
    promotable: List[str] = []
    if done is not None:
        ends, why, promotable = _match_end(frame, state, promote)
    if why:
        state.restore(frame)
        raise LoopAbort(why, tuple(promotable))
    assert done is not None
    again = done.cond
    if done.repeat_when != region.repeat_when:   # the copy at the bottom tests the other way round
        tracer.loop_scopes.append(scope)
        tracer.graph = scope.graph
        try:
            again = Tensor(scope.graph.call(operator.not_, (tracer.to_arg(again),), meta=ScalarMeta(bool, True),
                                            stack=frame.location()), ScalarMeta(bool, True))
        finally:
            tracer.loop_scopes.pop()
            tracer.graph = scope.parent
    _close_body(frame, scope, ends, len(state.leaves), (again,))
    loop = WhileLoop(scope.graph, len(state.leaves), region.repeat_when)
    carried_in = tuple(leaf.value if isinstance(leaf, _Promoted) else tracer.to_arg(leaf) for leaf in state.leaves)
    invariants = tuple(tracer.lifted_from[ph] for ph in loop.invariants)
    node = tracer.graph.call(loop, (tracer.to_arg(cond), carried_in, invariants), stack=frame.location())
    _results(frame, state, node, loop.carried)
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
        return None   # pragma: no cover - _compatible already required the same type
    return Const(value)
