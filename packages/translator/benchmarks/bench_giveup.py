"""First calls of functions whose trace gives up, against plain execution.

    PYTHONPATH=packages/translator/src python packages/translator/benchmarks/bench_giveup.py [--repeat N] [--clock cpu]

Each case is a loop nest that branches on its loop indices (no loop can be captured, so the
trace unrolls until a limit stops it and the nest runs in Python). For every case, side by
side, medians over ``--repeat`` runs (each run: ``reset()``, then the calls in order):

* plain: the function called plainly;
* first call: ``optimize("eager")(fn)(...)`` right after ``reset()`` (trace, give up, run),
  with the default trace budget (config.max_traced_ops, max_traced_instructions,
  max_trace_seconds) and with the limits that applied before the budget (no op or time
  budget, 100,000 instructions): what the first call cost until now;
* second call: the same arguments again (a cache hit);
* new shape: the next call with other shapes (a cache miss: the frame that gave up is not
  traced again, under either setting, since the give-up is remembered whichever limit ended
  the trace).

The last columns name the graph break that ended the first trace under each setting.
Prints a markdown table.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path
from typing import Any, Callable, Dict, List, Tuple

import numpy as np

import framehook.translator as ft
from framehook.translator import config
from framehook.translator.symbolic import add_observer, remove_observer

sys.path.insert(0, str(Path(__file__).resolve().parent))
import timing  # noqa: E402

timing.use_test_kernels()
from loop_kernels import fill_row  # noqa: E402

OLD_LIMITS = dict(max_traced_ops=10**9, max_traced_instructions=100_000, max_trace_seconds=None)


def band(a, x):
    n = a.shape[0]
    y = np.zeros(n)
    for i in range(n):
        for j in range(n):
            if abs(i - j) <= 2:
                y[i] += a[i, j] * x[j]
    return y


def upper_scaled(a):
    n = a.shape[0]
    out = np.zeros_like(a)
    for i in range(n):
        for j in range(n):
            if i == j:
                out[i, j] = a[i, j]
            elif i < j:
                out[i, j] = a[i, j] * 2.0
    return out


def row_mix(a):
    n = a.shape[0]
    out = a.copy()
    for i in range(n):
        for j in range(n):
            if (i + j) % 3 == 0:
                out[i] = out[i] + a[j] * 0.5
            else:
                out[j] = out[j] - a[i] * 0.25
    return out


def strict_lower_gram(a):
    n = a.shape[0]
    out = np.zeros_like(a)
    for i in range(n):
        for j in range(i):
            for k in range(j):
                if k % 2 == 0:
                    out[i, j] += a[i, k] * a[j, k]
    return out


def via_helper(a):
    n = a.shape[0]
    out = np.zeros_like(a)
    for i in range(n):
        fill_row(out, a, i, n)  # inlined: its loop restarts the unroll count every call
    return out


def cases() -> List[Tuple[Callable[..., Any], tuple, tuple]]:
    rng = np.random.default_rng(0)
    return [
        (band, (rng.random((100, 100)), rng.random(100)), (rng.random((90, 90)), rng.random(90))),
        (upper_scaled, (rng.random((40, 40)),), (rng.random((36, 36)),)),
        (row_mix, (rng.random((30, 8)),), (rng.random((28, 8)),)),
        (strict_lower_gram, (rng.random((30, 30)),), (rng.random((26, 26)),)),
        (via_helper, (rng.random((120, 120)),), (rng.random((100, 100)),)),
    ]


CLOCK = time.perf_counter  # --clock cpu: time.process_time, which a loaded machine inflates less


def timed(fn: Callable[..., Any], args: tuple) -> float:
    return timing.timed(fn, args, CLOCK)


def one_run(fn: Callable[..., Any], args: tuple, other: tuple) -> Dict[str, Any]:
    ft.reset()
    reports: List[Any] = []
    add_observer(reports.append)
    try:
        opt = ft.optimize("eager")(fn)
        first = timed(opt, args)
        breaks = [r.graph_break.code for r in reports if r.code is fn.__code__ and r.graph_break is not None]
        second = timed(opt, args)
        new_shape = timed(opt, other)
    finally:
        remove_observer(reports.append)
    return {"first": first, "second": second, "new_shape": new_shape, "break": breaks[0] if breaks else "-"}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=5, help="runs per case (default 5)")
    parser.add_argument(
        "--clock",
        choices=("wall", "cpu"),
        default="wall",
        help="wall: time.perf_counter (default); cpu: time.process_time of this process",
    )
    opts = parser.parse_args()
    if opts.repeat < 1:
        parser.error(f"--repeat must be at least 1, got {opts.repeat}")
    global CLOCK
    CLOCK = time.perf_counter if opts.clock == "wall" else time.process_time
    import warnings

    warnings.simplefilter("ignore")
    import logging

    logging.getLogger("framehook.translator").setLevel(logging.ERROR)  # cache-limit warnings of helpers
    ft.explain(upper_scaled)(np.ones((3, 3)))  # warm-up: first-use imports are not counted
    print(
        f"CPython {sys.version.split()[0]}, numpy {np.__version__}; {opts.clock} time, medians of "
        f"{opts.repeat} runs, ms\n"
    )
    print(
        "| function | plain | first call | first / plain | first call, old limits | old / new | second call "
        "| new shape | break | break, old limits |"
    )
    print("|---|---:|---:|---:|---:|---:|---:|---:|---|---|")
    for fn, args, other in cases():
        plain = statistics.median(timed(fn, args) for _ in range(opts.repeat))
        new: List[Dict[str, Any]] = []
        old: List[Dict[str, Any]] = []
        for _ in range(opts.repeat):  # in turn, so that a load change hits both alike
            new.append(one_run(fn, args, other))
            with config.patch(**OLD_LIMITS):
                old.append(one_run(fn, args, other))
        med = {k: statistics.median(r[k] for r in new) for k in ("first", "second", "new_shape")}
        old_first = statistics.median(r["first"] for r in old)
        print(
            f"| {fn.__name__} | {plain * 1e3:.2f} | {med['first'] * 1e3:.1f} | {med['first'] / plain:.0f}x "
            f"| {old_first * 1e3:.1f} | {old_first / med['first']:.1f}x | {med['second'] * 1e3:.2f} "
            f"| {med['new_shape'] * 1e3:.2f} | {new[0]['break']} | {old[0]['break']} |"
        )
    ft.reset()


if __name__ == "__main__":
    main()
