"""The outputs as they were computed before the tracer aggregated in C: by walking the call
trees (one Python object per call). Kept as the tests' oracle for the C aggregates.

Times are summed as integer nanoseconds and converted once (the former code summed float
seconds per call, whose last bits depend on the order of the walk)."""

from __future__ import annotations

from collections import Counter
import os
from typing import Any, Dict, List, Tuple

from framehook.profiler import Profile
from framehook.profiler._collapsed import _frame
from framehook.profiler._flamegraph import _Node
from framehook.profiler._summary import FunctionStats, _table


def pstats_from_trees(profile: Profile) -> dict:
    entries: Dict[tuple, List[int]] = {}
    edges: Dict[Tuple[tuple, tuple], List[int]] = {}
    for thread in profile.threads:
        active: Counter = Counter()
        active_edges: Counter = Counter()
        for root in thread.roots:
            stack = [(root, False)]
            while stack:
                event, leaving = stack.pop()
                key = event.function.pstats_key
                caller = event.parent.function.pstats_key if event.parent is not None else None
                if leaving:
                    active[key] -= 1
                    if caller is not None:
                        active_edges[(caller, key)] -= 1
                    continue
                entry = entries.setdefault(key, [0, 0, 0, 0])
                entry[1] += 1
                entry[2] += event.self_ns
                if active[key] == 0:
                    entry[0] += 1
                    entry[3] += event.duration_ns
                if caller is not None:
                    edge = edges.setdefault((caller, key), [0, 0, 0, 0])
                    edge[0] += 1
                    edge[2] += event.self_ns
                    if active_edges[(caller, key)] == 0:
                        edge[1] += 1
                        edge[3] += event.duration_ns
                    active_edges[(caller, key)] += 1
                active[key] += 1
                stack.append((event, True))
                stack.extend((child, False) for child in reversed(event.children))
    callers: Dict[tuple, dict] = {key: {} for key in entries}
    for (caller, callee), (nc, cc, tt, ct) in edges.items():
        callers[callee][caller] = (nc, cc, tt / 1e9, ct / 1e9)
    return {key: (cc, nc, tt / 1e9, ct / 1e9, callers[key]) for key, (cc, nc, tt, ct) in entries.items()}


def function_stats_from_trees(profile: Profile) -> List[FunctionStats]:
    calls: Dict[int, int] = {}
    own: Dict[int, int] = {}
    total: Dict[int, int] = {}
    funcs: Dict[int, object] = {}
    for thread in profile.threads:
        for root in thread.roots:
            stack = [(root, 0)]
            active: Dict[int, int] = {}
            while stack:
                event, state = stack.pop()
                key = id(event.function)
                if state == 1:
                    active[key] -= 1
                    continue
                funcs[key] = event.function
                calls[key] = calls.get(key, 0) + 1
                own[key] = own.get(key, 0) + event.self_ns
                if not active.get(key):
                    total[key] = total.get(key, 0) + event.duration_ns
                active[key] = active.get(key, 0) + 1
                stack.append((event, 1))
                stack.extend((child, 0) for child in reversed(event.children))
    return [FunctionStats(funcs[k], calls[k], own[k], total[k]) for k in funcs]


def summary_from_trees(profile: Profile, limit: int = 20) -> str:
    stats = function_stats_from_trees(profile)
    calls = sum(s.calls for s in stats)
    head = [
        f"framehook-profiler: {calls} calls in {len(profile.threads)} thread(s), "
        f"{(profile.end_ns - profile.start_ns) / 1e6:.3f} ms recorded"
    ]
    broken = [t.name for t in profile.threads if t.broken]
    if broken:
        head.append(f"warning: recording stopped early (out of memory) on: {', '.join(broken)}")
    by_self = sorted(stats, key=lambda s: (-s.self_ns, s.function.name))[:limit]
    by_total = sorted(stats, key=lambda s: (-s.total_ns, s.function.name))[:limit]
    lines = head + [""] + _table(f"Top {len(by_self)} by self time", by_self) + [""]
    lines += _table(f"Top {len(by_total)} by total time", by_total)
    return "\n".join(lines) + "\n"


def flame_from_trees(profile: Profile) -> _Node:
    root = _Node("all", "root")
    for thread in profile.threads:
        node = root.child(f"{thread.name} ({thread.thread_id})", "thread")
        stack = [(node, event) for event in thread.roots]
        while stack:
            parent, ev = stack.pop()
            label = ev.name + (f" ({ev.function.location})" if ev.function.location else "")
            child = parent.child(label, ev.kind)
            child.ns += ev.duration_ns
            stack.extend((child, c) for c in ev.children)
        node.ns = sum(c.ns for c in node.children.values())
    root.ns = sum(c.ns for c in root.children.values())
    return root


def collapsed_from_trees(profile: Profile, weight: str) -> Dict[str, int]:
    """Collapsed stacks from the calls, in order of each line's first call: a call's
    frames' text joined by ';', with its self time or 1 per call, summed per text."""
    lines: Dict[str, int] = {}
    for thread in profile.threads:
        stack = [(_frame(f"{thread.name} ({thread.thread_id})"), ev) for ev in reversed(thread.roots)]
        while stack:
            prefix, ev = stack.pop()
            label = ev.name + (f" ({ev.function.location})" if ev.function.location else "")
            text = prefix + ";" + _frame(label)
            value = ev.self_ns if weight == "time" else 1
            if value > 0:
                lines[text] = lines.get(text, 0) + value
            stack.extend((text, child) for child in reversed(ev.children))
    return lines


def flame_shape(node: _Node) -> tuple:
    return (
        node.name,
        node.kind,
        node.ns,
        tuple(flame_shape(c) for c in sorted(node.children.values(), key=lambda n: n.name)),
    )


# Chrome trace and speedscope documents as the tree walk wrote them -----------------


def _args(event: Any) -> Dict[str, Any]:
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


def chrome_from_trees(profile: Profile) -> Dict[str, Any]:
    pid = os.getpid()
    origin = profile.start_ns
    trace: List[Dict[str, Any]] = [
        {"ph": "M", "name": "process_name", "pid": pid, "tid": 0, "args": {"name": "framehook-profiler"}},
    ]
    for thread in profile.threads:
        tid = thread.index + 1
        trace.append(
            {
                "ph": "M",
                "name": "thread_name",
                "pid": pid,
                "tid": tid,
                "args": {"name": f"{thread.name} ({thread.thread_id})"},
            }
        )
        trace.append(
            {"ph": "M", "name": "thread_sort_index", "pid": pid, "tid": tid, "args": {"sort_index": thread.index}}
        )
        for event in thread.walk():
            trace.append(
                {
                    "ph": "X",
                    "name": event.name,
                    "cat": event.kind,
                    "ts": round((event.start_ns - origin) / 1000.0, 3),
                    "dur": round(event.duration_ns / 1000.0, 3),
                    "pid": pid,
                    "tid": tid,
                    "args": _args(event),
                }
            )
    return {
        "traceEvents": trace,
        "displayTimeUnit": "ns",
        "otherData": {
            "exporter": "framehook-profiler",
            "clock": profile.clock,
            "dropped_threads": [t.name for t in profile.threads if t.broken],
        },
    }


def speedscope_from_trees(profile: Profile, name: str = "framehook-profiler") -> Dict[str, Any]:
    frames: List[Dict[str, Any]] = []
    index: Dict[int, int] = {}

    def frame_of(func: Any) -> int:
        key = id(func)
        found = index.get(key)
        if found is None:
            found = len(frames)
            entry: Dict[str, Any] = {"name": func.name}
            if func.filename:
                entry["file"] = func.path or func.filename
                entry["line"] = func.lineno
            frames.append(entry)
            index[key] = found
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
        profiles.append(
            {
                "type": "evented",
                "name": f"{thread.name} ({thread.thread_id})",
                "unit": "nanoseconds",
                "startValue": 0,
                "endValue": max(end, last),
                "events": events,
            }
        )
    return {
        "$schema": "https://www.speedscope.app/file-format-schema.json",
        "shared": {"frames": frames},
        "profiles": profiles,
        "name": name,
        "activeProfileIndex": 0,
        "exporter": "framehook-profiler",
    }
