"""Loop-carried values: the body graph a loop is traced into, the locals it carries from
one iteration to the next (as templates of carried graph values), the interpreter state
restored after a failed attempt, and the loop node's results after a captured one."""

from __future__ import annotations

import contextlib
import operator
import re
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Dict, FrozenSet, Iterator, List, Optional, Tuple

from ...graph import ArrayMeta, Graph, ScalarMeta, TupleMeta
from ..breaks import GraphBreak
from ..values import Const, Tensor, TupleV, V, next_serial
from .widening import same_trace, widened

if TYPE_CHECKING:  # pragma: no cover
    from ..roles import Frame, TraceState


_IMMUTABLE = (int, float, complex, bool, str, bytes, type(None), range, slice)


class LoopAbort(Exception):
    """The loop body cannot be captured as a loop (the loop is unrolled instead).
    ``promotable``: Python numbers the body changes (``k += 1``, ``t += dt``), which a
    second attempt carries through the loop as graph numbers. ``widen``: carried leaves
    (by position) that are Python numbers at the head and numpy scalars after one
    iteration, with that numpy scalar's meta; ``body``: the body graph traced with them
    as Python numbers, which the next attempt must match (``widening.py``)."""

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


class Promoted:
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


class BodyScope:
    """A loop body being recorded: its graph, the graph around it, and the outer nodes
    it uses (each with its body placeholder)."""

    __slots__ = ("graph", "parent", "lifted", "unions", "alt")

    def __init__(self, graph: Graph, parent: Graph, alt: bool = False) -> None:
        self.graph = graph
        self.parent = parent
        self.lifted: Dict[Any, Any] = {}
        self.unions: List[Any] = []  # two-typed values of inner loops (``widening.py``)
        self.alt = alt  # those values are taken as their Python number type


def lift(tracer: "TraceState", node: Any, level: int) -> Any:
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
        leaves.append(Promoted(promote, v.value))  # type: ignore[union-attr]
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


def _set_locals(frame: "Frame", templates: Dict[str, Any], values: List[V]) -> None:
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
def live_in(frame: "Frame") -> List[FrozenSet[str]]:
    """For each instruction of the frame, the local names some path from it reads before
    storing them (``ControlFlow.live_locals``)."""
    return frame.flow.live_locals


def loop_heads(frame: "Frame") -> List[FrozenSet[int]]:
    """For each instruction, the heads of the natural loops holding it
    (``ControlFlow.natural_loop_heads``)."""
    return frame.flow.natural_loop_heads


def left_body(frame: "Frame") -> Exception:
    """What to raise when the body trace reaches an instruction outside the body."""
    return frame.body_range.left(frame.ip)  # type: ignore[union-attr]


def attempts(capture: Any) -> None:
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


class HeadState:
    """The frame's state at a loop head, and how to rebuild it after a failed attempt."""

    def __init__(
        self, frame: "Frame", names: List[str], promote: Tuple[str, ...], widen: Optional[Dict[int, Any]] = None
    ) -> None:
        tracer = frame.tracer
        self.leaves: List[Any] = []  # Tensor, or Promoted for a Python number made a graph number
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

    def leave_scope(self, frame: "Frame") -> None:
        """Back in the graph around the body (the body trace ended, however it ended)."""
        tracer = frame.tracer
        tracer.loop_scopes.pop()
        frame.ip, frame.cur_index, frame.lineno, frame.kw_names, frame.body_range = self.frame_bits
        tracer.mutation_floor, tracer.graph = self.tracer_bits
        # the errstate blocks open at the loop head (the body may have aborted inside one)
        tracer.errstate_blocks[:] = self.errstate[0]
        tracer.graph.errstate = self.errstate[1]

    def restore(self, frame: "Frame") -> None:
        frame.locals.clear()
        frame.locals.update(self.locals)
        frame.stack[:] = self.stack
        frame.loop_counts.clear()
        frame.loop_counts.update(self.counts)


def open_body(
    frame: "Frame", state: HeadState, dead: List[str], *first: Tuple[str, Any], alt: bool = False
) -> Tuple[BodyScope, List[Tensor]]:
    """A new body graph with placeholders ``first`` (name, meta) then one per carried
    leaf, entered: the locals hold the placeholders, dead names are unset."""
    tracer = frame.tracer
    body = Graph(f"{tracer.graph.name}_loop", names_from=tracer.root_graph)
    body.meta.update(tracer.root_graph.meta)  # the frame it comes from, for the node's own compiled body
    body.errstate = tracer.graph.errstate  # inside an errstate block: the body runs under it too
    scope = BodyScope(body, tracer.graph, alt)
    heads = [Tensor(body.placeholder(name, meta), meta) for name, meta in first]
    carried = [
        Tensor(body.placeholder(leaf.name if isinstance(leaf, Promoted) else _base(leaf.node.name), meta), meta)
        for leaf, meta in zip(state.leaves, state.metas)
    ]
    _set_locals(frame, state.templates, carried)  # type: ignore[arg-type]
    for name in dead:
        frame.locals.pop(name, None)  # the body stores it before any read
    tracer.loop_scopes.append(scope)
    tracer.graph = body
    tracer.mutation_floor = next_serial()
    return scope, heads + carried


def why_failed(e: BaseException) -> str:
    if isinstance(e, LoopAbort):
        return str(e)
    if isinstance(e, GraphBreak):
        return f"{e.code} in the body: {e.reason}"
    return f"{type(e).__name__} in the body"  # StopTrace (a break site inside the loop) and the like


def match_end(
    frame: "Frame", state: HeadState, promote: Tuple[str, ...]
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
            what = leaf.name if isinstance(leaf, Promoted) else leaf.node.name
            if not state.widen and widened(meta, ends[k].meta):
                widen[k] = ends[k].meta  # try again carrying it as that numpy scalar
                first = first or f"{what} changes from {meta} to {ends[k].meta} in one iteration"
                continue
            return ends, f"{what} changes from {meta} to {ends[k].meta} in one iteration", promotable, {}
    return ends, first, promotable, widen


@contextlib.contextmanager
def _inside_body(tracer: Any, scope: BodyScope) -> Iterator[None]:
    """Records into ``scope``'s body graph for the block, once its trace has ended."""
    tracer.loop_scopes.append(scope)
    tracer.graph = scope.graph
    try:
        yield
    finally:
        tracer.loop_scopes.pop()
        tracer.graph = scope.parent


def negated_in_body(frame: "Frame", scope: BodyScope, value: V) -> Tensor:
    """``not value``, computed at the end of the body."""
    tracer = frame.tracer
    with _inside_body(tracer, scope):
        node = scope.graph.call(
            operator.not_, (tracer.to_arg(value),), meta=ScalarMeta(bool, True), stack=frame.location()
        )
    return Tensor(node, ScalarMeta(bool, True))


def close_body(frame: "Frame", scope: BodyScope, ends: Dict[int, V], n: int, extra: Tuple[Any, ...] = ()) -> None:
    """The body graph's output: the carried values at its end (then ``extra``)."""
    tracer = frame.tracer
    with _inside_body(tracer, scope):
        outputs = tuple(tracer.to_arg(ends[k]) for k in range(n)) + tuple(tracer.to_arg(v) for v in extra)
    scope.graph.output(outputs)
    scope.graph.eliminate_dead_code()


def set_results(
    frame: "Frame", state: HeadState, node: Any, carried_ph: List[Any], fold: Any = None, two_typed: bool = False
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


def check_widened(frame: "Frame", state: HeadState, scope: BodyScope, prior: Optional[Graph], two_typed: bool) -> str:
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


def retrace(frame: "Frame", state: HeadState, scope: BodyScope, ends: List[Any], again: Any) -> str:
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


def folded_value(leaf: Any, end: V, placeholder: Tensor, count: int) -> Optional[Const]:
    """The value after the loop of a promoted number the body updates by a constant
    (``k += 1``, ``t = t + 0.1``), computed here with the loop's own Python arithmetic;
    None when it must come from the graph."""
    if not isinstance(leaf, Promoted) or not isinstance(end, Tensor) or count > _MAX_FOLDED:
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
