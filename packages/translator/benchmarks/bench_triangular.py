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
parent prints one markdown table: before | after. ``--worker`` is the worker's entry point.
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
import timeit
from pathlib import Path

import numpy as np


def cholesky(a):
    n = a.shape[0]
    low = np.zeros_like(a)
    for j in range(n):
        low[j, j] = np.sqrt(a[j, j] - low[j, :j] @ low[j, :j])
        for i in range(j + 1, n):
            low[i, j] = (a[i, j] - low[i, :j] @ low[j, :j]) / low[j, j]
    return low


def lu(a):
    n = a.shape[0]
    upper = a.copy()
    lower = np.eye(n)
    for k in range(n):
        for i in range(k + 1, n):
            lower[i, k] = upper[i, k] / upper[k, k]
            upper[i, k:] = upper[i, k:] - lower[i, k] * upper[k, k:]
    return lower, upper


def gram_schmidt(a):
    m, n = a.shape
    q = np.zeros_like(a)
    r = np.zeros((n, n))
    for j in range(n):
        v = a[:, j].copy()
        for i in range(j):
            r[i, j] = q[:, i] @ v
            v = v - r[i, j] * q[:, i]
        r[j, j] = np.linalg.norm(v)
        q[:, j] = v / r[j, j]
    return q, r


def jacobi_until(a, b, tol):
    x = np.zeros_like(b)
    d = np.diag(a)
    r = b - a @ x
    err = np.linalg.norm(r)
    k = 0
    while err > tol:
        x = x + r / d
        r = b - a @ x
        err = np.linalg.norm(r)
        k += 1
    return x, k


def jacobi_steps(a, b, tol):
    x = np.zeros_like(b)
    d = np.diag(a)
    for _ in range(500):
        r = b - a @ x
        x = x + r / d
        if np.linalg.norm(r) < tol:
            break
    return x


def _cases():
    rng = np.random.default_rng(0)
    out = []
    for n in (32, 64, 128):
        m = rng.standard_normal((n, n))
        spd = m @ m.T + n * np.eye(n)
        out += [(f"cholesky {n}x{n}", cholesky, (spd,)), (f"lu {n}x{n}", lu, (spd,)),
                (f"gram_schmidt {2 * n}x{n}", gram_schmidt, (rng.standard_normal((2 * n, n)),))]
    for n in (64, 256):
        a = np.diag(np.full(n, 4.0 * n)) + rng.uniform(-1, 1, (n, n))
        b = rng.standard_normal(n)
        out.append((f"jacobi_until {n}", jacobi_until, (a, b, 1e-10)))
        out.append((f"jacobi_steps {n}", jacobi_steps, (a, b, 1e-10)))
    return out


def _worker(repeat: int, first: int, only: str) -> None:
    import framehook.translator as ft
    rows = []
    ft.explain(cholesky)(np.eye(6) * 2)   # first-use imports, outside every measurement
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
        number = max(1, int(0.02 / max(timeit.timeit(lambda: fn(*args), number=1), 1e-7)))
        plain, optimized = [], []
        for _ in range(repeat):   # alternate so that machine noise hits both alike
            plain.append(timeit.timeit(lambda: fn(*args), number=number) / number)
            optimized.append(timeit.timeit(lambda: opt(*args), number=number) / number)
        rows.append({"label": label, "first": statistics.median(times), "compile": statistics.median(compiles), "ops": ops, "graphs": out.graph_count,
                     "breaks": out.graph_break_count, "plain": statistics.median(plain),
                     "optimized": statistics.median(optimized)})
        ft.reset()
    print(json.dumps(rows))


def _run(src: str, repeat: int, first: int, only: str = "") -> list:
    env = dict(os.environ, PYTHONPATH=src)
    done = subprocess.run([sys.executable, __file__, "--worker", "--repeat", str(repeat), "--first", str(first),
                           "--only", only],
                          env=env, check=True, capture_output=True, text=True)
    return json.loads(done.stdout.strip().splitlines()[-1])


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--before", required=False, help="translator source directory measured as 'before'")
    ap.add_argument("--after", default=str(Path(__file__).resolve().parents[1] / "src"))
    ap.add_argument("--repeat", type=int, default=7)
    ap.add_argument("--first", type=int, default=3)
    ap.add_argument("--only", default="", help="run only the kernels whose label contains this text")
    ap.add_argument("--worker", action="store_true")
    opts = ap.parse_args()
    if opts.worker:
        _worker(opts.repeat, opts.first, opts.only)
        return
    if not opts.before:
        ap.error("--before: the translator source directory to compare with (e.g. main's packages/translator/src)")
    before = _run(opts.before, opts.repeat, opts.first, opts.only)
    after = _run(opts.after, opts.repeat, opts.first, opts.only)
    print(f"CPython {platform.python_version()}, numpy {np.__version__}, {sys.platform}")
    print()
    print("| kernel | before: compile ms | first call ms | ops | graphs/breaks | after: compile ms | first call ms "
          "| ops | graphs/breaks | compile before/after | first call before/after | plain us | before us | after us "
          "| after/plain |")
    print("|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
    for b, a in zip(before, after):
        print(f"| {a['label']} | {b['compile'] * 1e3:.1f} | {b['first'] * 1e3:.1f} | {b['ops']} | {b['graphs']}/{b['breaks']} "
              f"| {a['compile'] * 1e3:.1f} | {a['first'] * 1e3:.1f} | {a['ops']} | {a['graphs']}/{a['breaks']} "
              f"| {b['compile'] / a['compile']:.1f}x | {b['first'] / a['first']:.1f}x "
              f"| {a['plain'] * 1e6:.1f} | {b['optimized'] * 1e6:.1f} | {a['optimized'] * 1e6:.1f} "
              f"| {a['optimized'] / a['plain']:.3f} |")
    geo = math.exp(sum(math.log(a["optimized"] / a["plain"]) for a in after) / len(after))
    print()
    print(f"geometric mean after/plain: {geo:.3f}")


if __name__ == "__main__":
    main()
