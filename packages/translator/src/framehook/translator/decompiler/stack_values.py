"""The decompiler's stack values (expressions not evaluated yet, and the parts of
displays, slices, f-strings and calls being built), operator precedence and constants."""

from __future__ import annotations

import ast
import math
import operator
from dataclasses import dataclass, field
from typing import Any, Callable, List, NamedTuple, Optional, Set, Tuple

__all__ = [
    "DecompileError",
    "Stuck",
    "literal_text",
    "Expr",
    "NULL",
    "MethodHead",
    "SelfSlot",
    "Slice",
    "Display",
    "Formatted",
    "FString",
    "Interpolation",
    "At",
    "END",
    "Lines",
    "handles",
]

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

BINARY_PREC = {
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
INPLACE_FUNCS = {
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
#: a conversion's letter after ``!`` in a replacement field
CONVERSIONS = {"str": "s", "repr": "r", "ascii": "a"}
#: characters a t-string's expression text may not hold (they would end or change it)
TSTRING_UNSAFE = frozenset("\\\n'\"#{}:!=")


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
class MethodHead:
    """``obj.name`` loaded as a method (LOAD_METHOD, method LOAD_ATTR): its self slot is a SelfSlot."""

    obj: Expr
    name: str


class SelfSlot:
    def __repr__(self) -> str:
        return "SELF"


@dataclass
class Slice:
    parts: List[Expr]


@dataclass
class Display:
    """A tuple, list, set or dict display being built: items ``(prefix, expr)`` with prefix
    "" or "*" (dict: ``(key, value)`` or ``("**", expr)``)."""

    kind: str
    items: List[Tuple[Any, Any]] = field(default_factory=list)


@dataclass
class Formatted:
    """One ``{value!conv:spec}`` of an f-string (spec: a Formatted/FString or a str Expr)."""

    value: Expr
    conv: Optional[str]
    spec: Any = None


@dataclass
class FString:
    parts: List[Any]  # str Exprs (literal text) and Formatted


@dataclass
class Interpolation:
    """One ``{value!conv:spec}`` of a t-string; ``expression`` is the source text the
    compiler stored for it."""

    value: Expr
    expression: str
    conv: Optional[str]
    spec: Any = None


class Stuck(Exception):
    """The walk cannot go on at instruction ``index``."""

    def __init__(self, index: int, reason: str) -> None:
        super().__init__(reason)
        self.index = index
        self.reason = reason


# ------------------------------------------------------------------ dispatch
#: statements written so far: (indent level, text)
Lines = List[Tuple[int, str]]
#: a handler's answer when the path ends there (None: go on with the next instruction;
#: an index: go on there)
END = -1


class At(NamedTuple):
    """Where the walk is: the instruction's index, the indices this path has run, and
    whether it is the main path (not an arm of an ``if``)."""

    k: int
    visited: Set[int]
    main: bool


def handles(*kinds: str) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
    """Mark a walker method as the handler of the instructions of ``kinds``."""

    def mark(fn: Callable[..., Any]) -> Callable[..., Any]:
        fn.handled_kinds = kinds  # type: ignore[attr-defined]
        return fn

    return mark
