"""Chrome trace event format (JSON object form), as loaded by Perfetto UI and chrome://tracing.

Every call is a complete ("X") event on its thread's track; times are microseconds from
the start of recording, with nanosecond precision kept in the fraction.
"""
from __future__ import annotations

import os
from typing import TYPE_CHECKING, Any, Dict, List

if TYPE_CHECKING:
    from ._profile import Profile
    from ._trees import Event


def _args(event: "Event") -> Dict[str, Any]:
    args: Dict[str, Any] = {"id": event.id}
    if event.parent is not None:
        args["parent"] = event.parent.id
    func = event.function
    if func.filename:
        args["file"] = func.filename
        args["line"] = func.lineno
    if event.exception:
        args["exception"] = True
    if event.start_frame:
        args["start_frame"] = True
    if event.tag is not None:
        args["instance"] = event.tag.as_dict()
    return args


def to_chrome(profile: "Profile") -> Dict[str, Any]:
    pid = os.getpid()
    origin = profile.start_ns
    trace: List[Dict[str, Any]] = [
        {"ph": "M", "name": "process_name", "pid": pid, "tid": 0,
         "args": {"name": "framehook-profiler"}},
    ]
    for thread in profile.threads:
        tid = thread.index + 1
        trace.append({"ph": "M", "name": "thread_name", "pid": pid, "tid": tid,
                      "args": {"name": f"{thread.name} ({thread.thread_id})"}})
        trace.append({"ph": "M", "name": "thread_sort_index", "pid": pid, "tid": tid,
                      "args": {"sort_index": thread.index}})
        for event in thread.walk():
            trace.append({
                "ph": "X",
                "name": event.name,
                "cat": event.kind,
                "ts": round((event.start_ns - origin) / 1000.0, 3),
                "dur": round(event.duration_ns / 1000.0, 3),
                "pid": pid,
                "tid": tid,
                "args": _args(event),
            })
    return {
        "traceEvents": trace,
        "displayTimeUnit": "ns",
        "otherData": {"exporter": "framehook-profiler", "clock": profile.clock,
                      "dropped_threads": [t.name for t in profile.threads if t.broken]},
    }
