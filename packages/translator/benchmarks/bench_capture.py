"""Captured numpy functions: cache-hit overhead, steady state vs plain numpy, compile time.

    python packages/translator/benchmarks/bench_capture.py [--quick]

Every function is run plainly and under optimize("eager") in the same process, alternating,
and the medians of several timeit repeats are compared. Prints a markdown table.
"""

from __future__ import annotations

import argparse
import math
import platform
import statistics
import sys
import timeit

import numpy as np

import framehook.translator as ft


def one_array(x):
    return x + 1


def identity(x):
    return x


def softmax(x):
    e = np.exp(x - x.max(axis=-1, keepdims=True))
    return e / e.sum(axis=-1, keepdims=True)


def layer_norm(x):
    mu = x.mean(axis=-1, keepdims=True)
    var = ((x - mu) ** 2).mean(axis=-1, keepdims=True)
    return (x - mu) / np.sqrt(var + 1e-5)


def jacobi(u, steps=50):
    for _ in range(steps):
        v = u.copy()
        v[1:-1, 1:-1] = 0.25 * (u[:-2, 1:-1] + u[2:, 1:-1] + u[1:-1, :-2] + u[1:-1, 2:])
        u = v
    return u


def black_scholes(s, k, t, r, sigma):
    d1 = (np.log(s / k) + (r + 0.5 * sigma**2) * t) / (sigma * np.sqrt(t))
    d2 = d1 - sigma * np.sqrt(t)
    c1 = 0.5 * (1 + np.tanh(0.79788456 * (d1 + 0.044715 * d1**3)))
    c2 = 0.5 * (1 + np.tanh(0.79788456 * (d2 + 0.044715 * d2**3)))
    return s * c1 - k * np.exp(-r * t) * c2


def kmeans_step(points, centers):
    d = ((points[:, None, :] - centers[None, :, :]) ** 2).sum(axis=-1)
    labels = np.argmin(d, axis=1)
    onehot = (labels[:, None] == np.arange(centers.shape[0])[None, :]).astype(points.dtype)
    return (onehot.T @ points) / np.maximum(onehot.sum(axis=0), 1)[:, None]


def power_iteration(a, iters=20):
    v = np.ones(a.shape[0]) / math.sqrt(a.shape[0])
    for _ in range(iters):
        w = a @ v
        v = w / np.linalg.norm(w)
    return v


def small_linalg(a, b):
    return np.linalg.solve(a @ a.T + np.eye(a.shape[0]), b)


rng = np.random.default_rng(0)
CASES = [
    ("one_array (4 elements)", one_array, (np.ones(4),)),
    ("identity (4 elements)", identity, (np.ones(4),)),
    ("softmax 64x64", softmax, (rng.standard_normal((64, 64)),)),
    ("layer_norm 256x128", layer_norm, (rng.standard_normal((256, 128)),)),
    ("jacobi 50 steps 100x100", jacobi, (rng.standard_normal((100, 100)),)),
    ("black_scholes 1e5", black_scholes, (np.linspace(50, 150, 100_000), 100.0, 1.0, 0.05, 0.2)),
    ("kmeans_step 1000x2, k=8", kmeans_step, (rng.standard_normal((1000, 2)), rng.standard_normal((8, 2)))),
    ("power_iteration 20 steps 32x32", power_iteration, (rng.standard_normal((32, 32)),)),
    ("small_linalg 8x8", small_linalg, (rng.standard_normal((8, 8)), rng.standard_normal(8))),
]


def per_call(fn, args, number, repeat):
    times = timeit.repeat(lambda: fn(*args), number=number, repeat=repeat)
    return statistics.median(times) / number


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--quick", action="store_true")
    opts = ap.parse_args()
    repeat = 5 if opts.quick else 15
    print(f"CPython {platform.python_version()}, numpy {np.__version__}")
    print("| function | graphs | breaks | compile ms | plain us | eager us | added us | eager/plain |")
    print("|---|---:|---:|---:|---:|---:|---:|---:|")
    ratios = []
    compiles = []
    for name, fn, args in CASES:
        out = ft.explain(fn)(*args)
        compiles.append(out.compile_time)
        opt = ft.optimize("eager")(fn)
        opt(*args)
        t0 = per_call(fn, args, 10, 3)
        number = max(1, min(20000, int(0.02 / max(t0, 1e-7))))
        plain, eager = [], []
        for _ in range(repeat):  # alternate so that machine noise hits both alike
            plain.append(per_call(fn, args, number, 1))
            eager.append(per_call(opt, args, number, 1))
        p, e = statistics.median(plain), statistics.median(eager)
        if name.startswith(("one_array", "identity")):
            pass
        else:
            ratios.append(e / p)
        print(
            f"| {name} | {out.graph_count} | {out.graph_break_count} | {out.compile_time * 1e3:.2f} | "
            f"{p * 1e6:.2f} | {e * 1e6:.2f} | {(e - p) * 1e6:+.2f} | {e / p:.3f} |"
        )
    gm = math.exp(sum(math.log(r) for r in ratios) / len(ratios))
    print(f"\ngeometric mean eager/plain over the kernels (without the two overhead rows): {gm:.3f}")
    print(
        f"compile time per frame: median {statistics.median(compiles) * 1e3:.2f} ms, max {max(compiles) * 1e3:.2f} ms"
    )
    sys.stdout.flush()


if __name__ == "__main__":
    main()
