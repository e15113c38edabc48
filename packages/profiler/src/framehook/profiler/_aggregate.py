"""The C tracer's aggregates, named: calls per function, per caller/callee pair and per call
path, merged across threads, without a Python object per call.

The tracer folds each thread's events into tables keyed by per-thread function numbers
(Tracer.aggregate()); here each number gets its Function (names are looked up once per
function) and the threads' tables are merged. Times are integer nanoseconds.
"""

from __future__ import annotations

from typing import Any, Callable, Dict, List, NamedTuple, Optional, Tuple

from . import _tracer
from ._names import CACHE_LOOKUP, COMPILED_REGION, Function, Namer, PathShortener


class ThreadInfo(NamedTuple):
    thread_id: int
    name: str
    index: int
    broken: bool
    events: int  # events kept (what the event outputs show)
    dropped: int  # events folded into the aggregates and no longer kept (max_events)
    task: bool = False  # an asyncio task's track (async_tasks), on the thread thread_id

    @property
    def label(self) -> str:
        """How the outputs name the thread's track: its name and id (ids are reused)."""
        return f"{self.name} ({self.thread_id})"


class PathEntry(NamedTuple):
    parent: int  # index in the thread's list, -1 for the thread itself
    function: Function
    count: int
    self_ns: int
    total_ns: int


Stat = List[int]  # [calls, primitive calls, self ns, cumulative ns]


class Aggregates:
    """Exact call counts and times, also of events dropped by ``max_events``."""

    def __init__(
        self,
        threads: List[ThreadInfo],
        functions: Dict[Function, Stat],
        labels: Dict[Function, Stat],
        pairs: Dict[Tuple[Function, Function], Stat],
        paths: List[List[PathEntry]],
        thread_functions: Optional[List[List[Function]]] = None,
        thread_sites: Optional[List[list]] = None,
    ) -> None:
        self.threads = threads
        self.functions = functions  # per Function, in order of first call
        # per pstats label (file, line, name), under the first Function with it: counted
        # like cProfile, recursion included, when distinct code shares a label
        self.labels = labels
        self.pairs = pairs  # per (caller, callee) label, under their first Functions
        self.paths = paths  # per thread, parents before children
        # per thread: the Function of each of its function ids, and its site tuples (what
        # the event writers name things by)
        self.thread_functions = thread_functions or [[] for _ in threads]
        self.thread_sites = thread_sites or [[] for _ in threads]

    @property
    def dropped(self) -> int:
        return sum(t.dropped for t in self.threads)


def _function(site: tuple, cls: int, namer: Namer) -> Function:
    kind, a, b, info, flags = site
    if cls == _tracer.CLS_PY:
        return namer.code(a)
    if cls == _tracer.CLS_C:
        return namer.c_function(info)
    if cls == _tracer.CLS_ANNOT:
        return namer.annotation(a)
    if cls == _tracer.CLS_TASK:
        return namer.task(a)
    if cls == _tracer.CLS_LOOKUP:
        return namer.code(a, CACHE_LOOKUP, "cache lookup")
    return namer.code(a, COMPILED_REGION, "compiled region")


def _add(into: Stat, values: Any) -> None:
    for i in range(4):
        into[i] += values[i]


def aggregate(
    tracer: Any, thread_name: Callable[[Dict[str, Any]], str], shorten: Optional[PathShortener] = None
) -> Aggregates:
    """Names and merges what ``tracer.aggregate()`` returns (a stopped tracer)."""
    raw = tracer.aggregate()
    namer = Namer(shorten or PathShortener())
    threads: List[ThreadInfo] = []
    functions: Dict[Function, Stat] = {}
    labels: Dict[Function, Stat] = {}
    pairs: Dict[Tuple[Function, Function], Stat] = {}
    paths: List[List[PathEntry]] = []
    thread_functions: List[List[Function]] = []
    thread_sites: List[list] = []
    for index, thread in enumerate(raw["threads"]):
        threads.append(
            ThreadInfo(
                thread["thread_id"],
                thread_name(thread),
                index,
                bool(thread["broken"]),
                thread["events"],
                thread["dropped"],
                bool(thread["task"]),
            )
        )
        sites = thread["sites"]
        funcs = [_function(sites[key], cls, namer) for key, cls in thread["function_sites"]]
        thread_functions.append(funcs)
        thread_sites.append(sites)
        for fid, stat in enumerate(thread["functions"]):
            if stat[0]:  # (functions only ever called hidden have no calls)
                _add(functions.setdefault(funcs[fid], [0, 0, 0, 0]), stat)
        by_label = [funcs[fid] for fid in thread["key_functions"]]
        for kid, stat in enumerate(thread["keys"]):
            if stat[0]:
                _add(labels.setdefault(by_label[kid], [0, 0, 0, 0]), stat)
        for caller, callee, *stat in thread["pairs"]:
            _add(pairs.setdefault((by_label[caller], by_label[callee]), [0, 0, 0, 0]), stat)
        paths.append(
            [PathEntry(parent - 1, funcs[fid], count, own, total) for parent, fid, count, own, total in thread["paths"]]
        )
    return Aggregates(threads, functions, labels, pairs, paths, thread_functions, thread_sites)
