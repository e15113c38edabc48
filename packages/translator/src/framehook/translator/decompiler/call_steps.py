"""The decompiler's call handlers: every version's call shape (a NULL-or-self slot or
none, keyword names on the stack or named before the call, ``f(*args, **kwargs)``), read
from the call's operands (a mixin of the walker)."""

from __future__ import annotations

from typing import Any, List, Optional, Tuple

from ..bytecode.effects import call_shape
from ..bytecode.instructions import Instruction
from ..bytecode.kinds import Kind
from .stack_values import NULL, P_BOR, At, DecompileError, Expr, Display, Lines, MethodHead, SelfSlot, handles

__all__ = ["CallsMixin"]


class CallsMixin:
    @handles(Kind.KW_NAMES)
    def kw_names(self, at: At, inst: Instruction, stack: List[Any], out: Lines) -> Optional[int]:
        return None  # read by the call that follows (pending_kw)

    def pending_kw(self, k: int) -> Optional[Tuple[str, ...]]:
        """3.11/3.12: the names of a KW_NAMES before the call at ``k`` (3.11 puts a
        PRECALL, a no-op kind, in between)."""
        j = k - 1
        while j >= 0 and self.insts[j].kind == Kind.NOP:
            j -= 1
        if j >= 0 and self.insts[j].kind == Kind.KW_NAMES:
            names = self.insts[j].kw_names
            if names is None:
                raise DecompileError(f"{self.insts[j].opname} without the code's constants")
            return names
        return None

    @handles(Kind.CALL)
    def call(self, at: At, inst: Instruction, stack: List[Any], out: Lines) -> Optional[int]:
        kwnames: Tuple[str, ...] = ()
        if inst.call_names:
            names = self.render(stack.pop())
            if not names.is_const:
                raise DecompileError(f"{inst.opname} without constant keyword names")
            kwnames = tuple(names.const)
        else:
            kwnames = self.pending_kw(at.k) or ()
        args = [self.pop_expr(stack) for _ in range(inst.arg or 0)][::-1]
        if not inst.call_slot:
            callee = self.callee(self.pop_expr(stack), None)
        else:
            top = stack.pop()
            bottom = stack.pop()
            callee = self.callee(bottom, top, self_arg=args)
        texts = [self.value(a) for a in args]
        if kwnames:
            n = len(kwnames)
            texts = texts[: len(texts) - n] + [f"{kw}={t}" for kw, t in zip(kwnames, texts[len(texts) - n :])]
        stack.append(Expr(f"{callee}({', '.join(texts)})"))
        return None

    def callee(self, bottom: Any, top: Any, self_arg: Optional[List[Any]] = None) -> str:
        """The callable of a call, from the two slots below the arguments (one before 3.11)."""
        if top is None:
            return self.atom(bottom)
        if isinstance(bottom, MethodHead) and isinstance(top, SelfSlot):
            return f"{self.atom(bottom.obj)}.{bottom.name}"
        if isinstance(top, MethodHead) and isinstance(bottom, SelfSlot):
            return f"{self.atom(top.obj)}.{top.name}"
        if bottom is NULL:
            return self.atom(top)
        if top is NULL:
            return self.atom(bottom)
        # [callable, self]: the callable receives the second slot as its first argument
        assert self_arg is not None
        self_arg.insert(0, top)
        return self.atom(bottom)

    @handles(Kind.CALL_EX)
    def call_ex(self, at: At, inst: Instruction, stack: List[Any], out: Lines) -> Optional[int]:
        shape = call_shape(inst)
        assert shape is not None
        kwargs = stack.pop() if shape.kwargs else None
        if kwargs is NULL:  # the kwargs slot with no keyword arguments
            kwargs = None
        args = stack.pop()
        first: List[Any] = []
        if shape.callable_slots == 2:
            top = stack.pop()
            callee = self.callee(stack.pop(), top, self_arg=first)
        else:
            callee = self.callee(stack.pop(), None)
        parts: List[str] = [self.value(v) for v in first]
        if isinstance(args, Display) and args.kind in ("tuple", "list"):
            parts += [f"*{self.value(v, P_BOR)}" if p == "*" else self.value(v) for p, v in args.items]
        elif isinstance(args, Expr) and args.is_const and type(args.const) is tuple:
            parts += [self.value(self.const(v)) for v in args.const]
        else:
            parts.append(f"*{self.value(args, P_BOR)}")
        if kwargs is not None:
            parts += self.keyword_parts(kwargs)
        stack.append(Expr(f"{callee}({', '.join(parts)})"))
        return None

    def keyword_parts(self, kwargs: Any) -> List[str]:
        """``k=v`` and ``**m`` arguments for a call's mapping of keyword arguments."""
        if not (isinstance(kwargs, Display) and kwargs.kind == "dict"):
            return [f"**{self.value(kwargs, P_BOR)}"]
        parts = []
        for k, v in kwargs.items:
            if k == "**":
                parts.append(f"**{self.value(v, P_BOR)}")
            elif isinstance(k, Expr) and k.is_const and type(k.const) is str and k.const.isidentifier():
                parts.append(f"{k.const}={self.value(v)}")
            else:
                parts.append(f"**{{{self.value(k)}: {self.value(v)}}}")
        return parts
