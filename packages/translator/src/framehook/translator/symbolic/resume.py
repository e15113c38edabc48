"""Graph breaks that resume (Dynamo-style).

When tracing a frame stops at an instruction it cannot capture, the translator re-traces
the frame up to that instruction (``Tracer.stop_at``) and emits, in place of the frame's
body:

1. a call of the graph captured so far (its outputs: every graph value still live);
2. the live stack and locals, rebuilt from the graph's outputs, constants and sources,
   kept in temporaries (so the instruction cannot change them under us);
3. the unsupported instruction itself (for a call: the whole call sequence, 3.11's
   ``PRECALL``/``CALL`` and 3.12+'s ``CALL``/``POP_TOP`` kept adjacent), on its real inputs,
   with the user's line;
4. ``return resume(<stack>, <locals>)`` for each way the instruction continues (two for a
   conditional jump), where ``resume`` is a plain function whose code is the frame's code
   with a prologue that pushes the stack arguments and jumps to the next instruction. It
   is intercepted and translated in turn.

What resumes: a break at a call (``print``, an unknown C function, a class, a call that
cannot be inlined or raises), at a conditional jump on an array value, at an operator,
subscript, attribute load (without the method bit), attribute/subscript/global store,
formatting, unpacking, ``raise`` -- in straight-line code of the frame itself (a break in
an inlined function resumes at the call in the frame), outside any loop and any
try/except/finally/with block.

A break at a method load (``y.tolist()``: ``LOAD_METHOD``, 3.12+'s method ``LOAD_ATTR``)
runs the whole call -- load, arguments, call -- as the original instructions, after the
frame's locals are restored, when that call is straight-line code.

A break inside a loop or a try/with block, or at an instruction none of the above
handles, runs the whole statement holding it (``statement_site``): the trace stops at the
statement's first instruction, the graph runs, the locals are stored back, the statement's
instructions run as copied from the frame (jumps and exception handlers re-pointed at the
copies), and where it ends ``return resume(<locals>)`` follows; locals it may leave unbound
are looked up at run time (``_ResumeUnbound``).

Frames with cells: the frame's cell and free variables become free variables of its
resume functions, which are made at each call around the frame's own cells
(``_WithCells``), so closures made before the break share them. Cells the trace assigned
are stored into the real cells before the broken instructions run, and a function made in
the frame that is still live is made again around the same cells (``rebuild.py``).

What still runs the original code of the frame (``CannotResume``, the break is reported as
before): breaks in a resume function's prologue, a statement that runs to the end of the
frame with nothing before it, and a live value that cannot be rebuilt (an iterator, a
function made in an inlined call or with annotations, a cell, a mutable constant).
"""

from __future__ import annotations

import inspect
import itertools
import sys
import types
from dataclasses import dataclass
from typing import Any, Callable, Dict, List, Optional, Sequence, Set, Tuple

from ..bytecode import (
    Codegen,
    ControlFlow,
    ExnTabEntry,
    Instruction,
    Positions,
    copy_instruction,
    create_instruction,
    decode,
    prefix_length,
)
from ..bytecode.behaviour import BEHAVIOUR
from ..bytecode.effects import call_shape, effect, net_effect
from ..bytecode.opcodes import (
    CELL_OPS,
    JUMP_CONDITIONS,
    KEEPS_OPERAND_ON_JUMP,
    LOCAL_OPS,
    PAIRED_LOCALS,
    TERMINAL,
    UNCONDITIONAL,
    WITH_ENTRIES,
)
from ..translation.codemap import CodeIdentityMap
from ..bytecode.transform import code_options, rebuild
from .breaks import CannotResume
from .rebuild import Rebuilder
from .values import NULL, MethodV, unread

__all__ = [
    "BreakSite",
    "BreakPlan",
    "break_site",
    "statement_site",
    "make_resume_code",
    "emit_break",
    "is_resume_code",
    "frame_label",
    "RESUME_PREFIX",
]

RESUME_PREFIX = "__resume_at_"
_counter = itertools.count()

# code object of a resume function -> number of prologue instructions after the frame set-up
_RESUME_PROLOGUES: CodeIdentityMap[int] = CodeIdentityMap()
# code object of a resume function -> the line it resumes at (None: not known)
_RESUME_LINES: CodeIdentityMap[Optional[int]] = CodeIdentityMap()


def is_resume_code(code: types.CodeType) -> bool:
    return code in _RESUME_PROLOGUES


def frame_label(code: types.CodeType) -> str:
    """How diagnostics name a translated frame: the function's qualified name (its name on
    3.9/3.10), and for a resume function the function it continues and where
    (``f (resume at line 12)``)."""
    name = getattr(code, "co_qualname", code.co_name)
    if code not in _RESUME_PROLOGUES:
        return name
    base = name.split("." + RESUME_PREFIX, 1)[0]
    line = _RESUME_LINES.get(code)
    return f"{base} (resume at line {line})" if line is not None else f"{base} (resume function)"


# ---------------------------------------------------------------- where the break is
# single instructions that resume after a break as they are, their inputs and results
# counted by the stack-effect table (calls, method loads and jumps are handled apart)
_RESUMES_ALONE = frozenset(
    {
        "BINARY_OP",
        "COMPARE_OP",
        "CONTAINS_OP",
        "IS_OP",
        "BINARY_SUBSCR",
        "UNARY_NEGATIVE",
        "UNARY_POSITIVE",
        "UNARY_INVERT",
        "UNARY_NOT",
        "TO_BOOL",
        "FORMAT_SIMPLE",
        "FORMAT_WITH_SPEC",
        "CONVERT_VALUE",
        "FORMAT_VALUE",
        "STORE_SUBSCR",
        "DELETE_SUBSCR",
        "STORE_ATTR",
        "DELETE_ATTR",
        "STORE_GLOBAL",
        "DELETE_GLOBAL",
        "BINARY_SLICE",
        "STORE_SLICE",
        "LOAD_ASSERTION_ERROR",
        "LOAD_COMMON_CONSTANT",
        "IMPORT_NAME",
        "GET_LEN",
        "UNPACK_SEQUENCE",
        "BUILD_STRING",
        "RAISE_VARARGS",
    }
)


class BreakSite:
    """The instructions to run in ordinary Python and how execution continues after them.

    ``start``/``end``: index range of the original instructions; ``pops``: stack values
    they consume; ``branches``: (instruction index to resume at, values pushed) for each
    way out (none after ``raise``)."""

    def __init__(
        self,
        start: int,
        end: int,
        pops: int,
        branches: List[Tuple[int, int]],
        segment: bool = False,
        region: Optional[List[int]] = None,
    ) -> None:
        self.start = start
        self.end = end
        self.pops = pops
        self.branches = branches
        # a whole method call (``y.tolist()``, its arguments included) run as the original
        # instructions: the frame's locals are restored first, for the arguments to read
        self.segment = segment
        # a whole statement (a loop, a try/with block) run in Python: the indices of its
        # instructions; ``branches`` then holds the one instruction after it, if any
        self.region = region


_SEGMENT_REFUSED = (
    "STORE_",
    "DELETE_",
    "RETURN_",
    "RAISE_",
    "YIELD_",
    "LOAD_DEREF",
    "LOAD_CLOSURE",
    "MAKE_CELL",
    "SETUP_",
    "BEFORE_",
    "GET_",
    "FOR_ITER",
    "END_",
    "LOAD_FAST_AND_CLEAR",
)


def _alone(inst: Instruction, i: int) -> BreakSite:
    """The instruction at ``i`` run by itself, its inputs and results as the table counts them."""
    pops, pushes = effect(inst)  # type: ignore[misc]
    return BreakSite(i, i + 1, pops, [] if inst.opname == "RAISE_VARARGS" else [(i + 1, pushes)])


def _call_site(insts: Sequence[Instruction], i: int, j: int, pops: int) -> BreakSite:
    end = j + 1
    pushes = 1
    if end < len(insts) and insts[end].opname == "POP_TOP":
        end += 1
        pushes = 0
    return BreakSite(i, end, pops, [(end, pushes)], segment=True)


def _method_call_site(insts: Sequence[Instruction], i: int) -> BreakSite:
    """A break at a method load: the load, the arguments and the call run in Python."""
    depth = 0  # the object is on top before the load; the call's result replaces it
    for j in range(i, len(insts)):
        inst = insts[j]
        if inst.target is not None or inst.opname.startswith(_SEGMENT_REFUSED):
            break
        depth += net_effect(inst)
        shape = call_shape(inst)
        if (
            depth == -1
            and inst.opname == "CALL_FUNCTION_EX"
            and shape is not None
            and shape.callable_slots == 2
            and not BEHAVIOUR.null_after_callable
        ):
            # f(*args): the NULL pushed before the object is consumed too
            return _call_site(insts, i, j, 2)
        if depth < 0:
            break
        if depth == 0 and j > i:
            if shape is None:
                if insts[i].opname != "LOAD_ATTR" or insts[i].is_method:
                    break
                continue  # a plain attribute load is at depth 0 until something consumes it
            return _call_site(insts, i, j, 1)
    raise CannotResume(f"the method loaded at {insts[i].opname} is not called in straight-line code")


def _check_frame(code: types.CodeType, insts: Sequence[Instruction], i: int) -> None:
    """Breaks no form of resuming handles."""
    if code.co_flags & (inspect.CO_GENERATOR | inspect.CO_COROUTINE | inspect.CO_ASYNC_GENERATOR):
        raise CannotResume("a generator or coroutine frame")  # pragma: no cover - never intercepted
    if i < _body_start(code, insts):
        raise CannotResume("the break is in a resume function's prologue")


def _body_start(code: types.CodeType, insts: Sequence[Instruction]) -> int:
    return prefix_length(insts) + (_RESUME_PROLOGUES.get(code) or 0)


def break_site(
    code: types.CodeType, insts: Sequence[Instruction], i: int, flow: Optional[ControlFlow] = None
) -> BreakSite:
    """Where a break at instruction ``i`` of ``code`` (the root frame) resumes, or CannotResume.
    ``flow``: the instructions' control-flow graph, when the caller has one."""
    _check_frame(code, insts, i)
    flow = flow if flow is not None else ControlFlow(insts)
    inst = insts[i]
    name = inst.opname
    shape = call_shape(inst)
    site: Optional[BreakSite] = None
    if shape is not None:
        start = i
        if name == "CALL" and BEHAVIOUR.precall_before_call:
            start = i - 1
        if start > 0 and insts[start - 1].opname == "KW_NAMES":
            start -= 1
        pops = shape.pops
        end = i + 1
        pushes = 1
        if end < len(insts) and insts[end].opname == "POP_TOP":
            end += 1  # 3.12+ specializes list.append's CALL assuming this POP_TOP follows
            pushes = 0
        site = BreakSite(start, end, pops, [(end, pushes)])
    elif name in JUMP_CONDITIONS:
        kept = int(name in KEEPS_OPERAND_ON_JUMP)
        site = BreakSite(i, i + 1, 1, [(i + 1, 0), (flow.index_of(inst.target), kept)])
    elif name == "LOAD_ATTR" and not inst.is_method:
        try:  # a method called right away (``y.tolist(*args)``): the call runs in Python too
            site = _method_call_site(insts, i)
        except CannotResume:
            site = _alone(inst, i)
    elif name == "LOAD_METHOD" or (name == "LOAD_ATTR" and inst.is_method):
        site = _method_call_site(insts, i)
    elif name in _RESUMES_ALONE or inst.binary_op is not None:
        site = _alone(inst, i)
    if site is None:
        raise CannotResume(f"a break at {name} does not resume")
    protected, heads = flow.protected, flow.loop_heads
    for k in range(site.start, site.end):
        if protected[k]:
            raise CannotResume("the break is inside a try/with block")
        if heads[k]:
            raise CannotResume("the break is inside a loop")
    depths = flow.stack_depths
    for target, _ in site.branches:
        k = target
        while k < len(insts) and depths.get(k, 0) != 0:
            if insts[k].opname in WITH_ENTRIES:
                # resuming between the context manager's creation and its entry would leave
                # the resume function no statement boundary before the block
                raise CannotResume("the break is in the head of a with statement")
            k += 1
    return site


_END_CANDIDATES = 8


def statement_site(
    code: types.CodeType, insts: Sequence[Instruction], i: int, flow: Optional[ControlFlow] = None
) -> BreakSite:
    """For a break that cannot resume at its own instruction (inside a loop or a try/with
    block, or at an instruction that does not resume): the statement holding it, run in
    Python. The region starts at the last statement boundary before ``i`` (empty stack,
    outside every loop and try/with block) and ends at the first one after it; a resume
    function continues from there. Raises CannotResume when nothing would be gained."""
    _check_frame(code, insts, i)
    flow = flow if flow is not None else ControlFlow(insts)
    insts = flow.insts
    depths, heads, protected = flow.stack_depths, flow.loop_heads, flow.protected

    def boundary(k: int, may_head: bool = False) -> bool:
        # the statement may start at the head of a loop (3.9/3.10 test a while loop's
        # condition only there), not inside one
        in_loop = bool(heads[k] - {k}) if may_head else bool(heads[k])
        return depths.get(k) == 0 and not in_loop and not protected[k]

    first = _body_start(code, insts)
    start = next((k for k in range(i, first - 1, -1) if boundary(k, may_head=True)), None)
    if start is None:
        raise CannotResume("no statement boundary before the break")
    # the statement's end: of the next few boundaries, the one giving the smallest region
    # (a nearer boundary may sit inside an except clause, with the statement's normal exit
    # jumping past it: its region would run on to the end of the frame)
    best: Optional[Tuple[int, set]] = None
    ends = (k for k in range(i + 1, len(insts)) if boundary(k))
    for end in itertools.islice(ends, _END_CANDIDATES):
        region = flow.reachable_from(start, end)
        if i in region and (best is None or len(region) < len(best[1])):
            best = (end, region)
    if best is not None:
        return BreakSite(start, start, 0, [(best[0], 0)], segment=True, region=sorted(best[1]))
    if start == first:
        raise CannotResume("the block holding the break runs to the end of the frame")
    return BreakSite(start, start, 0, [], segment=True, region=sorted(flow.reachable_from(start)))


# ---------------------------------------------------------------- resume functions
def _split_super(insts: List[Instruction]) -> List[Instruction]:
    """Two-local instructions (3.13+) as two plain ones (the locals are renumbered)."""
    out: List[Instruction] = []
    for inst in insts:
        pair = PAIRED_LOCALS.get(inst.opname)
        if pair is None:
            out.append(inst)
            continue
        a, b = inst.argval
        second = create_instruction(pair[1], argval=b, positions=inst.positions)
        second.exn_tab_entry = inst.exn_tab_entry
        first = create_instruction(pair[0], argval=a, positions=inst.positions)
        inst.opcode, inst.opname, inst.arg, inst.argval = first.opcode, first.opname, None, a
        out += [inst, second]
    return out


def closure_names(code: types.CodeType) -> List[str]:
    """The cells a resume function of ``code`` closes over, in its ``co_freevars`` order:
    the frame's cell variables, then its free variables."""
    return list(code.co_cellvars) + [n for n in code.co_freevars if n not in code.co_cellvars]


def make_resume_code(
    code: types.CodeType, target: int, stack: Sequence[Any], local_names: Sequence[str], lineno: Optional[int]
) -> Tuple[types.CodeType, List[str]]:
    """``code`` starting at instruction ``target`` with the stack described by ``stack``
    (True: a NULL, False: a value passed as an argument, a string: the method of that name
    of the object passed, ("method", name): the same through LOAD_METHOD) and ``local_names``
    as arguments.
    Returns the code and the names of its stack arguments."""
    insts = decode(code)
    goal = insts[target]
    for inst in insts:
        if inst.opcode in LOCAL_OPS or inst.opcode in CELL_OPS:
            inst.arg = None
    insts = _split_super(insts)
    shared = closure_names(code)
    if shared and BEHAVIOUR.cells_are_locals:
        # the frame's cells arrive in the closure: no MAKE_CELL, one COPY_FREE_VARS for them all
        keep = prefix_length(insts)
        head = [x for x in insts[:keep] if x.opname not in ("MAKE_CELL", "COPY_FREE_VARS")]
        head.insert(0, create_instruction("COPY_FREE_VARS", arg=len(shared)))
        insts[:keep] = head
    where = goal.positions
    stack_names: List[str] = []
    prologue: List[Instruction] = []
    for slot in stack:
        if slot is True:
            prologue.append(create_instruction("PUSH_NULL", positions=where))
        else:
            name = f"___stack{len(stack_names)}"
            stack_names.append(name)
            prologue.append(create_instruction("LOAD_FAST", argval=name, positions=where))
            if isinstance(slot, str):  # a bound method: its object is passed, the attribute loaded here
                prologue.append(create_instruction("LOAD_ATTR", argval=slot, positions=where))
            elif isinstance(slot, tuple):  # 3.9/3.10: NULL-or-self and the method, as LOAD_METHOD pushes them
                prologue.append(create_instruction("LOAD_METHOD", argval=slot[1], positions=where))
    prologue.append(create_instruction("JUMP_FORWARD", target=goal, positions=where))
    keep = prefix_length(insts)
    insts[keep:keep] = prologue
    opts = code_options(code)
    args = stack_names + list(local_names)
    opts["co_varnames"] = args + [n for n in opts["co_varnames"] if n not in args and n not in shared]
    # the frame's cell variables become free variables of the resume function: both share
    # the cells with any closure made before the break
    opts["co_cellvars"] = []
    opts["co_freevars"] = list(shared)
    opts["co_argcount"] = len(args)
    opts["co_posonlyargcount"] = 0
    opts["co_kwonlyargcount"] = 0
    opts["co_flags"] &= ~(inspect.CO_VARARGS | inspect.CO_VARKEYWORDS)
    tag = f"{RESUME_PREFIX}{lineno if lineno is not None else 'x'}_{next(_counter)}"
    opts["co_name"] = code.co_name
    if BEHAVIOUR.code_has_qualname:
        opts["co_qualname"] = f"{code.co_qualname}.{tag}"
    new = rebuild(code, insts, opts)
    _RESUME_PROLOGUES[new] = len(prologue)
    _RESUME_LINES[new] = lineno
    return new, stack_names


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
    code, insts, site, stack, locals_ = plan.code, plan.insts, plan.site, plan.stack, plan.locals_
    rebuilder, compile_graph, f_globals, resume_cache = (
        plan.rebuilder,
        plan.compile_graph,
        plan.f_globals,
        plan.resume_cache,
    )
    side_effects, cells = plan.side_effects, plan.cells
    inputs = stack[len(stack) - site.pops :] if site.pops else []
    lower = stack[: len(stack) - site.pops]
    first = insts[site.start]
    where = first.positions or Positions(code.co_firstlineno, code.co_firstlineno, None, None)
    old_call_method = not BEHAVIOUR.calls_push_null and any(
        insts[k].opname == "CALL_METHOD" for k in range(site.start, site.end)
    )
    # the stack below the instruction's inputs, slot by slot: NULL, a value, or a bound method
    # (passed as its object; the resume function loads the method: LOAD_ATTR, or on 3.9/3.10
    # LOAD_METHOD, which also re-creates the NULL that preceded it)
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
    for v in lower:
        rebuilder.collect(v, null_ok=True)
    # a resume function's stack arguments are dead once its prologue has run
    names = sorted(n for n in locals_ if not n.startswith("___stack"))
    for name in names:
        rebuilder.collect(locals_[name])
    for k, v in enumerate(inputs):
        rebuilder.collect(v, null_ok=BEHAVIOUR.calls_push_null or (old_call_method and k == 0))
    # cells the trace assigned (unchanged ones hold a lazy read of the real cell)
    stores = sorted((n, v) for n, v in (cells or {}).items() if v is not None and not unread(v))
    for _, v in stores:
        rebuilder.collect(v)
    if side_effects:
        side_effects.collect(rebuilder)

    # ``compile_graph(outputs)``: (compiled graph, its input sources), or None for a graph without operations
    compiled = compile_graph(rebuilder.outputs)
    cg = Codegen()
    if compiled is not None:
        call_graph, graph_inputs = compiled
        rebuilder.graph_out = "___graph_out"

        def load_inputs() -> None:
            for s in graph_inputs:
                s.reconstruct(cg)

        cg.call_builtin(call_graph, load_inputs, nargs=len(graph_inputs))
        cg.emit("STORE_FAST", argval=rebuilder.graph_out)
    # the live state, before the instruction can change what its sources read
    held: List[Optional[str]] = []
    for kind, v in slots:
        if kind == "null":
            held.append(None)
            continue
        rebuilder.emit(cg, v.obj if kind in ("attr", "method") else v)
        t = rebuilder.temp()
        cg.emit("STORE_FAST", argval=t)
        held.append(t)
    held_locals: List[str] = []
    for name in names:
        rebuilder.emit(cg, locals_[name])
        t = rebuilder.temp()
        cg.emit("STORE_FAST", argval=t)
        held_locals.append(t)
    held_cells: List[str] = []
    for _, v in stores:
        rebuilder.emit(cg, v)
        t = rebuilder.temp()
        cg.emit("STORE_FAST", argval=t)
        held_cells.append(t)
    for (name, _), t in zip(stores, held_cells):
        # the broken instructions and the resume function read the frame's real cells
        cg.load_fast(t)
        cg.emit("STORE_DEREF", argval=name)
    # the instruction's inputs, then the instruction(s) with the user's positions
    for k, v in enumerate(inputs):
        if v is NULL and not BEHAVIOUR.calls_push_null:
            continue  # 3.9/3.10 CALL_METHOD on [NULL, fn, args]: run as CALL_FUNCTION
        rebuilder.emit(cg, v)
    for inst in cg.instructions:
        inst.positions = where
    body: List[Instruction] = list(cg.instructions)
    branch_labels: Dict[int, Instruction] = {}
    jump: Optional[Instruction] = None
    if site.segment:
        # the instructions read the frame's locals: give them their traced values
        for name, t in zip(names, held_locals):
            cg2 = Codegen()
            cg2.load_fast(t)
            cg2.emit("STORE_FAST", argval=name)
            for inst in cg2.instructions:
                inst.positions = where
            body += cg2.instructions
    if side_effects:
        # after every read of the live state, before the instruction: it sees the new state
        cg3 = Codegen()
        side_effects.emit(cg3, rebuilder)
        for inst in cg3.instructions:
            inst.positions = where
        body += cg3.instructions
    if site.region is not None:
        if lower or inputs:
            raise CannotResume("values on the stack at the start of the statement")
        body += _region_code(code, list(insts), site, names, f_globals, resume_cache, where)
        return _replace_body(code, body)
    for k in range(site.start, site.end):
        orig = insts[k]
        if orig.opname == "CALL_METHOD" and not site.segment:
            copy = create_instruction("CALL_FUNCTION", arg=orig.arg, positions=orig.positions)
        else:
            copy = copy_instruction(orig)
        if orig.target is not None:
            jump = copy
        body.append(copy)

    stack_layout_base: List[Any] = [
        v.name if kind == "attr" else ("method", v.name) if kind == "method" else kind == "null" for kind, v in slots
    ]
    for b, (target, pushes) in enumerate(site.branches):
        bc = Codegen()
        outs = [rebuilder.temp() for _ in range(pushes)]
        for t in reversed(outs):
            bc.emit("STORE_FAST", argval=t)
        layout = stack_layout_base + [False] * pushes
        fn = _resume_function(code, target, names, f_globals, resume_cache, layout, insts[target].lineno)
        args = [t for t in held if t is not None] + outs + held_locals
        for inst in bc.instructions:
            inst.positions = where
        code_b = bc.instructions + _return_call(fn, args, where, closure_names(code))
        branch_labels[b] = code_b[0]
        body += code_b
    if jump is not None:
        jump.target = branch_labels[1]
    return _replace_body(code, body)


def _replace_body(code: types.CodeType, body: List[Instruction]) -> types.CodeType:
    def transform(out: List[Instruction], opts: Dict[str, Any]) -> None:
        out[prefix_length(out) :] = body

    from ..bytecode import transform_code_object

    return transform_code_object(code, transform)


# ---------------------------------------------------------------- a statement run in Python
_STORES = {
    "STORE_FAST": (True,),
    "STORE_FAST_LOAD_FAST": (True, None),
    "STORE_FAST_STORE_FAST": (True, True),
    "DELETE_FAST": (False,),
    "LOAD_FAST_AND_CLEAR": (False,),
}


def _local_effects(inst: Instruction) -> List[Tuple[str, bool]]:
    """(name, bound afterwards) for each local the instruction binds or unbinds."""
    how = _STORES.get(inst.opname)
    if how is None:
        return []
    names = inst.argval if isinstance(inst.argval, tuple) else (inst.argval,)
    return [(n, b) for n, b in zip(names, how) if b is not None]


def _bound_at_exit(flow: ControlFlow, region: Sequence[int], start: int, end: int, bound: Set[str]) -> Set[str]:
    """Locals bound on every path from ``start`` (where ``bound`` are) to ``end``."""
    members = set(region)
    state: Dict[int, frozenset] = {start: frozenset(bound)}
    at_end: Optional[frozenset] = None
    work = [start]
    while work:
        k = work.pop()
        before = state[k]
        after = set(before)
        for name, now_bound in _local_effects(flow.insts[k]):
            (after.add if now_bound else after.discard)(name)
        handler = flow.handler(k)
        for j in flow.successors[k]:
            # an instruction that raises has not done its store: its handler sees the state before
            incoming = before & frozenset(after) if j == handler else frozenset(after)
            if j == end:
                at_end = incoming if at_end is None else at_end & incoming
            elif j in members:
                old = state.get(j)
                new = incoming if old is None else old & incoming
                if new != old:
                    state[j] = new
                    work.append(j)
    return set(at_end or ())


def _locals_used_from(flow: ControlFlow, start: int) -> Set[str]:
    """Names of the locals that instructions reachable from ``start`` touch."""
    used: Set[str] = set()
    for k in flow.reachable_from(start):
        inst = flow.insts[k]
        if inst.opcode in LOCAL_OPS:
            used.update(inst.argval if isinstance(inst.argval, tuple) else (inst.argval,))
    return used


def _region_code(
    code: types.CodeType,
    insts: List[Instruction],
    site: BreakSite,
    bound: Sequence[str],
    f_globals: Dict[str, Any],
    resume_cache: Dict[Any, Any],
    where: Positions,
) -> List[Instruction]:
    """The statement's instructions copied (jumps and exception handlers re-pointed at the
    copies), then, where it ends, ``return resume(<locals>)``."""
    assert site.region is not None
    flow = ControlFlow(insts)
    copies: Dict[int, Instruction] = {}
    region = set(site.region)
    for k in site.region:
        orig = insts[k]
        if orig.target is not None and flow.target(k) not in region and orig.opcode in UNCONDITIONAL:
            # the exit code comes after every copy: 3.13's handlers leave a with block
            # by JUMP_BACKWARD_NO_INTERRUPT, which has no forward form (made before any
            # jump is re-pointed: a jump to this one must reach the replacement)
            copies[k] = create_instruction("JUMP_FORWARD", positions=orig.positions)
            continue
        copies[k] = copy_instruction(orig)
    exit_code: List[Instruction] = []
    exit_label: Optional[Instruction] = None
    if site.branches:
        end = site.branches[0][0]
        exit_code = _exit_call(code, flow, site, end, bound, f_globals, resume_cache, where)
        exit_label = exit_code[0]
    out: List[Instruction] = []
    for k in site.region:
        orig, copy = insts[k], copies[k]
        if orig.target is not None:
            copy.target = copies.get(flow.target(k), exit_label)  # type: ignore[arg-type]
        entry = orig.exn_tab_entry
        if entry is not None:
            copy.exn_tab_entry = ExnTabEntry(copies[flow.handler(k)], entry.depth, entry.lasti)  # type: ignore[index]
        out.append(copy)
        if orig.opcode not in UNCONDITIONAL and orig.opcode not in TERMINAL and k + 1 not in copies:
            # it falls through to the end of the statement, which is not copied
            out.append(create_instruction("JUMP_FORWARD", target=exit_label, positions=orig.positions))
    return out + exit_code


def _exit_call(
    code: types.CodeType,
    flow: ControlFlow,
    site: BreakSite,
    end: int,
    bound: Sequence[str],
    f_globals: Dict[str, Any],
    resume_cache: Dict[Any, Any],
    where: Positions,
) -> List[Instruction]:
    """``return resume(<locals>)`` after the statement. Locals it may leave unbound (a loop
    that ran no iteration) are looked up at run time (``_ResumeUnbound``)."""
    assert site.region is not None
    insts = flow.insts
    assigned = {name for k in site.region for name, _ in _local_effects(insts[k])}
    live = _locals_used_from(flow, end)
    passed = sorted((set(bound) | assigned) & live)
    sure_set = _bound_at_exit(flow, site.region, site.start, end, set(bound))
    sure = [n for n in passed if n in sure_set]
    maybe = [n for n in passed if n not in sure_set]
    target: Any
    if maybe:
        target = _ResumeUnbound(code, end, insts[end].lineno, sure, maybe, f_globals, resume_cache)
    else:
        target = _resume_function(code, end, sure, f_globals, resume_cache, (), insts[end].lineno)
    return _return_call(target, sure, where, closure_names(code))


def _return_call(fn: Any, names: Sequence[str], where: Positions, cells: Sequence[str] = ()) -> List[Instruction]:
    """``return fn(<each local of names>)``, at the user's position; with ``cells``,
    ``return fn((<each cell>,), <each local>)``."""
    cg = Codegen()

    def load_args() -> None:
        if cells:
            for name in cells:
                cg.load_closure(name)
            cg.emit("BUILD_TUPLE", arg=len(cells))
        for name in names:
            cg.load_fast(name)

    cg.call_builtin(fn, load_args, nargs=len(names) + (1 if cells else 0))
    cg.return_value()
    for inst in cg.instructions:
        inst.positions = where
    return cg.instructions


def _resume_function(
    code: types.CodeType,
    target: int,
    names: Sequence[str],
    f_globals: Dict[str, Any],
    resume_cache: Dict[Any, Any],
    layout: Sequence[Any],
    lineno: Optional[int],
) -> types.FunctionType:
    """The resume function continuing ``code`` at instruction ``target`` (one per frame state)."""
    key = (target, tuple(layout), tuple(names))
    fn = resume_cache.get(key)
    if fn is None:
        rcode, _ = make_resume_code(code, target, list(layout), names, lineno)
        if rcode.co_freevars:
            fn = _WithCells(rcode, f_globals, code.co_name)
        else:
            fn = types.FunctionType(rcode, f_globals, code.co_name)
        resume_cache[key] = fn
    return fn


class _WithCells:
    """A resume function of a frame with cells: made at each call around the calling
    frame's cells (passed first), so it shares them with closures made before the break."""

    __slots__ = ("code", "f_globals", "name")

    def __init__(self, code: types.CodeType, f_globals: Dict[str, Any], name: str) -> None:
        self.code, self.f_globals, self.name = code, f_globals, name

    def __call__(self, cells: Tuple[Any, ...], *args: Any) -> Any:
        return types.FunctionType(self.code, self.f_globals, self.name, None, cells)(*args)


class _ResumeUnbound:
    """Calls the resume function after a statement that may leave some locals unbound: which
    ones are is only known at run time, read from the calling frame (one resume function per
    combination, made when first needed)."""

    def __init__(
        self,
        code: types.CodeType,
        target: int,
        lineno: Optional[int],
        sure: List[str],
        maybe: List[str],
        f_globals: Dict[str, Any],
        resume_cache: Dict[Any, Any],
    ) -> None:
        self.code, self.target, self.lineno, self.sure, self.maybe = code, target, lineno, sure, maybe
        self.f_globals, self.resume_cache = f_globals, resume_cache

    def __call__(self, *args: Any) -> Any:
        frame_locals = sys._getframe(1).f_locals
        present = [n for n in self.maybe if n in frame_locals]
        values = [frame_locals[n] for n in present]
        del frame_locals
        fn = _resume_function(
            self.code, self.target, self.sure + present, self.f_globals, self.resume_cache, (), self.lineno
        )
        return fn(*args, *values)  # with cells, args[0] is the cells' tuple
