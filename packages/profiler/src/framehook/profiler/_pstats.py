"""pstats data (what cProfile writes), so pstats.Stats, snakeviz and gprof2dot read our files.

The layout mirrors cProfile's create_stats: per function (cc, nc, tt, ct, callers), where
cc counts non-recursive calls, ct only accrues at the outermost activation, and each
callers entry holds (nc, cc, tt, ct) for that caller. Computed from the tracer's
aggregates (_aggregate), so its size follows the distinct functions, not the calls.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Dict, List, Tuple

if TYPE_CHECKING:
    from ._profile import Profile

Key = Tuple[str, int, str]
Stats = Dict[Key, Tuple[int, int, float, float, Dict[Key, Tuple[int, int, float, float]]]]


def to_pstats(profile: "Profile") -> Stats:
    agg = profile.aggregates()
    # functions that share a pstats key (file, line, name) are one entry, as in cProfile
    entries: Dict[Key, List[int]] = {}
    for func, (nc, cc, tt, ct) in agg.labels.items():
        entry = entries.setdefault(func.pstats_key, [0, 0, 0, 0])
        entry[0] += cc
        entry[1] += nc
        entry[2] += tt
        entry[3] += ct
    callers: Dict[Key, Dict[Key, List[int]]] = {key: {} for key in entries}
    for (caller, callee), (nc, cc, tt, ct) in agg.pairs.items():
        edge = callers[callee.pstats_key].setdefault(caller.pstats_key, [0, 0, 0, 0])
        edge[0] += nc
        edge[1] += cc
        edge[2] += tt
        edge[3] += ct
    stats: Stats = {
        key: (
            cc,
            nc,
            tt / 1e9,
            ct / 1e9,
            {caller: (e[0], e[1], e[2] / 1e9, e[3] / 1e9) for caller, e in callers[key].items()},
        )
        for key, (cc, nc, tt, ct) in entries.items()
    }
    if agg.dropped:
        # pstats has no header: the count is a line of its own, a function never called
        stats[dropped_key(agg.dropped, profile.dropped_by)] = (0, 0, 0.0, 0.0, {})
    return stats


def dropped_key(count: int, by: str = "max_events") -> Key:
    return (
        "~",
        0,
        f"<framehook-profiler: {count} events dropped by {by}; the counts and times here include them>",
    )
