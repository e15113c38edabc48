"""NPBench-class kernels for bench_numba.py, each written twice: as a user writes it with
numpy (what the numba backend captures and compiles) and by hand with explicit loops for
``numba.njit`` (the ceiling). ``corpus()`` returns a ``Kernel`` per kernel: name, numpy
function, hand-written function, arguments, category (one of ``CATEGORIES``: stencils,
linear algebra, solvers, neural-network layers, reductions, image and signal kernels, n-body,
binning, escape-time loops, elementwise, broadcasting of mixed ranks) and ``unseen``. The
sizes make plain numpy take roughly 1-30 ms a call; ``corpus(small=True)`` gives tiny
inputs for tests. Dtypes: float64 mostly, float32 (``*_f32``, ``mvt_f32``), int32
(``int_mod_sums``, ``life_step_i32``, ``julia_count_i32``'s counts) and int64
(``collatz_steps``, ``mandel_escape``'s counts).

The kernels live in three modules: this one (the first 26), kernels_linalg_nn.py and
kernels_signal_misc.py.

Held-out split: the 15 kernels marked ``unseen=True`` are the "kernels it was not tuned on"
set (argminmax, azimuthal_bincount, back_subst, batch_norm_f32, bias_scale_3d, bicg_like,
downsample2x, fir_f32, gemver_like, jacobi_solve, julia_count_i32, life_step_i32, maxpool2d,
pairwise_dist, sobel_edges). Whoever tunes the backend's fusion and lowering does not look at
them nor tune on their figures (``--split tuned`` leaves them out); bench_numba.py reports
them separately (``--split unseen``).

Written for this benchmark (no code taken from NPBench or elsewhere); the hand-written
versions are compiled with ``numba.njit`` by bench_numba.py and are never part of the product.
"""

from __future__ import annotations

import os
import sys
from typing import Callable, List, NamedTuple

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import kernels_linalg_nn  # noqa: E402
import kernels_signal_misc  # noqa: E402


# ---------------------------------------------------------------- stencils with time loops


def jacobi_1d(a, b, steps):
    for _ in range(steps):
        b[1:-1] = 0.33333 * (a[:-2] + a[1:-1] + a[2:])
        a[1:-1] = 0.33333 * (b[:-2] + b[1:-1] + b[2:])
    return a


def jacobi_1d_hand(a, b, steps):
    n = a.shape[0]
    for _ in range(steps):
        for i in range(1, n - 1):
            b[i] = 0.33333 * (a[i - 1] + a[i] + a[i + 1])
        for i in range(1, n - 1):
            a[i] = 0.33333 * (b[i - 1] + b[i] + b[i + 1])
    return a


def jacobi_2d(a, b, steps):
    for _ in range(steps):
        b[1:-1, 1:-1] = 0.2 * (a[1:-1, 1:-1] + a[1:-1, :-2] + a[1:-1, 2:] + a[2:, 1:-1] + a[:-2, 1:-1])
        a[1:-1, 1:-1] = 0.2 * (b[1:-1, 1:-1] + b[1:-1, :-2] + b[1:-1, 2:] + b[2:, 1:-1] + b[:-2, 1:-1])
    return a


def jacobi_2d_hand(a, b, steps):
    n, m = a.shape
    for _ in range(steps):
        for i in range(1, n - 1):
            for j in range(1, m - 1):
                b[i, j] = 0.2 * (a[i, j] + a[i, j - 1] + a[i, j + 1] + a[i + 1, j] + a[i - 1, j])
        for i in range(1, n - 1):
            for j in range(1, m - 1):
                a[i, j] = 0.2 * (b[i, j] + b[i, j - 1] + b[i, j + 1] + b[i + 1, j] + b[i - 1, j])
    return a


def heat_3d(a, b, steps):
    for _ in range(steps):
        b[1:-1, 1:-1, 1:-1] = (
            0.125 * (a[2:, 1:-1, 1:-1] - 2.0 * a[1:-1, 1:-1, 1:-1] + a[:-2, 1:-1, 1:-1])
            + 0.125 * (a[1:-1, 2:, 1:-1] - 2.0 * a[1:-1, 1:-1, 1:-1] + a[1:-1, :-2, 1:-1])
            + 0.125 * (a[1:-1, 1:-1, 2:] - 2.0 * a[1:-1, 1:-1, 1:-1] + a[1:-1, 1:-1, :-2])
            + a[1:-1, 1:-1, 1:-1]
        )
        a, b = b, a
    return a


def heat_3d_hand(a, b, steps):
    n = a.shape[0]
    for _ in range(steps):
        for i in range(1, n - 1):
            for j in range(1, n - 1):
                for k in range(1, n - 1):
                    c = a[i, j, k]
                    b[i, j, k] = (
                        0.125 * (a[i + 1, j, k] - 2.0 * c + a[i - 1, j, k])
                        + 0.125 * (a[i, j + 1, k] - 2.0 * c + a[i, j - 1, k])
                        + 0.125 * (a[i, j, k + 1] - 2.0 * c + a[i, j, k - 1])
                        + c
                    )
        a, b = b, a
    return a


def fdtd_2d(ex, ey, hz, fict):
    for t in range(fict.shape[0]):
        ey[0, :] = fict[t]
        ey[1:, :] = ey[1:, :] - 0.5 * (hz[1:, :] - hz[:-1, :])
        ex[:, 1:] = ex[:, 1:] - 0.5 * (hz[:, 1:] - hz[:, :-1])
        hz[:-1, :-1] = hz[:-1, :-1] - 0.7 * (ex[:-1, 1:] - ex[:-1, :-1] + ey[1:, :-1] - ey[:-1, :-1])
    return hz


def fdtd_2d_hand(ex, ey, hz, fict):
    n, m = hz.shape
    for t in range(fict.shape[0]):
        for j in range(m):
            ey[0, j] = fict[t]
        for i in range(1, n):
            for j in range(m):
                ey[i, j] -= 0.5 * (hz[i, j] - hz[i - 1, j])
        for i in range(n):
            for j in range(1, m):
                ex[i, j] -= 0.5 * (hz[i, j] - hz[i, j - 1])
        for i in range(n - 1):
            for j in range(m - 1):
                hz[i, j] -= 0.7 * (ex[i, j + 1] - ex[i, j] + ey[i + 1, j] - ey[i, j])
    return hz


def heat_steps(u, steps, alpha):
    for _ in range(steps):
        u[1:-1] = u[1:-1] + alpha * (u[2:] - 2.0 * u[1:-1] + u[:-2])
    return u


def heat_steps_hand(u, steps, alpha):
    n = u.shape[0]
    for _ in range(steps):
        prev = u[0]
        for i in range(1, n - 1):
            cur = u[i]
            u[i] = cur + alpha * (u[i + 1] - 2.0 * cur + prev)
            prev = cur
    return u


def floyd_warshall(path):
    for k in range(path.shape[0]):
        path[:, :] = np.minimum(path, path[:, k : k + 1] + path[k : k + 1, :])
    return path


def floyd_warshall_hand(path):
    n = path.shape[0]
    for k in range(n):
        for i in range(n):
            pik = path[i, k]
            for j in range(n):
                path[i, j] = min(path[i, j], pik + path[k, j])
    return path


# ---------------------------------------------------------------- triangular linear algebra


def trisolv(low, b):
    x = np.zeros_like(b)
    for i in range(b.shape[0]):
        x[i] = (b[i] - (low[i, :i] * x[:i]).sum()) / low[i, i]
    return x


def trisolv_hand(low, b):
    n = b.shape[0]
    x = np.zeros_like(b)
    for i in range(n):
        s = b[i]
        for j in range(i):
            s -= low[i, j] * x[j]
        x[i] = s / low[i, i]
    return x


def cholesky(a):
    n = a.shape[0]
    low = np.zeros_like(a)
    for j in range(n):
        low[j, j] = np.sqrt(a[j, j] - (low[j, :j] * low[j, :j]).sum())
        for i in range(j + 1, n):
            low[i, j] = (a[i, j] - (low[i, :j] * low[j, :j]).sum()) / low[j, j]
    return low


def cholesky_hand(a):
    n = a.shape[0]
    low = np.zeros_like(a)
    for j in range(n):
        s = a[j, j]
        for k in range(j):
            s -= low[j, k] * low[j, k]
        low[j, j] = np.sqrt(s)
        for i in range(j + 1, n):
            s = a[i, j]
            for k in range(j):
                s -= low[i, k] * low[j, k]
            low[i, j] = s / low[j, j]
    return low


def lu(a):
    n = a.shape[0]
    for k in range(n):
        a[k + 1 :, k] = a[k + 1 :, k] / a[k, k]
        for i in range(k + 1, n):
            a[i, k + 1 :] = a[i, k + 1 :] - a[i, k] * a[k, k + 1 :]
    return a


def lu_hand(a):
    n = a.shape[0]
    for k in range(n):
        for i in range(k + 1, n):
            a[i, k] /= a[k, k]
        for i in range(k + 1, n):
            f = a[i, k]
            for j in range(k + 1, n):
                a[i, j] -= f * a[k, j]
    return a


def symm_lower(a, c):
    # c = tril(a) applied row by row (a symm-like triangular update)
    for i in range(a.shape[0]):
        c[i, :] = c[i, :] * 0.5 + (a[i, : i + 1] * c[i, : i + 1]).sum()
    return c


def symm_lower_hand(a, c):
    n = a.shape[0]
    for i in range(n):
        s = 0.0
        for j in range(i + 1):
            s += a[i, j] * c[i, j]
        for j in range(n):
            c[i, j] = c[i, j] * 0.5 + s
    return c


# ---------------------------------------------------------------- elementwise physics and finance


def black_scholes(s, k, t, r, v):
    sq = v * np.sqrt(t)
    d1 = (np.log(s / k) + (r + 0.5 * v * v) * t) / sq
    d2 = d1 - sq
    n1 = 0.5 * (1.0 + np.tanh(0.7978845608 * (d1 + 0.044715 * d1**3)))
    n2 = 0.5 * (1.0 + np.tanh(0.7978845608 * (d2 + 0.044715 * d2**3)))
    return s * n1 - k * np.exp(-r * t) * n2


def black_scholes_hand(s, k, t, r, v):
    out = np.empty_like(s)
    for i in range(s.shape[0]):
        sq = v[i] * np.sqrt(t[i])
        d1 = (np.log(s[i] / k[i]) + (r + 0.5 * v[i] * v[i]) * t[i]) / sq
        d2 = d1 - sq
        n1 = 0.5 * (1.0 + np.tanh(0.7978845608 * (d1 + 0.044715 * d1**3)))
        n2 = 0.5 * (1.0 + np.tanh(0.7978845608 * (d2 + 0.044715 * d2**3)))
        out[i] = s[i] * n1 - k[i] * np.exp(-r * t[i]) * n2
    return out


def arc_distance(t0, p0, t1, p1):
    tmp = np.sin((t1 - t0) / 2) ** 2 + np.cos(t0) * np.cos(t1) * np.sin((p1 - p0) / 2) ** 2
    return 2 * np.arctan2(np.sqrt(tmp), np.sqrt(1 - tmp))


def arc_distance_hand(t0, p0, t1, p1):
    out = np.empty_like(t0)
    for i in range(t0.shape[0]):
        tmp = np.sin((t1[i] - t0[i]) / 2) ** 2 + np.cos(t0[i]) * np.cos(t1[i]) * np.sin((p1[i] - p0[i]) / 2) ** 2
        out[i] = 2 * np.arctan2(np.sqrt(tmp), np.sqrt(1 - tmp))
    return out


def lennard_jones(r, eps, sigma):
    s6 = (sigma / r) ** 6
    return (4.0 * eps * (s6 * s6 - s6)).sum()


def lennard_jones_hand(r, eps, sigma):
    total = 0.0
    for i in range(r.shape[0]):
        s6 = (sigma / r[i]) ** 6
        total += 4.0 * eps * (s6 * s6 - s6)
    return total


def mandel_steps(zr, zi, cr, ci, steps):
    for _ in range(steps):
        nr = zr * zr - zi * zi + cr
        zi = 2.0 * zr * zi + ci
        zr = np.clip(nr, -2.0, 2.0)
        zi = np.clip(zi, -2.0, 2.0)
    return zr * zr + zi * zi


def mandel_steps_hand(zr, zi, cr, ci, steps):
    out = np.empty_like(zr)
    for i in range(zr.shape[0]):
        a, b = zr[i], zi[i]
        for _ in range(steps):
            nr = a * a - b * b + cr[i]
            b = min(max(2.0 * a * b + ci[i], -2.0), 2.0)
            a = min(max(nr, -2.0), 2.0)
        out[i] = a * a + b * b
    return out


def leapfrog(x, v, dt, steps):
    for _ in range(steps):
        v = v - dt * x * (1.0 + 0.1 * x * x)
        x = x + dt * v
    return x, v


def leapfrog_hand(x, v, dt, steps):
    x = x.copy()
    v = v.copy()
    for i in range(x.shape[0]):
        a, b = x[i], v[i]
        for _ in range(steps):
            b = b - dt * a * (1.0 + 0.1 * a * a)
            a = a + dt * b
        x[i], v[i] = a, b
    return x, v


# ---------------------------------------------------------------- reductions


def column_stats(x):
    mean = x.mean(axis=0)
    centered = x - mean
    return mean, np.sqrt((centered * centered).mean(axis=0))


def column_stats_hand(x):
    n, m = x.shape
    mean = np.zeros(m)
    for i in range(n):
        for j in range(m):
            mean[j] += x[i, j]
    mean /= n
    var = np.zeros(m)
    for i in range(n):
        for j in range(m):
            d = x[i, j] - mean[j]
            var[j] += d * d
    return mean, np.sqrt(var / n)


def logsumexp_rows(x):
    top = x.max(axis=1)
    return top + np.log(np.exp(x - top[:, None]).sum(axis=1))


def logsumexp_rows_hand(x):
    n, m = x.shape
    out = np.empty(n)
    for i in range(n):
        top = x[i, 0]
        for j in range(m):
            top = max(top, x[i, j])
        s = 0.0
        for j in range(m):
            s += np.exp(x[i, j] - top)
        out[i] = top + np.log(s)
    return out


def go_fast(a):
    trace = 0.0
    for i in range(a.shape[0]):
        trace += np.tanh(a[i, i])
    return a + trace


def go_fast_hand(a):
    trace = 0.0
    for i in range(a.shape[0]):
        trace += np.tanh(a[i, i])
    return a + trace


def prefix_decay(x, r):
    out = np.empty_like(x)
    acc = 0.0
    for i in range(x.shape[0]):
        acc = acc * r + x[i]
        out[i] = acc
    return out


def prefix_decay_hand(x, r):
    out = np.empty_like(x)
    acc = 0.0
    for i in range(x.shape[0]):
        acc = acc * r + x[i]
        out[i] = acc
    return out


# ---------------------------------------------------------------- small neural-network layers


def softmax_rows(x):
    e = np.exp(x - x.max(axis=1, keepdims=True))
    return e / e.sum(axis=1, keepdims=True)


def softmax_rows_hand(x):
    n, m = x.shape
    out = np.empty_like(x)
    for i in range(n):
        top = x[i, 0]
        for j in range(m):
            top = max(top, x[i, j])
        s = 0.0
        for j in range(m):
            e = np.exp(x[i, j] - top)
            out[i, j] = e
            s += e
        for j in range(m):
            out[i, j] /= s
    return out


def layer_norm(x, gamma, beta):
    mean = x.mean(axis=-1, keepdims=True)
    var = ((x - mean) ** 2).mean(axis=-1, keepdims=True)
    return (x - mean) / np.sqrt(var + 1e-5) * gamma + beta


def layer_norm_hand(x, gamma, beta):
    n, m = x.shape
    out = np.empty_like(x)
    for i in range(n):
        mean = 0.0
        for j in range(m):
            mean += x[i, j]
        mean /= m
        var = 0.0
        for j in range(m):
            d = x[i, j] - mean
            var += d * d
        inv = 1.0 / np.sqrt(var / m + 1e-5)
        for j in range(m):
            out[i, j] = (x[i, j] - mean) * inv * gamma[j] + beta[j]
    return out


def gelu(x):
    return 0.5 * x * (1.0 + np.tanh(0.7978845608 * (x + 0.044715 * x**3)))


def gelu_hand(x):
    out = np.empty_like(x)
    flat_in = x.ravel()
    flat = out.ravel()
    for i in range(flat_in.shape[0]):
        v = flat_in[i]
        flat[i] = 0.5 * v * (1.0 + np.tanh(0.7978845608 * (v + 0.044715 * v**3)))
    return out


def conv1d_taps(x, w):
    n = x.shape[0] - w.shape[0] + 1
    out = np.zeros(n)
    for k in range(w.shape[0]):
        out = out + w[k] * x[k : k + n]
    return np.maximum(out, 0.0)


def conv1d_taps_hand(x, w):
    n = x.shape[0] - w.shape[0] + 1
    out = np.zeros(n)
    for i in range(n):
        s = 0.0
        for k in range(w.shape[0]):
            s += w[k] * x[i + k]
        out[i] = max(s, 0.0)
    return out


CATEGORIES = (
    "stencil",
    "linalg",
    "solver",
    "nn",
    "reduction",
    "image_signal",
    "nbody",
    "binning",
    "escape",
    "elementwise",
    "broadcast",
)


# ---------------------------------------------------------------- accumulations in place, channel broadcasts


def taps_accumulate_f32(x, h):
    n = x.shape[0] - h.shape[0] + 1
    y = np.zeros(n, dtype=x.dtype)
    for k in range(h.shape[0]):
        y += h[k] * x[k : k + n]
    return y


def taps_accumulate_f32_hand(x, h):
    n = x.shape[0] - h.shape[0] + 1
    y = np.zeros(n, dtype=x.dtype)
    for i in range(n):
        acc = np.float32(0.0)
        for k in range(h.shape[0]):
            acc += h[k] * x[i + k]
        y[i] = acc
    return y


def taps_2d(img, w):
    out = np.zeros((img.shape[0] - 2, img.shape[1] - 2))
    for di in range(3):
        for dj in range(3):
            out += w[di, dj] * img[di : di + img.shape[0] - 2, dj : dj + img.shape[1] - 2]
    return out


def taps_2d_hand(img, w):
    n, m = img.shape[0] - 2, img.shape[1] - 2
    out = np.zeros((n, m))
    for i in range(n):
        for j in range(m):
            acc = 0.0
            for di in range(3):
                for dj in range(3):
                    acc += w[di, dj] * img[i + di, j + dj]
            out[i, j] = acc
    return out


def channel_affine(x, gain, shift):
    return x * gain[None, :, None] + shift[None, :, None]


def channel_affine_hand(x, gain, shift):
    out = np.empty_like(x)
    for b in range(x.shape[0]):
        for c in range(x.shape[1]):
            g, s = gain[c], shift[c]
            for k in range(x.shape[2]):
                out[b, c, k] = x[b, c, k] * g + s
    return out


def _args(rng, small):
    """name -> (category, unseen, make) of the kernels above; ``small``: tiny inputs for tests."""

    def size(big, tiny):
        return tiny if small else big

    k = size(120, 8)
    spd = rng.standard_normal((k, k))
    spd = spd @ spd.T + k * np.eye(k)
    t = size(400, 10)
    low = np.tril(rng.uniform(0.5, 1.0, (t, t))) + t * np.eye(t)
    dist = rng.uniform(1.0, 10.0, (k, k))
    n = size(200_000, 40)
    sq = size(250, 9)
    cube = size(40, 6)
    line = size(20_000, 30)
    return {
        "jacobi_1d": ("stencil", False, lambda: (rng.standard_normal(line), rng.standard_normal(line), size(50, 3))),
        "jacobi_2d": (
            "stencil",
            False,
            lambda: (rng.standard_normal((sq, sq)), rng.standard_normal((sq, sq)), size(10, 2)),
        ),
        "heat_3d": (
            "stencil",
            False,
            lambda: (rng.standard_normal((cube, cube, cube)), rng.standard_normal((cube, cube, cube)), size(5, 2)),
        ),
        "fdtd_2d": (
            "stencil",
            False,
            lambda: (
                rng.standard_normal((size(200, 7), size(220, 8))),
                rng.standard_normal((size(200, 7), size(220, 8))),
                rng.standard_normal((size(200, 7), size(220, 8))),
                rng.standard_normal(size(10, 3)),
            ),
        ),
        "heat_steps": ("stencil", False, lambda: (rng.standard_normal(line), size(100, 3), 0.1)),
        "floyd_warshall": ("linalg", False, lambda: (dist.copy(),)),
        "trisolv": ("solver", False, lambda: (low, rng.standard_normal(t))),
        "cholesky": ("solver", False, lambda: (spd,)),
        "lu": ("solver", False, lambda: (spd.copy(),)),
        "symm_lower": (
            "linalg",
            False,
            lambda: tuple(rng.standard_normal((size(500, 9), size(500, 9))) for _ in range(2)),
        ),
        "black_scholes": (
            "elementwise",
            False,
            lambda: (
                rng.uniform(50, 150, n),
                rng.uniform(50, 150, n),
                rng.uniform(0.1, 2, n),
                0.03,
                rng.uniform(0.1, 0.5, n),
            ),
        ),
        "arc_distance": ("elementwise", False, lambda: tuple(rng.uniform(0, 1.5, n) for _ in range(4))),
        "lennard_jones": ("nbody", False, lambda: (rng.uniform(0.9, 3.0, 2 * n), 1.0, 1.0)),
        "mandel_steps": (
            "escape",
            False,
            lambda: (
                np.zeros(size(40_000, 30)),
                np.zeros(size(40_000, 30)),
                rng.uniform(-2, 1, size(40_000, 30)),
                rng.uniform(-1, 1, size(40_000, 30)),
                size(20, 4),
            ),
        ),
        "leapfrog": (
            "elementwise",
            False,
            lambda: (rng.standard_normal(size(50_000, 30)), rng.standard_normal(size(50_000, 30)), 0.01, size(20, 3)),
        ),
        "column_stats": ("reduction", False, lambda: (rng.standard_normal((size(2000, 11), size(500, 7))),)),
        "logsumexp_rows": ("reduction", False, lambda: (rng.standard_normal((size(1000, 6), size(600, 9))),)),
        "go_fast": ("reduction", False, lambda: (rng.standard_normal((size(1000, 8), size(1000, 8))),)),
        "prefix_decay": ("image_signal", False, lambda: (rng.standard_normal(line), 0.99)),
        "softmax_rows": ("nn", False, lambda: (rng.standard_normal((size(1000, 6), size(600, 9))),)),
        "layer_norm": (
            "nn",
            False,
            lambda: (
                rng.standard_normal((size(1000, 6), size(400, 8))),
                rng.standard_normal(size(400, 8)),
                rng.standard_normal(size(400, 8)),
            ),
        ),
        "gelu": ("nn", False, lambda: (rng.standard_normal((size(400, 5), size(500, 7))),)),
        "conv1d_taps": ("nn", False, lambda: (rng.standard_normal(size(400_000, 50)), rng.standard_normal(size(9, 3)))),
        "taps_accumulate_f32": (
            "image_signal",
            False,
            lambda: (
                rng.standard_normal(size(200_000, 40)).astype(np.float32),
                rng.standard_normal(size(16, 3)).astype(np.float32),
            ),
        ),
        "taps_2d": (
            "image_signal",
            False,
            lambda: (rng.standard_normal((size(600, 9), size(600, 8))), rng.standard_normal((3, 3))),
        ),
        "channel_affine": (
            "broadcast",
            False,
            lambda: (
                rng.standard_normal((size(16, 2), size(64, 3), size(1024, 5))),
                rng.standard_normal(size(64, 3)),
                rng.standard_normal(size(64, 3)),
            ),
        ),
    }


class Kernel(NamedTuple):
    name: str
    fn: Callable
    hand: Callable
    args: tuple
    category: str
    unseen: bool


def corpus(small: bool = False) -> List[Kernel]:
    """Every kernel with fresh arguments (``small``: tiny ones, for tests)."""
    rng = np.random.default_rng(0)
    out = []
    for mod, table in (
        (None, _args(rng, small)),
        (kernels_linalg_nn, kernels_linalg_nn.args(rng, small)),
        (kernels_signal_misc, kernels_signal_misc.args(rng, small)),
    ):
        for name, (category, unseen, make) in table.items():
            space = globals() if mod is None else vars(mod)
            out.append(Kernel(name, space[name], space[name + "_hand"], make(), category, unseen))
    return out


def kernels(small: bool = False) -> list:
    """(name, numpy function, hand-written function, arguments) for every kernel, as before
    the categories (bench_versus.py reads these)."""
    return [(k.name, k.fn, k.hand, k.args) for k in corpus(small)]
