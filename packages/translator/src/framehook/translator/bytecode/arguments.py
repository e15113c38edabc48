"""What an instruction's argument means, decoded once per instruction.

One decoder per CPython version turns the raw argument bits into named fields of the
``Instruction`` (``push_null``, ``is_method``, ``to_bool``, ``format_spec``, ...) and
encodes a name or comparison index back with the instruction's ``flags``. Every other
module reads the fields; only this module and ``behaviour.py`` know how the bits are laid
out on each version.
"""

from __future__ import annotations

import dis
import opcode
from typing import Any, Dict, FrozenSet, Optional, Sequence, Tuple, Type

from .behaviour import VERSION
from .instructions import Instruction
from .kinds import (
    BRANCH_CONDITIONS,
    CALLS_WITH_NAMES,
    CALLS_WITH_SLOT,
    COPY_DEPTHS,
    DECODE,
    INTRINSIC_KINDS,
    KEEPS_OPERAND,
    OLD_BINARY_OPS,
    UNARY_OPERATORS,
    Kind,
)

__all__ = ["ArgumentDecoder", "DECODER", "decoder_for", "FUNCTION_PARTS", "OLD_BINARY_OPS", "SUPPORTED_VERSIONS"]

#: MAKE_FUNCTION / SET_FUNCTION_ATTRIBUTE bits, in the order MAKE_FUNCTION pops them
FUNCTION_PARTS: Tuple[Tuple[int, str], ...] = (
    (0x10, "annotate"),
    (0x08, "closure"),
    (0x04, "annotations"),
    (0x02, "kwdefaults"),
    (0x01, "defaults"),
)


_CONVERSIONS = ("", "str", "repr", "ascii")


def _parts(bits: int) -> FrozenSet[str]:
    return frozenset(name for bit, name in FUNCTION_PARTS if bits & bit)


class ArgumentDecoder:
    """3.9 and 3.10: names, constants and comparisons are plain indices."""

    #: low bits under the name index, by opcode name
    name_low_bits: Dict[str, int] = {}
    #: low bits under the comparison index of COMPARE_OP
    compare_low_bits = 0

    def fill(self, inst: Instruction, consts: Optional[Sequence[Any]] = None) -> None:
        """Set ``inst``'s decoded fields from its ``arg`` (or, when the argument is still
        to be resolved from ``argval``, from its ``flags``)."""
        name = inst.opname
        arg = inst.arg
        low = self.low_bits(name)
        if low:
            flags = (arg & ((1 << low) - 1)) if arg is not None else inst.flags
            inst.flags = flags
        self.decode(inst, name, arg or 0, inst.flags, consts)
        self.decode_kind(inst, name, arg)

    def decode_kind(self, inst: Instruction, name: str, arg: Optional[int]) -> None:
        """Set ``inst.kind`` and the operands the kind reads."""
        kind = DECODE.get(name, Kind.INTERNAL)
        if kind == Kind.BRANCH:
            inst.condition = BRANCH_CONDITIONS[name]
            inst.keeps_operand = name in KEEPS_OPERAND
        elif kind == Kind.CALL:
            inst.call_slot = name in CALLS_WITH_SLOT
            inst.call_names = name in CALLS_WITH_NAMES
        elif kind in (Kind.COPY, Kind.SWAP, Kind.ROTATE):
            inst.fixed_depth = name in COPY_DEPTHS
            inst.depth = COPY_DEPTHS[name] if inst.fixed_depth else arg or 0
        elif kind == Kind.UNARY:
            inst.unary = UNARY_OPERATORS[name]
        elif kind == Kind.LOAD_CONST:
            inst.common_constant = name == "LOAD_COMMON_CONSTANT"
        elif kind == Kind.BINARY_OP and inst.binary_op == "[]":
            kind = Kind.SUBSCR
        elif kind in (Kind.CALL_INTRINSIC, Kind.CALL_INTRINSIC_2) and arg is not None:
            table = "_intrinsic_1_descs" if kind == Kind.CALL_INTRINSIC else "_intrinsic_2_descs"
            descs = getattr(dis, table, ())
            inst.intrinsic = descs[arg] if 0 <= arg < len(descs) else None
            if kind == Kind.CALL_INTRINSIC and inst.intrinsic in INTRINSIC_KINDS:
                kind = INTRINSIC_KINDS[inst.intrinsic]
                inst.unary = UNARY_OPERATORS.get(inst.intrinsic)
        inst.kind = kind

    def low_bits(self, name: str) -> int:
        if name == "COMPARE_OP":
            return self.compare_low_bits
        return self.name_low_bits.get(name, 0)

    def encode_index(self, name: str, index: int, flags: int) -> int:
        """The argument of ``name`` for a name or comparison ``index`` with ``flags`` below it."""
        return (index << self.low_bits(name)) | flags

    def binary_op_arg(self, symbol: str) -> int:
        """BINARY_OP's argument for the operator ``symbol`` ("+", "+=", "[]", ...)."""
        for i, (_, sym) in enumerate(getattr(dis, "_nb_ops", ())):
            if sym == symbol:
                return i
        raise ValueError(f"BINARY_OP has no operator {symbol!r} on this Python")

    def encode_value(self, name: str, value: Any) -> Optional[int]:
        """The argument of ``name`` that stands for ``value`` (LOAD_SMALL_INT, LOAD_SPECIAL,
        ...), or None when ``name`` takes no such argument or ``value`` has none."""
        if name == "LOAD_SMALL_INT":
            return value if type(value) is int and 0 <= value < 256 else None
        if name == "LOAD_SPECIAL":
            names = tuple(getattr(opcode, "_special_method_names", ()))
            return names.index(value) if value in names else None
        if name == "LOAD_COMMON_CONSTANT":
            for i, c in enumerate(getattr(opcode, "_common_constants", ())):
                if c is value:
                    return i
        return None

    def decode(self, inst: Instruction, name: str, arg: int, flags: int, consts: Optional[Sequence[Any]]) -> None:
        if name == "LOAD_METHOD":
            inst.is_method = inst.push_null = True
        elif name == "FORMAT_VALUE":
            inst.format_spec = bool(arg & 0x04)
            inst.conversion = _CONVERSIONS[arg & 0x03]
        elif name == "FORMAT_WITH_SPEC":
            inst.format_spec = True
        elif name == "CONVERT_VALUE":
            inst.conversion = _CONVERSIONS[arg] if 0 < arg < len(_CONVERSIONS) else None
        elif name == "CALL_FUNCTION_EX":
            inst.call_kwargs = bool(arg & 0x01)
        elif name in ("IS_OP", "CONTAINS_OP"):
            inst.invert = bool(arg)
        elif name == "UNPACK_EX":
            inst.unpack = (arg & 0xFF, arg >> 8)
        elif name == "MAKE_FUNCTION":
            inst.function_parts = _parts(arg)
        elif name == "SET_FUNCTION_ATTRIBUTE":
            inst.function_parts = _parts(arg)
        elif name == "BINARY_OP":
            inst.binary_op = dis._nb_ops[arg][1]  # type: ignore[attr-defined]
        elif name in OLD_BINARY_OPS:
            inst.binary_op = OLD_BINARY_OPS[name]
        elif name == "KW_NAMES":
            value = inst.argval
            if not isinstance(value, tuple) and consts is not None and inst.arg is not None:
                value = consts[inst.arg]
            inst.kw_names = value if isinstance(value, tuple) else None


class NullSlotDecoder(ArgumentDecoder):
    """3.11: LOAD_GLOBAL's lowest bit pushes a NULL (the call's NULL-or-self slot)."""

    name_low_bits = {"LOAD_GLOBAL": 1}

    def decode(self, inst: Instruction, name: str, arg: int, flags: int, consts: Optional[Sequence[Any]]) -> None:
        if name == "LOAD_GLOBAL":
            inst.push_null = bool(flags & 1)
        else:
            super().decode(inst, name, arg, flags, consts)


class MethodAttrDecoder(NullSlotDecoder):
    """3.12: LOAD_ATTR's lowest bit loads a method; LOAD_SUPER_ATTR has two low bits;
    COMPARE_OP's index sits above four bits."""

    name_low_bits = {"LOAD_GLOBAL": 1, "LOAD_ATTR": 1, "LOAD_SUPER_ATTR": 2}
    compare_low_bits = 4

    def decode(self, inst: Instruction, name: str, arg: int, flags: int, consts: Optional[Sequence[Any]]) -> None:
        if name in ("LOAD_ATTR", "LOAD_SUPER_ATTR"):
            inst.is_method = inst.push_null = bool(flags & 1)
        else:
            super().decode(inst, name, arg, flags, consts)


class BoolCompareDecoder(MethodAttrDecoder):
    """3.13: COMPARE_OP's bit 16 converts the result to bool (the index sits above five bits)."""

    compare_low_bits = 5

    def decode(self, inst: Instruction, name: str, arg: int, flags: int, consts: Optional[Sequence[Any]]) -> None:
        if name == "COMPARE_OP":
            inst.to_bool = bool(flags & 16)
        else:
            super().decode(inst, name, arg, flags, consts)


class SlotCallDecoder(BoolCompareDecoder):
    """3.14: CALL_FUNCTION_EX has no argument (its kwargs slot is always there, NULL when
    empty); LOAD_SMALL_INT's argument is the value; LOAD_SPECIAL's names a special method;
    SET_FUNCTION_ATTRIBUTE's bit 16 sets ``__annotate__``; BUILD_INTERPOLATION's bit 0 pops
    a format spec and bits 2-3 are the conversion."""

    def decode(self, inst: Instruction, name: str, arg: int, flags: int, consts: Optional[Sequence[Any]]) -> None:
        if name == "CALL_FUNCTION_EX":
            inst.call_kwargs = True
        elif name == "BUILD_INTERPOLATION":
            inst.format_spec = bool(arg & 0x01)
            inst.conversion = _CONVERSIONS[(arg >> 2) & 0x03]
        elif name in _VALUE_ARGS and inst.arg is not None:
            inst.argval = _VALUE_ARGS[name](arg)
        else:
            super().decode(inst, name, arg, flags, consts)


def _special_method(arg: int) -> Optional[str]:
    names = getattr(opcode, "_special_method_names", ())
    return names[arg] if 0 <= arg < len(names) else None


def _common_constant(arg: int) -> Any:
    values = getattr(opcode, "_common_constants", ())
    return values[arg] if 0 <= arg < len(values) else None


#: opcodes whose argument stands for a value: how to read it
_VALUE_ARGS = {
    "LOAD_SMALL_INT": lambda arg: arg,
    "LOAD_SPECIAL": _special_method,
    "LOAD_COMMON_CONSTANT": _common_constant,
}


_DECODERS: Dict[Tuple[int, int], Type[ArgumentDecoder]] = {
    (3, 9): ArgumentDecoder,
    (3, 10): ArgumentDecoder,
    (3, 11): NullSlotDecoder,
    (3, 12): MethodAttrDecoder,
    (3, 13): BoolCompareDecoder,
    (3, 14): SlotCallDecoder,
    (3, 15): SlotCallDecoder,  # GET_ITER's new argument needs no decoding
}

#: the CPython (major, minor) versions whose bytecode this package reads, oldest first
SUPPORTED_VERSIONS: Tuple[Tuple[int, int], ...] = tuple(sorted(_DECODERS))


def decoder_for(version: Tuple[int, int]) -> ArgumentDecoder:
    try:
        return _DECODERS[tuple(version)]()  # type: ignore[index]
    except KeyError:
        supported = ", ".join("%d.%d" % v for v in SUPPORTED_VERSIONS)
        raise RuntimeError(
            f"framehook.translator has no bytecode decoder for CPython "
            f"{version[0]}.{version[1]}; supported: {supported}"
        ) from None


#: the running interpreter's decoder
DECODER = decoder_for(VERSION)
