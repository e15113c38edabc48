"""Code object -> list of Instructions (targets, locations, exception entries resolved)."""

from __future__ import annotations

import bisect
import collections
import dis
import opcode
import types
from typing import Any, Dict, List, Mapping, Sequence, Tuple

from .opcodes import CELL_OPS, EXTENDED_ARG, SINGLE_LOCAL_OPS, JUMPS, cache_entries, has_arg, jump_target_offset
from .arguments import DECODER
from .behaviour import BEHAVIOUR
from .exception_table import parse_exception_table
from .instructions import ExnTabEntry, Instruction
from .linetable import unit_positions

__all__ = ["decode", "BytecodeDecodeError", "localsplus_names"]


class BytecodeDecodeError(ValueError):
    """The code object's bytecode is not something the decoder understands."""


def localsplus_names(fields: Mapping[str, Sequence[str]]) -> List[str]:
    """Names indexed by LOAD_DEREF & co, from a code's (or code options') name fields:
    cell+free (<3.11) or all locals+cells+frees (3.11+)."""
    if not BEHAVIOUR.cells_are_locals:
        return list(fields["co_cellvars"]) + list(fields["co_freevars"])
    names = list(fields["co_varnames"])
    names += [c for c in fields["co_cellvars"] if c not in names]
    return names + list(fields["co_freevars"])


# dis's view of recently decoded code objects, by identity (equal code objects may differ in
# their line tables): a frame is decoded again for every trace, restart and inlined call,
# and dis.get_instructions was most of that
_TABLES: "collections.OrderedDict[int, Tuple[types.CodeType, Dict[int, Any], List[Any]]]" = collections.OrderedDict()
_TABLES_KEPT = 256


def _tables(code: types.CodeType) -> Tuple[Dict[int, Any], List[Any]]:
    """``dis``'s (argval, argrepr) per instruction offset, and the positions per code unit."""
    found = _TABLES.get(id(code))
    if found is not None and found[0] is code:
        _TABLES.move_to_end(id(code))
        return found[1], found[2]
    info = {i.offset: (i.argval, i.argrepr) for i in dis.get_instructions(code)}
    units = unit_positions(code)
    _TABLES[id(code)] = (code, info, units)
    if len(_TABLES) > _TABLES_KEPT:
        _TABLES.popitem(last=False)
    return info, units


def decode(code: types.CodeType) -> List[Instruction]:
    """Decode ``code``; EXTENDED_ARG prefixes and inline caches are folded into instructions."""
    raw = code.co_code
    info, units = _tables(code)
    insts: List[Instruction] = []
    by_start: Dict[int, Instruction] = {}
    op_offsets: List[int] = []
    names = {f: getattr(code, f) for f in ("co_varnames", "co_cellvars", "co_freevars")}
    first_free = len(localsplus_names(names)) - len(code.co_freevars)
    i = 0
    ext = 0
    n_ext = 0
    start = 0
    while i < len(raw):
        op = raw[i]
        if op == EXTENDED_ARG:
            if n_ext == 0:
                start = i
            ext = (ext | raw[i + 1]) << 8
            n_ext += 1
            i += 2
            continue
        if n_ext == 0:
            start = i
        # no-argument opcodes may still carry a stray byte: keep it for byte-exact output
        arg = (ext | raw[i + 1]) if has_arg(op) else (raw[i + 1] or None)
        d = info.get(i)
        where = units[i // 2] if i // 2 < len(units) else None
        inst = Instruction(
            op,
            opcode.opname[op],
            arg,
            d[0] if d is not None else None,
            offset=start,
            positions=where,
            argrepr=d[1] if d is not None else "",
            min_ext=n_ext,
        )
        if n_ext and units[start // 2] != where:
            inst.prefix_positions = (units[start // 2], where)
        DECODER.fill(inst, code.co_consts)
        if (
            arg is not None
            and arg >= first_free
            and (op in CELL_OPS or (BEHAVIOUR.cells_are_locals and op in SINGLE_LOCAL_OPS))
        ):
            inst.free_var = True
        insts.append(inst)
        by_start[start] = inst
        op_offsets.append(i)
        ext = 0
        n_ext = 0
        i += 2 + 2 * cache_entries(op)

    for inst, op_off in zip(insts, op_offsets):
        if inst.opcode in JUMPS:
            t = jump_target_offset(inst.opcode, inst.arg or 0, op_off)
            target = by_start.get(t)
            if target is None:
                raise BytecodeDecodeError(
                    f"{code.co_name}: {inst.opname} at {op_off} jumps to {t}, which starts no instruction"
                )
            inst.target = target
    if BEHAVIOUR.exception_table:
        starts = [inst.offset for inst in insts]
        for e in parse_exception_table(code.co_exceptiontable):
            handler = by_start.get(e.target)
            if handler is None:
                raise BytecodeDecodeError(f"{code.co_name}: exception handler at {e.target} starts no instruction")
            entry = ExnTabEntry(handler, e.depth, e.lasti)
            # instructions are in offset order: only those of the entry's range are visited
            k = bisect.bisect_left(starts, e.start)
            while k < len(insts) and starts[k] < e.end:
                insts[k].exn_tab_entry = entry
                k += 1
    return insts
