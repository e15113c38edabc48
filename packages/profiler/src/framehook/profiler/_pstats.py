"""pstats data (what cProfile writes), so pstats.Stats, snakeviz and gprof2dot read our files.

The layout mirrors cProfile's create_stats: per function (cc, nc, tt, ct, callers), where
cc counts non-recursive calls, ct only accrues at the outermost activation, and each
callers entry holds (nc, cc, tt, ct) for that caller.
"""
from __future__ import annotations

from collections import Counter
from typing import TYPE_CHECKING, Dict, List, Tuple

if TYPE_CHECKING:
    from ._profile import Profile
    from ._trees import Event

Key = Tuple[str, int, str]
Stats = Dict[Key, Tuple[int, int, float, float, Dict[Key, Tuple[int, int, float, float]]]]


def to_pstats(profile: "Profile") -> Stats:
    entries: Dict[Key, List] = {}
    edges: Dict[Tuple[Key, Key], List] = {}
    for thread in profile.threads:
        active: Counter = Counter()
        active_edges: Counter = Counter()
        for root in thread.roots:
            # depth-first with explicit exit markers, so recursion counters stay exact
            stack: List[Tuple["Event", bool]] = [(root, False)]
            while stack:
                event, leaving = stack.pop()
                key = event.function.pstats_key
                caller = event.parent.function.pstats_key if event.parent is not None else None
                if leaving:
                    active[key] -= 1
                    if caller is not None:
                        active_edges[(caller, key)] -= 1
                    continue
                total = event.duration_ns / 1e9
                own = event.self_ns / 1e9
                entry = entries.setdefault(key, [0, 0, 0.0, 0.0])
                entry[1] += 1
                entry[2] += own
                if active[key] == 0:
                    entry[0] += 1
                    entry[3] += total
                if caller is not None:
                    edge = edges.setdefault((caller, key), [0, 0, 0.0, 0.0])
                    edge[0] += 1
                    edge[2] += own
                    if active_edges[(caller, key)] == 0:
                        edge[1] += 1
                        edge[3] += total
                    active_edges[(caller, key)] += 1
                active[key] += 1
                stack.append((event, True))
                stack.extend((child, False) for child in reversed(event.children))
    stats: Stats = {}
    callers: Dict[Key, Dict[Key, Tuple[int, int, float, float]]] = {key: {} for key in entries}
    for (caller, callee), (nc, cc, tt, ct) in edges.items():
        callers[callee][caller] = (nc, cc, tt, ct)
    for key, (cc, nc, tt, ct) in entries.items():
        stats[key] = (cc, nc, tt, ct, callers[key])
    return stats
