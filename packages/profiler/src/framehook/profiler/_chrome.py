"""Chrome trace event format (JSON object form), as loaded by Perfetto UI and chrome://tracing.

Every call is a begin ("B") and an end ("E") event on its thread's track, so each track's
timestamps are in order; times are microseconds from the start of recording, exact to
the nanosecond. The events are written by the tracer straight from its buffers
(Tracer.write_chrome): names are encoded here once per function, never per call.
"""

from __future__ import annotations

import io
import json
import os
from typing import TYPE_CHECKING, Any, BinaryIO, Callable, Dict, List, Optional

if TYPE_CHECKING:
    from ._names import Function
    from ._profile import Profile


def _names(func: "Function") -> tuple:
    head = json.dumps({"name": func.name, "cat": func.kind})[1:-1]
    args = f',"file":{json.dumps(func.filename)},"line":{func.lineno}' if func.filename else ""
    return head.encode(), args.encode()


class _Tags:
    """The instance of each tagged call, numbered per class in order of first appearance
    (the writer asks in start order)."""

    def __init__(self, thread_sites: List[list]) -> None:
        self._sites = thread_sites
        self._numbers: Dict[int, Dict[int, int]] = {}
        self._keep: List[Any] = []  # the classes numbered (their ids stay theirs)

    def __call__(self, thread: int, key: int) -> bytes:
        kind, instance, _, info, _ = self._sites[thread][key]
        if isinstance(info, tuple) and len(info) == 3:
            cls, class_name, arrays = info
        else:  # describe failed: the class is still known
            cls, class_name, arrays = type(instance), type(instance).__qualname__, ()
        self._keep.append(cls)
        per_class = self._numbers.setdefault(id(cls), {})
        number = per_class.setdefault(id(instance), len(per_class))
        return json.dumps(
            {
                "class": class_name,
                "instance": number,
                "arrays": {name: {"dtype": dtype, "shape": list(shape)} for name, dtype, shape in arrays},
            }
        ).encode()


def write_chrome(profile: "Profile", out: BinaryIO, progress: Optional[Callable[[int], None]] = None) -> int:
    """Writes the trace to a binary file; returns the number of calls written.
    ``progress`` is called with the calls written so far after each 1 MiB written."""
    agg = profile.aggregates()
    pid = os.getpid()
    meta: List[Dict[str, Any]] = [
        {"ph": "M", "name": "process_name", "pid": pid, "tid": 0, "args": {"name": "framehook-profiler"}},
    ]
    for thread in agg.threads:
        tid = thread.index + 1
        meta.append(
            {
                "ph": "M",
                "name": "thread_name",
                "pid": pid,
                "tid": tid,
                "args": {"name": thread.label},
            }
        )
        meta.append(
            {"ph": "M", "name": "thread_sort_index", "pid": pid, "tid": tid, "args": {"sort_index": thread.index}}
        )
    out.write(b'{"traceEvents":[\n' + ",\n".join(json.dumps(m) for m in meta).encode())
    written = 0
    tracer = profile._tracer
    if tracer is not None and agg.threads:
        threads = [
            (thread.index + 1, [_names(f) for f in agg.thread_functions[thread.index]]) for thread in agg.threads
        ]
        written = tracer.write_chrome(out.write, pid, threads, _Tags(agg.thread_sites), progress)
    other = {
        "exporter": "framehook-profiler",
        "clock": profile.clock,
        "dropped_threads": [t.name for t in agg.threads if t.broken],
        "dropped_events": agg.dropped,
    }
    out.write(b'\n],"displayTimeUnit":"ns","otherData":' + json.dumps(other).encode() + b"}")
    return written


def to_chrome(profile: "Profile") -> Dict[str, Any]:
    buffer = io.BytesIO()
    write_chrome(profile, buffer)
    return json.loads(buffer.getvalue())
