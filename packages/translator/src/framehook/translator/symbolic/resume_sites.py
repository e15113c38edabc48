"""Where a graph break resumes: the instructions to run in Python and the ways out
(``break_site``), or the statement holding the break (``statement_site``)."""

from __future__ import annotations

import inspect
import itertools
import types
from typing import List, Optional, Sequence, Tuple

from ..bytecode import ControlFlow, Instruction, prefix_length
from ..bytecode.behaviour import BEHAVIOUR
from ..bytecode.effects import call_shape, effect, net_effect
from ..bytecode.kinds import Kind, kind_of
from ..bytecode.opcodes import WITH_ENTRIES
from .breaks import CannotResume
from .resume_code import _RESUME_PROLOGUES

__all__ = ["BreakSite", "break_site", "statement_site"]


# kinds of single instructions that resume after a break as they are, their inputs and
# results counted by the stack-effect table (calls, method loads and jumps are handled apart)
_RESUMES_ALONE = frozenset(
    {
        Kind.BINARY_OP,
        Kind.COMPARE,
        Kind.CONTAINS,
        Kind.IS,
        Kind.SUBSCR,
        Kind.UNARY,
        Kind.TO_BOOL,
        Kind.FORMAT,
        Kind.CONVERT,
        Kind.STORE_SUBSCR,
        Kind.DELETE_SUBSCR,
        Kind.STORE_ATTR,
        Kind.DELETE_ATTR,
        Kind.STORE_GLOBAL,
        Kind.DELETE_GLOBAL,
        Kind.SUBSCR_SLICE,
        Kind.STORE_SLICE,
        Kind.LOAD_ASSERTION_ERROR,
        Kind.IMPORT_NAME,
        Kind.GET_LEN,
        Kind.UNPACK_SEQUENCE,
        Kind.BUILD_STRING,
        Kind.RAISE,
    }
)


def _resumes_alone(inst: Instruction) -> bool:
    if inst.kind == Kind.LOAD_CONST:
        # 3.14+'s AssertionError (as LOAD_ASSERTION_ERROR before), not the code's constants
        return inst.common_constant
    # 3.12+'s unary plus is an intrinsic call, which does not resume
    return inst.kind in _RESUMES_ALONE and inst.intrinsic is None


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


# kinds a method call's arguments may not contain for the call to run as the original
# instructions: stores, returns, raises, yields, cells, block set-up, iteration
_SEGMENT_REFUSED = frozenset(
    {
        Kind.STORE_LOCAL,
        Kind.STORE_LOCAL_PAIR,
        Kind.STORE_LOAD_LOCAL,
        Kind.STORE_DEREF,
        Kind.STORE_GLOBAL,
        Kind.STORE_NAME,
        Kind.STORE_ATTR,
        Kind.STORE_SUBSCR,
        Kind.STORE_SLICE,
        Kind.DELETE_LOCAL,
        Kind.DELETE_DEREF,
        Kind.DELETE_GLOBAL,
        Kind.DELETE_NAME,
        Kind.DELETE_ATTR,
        Kind.DELETE_SUBSCR,
        Kind.RETURN,
        Kind.RETURN_CONST,
        Kind.RETURN_GENERATOR,
        Kind.RAISE,
        Kind.YIELD_VALUE,
        Kind.YIELD_FROM,
        Kind.LOAD_DEREF,
        Kind.LOAD_CLOSURE,
        Kind.MAKE_CELL,
        Kind.SETUP_FINALLY,
        Kind.SETUP_CLEANUP,
        Kind.SETUP_ANNOTATIONS,
        Kind.WITH_ENTER,
        Kind.ASYNC_WITH_ENTER,
        Kind.GET_ITER,
        Kind.GET_LEN,
        Kind.GET_AWAITABLE,
        Kind.GET_AITER,
        Kind.GET_ANEXT,
        Kind.GET_YIELD_FROM_ITER,
        Kind.FOR_ITER,
        Kind.END_FOR,
        Kind.END_ASYNC_FOR,
        Kind.END_SEND,
        Kind.LOAD_LOCAL_AND_CLEAR,
    }
)
#: kinds of the instructions that begin entering a with block (``opcodes.WITH_ENTRIES``)
_WITH_ENTRIES = frozenset(kind_of(name) for name in WITH_ENTRIES)


def _alone(inst: Instruction, i: int) -> BreakSite:
    """The instruction at ``i`` run by itself, its inputs and results as the table counts them."""
    pops, pushes = effect(inst)  # type: ignore[misc]
    return BreakSite(i, i + 1, pops, [] if inst.kind == Kind.RAISE else [(i + 1, pushes)])


def _call_site(insts: Sequence[Instruction], i: int, j: int, pops: int) -> BreakSite:
    end = j + 1
    pushes = 1
    if end < len(insts) and insts[end].kind == Kind.POP_TOP:
        end += 1
        pushes = 0
    return BreakSite(i, end, pops, [(end, pushes)], segment=True)


def _method_call_site(insts: Sequence[Instruction], i: int) -> BreakSite:
    """A break at a method load: the load, the arguments and the call run in Python."""
    depth = 0  # the object is on top before the load; the call's result replaces it
    for j in range(i, len(insts)):
        inst = insts[j]
        if inst.target is not None or inst.kind in _SEGMENT_REFUSED:
            break
        depth += net_effect(inst)
        shape = call_shape(inst)
        if (
            depth == -1
            and inst.kind == Kind.CALL_EX
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
                if insts[i].kind != Kind.LOAD_ATTR or insts[i].is_method:
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
        if inst.kind == Kind.CALL and BEHAVIOUR.precall_before_call:
            start = i - 1
        if start > 0 and insts[start - 1].kind == Kind.KW_NAMES:
            start -= 1
        pops = shape.pops
        end = i + 1
        pushes = 1
        if end < len(insts) and insts[end].kind == Kind.POP_TOP:
            end += 1  # 3.12+ specializes list.append's CALL assuming this POP_TOP follows
            pushes = 0
        site = BreakSite(start, end, pops, [(end, pushes)])
    elif inst.kind == Kind.BRANCH:
        kept = int(inst.keeps_operand)
        site = BreakSite(i, i + 1, 1, [(i + 1, 0), (flow.index_of(inst.target), kept)])
    elif inst.kind == Kind.LOAD_ATTR and not inst.is_method:
        try:  # a method called right away (``y.tolist(*args)``): the call runs in Python too
            site = _method_call_site(insts, i)
        except CannotResume:
            site = _alone(inst, i)
    elif inst.kind == Kind.LOAD_ATTR:  # a method load (LOAD_METHOD or the method bit)
        site = _method_call_site(insts, i)
    elif _resumes_alone(inst):
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
            if insts[k].kind in _WITH_ENTRIES:
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
