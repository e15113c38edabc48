"""The running CPython's opcode tables: argument and cache sizes, jump kinds and jump
arithmetic, stack effects (read from ``opcode``/``dis``, shaped by ``behaviour``)."""

from __future__ import annotations

import dis
import opcode
from typing import Dict, FrozenSet, Optional, Tuple

from .behaviour import BEHAVIOUR
from .kinds import BRANCH_CONDITIONS, KEEPS_OPERAND, Kind, encodings

EXTENDED_ARG = opcode.opmap["EXTENDED_ARG"]
HAVE_ARGUMENT = opcode.HAVE_ARGUMENT


def _cache_table() -> Dict[int, int]:
    table: Dict[int, int] = {}
    raw = getattr(opcode, "_inline_cache_entries", None)
    if raw is None:
        return table
    if hasattr(raw, "items"):  # by name (3.13+; a frozendict on 3.15)
        for name, n in raw.items():
            if name in opcode.opmap and n:
                table[opcode.opmap[name]] = n
    else:  # a list indexed by opcode
        for op, n in enumerate(raw):
            if n:
                table[op] = n
    return table


_CACHES = _cache_table()


def cache_entries(op: int) -> int:
    """Inline cache code units after ``op`` (0 before 3.11)."""
    return _CACHES.get(op, 0)


_HASARG: Optional[FrozenSet[int]] = frozenset(opcode.hasarg) if hasattr(opcode, "hasarg") else None


def has_arg(op: int) -> bool:
    if _HASARG is not None:  # opcode numbers no longer split at HAVE_ARGUMENT everywhere
        return op in _HASARG
    return op >= HAVE_ARGUMENT


_names = set(opcode.opmap)
JREL: FrozenSet[int] = frozenset(opcode.hasjrel)
JABS: FrozenSet[int] = frozenset(opcode.hasjabs)
JUMPS: FrozenSet[int] = JREL | JABS
# END_ASYNC_FOR's "jump" names the SEND its loop came from: it counts backward too
BACKWARD: FrozenSet[int] = frozenset(
    op for name, op in opcode.opmap.items() if "JUMP_BACKWARD" in name or (name == "END_ASYNC_FOR" and op in JREL)
)


def _real(names: "Tuple[str, ...] | FrozenSet[str]") -> FrozenSet[str]:
    """The names the running CPython writes into code objects (not the compiler's
    pseudo-instructions, numbered from 256)."""
    return frozenset(n for n in names if n in opcode.opmap and opcode.opmap[n] < 256)


UNCONDITIONAL: FrozenSet[int] = frozenset(opcode.opmap[n] for n in _real(encodings(Kind.JUMP)))
TERMINAL: FrozenSet[int] = frozenset(
    opcode.opmap[n] for n in ("RETURN_VALUE", "RETURN_CONST", "RAISE_VARARGS", "RERAISE") if n in _names
)


def jump_target_offset(op: int, arg: int, op_offset: int) -> int:
    """Byte offset a jump goes to, given the offset of its (last) opcode unit."""
    after = op_offset + 2 + 2 * cache_entries(op)
    if op in JABS:
        return 2 * arg if BEHAVIOUR.jumps_count_units else arg
    if not BEHAVIOUR.jumps_count_units:
        return after + arg
    if op in BACKWARD:
        return after - 2 * arg
    return after + 2 * arg


def jump_arg(op: int, target: int, op_offset: int) -> int:
    """Inverse of jump_target_offset; negative when the jump cannot reach (wrong direction)."""
    after = op_offset + 2 + 2 * cache_entries(op)
    if op in JABS:
        return target // 2 if BEHAVIOUR.jumps_count_units else target
    if not BEHAVIOUR.jumps_count_units:
        return target - after
    if op in BACKWARD:
        return (after - target) // 2
    return (target - after) // 2


# forward/backward twins, for retargeting a jump across its own position
_TWINS = {
    "JUMP_FORWARD": "JUMP_BACKWARD" if "JUMP_BACKWARD" in opcode.opmap else "JUMP_ABSOLUTE",
    "POP_JUMP_FORWARD_IF_FALSE": "POP_JUMP_BACKWARD_IF_FALSE",
    "POP_JUMP_FORWARD_IF_TRUE": "POP_JUMP_BACKWARD_IF_TRUE",
    "POP_JUMP_FORWARD_IF_NONE": "POP_JUMP_BACKWARD_IF_NONE",
    "POP_JUMP_FORWARD_IF_NOT_NONE": "POP_JUMP_BACKWARD_IF_NOT_NONE",
}


def flip_direction(op: int) -> Optional[int]:
    """The twin of a relative jump that goes the other way, or None if there is none."""
    name = opcode.opname[op]
    for fwd, back in _TWINS.items():
        if name == fwd and back in opcode.opmap:
            return opcode.opmap[back]
        if name == back and fwd in opcode.opmap:
            return opcode.opmap[fwd]
    return None


def stack_effect(op: int, arg: Optional[int], jump: Optional[bool] = None) -> int:
    if has_arg(op):
        return dis.stack_effect(op, arg or 0, jump=jump)
    return dis.stack_effect(op, jump=jump)


#: opcodes doing what another one does (they differ in reference counting only): the
#: name to read them as
SYNONYMS: Dict[str, str] = {
    name: plain
    for name, plain in (("LOAD_FAST_BORROW", "LOAD_FAST"), ("LOAD_FAST_BORROW_LOAD_FAST_BORROW", "LOAD_FAST_LOAD_FAST"))
    if name in opcode.opmap
}

#: conditional jumps by when they jump: "false", "true", "none" or "not none" (every
#: version's spellings, 3.11's FORWARD/BACKWARD ones included)
JUMP_CONDITIONS: Dict[str, str] = {n: when for n, when in BRANCH_CONDITIONS.items() if n in _real(BRANCH_CONDITIONS)}
#: conditional jumps that leave their operand on the stack when they jump (3.9-3.11)
KEEPS_OPERAND_ON_JUMP: FrozenSet[str] = _real(KEEPS_OPERAND)
#: instructions that begin entering a with block (3.14+ fetches ``__enter__`` and
#: ``__exit__`` with LOAD_SPECIAL)
WITH_ENTRIES: FrozenSet[str] = frozenset(
    n for kind in (Kind.WITH_ENTER, Kind.ASYNC_WITH_ENTER, Kind.LOAD_SPECIAL) for n in encodings(kind)
)
#: instructions that change nothing the code computes: no stack effect, no value
NO_OPS: FrozenSet[str] = frozenset({"NOP", "RESUME", "CACHE", "EXTENDED_ARG", "NOT_TAKEN"})

#: two-local instructions: the two one-local instructions each stands for
PAIRED_LOCALS: Dict[str, Tuple[str, str]] = {
    name: pair
    for name, pair in (
        ("LOAD_FAST_LOAD_FAST", ("LOAD_FAST", "LOAD_FAST")),
        ("STORE_FAST_LOAD_FAST", ("STORE_FAST", "LOAD_FAST")),
        ("STORE_FAST_STORE_FAST", ("STORE_FAST", "STORE_FAST")),
        ("LOAD_FAST_BORROW_LOAD_FAST_BORROW", ("LOAD_FAST_BORROW", "LOAD_FAST_BORROW")),
    )
    if name in opcode.opmap
}

#: opcodes whose argument indexes a cell or free variable (3.14's ``opcode.haslocal``
#: lists LOAD_DEREF and LOAD_CLOSURE among the plain locals)
CELL_OPS: FrozenSet[int] = frozenset(opcode.hasfree) | frozenset(
    opcode.opmap[n] for n in ("LOAD_DEREF", "LOAD_CLOSURE") if n in opcode.opmap
)
#: opcodes whose argument indexes a plain local
LOCAL_OPS: FrozenSet[int] = frozenset(opcode.haslocal) - CELL_OPS
#: plain-local opcodes whose argument is one index (the paired ones pack two)
SINGLE_LOCAL_OPS: FrozenSet[int] = LOCAL_OPS - frozenset(opcode.opmap[n] for n in PAIRED_LOCALS)

#: "jumps" whose target only names where they came from: control never goes there
#: (3.14+'s END_ASYNC_FOR points back at its loop's SEND, for sys.monitoring)
NOT_BRANCHES: FrozenSet[int] = frozenset(op for op in JREL if opcode.opname[op] == "END_ASYNC_FOR")
#: jumps that control can take
BRANCHES: FrozenSet[int] = JUMPS - NOT_BRANCHES
