"""The decompiler's handlers of values computed from values: operators and comparisons,
displays (tuple, list, set, dict) and f-strings and t-strings (a mixin of the walker)."""

from __future__ import annotations

import dis
from typing import Any, List, Optional, Tuple

from ..bytecode.instructions import Instruction
from ..bytecode.kinds import Kind, encode
from .stack_values import (
    BINARY_PREC,
    CONVERSIONS,
    P_AWAIT,
    P_CMP,
    P_NOT,
    P_UNARY,
    At,
    DecompileError,
    Display,
    Expr,
    Formatted,
    FString,
    Interpolation,
    Lines,
    Slice,
    handles,
)

__all__ = ["OperatorsMixin"]

#: the display each build instruction starts
_DISPLAYS = {Kind.BUILD_TUPLE: "tuple", Kind.BUILD_LIST: "list", Kind.BUILD_SET: "set"}
#: instructions adding to a display below them: those that unpack their operand into it
_STARRED = frozenset({Kind.LIST_EXTEND, Kind.SET_UPDATE})
#: the running CPython's one-argument intrinsic call (None before 3.12): its messages
#: name the intrinsic too
_INTRINSIC_1 = encode(Kind.CALL_INTRINSIC)


class OperatorsMixin:
    # ---------------------------------------------------------------- operators
    @handles(Kind.BINARY_OP)
    def binary(self, at: At, inst: Instruction, stack: List[Any], out: Lines) -> Optional[int]:
        sym = inst.binary_op
        right = self.render(self.pop_expr(stack))
        left = self.render(self.pop_expr(stack))
        if sym.endswith("=") and sym not in ("==", "!=", "<=", ">="):
            stack.append(Expr("", stable=False, inplace=(left, sym, right)))
            return None
        prec = BINARY_PREC[sym]
        if sym == "**":
            text = f"{self.value(left, P_AWAIT)} ** {self.value(right, P_UNARY)}"
        else:
            text = f"{self.value(left, prec)} {sym} {self.value(right, prec + 1)}"
        stack.append(Expr(text, prec))
        return None

    @handles(Kind.UNARY)
    def unary(self, at: At, inst: Instruction, stack: List[Any], out: Lines) -> Optional[int]:
        if inst.unary == "not":
            v = self.render(self.pop_expr(stack))
            inner = Expr(v.text, v.prec) if v.truth else v
            stack.append(Expr(f"not {self.value(inner, P_NOT)}", P_NOT))
        else:
            v = self.pop_expr(stack)
            stack.append(Expr(f"{inst.unary}{self.value(v, P_UNARY)}", P_UNARY))
        return None

    @handles(Kind.TO_BOOL)
    def to_bool(self, at: At, inst: Instruction, stack: List[Any], out: Lines) -> Optional[int]:
        v = self.render(self.pop_expr(stack))
        stack.append(v if v.truth or v.prec == P_NOT else Expr(v.text, v.prec, truth=True))
        return None

    @handles(Kind.COMPARE)
    def compare(self, at: At, inst: Instruction, stack: List[Any], out: Lines) -> Optional[int]:
        right = self.pop_expr(stack)
        left = self.pop_expr(stack)
        sym = inst.argval if isinstance(inst.argval, str) else dis.cmp_op[inst.arg or 0]
        text = f"{self.value(left, P_CMP + 1)} {sym} {self.value(right, P_CMP + 1)}"
        stack.append(Expr(text, P_CMP, truth=inst.to_bool))
        return None

    @handles(Kind.IS, Kind.CONTAINS)
    def identity(self, at: At, inst: Instruction, stack: List[Any], out: Lines) -> Optional[int]:
        right = self.pop_expr(stack)
        left = self.pop_expr(stack)
        if inst.kind == Kind.IS:
            sym = "is not" if inst.invert else "is"
        else:
            sym = "not in" if inst.invert else "in"
        stack.append(Expr(f"{self.value(left, P_CMP + 1)} {sym} {self.value(right, P_CMP + 1)}", P_CMP))
        return None

    @handles(Kind.CALL_INTRINSIC, Kind.PRINT_EXPR, Kind.IMPORT_STAR)
    def unhandled_intrinsic(self, at: At, inst: Instruction, stack: List[Any], out: Lines) -> Optional[int]:
        if inst.opname == _INTRINSIC_1:
            raise DecompileError(f"{inst.opname} {inst.intrinsic or '?'} is not handled")
        raise DecompileError(f"{inst.opname} is not handled")

    # ---------------------------------------------------------------- displays
    @handles(Kind.BUILD_TUPLE, Kind.BUILD_LIST, Kind.BUILD_SET)
    def build(self, at: At, inst: Instruction, stack: List[Any], out: Lines) -> Optional[int]:
        items = [self.pop_expr(stack) for _ in range(inst.arg or 0)][::-1]
        kind = _DISPLAYS[inst.kind]
        if kind == "tuple" and any(isinstance(v, (Slice, Interpolation)) for v in items):
            stack.append(Display("tuple", [("", v) for v in items]))  # a subscript key, a t-string
        else:
            stack.append(Display(kind, [("", self.render(v)) for v in items]))
        return None

    @handles(Kind.BUILD_MAP)
    def build_map(self, at: At, inst: Instruction, stack: List[Any], out: Lines) -> Optional[int]:
        items = [self.pop_expr(stack) for _ in range(2 * (inst.arg or 0))][::-1]
        pairs = [(self.render(items[i]), self.render(items[i + 1])) for i in range(0, len(items), 2)]
        stack.append(Display("dict", pairs))
        return None

    @handles(Kind.BUILD_CONST_KEY_MAP)
    def build_const_key_map(self, at: At, inst: Instruction, stack: List[Any], out: Lines) -> Optional[int]:
        keys = self.render(self.pop_expr(stack))
        values = [self.render(self.pop_expr(stack)) for _ in range(inst.arg or 0)][::-1]
        if not keys.is_const or type(keys.const) is not tuple:
            raise DecompileError(f"{inst.opname} without a constant tuple of keys")
        stack.append(Display("dict", [(self.const(kv), v) for kv, v in zip(keys.const, values)]))
        return None

    @handles(
        Kind.LIST_APPEND,
        Kind.SET_ADD,
        Kind.LIST_EXTEND,
        Kind.SET_UPDATE,
        Kind.DICT_UPDATE,
        Kind.DICT_MERGE,
        Kind.MAP_ADD,
    )
    def extend_display(self, at: At, inst: Instruction, stack: List[Any], out: Lines) -> Optional[int]:
        if inst.kind == Kind.MAP_ADD:
            value = self.render(self.pop_expr(stack))
            key = self.render(self.pop_expr(stack))
            items: List[Tuple[Any, Any]] = [(key, value)]
        else:
            v = self.render(self.pop_expr(stack))
            star = inst.kind in _STARRED
            if inst.kind in (Kind.DICT_UPDATE, Kind.DICT_MERGE):
                items = [("**", v)]
            elif star and v.is_const and type(v.const) in (tuple, frozenset):
                items = [("", self.const(x)) for x in v.const]  # [1, 2, 3] is BUILD_LIST + LIST_EXTEND (1, 2, 3)
            else:
                items = [("*" if star else "", v)]
        arg = inst.arg or 0
        d = stack[-arg]
        if not isinstance(d, Display):
            raise DecompileError(f"{inst.opname} into something other than a display being built")
        stack[-arg] = Display(d.kind, d.items + items)
        return None

    @handles(Kind.LIST_TO_TUPLE)
    def list_to_tuple(self, at: At, inst: Instruction, stack: List[Any], out: Lines) -> Optional[int]:
        d = stack.pop()
        if not isinstance(d, Display) or d.kind != "list":
            # (the opcode and the intrinsic that replaced it say the same)
            raise DecompileError("LIST_TO_TUPLE of something other than a list display")
        stack.append(Display("tuple", d.items))
        return None

    # ---------------------------------------------------------------- f-strings and t-strings
    @handles(Kind.CONVERT)
    def convert(self, at: At, inst: Instruction, stack: List[Any], out: Lines) -> Optional[int]:
        v = self.pop_expr(stack)
        stack.append(Formatted(self.render(v), CONVERSIONS[inst.conversion or ""]))
        return None

    @handles(Kind.FORMAT)
    def format(self, at: At, inst: Instruction, stack: List[Any], out: Lines) -> Optional[int]:
        spec = None
        if inst.format_spec:
            spec = stack.pop()
            if not isinstance(spec, (FString, Formatted, Expr)):
                raise DecompileError("a format spec that is not a string")
        v = stack.pop()
        conv = CONVERSIONS.get(inst.conversion or "")
        if isinstance(v, Formatted) and v.spec is None and conv is None:
            stack.append(Formatted(v.value, v.conv, spec))
        elif isinstance(v, Expr):
            stack.append(Formatted(v, conv, spec))
        else:
            raise DecompileError(f"{inst.opname} of something that is not a value")
        return None

    @handles(Kind.BUILD_STRING)
    def build_string(self, at: At, inst: Instruction, stack: List[Any], out: Lines) -> Optional[int]:
        parts: List[Any] = []
        for v in [stack.pop() for _ in range(inst.arg or 0)][::-1]:
            if isinstance(v, FString):
                parts += v.parts
            elif isinstance(v, (Formatted, Expr)):
                parts.append(v)
            else:
                raise DecompileError(f"{inst.opname} of a value that is not a string piece")
        stack.append(FString(parts))
        return None

    @handles(Kind.BUILD_INTERPOLATION)
    def build_interpolation(self, at: At, inst: Instruction, stack: List[Any], out: Lines) -> Optional[int]:
        spec = stack.pop() if inst.format_spec else None
        if spec is not None and not isinstance(spec, (FString, Formatted, Expr)):
            raise DecompileError("a format spec that is not a string")
        expression = self.pop_expr(stack)
        if not (isinstance(expression, Expr) and expression.is_const and type(expression.const) is str):
            raise DecompileError(f"{inst.opname} whose expression text is not a str literal")
        value = self.render(self.pop_expr(stack))
        stack.append(Interpolation(value, expression.const, CONVERSIONS.get(inst.conversion or ""), spec))
        return None

    @handles(Kind.BUILD_TEMPLATE)
    def build_template(self, at: At, inst: Instruction, stack: List[Any], out: Lines) -> Optional[int]:
        interpolations = stack.pop()
        stack.append(self.template(stack.pop(), interpolations))
        return None
