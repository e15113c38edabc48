"""framehook vs Dynamo: cache-hit overhead and compile time on the same kernels.

    python packages/translator/benchmarks/bench_dynamo.py [--quick] [--repeat N] [--compile-repeat N]

Every kernel is written twice: for numpy, run under ``framehook.translator.optimize(backend="eager")``,
and for torch (CPU float64 tensors of the same shapes and values), run under
``torch.compile(backend="eager")``. Both use their defaults otherwise (automatic dynamic shapes).
Inputs are small, so that the per-call cost of the machinery is visible next to the kernel.

* added ns per call at a cache hit: (compiled - plain) of the same framework. The four
  variants of a kernel (numpy plain, numpy under framehook, torch plain, torch under Dynamo)
  are timed in turn within each repetition; the figure is the median over repetitions of the
  per-repetition difference, so load changes on a shared machine hit both sides alike.
  In parentheses: min(compiled) - min(plain), a cross-check that load bursts move less.
* first call (compile) ms: wall time of the first call after a fresh reset
  (``framehook.translator.reset()``, ``torch._dynamo.reset()``), minus the plain call; median
  over ``--compile-repeat`` fresh compilations. Both sides are warmed up first (one compile
  of every kernel), so one-time imports are not counted.
* graphs / breaks: from ``framehook.translator.explain`` and ``torch._dynamo.explain``.

The two rows ``one_array`` and ``identity`` are the overhead rows. Dynamo captures no graph
from ``identity`` (no tensor operation) and keeps no cache entry for it, so its figure there
is the cost of the ``torch.compile`` wrapper and of its frame hook skipping the frame;
framehook compiles the frame and runs a guarded cache hit. A kernel whose framehook figure is
at or below zero ran faster captured than plain (the graph has no Python loop left, shape-
derived values are constants, globals are bound once); the ratio column says so.

Without torch (it is never a dependency) only the framehook columns are printed.
"""

from __future__ import annotations

import argparse
import gc
import math
import os
import platform
import statistics
import sys
import time
import timeit

import numpy as np

import framehook.translator as ft

try:  # optional: the Dynamo side of the comparison
    import torch
    import torch._dynamo
except ImportError:  # pragma: no cover - depends on the environment
    torch = None


# ---------------------------------------------------------------------------------------------
# numpy kernels (the style of bench_capture.py)


def np_one_array(x):
    return x + 1


def np_identity(x):
    return x


def np_softmax(x):
    e = np.exp(x - x.max(axis=-1, keepdims=True))
    return e / e.sum(axis=-1, keepdims=True)


def np_layer_norm(x):
    mu = x.mean(axis=-1, keepdims=True)
    var = ((x - mu) ** 2).mean(axis=-1, keepdims=True)
    return (x - mu) / np.sqrt(var + 1e-5)


def np_gelu(x):
    return 0.5 * x * (1.0 + np.tanh(0.79788456 * (x + 0.044715 * x**3)))


def np_moving_average(x, w=4):
    c = np.cumsum(x)
    return (c[w:] - c[:-w]) / w


def np_mlp(x, w1, b1, w2, b2):
    h = np.maximum(x @ w1 + b1, 0.0)
    return h @ w2 + b2


def np_jacobi(u, steps=50):
    for _ in range(steps):
        v = u.copy()
        v[1:-1, 1:-1] = 0.25 * (u[:-2, 1:-1] + u[2:, 1:-1] + u[1:-1, :-2] + u[1:-1, 2:])
        u = v
    return u


def np_black_scholes(s, k, t, r, sigma):
    d1 = (np.log(s / k) + (r + 0.5 * sigma**2) * t) / (sigma * math.sqrt(t))
    d2 = d1 - sigma * math.sqrt(t)
    c1 = 0.5 * (1 + np.tanh(0.79788456 * (d1 + 0.044715 * d1**3)))
    c2 = 0.5 * (1 + np.tanh(0.79788456 * (d2 + 0.044715 * d2**3)))
    return s * c1 - k * math.exp(-r * t) * c2


def np_kmeans_step(points, centers):
    d = ((points[:, None, :] - centers[None, :, :]) ** 2).sum(axis=-1)
    labels = np.argmin(d, axis=1)
    onehot = (labels[:, None] == np.arange(centers.shape[0])[None, :]).astype(points.dtype)
    return (onehot.T @ points) / np.maximum(onehot.sum(axis=0), 1)[:, None]


def np_power_iteration(a, iters=20):
    v = np.ones(a.shape[0], dtype=a.dtype) / math.sqrt(a.shape[0])
    for _ in range(iters):
        w = a @ v
        v = w / np.linalg.norm(w)
    return v


def np_small_linalg(a, b):
    return np.linalg.solve(a @ a.T + np.eye(a.shape[0], dtype=a.dtype), b)


# ---------------------------------------------------------------------------------------------
# the same kernels for torch (``torch`` is looked up when they run)


def th_one_array(x):
    return x + 1


def th_identity(x):
    return x


def th_softmax(x):
    e = torch.exp(x - x.amax(dim=-1, keepdim=True))
    return e / e.sum(dim=-1, keepdim=True)


def th_layer_norm(x):
    mu = x.mean(dim=-1, keepdim=True)
    var = ((x - mu) ** 2).mean(dim=-1, keepdim=True)
    return (x - mu) / torch.sqrt(var + 1e-5)


def th_gelu(x):
    return 0.5 * x * (1.0 + torch.tanh(0.79788456 * (x + 0.044715 * x**3)))


def th_moving_average(x, w=4):
    c = torch.cumsum(x, dim=0)
    return (c[w:] - c[:-w]) / w


def th_mlp(x, w1, b1, w2, b2):
    h = torch.clamp(x @ w1 + b1, min=0.0)
    return h @ w2 + b2


def th_jacobi(u, steps=50):
    for _ in range(steps):
        v = u.clone()
        v[1:-1, 1:-1] = 0.25 * (u[:-2, 1:-1] + u[2:, 1:-1] + u[1:-1, :-2] + u[1:-1, 2:])
        u = v
    return u


def th_black_scholes(s, k, t, r, sigma):
    d1 = (torch.log(s / k) + (r + 0.5 * sigma**2) * t) / (sigma * math.sqrt(t))
    d2 = d1 - sigma * math.sqrt(t)
    c1 = 0.5 * (1 + torch.tanh(0.79788456 * (d1 + 0.044715 * d1**3)))
    c2 = 0.5 * (1 + torch.tanh(0.79788456 * (d2 + 0.044715 * d2**3)))
    return s * c1 - k * math.exp(-r * t) * c2


def th_kmeans_step(points, centers):
    d = ((points[:, None, :] - centers[None, :, :]) ** 2).sum(dim=-1)
    labels = torch.argmin(d, dim=1)
    onehot = (labels[:, None] == torch.arange(centers.shape[0])[None, :]).to(points.dtype)
    return (onehot.T @ points) / torch.clamp(onehot.sum(dim=0), min=1)[:, None]


def th_power_iteration(a, iters=20):
    v = torch.ones(a.shape[0], dtype=a.dtype) / math.sqrt(a.shape[0])
    for _ in range(iters):
        w = a @ v
        v = w / torch.linalg.norm(w)
    return v


def th_small_linalg(a, b):
    return torch.linalg.solve(a @ a.T + torch.eye(a.shape[0], dtype=a.dtype), b)


# ---------------------------------------------------------------------------------------------
# cases: (name, numpy kernel, torch kernel, numpy arguments); the torch arguments are the
# same values as float64 tensors (Python scalars stay Python scalars)

_rng = np.random.default_rng(0)
CASES = [
    ("one_array (4)", np_one_array, th_one_array, (np.ones(4),)),
    ("identity (4)", np_identity, th_identity, (np.ones(4),)),
    ("softmax 8x8", np_softmax, th_softmax, (_rng.standard_normal((8, 8)),)),
    ("layer_norm 8x16", np_layer_norm, th_layer_norm, (_rng.standard_normal((8, 16)),)),
    ("gelu 64", np_gelu, th_gelu, (_rng.standard_normal(64),)),
    ("moving_average 64, w=4", np_moving_average, th_moving_average, (_rng.standard_normal(64),)),
    (
        "mlp 4x8 -> 16 -> 4",
        np_mlp,
        th_mlp,
        (
            _rng.standard_normal((4, 8)),
            _rng.standard_normal((8, 16)),
            _rng.standard_normal(16),
            _rng.standard_normal((16, 4)),
            _rng.standard_normal(4),
        ),
    ),
    ("jacobi 50 steps 16x16", np_jacobi, th_jacobi, (_rng.standard_normal((16, 16)),)),
    ("black_scholes 64", np_black_scholes, th_black_scholes, (np.linspace(50, 150, 64), 100.0, 1.0, 0.05, 0.2)),
    (
        "kmeans_step 32x2, k=4",
        np_kmeans_step,
        th_kmeans_step,
        (_rng.standard_normal((32, 2)), _rng.standard_normal((4, 2))),
    ),
    ("power_iteration 20 steps 8x8", np_power_iteration, th_power_iteration, (_rng.standard_normal((8, 8)),)),
    ("small_linalg 8x8", np_small_linalg, th_small_linalg, (_rng.standard_normal((8, 8)), _rng.standard_normal(8))),
]
OVERHEAD_ROWS = ("one_array (4)", "identity (4)")


def torch_args(args):
    return tuple(torch.from_numpy(a.copy()) if isinstance(a, np.ndarray) else a for a in args)


def check_same(name, np_out, th_out) -> None:
    got = th_out.detach().numpy()
    if got.shape != np_out.shape or not np.allclose(got, np_out, rtol=1e-9, atol=1e-9):
        raise AssertionError(f"{name}: the numpy and torch kernels disagree")


# ---------------------------------------------------------------------------------------------
# measurement


def calibrate(calls, target_s: float) -> int:
    """Calls per timing run so that the slowest variant takes about target_s."""
    slowest = max(timeit.Timer(lambda fn=fn, args=args: fn(*args)).timeit(20) / 20 for fn, args in calls)
    return max(5, min(20000, int(target_s / max(slowest, 1e-7))))


def interleaved(calls, number: int, repeat: int):
    """Seconds per call of each (fn, args), every variant timed in turn within each repetition.
    Returns one list of samples per variant."""
    timers = [timeit.Timer(lambda fn=fn, args=args: fn(*args)) for fn, args in calls]
    samples = [[] for _ in calls]
    for _ in range(repeat):
        for timer, out in zip(timers, samples):
            out.append(timer.timeit(number) / number)
    return samples


def paired_added(plain, compiled) -> float:
    """Median over repetitions of (compiled - plain), seconds."""
    return statistics.median(c - p for p, c in zip(plain, compiled))


def min_added(plain, compiled) -> float:
    """min(compiled) - min(plain), seconds: the cross-check least moved by load bursts."""
    return min(compiled) - min(plain)


def first_call(make, reset, args) -> float:
    """Wall time of the first call of a freshly compiled function after a reset, seconds."""
    reset()
    fn = make()
    gc.collect()
    t0 = time.perf_counter()
    fn(*args)
    return time.perf_counter() - t0


def ft_make(kernel):
    return lambda: ft.optimize(backend="eager")(kernel)


def th_make(kernel):
    return lambda: torch.compile(kernel, backend="eager")


def th_reset() -> None:
    torch._dynamo.reset()


def fmt_ratio(num: float, den: float) -> str:
    """num / den for added times; framehook's figure can be at or below zero (its graph ran
    faster than the plain function by more than the machinery costs)."""
    if den <= 0:
        return "fh <= 0"
    if num <= 0:
        return "Dynamo <= 0"
    return f"{num / den:.1f}x"


def entries_of(kernel) -> int:
    """Compiled entries of a numpy kernel's code object in framehook's cache."""
    from framehook.translator._runtime import runtime

    return len(runtime.cache_entries(kernel.__code__))


def dynamo_entries_of(kernel) -> int:
    return len(torch._dynamo.eval_frame._debug_get_cache_entry_list(kernel.__code__))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="fewer repetitions (a smoke run)")
    ap.add_argument("--repeat", type=int, default=31, help="timing repetitions per kernel (default 31)")
    ap.add_argument("--compile-repeat", type=int, default=5, help="fresh compilations per kernel (default 5)")
    ap.add_argument("--only", default="", help="comma-separated substrings of kernel names to run")
    opts = ap.parse_args()
    repeat, compile_repeat, target = opts.repeat, opts.compile_repeat, 0.005
    if opts.quick:
        repeat, compile_repeat, target = 5, 1, 0.002
    cases = CASES
    if opts.only:
        wanted = [w.strip() for w in opts.only.split(",") if w.strip()]
        cases = [c for c in CASES if any(w in c[0] for w in wanted)]
    have_torch = torch is not None

    load = ", ".join(f"{x:.2f}" for x in os.getloadavg()) if hasattr(os, "getloadavg") else "n/a"
    head = f"CPython {platform.python_version()}, numpy {np.__version__}, load average {load}"
    if have_torch:
        head += f", torch {torch.__version__} (threads {torch.get_num_threads()})"
    print(head)
    if not have_torch:
        print(
            "torch is not installed: printing the framehook figures only "
            "(pip install torch==2.13.0 on CPython 3.11 for the Dynamo columns)"
        )
    sys.stdout.flush()

    # warm-up: one compile of every kernel on both sides (one-time imports, Dynamo's lazy setup)
    reports = {}
    for name, npk, thk, args in cases:
        reports[name] = [ft.explain(npk)(*args), None]
        first_call(ft_make(npk), ft.reset, args)
        if have_torch:
            targs = torch_args(args)
            check_same(name, npk(*args), thk(*targs))
            reports[name][1] = torch._dynamo.explain(thk)(*targs)
            first_call(th_make(thk), th_reset, targs)
    ft.reset()
    if have_torch:
        th_reset()

    rows = []
    for name, npk, thk, args in cases:
        row = {"name": name, "ft_graphs": reports[name][0].graph_count, "ft_breaks": reports[name][0].graph_break_count}
        # compile: fresh reset before every first call; both sides in turn
        ft_c, th_c = [], []
        for _ in range(compile_repeat):
            ft_c.append(first_call(ft_make(npk), ft.reset, args))
            if have_torch:
                th_c.append(first_call(th_make(thk), th_reset, torch_args(args)))
        # cache hit: compile once more, then time the four variants in turn
        ft.reset()
        ft_fn = ft.optimize(backend="eager")(npk)
        ft_fn(*args)
        calls = [(npk, args), (ft_fn, args)]
        if have_torch:
            th_reset()
            targs = torch_args(args)
            th_fn = torch.compile(thk, backend="eager")
            th_fn(*targs)
            calls += [(thk, targs), (th_fn, targs)]
        number = calibrate(calls, target)
        samples = interleaved(calls, number, repeat)
        # the timed calls must all have been cache hits of one entry
        # (Dynamo keeps no entry for a frame it captured no graph from: identity)
        row["recompiled"] = entries_of(npk) != 1 or (have_torch and dynamo_entries_of(thk) > 1)
        row["np_plain"] = statistics.median(samples[0])
        row["ft_added"] = paired_added(samples[0], samples[1])
        row["ft_added_min"] = min_added(samples[0], samples[1])
        row["ft_compile"] = statistics.median(ft_c) - row["np_plain"]
        if have_torch:
            dx = reports[name][1]
            row["th_graphs"], row["th_breaks"] = dx.graph_count, len(dx.break_reasons)
            row["th_plain"] = statistics.median(samples[2])
            row["th_added"] = paired_added(samples[2], samples[3])
            row["th_added_min"] = min_added(samples[2], samples[3])
            row["th_compile"] = statistics.median(th_c) - row["th_plain"]
        rows.append(row)
        ft.reset()
        if have_torch:
            th_reset()

    print()
    if have_torch:
        print(
            "| kernel | graphs / breaks fh | graphs / breaks Dynamo | plain numpy us | plain torch us "
            "| fh added ns | Dynamo added ns | Dynamo / fh added | fh first call ms | Dynamo first call ms "
            "| fh / Dynamo first call |"
        )
        print("|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
        for r in rows:
            print(
                f"| {r['name']} | {r['ft_graphs']} / {r['ft_breaks']} | {r['th_graphs']} / {r['th_breaks']} "
                f"| {r['np_plain'] * 1e6:.2f} | {r['th_plain'] * 1e6:.2f} "
                f"| {r['ft_added'] * 1e9:+.0f} ({r['ft_added_min'] * 1e9:+.0f}) | {r['th_added'] * 1e9:+.0f} ({r['th_added_min'] * 1e9:+.0f}) "
                f"| {fmt_ratio(r['th_added'], r['ft_added'])} ({fmt_ratio(r['th_added_min'], r['ft_added_min'])}) "
                f"| {r['ft_compile'] * 1e3:.2f} | {r['th_compile'] * 1e3:.2f} "
                f"| {r['ft_compile'] / r['th_compile']:.3f} |"
            )
    else:
        print("| kernel | graphs / breaks fh | plain numpy us | fh added ns | fh first call ms |")
        print("|---|---:|---:|---:|---:|")
        for r in rows:
            print(
                f"| {r['name']} | {r['ft_graphs']} / {r['ft_breaks']} | {r['np_plain'] * 1e6:.2f} "
                f"| {r['ft_added'] * 1e9:+.0f} ({r['ft_added_min'] * 1e9:+.0f}) | {r['ft_compile'] * 1e3:.2f} |"
            )

    for r in rows:
        if r["recompiled"]:
            print(f"warning: {r['name']}: more than one cache entry after the timed calls (a recompilation)")
    print()
    ft_comp = [r["ft_compile"] for r in rows]
    ft_add = [r["ft_added"] for r in rows]
    print(
        f"framehook: added per cache-hit call median {statistics.median(ft_add) * 1e9:.0f} ns "
        f"(max {max(ft_add) * 1e9:.0f}); first call median {statistics.median(ft_comp) * 1e3:.2f} ms, "
        f"max {max(ft_comp) * 1e3:.2f} ms"
    )
    if have_torch:
        th_comp = [r["th_compile"] for r in rows]
        th_add = [r["th_added"] for r in rows]
        print(
            f"Dynamo:    added per cache-hit call median {statistics.median(th_add) * 1e9:.0f} ns "
            f"(max {max(th_add) * 1e9:.0f}); first call median {statistics.median(th_comp) * 1e3:.2f} ms, "
            f"max {max(th_comp) * 1e3:.2f} ms"
        )
        over = [r for r in rows if r["name"] in OVERHEAD_ROWS]
        if over:
            print(
                "added-time ratio Dynamo / framehook, overhead rows: "
                + ", ".join(f"{r['name']} {fmt_ratio(r['th_added'], r['ft_added'])}" for r in over)
            )
        for key, label in (("", "median of paired differences"), ("_min", "difference of minima")):
            fa, ta = [r["ft_added" + key] for r in rows], [r["th_added" + key] for r in rows]
            met = sum(f <= 0 or t >= 8 * f for f, t in zip(fa, ta))
            print(
                f"added-time ratio Dynamo / framehook ({label}): medians over kernels "
                f"{statistics.median(ta) * 1e9:.0f} / {statistics.median(fa) * 1e9:.0f} ns = "
                f"{fmt_ratio(statistics.median(ta), statistics.median(fa))}; {met} of {len(rows)} kernels "
                f"at or above 8x (framehook <= 0 counted as met) (target >= 8x)"
            )
        per_kernel = [r["ft_compile"] / r["th_compile"] for r in rows]
        worst = rows[per_kernel.index(max(per_kernel))]["name"]
        print(
            f"first-call ratio framehook / Dynamo: medians {statistics.median(ft_comp) / statistics.median(th_comp):.3f}, "
            f"maxima {max(ft_comp) / max(th_comp):.3f}; per kernel median {statistics.median(per_kernel):.3f}, "
            f"worst {max(per_kernel):.3f} ({worst}); {sum(x <= 1 / 3 for x in per_kernel)} of {len(rows)} kernels "
            f"at or below 1/3 (target <= 0.333)"
        )
    if hasattr(os, "getloadavg"):
        print("load average at the end: " + ", ".join(f"{x:.2f}" for x in os.getloadavg()))
    sys.stdout.flush()


if __name__ == "__main__":
    main()
