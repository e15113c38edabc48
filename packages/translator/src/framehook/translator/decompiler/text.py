"""Stack values as Python text: precedence-aware expressions, subscripts, displays,
f-strings and t-strings (a mixin of the decompiler's walker)."""

from __future__ import annotations

from typing import Any, Callable, List, Optional, Sequence

from .stack_values import (
    NULL,
    P_ATOM,
    P_BOR,
    P_NOT,
    P_TEST,
    P_UNARY,
    INPLACE_FUNCS,
    TSTRING_UNSAFE,
    DecompileError,
    Display,
    Expr,
    Formatted,
    FString,
    Interpolation,
    MethodHead,
    SelfSlot,
    Slice,
    literal_text,
)

__all__ = ["TextMixin"]


class TextMixin:
    """Turns stack values into text; ``const_name`` names constants without a literal."""

    const_name: Callable[[Any], str]

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
        if isinstance(v, Display):
            return Expr(self.display_text(v))
        if isinstance(v, Slice):
            return Expr(f"{self.const_name(slice)}({', '.join(self.value(p) for p in v.parts)})")
        if isinstance(v, (FString, Formatted)):
            return Expr(self.fstring(v if isinstance(v, FString) else FString([v])))
        if isinstance(v, MethodHead):
            return Expr(f"{self.atom(v.obj)}.{v.name}")
        if isinstance(v, Interpolation):
            return Expr(self.interpolation_call(v))
        raise DecompileError(f"{v!r} is not a value")

    def value(self, v: Any, prec: int = P_TEST) -> str:
        """Text of ``v`` usable where an expression of precedence ``prec`` is expected."""
        e = self.render(v)
        text = e.text
        if e.inplace is not None:
            left, sym, right = e.inplace
            text = f"{self.const_name(INPLACE_FUNCS[sym[:-1]])}({self.value(left)}, {self.value(right)})"
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
        if isinstance(v, Slice):
            return self.slice_text(v)
        if isinstance(v, Display) and v.kind == "tuple" and v.items and all(p == "" for p, _ in v.items):
            parts = [self.slice_text(x) if isinstance(x, Slice) else self.value(x) for _, x in v.items]
            return ", ".join(parts) + ("," if len(parts) == 1 else "")
        return self.value(v)

    def slice_text(self, s: Slice) -> str:
        def part(e: Expr) -> str:
            return "" if e.is_const and e.const is None else self.value(e)

        parts = [part(p) for p in s.parts]
        if len(parts) == 3 and parts[2] == "":
            return f"{parts[0]}:{parts[1]}:{self.value(s.parts[2])}"
        return ":".join(parts)

    def display_text(self, d: Display) -> str:
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

    def fstring(self, f: FString) -> str:
        body = self.fstring_body(f)
        for quote in ("'", '"', "'''", '"""'):
            if quote not in body and not body.endswith(quote[0]):
                return f"f{quote}{body}{quote}"
        raise DecompileError("an f-string with every kind of quote in it")

    def spec_body(self, spec: Any) -> Optional[str]:
        """A format spec's text inside a replacement field, or None when its literal text
        has braces (which no field can hold)."""
        spec = spec if isinstance(spec, FString) else FString([spec])
        if any(isinstance(p, Expr) and type(p.const) is str and ("{" in p.const or "}" in p.const) for p in spec.parts):
            return None
        return self.fstring_body(spec)

    def fstring_body(self, f: FString) -> str:
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

    def interpolation_call(self, v: Interpolation) -> str:
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
            interps: List[Interpolation] = []
        elif (
            isinstance(interpolations, Display)
            and interpolations.kind == "tuple"
            and all(p == "" and isinstance(v, Interpolation) for p, v in interpolations.items)
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

    def template_body(self, strings: Sequence[str], interps: List[Interpolation]) -> Optional[str]:
        def literal(text: str) -> str:
            return repr(text)[1:-1].replace("{", "{{").replace("}", "}}")

        out = [literal(strings[0])]
        for interp, text in zip(interps, strings[1:]):
            inner = self.value(interp.value)
            # the text must be the stored expression and must lex as one: no quotes,
            # escapes, comments, braces or the characters that end an expression
            if inner != interp.expression or inner != inner.strip() or any(c in inner for c in TSTRING_UNSAFE):
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
        if v is NULL or isinstance(v, (SelfSlot, MethodHead)):
            raise DecompileError(f"{v!r} used as a value")
        return v
