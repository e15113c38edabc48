"""The decompiler's handlers of what names a value: constants, locals, cells and globals,
attributes, subscripts and slices, loaded, assigned, deleted and unpacked into (a mixin
of the walker)."""

from __future__ import annotations

from typing import Any, List, Optional

from ..bytecode.behaviour import BEHAVIOUR
from ..bytecode.instructions import Instruction
from ..bytecode.kinds import Kind
from .stack_values import NULL, At, Expr, Lines, MethodHead, SelfSlot, Slice, handles

__all__ = ["NamesMixin"]

#: which of ``Decompiled``'s name sets a store or deletion of each kind counts in
_STORED = {
    Kind.STORE_DEREF: "derefs",
    Kind.DELETE_DEREF: "derefs",
    Kind.STORE_GLOBAL: "global_stores",
    Kind.DELETE_GLOBAL: "global_stores",
}
#: stores that ``a, b = v`` can stand for after an unpacking
_PLAIN_STORES = frozenset({Kind.STORE_LOCAL, Kind.STORE_GLOBAL, Kind.STORE_DEREF})


class NamesMixin:
    # ---------------------------------------------------------------- constants
    @handles(Kind.LOAD_CONST)
    def load_const(self, at: At, inst: Instruction, stack: List[Any], out: Lines) -> Optional[int]:
        value = inst.argval
        # the interpreter's common constants without a literal (AssertionError, list, ...)
        # are names, not constants: only a constant of the code's own is one
        if inst.opname == "LOAD_CONST" or value is None or type(value) in (bool, int, str):
            stack.append(self.const(value))
        else:
            stack.append(Expr(self.const_name(value), stable=True))
        return None

    @handles(Kind.LOAD_ASSERTION_ERROR)
    def load_assertion_error(self, at: At, inst: Instruction, stack: List[Any], out: Lines) -> Optional[int]:
        stack.append(Expr(self.const_name(AssertionError), stable=True))
        return None

    # ---------------------------------------------------------------- locals, cells, globals
    def load_local(self, name: str, stack: List[Any]) -> None:
        self.use("fast", name)
        stack.append(Expr(name, local=name))

    @handles(Kind.LOAD_LOCAL)
    def load_fast(self, at: At, inst: Instruction, stack: List[Any], out: Lines) -> Optional[int]:
        self.load_local(inst.argval, stack)
        return None

    @handles(Kind.LOAD_LOCAL_PAIR)
    def load_fast_pair(self, at: At, inst: Instruction, stack: List[Any], out: Lines) -> Optional[int]:
        for name in inst.argval:
            self.load_local(name, stack)
        return None

    @handles(Kind.STORE_LOCAL, Kind.STORE_DEREF, Kind.STORE_GLOBAL)
    def store(self, at: At, inst: Instruction, stack: List[Any], out: Lines) -> Optional[int]:
        self.store_name(inst, inst.argval, stack, out)
        return None

    @handles(Kind.STORE_LOAD_LOCAL)
    def store_load(self, at: At, inst: Instruction, stack: List[Any], out: Lines) -> Optional[int]:
        self.store_name(inst, inst.argval[0], stack, out)
        self.load_local(inst.argval[1], stack)
        return None

    @handles(Kind.STORE_LOCAL_PAIR)
    def store_pair(self, at: At, inst: Instruction, stack: List[Any], out: Lines) -> Optional[int]:
        self.store_name(inst, inst.argval[0], stack, out)
        self.store_name(inst, inst.argval[1], stack, out)
        return None

    @handles(Kind.DELETE_LOCAL, Kind.DELETE_DEREF, Kind.DELETE_GLOBAL)
    def delete(self, at: At, inst: Instruction, stack: List[Any], out: Lines) -> Optional[int]:
        self.use(_STORED.get(inst.kind, "fast"), inst.argval)
        self.stmt(out, stack, f"del {inst.argval}", stores=[inst.argval])
        return None

    @handles(Kind.LOAD_GLOBAL)
    def load_global(self, at: At, inst: Instruction, stack: List[Any], out: Lines) -> Optional[int]:
        self.use("globals", inst.argval)
        g = Expr(inst.argval)
        if inst.push_null:
            stack.extend([g, NULL] if BEHAVIOUR.null_after_callable else [NULL, g])
        else:
            stack.append(g)
        return None

    @handles(Kind.LOAD_DEREF)
    def load_deref(self, at: At, inst: Instruction, stack: List[Any], out: Lines) -> Optional[int]:
        self.use("derefs", inst.argval)
        stack.append(Expr(inst.argval))
        return None

    def store_name(self, inst: Instruction, target: str, stack: List[Any], out: Lines) -> None:
        self.use(_STORED.get(inst.kind, "fast"), target)
        val = self.pop_expr(stack)
        self.stmt(out, stack, self.assignment(target, val), stores=[target])

    def assignment(self, target: str, val: Any) -> str:
        e = self.render(val)
        if e.inplace is not None:
            left, sym, right = e.inplace
            if self.render(left).text == target:
                return f"{target} {sym} {self.value(right)}"
        return f"{target} = {self.value(e)}"

    # ---------------------------------------------------------------- attributes
    @handles(Kind.LOAD_ATTR)
    def load_attr(self, at: At, inst: Instruction, stack: List[Any], out: Lines) -> Optional[int]:
        obj = self.pop_expr(stack)
        if inst.is_method:
            stack.extend([MethodHead(self.render(obj), inst.argval), SelfSlot()])
        else:
            stack.append(Expr(f"{self.atom(obj)}.{inst.argval}"))
        return None

    @handles(Kind.STORE_ATTR)
    def store_attr(self, at: At, inst: Instruction, stack: List[Any], out: Lines) -> Optional[int]:
        obj = self.pop_expr(stack)
        val = self.pop_expr(stack)
        target = f"{self.atom(obj)}.{inst.argval}"
        self.stmt(out, stack, self.assignment(target, val))
        return None

    @handles(Kind.DELETE_ATTR)
    def delete_attr(self, at: At, inst: Instruction, stack: List[Any], out: Lines) -> Optional[int]:
        obj = self.pop_expr(stack)
        self.stmt(out, stack, f"del {self.atom(obj)}.{inst.argval}")
        return None

    # ---------------------------------------------------------------- subscripts and slices
    @handles(Kind.SUBSCR)
    def subscr(self, at: At, inst: Instruction, stack: List[Any], out: Lines) -> Optional[int]:
        key = self.pop_expr(stack)
        obj = self.pop_expr(stack)
        stack.append(Expr(f"{self.atom(obj)}[{self.key(key)}]"))
        return None

    @handles(Kind.STORE_SUBSCR)
    def store_subscr(self, at: At, inst: Instruction, stack: List[Any], out: Lines) -> Optional[int]:
        key = self.pop_expr(stack)
        obj = self.pop_expr(stack)
        val = self.pop_expr(stack)
        self.stmt(out, stack, self.assignment(f"{self.atom(obj)}[{self.key(key)}]", val))
        return None

    @handles(Kind.DELETE_SUBSCR)
    def delete_subscr(self, at: At, inst: Instruction, stack: List[Any], out: Lines) -> Optional[int]:
        key = self.pop_expr(stack)
        obj = self.pop_expr(stack)
        self.stmt(out, stack, f"del {self.atom(obj)}[{self.key(key)}]")
        return None

    def pop_slice(self, stack: List[Any]) -> str:
        """``obj[start:stop]`` of the three values on top."""
        stop = self.render(self.pop_expr(stack))
        start = self.render(self.pop_expr(stack))
        obj = self.pop_expr(stack)
        return f"{self.atom(obj)}[{self.slice_text(Slice([start, stop]))}]"

    @handles(Kind.SUBSCR_SLICE)
    def subscr_slice(self, at: At, inst: Instruction, stack: List[Any], out: Lines) -> Optional[int]:
        stack.append(Expr(self.pop_slice(stack)))
        return None

    @handles(Kind.STORE_SLICE)
    def store_slice(self, at: At, inst: Instruction, stack: List[Any], out: Lines) -> Optional[int]:
        target = self.pop_slice(stack)
        val = self.pop_expr(stack)
        self.stmt(out, stack, f"{target} = {self.value(val)}")
        return None

    @handles(Kind.BUILD_SLICE)
    def build_slice(self, at: At, inst: Instruction, stack: List[Any], out: Lines) -> Optional[int]:
        parts = [self.render(self.pop_expr(stack)) for _ in range(inst.arg or 0)][::-1]
        stack.append(Slice(parts))
        return None

    # ---------------------------------------------------------------- unpacking
    @handles(Kind.UNPACK_SEQUENCE, Kind.UNPACK_EX)
    def unpack(self, at: At, inst: Instruction, stack: List[Any], out: Lines) -> Optional[int]:
        k = at.k
        v = self.pop_expr(stack)
        if inst.kind == Kind.UNPACK_SEQUENCE:
            before, after, star = inst.arg or 0, 0, False
        else:
            (before, after), star = inst.unpack, True
        n = before + after + int(star)
        # ``a, b = v`` when plain name stores follow, otherwise into temporaries
        follow = self.insts[k + 1 : k + 1 + n]
        simple = len(follow) == n and all(x.kind in _PLAIN_STORES for x in follow)
        if simple and len({x.argval for x in follow}) == n:
            targets = [x.argval for x in follow]
            for x in follow:
                self.use(_STORED.get(x.kind, "fast"), x.argval)
            nxt = k + 1 + n
        else:
            targets = [self.temp() for _ in range(n)]
            nxt = k + 1
        shown = [("*" + t) if star and i == before else t for i, t in enumerate(targets)]
        lhs = "[]" if not shown else ", ".join(shown) + ("," if len(shown) == 1 else "")
        self.stmt(out, stack, f"{lhs} = {self.value(v)}", stores=targets)
        if nxt == k + 1:
            # the first item ends on top
            for t in reversed(targets):
                stack.append(Expr(t, stable=True, local=t))
        return nxt
