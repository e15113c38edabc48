"""Text summary: the top functions by self time and by total time, with call counts."""
from __future__ import annotations

from typing import TYPE_CHECKING, Dict, List, NamedTuple

if TYPE_CHECKING:
    from ._names import Function
    from ._profile import Profile


class FunctionStats(NamedTuple):
    function: "Function"
    calls: int
    self_ns: int
    total_ns: int  # time inside the function, counted once across recursion


def function_stats(profile: "Profile") -> List[FunctionStats]:
    calls: Dict[int, int] = {}
    own: Dict[int, int] = {}
    total: Dict[int, int] = {}
    funcs: Dict[int, "Function"] = {}
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


def _ms(ns: int) -> str:
    return f"{ns / 1e6:10.3f}"


def _table(title: str, rows: List[FunctionStats]) -> List[str]:
    lines = [title, f"{'calls':>9} {'self ms':>10} {'total ms':>10}  function"]
    for row in rows:
        where = f"  ({row.function.location})" if row.function.location else ""
        lines.append(f"{row.calls:>9} {_ms(row.self_ns)} {_ms(row.total_ns)}  "
                     f"{row.function.name}{where}")
    return lines


def summary(profile: "Profile", limit: int = 20) -> str:
    stats = function_stats(profile)
    calls = sum(s.calls for s in stats)
    head = [
        f"framehook-profiler: {calls} calls in {len(profile.threads)} thread(s), "
        f"{(profile.end_ns - profile.start_ns) / 1e6:.3f} ms recorded",
    ]
    broken = [t.name for t in profile.threads if t.broken]
    if broken:
        head.append(f"warning: recording stopped early (out of memory) on: {', '.join(broken)}")
    by_self = sorted(stats, key=lambda s: (-s.self_ns, s.function.name))[:limit]
    by_total = sorted(stats, key=lambda s: (-s.total_ns, s.function.name))[:limit]
    lines = head + [""] + _table(f"Top {len(by_self)} by self time", by_self) + [""]
    lines += _table(f"Top {len(by_total)} by total time", by_total)
    return "\n".join(lines) + "\n"
