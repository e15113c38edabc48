"""Control-flow facts: stack depth, reachability, dead code and pointless jumps."""
from __future__ import annotations

from typing import Dict, List

from ._compat import JUMPS, TERMINAL, UNCONDITIONAL, stack_effect
from .instructions import Instruction

__all__ = ["stacksize", "reachable", "remove_dead_code", "remove_pointless_jumps", "StackDepthError"]


class StackDepthError(ValueError):
    """The stack depth is negative somewhere: the bytecode is inconsistent."""


def _index(insts: List[Instruction]) -> Dict[int, int]:
    return {id(inst): i for i, inst in enumerate(insts)}


def stacksize(insts: List[Instruction]) -> int:
    """Largest stack depth any path reaches (what co_stacksize must be)."""
    if not insts:
        return 0
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
            if op in JUMPS:
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
    return best


def reachable(insts: List[Instruction]) -> List[bool]:
    """Which instructions some path from the first one reaches (handlers included)."""
    index = _index(insts)
    live = [False] * len(insts)
    work = [0] if insts else []
    while work:
        i = work.pop()
        while i < len(insts) and not live[i]:
            live[i] = True
            inst = insts[i]
            if inst.exn_tab_entry is not None:
                work.append(index[id(inst.exn_tab_entry.target)])
            if inst.target is not None:
                work.append(index[id(inst.target)])
            if inst.opcode in UNCONDITIONAL or inst.opcode in TERMINAL:
                break
            i += 1
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
