"""Text summary: the top functions by self time and by total time, with call counts."""

from __future__ import annotations

from typing import TYPE_CHECKING, List, NamedTuple

if TYPE_CHECKING:
    from ._names import Function
    from ._profile import Profile


class FunctionStats(NamedTuple):
    function: "Function"
    calls: int
    self_ns: int
    total_ns: int  # time inside the function, counted once across recursion


def function_stats(profile: "Profile") -> List[FunctionStats]:
    return [FunctionStats(func, nc, tt, ct) for func, (nc, cc, tt, ct) in profile.aggregates().functions.items()]


def _ms(ns: int) -> str:
    return f"{ns / 1e6:10.3f}"


def _table(title: str, rows: List[FunctionStats]) -> List[str]:
    lines = [title, f"{'calls':>9} {'self ms':>10} {'total ms':>10}  function"]
    for row in rows:
        where = f"  ({row.function.location})" if row.function.location else ""
        lines.append(f"{row.calls:>9} {_ms(row.self_ns)} {_ms(row.total_ns)}  {row.function.name}{where}")
    return lines


def summary(profile: "Profile", limit: int = 20) -> str:
    agg = profile.aggregates()
    stats = function_stats(profile)
    calls = sum(s.calls for s in stats)
    head = [
        f"framehook-profiler: {calls} calls in {len(agg.threads)} thread(s), "
        f"{(profile.end_ns - profile.start_ns) / 1e6:.3f} ms recorded",
    ]
    broken = [t.name for t in agg.threads if t.broken]
    if broken:
        head.append(f"warning: recording stopped early (out of memory) on: {', '.join(broken)}")
    if agg.dropped:
        head.append(
            f"note: {agg.dropped} events dropped by {profile.dropped_by}; the counts and times here include them"
        )
    by_self = sorted(stats, key=lambda s: (-s.self_ns, s.function.name))[:limit]
    by_total = sorted(stats, key=lambda s: (-s.total_ns, s.function.name))[:limit]
    lines = head + [""] + _table(f"Top {len(by_self)} by self time", by_self) + [""]
    lines += _table(f"Top {len(by_total)} by total time", by_total)
    return "\n".join(lines) + "\n"
