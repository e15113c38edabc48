"""Merging the parts of followed processes (the command line's own and its children's) into
one output, each process a track of its own where the format has processes.

- Chrome trace: every part's events, each process under its own pid and name, its times
  moved onto the first process's clock (all parts' times are monotonic nanoseconds).
- speedscope: a profile per thread of every process, named after the process; frames
  shared.
- Gecko (Firefox Profiler): every part's thread tracks, each under its process's pid and
  name, its times moved onto the first process's clock; missing children in the
  profile's extra information.
- pstats: the processes' statistics summed per function (pstats has no processes).
- collapsed stacks: each process a root frame above its threads.
- SVG and HTML flame graphs: drawn from the processes' collapsed stacks, a process per
  frame under the root.
- text: each process's summary under a heading.
"""

from __future__ import annotations

import io
import json
import marshal
import os
from typing import IO, Any, BinaryIO, Dict, List, NamedTuple

from ._collapsed import _frame
from ._export import replacing
from ._flamegraph import _Node, render_svg


class Source(NamedTuple):
    """A part to merge: its file, its process's label, pid and start (monotonic ns)."""

    path: str
    label: str
    pid: int
    start_ns: int


def merge_into(sources: List[Source], fmt: str, output: str, notes: List[str]) -> str:
    """Writes the merged output at ``output`` (complete, or not at all, as every export
    is written: _export.replacing); returns its absolute path. ``notes``: what the output
    says is missing (children that wrote no part)."""
    output = os.path.abspath(output)
    with replacing(output) as out:
        if fmt == "pstats":
            _pstats(sources, out)
        else:
            text = io.TextIOWrapper(out, encoding="utf-8", newline="")
            try:
                _WRITERS[fmt](sources, text, notes)
            finally:
                text.detach()  # (flushed; the file is replacing()'s to close)
    return output


def _load_json(path: str) -> Any:
    with open(path, "rb") as fh:
        return json.loads(fh.read())


def _chrome(sources: List[Source], fh: IO[str], notes: List[str]) -> None:
    origin = sources[0].start_ns
    events: List[Dict[str, Any]] = []
    other: Dict[str, Any] = {"exporter": "framehook-profiler", "processes": [], "missing": notes}
    for order, source in enumerate(sources):
        doc = _load_json(source.path)
        shift = (source.start_ns - origin) / 1000.0  # microseconds
        for event in doc.get("traceEvents", []):
            if event.get("ph") == "M" and event.get("name") == "process_name":
                event["args"] = {"name": source.label}
            elif "ts" in event:
                event["ts"] = round(event["ts"] + shift, 3)
            events.append(event)
        events.append(
            {"ph": "M", "name": "process_sort_index", "pid": source.pid, "tid": 0, "args": {"sort_index": order}}
        )
        part_other = doc.get("otherData", {})
        other.setdefault("clock", part_other.get("clock"))
        other["processes"].append(
            {
                "pid": source.pid,
                "name": source.label,
                "dropped_events": part_other.get("dropped_events", 0),
                "dropped_threads": part_other.get("dropped_threads", []),
            }
        )
    json.dump({"traceEvents": events, "displayTimeUnit": "ns", "otherData": other}, fh)


def _speedscope(sources: List[Source], fh: IO[str], notes: List[str]) -> None:
    origin = sources[0].start_ns
    frames: List[Dict[str, Any]] = []
    profiles: List[Dict[str, Any]] = []
    schema = None
    for source in sources:
        doc = _load_json(source.path)
        schema = schema or doc.get("$schema")
        base = len(frames)
        frames.extend(doc.get("shared", {}).get("frames", []))
        shift = source.start_ns - origin
        for profile in doc.get("profiles", []):
            profile["name"] = f"{source.label} / {profile.get('name', '')}"
            for key in ("startValue", "endValue"):
                if key in profile:
                    profile[key] += shift
            for event in profile.get("events", []):
                event["frame"] += base
                event["at"] += shift
            profiles.append(profile)
    name = f"framehook-profiler: {len(sources)} process(es)"
    if notes:
        name += f"; missing: {'; '.join(notes)}"
    json.dump(
        {
            "$schema": schema,
            "shared": {"frames": frames},
            "profiles": profiles,
            "name": name,
            "activeProfileIndex": 0,
            "exporter": "framehook-profiler",
        },
        fh,
    )


def _gecko(sources: List[Source], fh: IO[str], notes: List[str]) -> None:
    origin = sources[0].start_ns
    merged: Dict[str, Any] = {}
    threads: List[Dict[str, Any]] = []
    extra: List[Dict[str, Any]] = []
    end = 0.0
    for source in sources:
        doc = _load_json(source.path)
        merged = merged or doc
        shift = (source.start_ns - origin) / 1e6  # milliseconds
        for section in doc["meta"].get("extra", []):
            extra.append(dict(section, label=f"{section['label']}: {source.label}"))
        for thread in doc["threads"]:
            thread["processName"] = source.label
            thread["processStartupTime"] = shift
            thread["registerTime"] = shift
            for key in ("processShutdownTime",):
                if thread.get(key) is not None:
                    thread[key] += shift
                    end = max(end, thread[key])
            thread["samples"]["time"] = [t + shift for t in thread["samples"]["time"]]
            markers = thread["markers"]
            for key in ("startTime", "endTime"):
                markers[key] = [t + shift for t in markers[key]]
            threads.append(thread)
    if notes:
        entries = [{"label": "Missing", "format": "string", "value": note} for note in notes]
        extra.append({"label": "framehook-profiler --follow", "entries": entries})
    merged["threads"] = threads
    merged["meta"]["extra"] = extra
    merged["meta"]["profilingEndTime"] = end
    json.dump(merged, fh, separators=(",", ":"))


def _pstats(sources: List[Source], out: BinaryIO) -> None:
    total: Dict[Any, Any] = {}
    for source in sources:
        with open(source.path, "rb") as fh:
            stats = marshal.load(fh)
        for key, (cc, nc, tt, ct, callers) in stats.items():
            if key not in total:
                total[key] = (cc, nc, tt, ct, dict(callers))
                continue
            cc0, nc0, tt0, ct0, callers0 = total[key]
            for caller, counts in callers.items():
                had = callers0.get(caller)
                callers0[caller] = counts if had is None else tuple(a + b for a, b in zip(had, counts))
            total[key] = (cc0 + cc, nc0 + nc, tt0 + tt, ct0 + ct, callers0)
    marshal.dump(total, out)


def _collapsed_lines(source: Source) -> List[str]:
    with open(source.path, encoding="utf-8") as fh:
        return [line.rstrip("\n") for line in fh if line.strip()]


def _collapsed(sources: List[Source], fh: IO[str], notes: List[str]) -> None:
    for source in sources:
        root = _frame(source.label)
        for line in _collapsed_lines(source):
            fh.write(f"{root};{line}\n")


def _merged_root(sources: List[Source]) -> _Node:
    root = _Node("all", "root")
    for source in sources:
        top = root.child(source.label, "process")
        for line in _collapsed_lines(source):
            stack, _, weight = line.rpartition(" ")
            frames = stack.split(";")
            node = top.child(frames[0], "thread")
            nodes = [top, node]
            for label in frames[1:]:
                # a location in parentheses: Python code; a bare name: a C function
                node = node.child(label, "python" if label.endswith(")") else "c")
                nodes.append(node)
            for on_path in nodes:
                on_path.ns += int(weight)
        root.ns += top.ns
    return root


def _flame_title(sources: List[Source], notes: List[str]) -> str:
    title = f"framehook-profiler flame graph: {len(sources)} process(es)"
    if notes:
        title += f"; missing: {'; '.join(notes)}"
    return title


def _svg(sources: List[Source], fh: IO[str], notes: List[str]) -> None:
    fh.write(render_svg(_merged_root(sources), _flame_title(sources, notes)))


def _html(sources: List[Source], fh: IO[str], notes: List[str]) -> None:
    from ._html import render_html

    fh.write(render_html(_merged_root(sources), _flame_title(sources, notes)))


def _text(sources: List[Source], fh: IO[str], notes: List[str]) -> None:
    for number, source in enumerate(sources):
        if number:
            fh.write("\n")
        fh.write(f"=== {source.label} ===\n")
        with open(source.path, encoding="utf-8") as part:
            fh.write(part.read())
    for note in notes:
        fh.write(f"\nmissing: {note}\n")


_WRITERS = {
    "chrome": _chrome,
    "speedscope": _speedscope,
    "gecko": _gecko,
    "collapsed": _collapsed,
    "collapsed-calls": _collapsed,
    "svg": _svg,
    "html": _html,
    "text": _text,
}
