"""The Firefox Profiler's own format (a processed profile, as profiler.firefox.com and
``profiler-cli`` open it directly), one thread track per recorded thread.

A traced profile fits its sample tables as "tracing-ms" samples: a sample wherever the
stack changes (a call begins or ends), weighted by the time until the next change, so
the call tree's running times are the recorded ones, exact to the nanosecond (the times
are milliseconds as floats). Annotations (``record_function``), runtime cache lookups and
compiled regions are also markers, in the marker chart and table. The format has no
place for call counts: pstats and collapsed-calls have them.

The samples are written by the tracer from its buffers (Tracer.write_gecko_samples), a
thread at a time, with no Python object per call; the other tables, a row per function
or distinct stack, here. A run bounded by ``max_events`` shows the kept calls, and the
profile's extra information says how many events were dropped.
"""

from __future__ import annotations

import array
import io
import json
import os
import sys
import threading
import time
from typing import TYPE_CHECKING, Any, BinaryIO, Dict, List

if TYPE_CHECKING:
    from ._names import Function
    from ._profile import Profile

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
    {"name": "asyncio", "color": "lightblue", "subcategories": ["Other"]},
]
_CATEGORY = {"python": 1, "c": 2, "annotation": 3, "cache_lookup": 4, "compiled_region": 4, "task": 5}
# Kinds that are also markers, and how the marker chart labels them.
_MARKED = {
    "annotation": "Annotation",
    "cache_lookup": "Cache lookup",
    "compiled_region": "Compiled region",
    "task": "asyncio",
}

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


def _thread_head(info: Any, pid: str, process: str, end_ms: float, main: bool) -> bytes:
    """The thread object's fields up to its samples (the JSON text, left open)."""
    head = {
        "processType": "default",
        "processStartupTime": 0,
        "processShutdownTime": end_ms,
        "registerTime": 0,
        "unregisterTime": None,
        "pausedRanges": [],
        "name": info.name,
        "processName": process,
        "isMainThread": main,
        "pid": pid,
        "tid": info.thread_id,
    }
    return json.dumps(head, separators=(",", ":"))[:-1].encode() + b',"samples":'


def _columns(rows: Dict[str, list], length: int, **constant: Any) -> Dict[str, Any]:
    table: Dict[str, Any] = dict(rows)
    for key, value in constant.items():
        table[key] = [value] * length
    table["length"] = length
    return table


def _thread_tail(funcs: List["Function"], prefixes: bytes, fids: bytes, marked: list) -> Dict[str, Any]:
    """The thread's tables after its samples: stacks (as the tracer interned them), a
    frame and a function per function id of the thread, markers, and the strings."""
    strings: List[str] = []
    index: Dict[str, int] = {}

    def string(text: str) -> int:
        found = index.get(text)
        if found is None:
            found = index[text] = len(strings)
            strings.append(text)
        return found

    prefix = array.array("i")
    prefix.frombytes(prefixes)
    frame = array.array("I")
    frame.frombytes(fids)
    category = [_CATEGORY.get(f.kind, 0) for f in funcs]
    n_funcs, n_stacks = len(funcs), len(frame)
    names = [string(f.name) for f in funcs]
    files = [string(f.filename) if f.filename else None for f in funcs]
    lines = [f.lineno if f.filename else None for f in funcs]
    markers: Dict[str, list] = {"name": [], "startTime": [], "endTime": [], "data": []}
    for fid, start_ns, end_ns in marked:
        func = funcs[fid]
        markers["name"].append(string(func.name))
        markers["startTime"].append(start_ns / 1e6)
        markers["endTime"].append(end_ns / 1e6)
        markers["data"].append({"type": "framehook", "kind": _MARKED.get(func.kind, func.kind), "name": func.name})
    return {
        "markers": _columns(markers, len(marked), phase=1, category=4),
        "stackTable": _columns(
            {
                "frame": frame.tolist(),
                "prefix": [p if p >= 0 else None for p in prefix],
                "category": [category[f] for f in frame],
            },
            n_stacks,
            subcategory=0,
        ),
        "frameTable": _columns(
            {"func": list(range(n_funcs)), "category": category, "line": lines},
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
            {"name": names, "fileName": files, "lineNumber": lines},
            n_funcs,
            isJS=False,
            relevantForJS=False,
            resource=-1,
            columnNumber=None,
        ),
        "resourceTable": _columns({}, 0, lib=None, name=None, host=None, type=None),
        "nativeSymbols": _columns({}, 0, libIndex=None, address=None, name=None, functionSize=None),
        "stringArray": strings,
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


def write_gecko(profile: "Profile", out: BinaryIO) -> None:
    """Writes the profile: its samples by the tracer, from the buffers, the rest here."""
    agg = profile.aggregates()
    pid = str(os.getpid())
    # the wall clock at the start: the monotonic start is as far back from now
    start_epoch_ms = time.time() * 1e3 - (time.monotonic_ns() - profile.start_ns) / 1e6
    end_ms = profile.duration_ns / 1e6
    meta = _meta(start_epoch_ms, end_ms, dropped_note(agg.dropped, profile.dropped_by))
    out.write(b'{"meta":' + _dumps(meta) + b',"libs":[],"pages":[],"counters":[],"threads":[')
    tracer = profile._tracer
    # the process track's main thread: the interpreter's, if it was recorded
    main_ident = threading.main_thread().ident
    idents = [info.thread_id for info in agg.threads]
    main = idents.index(main_ident) if main_ident in idents else 0
    process = f"python {pid}"
    infos = agg.threads if tracer is not None else []
    for number, info in enumerate(infos):
        if number:
            out.write(b",")
        out.write(_thread_head(info, pid, process, end_ms, number == main))
        prefixes, fids, marked = tracer.write_gecko_samples(out.write, info.index)
        tail = _thread_tail(agg.thread_functions[info.index], prefixes, fids, marked)
        out.write(b"," + _dumps(tail)[1:])
    if not infos:  # (the Firefox Profiler opens no profile without a thread: an empty one)
        nobody = _Nothing(threading.get_ident())
        out.write(_thread_head(nobody, pid, process, end_ms, True) + _dumps(_NO_SAMPLES))
        out.write(b"," + _dumps(_thread_tail([], b"", b"", []))[1:])
    out.write(b"]}")


class _Nothing:
    """A thread track for a profile that recorded nothing."""

    name = "nothing recorded"

    def __init__(self, thread_id: int) -> None:
        self.thread_id = thread_id


_NO_SAMPLES = {"weightType": "tracing-ms", "stack": [], "time": [], "weight": [], "length": 0}


def _dumps(value: Any) -> bytes:
    return json.dumps(value, separators=(",", ":")).encode()


def to_gecko(profile: "Profile") -> Dict[str, Any]:
    buffer = io.BytesIO()
    write_gecko(profile, buffer)
    return json.loads(buffer.getvalue())
