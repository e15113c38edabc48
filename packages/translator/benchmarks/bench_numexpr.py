"""The numexpr backend vs plain numpy on elementwise-heavy functions at 10^6 elements.

    python packages/translator/benchmarks/bench_numexpr.py [--quick] [--size N]

Each function runs plainly, under optimize("eager") and under optimize("numexpr") in the
same process, alternating per repetition; the medians of the repetitions are compared.
Prints a markdown table (numexpr's thread count and the machine's CPU count included).
"""

from __future__ import annotations

import argparse
import math
import os
import platform
import statistics
import sys
import time
import types

import numpy as np

import framehook.translator as ft


def black_scholes_call(s, k, t, r, v):
    d1 = (np.log(s / k) + (r + 0.5 * v * v) * t) / (v * np.sqrt(t))
    d2 = d1 - v * np.sqrt(t)
    # a logistic approximation of the normal CDF keeps the expression elementwise
    n1 = 1.0 / (1.0 + np.exp(-1.702 * d1))
    n2 = 1.0 / (1.0 + np.exp(-1.702 * d2))
    return s * n1 - k * np.exp(-r * t) * n2


def polynomial(x):
    return 0.25 * x**3 + 0.75 * x**2 - 1.5 * x - 2.0


def gaussian_mix(x, y):
    return np.exp(-(x * x + y * y) / 2.0) + 0.5 * np.exp(-((x - 1.0) ** 2 + (y + 0.5) ** 2) / 0.5)


def trig(x, y):
    return np.sin(x) * np.cos(y) + np.tanh(x * y) - np.sqrt(x * x + y * y + 1.0)


def masked_select(x, y):
    return np.where((x > 0.5) & (y < 0.5), x * y, x + y * 2.0)


def sigmoid_gate(x, w):
    return x * (1.0 / (1.0 + np.exp(-w * x)))


def horner(x):
    return ((((0.5 * x - 1.25) * x + 2.0) * x - 0.75) * x + 3.0) * x - 1.0


def lerp_blend(a, b, t):
    return a + (b - a) * t * t * (3.0 - 2.0 * t)


def squared_distance(x0, y0, z0, x1, y1, z1):
    return (x0 - x1) ** 2 + (y0 - y1) ** 2 + (z0 - z1) ** 2


def kinetic_energy(m, vx, vy, vz):
    return 0.5 * m * (vx * vx + vy * vy + vz * vz)


def inputs(n, rng):
    a = rng.random(n) + 0.5
    return {
        "black_scholes_call": (a * 100, a * 95, a, 0.05, a * 0.3),
        "polynomial": (rng.standard_normal(n),),
        "gaussian_mix": (rng.standard_normal(n), rng.standard_normal(n)),
        "trig": (rng.standard_normal(n), rng.standard_normal(n)),
        "masked_select": (rng.random(n), rng.random(n)),
        "sigmoid_gate": (rng.standard_normal(n), 1.5),
        "horner": (rng.standard_normal(n),),
        "lerp_blend": (rng.random(n), rng.random(n), rng.random(n)),
        "squared_distance": tuple(rng.standard_normal(n) for _ in range(6)),
        "kinetic_energy": tuple(rng.random(n) for _ in range(4)),
    }


#: arithmetic chains (what the registered backend fuses), then functions dominated by
#: exp/log/sin or by boolean masks (left to numpy's SIMD loops unless numexpr has VML)
ARITHMETIC = [polynomial, horner, lerp_blend, squared_distance, kinetic_energy]
MIXED = [black_scholes_call, gaussian_mix, trig, masked_select, sigmoid_gate]
FUNCTIONS = ARITHMETIC + MIXED


def fresh_copy(fn, tag):
    """``fn`` with its own code object: the cache is per code object, so the eager and the
    numexpr wrappers of one function would otherwise share (and run) one compiled entry."""
    code = fn.__code__.replace(co_name=f"{fn.__name__}_{tag}")
    return types.FunctionType(code, fn.__globals__, code.co_name, fn.__defaults__, fn.__closure__)


def time_one(fn, args, number):
    start = time.perf_counter()
    for _ in range(number):
        fn(*args)
    return (time.perf_counter() - start) / number


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--size", type=int, default=10**6)
    opts = parser.parse_args()
    import numexpr

    repeats, number = (5, 3) if opts.quick else (15, 5)
    rng = np.random.default_rng(0)
    data = inputs(opts.size, rng)
    print(
        f"Python {platform.python_version()}, numpy {np.__version__}, numexpr {numexpr.__version__} "
        f"({numexpr.get_num_threads()} threads), {os.cpu_count()} CPUs, n = {opts.size}"
    )
    print()
    print("| function | numpy (ms) | eager (ms) | numexpr (ms) | numpy / numexpr | eager / numexpr |")
    print("| --- | ---: | ---: | ---: | ---: | ---: |")
    speedups = []
    arith = []
    for fn in FUNCTIONS:
        args = data[fn.__name__]
        eager = ft.optimize("eager")(fresh_copy(fn, "eager"))
        fused = ft.optimize("numexpr")(fresh_copy(fn, "numexpr"))
        want = fn(*args)
        np.testing.assert_allclose(fused(*args), want, rtol=1e-9, atol=1e-12)
        eager(*args)
        times = {"numpy": [], "eager": [], "numexpr": []}
        for _ in range(repeats):
            times["numpy"].append(time_one(fn, args, number))
            times["eager"].append(time_one(eager, args, number))
            times["numexpr"].append(time_one(fused, args, number))
        med = {k: statistics.median(v) for k, v in times.items()}
        ratio = med["numpy"] / med["numexpr"]
        speedups.append(ratio)
        if fn in ARITHMETIC:
            arith.append(ratio)
        print(
            f"| {fn.__name__} | {med['numpy'] * 1e3:.2f} | {med['eager'] * 1e3:.2f} | "
            f"{med['numexpr'] * 1e3:.2f} | {ratio:.2f}x | {med['eager'] / med['numexpr']:.2f}x |"
        )

    def geo(xs):
        return math.exp(sum(math.log(s) for s in xs) / len(xs))

    print(f"| geometric mean, arithmetic chains | | | | {geo(arith):.2f}x | |")
    print(f"| geometric mean, all | | | | {geo(speedups):.2f}x | |")
    sys.stdout.flush()


if __name__ == "__main__":
    main()
