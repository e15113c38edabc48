"""Control-flow facts: stack depth, reachability, dead code and pointless jumps."""
from __future__ import annotations

import types
from typing import Dict, List, Set, Tuple

from .opcodes import BRANCHES, JUMPS, TERMINAL, UNCONDITIONAL, stack_effect
from .instructions import Instruction

__all__ = ["stacksize", "stack_depths", "successors", "in_cycle", "loop_heads", "reachable", "remove_dead_code",
           "remove_pointless_jumps", "StackDepthError", "moves_values_only", "needs_cleaning"]


class StackDepthError(ValueError):
    """The stack depth is negative somewhere: the bytecode is inconsistent."""


def _index(insts: List[Instruction]) -> Dict[int, int]:
    return {id(inst): i for i, inst in enumerate(insts)}


def _walk_depths(insts: List[Instruction]) -> Tuple[Dict[int, int], int]:
    """Stack depth before each reachable instruction (by index), and the largest depth
    any path reaches, jumps' transient depths included."""
    if not insts:
        return {}, 0
    index = _index(insts)
    depth_at: Dict[int, int] = {}
    # a generator resumes with the sent value on the stack (3.10 GEN_START pops it)
    work = [(0, 1 if insts[0].opname == "GEN_START" else 0)]
    best = 0
    while work:
        i, depth = work.pop()
        while i < len(insts):
            inst = insts[i]
            seen = depth_at.get(i)
            if seen is not None and seen >= depth:
                break
            depth_at[i] = depth
            entry = inst.exn_tab_entry
            if entry is not None:
                handler_depth = entry.depth + 1 + int(entry.lasti)
                best = max(best, handler_depth)
                work.append((index[id(entry.target)], handler_depth))
            op = inst.opcode
            if op in BRANCHES:
                jumped = depth + stack_effect(op, inst.arg, jump=True)
                if inst.target is not None:
                    best = max(best, jumped)
                    work.append((index[id(inst.target)], jumped))
                if op in UNCONDITIONAL:
                    break
                depth += stack_effect(op, inst.arg, jump=False)
            elif inst.opname == "RETURN_GENERATOR":
                # 3.11/3.12 report 0, but the frame resumes with the sent value pushed
                depth += max(1, stack_effect(op, inst.arg))
            else:
                depth += stack_effect(op, inst.arg)
            if depth < 0:
                raise StackDepthError(f"stack depth {depth} after {inst.opname} (index {i})")
            best = max(best, depth)
            if op in TERMINAL:
                break
            i += 1
    return depth_at, best


def stacksize(insts: List[Instruction]) -> int:
    """Largest stack depth any path reaches (what co_stacksize must be)."""
    return _walk_depths(insts)[1]


def stack_depths(insts: List[Instruction]) -> Dict[int, int]:
    """Stack depth before each reachable instruction, by index."""
    return _walk_depths(insts)[0]


def successors(insts: List[Instruction], index: Dict[int, int], i: int) -> List[int]:
    """Where control can go after instruction ``i``: the next one, its jump target and,
    when it raises, its exception handler."""
    inst = insts[i]
    out: List[int] = []
    if inst.opcode not in UNCONDITIONAL and inst.opcode not in TERMINAL and i + 1 < len(insts):
        out.append(i + 1)
    if inst.target is not None and inst.opcode in BRANCHES:
        out.append(index[id(inst.target)])
    if inst.exn_tab_entry is not None:
        out.append(index[id(inst.exn_tab_entry.target)])
    return out


def loop_heads(insts: List[Instruction]) -> List[Set[int]]:
    """For each instruction, the first instructions (targets of the jumps back) of the
    control-flow cycles -- loops -- it lies on. A backward jump alone does not make a loop:
    3.12+ place exception handlers at the end, jumping back to the code after the ``try``,
    which no path leads from to the handler."""
    index = _index(insts)
    succ = [successors(insts, index, i) for i in range(len(insts))]
    pred: List[List[int]] = [[] for _ in insts]
    for i, outs in enumerate(succ):
        for j in outs:
            pred[j].append(i)

    def closure(start: int, edges: List[List[int]]) -> Set[int]:
        seen = {start}
        work = [start]
        while work:
            for j in edges[work.pop()]:
                if j not in seen:
                    seen.add(j)
                    work.append(j)
        return seen

    heads: List[Set[int]] = [set() for _ in insts]
    for u, outs in enumerate(succ):
        for v in outs:
            if v <= u:    # every cycle takes at least one edge that does not go forward
                for k in closure(v, succ) & closure(u, pred):
                    heads[k].add(v)
    return heads


def in_cycle(insts: List[Instruction]) -> List[bool]:
    """Which instructions lie on a loop (``loop_heads``)."""
    return [bool(h) for h in loop_heads(insts)]


def reachable(insts: List[Instruction]) -> List[bool]:
    """Which instructions some path from the first one reaches (handlers included)."""
    index = _index(insts)
    live = [False] * len(insts)
    work = [0] if insts else []
    while work:
        i = work.pop()
        if not live[i]:
            live[i] = True
            work.extend(successors(insts, index, i))
    return live


def remove_dead_code(insts: List[Instruction]) -> List[Instruction]:
    """Instructions no path reaches, removed (nothing live can jump to them)."""
    live = reachable(insts)
    return [inst for inst, ok in zip(insts, live) if ok]


def remove_pointless_jumps(insts: List[Instruction]) -> List[Instruction]:
    """Unconditional jumps to the very next instruction, removed (their jumpers retargeted)."""
    out: List[Instruction] = []
    replaced: Dict[int, Instruction] = {}
    for i, inst in enumerate(insts):
        if (inst.opcode in UNCONDITIONAL and i + 1 < len(insts) and inst.target is insts[i + 1]):
            replaced[id(inst)] = insts[i + 1]
            continue
        out.append(inst)
    def resolve(target: Instruction) -> Instruction:
        while id(target) in replaced:  # a jump to a removed jump to a removed jump...
            target = replaced[id(target)]
        return target

    if replaced:
        for inst in out:
            if inst.target is not None:
                inst.target = resolve(inst.target)
            entry = inst.exn_tab_entry
            if entry is not None:
                entry.target = resolve(entry.target)
    return out


#: opcodes that only move values between locals, cells, constants, globals and the stack:
#: none calls, jumps, iterates, hashes or looks up an attribute (3.9-3.15 spellings)
_MOVES = frozenset({
    "NOP", "EXTENDED_ARG", "CACHE", "RESUME", "COPY_FREE_VARS", "MAKE_CELL",
    "LOAD_FAST", "LOAD_FAST_CHECK", "LOAD_FAST_LOAD_FAST", "STORE_FAST", "STORE_FAST_LOAD_FAST",
    "LOAD_FAST_BORROW", "LOAD_FAST_BORROW_LOAD_FAST_BORROW", "LOAD_SMALL_INT", "LOAD_COMMON_CONSTANT",
    "STORE_FAST_STORE_FAST", "LOAD_CONST", "LOAD_DEREF", "LOAD_CLOSURE", "LOAD_GLOBAL",
    "POP_TOP", "DUP_TOP", "ROT_TWO", "ROT_THREE", "COPY", "SWAP", "BUILD_TUPLE", "BUILD_LIST",
    "RETURN_VALUE", "RETURN_CONST",
})


def moves_values_only(insts: List[Instruction]) -> bool:
    """True when the code runs straight through, only moving values and returning one
    (``return x``, ``return x, 2``): running it costs no more than any replacement would."""
    return all(inst.opname in _MOVES for inst in insts)


# real opcodes only (3.13 also lists pseudo-instructions numbered from 256)
_ENDS = frozenset(op for op in TERMINAL | UNCONDITIONAL if op < 256)
_JUMP_OPS = frozenset(op for op in JUMPS if op < 256)


def needs_cleaning(code: types.CodeType) -> bool:
    """False when ``remove_dead_code`` and ``remove_pointless_jumps`` would leave ``code`` as
    it is: no jump, no exception handler and only the last instruction ends it (so every
    instruction is reached). Reads the opcodes of ``co_code`` without decoding them."""
    if getattr(code, "co_exceptiontable", b""):
        return True
    ops = code.co_code[::2].rstrip(b"\0")   # opcode units; 0 is a 3.11+ inline cache entry
    if not ops or ops[-1] not in TERMINAL:
        return True
    return sum(ops.count(op) for op in _ENDS) != 1 or any(op in ops for op in _JUMP_OPS)
