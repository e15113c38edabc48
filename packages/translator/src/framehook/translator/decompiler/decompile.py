"""Straight-line bytecode back to Python source, by simulating the stack (3.9-3.15).

    out = decompile(decode(code), start, const_name=names.name_for)
    text = "\n".join("    " * (1 + depth) + line for depth, line in out.lines)

Handles the instructions of straight-line code: loads and stores of locals, globals and
cells, constants, attribute and subscript access, operators, displays (tuple, list, set,
dict, f-strings), calls in every version's form (``CALL_FUNCTION``/``CALL_METHOD``,
3.11's ``PRECALL``/``KW_NAMES``, 3.12+'s ``CALL``, 3.13's ``CALL_KW``, ``CALL_FUNCTION_EX``),
unpacking, stack shuffles, ``return`` and ``raise``. Unconditional jumps are followed;
a conditional jump becomes ``if cond:`` with each way rendered to its end (code both ways
reach is written twice), so every path must end in ``return`` or ``raise``. A loop, an
exception handler or an instruction not listed stops the walk: ``Decompiled.stopped_at``.

Statements come out in execution order. The stack holds expressions not yet evaluated;
before a statement runs, every expression still on the stack whose value the statement
could change (a call, a global, an attribute, a local the statement assigns) is bound to a
temporary (``___d<n>``), so it is evaluated where the bytecode evaluated it.

Constants with no literal form (functions, arrays, ``inf``) and the builtins the output
needs (``slice``, ``operator.iadd`` for an in-place operator whose result is not stored
back, ``AssertionError``) are written as the names ``const_name(value)`` returns.
"""

from __future__ import annotations

import ast
import dis
import math
import operator
from dataclasses import dataclass, field, replace
from typing import Any, Callable, List, Optional, Sequence, Set, Tuple, Union

from ..bytecode.behaviour import BEHAVIOUR
from ..bytecode.cfg import ControlFlow
from ..bytecode.effects import call_shape
from ..bytecode.instructions import Instruction
from ..bytecode.opcodes import JUMP_CONDITIONS, KEEPS_OPERAND_ON_JUMP, NO_OPS, SYNONYMS

__all__ = ["Decompiled", "DecompileError", "decompile", "literal_text"]

# operator precedence, loosest first (the Python grammar's levels)
(
    P_TEST,
    P_OR,
    P_AND,
    P_NOT,
    P_CMP,
    P_BOR,
    P_BXOR,
    P_BAND,
    P_SHIFT,
    P_ARITH,
    P_TERM,
    P_UNARY,
    P_POWER,
    P_AWAIT,
    P_ATOM,
) = range(1, 16)

_BINARY_PREC = {
    "|": P_BOR,
    "^": P_BXOR,
    "&": P_BAND,
    "<<": P_SHIFT,
    ">>": P_SHIFT,
    "+": P_ARITH,
    "-": P_ARITH,
    "*": P_TERM,
    "/": P_TERM,
    "//": P_TERM,
    "%": P_TERM,
    "@": P_TERM,
    "**": P_POWER,
}
_INPLACE_FUNCS = {
    "+": operator.iadd,
    "-": operator.isub,
    "*": operator.imul,
    "/": operator.itruediv,
    "//": operator.ifloordiv,
    "%": operator.imod,
    "**": operator.ipow,
    "@": operator.imatmul,
    "<<": operator.ilshift,
    ">>": operator.irshift,
    "&": operator.iand,
    "|": operator.ior,
    "^": operator.ixor,
}
_UNARY = {"UNARY_NEGATIVE": "-", "UNARY_POSITIVE": "+", "UNARY_INVERT": "~"}
_CONVERSIONS = {"str": "s", "repr": "r", "ascii": "a"}
_MAX_LINES = 4000
# no-ops, and set-up whose work the rendered function does by being a function
_SKIPPED = NO_OPS | frozenset({"PRECALL", "COPY_FREE_VARS", "MAKE_CELL"})
_TSTRING_UNSAFE = frozenset("\\\n'\"#{}:!=")


class DecompileError(Exception):
    """The instructions cannot be written as Python here."""


def literal_text(value: Any) -> Optional[str]:
    """Python source that evaluates to an equal constant of the same type, or None."""
    if value is None or value is Ellipsis or isinstance(value, bool):
        return "..." if value is Ellipsis else repr(value)
    if type(value) in (int, str, bytes):
        return repr(value)
    if type(value) in (float, complex):
        text = repr(value)
        try:
            back = ast.literal_eval(text)
        except (ValueError, SyntaxError):
            return None  # inf, nan
        same = type(back) is type(value) and repr(back) == text
        if type(value) is float:
            same = same and math.copysign(1.0, back) == math.copysign(1.0, value)
        return text if same else None
    if type(value) is tuple:
        items = [literal_text(v) for v in value]
        if any(t is None for t in items):
            return None
        return "(" + ", ".join(items) + ("," if len(items) == 1 else "") + ")"  # type: ignore[arg-type]
    return None


# ------------------------------------------------------------------ stack values
class _Null:
    """The NULL 3.11+ pushes below (or, 3.13, above) a callable."""

    def __repr__(self) -> str:
        return "NULL"


NULL = _Null()


@dataclass
class Expr:
    """An expression not evaluated yet. ``stable``: reading it later gives the same value
    (a literal, a bound constant, a temporary); ``local``: a plain read of that local,
    stable until the local is assigned."""

    text: str
    prec: int = P_ATOM
    stable: bool = False
    local: Optional[str] = None
    # a LOAD_CONST: the value (call keyword names, f-string literal parts)
    const: Any = None
    is_const: bool = False
    # "truth": the operand of TO_BOOL (or a comparison the 3.13 compiler marked as bool)
    truth: bool = False
    # an in-place operator: (left, symbol, right), for ``x += y``
    inplace: Optional[Tuple["Expr", str, "Expr"]] = None
    # a number literal (``(1).real``)
    number: bool = False


@dataclass
class _MethodHead:
    """``obj.name`` loaded as a method (LOAD_METHOD, method LOAD_ATTR): its self slot is a _SelfSlot."""

    obj: Expr
    name: str


class _SelfSlot:
    def __repr__(self) -> str:
        return "SELF"


@dataclass
class _Slice:
    parts: List[Expr]


@dataclass
class _Display:
    """A tuple, list, set or dict display being built: items ``(prefix, expr)`` with prefix
    "" or "*" (dict: ``(key, value)`` or ``("**", expr)``)."""

    kind: str
    items: List[Tuple[Any, Any]] = field(default_factory=list)


@dataclass
class _Formatted:
    """One ``{value!conv:spec}`` of an f-string (spec: a _Formatted/_FString or a str Expr)."""

    value: Expr
    conv: Optional[str]
    spec: Any = None


@dataclass
class _FString:
    parts: List[Any]  # str Exprs (literal text) and _Formatted


@dataclass
class _Interpolation:
    """One ``{value!conv:spec}`` of a t-string; ``expression`` is the source text the
    compiler stored for it."""

    value: Expr
    expression: str
    conv: Optional[str]
    spec: Any = None


@dataclass
class Decompiled:
    """What ``decompile`` produced.

    ``lines``: (indent level, statement); ``complete``: every path ended in return/raise;
    ``stopped_at``: index of the instruction the main path stopped at, ``reason`` why;
    ``boundaries``: (instruction index, lines before it) where the main path's stack was
    empty between statements (so the rest could be written some other way);
    ``fast``/``globals``/``global_stores``/``derefs``: names by how the code accessed them."""

    lines: List[Tuple[int, str]] = field(default_factory=list)
    complete: bool = False
    stopped_at: Optional[int] = None
    reason: str = ""
    boundaries: List[Tuple[int, int]] = field(default_factory=list)
    fast: Set[str] = field(default_factory=set)
    globals: Set[str] = field(default_factory=set)
    global_stores: Set[str] = field(default_factory=set)
    derefs: Set[str] = field(default_factory=set)
    # (main-path lines written before it, kind, name) of every name access, in order
    uses: List[Tuple[int, str, str]] = field(default_factory=list)

    def names(self, kind: str, upto: Optional[int] = None) -> Set[str]:
        """The names of ``kind`` ("fast", "globals", "global_stores", "derefs") the first
        ``upto`` lines of the main path (all, by default) access."""
        return {n for c, k, n in self.uses if k == kind and (upto is None or c < upto)}

    def text(self, indent: str = "    ", base: int = 1, upto: Optional[int] = None) -> str:
        lines = self.lines if upto is None else self.lines[:upto]
        return "".join(indent * (base + depth) + line + "\n" for depth, line in lines)


class _Stuck(Exception):
    def __init__(self, index: int, reason: str) -> None:
        super().__init__(reason)
        self.index = index
        self.reason = reason


def _default_const_name(value: Any) -> str:
    raise DecompileError(f"no name for the constant {value!r:.60}")


def decompile(
    insts: Union[Sequence[Instruction], ControlFlow],
    start: int = 0,
    stack: Sequence[Any] = (),
    const_name: Optional[Callable[[Any], str]] = None,
    temp_prefix: str = "___d",
    consts: Optional[Sequence[Any]] = None,
) -> Decompiled:
    """Decompile ``insts`` from index ``start`` with ``stack`` (Exprs, or texts taken as
    local names) already pushed; ``consts``: the code's ``co_consts`` (3.11's KW_NAMES).
    ``insts`` may be given as their control-flow graph, to share one between calls.
    Never raises for bytecode it does not know: the result says where it stopped."""
    flow = insts if isinstance(insts, ControlFlow) else ControlFlow(insts)
    walker = _Walker(flow, const_name or _default_const_name, temp_prefix)
    walker.consts = consts
    initial = [Expr(s, local=s) if isinstance(s, str) else s for s in stack]
    walker.run(start, initial)
    return walker.result


class _Walker:
    def __init__(self, flow: ControlFlow, const_name: Callable[[Any], str], temp_prefix: str) -> None:
        self.insts = flow.insts
        self.flow = flow
        self.const_name = const_name
        self.temp_prefix = temp_prefix
        self.temps = 0
        self.result = Decompiled()
        self.count = 0
        self.consts: Optional[Sequence[Any]] = None
        self.main_lines: List[Tuple[int, str]] = []

    # ---------------------------------------------------------------- the walk
    def run(self, start: int, stack: List[Any]) -> None:
        out: List[Tuple[int, str]] = []
        self.main_lines = out
        try:
            self.path(start, stack, out, set(), main=True)
            self.result.complete = True
        except _Stuck as stuck:
            self.result.stopped_at = stuck.index
            self.result.reason = stuck.reason
        except DecompileError as e:
            self.result.stopped_at = start
            self.result.reason = str(e)
        self.result.lines = out

    def path(self, k: int, stack: List[Any], out: List[Tuple[int, str]], visited: Set[int], main: bool) -> None:
        """Walk from instruction ``k`` until a return or raise (appends to ``out``)."""
        while True:
            if k >= len(self.insts):
                raise _Stuck(k, "the code runs past its last instruction")
            if k in visited:
                raise _Stuck(k, "a loop")
            visited.add(k)
            if main and not stack:
                self.result.boundaries.append((k, len(out)))
            inst = self.insts[k]
            if inst.exn_tab_entry is not None:
                raise _Stuck(k, f"{inst.opname} is inside a try block (exception table)")
            self.count += 1
            if self.count > _MAX_LINES:
                raise _Stuck(k, "too much code on every path")
            try:
                nxt = self.step(k, inst, stack, out, visited, main)
            except _Stuck:
                raise
            except DecompileError as e:
                raise _Stuck(k, str(e)) from None
            except IndexError:
                raise _Stuck(k, f"{inst.opname}: stack underflow") from None
            except Exception as e:  # noqa: BLE001 - bytecode this walker does not expect: stop here
                raise _Stuck(k, f"{inst.opname}: {type(e).__name__}: {e}") from None
            if nxt is None:
                return
            k = nxt

    # ---------------------------------------------------------------- helpers
    def use(self, kind: str, name: str) -> None:
        getattr(self.result, kind).add(name)
        self.result.uses.append((len(self.main_lines), kind, name))

    def temp(self) -> str:
        name = f"{self.temp_prefix}{self.temps}"
        self.temps += 1
        return name

    def stmt(self, out: List[Tuple[int, str]], stack: List[Any], text: str, stores: Sequence[str] = ()) -> None:
        """Append a statement, first binding to temporaries what on the stack it could change."""
        self.spill(out, stack, lambda e: not e.stable and (e.local is None or e.local in stores))
        out.append((0, text))

    def spill(
        self, out: List[Tuple[int, str]], stack: List[Any], needs: Callable[[Expr], bool], upto: Optional[int] = None
    ) -> None:
        """Bind ``stack[:upto]``'s entries for which ``needs`` holds to temporaries, bottom first."""
        end = len(stack) if upto is None else upto
        for i in range(end):
            v = stack[i]
            if isinstance(v, _MethodHead):
                head = Expr(f"{self.atom(v.obj)}.{v.name}")
                if not needs(head) and not needs(v.obj):
                    continue
                t = self.temp()
                out.append((0, f"{t} = {head.text}"))
                stack[i] = Expr(t, stable=True, local=t)
                # the bound method is called as it is: its self slot (always next) is empty
                if i + 1 < len(stack) and isinstance(stack[i + 1], _SelfSlot):
                    stack[i + 1] = NULL
                continue
            if isinstance(v, (_Display, _Slice, _FString, _Formatted, _Interpolation)):
                t = self.temp()
                out.append((0, f"{t} = {self.render(v).text}"))
                stack[i] = Expr(t, stable=True, local=t)
                continue
            if isinstance(v, Expr) and needs(v):
                t = self.temp()
                out.append((0, f"{t} = {self.value(v)}"))
                stack[i] = Expr(t, stable=True, local=t)

    def unstable(self, stack: List[Any]) -> int:
        return sum(
            1
            for v in stack
            if isinstance(v, (_Display, _FString, _Formatted, _Slice, _Interpolation))
            or (isinstance(v, Expr) and not v.stable and v.local is None)
            or (isinstance(v, _MethodHead) and not (v.obj.stable or v.obj.local))
        )

    def const(self, value: Any) -> Expr:
        text = literal_text(value)
        if text is None:
            return Expr(self.const_name(value), stable=True, const=value, is_const=True)
        prec = P_UNARY if text.startswith("-") else P_ATOM
        number = type(value) in (int, float, complex)
        return Expr(text, prec, stable=True, const=value, is_const=True, number=number)

    def render(self, v: Any) -> Expr:
        """Any stack value as an expression."""
        if isinstance(v, Expr):
            return v
        if isinstance(v, _Display):
            return Expr(self.display_text(v))
        if isinstance(v, _Slice):
            return Expr(f"{self.const_name(slice)}({', '.join(self.value(p) for p in v.parts)})")
        if isinstance(v, (_FString, _Formatted)):
            return Expr(self.fstring(v if isinstance(v, _FString) else _FString([v])))
        if isinstance(v, _MethodHead):
            return Expr(f"{self.atom(v.obj)}.{v.name}")
        if isinstance(v, _Interpolation):
            return Expr(self.interpolation_call(v))
        raise DecompileError(f"{v!r} is not a value")

    def value(self, v: Any, prec: int = P_TEST) -> str:
        """Text of ``v`` usable where an expression of precedence ``prec`` is expected."""
        e = self.render(v)
        text = e.text
        if e.inplace is not None:
            left, sym, right = e.inplace
            text = f"{self.const_name(_INPLACE_FUNCS[sym[:-1]])}({self.value(left)}, {self.value(right)})"
            return text
        if e.truth:
            text = f"(not not {self.value(Expr(e.text, e.prec), P_NOT)})"
            return text
        if e.prec < prec:
            return f"({text})"
        return text

    def atom(self, v: Any) -> str:
        e = self.render(v)
        if e.number:
            return f"({e.text})"
        return self.value(e, P_ATOM)

    def key(self, v: Any) -> str:
        """A subscript: a tuple display without parentheses, slices as ``a:b:c``."""
        if isinstance(v, _Slice):
            return self.slice_text(v)
        if isinstance(v, _Display) and v.kind == "tuple" and v.items and all(p == "" for p, _ in v.items):
            parts = [self.slice_text(x) if isinstance(x, _Slice) else self.value(x) for _, x in v.items]
            return ", ".join(parts) + ("," if len(parts) == 1 else "")
        return self.value(v)

    def slice_text(self, s: _Slice) -> str:
        def part(e: Expr) -> str:
            return "" if e.is_const and e.const is None else self.value(e)

        parts = [part(p) for p in s.parts]
        if len(parts) == 3 and parts[2] == "":
            return f"{parts[0]}:{parts[1]}:{self.value(s.parts[2])}"
        return ":".join(parts)

    def display_text(self, d: _Display) -> str:
        if d.kind == "dict":
            items = [
                f"**{self.value(v, P_BOR)}" if k == "**" else f"{self.value(k)}: {self.value(v)}" for k, v in d.items
            ]
            return "{" + ", ".join(items) + "}"
        items = [f"*{self.value(v, P_BOR)}" if p == "*" else self.value(v) for p, v in d.items]
        if d.kind == "list":
            return "[" + ", ".join(items) + "]"
        if d.kind == "set":
            return "{" + ", ".join(items) + "}" if items else f"{self.const_name(set)}()"
        return "(" + ", ".join(items) + ("," if len(items) == 1 else "") + ")"

    def fstring(self, f: _FString) -> str:
        body = self.fstring_body(f)
        for quote in ("'", '"', "'''", '"""'):
            if quote not in body and not body.endswith(quote[0]):
                return f"f{quote}{body}{quote}"
        raise DecompileError("an f-string with every kind of quote in it")

    def spec_body(self, spec: Any) -> Optional[str]:
        """A format spec's text inside a replacement field, or None when its literal text
        has braces (which no field can hold)."""
        spec = spec if isinstance(spec, _FString) else _FString([spec])
        if any(isinstance(p, Expr) and type(p.const) is str and ("{" in p.const or "}" in p.const) for p in spec.parts):
            return None
        return self.fstring_body(spec)

    def fstring_body(self, f: _FString) -> str:
        out = []
        for part in f.parts:
            if isinstance(part, Expr):
                if not (part.is_const and type(part.const) is str):
                    raise DecompileError("an f-string part that is not a str literal")
                text = repr(part.const)[1:-1]
                out.append(text.replace("{", "{{").replace("}", "}}"))
                continue
            inner = self.value(part.value)
            if "\\" in inner or "\n" in inner or "'" in inner or '"' in inner or "#" in inner:
                raise DecompileError("an f-string value whose text has quotes, escapes or #")
            piece = "{(" + inner + ")"
            if part.conv:
                piece += "!" + part.conv
            if part.spec is not None:
                spec = self.spec_body(part.spec)
                if spec is None:
                    raise DecompileError("a format spec with braces in it")
                piece += ":" + spec
            out.append(piece + "}")
        return "".join(out)

    def spec_text(self, spec: Any) -> str:
        if spec is None:
            return "''"
        return self.value(spec if isinstance(spec, Expr) else self.render(spec))

    def interpolation_call(self, v: _Interpolation) -> str:
        from string.templatelib import Interpolation  # 3.14+: t-strings exist there only

        conv = "None" if v.conv is None else repr(v.conv)
        return (
            f"{self.const_name(Interpolation)}({self.value(v.value)}, {v.expression!r}, {conv}, "
            f"{self.spec_text(v.spec)})"
        )

    def template(self, strings: Any, interpolations: Any) -> Expr:
        """A t-string when every value's text is the expression the compiler stored (so
        the Interpolation objects come out equal), else Template(...) of the parts."""
        if not (
            isinstance(strings, Expr)
            and strings.is_const
            and type(strings.const) is tuple
            and all(type(t) is str for t in strings.const)
        ):
            raise DecompileError("BUILD_TEMPLATE of strings that are not a literal tuple")
        if isinstance(interpolations, Expr) and interpolations.is_const and interpolations.const == ():
            interps: List[_Interpolation] = []
        elif (
            isinstance(interpolations, _Display)
            and interpolations.kind == "tuple"
            and all(p == "" and isinstance(v, _Interpolation) for p, v in interpolations.items)
        ):
            interps = [v for _, v in interpolations.items]
        else:
            raise DecompileError("BUILD_TEMPLATE of interpolations that are not a tuple display")
        if len(strings.const) != len(interps) + 1:
            raise DecompileError("BUILD_TEMPLATE with strings and interpolations that do not alternate")
        body = self.template_body(strings.const, interps)
        if body is not None:
            for quote in ("'", '"', "'''", '"""'):
                if quote not in body and not body.endswith(quote[0]):
                    return Expr(f"t{quote}{body}{quote}")
        from string.templatelib import Template

        parts = [repr(strings.const[0])]
        for interp, text in zip(interps, strings.const[1:]):
            parts += [self.interpolation_call(interp), repr(text)]
        return Expr(f"{self.const_name(Template)}({', '.join(parts)})")

    def template_body(self, strings: Sequence[str], interps: List[_Interpolation]) -> Optional[str]:
        def literal(text: str) -> str:
            return repr(text)[1:-1].replace("{", "{{").replace("}", "}}")

        out = [literal(strings[0])]
        for interp, text in zip(interps, strings[1:]):
            inner = self.value(interp.value)
            # the text must be the stored expression and must lex as one: no quotes,
            # escapes, comments, braces or the characters that end an expression
            if inner != interp.expression or inner != inner.strip() or any(c in inner for c in _TSTRING_UNSAFE):
                return None
            piece = "{" + inner
            if interp.conv:
                piece += "!" + interp.conv
            if interp.spec is not None:
                spec = self.spec_body(interp.spec)
                if spec is None:
                    return None
                piece += ":" + spec
            out.append(piece + "}" + literal(text))
        return "".join(out)

    def pop_expr(self, stack: List[Any]) -> Any:
        v = stack.pop()
        if v is NULL or isinstance(v, (_SelfSlot, _MethodHead)):
            raise DecompileError(f"{v!r} used as a value")
        return v

    # ---------------------------------------------------------------- one instruction
    def step(
        self, k: int, inst: Instruction, stack: List[Any], out: List[Tuple[int, str]], visited: Set[int], main: bool
    ) -> Optional[int]:
        """Simulate ``inst``; the next instruction's index, or None at the path's end."""
        name = SYNONYMS.get(inst.opname, inst.opname)
        arg = inst.arg or 0
        nxt = k + 1
        if name in _SKIPPED:
            return nxt
        if name in ("JUMP_FORWARD", "JUMP_ABSOLUTE", "JUMP_BACKWARD", "JUMP_BACKWARD_NO_INTERRUPT", "JUMP"):
            return self.flow.index_of(inst.target)
        if name == "LOAD_CONST":
            stack.append(self.const(inst.argval))
        elif name == "RETURN_CONST":
            self.stmt(out, stack, f"return {self.value(self.const(inst.argval))}")
            return None
        elif name in ("LOAD_FAST", "LOAD_FAST_CHECK"):
            self.use("fast", inst.argval)
            stack.append(Expr(inst.argval, local=inst.argval))
        elif name == "LOAD_FAST_LOAD_FAST":
            for n in inst.argval:
                self.use("fast", n)
                stack.append(Expr(n, local=n))
        elif name in ("STORE_FAST", "STORE_DEREF", "STORE_GLOBAL"):
            self.store_name(inst, inst.argval, stack, out)
        elif name == "STORE_FAST_LOAD_FAST":
            self.store_name(inst, inst.argval[0], stack, out)
            self.use("fast", inst.argval[1])
            stack.append(Expr(inst.argval[1], local=inst.argval[1]))
        elif name == "STORE_FAST_STORE_FAST":
            self.store_name(inst, inst.argval[0], stack, out)
            self.store_name(inst, inst.argval[1], stack, out)
        elif name in ("DELETE_FAST", "DELETE_DEREF", "DELETE_GLOBAL"):
            self.use(
                "fast" if name == "DELETE_FAST" else "derefs" if name == "DELETE_DEREF" else "global_stores",
                inst.argval,
            )
            self.stmt(out, stack, f"del {inst.argval}", stores=[inst.argval])
        elif name == "LOAD_GLOBAL":
            self.use("globals", inst.argval)
            g = Expr(inst.argval)
            if inst.push_null:
                stack.extend([g, NULL] if BEHAVIOUR.null_after_callable else [NULL, g])
            else:
                stack.append(g)
        elif name == "LOAD_DEREF":
            self.use("derefs", inst.argval)
            stack.append(Expr(inst.argval))
        elif name == "LOAD_ATTR":
            obj = self.pop_expr(stack)
            if inst.is_method:
                stack.extend([_MethodHead(self.render(obj), inst.argval), _SelfSlot()])
            else:
                stack.append(Expr(f"{self.atom(obj)}.{inst.argval}"))
        elif name == "LOAD_METHOD":
            obj = self.pop_expr(stack)
            stack.extend([_MethodHead(self.render(obj), inst.argval), _SelfSlot()])
        elif name == "STORE_ATTR":
            obj = self.pop_expr(stack)
            val = self.pop_expr(stack)
            target = f"{self.atom(obj)}.{inst.argval}"
            self.stmt(out, stack, self.assignment(target, val))
        elif name == "DELETE_ATTR":
            obj = self.pop_expr(stack)
            self.stmt(out, stack, f"del {self.atom(obj)}.{inst.argval}")
        elif name == "BINARY_SUBSCR" or inst.binary_op == "[]":
            key = self.pop_expr(stack)
            obj = self.pop_expr(stack)
            stack.append(Expr(f"{self.atom(obj)}[{self.key(key)}]"))
        elif name == "STORE_SUBSCR":
            key = self.pop_expr(stack)
            obj = self.pop_expr(stack)
            val = self.pop_expr(stack)
            self.stmt(out, stack, self.assignment(f"{self.atom(obj)}[{self.key(key)}]", val))
        elif name == "DELETE_SUBSCR":
            key = self.pop_expr(stack)
            obj = self.pop_expr(stack)
            self.stmt(out, stack, f"del {self.atom(obj)}[{self.key(key)}]")
        elif name == "BINARY_SLICE":
            stop = self.render(self.pop_expr(stack))
            start = self.render(self.pop_expr(stack))
            obj = self.pop_expr(stack)
            stack.append(Expr(f"{self.atom(obj)}[{self.slice_text(_Slice([start, stop]))}]"))
        elif name == "STORE_SLICE":
            stop = self.render(self.pop_expr(stack))
            start = self.render(self.pop_expr(stack))
            obj = self.pop_expr(stack)
            val = self.pop_expr(stack)
            self.stmt(out, stack, f"{self.atom(obj)}[{self.slice_text(_Slice([start, stop]))}] = {self.value(val)}")
        elif name == "BUILD_SLICE":
            parts = [self.render(self.pop_expr(stack)) for _ in range(arg)][::-1]
            stack.append(_Slice(parts))
        elif inst.binary_op is not None:
            self.binary(stack, inst.binary_op)
        elif name in _UNARY:
            v = self.pop_expr(stack)
            stack.append(Expr(f"{_UNARY[name]}{self.value(v, P_UNARY)}", P_UNARY))
        elif name == "UNARY_NOT":
            v = self.render(self.pop_expr(stack))
            inner = Expr(v.text, v.prec) if v.truth else v
            stack.append(Expr(f"not {self.value(inner, P_NOT)}", P_NOT))
        elif name == "TO_BOOL":
            v = self.render(self.pop_expr(stack))
            stack.append(v if v.truth or v.prec == P_NOT else Expr(v.text, v.prec, truth=True))
        elif name == "CALL_INTRINSIC_1":
            self.intrinsic(inst, stack)
        elif name == "COMPARE_OP":
            right = self.pop_expr(stack)
            left = self.pop_expr(stack)
            sym = inst.argval if isinstance(inst.argval, str) else dis.cmp_op[arg]
            text = f"{self.value(left, P_CMP + 1)} {sym} {self.value(right, P_CMP + 1)}"
            stack.append(Expr(text, P_CMP, truth=inst.to_bool))
        elif name in ("IS_OP", "CONTAINS_OP"):
            right = self.pop_expr(stack)
            left = self.pop_expr(stack)
            sym = ("is not" if inst.invert else "is") if name == "IS_OP" else ("not in" if inst.invert else "in")
            stack.append(Expr(f"{self.value(left, P_CMP + 1)} {sym} {self.value(right, P_CMP + 1)}", P_CMP))
        elif name in ("BUILD_TUPLE", "BUILD_LIST", "BUILD_SET"):
            items = [self.pop_expr(stack) for _ in range(arg)][::-1]
            kind = name[6:].lower()
            if kind == "tuple" and any(isinstance(v, (_Slice, _Interpolation)) for v in items):
                stack.append(_Display("tuple", [("", v) for v in items]))  # a subscript key, a t-string
            else:
                stack.append(_Display(kind, [("", self.render(v)) for v in items]))
        elif name == "BUILD_MAP":
            items = [self.pop_expr(stack) for _ in range(2 * arg)][::-1]
            stack.append(
                _Display("dict", [(self.render(items[i]), self.render(items[i + 1])) for i in range(0, len(items), 2)])
            )
        elif name == "BUILD_CONST_KEY_MAP":
            keys = self.render(self.pop_expr(stack))
            values = [self.render(self.pop_expr(stack)) for _ in range(arg)][::-1]
            if not keys.is_const or type(keys.const) is not tuple:
                raise DecompileError("BUILD_CONST_KEY_MAP without a constant tuple of keys")
            stack.append(_Display("dict", [(self.const(kv), v) for kv, v in zip(keys.const, values)]))
        elif name in ("LIST_APPEND", "SET_ADD", "LIST_EXTEND", "SET_UPDATE", "DICT_UPDATE", "DICT_MERGE", "MAP_ADD"):
            self.extend_display(name, arg, stack)
        elif name == "LIST_TO_TUPLE":
            d = stack.pop()
            if not isinstance(d, _Display) or d.kind != "list":
                raise DecompileError("LIST_TO_TUPLE of something other than a list display")
            stack.append(_Display("tuple", d.items))
        elif name in ("FORMAT_VALUE", "CONVERT_VALUE", "FORMAT_SIMPLE", "FORMAT_WITH_SPEC"):
            self.format(inst, stack)
        elif name == "BUILD_STRING":
            parts: List[Any] = []
            for v in [stack.pop() for _ in range(arg)][::-1]:
                if isinstance(v, _FString):
                    parts += v.parts
                elif isinstance(v, (_Formatted, Expr)):
                    parts.append(v)
                else:
                    raise DecompileError("BUILD_STRING of a value that is not a string piece")
            stack.append(_FString(parts))
        elif name == "BUILD_INTERPOLATION":
            spec = stack.pop() if inst.format_spec else None
            if spec is not None and not isinstance(spec, (_FString, _Formatted, Expr)):
                raise DecompileError("a format spec that is not a string")
            expression = self.pop_expr(stack)
            if not (isinstance(expression, Expr) and expression.is_const and type(expression.const) is str):
                raise DecompileError("BUILD_INTERPOLATION whose expression text is not a str literal")
            stack.append(
                _Interpolation(
                    self.render(self.pop_expr(stack)), expression.const, _CONVERSIONS.get(inst.conversion or ""), spec
                )
            )
        elif name == "BUILD_TEMPLATE":
            interpolations = stack.pop()
            stack.append(self.template(stack.pop(), interpolations))
        elif name in ("CALL", "CALL_FUNCTION", "CALL_METHOD", "CALL_KW", "CALL_FUNCTION_KW"):
            self.call(inst, stack, pending_kw=self.pending_kw(k))
        elif name == "KW_NAMES":
            pass  # read by the CALL that follows (pending_kw)
        elif name == "CALL_FUNCTION_EX":
            self.call_ex(inst, stack)
        elif name == "PUSH_NULL":
            stack.append(NULL)
        elif name == "POP_TOP":
            v = stack.pop()
            if v is NULL:
                return nxt
            e = self.render(v)
            if e.is_const and e.local is None:
                return nxt  # a constant evaluated for nothing
            self.stmt(out, stack, self.value(e))
        elif name == "RETURN_VALUE":
            v = self.pop_expr(stack)
            self.stmt(out, stack, f"return {self.value(v)}")
            return None
        elif name == "RAISE_VARARGS":
            if arg == 0:
                self.stmt(out, stack, "raise")
            elif arg == 1:
                self.stmt(out, stack, f"raise {self.value(self.pop_expr(stack))}")
            else:
                cause = self.pop_expr(stack)
                exc = self.pop_expr(stack)
                self.stmt(out, stack, f"raise {self.value(exc)} from {self.value(cause)}")
            return None
        elif name == "LOAD_ASSERTION_ERROR":
            stack.append(Expr(self.const_name(AssertionError), stable=True))
        elif name == "LOAD_SMALL_INT":
            stack.append(self.const(inst.argval))
        elif name == "LOAD_COMMON_CONSTANT":
            value = inst.argval
            if value is None or type(value) in (bool, int, str):
                stack.append(self.const(value))
            else:
                stack.append(Expr(self.const_name(value), stable=True))
        elif name in ("UNPACK_SEQUENCE", "UNPACK_EX"):
            return self.unpack(k, inst, stack, out)
        elif name in ("DUP_TOP", "DUP_TOP_TWO", "COPY"):
            n = 1 if name == "DUP_TOP" else 2 if name == "DUP_TOP_TWO" else arg
            copies = 2 if name == "DUP_TOP_TWO" else 1
            # a copied expression is evaluated once: bind it (and what is below it) first
            self.spill(out, stack, lambda e: not e.stable and e.local is None, upto=len(stack) - n + copies)
            if name == "DUP_TOP_TWO":
                stack.extend(stack[-2:])
            else:
                src = stack[-n]
                if isinstance(src, (_MethodHead, _SelfSlot)):
                    raise DecompileError("a copied method slot")
                stack.append(src)
        elif name in ("ROT_TWO", "ROT_THREE", "ROT_FOUR", "ROT_N", "SWAP"):
            if self.unstable(stack) > 1:
                self.spill(out, stack, lambda e: not e.stable and e.local is None)
            if name == "SWAP":
                stack[-1], stack[-arg] = stack[-arg], stack[-1]
            else:
                n = {"ROT_TWO": 2, "ROT_THREE": 3, "ROT_FOUR": 4}.get(name, arg)
                top = stack.pop()
                stack.insert(len(stack) - n + 1, top)
        elif name in JUMP_CONDITIONS:
            return self.branch(k, inst, stack, out, visited, main)
        else:
            raise DecompileError(f"{name} is not handled")
        return nxt

    # ---------------------------------------------------------------- statements
    def store_name(self, inst: Instruction, target: str, stack: List[Any], out: List[Tuple[int, str]]) -> None:
        kind = inst.opname
        self.use("derefs" if "DEREF" in kind else "global_stores" if "GLOBAL" in kind else "fast", target)
        val = self.pop_expr(stack)
        self.stmt(out, stack, self.assignment(target, val), stores=[target])

    def assignment(self, target: str, val: Any) -> str:
        e = self.render(val)
        if e.inplace is not None:
            left, sym, right = e.inplace
            if self.render(left).text == target:
                return f"{target} {sym} {self.value(right)}"
        return f"{target} = {self.value(e)}"

    def binary(self, stack: List[Any], sym: str) -> None:
        right = self.render(self.pop_expr(stack))
        left = self.render(self.pop_expr(stack))
        if sym.endswith("=") and sym not in ("==", "!=", "<=", ">="):
            stack.append(Expr("", stable=False, inplace=(left, sym, right)))
            return
        prec = _BINARY_PREC[sym]
        if sym == "**":
            text = f"{self.value(left, P_AWAIT)} ** {self.value(right, P_UNARY)}"
        else:
            text = f"{self.value(left, prec)} {sym} {self.value(right, prec + 1)}"
        stack.append(Expr(text, prec))

    def intrinsic(self, inst: Instruction, stack: List[Any]) -> None:
        descs = getattr(dis, "_intrinsic_1_descs", [])
        what = descs[inst.arg] if inst.arg is not None and inst.arg < len(descs) else "?"
        if what == "INTRINSIC_UNARY_POSITIVE":
            v = self.pop_expr(stack)
            stack.append(Expr(f"+{self.value(v, P_UNARY)}", P_UNARY))
        elif what == "INTRINSIC_LIST_TO_TUPLE":
            d = stack.pop()
            if not isinstance(d, _Display) or d.kind != "list":
                raise DecompileError("LIST_TO_TUPLE of something other than a list display")
            stack.append(_Display("tuple", d.items))
        else:
            raise DecompileError(f"CALL_INTRINSIC_1 {what} is not handled")

    def extend_display(self, name: str, arg: int, stack: List[Any]) -> None:
        if name == "MAP_ADD":
            value = self.render(self.pop_expr(stack))
            key = self.render(self.pop_expr(stack))
            items: List[Tuple[Any, Any]] = [(key, value)]
        else:
            v = self.render(self.pop_expr(stack))
            star = name in ("LIST_EXTEND", "SET_UPDATE")
            if name in ("DICT_UPDATE", "DICT_MERGE"):
                items = [("**", v)]
            elif star and v.is_const and type(v.const) in (tuple, frozenset):
                items = [("", self.const(x)) for x in v.const]  # [1, 2, 3] is BUILD_LIST + LIST_EXTEND (1, 2, 3)
            else:
                items = [("*" if star else "", v)]
        d = stack[-arg]
        if not isinstance(d, _Display):
            raise DecompileError(f"{name} into something other than a display being built")
        stack[-arg] = _Display(d.kind, d.items + items)

    def format(self, inst: Instruction, stack: List[Any]) -> None:
        name = inst.opname
        if name == "CONVERT_VALUE":
            v = self.pop_expr(stack)
            stack.append(_Formatted(self.render(v), _CONVERSIONS[inst.conversion or ""]))
            return
        spec = None
        if inst.format_spec:
            spec = stack.pop()
            if not isinstance(spec, (_FString, _Formatted, Expr)):
                raise DecompileError("a format spec that is not a string")
        v = stack.pop()
        conv = _CONVERSIONS.get(inst.conversion or "")
        if isinstance(v, _Formatted) and v.spec is None and conv is None:
            stack.append(_Formatted(v.value, v.conv, spec))
        elif isinstance(v, Expr):
            stack.append(_Formatted(v, conv, spec))
        else:
            raise DecompileError(f"{name} of something that is not a value")

    def pending_kw(self, k: int) -> Optional[Tuple[str, ...]]:
        """3.11/3.12: the names of a KW_NAMES before this CALL (PRECALL in between on 3.11)."""
        j = k - 1
        while j >= 0 and self.insts[j].opname in ("PRECALL", "CACHE", "EXTENDED_ARG"):
            j -= 1
        if j >= 0 and self.insts[j].opname == "KW_NAMES":
            names = self.insts[j].kw_names
            if names is None:
                raise DecompileError("KW_NAMES without the code's constants")
            return names
        return None

    def call(self, inst: Instruction, stack: List[Any], pending_kw: Optional[Tuple[str, ...]]) -> None:
        shape = call_shape(inst)
        assert shape is not None
        kwnames: Tuple[str, ...] = ()
        if shape.kw_names_slot:
            names = self.render(stack.pop())
            if not names.is_const:
                raise DecompileError(f"{inst.opname} without constant keyword names")
            kwnames = tuple(names.const)
        elif inst.opname == "CALL" and pending_kw:
            kwnames = pending_kw
        args = [self.pop_expr(stack) for _ in range(shape.args)][::-1]
        if shape.callable_slots == 1:
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

    def callee(self, bottom: Any, top: Any, self_arg: Optional[List[Any]] = None) -> str:
        """The callable of a call, from the two slots below the arguments (one before 3.11)."""
        if top is None:
            return self.atom(bottom)
        if isinstance(bottom, _MethodHead) and isinstance(top, _SelfSlot):
            return f"{self.atom(bottom.obj)}.{bottom.name}"
        if isinstance(top, _MethodHead) and isinstance(bottom, _SelfSlot):
            return f"{self.atom(top.obj)}.{top.name}"
        if bottom is NULL:
            return self.atom(top)
        if top is NULL:
            return self.atom(bottom)
        # [callable, self]: the callable receives the second slot as its first argument
        assert self_arg is not None
        self_arg.insert(0, top)
        return self.atom(bottom)

    def call_ex(self, inst: Instruction, stack: List[Any]) -> None:
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
        if isinstance(args, _Display) and args.kind in ("tuple", "list"):
            parts += [f"*{self.value(v, P_BOR)}" if p == "*" else self.value(v) for p, v in args.items]
        elif isinstance(args, Expr) and args.is_const and type(args.const) is tuple:
            parts += [self.value(self.const(v)) for v in args.const]
        else:
            parts.append(f"*{self.value(args, P_BOR)}")
        if kwargs is not None:
            if isinstance(kwargs, _Display) and kwargs.kind == "dict":
                for k, v in kwargs.items:
                    if k == "**":
                        parts.append(f"**{self.value(v, P_BOR)}")
                    elif isinstance(k, Expr) and k.is_const and type(k.const) is str and k.const.isidentifier():
                        parts.append(f"{k.const}={self.value(v)}")
                    else:
                        parts.append(f"**{{{self.value(k)}: {self.value(v)}}}")
            else:
                parts.append(f"**{self.value(kwargs, P_BOR)}")
        stack.append(Expr(f"{callee}({', '.join(parts)})"))

    def unpack(self, k: int, inst: Instruction, stack: List[Any], out: List[Tuple[int, str]]) -> int:
        v = self.pop_expr(stack)
        if inst.opname == "UNPACK_SEQUENCE":
            before, after, star = inst.arg or 0, 0, False
        else:
            (before, after), star = inst.unpack, True
        n = before + after + int(star)
        # ``a, b = v`` when plain name stores follow, otherwise into temporaries
        follow = self.insts[k + 1 : k + 1 + n]
        simple = len(follow) == n and all(x.opname in ("STORE_FAST", "STORE_GLOBAL", "STORE_DEREF") for x in follow)
        if simple and len({x.argval for x in follow}) == n:
            targets = [x.argval for x in follow]
            for x in follow:
                self.use(
                    "derefs" if "DEREF" in x.opname else "global_stores" if "GLOBAL" in x.opname else "fast", x.argval
                )
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

    def branch(
        self, k: int, inst: Instruction, stack: List[Any], out: List[Tuple[int, str]], visited: Set[int], main: bool
    ) -> Optional[int]:
        name = inst.opname
        keep = name in KEEPS_OPERAND_ON_JUMP
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
        jump_if = JUMP_CONDITIONS[name]
        if jump_if in ("none", "not none"):
            text = f"{self.value(test, P_CMP + 1)} is {'' if jump_if == 'none' else 'not '}None"
            jump_when_true = True
        else:
            text = self.value(test, P_TEST)
            jump_when_true = jump_if == "true"
        target = self.flow.index_of(inst.target)
        # the ``if`` holds the way taken when the condition is true
        inner, rest = (target, k + 1) if jump_when_true else (k + 1, target)
        inner_stack = list(stack) + ([cond] if keep and inner == target else [])
        rest_stack = list(stack) + ([cond] if keep and rest == target else [])
        arm: List[Tuple[int, str]] = []
        try:
            self.path(inner, inner_stack, arm, set(visited), main=False)
        except _Stuck as stuck:
            raise _Stuck(k if main else stuck.index, f"the branch at {name}: {stuck.reason}") from None
        out.append((0, f"if {text}:"))
        out.extend((depth + 1, line) for depth, line in arm)
        stack[:] = rest_stack
        return rest
