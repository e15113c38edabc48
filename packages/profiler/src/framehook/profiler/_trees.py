"""Post-processing: raw per-thread events into call trees.

Each thread's events are replayed in order against a stack: calls push, exits pop. Frames
that were running when recording started come first (as start frames); whatever is still
open at stop is closed at the stop time. Calls into the profiler itself are spliced out
(what they call stays, under the caller); muted calls are left out with everything they call.
"""

from __future__ import annotations

import struct
import types
from typing import Dict, FrozenSet, Iterator, List, Optional, Sequence, Tuple

from . import _tracer
from ._names import ANNOTATION, C, CACHE_LOOKUP, COMPILED_REGION, PYTHON, TASK, Function, Namer, PathShortener

_EVENT = struct.Struct("=QII")

_RUNTIME_BEGIN = {1: CACHE_LOOKUP, 3: COMPILED_REGION}
_RUNTIME_END = {2: CACHE_LOOKUP, 4: COMPILED_REGION}
_RUNTIME_LABEL = {CACHE_LOOKUP: "cache lookup", COMPILED_REGION: "compiled region"}


class Tag:
    """The instance a tagged call went through."""

    __slots__ = ("class_name", "instance", "arrays", "_cls", "_self_id")

    def __init__(self, cls: type, class_name: str, arrays: Tuple, self_id: int) -> None:
        self.class_name = class_name
        self.instance = -1  # numbered per class once every thread is built
        self.arrays = arrays  # ((attribute, dtype, shape), ...)
        self._cls = cls
        self._self_id = self_id

    def as_dict(self) -> dict:
        return {
            "class": self.class_name,
            "instance": self.instance,
            "arrays": {name: {"dtype": dtype, "shape": list(shape)} for name, dtype, shape in self.arrays},
        }

    def __repr__(self) -> str:
        return f"Tag({self.class_name}#{self.instance})"


class Event:
    """One call (or annotation, or runtime event) in a call tree. Times are in ns."""

    __slots__ = (
        "id",
        "parent",
        "thread_id",
        "function",
        "start_ns",
        "end_ns",
        "children",
        "exception",
        "start_frame",
        "tag",
        "_internal",
    )

    def __init__(
        self,
        function: Function,
        thread_id: int,
        parent: Optional["Event"],
        start_ns: int,
        start_frame: bool = False,
        internal: bool = False,
    ) -> None:
        self.id = 0
        self.function = function
        self.thread_id = thread_id
        self.parent = parent
        self.start_ns = start_ns
        self.end_ns = start_ns
        self.children: List[Event] = []
        self.exception = False
        self.start_frame = start_frame
        self.tag: Optional[Tag] = None
        self._internal = internal

    @property
    def kind(self) -> str:
        return self.function.kind

    @property
    def name(self) -> str:
        return self.function.name

    @property
    def parent_id(self) -> Optional[int]:
        return self.parent.id if self.parent is not None else None

    @property
    def duration_ns(self) -> int:
        return self.end_ns - self.start_ns

    @property
    def self_ns(self) -> int:
        return self.duration_ns - sum(child.duration_ns for child in self.children)

    def walk(self) -> Iterator["Event"]:
        """This event and all its descendants, depth first, in call order."""
        stack = [self]
        while stack:
            event = stack.pop()
            yield event
            stack.extend(reversed(event.children))

    def __repr__(self) -> str:
        return f"Event(#{self.id} {self.kind} {self.name!r} {self.duration_ns}ns)"


class ThreadTree:
    """The call trees of one recorded thread, or of one asyncio task (``task``: its
    coroutine frames and waits, with async_tasks; ``thread_id`` is its thread's)."""

    __slots__ = ("thread_id", "name", "index", "roots", "broken", "event_count", "task")

    def __init__(
        self, thread_id: int, name: str, index: int, broken: bool, event_count: int, task: bool = False
    ) -> None:
        self.thread_id = thread_id
        self.task = task
        self.name = name
        self.index = index
        self.roots: List[Event] = []
        self.broken = broken
        self.event_count = event_count

    def walk(self) -> Iterator[Event]:
        for root in self.roots:
            yield from root.walk()

    def __repr__(self) -> str:
        return f"ThreadTree({self.name!r}, {len(self.roots)} roots)"


class _Clock:
    """Maps raw ticks to monotonic nanoseconds through the start and stop anchors."""

    def __init__(self, anchors: Sequence[int]) -> None:
        self.t0, self.ns0, t1, ns1 = anchors
        self.scale = (ns1 - self.ns0) / (t1 - self.t0) if t1 != self.t0 else 1.0
        self.end_ns = ns1

    def __call__(self, ticks: int) -> int:
        return self.ns0 + int(round((ticks - self.t0) * self.scale))


def _site_functions(sites: list, namer: Namer) -> list:
    """Per site index: a Function, or for instance sites the description tuple."""
    out: list = []
    for kind, a, b, info, flags in sites:
        if kind == _tracer.SITE_PY:
            out.append(namer.code(a))
        elif kind == _tracer.SITE_C:
            out.append(namer.c_function(info))
        elif kind == _tracer.SITE_NAME:
            out.append(namer.annotation(a))
        elif kind == _tracer.SITE_TASK:
            out.append(namer.task(a))
        elif kind == _tracer.SITE_CODE:
            out.append(a)  # labelled per event kind below
        else:  # SITE_INSTANCE
            out.append((a, info))
    return out


def build_thread(
    raw: dict,
    index: int,
    name: str,
    clock: _Clock,
    namer: Namer,
    internal: FrozenSet[types.CodeType],
    muted: FrozenSet[types.CodeType] = frozenset(),
) -> Tuple[ThreadTree, List[Event]]:
    """Replays one thread's events into trees; returns the tree and its events in order.

    Calls of ``internal`` code are hidden (their callees go to the nearest visible caller);
    calls of ``muted`` code are hidden with everything below them."""
    tid = raw["thread_id"]
    events_bytes: bytes = raw["events"]
    tree = ThreadTree(tid, name, index, bool(raw["broken"]), len(events_bytes) // _EVENT.size, bool(raw["task"]))
    sites = raw["sites"]
    funcs = _site_functions(sites, namer)
    internal_sites = {i for i, site in enumerate(sites) if site[0] == _tracer.SITE_PY and site[1] in internal}
    muted_sites = {i for i, site in enumerate(sites) if site[0] == _tracer.SITE_PY and site[1] in muted}
    stack: List[Event] = []
    out: List[Event] = []
    muted_depth = -1  # stack depth of the open muted call (-1: none)

    def visible_parent() -> Optional[Event]:
        for event in reversed(stack):
            if not event._internal:
                return event
        return None

    def push(func: Function, t: int, start_frame: bool = False, hidden: bool = False) -> Event:
        hidden = hidden or muted_depth >= 0
        parent = visible_parent()
        event = Event(func, tid, parent, t, start_frame, hidden)
        if not hidden:
            (parent.children if parent is not None else tree.roots).append(event)
            out.append(event)
        stack.append(event)
        return event

    def pop_until(kinds: Tuple[str, ...], t: int) -> Optional[Event]:
        """Closes events down to and including the topmost one of the given kinds."""
        for depth in range(len(stack) - 1, -1, -1):
            if stack[depth].kind in kinds:
                for event in stack[depth:]:
                    event.end_ns = t
                found = stack[depth]
                del stack[depth:]
                return found
        return None

    ev_py_call, ev_c_call = _tracer.EV_PY_CALL, _tracer.EV_C_CALL
    ev_py_return, ev_py_unwind = _tracer.EV_PY_RETURN, _tracer.EV_PY_UNWIND
    ev_c_return, ev_c_raise = _tracer.EV_C_RETURN, _tracer.EV_C_RAISE
    ev_start, ev_tag = _tracer.EV_START_FRAME, _tracer.EV_TAG
    # named regions: an annotation or an asyncio task's step, by its begin and end kinds
    named_begin = (_tracer.EV_ANNOT_BEGIN, _tracer.EV_TASK_BEGIN)
    named_end = {_tracer.EV_ANNOT_END: (ANNOTATION,), _tracer.EV_TASK_END: (TASK,)}
    ev_runtime = _tracer.EV_RUNTIME
    python_kinds = (PYTHON,)

    for ticks, key, kind in _EVENT.iter_unpack(events_bytes):
        t = clock(ticks)
        if len(stack) <= muted_depth:  # the muted call has returned
            muted_depth = -1
        if kind == ev_py_call:
            if key in muted_sites and muted_depth < 0:
                muted_depth = len(stack)
            push(funcs[key], t, hidden=key in internal_sites)
        elif kind == ev_py_return or kind == ev_py_unwind:
            event = pop_until(python_kinds, t)
            if event is not None and kind == ev_py_unwind:
                event.exception = True
        elif kind == ev_c_call:
            push(funcs[key], t)
        elif kind == ev_c_return or kind == ev_c_raise:
            if stack and stack[-1].kind == C:
                event = stack.pop()
                event.end_ns = t
                event.exception = kind == ev_c_raise
        elif kind == ev_start:
            push(funcs[key], t, start_frame=True, hidden=key in internal_sites)
        elif kind == ev_tag:
            if stack:
                instance, info = funcs[key]
                if isinstance(info, tuple) and len(info) == 3:
                    stack[-1].tag = Tag(info[0], info[1], info[2], id(instance))
                else:  # describe failed: the class is still known
                    cls = type(instance)
                    stack[-1].tag = Tag(cls, cls.__qualname__, (), id(instance))
        elif kind in named_begin:
            push(funcs[key], t)
        elif kind in named_end:
            pop_until(named_end[kind], t)
        elif kind > ev_runtime:
            number = kind - ev_runtime
            if number in _RUNTIME_BEGIN:
                label_kind = _RUNTIME_BEGIN[number]
                push(namer.code(funcs[key], label_kind, _RUNTIME_LABEL[label_kind]), t)
            elif number in _RUNTIME_END:
                pop_until((_RUNTIME_END[number],), t)
    for event in stack:
        event.end_ns = clock.end_ns
    return tree, out


def number_tags(events: Sequence[Event]) -> None:
    """Instance numbers per class, in order of first appearance (events sorted by start)."""
    seen: Dict[int, Dict[int, int]] = {}
    for event in events:
        tag = event.tag
        if tag is not None:
            per_class = seen.setdefault(id(tag._cls), {})
            tag.instance = per_class.setdefault(tag._self_id, len(per_class))


def build(
    raw: dict,
    thread_names: Dict[int, str],
    internal: FrozenSet[types.CodeType],
    shorten: Optional[PathShortener] = None,
    muted: FrozenSet[types.CodeType] = frozenset(),
) -> Tuple[List[ThreadTree], List[Event], _Clock]:
    """The trees of a raw recording (the tracer's collect()); ``thread_names`` maps the
    serial of each recorded thread to its name."""
    clock = _Clock(raw["anchors"])
    namer = Namer(shorten or PathShortener())
    trees: List[ThreadTree] = []
    everything: List[Event] = []
    for index, thread in enumerate(raw["threads"]):
        name = thread_names.get(thread["serial"], f"Thread-{thread['thread_id']}")
        tree, events = build_thread(thread, index, name, clock, namer, internal, muted)
        trees.append(tree)
        everything.extend(events)
    everything.sort(key=lambda e: e.start_ns)  # stable: call order within a thread holds
    for number, event in enumerate(everything, 1):
        event.id = number
    number_tags(everything)
    return trees, everything, clock
