"""Capturing a ``for`` loop over a range as one loop in the graph.

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
"""
from __future__ import annotations

import operator
import re
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Dict, List, Optional, Tuple

from ..config import config
from ..graph import ArrayMeta, Graph, Loop, ScalarMeta, TupleMeta
from .breaks import GraphBreak
from .values import Const, IterV, Tensor, TupleV, V, next_serial

if TYPE_CHECKING:  # pragma: no cover
    from .interpreter import FrameTracer
    from .tracer import Tracer

__all__ = ["LoopAbort", "LoopNote", "capture_loop", "lift", "left_body"]

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
    iterations: int
    captured: bool
    reason: str = ""

    def __str__(self) -> str:
        where = f"{self.filename}:{self.lineno}"
        if self.captured:
            return f"loop at {where}: captured as one loop ({self.iterations} iterations)"
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


def left_body(frame: "FrameTracer") -> Exception:
    """What to raise when the body trace reaches an instruction outside the body."""
    head, _ = frame.body_range  # type: ignore[misc]
    if frame.ip == head:
        return _BodyDone()
    return LoopAbort("control leaves the loop body (a break, or a jump out of the loop)")


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


def _stored_names(frame: "FrameTracer", head: int, end: int) -> List[str]:
    names: Dict[str, None] = {}
    for inst in frame.insts[head + 1:end]:
        if inst.opname in _STORES:
            for name in (inst.argval if isinstance(inst.argval, tuple) else (inst.argval,)):
                names[name] = None
    return list(names)


def capture_loop(frame: "FrameTracer", inst: Any, it: IterV) -> bool:
    """Capture the rest of the loop whose FOR_ITER is ``inst`` (called before it advances
    ``it``). True: the loop node is recorded, the locals hold its results and ``it`` is
    exhausted. False: nothing changed, the loop unrolls."""
    if it.remaining() < config.min_captured_loop_iterations:
        return False
    tracer = frame.tracer
    note = LoopNote(frame.code.co_filename, frame.lineno, it.remaining(), False)
    try:
        try:
            _capture(frame, inst, it, note)
        except LoopAbort as e:
            if not e.promotable:
                raise
            _capture(frame, inst, it, note, promote=e.promotable)
    except LoopAbort as e:
        note.reason = str(e)
        frame.loop_failed.add(id(inst))
    tracer.loop_notes.append(note)
    return note.captured


def _capture(frame: "FrameTracer", inst: Any, it: IterV, note: LoopNote, promote: Tuple[str, ...] = ()) -> None:
    tracer = frame.tracer
    progression = _progression(it)
    if progression is None:
        raise LoopAbort("it does not iterate over a range of ints")
    start, step, count = progression
    head = frame.flow.index_of(inst)
    end = frame.flow.index_of(inst.target)
    first = frame.insts[head + 1]
    if first.opname not in ("STORE_FAST", "STORE_FAST_LOAD_FAST"):
        raise LoopAbort("the loop variable is not a plain local name")
    var = first.argval[0] if isinstance(first.argval, tuple) else first.argval
    names = [n for n in _stored_names(frame, head, end) if n != var]

    # the state at the loop head, and the carried values in it
    leaves: List[Any] = []    # Tensor, or _Promoted for a Python number made a graph number
    index: Dict[Any, int] = {}
    templates = {n: _flatten(frame.load_local(n) if n in frame.locals else None, leaves, index,
                             n if n in promote else None) for n in names}
    saved_locals = dict(frame.locals)
    saved_stack = list(frame.stack)
    saved_counts = dict(frame.loop_counts)
    saved = (frame.ip, frame.lineno, frame.kw_names, frame.body_range, tracer.mutation_floor, tracer.graph)
    saved_errstate = (list(tracer.errstate_blocks), tracer.graph.errstate)

    body = Graph(f"{tracer.graph.name}_loop", names_from=tracer.root_graph)
    body.meta.update(tracer.root_graph.meta)   # the frame it comes from, for Loop's own compiled body
    body.errstate = tracer.graph.errstate      # inside an errstate block: the body runs under it too
    scope = _Scope(body, tracer.graph)
    index_meta = ScalarMeta(int, start)
    index_v = Tensor(body.placeholder(var, index_meta), index_meta)
    carried = [Tensor(body.placeholder(leaf.name if isinstance(leaf, _Promoted) else _base(leaf.node.name),
                                       leaf.meta), leaf.meta) for leaf in leaves]
    _set_locals(frame, templates, carried)  # type: ignore[arg-type]

    tracer.loop_scopes.append(scope)
    tracer.graph = body
    tracer.mutation_floor = next_serial()
    frame.body_range = (head, end)
    frame.stack.append(index_v)   # what FOR_ITER pushes
    why = ""
    try:
        frame.run()
        why = "a return inside the loop"
    except _BodyDone:
        pass
    except LoopAbort as e:
        why = str(e)
    except GraphBreak as e:
        why = f"{e.code} in the body: {e.reason}"
    except Exception as e:   # StopTrace (a break site inside the loop) and the like
        why = f"{type(e).__name__} in the body"
    finally:
        tracer.loop_scopes.pop()
        frame.ip, frame.lineno, frame.kw_names, frame.body_range, tracer.mutation_floor, tracer.graph = saved
        # the errstate blocks open at the loop head (the body may have aborted inside one)
        tracer.errstate_blocks[:] = saved_errstate[0]
        tracer.graph.errstate = saved_errstate[1]

    ends: Dict[int, V] = {}
    if not why:
        if len(frame.stack) != len(saved_stack) or any(a is not b for a, b in zip(frame.stack, saved_stack)):
            why = "the body changes the value stack"   # pragma: no cover - compilers keep it balanced
        elif frame.locals.get(var) is not index_v:
            why = f"the body reassigns the loop variable {var!r}"
    promotable: List[str] = []
    if not why:
        for n, t in templates.items():
            end_v = frame.locals.get(n)
            why = _match(t, end_v, ends)
            if why and t[0] == "same" and _is_number(t[1]) and isinstance(end_v, (Const, Tensor)) and not promote:
                promotable.append(n)   # a number the body changes: try again carrying it
                why = ""
            elif why:
                why = f"{n!r}: {why}"
                break
        if not why and promotable:
            why = f"the body changes the Python number {promotable[0]!r}"
    if not why:
        for k, leaf in enumerate(leaves):
            if not _compatible(leaf.meta, ends[k].meta):
                what = leaf.name if isinstance(leaf, _Promoted) else leaf.node.name
                why = f"{what} changes from {leaf.meta} to {ends[k].meta} in one iteration"
                break
    if why:
        frame.locals.clear()
        frame.locals.update(saved_locals)
        frame.stack[:] = saved_stack
        frame.loop_counts.clear()
        frame.loop_counts.update(saved_counts)
        raise LoopAbort(why, tuple(promotable))

    # the body graph: carried values in, carried values out
    tracer.loop_scopes.append(scope)
    tracer.graph = body
    try:
        outputs = tuple(tracer.to_arg(ends[k]) for k in range(len(leaves)))
    finally:
        tracer.loop_scopes.pop()
        tracer.graph = scope.parent
    body.output(outputs)
    body.eliminate_dead_code()
    loop = Loop(body, len(leaves))
    stop = start + count * step
    location = frame.location()
    carried_in = tuple(leaf.value if isinstance(leaf, _Promoted) else tracer.to_arg(leaf) for leaf in leaves)
    invariants = tuple(tracer.lifted_from[ph] for ph in loop.invariants)
    node = tracer.graph.call(loop, (start, stop, step, carried_in, invariants), stack=location)
    results: List[V] = []
    for k, ph in enumerate(loop.carried):
        folded = _folded(leaves[k], ends[k], carried[k], count)
        if folded is not None:
            results.append(folded)
            continue
        meta = ph.meta["val"]
        results.append(Tensor(tracer.graph.call(operator.getitem, (node, k), meta=meta, stack=location), meta))
    frame.stack[:] = saved_stack
    frame.locals.clear()
    frame.locals.update(saved_locals)
    _set_locals(frame, templates, results)
    frame.locals[var] = Const(start + (count - 1) * step)
    it.pos += count
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
