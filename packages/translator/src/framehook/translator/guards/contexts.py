"""Identifiers of compilations and the thread-local contexts a translation runs in.

* ``CompileId``/``TraceId``: which frame, which (re)compilation of it, which restart attempt.
* ``CompileContext``: spans one compilation of a frame, across its restarts.
* ``GuardsSet``: the deduplicating set of guards a translation fills (each added guard
  records where it was made, in the translator and in the user's code);
  ``GuardsContext`` holds it inside a ``TracingContext``, with checkpoint/restore/diff for
  restart analysis.
* ``TracingContext``: one attempt; holds the guards gathered so far and the user's stack
  (frame summaries of inlined calls plus the current location), which is attached to any
  exception escaping it as ``exc.real_stack`` -- once, by the innermost context.
* ``GlobalStateContext``: numpy's error state, numpy's and Python's ``random`` states and any
  state registered with ``register_global_state``; checkpoint, restore and diff.

Both contexts live in thread-local storage: a translation on one thread never sees another's.
"""

from __future__ import annotations

import contextlib
import random
import sys
import threading
import traceback
from abc import ABC, abstractmethod
from typing import Any, Callable, Dict, Generic, Iterable, Iterator, List, NamedTuple, Optional, Set, Tuple, TypeVar

import numpy as np

from .model import DuplicateInputs, Guard, Source

__all__ = [
    "CompileId",
    "TraceId",
    "Checkpointable",
    "GuardsSet",
    "GuardsCheckpointState",
    "GuardsContext",
    "CompileContext",
    "TracingContext",
    "compile_context",
    "tracing",
    "GlobalStateContext",
    "GlobalStateCheckpoint",
    "register_global_state",
    "unregister_global_state",
    "registered_global_states",
    "GlobalStateEntry",
    "states_equal",
]

T = TypeVar("T")
_TLS = threading.local()


class CompileId(NamedTuple):
    """``frame_id`` numbers code objects in the order first compiled; ``frame_compile_id``
    counts compilations of that code object (0 first, then one per recompilation)."""

    frame_id: int
    frame_compile_id: int

    def __str__(self) -> str:
        return f"{self.frame_id}/{self.frame_compile_id}"


class TraceId(NamedTuple):
    """A compilation plus its restart attempt; attempt 0 prints like the compile id."""

    compile_id: CompileId
    attempt: int

    def __str__(self) -> str:
        if self.attempt == 0:
            return str(self.compile_id)
        return f"{self.compile_id}_{self.attempt}"


class Checkpointable(ABC, Generic[T]):
    """Something whose state can be snapshotted and put back during a translation."""

    @abstractmethod
    def copy_graphstate(self) -> T:
        """A snapshot that restore_graphstate accepts."""

    @abstractmethod
    def restore_graphstate(self, state: T) -> None:
        """Put the state back to a snapshot."""


# ---------------------------------------------------------------- the guards of an attempt


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


# ---------------------------------------------------------------- compile / tracing contexts


class CompileContext:
    """One compilation of a frame (all its restart attempts)."""

    def __init__(self, compile_id: Optional[CompileId]) -> None:
        if compile_id is not None and not isinstance(compile_id, CompileId):
            raise TypeError(f"CompileContext: compile_id must be a CompileId or None, not {type(compile_id).__name__}")
        self.compile_id = compile_id
        self.attempt = 0

    @staticmethod
    def try_get() -> Optional["CompileContext"]:
        return getattr(_TLS, "compile_context", None)

    @staticmethod
    def get() -> "CompileContext":
        ctx = CompileContext.try_get()
        if ctx is None:
            raise RuntimeError("CompileContext.get() called outside compile_context(...)")
        return ctx

    @staticmethod
    def current_compile_id() -> Optional[CompileId]:
        ctx = CompileContext.try_get()
        return None if ctx is None else ctx.compile_id

    @staticmethod
    def current_trace_id() -> Optional[TraceId]:
        ctx = CompileContext.try_get()
        if ctx is None or ctx.compile_id is None:
            return None
        return TraceId(ctx.compile_id, ctx.attempt)


class TracingContext:
    """Everything one translation attempt accumulates: guards, the user's stack, global state."""

    def __init__(self) -> None:
        self.guards_context: GuardsContext = GuardsContext()
        self.global_context = GlobalStateContext()
        self.frame_summary_stack: List[traceback.FrameSummary] = []
        # where in the innermost frame the translator currently is
        self.loc_in_frame: Optional[traceback.FrameSummary] = None

    @staticmethod
    def try_get() -> Optional["TracingContext"]:
        return getattr(_TLS, "tracing_context", None)

    @staticmethod
    def get() -> "TracingContext":
        ctx = TracingContext.try_get()
        if ctx is None:
            raise RuntimeError("TracingContext.get() must be called within tracing(...)")
        return ctx

    @staticmethod
    def extract_stack() -> traceback.StackSummary:
        """The user's stack as seen by the current translation (empty outside one)."""
        ctx = TracingContext.try_get()
        if ctx is None:
            return traceback.StackSummary()
        stack = list(ctx.frame_summary_stack)
        if ctx.loc_in_frame is not None:
            stack.append(ctx.loc_in_frame)
        return traceback.StackSummary.from_list(stack)

    @staticmethod
    def set_current_loc(filename: str, lineno: Optional[int], name: str) -> None:
        TracingContext.get().loc_in_frame = traceback.FrameSummary(filename, lineno, name, lookup_line=False)

    @staticmethod
    @contextlib.contextmanager
    def current_frame(frame_summary: Optional[traceback.FrameSummary]) -> Iterator[None]:
        """Enter an inlined user frame: push its summary; stamp escaping errors with the stack."""
        ctx = TracingContext.get()
        if frame_summary is not None:
            ctx.frame_summary_stack.append(frame_summary)
        saved_loc = ctx.loc_in_frame
        ctx.loc_in_frame = None
        try:
            yield
        except Exception as e:
            _attach_real_stack(e, ctx.extract_stack())
            raise
        finally:
            if frame_summary is not None:
                ctx.frame_summary_stack.pop()
            ctx.loc_in_frame = saved_loc

    @staticmethod
    @contextlib.contextmanager
    def clear_frame() -> Iterator[None]:
        """Run with an empty user stack (code not attributable to the user, e.g. a backend)."""
        ctx = TracingContext.get()
        saved = ctx.frame_summary_stack, ctx.loc_in_frame
        ctx.frame_summary_stack, ctx.loc_in_frame = [], None
        try:
            yield
        except Exception as e:
            # mark it so outer contexts do not attach a misleading user stack
            _attach_real_stack(e, None)
            raise
        finally:
            ctx.frame_summary_stack, ctx.loc_in_frame = saved

    @staticmethod
    @contextlib.contextmanager
    def patch(**attrs: Any) -> Iterator[None]:
        """Temporarily set attributes of the current tracing context."""
        ctx = TracingContext.get()
        prior = {k: getattr(ctx, k) for k in attrs}
        for k, v in attrs.items():
            setattr(ctx, k, v)
        try:
            yield
        finally:
            for k, v in prior.items():
                setattr(ctx, k, v)


def _attach_real_stack(exc: BaseException, stack: Optional[traceback.StackSummary]) -> None:
    # the innermost context knows the most precise location: never overwrite it
    if not hasattr(exc, "real_stack"):
        try:
            exc.real_stack = stack  # type: ignore[attr-defined]
        except AttributeError:  # pragma: no cover - exceptions with __slots__
            pass


@contextlib.contextmanager
def compile_context(context: Optional[CompileContext]) -> Iterator[Optional[CompileContext]]:
    """Install ``context`` as this thread's compile context for the block."""
    prior = getattr(_TLS, "compile_context", None)
    _TLS.compile_context = context
    try:
        yield context
    finally:
        _TLS.compile_context = prior


@contextlib.contextmanager
def tracing(context: Optional[TracingContext]) -> Iterator[Optional[TracingContext]]:
    """Install ``context`` as this thread's tracing context; errors leaving it get ``real_stack``."""
    prior = getattr(_TLS, "tracing_context", None)
    _TLS.tracing_context = context
    try:
        yield context
    except Exception as e:
        if context is not None:
            _attach_real_stack(e, context.extract_stack())
        raise
    finally:
        _TLS.tracing_context = prior


# ---------------------------------------------------------------- global state


class GlobalStateEntry(NamedTuple):
    name: str
    getter: Callable[[], Any]
    setter: Optional[Callable[[Any], object]]  # what it returns is ignored (np.seterr's old state)
    guarded: bool


def _np_random_set(state: Any) -> None:
    np.random.set_state(state)


def _builtin_entries() -> Dict[str, GlobalStateEntry]:
    return {
        # numpy's floating-point error handling changes results (warn vs raise), so guard it
        "numpy.errstate": GlobalStateEntry("numpy.errstate", np.geterr, lambda s: np.seterr(**s), True),
        # random states are preserved across translation but never guarded
        "numpy.random": GlobalStateEntry("numpy.random", np.random.get_state, _np_random_set, False),
        "random": GlobalStateEntry("random", random.getstate, random.setstate, False),
    }


_registry: Dict[str, GlobalStateEntry] = _builtin_entries()
_registry_lock = threading.Lock()


def register_global_state(
    name: str, getter: Callable[[], Any], setter: Optional[Callable[[Any], None]] = None, *, guarded: bool = True
) -> None:
    """Track a piece of global state: saved before and restored after every translation
    (when ``setter`` is given), compared by the GLOBAL_STATE guard when ``guarded``."""
    if not isinstance(name, str) or not name:
        raise TypeError("register_global_state: name must be a non-empty str")
    if not callable(getter):
        raise TypeError(f"register_global_state({name!r}): getter must be callable, got {type(getter).__name__}")
    if setter is not None and not callable(setter):
        raise TypeError(f"register_global_state({name!r}): setter must be callable or None")
    with _registry_lock:
        _registry[name] = GlobalStateEntry(name, getter, setter, guarded)


def unregister_global_state(name: str) -> None:
    with _registry_lock:
        if name not in _registry:
            raise KeyError(f"no global state named {name!r} is registered")
        if name in _builtin_entries():
            raise ValueError(f"{name!r} is built in and cannot be unregistered")
        del _registry[name]


def registered_global_states() -> Dict[str, GlobalStateEntry]:
    with _registry_lock:
        return dict(_registry)


_PLAIN = frozenset({int, float, str, bytes, bool, type(None)})


def states_equal(a: Any, b: Any) -> bool:
    """Equality that understands numpy arrays nested in tuples, lists and dicts."""
    if isinstance(a, np.ndarray) or isinstance(b, np.ndarray):
        return (
            isinstance(a, np.ndarray)
            and isinstance(b, np.ndarray)
            and a.dtype == b.dtype
            and a.shape == b.shape
            and bool(np.array_equal(a, b))
        )
    if isinstance(a, (tuple, list)):
        if type(a) is not type(b) or len(a) != len(b):
            return False
        if _PLAIN.issuperset(map(type, a)):
            return a == b  # random.getstate()'s 625 ints: one C comparison, not 625 calls
        return all(states_equal(x, y) for x, y in zip(a, b))
    if isinstance(a, dict):
        return isinstance(b, dict) and a.keys() == b.keys() and all(states_equal(a[k], b[k]) for k in a)
    try:
        return bool(a == b)
    except Exception:
        return a is b


class GlobalStateCheckpoint:
    """A snapshot of every registered global state, by name."""

    def __init__(self, values: Dict[str, Any]) -> None:
        self.values = values

    def diff(self, other: "GlobalStateCheckpoint") -> Optional[Set[str]]:
        """Names whose values differ (or exist on one side only); None when equal."""
        names = set(self.values) ^ set(other.values)
        for name in set(self.values) & set(other.values):
            if not states_equal(self.values[name], other.values[name]):
                names.add(name)
        return names or None

    def __eq__(self, other: object) -> bool:
        return isinstance(other, GlobalStateCheckpoint) and self.diff(other) is None

    __hash__ = None  # type: ignore[assignment]


class GlobalStateContext(Checkpointable[GlobalStateCheckpoint]):
    """Checkpoint/restore of numpy's error state, the random states and registered state."""

    def copy_graphstate(self) -> GlobalStateCheckpoint:
        return GlobalStateCheckpoint({name: e.getter() for name, e in registered_global_states().items()})

    def restore_graphstate(self, state: GlobalStateCheckpoint) -> None:
        if not isinstance(state, GlobalStateCheckpoint):
            raise TypeError(f"restore_graphstate expects a GlobalStateCheckpoint, got {type(state).__name__}")
        entries = registered_global_states()
        for name, value in state.values.items():
            entry = entries.get(name)
            if entry is not None and entry.setter is not None:
                entry.setter(value)

    @staticmethod
    def guarded_snapshot() -> Dict[str, Any]:
        """Current values of the states the GLOBAL_STATE guard compares."""
        return {name: e.getter() for name, e in registered_global_states().items() if e.guarded}
