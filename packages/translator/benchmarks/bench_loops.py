"""Loops captured as one loop node vs unrolled: compile time, graph size, steady state.

    python packages/translator/benchmarks/bench_loops.py [--repeat N]

For each time-stepping kernel and step count, in one process: the first call (translation
and compilation) and the graph's operation count with ``config.capture_loops`` on and off,
then the steady-state time of the captured function against plain numpy (alternating,
median of N timeit repeats). Prints a markdown table.
"""

from __future__ import annotations

import argparse
import math
import platform
import sys
import time
from pathlib import Path

import numpy as np

import framehook.translator as ft
from framehook.translator import config

sys.path.insert(0, str(Path(__file__).resolve().parent))
from timing import steady_state  # noqa: E402


def jacobi(u, steps):
    for _ in range(steps):
        v = u.copy()
        v[1:-1, 1:-1] = 0.25 * (u[:-2, 1:-1] + u[2:, 1:-1] + u[1:-1, :-2] + u[1:-1, 2:])
        u = v
    return u


def heat_1d(u, alpha, steps):
    for _ in range(steps):
        u = u + alpha * (np.roll(u, 1) - 2 * u + np.roll(u, -1))
    return u


def power_iteration(a, steps):
    v = np.ones(a.shape[0]) / math.sqrt(a.shape[0])
    for _ in range(steps):
        w = a @ v
        v = w / np.linalg.norm(w)
    return v @ a @ v


def leapfrog(p, q, dt, steps):
    for _ in range(steps):
        p = p - 0.5 * dt * q
        q = q + dt * p
        p = p - 0.5 * dt * q
    return p, q


def first_call(fn, args, capture):
    ft.reset()
    with config.patch(
        capture_loops=capture,
        max_unrolled_iterations=100_000,
        max_traced_instructions=10_000_000,
        max_traced_ops=10**9,
        max_trace_seconds=None,
    ):
        start = time.perf_counter()
        out = ft.explain(fn)(*args)
        elapsed = time.perf_counter() - start
    ops = sum(out.ops_per_graph[0].values()) if out.graphs else 0
    return elapsed, ops, out.graph_break_count


def steady(fn, args, repeat):
    ft.reset()
    opt = ft.optimize("eager")(fn)
    opt(*args)
    return steady_state(fn, opt, args, repeat)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--repeat", type=int, default=7)
    opts = ap.parse_args()
    rng = np.random.default_rng(0)
    u2 = rng.standard_normal((100, 100))
    u1 = rng.standard_normal(1000)
    a = rng.standard_normal((32, 32))
    a = a @ a.T
    cases = [
        ("jacobi 100x100", jacobi, lambda n: (u2, n)),
        ("heat_1d 1000", heat_1d, lambda n: (u1, 0.1, n)),
        ("power_iteration 32x32", power_iteration, lambda n: (a, n)),
        ("leapfrog 1000", leapfrog, lambda n: (u1, u1[::-1].copy(), 0.01, n)),
    ]
    print(f"CPython {platform.python_version()}, numpy {np.__version__}, {sys.platform}")
    print()
    print(
        "| kernel | steps | captured: first call ms | ops | unrolled: first call ms | ops | breaks "
        "| plain us | captured us | captured/plain |"
    )
    print("|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
    ratios = []
    for label, fn, make in cases:
        for steps in (10, 50, 200):
            args = make(steps)
            t_cap, ops_cap, _ = first_call(fn, args, True)
            t_unr, ops_unr, breaks = first_call(fn, args, False)
            plain, captured = steady(fn, args, opts.repeat)
            ratios.append(captured / plain)
            print(
                f"| {label} | {steps} | {t_cap * 1e3:.1f} | {ops_cap} | {t_unr * 1e3:.1f} | {ops_unr} | {breaks} "
                f"| {plain * 1e6:.1f} | {captured * 1e6:.1f} | {captured / plain:.3f} |"
            )
    geo = math.exp(sum(math.log(r) for r in ratios) / len(ratios))
    print()
    print(f"geometric mean captured/plain: {geo:.3f}")
    ft.reset()


if __name__ == "__main__":
    main()
