"""The guard data model: conditions under which a compiled frame may be reused.

A ``Guard`` pairs a ``Source`` (where a value came from; the concrete sources are in
``sources.py``) with a kind (``GuardKind``). This module imports none of the others: the
guard builder (``builder.py``) turns a set of guards into one check function, a method per
kind (``Guard.create(builder)`` calls the one named after its kind); ``GuardsSet``, the
deduplicating collection a translation fills, and ``GuardsContext``, which holds it inside
a ``TracingContext``, are in ``contexts.py``.
"""

from __future__ import annotations

import enum
import functools
import logging
import traceback
import weakref
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Callable, List, Optional, Tuple

if TYPE_CHECKING:  # pragma: no cover
    from ..bytecode.codegen import Codegen

__all__ = [
    "GuardSource",
    "Source",
    "GuardKind",
    "Guard",
    "GlobalStateSource",
    "DuplicateInputs",
]

log = logging.getLogger("framehook.translator.guards")


class GuardSource(enum.Enum):
    """The root a source chain hangs from."""

    LOCAL = 0
    GLOBAL = 1
    CONSTANT = 2
    SYNTHETIC_LOCAL = 3  # a value the translator made up, held in a local it created
    EPHEMERAL = 4  # recreated on every call: never guard on its identity

    def is_local(self) -> bool:
        return self in (GuardSource.LOCAL, GuardSource.SYNTHETIC_LOCAL)


@dataclass(frozen=True)
class Source:
    """Base of every source."""

    def name(self) -> str:
        raise NotImplementedError

    def guard_source(self) -> GuardSource:
        raise NotImplementedError

    def reconstruct(self, codegen: "Codegen") -> None:
        raise NotImplementedError

    def root(self) -> "Source":
        return self

    def is_local(self) -> bool:
        return self.guard_source().is_local()

    def is_ephemeral(self) -> bool:
        return self.guard_source() is GuardSource.EPHEMERAL

    def subguards_allowed(self) -> bool:
        """False for synthetic values: guarding on their parts would guard nothing real."""
        return self.guard_source() is not GuardSource.SYNTHETIC_LOCAL

    def make_guard(self, kind: "GuardKind", **details: Any) -> "Guard":
        if self.guard_source() is GuardSource.CONSTANT:
            raise ValueError(f"cannot guard on constant source {self.name()}: it never changes")
        return Guard(self, kind, details=tuple(sorted(details.items())))

    def __str__(self) -> str:
        return self.name()


class GuardKind(enum.Enum):
    """What a guard checks. The order is the order guards on one source are checked in."""

    TYPE_MATCH = 0  # type(x) is T
    ID_MATCH = 1  # x is obj
    CONSTANT_MATCH = 2  # x is None/True/False/..., else equality with a literal
    EQUALS_MATCH = 3  # type(x) is T and x == value
    LENGTH_CHECK = 4  # type(x) is T and len(x) == n
    DICT_KEYS = 5  # type(x) is T and list(x) == keys (order included)
    NDARRAY_MATCH = 6  # ndarray dtype, ndim, static dims, strides/contiguity, writeable
    GLOBAL_STATE = 7  # numpy's error state and registered global state unchanged
    DUPLICATE_INPUT = 8  # x is y (two sources alias one object)
    DISTINCT_INPUT = 9  # x is not y (a mutated object does not alias another one read)


@dataclass(frozen=True)
class GlobalStateSource(Source):
    """Pseudo-source of the GLOBAL_STATE guard (its name is not an expression)."""

    def name(self) -> str:
        return "___global_state"

    def guard_source(self) -> GuardSource:
        return GuardSource.GLOBAL

    def make_guard(self, kind: "GuardKind", **details: Any) -> "Guard":
        return Guard(self, kind, details=tuple(sorted(details.items())))


@functools.lru_cache(maxsize=None)
def _builder_method(kind_name: str) -> Callable[..., Any]:
    def create_fn(builder: Any, guard: "Guard") -> Any:
        return getattr(builder, kind_name)(guard)

    create_fn.__name__ = create_fn.__qualname__ = kind_name
    return create_fn


@dataclass(eq=False)
class Guard:
    """One guard. Equality and hash cover what is checked (source, kind, details),
    not the debugging information filled in later."""

    originating_source: Source
    kind: GuardKind
    details: Tuple[Tuple[str, Any], ...] = ()
    # filled in by the builder, for export and debugging
    guard_types: Optional[List[str]] = None
    code_list: Optional[List[str]] = None
    obj_weakref: Optional[Any] = None
    guarded_class_weakref: Optional[Any] = None
    # where in the user's code the guard was made; where in the translator: ``stack``
    user_stack: Optional[traceback.StackSummary] = None
    _stack: Any = field(default=None, repr=False)  # a StackSummary, or raw (file, line, name) rows
    _hash: Optional[int] = field(default=None, repr=False)

    def __post_init__(self) -> None:
        if not isinstance(self.originating_source, Source):
            raise TypeError(f"Guard source must be a Source, got {type(self.originating_source).__name__}")
        if not isinstance(self.kind, GuardKind):
            raise TypeError(f"Guard kind must be a GuardKind, got {self.kind!r}")
        if self.kind in (GuardKind.DUPLICATE_INPUT, GuardKind.DISTINCT_INPUT) and not isinstance(
            self.detail("other"), Source
        ):
            raise ValueError(f"a {self.kind.name} guard needs other=<Source>")

    @property
    def stack(self) -> Optional[traceback.StackSummary]:
        """Where in the translator the guard was made (outermost frame first)."""
        if self._stack is not None and not isinstance(self._stack, traceback.StackSummary):
            self._stack = traceback.StackSummary.from_list(self._stack)  # source lines read only now
        return self._stack

    @stack.setter
    def stack(self, value: Optional[traceback.StackSummary]) -> None:
        self._stack = value

    def detail(self, key: str, default: Any = None) -> Any:
        for k, v in self.details:
            if k == key:
                return v
        return default

    @property
    def name(self) -> str:
        return self.originating_source.name()

    @property
    def source(self) -> GuardSource:
        return self.originating_source.guard_source()

    def _key(self) -> Tuple[Any, ...]:
        return (self.originating_source, self.kind, self.details)

    def __hash__(self) -> int:
        if self._hash is None:
            self._hash = hash(self._key())
        return self._hash

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Guard):
            return NotImplemented
        return self._key() == other._key()

    def sort_key(self) -> Tuple[Any, ...]:
        # aliasing checks go last: they name two sources and assume both were checked already
        name = self.name
        return (
            self.kind in (GuardKind.DUPLICATE_INPUT, GuardKind.DISTINCT_INPUT),
            self.source.value,
            len(name),
            name,
            self.kind.value,
            repr(self.details),
        )

    def __lt__(self, other: "Guard") -> bool:
        return self.sort_key() < other.sort_key()

    @property
    def create_fn(self) -> Callable[..., Any]:
        """The builder method that compiles this kind of guard, as ``create_fn(builder, guard)``:
        the builder's method named after the kind (the builder is passed in, so that this
        model does not import it)."""
        return _builder_method(self.kind.name)

    def create(self, builder: Any) -> None:
        try:
            self.create_fn(builder, self)
        except Exception:
            log.error("error while building guard %s", self.describe())
            if self.user_stack:
                log.error("guard created for user code at:\n%s", "".join(self.user_stack.format()).rstrip())
            raise

    def set_export_info(self, guard_type: str, guarded_class: Any, code_list: List[str], obj_weakref: Any) -> None:
        if self.guard_types is None:
            self.guard_types = []
        self.guard_types.append(guard_type)
        if guarded_class is not None:
            self.guarded_class_weakref = guarded_class
        if self.code_list is None:
            self.code_list = list(code_list)
        else:
            self.code_list.extend(code_list)
        if obj_weakref is not None:
            self.obj_weakref = obj_weakref

    @staticmethod
    def weakref_to_str(ref: Any) -> str:
        # str(weakref) looks up __name__ on the referent, which fails for some objects
        if isinstance(ref, weakref.ReferenceType):
            obj = ref()
            if obj is None:
                return f"<weakref at {hex(id(ref))}; dead>"
            return f"<weakref at {hex(id(ref))}; to '{type(obj).__name__}' at {hex(id(obj))}>"
        return str(ref)

    def describe(self) -> str:
        extra = "".join(f" {k}={v}" for k, v in self.details)
        return f"{self.kind.name}({self.name}){extra}"

    def __repr__(self) -> str:
        return (
            f"Guard({self.source.name.lower()} {self.name!r} {self.kind.name}, "
            f"types={self.guard_types}, code={self.code_list})"
        )

    def __str__(self) -> str:
        lines = [
            f"Name: {self.name!r}",
            f"    Source: {self.source.name.lower()}",
            f"    Kind: {self.kind.name}",
            f"    Details: {dict(self.details)}",
            f"    Guard Types: {self.guard_types}",
            f"    Code List: {self.code_list}",
            f"    Object Weakref: {self.weakref_to_str(self.obj_weakref)}",
            f"    Guarded Class Weakref: {self.weakref_to_str(self.guarded_class_weakref)}",
        ]
        return "\n".join(lines) + "\n"


@dataclass(frozen=True)
class DuplicateInputs:
    """Two sources known to alias one object (turned into a DUPLICATE_INPUT guard)."""

    input_source_a: Source
    input_source_b: Source

    def __post_init__(self) -> None:
        if self.input_source_a == self.input_source_b:
            raise ValueError("DuplicateInputs needs two different sources")

    def to_guard(self) -> Guard:
        return Guard(self.input_source_a, GuardKind.DUPLICATE_INPUT, (("other", self.input_source_b),))
