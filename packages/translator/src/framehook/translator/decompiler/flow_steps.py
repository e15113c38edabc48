"""The decompiler's control and stack handlers: no-ops, jumps, ``if``, ``return``,
``raise``, discarded values and the stack shuffles (a mixin of the walker)."""

from __future__ import annotations

from dataclasses import replace
from typing import Any, List, Optional

from ..bytecode.instructions import Instruction
from ..bytecode.kinds import Kind
from .stack_values import (
    END,
    NULL,
    P_CMP,
    P_TEST,
    At,
    DecompileError,
    Expr,
    Lines,
    MethodHead,
    SelfSlot,
    Stuck,
    handles,
)

__all__ = ["FlowMixin"]


class FlowMixin:
    # ---------------------------------------------------------------- nothing to write
    # no-ops, and set-up whose work the rendered function does by being a function
    @handles(Kind.NOP, Kind.RESUME, Kind.COPY_FREE_VARS, Kind.MAKE_CELL)
    def skip(self, at: At, inst: Instruction, stack: List[Any], out: Lines) -> Optional[int]:
        return None

    @handles(Kind.JUMP)
    def jump(self, at: At, inst: Instruction, stack: List[Any], out: Lines) -> Optional[int]:
        return self.flow.index_of(inst.target)

    @handles(Kind.PUSH_NULL)
    def push_null(self, at: At, inst: Instruction, stack: List[Any], out: Lines) -> Optional[int]:
        stack.append(NULL)
        return None

    @handles(Kind.POP_TOP)
    def pop_top(self, at: At, inst: Instruction, stack: List[Any], out: Lines) -> Optional[int]:
        v = stack.pop()
        if v is NULL:
            return None
        e = self.render(v)
        if e.is_const and e.local is None:
            return None  # a constant evaluated for nothing
        self.stmt(out, stack, self.value(e))
        return None

    # ---------------------------------------------------------------- ends of a path
    @handles(Kind.RETURN)
    def return_value(self, at: At, inst: Instruction, stack: List[Any], out: Lines) -> Optional[int]:
        v = self.pop_expr(stack)
        self.stmt(out, stack, f"return {self.value(v)}")
        return END

    @handles(Kind.RETURN_CONST)
    def return_const(self, at: At, inst: Instruction, stack: List[Any], out: Lines) -> Optional[int]:
        self.stmt(out, stack, f"return {self.value(self.const(inst.argval))}")
        return END

    @handles(Kind.RAISE)
    def raise_(self, at: At, inst: Instruction, stack: List[Any], out: Lines) -> Optional[int]:
        if not inst.arg:
            self.stmt(out, stack, "raise")
        elif inst.arg == 1:
            self.stmt(out, stack, f"raise {self.value(self.pop_expr(stack))}")
        else:
            cause = self.pop_expr(stack)
            exc = self.pop_expr(stack)
            self.stmt(out, stack, f"raise {self.value(exc)} from {self.value(cause)}")
        return END

    # ---------------------------------------------------------------- stack shuffles
    @handles(Kind.COPY, Kind.COPY_TWO)
    def copy(self, at: At, inst: Instruction, stack: List[Any], out: Lines) -> Optional[int]:
        two = inst.kind == Kind.COPY_TWO
        n = 2 if two else inst.depth
        copies = 2 if two else 1
        # a copied expression is evaluated once: bind it (and what is below it) first
        self.spill(out, stack, lambda e: not e.stable and e.local is None, upto=len(stack) - n + copies)
        if two:
            stack.extend(stack[-2:])
        else:
            src = stack[-n]
            if isinstance(src, (MethodHead, SelfSlot)):
                raise DecompileError("a copied method slot")
            stack.append(src)
        return None

    @handles(Kind.SWAP, Kind.ROTATE)
    def shuffle(self, at: At, inst: Instruction, stack: List[Any], out: Lines) -> Optional[int]:
        if self.unstable(stack) > 1:
            self.spill(out, stack, lambda e: not e.stable and e.local is None)
        n = inst.depth
        # the fixed swap of the top two (no argument: 3.9/3.10) has always been read as
        # a rotation, which differs from a swap only on a stack too short for it
        if inst.kind == Kind.SWAP and not inst.fixed_depth:
            stack[-1], stack[-n] = stack[-n], stack[-1]
        else:
            top = stack.pop()
            stack.insert(len(stack) - n + 1, top)
        return None

    # ---------------------------------------------------------------- if
    @handles(Kind.BRANCH)
    def branch(self, at: At, inst: Instruction, stack: List[Any], out: Lines) -> Optional[int]:
        """``if cond:`` holding the way taken when ``cond`` is true, rendered to its end;
        the walk goes on along the other way."""
        k = at.k
        keep = inst.keeps_operand
        cond = self.render(self.pop_expr(stack))
        if keep:
            # the value stays on the stack on one way: evaluate it once
            self.spill(out, stack, lambda e: not e.stable and e.local is None)
            t = self.temp()
            out.append((0, f"{t} = {self.value(cond)}"))
            cond = Expr(t, stable=True, local=t)
        else:
            self.spill(out, stack, lambda e: not e.stable and e.local is None)
        test = replace(cond, truth=False)
        jump_if = inst.condition
        if jump_if in ("none", "not none"):
            text = f"{self.value(test, P_CMP + 1)} is {'' if jump_if == 'none' else 'not '}None"
            jump_when_true = True
        else:
            text = self.value(test, P_TEST)
            jump_when_true = jump_if == "true"
        target = self.flow.index_of(inst.target)
        inner, rest = (target, k + 1) if jump_when_true else (k + 1, target)
        inner_stack = list(stack) + ([cond] if keep and inner == target else [])
        rest_stack = list(stack) + ([cond] if keep and rest == target else [])
        arm: Lines = []
        try:
            self.path(inner, inner_stack, arm, set(at.visited), main=False)
        except Stuck as stuck:
            raise Stuck(k if at.main else stuck.index, f"the branch at {inst.opname}: {stuck.reason}") from None
        out.append((0, f"if {text}:"))
        out.extend((depth + 1, line) for depth, line in arm)
        stack[:] = rest_stack
        return rest
