"""The Firefox Profiler's own format (a processed profile, as profiler.firefox.com and
``profiler-cli`` open it directly), one thread track per recorded thread.

A traced profile fits its sample tables as "tracing-ms" samples: a sample wherever the
stack changes (a call begins or ends), weighted by the time until the next change, so
the call tree's running times are the recorded ones, exact to the nanosecond (the times
are milliseconds as floats). Annotations (``record_function``), runtime cache lookups and
compiled regions are also markers, in the marker chart and table. The format has no
place for call counts: pstats and collapsed-calls have them.

Written from the call trees, so a run bounded by ``max_events`` shows the kept calls,
and the profile's extra information says how many events were dropped.
"""

from __future__ import annotations

import json
import os
import sys
import threading
import time
from typing import TYPE_CHECKING, Any, BinaryIO, Dict, List, Optional, Tuple

if TYPE_CHECKING:
    from ._names import Function
    from ._profile import Profile
    from ._trees import Event, ThreadTree

# The processed format's version written here (the importer upgrades it to its own);
# the Gecko format version it was processed from.
PROCESSED_VERSION = 47
GECKO_VERSION = 27

# Frame categories, by event kind: the colours the profiler draws frames in.
CATEGORIES: List[Dict[str, Any]] = [
    {"name": "Other", "color": "grey", "subcategories": ["Other"]},
    {"name": "Python", "color": "blue", "subcategories": ["Other"]},
    {"name": "C", "color": "orange", "subcategories": ["Other"]},
    {"name": "Annotation", "color": "purple", "subcategories": ["Other"]},
    {"name": "Runtime", "color": "green", "subcategories": ["Other"]},
]
_CATEGORY = {"python": 1, "c": 2, "annotation": 3, "cache_lookup": 4, "compiled_region": 4}
# Kinds that are also markers, and how the marker chart labels them.
_MARKED = {"annotation": "Annotation", "cache_lookup": "Cache lookup", "compiled_region": "Compiled region"}

MARKER_SCHEMA = [
    {
        "name": "framehook",
        "tooltipLabel": "{marker.data.kind}: {marker.data.name}",
        "tableLabel": "{marker.data.kind}: {marker.data.name}",
        "chartLabel": "{marker.data.name}",
        "display": ["marker-chart", "marker-table", "timeline-overview"],
        "data": [
            {"key": "kind", "label": "Kind", "format": "string", "searchable": True},
            {"key": "name", "label": "Name", "format": "string", "searchable": True},
        ],
    }
]


class _Thread:
    """The tables of one thread track, filled as its trees are walked."""

    def __init__(self) -> None:
        self.strings: List[str] = []
        self._string_index: Dict[str, int] = {}
        self.funcs: Dict[int, int] = {}  # id(Function) -> func (and frame) index
        self.func_table: Dict[str, list] = {k: [] for k in ("name", "fileName", "lineNumber", "category")}
        self.stacks: Dict[Tuple[Optional[int], int], int] = {}
        self.stack_prefix: List[Optional[int]] = []
        self.stack_frame: List[int] = []
        self.stack_category: List[int] = []
        self.sample_time: List[float] = []
        self.sample_stack: List[Optional[int]] = []
        self.markers: Dict[str, list] = {k: [] for k in ("name", "startTime", "endTime", "data")}

    def string(self, text: str) -> int:
        index = self._string_index.get(text)
        if index is None:
            index = self._string_index[text] = len(self.strings)
            self.strings.append(text)
        return index

    def func(self, function: "Function") -> int:
        index = self.funcs.get(id(function))
        if index is None:
            index = self.funcs[id(function)] = len(self.funcs)
            table = self.func_table
            table["name"].append(self.string(function.name))
            table["fileName"].append(self.string(function.filename) if function.filename else None)
            table["lineNumber"].append(function.lineno if function.filename else None)
            table["category"].append(_CATEGORY.get(function.kind, 0))
        return index

    def stack(self, prefix: Optional[int], function: "Function") -> int:
        frame = self.func(function)
        key = (prefix, frame)
        index = self.stacks.get(key)
        if index is None:
            index = self.stacks[key] = len(self.stack_frame)
            self.stack_prefix.append(prefix)
            self.stack_frame.append(frame)
            self.stack_category.append(self.func_table["category"][frame])
        return index

    def sample(self, at_ms: float, stack: Optional[int]) -> None:
        if self.sample_time and self.sample_time[-1] == at_ms:
            self.sample_stack[-1] = stack  # (nothing ran between: the later stack holds)
        else:
            self.sample_time.append(at_ms)
            self.sample_stack.append(stack)

    def walk(self, root: "Event", origin_ns: int) -> None:
        """Samples and markers of one root call and everything under it, in time order."""

        def ms(ns: int) -> float:
            return (ns - origin_ns) / 1e6

        todo: List[Tuple["Event", Optional[int], int, int]] = [(root, None, -1, 0)]
        while todo:
            event, prefix, stack, child = todo.pop()
            if child == 0:
                stack = self.stack(prefix, event.function)
                self.sample(ms(event.start_ns), stack)
                label = _MARKED.get(event.kind)
                if label is not None:
                    self.markers["name"].append(self.string(event.name))
                    self.markers["startTime"].append(ms(event.start_ns))
                    self.markers["endTime"].append(ms(event.end_ns))
                    self.markers["data"].append({"type": "framehook", "kind": label, "name": event.name})
            if child < len(event.children):
                todo.append((event, prefix, stack, child + 1))
                todo.append((event.children[child], stack, -1, 0))
            else:  # this call ends: its caller's stack runs on
                self.sample(ms(event.end_ns), prefix)

    def weights(self, end_ms: float) -> List[float]:
        times = self.sample_time
        return [(times[i + 1] if i + 1 < len(times) else end_ms) - t for i, t in enumerate(times)]


def _columns(rows: Dict[str, list], length: int, **constant: Any) -> Dict[str, Any]:
    table: Dict[str, Any] = dict(rows)
    for key, value in constant.items():
        table[key] = [value] * length
    table["length"] = length
    return table


def thread_json(tree: "ThreadTree", pid: str, process: str, origin_ns: int, end_ns: int, main: bool) -> Dict[str, Any]:
    t = _Thread()
    for root in tree.roots:
        t.walk(root, origin_ns)
    end_ms = (end_ns - origin_ns) / 1e6
    n_funcs, n_stacks, n_samples = len(t.funcs), len(t.stack_frame), len(t.sample_time)
    n_markers = len(t.markers["name"])
    funcs = t.func_table
    return {
        "processType": "default",
        "processStartupTime": 0,
        "processShutdownTime": end_ms,
        "registerTime": 0,
        "unregisterTime": None,
        "pausedRanges": [],
        "name": tree.name,
        "processName": process,
        "isMainThread": main,
        "pid": pid,
        "tid": tree.thread_id,
        "samples": {
            "weightType": "tracing-ms",
            "weight": t.weights(end_ms),
            "stack": t.sample_stack,
            "time": t.sample_time,
            "length": n_samples,
        },
        "markers": _columns(t.markers, n_markers, phase=1, category=4),
        "stackTable": _columns(
            {"frame": t.stack_frame, "prefix": t.stack_prefix, "category": t.stack_category},
            n_stacks,
            subcategory=0,
        ),
        "frameTable": _columns(
            {"func": list(range(n_funcs)), "category": funcs["category"], "line": funcs["lineNumber"]},
            n_funcs,
            address=-1,
            inlineDepth=0,
            subcategory=0,
            nativeSymbol=None,
            innerWindowID=0,
            implementation=None,
            column=None,
        ),
        "funcTable": _columns(
            {"name": funcs["name"], "fileName": funcs["fileName"], "lineNumber": funcs["lineNumber"]},
            n_funcs,
            isJS=False,
            relevantForJS=False,
            resource=-1,
            columnNumber=None,
        ),
        "resourceTable": _columns({}, 0, lib=None, name=None, host=None, type=None),
        "nativeSymbols": _columns({}, 0, libIndex=None, address=None, name=None, functionSize=None),
        "stringArray": t.strings,
    }


def _meta(start_epoch_ms: float, duration_ms: float, extra: List[Dict[str, Any]]) -> Dict[str, Any]:
    return {
        "interval": 0.001,
        "startTime": start_epoch_ms,
        "profilingStartTime": 0,
        "profilingEndTime": duration_ms,
        "processType": 0,
        "product": f"framehook-profiler ({os.path.basename(sys.executable)} {sys.version.split()[0]})",
        "importedFrom": "framehook-profiler",
        "stackwalk": 0,
        "debug": hasattr(sys, "gettotalrefcount"),
        "version": GECKO_VERSION,
        "preprocessedProfileVersion": PROCESSED_VERSION,
        "categories": CATEGORIES,
        "markerSchema": MARKER_SCHEMA,
        "symbolicationNotSupported": True,
        "usesOnlyOneStackType": True,
        "sourceCodeIsNotOnSearchfox": True,
        "keepProfileThreadOrder": True,
        "extra": extra,
    }


def dropped_note(count: int, by: str) -> List[Dict[str, Any]]:
    """The profile's extra information: how many events a bounded run left out."""
    if not count:
        return []
    entry = {"label": "Dropped events", "format": "integer", "value": count}
    note = {"label": "Left out by", "format": "string", "value": by}
    return [{"label": "framehook-profiler", "entries": [entry, note]}]


def to_gecko(profile: "Profile") -> Dict[str, Any]:
    agg = profile.aggregates()
    origin = profile.start_ns
    pid = str(os.getpid())
    # the wall clock at the start: the monotonic start is as far back from now
    start_epoch_ms = time.time() * 1e3 - (time.monotonic_ns() - origin) / 1e6
    process = f"python {pid}"
    trees = profile.threads
    # the process track's main thread: the interpreter's, if it was recorded
    main_ident = threading.main_thread().ident
    main = next((tree for tree in trees if tree.thread_id == main_ident), trees[0] if trees else None)
    threads = [thread_json(tree, pid, process, origin, profile.end_ns, tree is main) for tree in trees]
    return {
        "meta": _meta(start_epoch_ms, profile.duration_ns / 1e6, dropped_note(agg.dropped, profile.dropped_by)),
        "libs": [],
        "pages": [],
        "counters": [],
        "threads": threads,
    }


def write_gecko(profile: "Profile", out: BinaryIO) -> None:
    out.write(json.dumps(to_gecko(profile), separators=(",", ":")).encode())
