"""Collapsed ("folded") stacks: one line per call path, its frames joined by ``;`` and the
path's own weight after a space, as flamegraph.pl, inferno and speedscope read them.

Written from the tracer's per-path aggregates, so the weights are exact also when
``max_events`` dropped events, and the file has a line per distinct call path, not per
call: the weight is the path's self time in nanoseconds (``collapsed``) or its number of
calls (``collapsed-calls``), so that a frame's width in a flame graph is the time of its
subtree, or the calls made in it. Each thread is the root frame of its paths, named as the
flame graph names it. The format has no place for a note: the count of dropped events is
in the other outputs.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, BinaryIO, Dict, List

if TYPE_CHECKING:
    from ._profile import Profile

#: the weight each format writes per path
WEIGHTS = {"collapsed": "time", "collapsed-calls": "calls"}


def _frame(text: str) -> str:
    # ';' separates frames and the last space starts the count: neither may end a frame early
    return text.replace(";", ":").replace("\n", " ").replace("\r", " ")


def collapsed_lines(profile: "Profile", weight: str = "time") -> Dict[str, int]:
    """Each call path's frames joined by ``;``, with its weight (paths of equal text
    summed, in order of first appearance; paths of weight 0 left out)."""
    if weight not in ("time", "calls"):
        raise ValueError(f"weight must be 'time' or 'calls'; got {weight!r}")
    agg = profile.aggregates()
    lines: Dict[str, int] = {}
    for thread, paths in zip(agg.threads, agg.paths):
        root = _frame(f"{thread.name} ({thread.thread_id})")
        stacks: List[str] = []
        for entry in paths:
            func = entry.function
            label = _frame(func.name + (f" ({func.location})" if func.location else ""))
            stack = (root if entry.parent < 0 else stacks[entry.parent]) + ";" + label
            stacks.append(stack)
            value = entry.self_ns if weight == "time" else entry.count
            if value > 0:
                lines[stack] = lines.get(stack, 0) + value
    return lines


def write_collapsed(profile: "Profile", out: BinaryIO, weight: str = "time") -> None:
    for stack, value in collapsed_lines(profile, weight).items():
        out.write(f"{stack} {value}\n".encode())
