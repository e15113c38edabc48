"""speedscope file format: one "evented" profile per thread, frames shared across them.

Spec: https://www.speedscope.app/file-format-schema.json. Open and close events must nest
and never go back in time, which holds because the trees are built from one clock.
"""
from __future__ import annotations

from typing import TYPE_CHECKING, Any, Dict, List, Tuple

if TYPE_CHECKING:
    from ._names import Function
    from ._profile import Profile

SCHEMA = "https://www.speedscope.app/file-format-schema.json"


def to_speedscope(profile: "Profile", name: str = "framehook-profiler") -> Dict[str, Any]:
    frames: List[Dict[str, Any]] = []
    index: Dict[Tuple[int], int] = {}

    def frame_of(func: "Function") -> int:
        key = id(func)
        found = index.get(key)  # type: ignore[call-overload]
        if found is None:
            found = len(frames)
            entry: Dict[str, Any] = {"name": func.name}
            if func.filename:
                entry["file"] = func.path or func.filename
                entry["line"] = func.lineno
            frames.append(entry)
            index[key] = found  # type: ignore[index]
        return found

    origin = profile.start_ns
    end = profile.end_ns - origin
    profiles = []
    for thread in profile.threads:
        events: List[Dict[str, Any]] = []
        last = 0

        def emit(kind: str, frame: int, at: int) -> None:
            nonlocal last
            at = max(at, last)  # keep time monotonic even for zero-length calls
            last = at
            events.append({"type": kind, "frame": frame, "at": at})

        for root in thread.roots:
            # iterative depth-first walk emitting open/close pairs
            stack: List[Tuple[Any, bool]] = [(root, False)]
            while stack:
                event, closing = stack.pop()
                frame = frame_of(event.function)
                if closing:
                    emit("C", frame, event.end_ns - origin)
                    continue
                emit("O", frame, event.start_ns - origin)
                stack.append((event, True))
                stack.extend((child, False) for child in reversed(event.children))
        profiles.append({
            "type": "evented",
            "name": f"{thread.name} ({thread.thread_id})",
            "unit": "nanoseconds",
            "startValue": 0,
            "endValue": max(end, last),
            "events": events,
        })
    return {
        "$schema": SCHEMA,
        "shared": {"frames": frames},
        "profiles": profiles,
        "name": name,
        "activeProfileIndex": 0,
        "exporter": "framehook-profiler",
    }
