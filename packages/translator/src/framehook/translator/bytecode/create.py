"""New instructions: created by name, or copied from another, with their arguments decoded
(kind and operands) as the decoder does for read ones."""

from __future__ import annotations

import opcode
from typing import Any, Optional

from .arguments import DECODER
from .instructions import Instruction, Positions
from .opcodes import JUMPS, has_arg

__all__ = ["copy_instruction", "create_instruction", "create_jump"]


def create_instruction(
    name: str,
    *,
    arg: Optional[int] = None,
    argval: Any = None,
    target: Optional[Instruction] = None,
    flags: int = 0,
    positions: Optional[Positions] = None,
) -> Instruction:
    """A new instruction; give ``arg`` or ``argval`` (names/constants are resolved when assembled)."""
    if name not in opcode.opmap:
        raise ValueError(f"unknown opcode {name!r} on this Python")
    op = opcode.opmap[name]
    if not has_arg(op) and (arg not in (None, 0) or argval is not None):
        raise ValueError(f"{name} takes no argument")
    if target is not None and op not in JUMPS:
        raise ValueError(f"{name} is not a jump; it cannot have a target")
    inst = Instruction(op, name, arg, argval, target=target, positions=positions, flags=flags)
    DECODER.fill(inst)
    return inst


def copy_instruction(inst: Instruction) -> Instruction:
    """The same operation with its decoded fields, not yet placed: no offset, jump target
    or exception handler (the caller points them at copies)."""
    new = Instruction.__new__(Instruction)  # every field as is (cheaper than dataclasses.replace), then
    new.__dict__.update(inst.__dict__)  # the placement cleared
    new.offset = new.target = new.exn_tab_entry = None
    new.argrepr = ""
    new.min_ext = 0
    return new


def create_jump(name: str, target: Instruction) -> Instruction:
    return create_instruction(name, target=target)
