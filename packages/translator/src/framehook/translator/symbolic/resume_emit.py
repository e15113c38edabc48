"""The code that replaces a frame's body at a graph break (``emit_break``)."""

from __future__ import annotations

import types
from dataclasses import dataclass
from typing import Any, Callable, Dict, List, Optional, Sequence, Tuple

from ..bytecode import Codegen, Instruction, Positions, copy_instruction, prefix_length
from ..bytecode.behaviour import BEHAVIOUR
from ..bytecode.codegen import like
from ..bytecode.kinds import Kind
from .breaks import CannotResume
from .rebuild import Rebuilder
from .resume_code import _resume_function, _return_call, closure_names
from .resume_region import region_code
from .resume_sites import BreakSite
from .values import NULL, MethodV, unread

__all__ = ["BreakPlan", "emit_break"]


@dataclass
class BreakPlan:
    """A break to emit: where the root frame broke and the state traced up to there."""

    code: types.CodeType
    insts: Sequence[Instruction]
    site: BreakSite
    stack: List[Any]  # the root frame's symbolic stack at the break
    locals_: Dict[str, Any]  # and its locals
    rebuilder: Rebuilder
    #: compile_graph(outputs) -> (compiled function, its input sources), or None without a graph
    compile_graph: Callable[[List[Any]], Any]
    f_globals: Dict[str, Any]
    resume_cache: Dict[Any, Any]  # resume functions made for this frame, reused
    side_effects: Any = None  # ``side_effects.SideEffects`` to replay
    #: the frame's cell variables as traced (name -> value, None when unbound); those the
    #: trace assigned are stored into the real cells
    cells: Optional[Dict[str, Any]] = None


def emit_break(plan: BreakPlan) -> types.CodeType:
    """The replacement code for the plan's code: run the graph, rebuild the state, replay the
    side effects traced so far (``side_effects.py``), run the broken instructions, return
    the resume function's result."""
    code, insts, site, stack = plan.code, plan.insts, plan.site, plan.stack
    inputs = stack[len(stack) - site.pops :] if site.pops else []
    lower = stack[: len(stack) - site.pops]
    first = insts[site.start]
    where = first.positions or Positions(code.co_firstlineno, code.co_firstlineno, None, None)
    # 3.9/3.10's CALL_METHOD on [NULL, fn, args] runs as a plain call: its NULL is not passed
    old_call_method = not BEHAVIOUR.calls_push_null and any(
        insts[k].kind == Kind.CALL and insts[k].call_slot for k in range(site.start, site.end)
    )
    slots = _stack_slots(lower)
    # a resume function's stack arguments are dead once its prologue has run
    names = sorted(n for n in plan.locals_ if not n.startswith("___stack"))
    # cells the trace assigned (unchanged ones hold a lazy read of the real cell)
    stores = sorted((n, v) for n, v in (plan.cells or {}).items() if v is not None and not unread(v))
    _collect(plan, lower, names, inputs, stores, old_call_method)

    # ``compile_graph(outputs)``: (compiled graph, its input sources), or None for a graph without operations
    compiled = plan.compile_graph(plan.rebuilder.outputs)
    cg = Codegen()
    _call_graph(cg, plan.rebuilder, compiled)
    held, held_locals = _hold_state(cg, plan, slots, names, stores)
    _load_inputs(cg, plan.rebuilder, inputs)
    body = _placed(cg.instructions, where)
    if site.segment:
        # the instructions read the frame's locals: give them their traced values
        cg2 = Codegen()
        for name, t in zip(names, held_locals):
            cg2.load_fast(t)
            cg2.store_fast(name)
        body += _placed(cg2.instructions, where)
    if plan.side_effects:
        # after every read of the live state, before the instruction: it sees the new state
        cg3 = Codegen()
        plan.side_effects.emit(cg3, plan.rebuilder)
        body += _placed(cg3.instructions, where)
    if site.region is not None:
        if lower or inputs:
            raise CannotResume("values on the stack at the start of the statement")
        body += region_code(code, list(insts), site, names, plan.f_globals, plan.resume_cache, where)
        return _replace_body(code, body)
    broken, jump = _broken_instructions(insts, site)
    body += broken
    exits = _exits(plan, slots, names, held, held_locals, where)
    for code_b in exits:
        body += code_b
    if jump is not None:
        jump.target = exits[1][0]
    return _replace_body(code, body)


def _placed(insts: List[Instruction], where: Positions) -> List[Instruction]:
    """``insts`` at the user's position (the break's)."""
    for inst in insts:
        inst.positions = where
    return list(insts)


def _stack_slots(lower: Sequence[Any]) -> List[Tuple[str, Any]]:
    """The stack below the instruction's inputs, slot by slot: NULL, a value, or a bound
    method (passed as its object; the resume function loads the method: LOAD_ATTR, or on
    3.9/3.10 LOAD_METHOD, which also re-creates the NULL that preceded it)."""
    slots: List[Tuple[str, Any]] = []
    k = 0
    while k < len(lower):
        v = lower[k]
        if v is NULL and not BEHAVIOUR.calls_push_null:
            if k + 1 < len(lower) and isinstance(lower[k + 1], MethodV):
                slots.append(("method", lower[k + 1]))
                k += 2
                continue
            raise CannotResume("a NULL left on the stack by LOAD_METHOD (3.9/3.10)")
        slots.append(("null" if v is NULL else "attr" if isinstance(v, MethodV) else "value", v))
        k += 1
    return slots


def _collect(
    plan: BreakPlan,
    lower: Sequence[Any],
    names: Sequence[str],
    inputs: Sequence[Any],
    stores: Sequence[Tuple[str, Any]],
    old_call_method: bool,
) -> None:
    """The rebuilder's first pass over every value the code rebuilds (the graph's outputs
    are what it collects), in the order the code rebuilds them."""
    rebuilder = plan.rebuilder
    for v in lower:
        rebuilder.collect(v, null_ok=True)
    for name in names:
        rebuilder.collect(plan.locals_[name])
    for k, v in enumerate(inputs):
        rebuilder.collect(v, null_ok=BEHAVIOUR.calls_push_null or (old_call_method and k == 0))
    for _, v in stores:
        rebuilder.collect(v)
    if plan.side_effects:
        plan.side_effects.collect(rebuilder)


def _call_graph(cg: Codegen, rebuilder: Rebuilder, compiled: Any) -> None:
    """``___graph_out = graph(<its inputs>)``, when there is a graph."""
    if compiled is None:
        return
    call_graph, graph_inputs = compiled
    rebuilder.graph_out = "___graph_out"

    def load_inputs() -> None:
        for s in graph_inputs:
            s.reconstruct(cg)

    cg.call_builtin(call_graph, load_inputs, nargs=len(graph_inputs))
    cg.store_fast(rebuilder.graph_out)


def _hold_state(
    cg: Codegen,
    plan: BreakPlan,
    slots: Sequence[Tuple[str, Any]],
    names: Sequence[str],
    stores: Sequence[Tuple[str, Any]],
) -> Tuple[List[Optional[str]], List[str]]:
    """The live state kept in temporaries, before the instruction can change what its
    sources read; the cells the trace assigned stored into the frame's real cells. Returns
    the temporaries of the stack slots (None: a NULL) and of the locals."""
    rebuilder = plan.rebuilder
    held: List[Optional[str]] = []
    for kind, v in slots:
        if kind == "null":
            held.append(None)
            continue
        rebuilder.emit(cg, v.obj if kind in ("attr", "method") else v)
        t = rebuilder.temp()
        cg.store_fast(t)
        held.append(t)
    held_locals: List[str] = []
    for name in names:
        rebuilder.emit(cg, plan.locals_[name])
        t = rebuilder.temp()
        cg.store_fast(t)
        held_locals.append(t)
    held_cells: List[str] = []
    for _, v in stores:
        rebuilder.emit(cg, v)
        t = rebuilder.temp()
        cg.store_fast(t)
        held_cells.append(t)
    for (name, _), t in zip(stores, held_cells):
        # the broken instructions and the resume function read the frame's real cells
        cg.load_fast(t)
        cg.store_deref(name)
    return held, held_locals


def _load_inputs(cg: Codegen, rebuilder: Rebuilder, inputs: Sequence[Any]) -> None:
    """The instruction's inputs."""
    for v in inputs:
        if v is NULL and not BEHAVIOUR.calls_push_null:
            continue  # 3.9/3.10 CALL_METHOD on [NULL, fn, args]: run as a plain call
        rebuilder.emit(cg, v)


def _broken_instructions(
    insts: Sequence[Instruction], site: BreakSite
) -> Tuple[List[Instruction], Optional[Instruction]]:
    """The instruction(s) the trace broke at, copied with the user's positions, and the
    copy of the one that jumps (its target is set to the second way out), if any."""
    out: List[Instruction] = []
    jump: Optional[Instruction] = None
    for k in range(site.start, site.end):
        orig = insts[k]
        if orig.kind == Kind.CALL and orig.call_slot and not BEHAVIOUR.calls_push_null and not site.segment:
            copy = like(orig, Kind.CALL)  # CALL_METHOD without its NULL: a plain call
        else:
            copy = copy_instruction(orig)
        if orig.target is not None:
            jump = copy
        out.append(copy)
    return out, jump


def _exits(
    plan: BreakPlan,
    slots: Sequence[Tuple[str, Any]],
    names: Sequence[str],
    held: Sequence[Optional[str]],
    held_locals: Sequence[str],
    where: Positions,
) -> List[List[Instruction]]:
    """For each way the instruction continues: its results kept in temporaries, then
    ``return resume(<stack>, <locals>)``."""
    code, insts, rebuilder = plan.code, plan.insts, plan.rebuilder
    stack_layout_base: List[Any] = [
        v.name if kind == "attr" else ("method", v.name) if kind == "method" else kind == "null" for kind, v in slots
    ]
    exits: List[List[Instruction]] = []
    for target, pushes in plan.site.branches:
        bc = Codegen()
        outs = [rebuilder.temp() for _ in range(pushes)]
        for t in reversed(outs):
            bc.store_fast(t)
        layout = stack_layout_base + [False] * pushes
        fn = _resume_function(code, target, names, plan.f_globals, plan.resume_cache, layout, insts[target].lineno)
        args = [t for t in held if t is not None] + outs + list(held_locals)
        exits.append(_placed(bc.instructions, where) + _return_call(fn, args, where, closure_names(code)))
    return exits


def _replace_body(code: types.CodeType, body: List[Instruction]) -> types.CodeType:
    def transform(out: List[Instruction], opts: Dict[str, Any]) -> None:
        out[prefix_length(out) :] = body

    from ..bytecode import transform_code_object

    return transform_code_object(code, transform)
