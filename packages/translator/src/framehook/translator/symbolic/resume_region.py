"""A graph break run as the whole statement holding it: the statement's instructions
copied, then ``return resume(<locals>)`` where it ends."""

from __future__ import annotations

import types
from typing import Any, Dict, List, Optional, Sequence, Set, Tuple

from ..bytecode import ControlFlow, ExnTabEntry, Instruction, Positions, copy_instruction
from ..bytecode.codegen import make
from ..bytecode.kinds import Kind
from ..bytecode.opcodes import LOCAL_OPS, TERMINAL, UNCONDITIONAL
from .resume_code import _ResumeUnbound, _resume_function, _return_call, closure_names
from .resume_sites import BreakSite

__all__ = ["region_code"]


# for each kind that binds or unbinds locals: whether each of its locals (``argval``: the
# name, or the two names of a pair) is bound afterwards (None: only loaded)
_STORES = {
    Kind.STORE_LOCAL: (True,),
    Kind.STORE_LOAD_LOCAL: (True, None),
    Kind.STORE_LOCAL_PAIR: (True, True),
    Kind.DELETE_LOCAL: (False,),
    Kind.LOAD_LOCAL_AND_CLEAR: (False,),
}


def _local_effects(inst: Instruction) -> List[Tuple[str, bool]]:
    """(name, bound afterwards) for each local the instruction binds or unbinds."""
    how = _STORES.get(inst.kind)
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


def region_code(
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
            copies[k] = make(Kind.JUMP, positions=orig.positions)
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
            out.append(make(Kind.JUMP, target=exit_label, positions=orig.positions))
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
