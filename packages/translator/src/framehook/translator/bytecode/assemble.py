"""List of Instructions -> co_code, line table, exception table and stack size."""

from __future__ import annotations

import opcode
from dataclasses import dataclass
from typing import Dict, List, Optional

from .behaviour import BEHAVIOUR
from .opcodes import BACKWARD, EXTENDED_ARG, JABS, JUMPS, cache_entries, flip_direction, has_arg, jump_arg
from .exception_table import RawExnEntry, encode_exception_table
from .instructions import Instruction, Positions
from .linetable import encode

__all__ = ["assemble", "Assembled", "AssembleError"]


class AssembleError(ValueError):
    """The instructions cannot be laid out (a missing argument, an impossible jump)."""


@dataclass
class Assembled:
    code: bytes
    linetable: bytes  # co_lnotab on 3.9, co_linetable after
    exceptiontable: bytes  # empty before 3.11


def _ext_needed(arg: int) -> int:
    if arg < 0:
        raise AssembleError(f"negative argument {arg}")
    n = 0
    while arg > 0xFF:
        arg >>= 8
        n += 1
    return n


def _check_for_iter_target(inst: Instruction, insts: List[Instruction]) -> None:
    # an exhausted FOR_ITER lands on its target and skips it (END_FOR, and the POP_TOP
    # after it where there is one): the target must be exactly that
    target = inst.target
    ok = target is not None and target.opname == "END_FOR"
    pop = BEHAVIOUR.loop_exit_pop
    if ok and BEHAVIOUR.end_for_followed_by_pop_top:
        k = next(i for i, x in enumerate(insts) if x is target)
        ok = k + 1 < len(insts) and insts[k + 1].opname == pop
    if not ok:
        raise AssembleError(
            "FOR_ITER must jump to END_FOR"
            + (f" followed by {pop}" if BEHAVIOUR.end_for_followed_by_pop_top else "")
            + f", not {getattr(target, 'opname', None)}"
        )


def _fix_jump_direction(inst: Instruction, op_offset: int, target: int) -> bool:
    """Swap a relative jump for its twin when its target is on the other side; True if changed."""
    op = inst.opcode
    if op in JABS:
        return False
    backward = target <= op_offset
    name = inst.opname
    is_back = op in BACKWARD
    if backward == is_back:
        return False
    twin = flip_direction(op)
    if twin is None:
        raise AssembleError(
            f"{name} cannot jump {'backward' if backward else 'forward'} (from {op_offset} to {target}) on this Python"
        )
    inst.opcode = twin
    inst.opname = opcode.opname[twin]
    return True


def assemble(insts: List[Instruction], firstlineno: int) -> Assembled:
    """Lay out ``insts``: jump arguments and EXTENDED_ARG prefixes to a fixed point, then encode."""
    present = {id(i) for i in insts}
    for inst in insts:
        if inst.opcode in JUMPS:
            if inst.target is None:
                raise AssembleError(f"{inst.opname} has no target")
            if id(inst.target) not in present:
                raise AssembleError(f"{inst.opname} jumps to an instruction that is not in the list")
            if BEHAVIOUR.loops_end_with_end_for and inst.opname == "FOR_ITER":
                _check_for_iter_target(inst, insts)
        elif has_arg(inst.opcode) and inst.arg is None:
            raise AssembleError(f"{inst.opname} has no argument (resolve argvals before assembling)")
        if inst.exn_tab_entry is not None and id(inst.exn_tab_entry.target) not in present:
            raise AssembleError(f"{inst.opname}'s exception handler is not in the list")

    ext: Dict[int, int] = {}
    for inst in insts:
        ext[id(inst)] = max(inst.min_ext, 0 if inst.opcode in JUMPS else _ext_needed(inst.arg or 0))

    for _ in range(100):
        starts: Dict[int, int] = {}
        cur = 0
        for inst in insts:
            starts[id(inst)] = cur
            cur += 2 * (ext[id(inst)] + 1 + cache_entries(inst.opcode))
        changed = False
        for inst in insts:
            if inst.opcode not in JUMPS:
                continue
            op_offset = starts[id(inst)] + 2 * ext[id(inst)]
            target = starts[id(inst.target)]  # type: ignore[arg-type]
            if _fix_jump_direction(inst, op_offset, target):
                changed = True  # the twin may carry a different number of caches
                break
            arg = jump_arg(inst.opcode, target, op_offset)
            if arg < 0:
                raise AssembleError(f"{inst.opname} cannot reach its target ({op_offset} -> {target})")
            inst.arg = arg
            need = _ext_needed(arg)
            if need > ext[id(inst)]:
                ext[id(inst)] = need
                changed = True
        if not changed:
            break
    else:  # pragma: no cover - would need pathological oscillation
        raise AssembleError("jump layout did not converge")

    code = bytearray()
    units: List[Optional[Positions]] = []
    exn_rows: List[RawExnEntry] = []
    for inst in insts:
        arg = inst.arg or 0
        n = ext[id(inst)]
        for k in range(n, 0, -1):
            code += bytes((EXTENDED_ARG, (arg >> (8 * k)) & 0xFF))
        code += bytes((inst.opcode, arg & 0xFF))
        size = n + 1 + cache_entries(inst.opcode)
        code += bytes(2 * cache_entries(inst.opcode))
        prefix = inst.prefix_positions
        if n and prefix is not None and prefix[1] is inst.positions:
            units.extend([prefix[0]] * n + [inst.positions] * (size - n))
        else:
            units.extend([inst.positions] * size)
        entry = inst.exn_tab_entry
        if entry is not None:
            start = starts[id(inst)]
            row = RawExnEntry(start, start + 2 * size, starts[id(entry.target)], entry.depth, entry.lasti)
            last = exn_rows[-1] if exn_rows else None
            if last is not None and last.end == start and last[2:] == row[2:]:
                exn_rows[-1] = last._replace(end=row.end)
            else:
                exn_rows.append(row)

    exceptiontable = encode_exception_table(exn_rows) if BEHAVIOUR.exception_table else b""
    return Assembled(bytes(code), encode(units, firstlineno), exceptiontable)
