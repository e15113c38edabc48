"""Instructions with resolved jump targets, locations and exception-table entries."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, FrozenSet, NamedTuple, Optional, Tuple

from .opcodes import JUMPS

__all__ = ["Instruction", "ExnTabEntry", "Positions", "inst_str"]


class Positions(NamedTuple):
    lineno: Optional[int]
    end_lineno: Optional[int]
    col_offset: Optional[int]
    end_col_offset: Optional[int]


@dataclass(eq=False)
class ExnTabEntry:
    """The handler an instruction jumps to when it raises (3.11+)."""

    target: "Instruction"
    depth: int
    lasti: bool

    def key(self) -> tuple:
        return (id(self.target), self.depth, self.lasti)


@dataclass(eq=False)
class Instruction:
    """One instruction; EXTENDED_ARG prefixes and inline caches are folded into it.

    ``arg`` is the full argument. ``target`` replaces the jump argument: the assembler
    recomputes it. ``positions`` carries the line (and, 3.11+, columns) of the instruction.
    Equality is identity: instructions are graph nodes.
    """

    opcode: int
    opname: str
    arg: Optional[int] = None
    argval: Any = None
    offset: Optional[int] = None
    positions: Optional[Positions] = None
    target: Optional["Instruction"] = None
    exn_tab_entry: Optional[ExnTabEntry] = None
    argrepr: str = field(default="", repr=False)
    # EXTENDED_ARG prefixes the original carried; the assembler never emits fewer, so an
    # untouched code object re-assembles byte for byte
    min_ext: int = field(default=0, repr=False)
    # low bits under a name or comparison index, kept when ``arg`` is resolved from
    # ``argval`` (the push-NULL, method and to-bool bits); filled on decode
    flags: int = field(default=0, repr=False)
    # -- the argument's meaning, decoded once (``arguments.py``); defaults for other opcodes
    #: pushes the call's NULL-or-self slot with the value (global, method or attribute)
    push_null: bool = field(default=False, repr=False)
    #: loads a method: the slot holds the object when the attribute is a plain method
    is_method: bool = field(default=False, repr=False)
    #: a comparison whose result is converted to bool
    to_bool: bool = field(default=False, repr=False)
    #: formatting pops a format spec
    format_spec: bool = field(default=False, repr=False)
    #: formatting converts first: "str", "repr" or "ascii" ("" or None: no conversion)
    conversion: Optional[str] = field(default=None, repr=False)
    #: CALL_FUNCTION_EX pops a mapping of keyword arguments
    call_kwargs: bool = field(default=False, repr=False)
    #: IS_OP / CONTAINS_OP negate ("is not", "not in")
    invert: bool = field(default=False, repr=False)
    #: UNPACK_EX: how many values before and after the starred target
    unpack: Tuple[int, int] = field(default=(0, 0), repr=False)
    #: MAKE_FUNCTION / SET_FUNCTION_ATTRIBUTE: "closure", "annotations", "kwdefaults", "defaults"
    function_parts: FrozenSet[str] = field(default=frozenset(), repr=False)
    #: a binary operator's symbol ("+", "+=", ...)
    binary_op: Optional[str] = field(default=None, repr=False)
    #: KW_NAMES: the keyword names of the next call
    kw_names: Optional[Tuple[str, ...]] = field(default=None, repr=False)
    #: a cell access naming the code's free variable: a name can be both a cell and a free
    #: variable (``__class__`` of a class body nested in a method), and only this tells them apart
    free_var: bool = field(default=False, repr=False)
    #: the location of the EXTENDED_ARG prefixes when the compiler gave them another one
    #: than the instruction (3.9 does, rarely), with the instruction's location it goes
    #: with: a transform that moves the instruction to another line drops it
    prefix_positions: Optional[Tuple[Optional[Positions], Optional[Positions]]] = field(default=None, repr=False)
    # -- the version-independent view (``kinds.py``): what the instruction does
    #: its ``Kind``
    kind: str = field(default="", repr=False)
    #: BRANCH: when it jumps ("false", "true", "none", "not none")
    condition: Optional[str] = field(default=None, repr=False)
    #: BRANCH: the operand stays on the stack when it jumps (3.9-3.11's JUMP_IF_*_OR_POP)
    keeps_operand: bool = field(default=False, repr=False)
    #: COPY / SWAP / ROTATE: how deep into the stack (1: the top)
    depth: int = field(default=0, repr=False)
    #: COPY / SWAP / ROTATE: the depth is the opcode's own (3.9/3.10's DUP_TOP, ROT_TWO,
    #: ROT_THREE, ROT_FOUR), not its argument (COPY, SWAP, ROT_N); 3.10's compiler leaves
    #: stray argument bytes on the fixed ones, so ``arg`` cannot tell them apart
    fixed_depth: bool = field(default=False, repr=False)
    #: UNARY: "-", "+", "~" or "not"
    unary: Optional[str] = field(default=None, repr=False)
    #: CALL: the callable sits under a NULL-or-self slot
    call_slot: bool = field(default=False, repr=False)
    #: CALL: a tuple of keyword names is on top of the arguments
    call_names: bool = field(default=False, repr=False)
    #: CALL_INTRINSIC / CALL_INTRINSIC_2: the intrinsic's name
    intrinsic: Optional[str] = field(default=None, repr=False)
    #: LOAD_CONST: a constant of the interpreter's own (3.14+'s LOAD_COMMON_CONSTANT:
    #: AssertionError, builtins), not one of the code's
    common_constant: bool = field(default=False, repr=False)

    @property
    def lineno(self) -> Optional[int]:
        return self.positions.lineno if self.positions is not None else None

    def is_jump(self) -> bool:
        return self.opcode in JUMPS

    def __repr__(self) -> str:
        return inst_str(self)


def inst_str(inst: Instruction) -> str:
    text = f"{inst.opname}"
    if inst.target is not None:
        text += f" -> {inst.target.opname}@{inst.target.offset}"
    elif inst.arg is not None or inst.argval is not None:
        text += f" {inst.argrepr or repr(inst.argval)}"
    if inst.offset is not None:
        text = f"{inst.offset:>5} {text}"
    return text
