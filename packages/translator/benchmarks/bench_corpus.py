"""The numpy corpus under optimize("eager"): first call, compile time per frame, steady state.

    PYTHONPATH=packages/translator/src python packages/translator/benchmarks/bench_corpus.py \
        [--repeat N] [--first-repeat N] [--filter REGEX] [--min-time S] [--csv FILE]

The cases are the test corpus itself (tests/test_numpy_corpus.py and tests/test_corpus_*.py,
loaded by tests/corpus_helpers.corpus_modules()); each case's first call ``calls[0]`` is the
input. For every case, in one process:

* first call: wall time of the first call of ``optimize("eager")(fn)`` after ``reset()``
  (trace, compile, run), median of ``--first-repeat`` fresh compilations. The process is warmed
  up once before the first case (first-use imports are not counted) and the plain function
  has run before, so numpy's own lazy imports are not counted either. The summary also shows
  what the first call spends outside the frames' compile time (skip checks, guards, global
  state, the frame view's ``function``, the run itself) and the cost of reading the frame
  view's ``function`` in a callback (a search of the code's referrers on 3.9/3.10).
* compile time per frame: ``FrameReport.compile_time`` of every frame translated by that first
  call (the function, callees translated on their own after a break, resume functions), the
  figure ``explain()`` sums into ``compile_time``; median over the compilations per frame.
* steady state: the plain function, the captured one and, for a function captured whole in
  one frame, its cache entry's code run as an ordinary function ("replacement alone": the
  graph function and the loads of its inputs, without the optimize wrapper, the runtime's
  lookup or the guards) are timed in turn, ``--repeat`` repetitions (each starting one variant
  further along), each a loop of calls sized to take about ``--min-time`` seconds. Figures
  are medians over repetitions of the per-repetition ratio or difference, so that a load
  change hits the compared variants alike. captured - replacement alone is the cache-hit
  path; replacement alone - plain is what the graph code itself adds or saves. A fourth
  variant, ``runtime.call_with(callback, fn, *args)`` called from C (through
  ``functools.partial``), splits the cache-hit path into the optimize wrapper's part
  (captured - call_with) and the runtime's lookup, check and frame switch (call_with -
  replacement alone). A function
  that changes its arguments (checked once) gets a fresh deep copy per call, made before the
  timed loop, on every side. A translation during the timed loops (the steady state would not
  be steady) is listed in the summary.
* check: the cache entry's check function called with the call's locals, median.
* fixed per-call cost: ``x + 1`` on 4 elements timed the same way (3x the repetitions), its
  cache-hit path split into the optimize decorator (the runtime's C ``CallbackWrapper``), the runtime's lookup and frame
  switch (``runtime.call_with`` from C), the check function, and the replacement's call of
  the graph function.

Prints markdown: a summary (geometric means over fully captured cases and over all, compile
time per frame, first call, against the targets of issue #8), the worst rows by steady-state
ratio with the cost breakdown, and counts. ``--csv`` writes every row.
"""

from __future__ import annotations

import argparse
import contextlib
import copy
import csv
import functools
import gc
import inspect
import math
import os
import platform
import re
import statistics
import sys
import time
import timeit
import types
import warnings
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Dict, List, Optional, Tuple

import numpy as np

import framehook.runtime as rt
import framehook.translator as ft
from framehook.translator.symbolic import add_observer, remove_observer

TESTS = Path(__file__).resolve().parents[1] / "tests"
sys.path.insert(0, str(TESTS))
from corpus_helpers import corpus_modules  # noqa: E402  (the corpus lives with the tests)
from symbolic_helpers import assert_same  # noqa: E402

TARGET_RATIO = 1.10  # steady state, geometric mean over fully captured functions
TARGET_FIRST_MEDIAN = 0.05  # s, first call at the median
TARGET_FIRST_MAX = 2.0  # s, no function's first call over this


@dataclass
class Case:
    area: str
    fn: Callable[..., Any]
    args: tuple

    @property
    def name(self) -> str:
        return f"{self.area}/{self.fn.__name__}"


@dataclass
class Row:
    case: Case
    graphs: int = 0
    breaks: List[str] = field(default_factory=list)
    frames: List[float] = field(default_factory=list)  # compile time per frame, s
    first: float = 0.0
    plain: float = 0.0
    captured: float = 0.0
    direct: Optional[float] = None  # the cache entry's code run as a plain function
    check: Optional[float] = None
    mutates: bool = False
    recompiled: int = 0

    ratio: float = 0.0  # median over repetitions of captured / plain of the repetition
    added: float = 0.0  # median over repetitions of captured - plain
    hit: Optional[float] = None  # median over repetitions of captured - direct
    graph: Optional[float] = None  # median over repetitions of direct - plain
    direct_ratio: Optional[float] = None  # median over repetitions of direct / plain
    wrapper: Optional[float] = None  # median over repetitions of captured - call_with
    runtime: Optional[float] = None  # median over repetitions of call_with - direct

    def set_times(
        self,
        plain: List[float],
        captured: List[float],
        direct: Optional[List[float]],
        call_with: Optional[List[float]] = None,
    ) -> None:
        self.plain, self.captured = statistics.median(plain), statistics.median(captured)
        self.ratio = statistics.median(c / p for c, p in zip(captured, plain))
        self.added = statistics.median(c - p for c, p in zip(captured, plain))
        if direct is not None:
            self.direct = statistics.median(direct)
            self.hit = statistics.median(c - d for c, d in zip(captured, direct))
            self.graph = statistics.median(d - p for d, p in zip(direct, plain))
            self.direct_ratio = statistics.median(d / p for d, p in zip(direct, plain))
        if direct is not None and call_with is not None:
            self.wrapper = statistics.median(c - w for c, w in zip(captured, call_with))
            self.runtime = statistics.median(w - d for w, d in zip(call_with, direct))


def load_cases(pattern: Optional[str]) -> List[Case]:
    cases = []
    for mod in corpus_modules():
        area = re.sub(r"^_corpus_count_test_(corpus_)?", "", mod.__name__)
        for fn, calls, _graphs, _breaks in mod.CORPUS:
            case = Case(area, fn, calls[0])
            if pattern is None or re.search(pattern, case.name):
                cases.append(case)
    return cases


def mutates_arguments(fn: Callable[..., Any], args: tuple) -> bool:
    before = copy.deepcopy(args)
    after = copy.deepcopy(args)
    fn(*after)
    try:
        assert_same(after, before)
    except AssertionError:
        return True
    return False


def arg_lists(args: tuple, number: int, fresh: bool) -> List[tuple]:
    return [copy.deepcopy(args) for _ in range(number)] if fresh else [args] * number


def timed(fn: Callable[..., Any], arglist: List[tuple]) -> float:
    start = time.perf_counter()
    for a in arglist:
        fn(*a)
    return (time.perf_counter() - start) / len(arglist)


def calls_for(fn: Callable[..., Any], args: tuple, fresh: bool, min_time: float) -> int:
    one = min(timed(fn, arg_lists(args, 3, fresh)) for _ in range(3))
    return max(1, min(20000, int(min_time / max(one, 1e-7))))


def steady_state(
    variants: Dict[str, Callable[..., Any]], args: tuple, fresh: bool, repeat: int, min_time: float
) -> Dict[str, List[float]]:
    """Seconds per call of each variant, one figure per repetition; the variants are timed in
    turn within each repetition, starting one further along every time, so that a load change
    hits them alike and figures of one repetition can be paired."""
    number = calls_for(variants["plain"], args, fresh, min_time)
    names = list(variants)
    times: Dict[str, List[float]] = {name: [] for name in names}
    for i in range(repeat):
        for k in range(len(names)):
            name = names[(i + k) % len(names)]
            times[name].append(timed(variants[name], arg_lists(args, number, fresh)))
    return times


def replacement_function(fn: Callable[..., Any]) -> Optional[Callable[..., Any]]:
    """The code of fn's cache entry as an ordinary function: the graph function and its
    inputs' loads, without the wrapper, the lookup or the guards (called with no callback on
    the thread, nothing intercepts it)."""
    entries = rt.cache_entries(fn.__code__)
    if len(entries) != 1:
        return None
    direct = types.FunctionType(entries[0].code, fn.__globals__, fn.__name__, fn.__defaults__, fn.__closure__)
    direct.__kwdefaults__ = fn.__kwdefaults__
    return direct


def via_call_with(opt: Callable[..., Any], fn: Callable[..., Any]) -> Callable[..., Any]:
    """fn called through the runtime's call_with from C with opt's callback: the cache-hit
    path without the optimize decorator's object (functools.partial adds its own small
    cost, counted in the runtime's part, so the decorator's part can come out slightly negative)."""
    return functools.partial(rt.call_with, opt._framehook_context.callback, fn)


def entry_locals(fn: Callable[..., Any], args: tuple) -> Dict[str, Any]:
    bound = inspect.signature(fn).bind(*args)
    bound.apply_defaults()
    f_locals = dict(bound.arguments)
    for name, cell in zip(fn.__code__.co_freevars, fn.__closure__ or ()):
        f_locals[name] = cell.cell_contents
    return f_locals


def check_time(fn: Callable[..., Any], args: tuple) -> Optional[float]:
    """The check function of fn's most recently hit entry, on the call's locals (None when fn
    keeps no entry or the check does not pass on them)."""
    entries = rt.cache_entries(fn.__code__)
    if not entries:
        return None
    check = entries[0].check_fn
    f_locals = entry_locals(fn, args)
    if not check(f_locals):
        return None
    times = timeit.repeat(lambda: check(f_locals), number=2000, repeat=7)
    return statistics.median(times) / 2000


def first_calls(
    fn: Callable[..., Any], args: tuple, fresh: bool, repeat: int
) -> Tuple[float, List[float], int, List[str]]:
    firsts: List[float] = []
    per_frame: List[List[float]] = []
    graphs, breaks = 0, []
    for _ in range(repeat):
        call_args = copy.deepcopy(args) if fresh else args
        ft.reset()
        gc.collect()
        reports: List[Any] = []
        opt = ft.optimize("eager")(fn)
        add_observer(reports.append)
        try:
            start = time.perf_counter()
            opt(*call_args)
            firsts.append(time.perf_counter() - start)
        finally:
            remove_observer(reports.append)
        per_frame.append([r.compile_time for r in reports])
        graphs = sum(r.graph is not None for r in reports)
        breaks = [r.graph_break.code for r in reports if r.graph_break is not None]
    n = min(len(f) for f in per_frame)
    frames = [statistics.median(f[i] for f in per_frame) for i in range(n)]
    return statistics.median(firsts), frames, graphs, breaks


def measure(case: Case, repeat: int, first_repeat: int, min_time: float) -> Row:
    fn, args = case.fn, case.args
    row = Row(case)
    row.mutates = mutates_arguments(fn, args)
    # a deep copy can change an array's layout (a strided view comes back contiguous), so
    # arguments are copied only for functions that change them, and then for every call
    row.first, row.frames, row.graphs, row.breaks = first_calls(fn, args, row.mutates, first_repeat)
    ft.reset()
    opt = ft.optimize("eager")(fn)
    opt(*(copy.deepcopy(args) if row.mutates else args))
    variants = {"plain": fn, "captured": opt}
    if not row.breaks and len(row.frames) == 1:
        # fully captured in one frame: its replacement alone splits the added time in two
        direct = replacement_function(fn)
        if direct is not None:
            variants["direct"] = direct
            variants["call_with"] = via_call_with(opt, fn)
    translated: List[Any] = []
    add_observer(translated.append)
    try:
        times = steady_state(variants, args, row.mutates, repeat, min_time)
    finally:
        remove_observer(translated.append)
    row.set_times(times["plain"], times["captured"], times.get("direct"), times.get("call_with"))
    row.recompiled = len(translated)
    row.check = check_time(fn, copy.deepcopy(args) if row.mutates else args)
    ft.reset()
    return row


def _one_array(x):
    return x + 1


def fixed_cost(repeat: int, min_time: float) -> Dict[str, float]:
    """The cache-hit path without a kernel: x + 1 on 4 elements, split in its parts. Variants:
    plain; the replacement code alone; ``runtime.call_with(callback, fn, x)`` from C (lookup,
    check and replacement frame, without the optimize wrapper); the optimize wrapper."""
    x = np.ones(4)
    ft.reset()
    opt = ft.optimize("eager")(_one_array)
    opt(x)
    direct = replacement_function(_one_array)
    assert direct is not None
    via_c = via_call_with(opt, _one_array)
    t = steady_state(
        {"plain": _one_array, "captured": opt, "direct": direct, "call_with": via_c}, (x,), False, repeat, min_time
    )
    check = check_time(_one_array, (x,)) or 0.0
    ft.reset()

    def paired(a: str, b: str) -> float:
        return statistics.median(p - q for p, q in zip(t[a], t[b]))

    return {
        "plain": statistics.median(t["plain"]),
        "direct": statistics.median(t["direct"]),
        "call_with": statistics.median(t["call_with"]),
        "captured": statistics.median(t["captured"]),
        "check": check,
        "hit": paired("captured", "direct"),
        "wrapper": paired("captured", "call_with"),
        "lookup": paired("call_with", "direct") - check,
        "graph_call": paired("direct", "plain"),
    }


def _probe(x):
    return x


def function_lookup(samples: int = 21) -> float:
    """Median seconds of reading ``function`` from the runtime's frame view in a callback, as
    the translator does when it translates a frame (3.9/3.10 frames do not record their
    function: the runtime searches the code object's referrers)."""
    times: List[float] = []

    def callback(frame: Any, cache_entry: Any, frame_state: Any) -> None:
        start = time.perf_counter()
        frame.function
        times.append(time.perf_counter() - start)
        return None

    for i in range(samples):
        # a new code object each time: a code seen once is marked skipped by the callback's None
        probe = types.FunctionType(_probe.__code__.replace(co_name=f"_probe_{i}"), globals())
        rt.call_with(callback, probe, 1)
    return statistics.median(times)


def geomean(values: List[float]) -> float:
    return math.exp(sum(math.log(v) for v in values) / len(values)) if values else float("nan")


def met(ok: bool) -> str:
    return "met" if ok else "NOT met"


def us(seconds: Optional[float], signed: bool = False) -> str:
    if seconds is None:
        return "-"
    return f"{seconds * 1e6:+.2f}" if signed else f"{seconds * 1e6:.2f}"


def split_hit(r: Row) -> str:
    if r.hit is None:
        return "-"
    if r.wrapper is None or r.runtime is None:
        return us(r.hit)
    return f"{us(r.hit)} ({us(r.wrapper)} / {us(r.runtime)})"


def report(rows: List[Row], fixed: Dict[str, float], lookup: float, worst: int) -> None:
    full = [r for r in rows if not r.breaks]
    split = [r for r in rows if r.direct is not None]
    frames = [t for r in rows for t in r.frames]
    firsts = [r.first for r in rows]
    gm_full, gm_all = geomean([r.ratio for r in full]), geomean([r.ratio for r in rows])
    print(
        f"{len(rows)} cases: {len(full)} fully captured (0 breaks), {len(rows) - len(full)} with breaks; "
        f"{len(frames)} frames translated by the first calls"
    )
    print()
    print("| figure | value | target |")
    print("|---|---:|---|")
    print(
        f"| steady state captured/plain, geometric mean, fully captured | {gm_full:.3f} | "
        f"<= {TARGET_RATIO:.2f}: {met(gm_full <= TARGET_RATIO)} |"
    )
    print(f"| steady state captured/plain, geometric mean, all | {gm_all:.3f} | |")
    ratios = sorted(r.ratio for r in rows)
    print(f"| steady state captured/plain, median / max, all | {statistics.median(ratios):.3f} / {ratios[-1]:.3f} | |")
    print(f"| cases at or below {TARGET_RATIO:.2f} | {sum(r <= TARGET_RATIO for r in ratios)} of {len(ratios)} | |")
    if split:
        print(
            f"| replacement code alone / plain (no wrapper, lookup, guards), geometric mean, "
            f"{len(split)} single-frame captures | {geomean([r.direct_ratio for r in split]):.3f} | |"
        )
        print(f"| same cases, captured/plain | {geomean([r.ratio for r in split]):.3f} | |")
        hits = [r.hit for r in split]
        print(
            f"| cache-hit path (captured - replacement alone), median / max | {us(statistics.median(hits))} / "
            f"{us(max(hits))} us | |"
        )
        wrappers = [r.wrapper for r in split if r.wrapper is not None]
        runtimes = [r.runtime for r in split if r.runtime is not None]
        print(
            f"| cache-hit path, its optimize wrapper part / runtime part (lookup, check, frame switch), medians | "
            f"{us(statistics.median(wrappers))} / {us(statistics.median(runtimes))} us | |"
        )
        print(f"| cache-hit path / plain time, median | {statistics.median(r.hit / r.plain for r in split):.3f} | |")
    print(
        f"| compile time per frame, median / max | {statistics.median(frames) * 1e3:.2f} / "
        f"{max(frames) * 1e3:.2f} ms | |"
    )
    print(
        f"| first call, median | {statistics.median(firsts) * 1e3:.2f} ms | "
        f"<= {TARGET_FIRST_MEDIAN * 1e3:.0f} ms: {met(statistics.median(firsts) <= TARGET_FIRST_MEDIAN)} |"
    )
    outside = statistics.median(r.first - sum(r.frames) for r in rows)
    print(f"| first call - its frames' compile time, median | {outside * 1e3:.2f} ms | |")
    print(f"| frame view's function lookup in a callback, median | {lookup * 1e3:.3f} ms | |")
    slowest = max(rows, key=lambda r: r.first)
    print(
        f"| first call, max | {slowest.first * 1e3:.2f} ms ({slowest.case.name}) | "
        f"<= {TARGET_FIRST_MAX:.0f} s: {met(slowest.first <= TARGET_FIRST_MAX)} |"
    )
    print(
        f"| x + 1 on 4 elements: plain / replacement alone / call_with / captured | {us(fixed['plain'])} / "
        f"{us(fixed['direct'])} / {us(fixed['call_with'])} / {us(fixed['captured'])} us | |"
    )
    print(
        f"| x + 1: cache-hit path = optimize wrapper + lookup and frame switch + check | {us(fixed['hit'])} = "
        f"{us(fixed['wrapper'])} + {us(fixed['lookup'])} + {us(fixed['check'])} us | |"
    )
    print(
        f"| x + 1: the replacement's call of the graph function (replacement alone - plain) | "
        f"{us(fixed['graph_call'], True)} us | |"
    )
    recompiled = [r for r in rows if r.recompiled]
    if recompiled:
        print(
            f"| cases that translated again in the steady state | "
            f"{', '.join(f'{r.case.name} ({r.recompiled})' for r in recompiled)} | |"
        )
    print()
    print(
        f"Worst {worst} by steady-state ratio. plain: median; added, captured/plain, hit (captured - "
        f"replacement alone; in parentheses its parts: the optimize wrapper (captured - call_with) / the runtime's "
        f"lookup, check and frame switch (call_with - replacement alone)) and graph (replacement alone - plain): medians of the "
        f"per-repetition figures; - where the function broke or kept more than one entry:"
    )
    print()
    print(
        "| case | graphs / breaks | first call ms | compile ms (frames) | plain us | added us "
        "| captured/plain | hit us (wrapper / runtime) | hit / plain | graph us | check us |"
    )
    print("|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
    for r in sorted(rows, key=lambda r: r.ratio, reverse=True)[:worst]:
        hit, graph = r.hit, r.graph
        print(
            f"| {r.case.name} | {r.graphs} / {len(r.breaks)} | {r.first * 1e3:.2f} | "
            f"{sum(r.frames) * 1e3:.2f} ({len(r.frames)}) | {us(r.plain)} | "
            f"{us(r.added, True)} | {r.ratio:.3f} | {split_hit(r)} | "
            f"{'-' if hit is None else f'{hit / r.plain:.2f}'} | {us(graph, True)} | {us(r.check)} |"
        )
    print()
    plains = [r.plain for r in rows]
    small = [r for r in rows if r.plain < 20e-6]
    print(
        f"plain time per call: median {statistics.median(plains) * 1e6:.1f} us; "
        f"{len(small)} of {len(rows)} cases under 20 us "
        f"(captured/plain geometric mean there {geomean([r.ratio for r in small]):.3f}, elsewhere "
        f"{geomean([r.ratio for r in rows if r.plain >= 20e-6]):.3f})"
    )
    checks = [r.check for r in rows if r.check is not None]
    if checks:
        print(
            f"check function per call: median {us(statistics.median(checks))} us, "
            f"max {us(max(checks))} us over {len(checks)} cases"
        )


def write_csv(path: str, rows: List[Row]) -> None:
    def cell(value: Optional[float], scale: float = 1e6) -> str:
        return "" if value is None else f"{value * scale:.4f}"

    with open(path, "w", newline="") as f:
        w = csv.writer(f)
        w.writerow(
            [
                "case",
                "graphs",
                "breaks",
                "frames",
                "compile_ms_per_frame",
                "first_ms",
                "plain_us",
                "captured_us",
                "direct_us",
                "ratio",
                "added_us",
                "hit_us",
                "wrapper_us",
                "runtime_us",
                "graph_us",
                "direct_ratio",
                "check_us",
                "mutates",
                "recompiled",
            ]
        )
        for r in rows:
            w.writerow(
                [
                    r.case.name,
                    r.graphs,
                    " ".join(r.breaks),
                    len(r.frames),
                    " ".join(f"{t * 1e3:.3f}" for t in r.frames),
                    cell(r.first, 1e3),
                    cell(r.plain),
                    cell(r.captured),
                    cell(r.direct),
                    cell(r.ratio, 1),
                    cell(r.added),
                    cell(r.hit),
                    cell(r.wrapper),
                    cell(r.runtime),
                    cell(r.graph),
                    cell(r.direct_ratio, 1),
                    cell(r.check),
                    int(r.mutates),
                    r.recompiled,
                ]
            )


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeat", type=int, default=15, help="steady-state repetitions per case (default 15)")
    ap.add_argument("--first-repeat", type=int, default=3, help="fresh compilations per case (default 3)")
    ap.add_argument(
        "--filter", default=None, help="regular expression searched in 'area/function' (e.g. 'ml/|softmax')"
    )
    ap.add_argument("--min-time", type=float, default=0.005, help="seconds per timed loop of calls (default 0.005)")
    ap.add_argument("--worst", type=int, default=10, help="rows shown by steady-state ratio (default 10)")
    ap.add_argument("--csv", default=None, help="write every case's figures to this file")
    opts = ap.parse_args()
    for name in ("repeat", "first_repeat", "worst"):
        if getattr(opts, name) < 1:
            ap.error(f"--{name.replace('_', '-')} must be at least 1")
    if opts.min_time <= 0:
        ap.error("--min-time must be positive")

    cases = load_cases(opts.filter)
    if not cases:
        ap.error(f"--filter {opts.filter!r} matches no case")
    print(
        f"CPython {platform.python_version()}, numpy {np.__version__}, {sys.platform}, "
        f"load average {' '.join(f'{x:.2f}' for x in os.getloadavg())}"
    )
    warnings.simplefilter("ignore")  # both sides alike: no warning printing in the timings
    rows = []
    start = time.perf_counter()
    with open(os.devnull, "w") as devnull, contextlib.redirect_stdout(devnull):  # corpus functions that print
        fixed_cost(3, opts.min_time)  # warm-up: first-use imports of the translator
        fixed = fixed_cost(3 * opts.repeat, opts.min_time)
        for case in cases:
            rows.append(measure(case, opts.repeat, opts.first_repeat, opts.min_time))
    print(
        f"{time.perf_counter() - start:.0f} s, --repeat {opts.repeat} --first-repeat {opts.first_repeat} "
        f"--min-time {opts.min_time}"
    )
    print()
    report(rows, fixed, function_lookup(), min(opts.worst, len(rows)))
    if opts.csv:
        write_csv(opts.csv, rows)


if __name__ == "__main__":
    main()
