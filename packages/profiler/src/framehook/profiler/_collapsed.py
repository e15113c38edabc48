"""Collapsed ("folded") stacks: one line per call path, its frames joined by ``;`` and the
path's own weight after a space, as flamegraph.pl, inferno and speedscope read them.

Written by the tracer from its per-path aggregates (_folded.py), so the weights are exact
also when ``max_events`` dropped events, and the file has a line per distinct call path,
not per call: the weight is the path's self time in nanoseconds (``collapsed``) or its
number of calls (``collapsed-calls``), so that a frame's width in a flame graph is the
time of its subtree, or the calls made in it. Each thread is the root frame of its paths,
named as the flame graph names it; paths whose frames read alike are one line, at the
place of the first. The format has no place for a note: the count of dropped events is
in the other outputs.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, BinaryIO

from ._folded import COLLAPSED_CALLS, COLLAPSED_TIME, write_folded

if TYPE_CHECKING:
    from ._profile import Profile

#: the weight each format writes per path
WEIGHTS = {"collapsed": "time", "collapsed-calls": "calls"}


def _frame(text: str) -> str:
    # ';' separates frames and the last space starts the count: neither may end a frame early
    return text.replace(";", ":").replace("\n", " ").replace("\r", " ")


def write_collapsed(profile: "Profile", out: BinaryIO, weight: str = "time") -> None:
    if weight not in ("time", "calls"):
        raise ValueError(f"weight must be 'time' or 'calls'; got {weight!r}")
    write_folded(profile, out.write, COLLAPSED_TIME if weight == "time" else COLLAPSED_CALLS, _frame)
