"""Triangular loop nests and a while-loop solver: first call and steady state, two
translator sources side by side.

    python packages/translator/benchmarks/bench_triangular.py \\
        --before /work/main/packages/translator/src [--after packages/translator/src] [--repeat N]

Each source runs in its own worker process (``PYTHONPATH=<src>``, the same interpreter and
runtime): for each kernel and size, the compile time (``explain()``'s ``compile_time``: the
translation of every frame) and the first call (``explain(fn)(*args)`` after ``reset()``:
trace, compile, run), medians of ``--first`` runs, the graph's operation count
(a loop node's body counts once), graphs and breaks, then the steady state of the
optimized function against plain numpy (alternating, median of N timeit repeats). The
parent prints one markdown table: before | after (``--rounds``: the two workers run that
many times in turn, and each figure is the median over the rounds). ``--unrolled`` adds, for "after", the
compile time with every loop unrolled (``capture_loops=False``, no trace budget). The kernels
come from ``tests/loop_kernels.py``. ``--worker`` is the worker's entry point.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import platform
import statistics
import subprocess
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from timing import steady_state, use_test_kernels  # noqa: E402

use_test_kernels()
from loop_kernels import (  # noqa: E402
    cholesky,
    cholesky_sums,
    gram_schmidt,
    jacobi_steps,
    jacobi_until,
    lu,
    lu_sums,
)


def _cases():
    rng = np.random.default_rng(0)
    out = []
    for n in (32, 64, 128):
        m = rng.standard_normal((n, n))
        spd = m @ m.T + n * np.eye(n)
        out += [
            (f"cholesky {n}x{n}", cholesky, (spd,)),
            (f"lu {n}x{n}", lu, (spd,)),
            (f"gram_schmidt {2 * n}x{n}", gram_schmidt, (rng.standard_normal((2 * n, n)),)),
            (f"cholesky_sums {n}x{n}", cholesky_sums, (spd,)),
            (f"lu_sums {n}x{n}", lu_sums, (spd,)),
        ]
    for n in (64, 256):
        a = np.diag(np.full(n, 4.0 * n)) + rng.uniform(-1, 1, (n, n))
        b = rng.standard_normal(n)
        out.append((f"jacobi_until {n}", jacobi_until, (a, b, 1e-10)))
        out.append((f"jacobi_steps {n}", jacobi_steps, (a, b, 1e-10)))
    return out


UNROLLED = dict(
    capture_loops=False,
    max_traced_ops=10**9,
    max_traced_instructions=10**8,
    max_trace_seconds=None,
    max_unrolled_iterations=10**6,
)


def _worker(repeat: int, first: int, only: str, unrolled: bool) -> None:
    import framehook.translator as ft

    rows = []
    ft.explain(cholesky)(np.eye(6) * 2)  # first-use imports, outside every measurement
    for label, fn, args in _cases():
        if only and only not in label:
            continue
        times, compiles = [], []
        for _ in range(first):
            ft.reset()
            start = time.perf_counter()
            out = ft.explain(fn)(*args)
            times.append(time.perf_counter() - start)
            compiles.append(out.compile_time)
        ops = sum(sum(g.values()) for g in out.ops_per_graph)
        ft.reset()
        opt = ft.optimize("eager")(fn)
        opt(*args)
        plain, optimized = steady_state(fn, opt, args, repeat)
        rows.append(
            {
                "label": label,
                "first": statistics.median(times),
                "compile": statistics.median(compiles),
                "ops": ops,
                "graphs": out.graph_count,
                "breaks": out.graph_break_count,
                "plain": plain,
                "optimized": optimized,
            }
        )
        if unrolled:  # every loop unrolled (capture off, no trace budget): one run
            ft.reset()
            with ft.config.patch(**UNROLLED):
                rows[-1]["unrolled"] = ft.explain(fn)(*args).compile_time
        ft.reset()
    print(json.dumps(rows))


def _run(src: str, repeat: int, first: int, only: str = "", unrolled: bool = False) -> list:
    env = dict(os.environ, PYTHONPATH=src)
    done = subprocess.run(
        [sys.executable, __file__, "--worker", "--repeat", str(repeat), "--first", str(first), "--only", only]
        + (["--unrolled"] if unrolled else []),
        env=env,
        check=True,
        capture_output=True,
        text=True,
    )
    return json.loads(done.stdout.strip().splitlines()[-1])


def _merge(runs: list) -> list:
    """One row per kernel: the medians over the rounds of every time, the rest from the first."""
    rows = []
    for same in zip(*runs):
        row = dict(same[0])
        for key in ("first", "compile", "plain", "optimized"):
            row[key] = statistics.median(r[key] for r in same)
        rows.append(row)
    return rows


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--before", required=False, help="translator source directory measured as 'before'")
    ap.add_argument("--after", default=str(Path(__file__).resolve().parents[1] / "src"))
    ap.add_argument("--repeat", type=int, default=7)
    ap.add_argument("--first", type=int, default=3)
    ap.add_argument("--only", default="", help="run only the kernels whose label contains this text")
    ap.add_argument("--rounds", type=int, default=1, help="worker runs per source, in turn (medians over them)")
    ap.add_argument(
        "--unrolled",
        action="store_true",
        help="also compile each kernel with every loop unrolled (slow for the large sizes)",
    )
    ap.add_argument("--worker", action="store_true")
    opts = ap.parse_args()
    if opts.worker:
        _worker(opts.repeat, opts.first, opts.only, opts.unrolled)
        return
    if not opts.before:
        ap.error("--before: the translator source directory to compare with (e.g. main's packages/translator/src)")
    befores, afters = [], []
    for r in range(opts.rounds):  # in turn, so that a change of the machine's load hits both alike
        befores.append(_run(opts.before, opts.repeat, opts.first, opts.only))
        afters.append(_run(opts.after, opts.repeat, opts.first, opts.only, opts.unrolled and r == 0))
    before, after = _merge(befores), _merge(afters)
    print(f"CPython {platform.python_version()}, numpy {np.__version__}, {sys.platform}")
    print()
    print(
        "| kernel | before: compile ms | first call ms | ops | graphs/breaks | after: compile ms | first call ms "
        "| ops | graphs/breaks | compile before/after | first call before/after | plain us | before us | after us "
        "| after/plain |"
    )
    print("|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
    for b, a in zip(before, after):
        print(
            f"| {a['label']} | {b['compile'] * 1e3:.1f} | {b['first'] * 1e3:.1f} | {b['ops']} | {b['graphs']}/{b['breaks']} "
            f"| {a['compile'] * 1e3:.1f} | {a['first'] * 1e3:.1f} | {a['ops']} | {a['graphs']}/{a['breaks']} "
            f"| {b['compile'] / a['compile']:.1f}x | {b['first'] / a['first']:.1f}x "
            f"| {a['plain'] * 1e6:.1f} | {b['optimized'] * 1e6:.1f} | {a['optimized'] * 1e6:.1f} "
            f"| {a['optimized'] / a['plain']:.3f} |"
        )
    if opts.unrolled:
        print()
        print("| kernel | unrolled: compile ms | after: compile ms | unrolled/after |")
        print("|---|---:|---:|---:|")
        for a in after:
            print(
                f"| {a['label']} | {a['unrolled'] * 1e3:.1f} | {a['compile'] * 1e3:.1f} "
                f"| {a['unrolled'] / a['compile']:.0f}x |"
            )
    geo = math.exp(sum(math.log(a["optimized"] / a["plain"]) for a in after) / len(after))
    print()
    print(f"geometric mean after/plain: {geo:.3f}")


if __name__ == "__main__":
    main()
