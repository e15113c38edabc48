"""Sources: where a value the translator reads came from, as a chain from a frame root.

A source has three faces:

* ``name()``: a Python expression that evaluates to the value inside a check function,
  where ``L`` is the frame's ``f_locals`` dict and ``G`` its globals (``L['x'].shape[0]``);
* ``guard_source()``: the kind of root it hangs from (local, global, constant, ...);
* ``reconstruct(codegen)``: bytecode that loads the value inside the frame itself.

Sources are frozen dataclasses: equal chains are equal and hash alike, so guards keyed
on them deduplicate.
"""

from __future__ import annotations

import builtins
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Callable, Dict, Optional, Tuple

from .model import GuardSource, Source

if TYPE_CHECKING:  # pragma: no cover
    from ..bytecode.codegen import Codegen

__all__ = [
    "GuardSource",
    "Source",
    "ChainedSource",
    "LocalSource",
    "GlobalSource",
    "ConstantSource",
    "AttrSource",
    "ItemSource",
    "IndexSource",
    "ClosureCellSource",
    "TypeSource",
    "LengthSource",
    "NdarrayPropertySource",
    "is_literal",
    "NDARRAY_PROPERTIES",
    "read_value",
]


def is_literal(value: Any) -> bool:
    """True for values whose repr() is an expression evaluating back to an equal value."""
    if value is None or value is Ellipsis or isinstance(value, (bool, int, str, bytes)):
        return True
    if isinstance(value, float):
        return value == value and value not in (float("inf"), float("-inf"))
    if isinstance(value, complex):
        return is_literal(value.real) and is_literal(value.imag)
    if type(value) in (tuple, frozenset):
        return all(is_literal(v) for v in value)
    return False


@dataclass(frozen=True)
class ChainedSource(Source):
    """A source computed from another one."""

    base: Source

    def guard_source(self) -> GuardSource:
        return self.base.guard_source()

    def root(self) -> Source:
        return self.base.root()

    def name(self) -> str:
        return self.format_with(self.base.name())

    def format_with(self, base: str) -> str:
        """This source's expression with ``base`` standing for the base's expression."""
        raise NotImplementedError


@dataclass(frozen=True)
class LocalSource(Source):
    """An argument, local or free variable of the frame (``cell_or_freevar``: load with LOAD_DEREF)."""

    local_name: str
    cell_or_freevar: bool = False

    def name(self) -> str:
        return f"L[{self.local_name!r}]"

    def guard_source(self) -> GuardSource:
        return GuardSource.LOCAL

    def reconstruct(self, codegen: "Codegen") -> None:
        if self.cell_or_freevar:
            codegen.load_deref(self.local_name)
        else:
            codegen.load_fast(self.local_name)


@dataclass(frozen=True)
class SyntheticLocalSource(LocalSource):
    """A local the translator created for its own use."""

    def guard_source(self) -> GuardSource:
        return GuardSource.SYNTHETIC_LOCAL


@dataclass(frozen=True)
class GlobalSource(Source):
    """A module global of the frame."""

    global_name: str

    def name(self) -> str:
        return f"G[{self.global_name!r}]"

    def guard_source(self) -> GuardSource:
        return GuardSource.GLOBAL

    def reconstruct(self, codegen: "Codegen") -> None:
        codegen.load_global(self.global_name)


@dataclass(frozen=True)
class ConstantSource(Source):
    """A literal value (None, numbers, strings, bytes, tuples of those)."""

    value: Any

    def __post_init__(self) -> None:
        if not is_literal(self.value):
            raise TypeError(f"ConstantSource needs a literal value, got {type(self.value).__name__}")

    def name(self) -> str:
        return repr(self.value)

    def guard_source(self) -> GuardSource:
        return GuardSource.CONSTANT

    def reconstruct(self, codegen: "Codegen") -> None:
        codegen.load_const(self.value)


@dataclass(frozen=True)
class AttrSource(ChainedSource):
    """``base.member`` (dotted members allowed: ``base.a.b``)."""

    member: str = ""

    def __post_init__(self) -> None:
        if not self.member or not all(part.isidentifier() for part in self.member.split(".")):
            raise ValueError(f"AttrSource: {self.member!r} is not an attribute name")

    def format_with(self, base: str) -> str:
        return f"{base}.{self.member}"

    def reconstruct(self, codegen: "Codegen") -> None:
        self.base.reconstruct(codegen)
        for part in self.member.split("."):
            codegen.load_attr(part)


@dataclass(frozen=True)
class ItemSource(ChainedSource):
    """``base[key]`` for a literal key (dict items, mapping lookups)."""

    key: Any = None

    def __post_init__(self) -> None:
        if not is_literal(self.key):
            raise TypeError(f"ItemSource key must be a literal, got {type(self.key).__name__}")

    def format_with(self, base: str) -> str:
        return f"{base}[{self.key!r}]"

    def reconstruct(self, codegen: "Codegen") -> None:
        self.base.reconstruct(codegen)
        codegen.load_const(self.key)
        codegen.subscr()


@dataclass(frozen=True)
class IndexSource(ChainedSource):
    """``base[index]`` for an integer index into a sequence."""

    index: int = 0

    def __post_init__(self) -> None:
        if not isinstance(self.index, int) or isinstance(self.index, bool):
            raise TypeError(f"IndexSource index must be an int, got {type(self.index).__name__}")

    def format_with(self, base: str) -> str:
        return f"{base}[{self.index}]"

    def reconstruct(self, codegen: "Codegen") -> None:
        self.base.reconstruct(codegen)
        codegen.load_const(self.index)
        codegen.subscr()


@dataclass(frozen=True)
class ClosureCellSource(ChainedSource):
    """The contents of closure cell ``index`` of a function: ``base.__closure__[i].cell_contents``."""

    index: int = 0

    def format_with(self, base: str) -> str:
        return f"{base}.__closure__[{self.index}].cell_contents"

    def reconstruct(self, codegen: "Codegen") -> None:
        self.base.reconstruct(codegen)
        codegen.load_attr("__closure__")
        codegen.load_const(self.index)
        codegen.subscr()
        codegen.load_attr("cell_contents")


@dataclass(frozen=True)
class TypeSource(ChainedSource):
    """``type(base)``."""

    def format_with(self, base: str) -> str:
        return f"type({base})"

    def reconstruct(self, codegen: "Codegen") -> None:
        codegen.call_builtin(type, lambda: self.base.reconstruct(codegen))


@dataclass(frozen=True)
class LengthSource(ChainedSource):
    """``len(base)``."""

    def format_with(self, base: str) -> str:
        return f"len({base})"

    def reconstruct(self, codegen: "Codegen") -> None:
        codegen.call_builtin(len, lambda: self.base.reconstruct(codegen))


#: the numpy array properties a source may read (all cheap, none copies data)
NDARRAY_PROPERTIES: Tuple[str, ...] = (
    "shape",
    "dtype",
    "ndim",
    "strides",
    "size",
    "itemsize",
    "flags.writeable",
    "flags.c_contiguous",
    "flags.f_contiguous",
)


@dataclass(frozen=True)
class NdarrayPropertySource(ChainedSource):
    """A property of a numpy array (``base.shape``, ``base.flags.writeable``, ...),
    optionally one element of it (``base.shape[1]``)."""

    prop: str = "shape"
    index: Any = None

    def __post_init__(self) -> None:
        if self.prop not in NDARRAY_PROPERTIES:
            raise ValueError(
                f"NdarrayPropertySource: unknown property {self.prop!r}; known: {', '.join(NDARRAY_PROPERTIES)}"
            )
        if self.index is not None and self.prop not in ("shape", "strides"):
            raise ValueError(f"NdarrayPropertySource: only shape and strides can be indexed, not {self.prop}")

    def format_with(self, base: str) -> str:
        text = f"{base}.{self.prop}"
        return text if self.index is None else f"{text}[{self.index}]"

    def reconstruct(self, codegen: "Codegen") -> None:
        self.base.reconstruct(codegen)
        for part in self.prop.split("."):
            codegen.load_attr(part)
        if self.index is not None:
            codegen.load_const(self.index)
            codegen.subscr()


_UNREAD = object()  # _read: this source's expression must be evaluated


def _read_attr(source: Any, base: Any) -> Any:
    for part in source.member.split("."):
        base = getattr(base, part)
    return base


def _read_property(source: Any, base: Any) -> Any:
    for part in source.prop.split("."):
        base = getattr(base, part)
    return base if source.index is None else base[source.index]


_READ_STEPS: Dict[type, Callable[[Any, Any], Any]] = {
    AttrSource: _read_attr,
    ItemSource: lambda source, base: base[source.key],
    IndexSource: lambda source, base: base[source.index],
    TypeSource: lambda source, base: type(base),
    LengthSource: lambda source, base: len(base),
    NdarrayPropertySource: _read_property,
}


def _read(source: Source, f_locals: Dict[str, Any], f_globals: Dict[str, Any]) -> Any:
    t = type(source)
    if t is LocalSource:
        return f_locals[source.local_name]  # type: ignore[attr-defined]
    if t is GlobalSource:
        return f_globals[source.global_name]  # type: ignore[attr-defined]
    if t not in _READ_STEPS:
        return _UNREAD
    base = _read(source.base, f_locals, f_globals)  # type: ignore[attr-defined]
    if base is _UNREAD:
        return _UNREAD
    return _READ_STEPS[t](source, base)


def read_value(
    source: Source, f_locals: Dict[str, Any], f_globals: Dict[str, Any], scope: Optional[Dict[str, Any]] = None
) -> Any:
    """The value ``source`` names on a frame, read as its expression ``name()`` would read it;
    the common sources without compiling the expression (10-15 us each). ``scope``: the
    namespace to evaluate the others in (default: ``L``, ``G`` and the builtins)."""
    value = _read(source, f_locals, f_globals)
    if value is _UNREAD:
        if scope is None:
            scope = {"L": f_locals, "G": f_globals, "__builtins__": builtins}
        return eval(source.name(), scope)  # noqa: S307 - expressions the translator wrote
    return value
