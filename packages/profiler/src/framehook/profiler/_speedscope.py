"""speedscope file format: one "evented" profile per thread, frames shared across them.

Spec: https://www.speedscope.app/file-format-schema.json. Open and close events must nest
and never go back in time, which holds because each thread's events come from one clock
(and are clamped to the last time written). The events are written by the tracer from
its buffers (Tracer.write_speedscope); frames are named here once per function.
"""

from __future__ import annotations

import io
import json
from typing import TYPE_CHECKING, Any, BinaryIO, Callable, Dict, List, Optional

if TYPE_CHECKING:
    from ._names import Function
    from ._profile import Profile

SCHEMA = "https://www.speedscope.app/file-format-schema.json"


def write_speedscope(
    profile: "Profile",
    out: BinaryIO,
    name: str = "framehook-profiler",
    progress: Optional[Callable[[int], None]] = None,
) -> int:
    """Writes the document to a binary file; returns the number of calls written.
    ``progress`` is called with the calls written so far after each 1 MiB written."""
    agg = profile.aggregates()
    frames: List[Dict[str, Any]] = []
    index: Dict[int, int] = {}

    def frame_of(func: "Function") -> int:
        found = index.get(id(func))
        if found is None:
            found = index[id(func)] = len(frames)
            entry: Dict[str, Any] = {"name": func.name}
            if func.filename:
                entry["file"] = func.path or func.filename
                entry["line"] = func.lineno
            frames.append(entry)
        return found

    if agg.dropped:
        name = f"{name} ({agg.dropped} events dropped by {profile.dropped_by})"
    out.write(b'{"$schema":' + json.dumps(SCHEMA).encode() + b',"profiles":[\n')
    written = 0
    tracer = profile._tracer
    if tracer is not None and agg.threads:
        threads = []
        for thread in agg.threads:
            # frames in order of first call, per thread (the tracer numbered them so)
            funcs = agg.thread_functions[thread.index]
            header = json.dumps(
                {
                    "type": "evented",
                    "name": thread.label,
                    "unit": "nanoseconds",
                    "startValue": 0,
                }
            )
            threads.append(
                (header[:-1].encode() + b',"events":[', [frame_of(f) if f in agg.functions else 0 for f in funcs])
            )
        written = tracer.write_speedscope(out.write, threads, progress)
    tail = {
        "shared": {"frames": frames},
        "name": name,
        "activeProfileIndex": 0,
        "exporter": "framehook-profiler",
        "droppedEvents": agg.dropped,
    }
    out.write(b"\n]," + json.dumps(tail).encode()[1:])
    return written


def to_speedscope(profile: "Profile", name: str = "framehook-profiler") -> Dict[str, Any]:
    buffer = io.BytesIO()
    write_speedscope(profile, buffer, name)
    return json.loads(buffer.getvalue())
