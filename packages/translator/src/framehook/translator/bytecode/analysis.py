"""Whole-list questions and clean-ups over the control-flow graph (``cfg.py``): stack
depth, reachability, loops, dead code and pointless jumps."""

from __future__ import annotations

import types
from typing import Dict, List, Set

from .cfg import ControlFlow, StackDepthError
from .opcodes import JUMPS, TERMINAL, UNCONDITIONAL
from .instructions import Instruction

__all__ = [
    "stacksize",
    "stack_depths",
    "in_cycle",
    "loop_heads",
    "reachable",
    "remove_dead_code",
    "remove_pointless_jumps",
    "StackDepthError",
    "moves_values_only",
    "needs_cleaning",
]


def stacksize(insts: List[Instruction]) -> int:
    """Largest stack depth any path reaches (what co_stacksize must be)."""
    return ControlFlow(insts).stacksize


def stack_depths(insts: List[Instruction]) -> Dict[int, int]:
    """Stack depth before each reachable instruction, by index."""
    return ControlFlow(insts).stack_depths


def loop_heads(insts: List[Instruction]) -> List[Set[int]]:
    """For each instruction, the first instructions of the loops it lies on (``ControlFlow.loop_heads``)."""
    return ControlFlow(insts).loop_heads


def in_cycle(insts: List[Instruction]) -> List[bool]:
    """Which instructions lie on a loop."""
    return ControlFlow(insts).in_cycle


def reachable(insts: List[Instruction]) -> List[bool]:
    """Which instructions some path from the first one reaches (handlers included)."""
    return ControlFlow(insts).live


def remove_dead_code(insts: List[Instruction]) -> List[Instruction]:
    """Instructions no path reaches, removed (nothing live can jump to them)."""
    live = reachable(insts)
    return [inst for inst, ok in zip(insts, live) if ok]


def remove_pointless_jumps(insts: List[Instruction]) -> List[Instruction]:
    """Unconditional jumps to the very next instruction, removed (their jumpers retargeted)."""
    out: List[Instruction] = []
    replaced: Dict[int, Instruction] = {}
    for i, inst in enumerate(insts):
        if inst.opcode in UNCONDITIONAL and i + 1 < len(insts) and inst.target is insts[i + 1]:
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
_MOVES = frozenset(
    {
        "NOP",
        "EXTENDED_ARG",
        "CACHE",
        "RESUME",
        "COPY_FREE_VARS",
        "MAKE_CELL",
        "LOAD_FAST",
        "LOAD_FAST_CHECK",
        "LOAD_FAST_LOAD_FAST",
        "STORE_FAST",
        "STORE_FAST_LOAD_FAST",
        "LOAD_FAST_BORROW",
        "LOAD_FAST_BORROW_LOAD_FAST_BORROW",
        "LOAD_SMALL_INT",
        "LOAD_COMMON_CONSTANT",
        "STORE_FAST_STORE_FAST",
        "LOAD_CONST",
        "LOAD_DEREF",
        "LOAD_CLOSURE",
        "LOAD_GLOBAL",
        "POP_TOP",
        "DUP_TOP",
        "ROT_TWO",
        "ROT_THREE",
        "COPY",
        "SWAP",
        "BUILD_TUPLE",
        "BUILD_LIST",
        "RETURN_VALUE",
        "RETURN_CONST",
    }
)


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
    ops = code.co_code[::2].rstrip(b"\0")  # opcode units; 0 is a 3.11+ inline cache entry
    if not ops or ops[-1] not in TERMINAL:
        return True
    return sum(ops.count(op) for op in _ENDS) != 1 or any(op in ops for op in _JUMP_OPS)
