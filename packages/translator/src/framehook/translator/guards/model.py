"""Guards: conditions under which a compiled frame may be reused.

A ``Guard`` pairs a source with a kind (``GuardKind``); the guard builder
(``guard_builder.py``) turns a set of them into one check function. ``GuardsSet`` is
the deduplicating collection a translation fills; ``GuardsContext`` holds it inside a
``TracingContext`` and supports checkpoint/restore/diff for restart analysis.
"""

from __future__ import annotations

import enum
import logging
import sys
import traceback
import weakref
from dataclasses import dataclass, field
from typing import Any, Callable, Iterable, Iterator, List, Optional, Set, Tuple

from .contexts import Checkpointable, TracingContext
from .sources import GuardSource, Source

__all__ = [
    "GuardKind",
    "Guard",
    "GuardsSet",
    "GuardsCheckpointState",
    "GuardsContext",
    "GlobalStateSource",
    "DuplicateInputs",
]

log = logging.getLogger("framehook.translator.guards")


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

    @property
    def create_fn(self) -> Callable[..., Any]:
        """The builder method that compiles this kind of guard."""
        from .builder import GuardBuilder

        return getattr(GuardBuilder, self.kind.name)

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


class GuardsSet:
    """A set of guards; adding one records where it was made (translator and user stack)."""

    def __init__(self, inner: Optional[Set[Guard]] = None) -> None:
        self.inner: Set[Guard] = set() if inner is None else inner

    def __iter__(self) -> Iterator[Guard]:
        return iter(self.inner)

    def __len__(self) -> int:
        return len(self.inner)

    def __contains__(self, guard: object) -> bool:
        return guard in self.inner

    def __bool__(self) -> bool:
        return bool(self.inner)

    def __sub__(self, other: "GuardsSet") -> "GuardsSet":
        return GuardsSet(self.inner - other.inner)

    def add(self, guard: Guard, *, collect_debug_stack: bool = True, skip: int = 0) -> None:
        if guard in self.inner:
            return
        if collect_debug_stack:
            if guard._stack is None:
                guard._stack = _raw_stack(sys._getframe(1 + skip))
            if guard.user_stack is None:
                guard.user_stack = TracingContext.extract_stack()
        self.inner.add(guard)

    def update(self, *others: Iterable[Guard]) -> None:
        for other in others:
            for guard in other:
                self.add(guard, skip=1)

    def remove_guards_with_source(self, source: Source) -> None:
        self.inner = {g for g in self.inner if g.originating_source != source}

    def sorted(self) -> List[Guard]:
        return sorted(self.inner, key=Guard.sort_key)


def _raw_stack(frame: Any) -> List[Tuple[str, int, str, None]]:
    """``frame`` and its callers, outermost first, as rows for ``StackSummary.from_list``:
    what ``traceback.extract_stack`` gives, without reading source files (a stat per file,
    tens of microseconds per guard) for a stack that is rarely looked at."""
    rows = []
    while frame is not None:
        code = frame.f_code
        rows.append((code.co_filename, frame.f_lineno, code.co_name, None))
        frame = frame.f_back
    rows.reverse()
    return rows


class GuardsCheckpointState:
    """A snapshot of a GuardsContext."""

    def __init__(self, guards: Set[Guard]) -> None:
        self.guards = guards

    def diff(self, other: "GuardsCheckpointState") -> Optional[Set[Guard]]:
        """Guards here but not in ``other``; None when there are none."""
        delta = self.guards - other.guards
        return delta or None

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, GuardsCheckpointState):
            return NotImplemented
        return self.guards == other.guards

    __hash__ = None  # type: ignore[assignment]


class GuardsContext(Checkpointable[GuardsCheckpointState]):
    """The guards of the current translation attempt."""

    def __init__(self) -> None:
        self.guards = GuardsSet()
        self.duplicate_inputs: List[DuplicateInputs] = []

    def copy_graphstate(self) -> GuardsCheckpointState:
        return GuardsCheckpointState(set(self.guards.inner))

    def restore_graphstate(self, state: GuardsCheckpointState) -> None:
        if not isinstance(state, GuardsCheckpointState):
            raise TypeError(f"restore_graphstate expects a GuardsCheckpointState, got {type(state).__name__}")
        self.guards = GuardsSet(set(state.guards))
