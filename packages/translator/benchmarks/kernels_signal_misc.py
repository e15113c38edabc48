"""More kernels for bench_numba.py: image and signal processing, n-body and pairwise
distances, radial/azimuthal binning, escape-time loops, integer stencils and broadcasting of
mixed ranks (see npbench_kernels.py for the format and the held-out split).

Written for this benchmark; never part of the product.
"""

from __future__ import annotations

import numpy as np

# ---------------------------------------------------------------- image and signal


def box_blur_f32(img, passes):
    for _ in range(passes):
        out = img.copy()
        out[1:-1, 1:-1] = (
            img[:-2, :-2]
            + img[:-2, 1:-1]
            + img[:-2, 2:]
            + img[1:-1, :-2]
            + img[1:-1, 1:-1]
            + img[1:-1, 2:]
            + img[2:, :-2]
            + img[2:, 1:-1]
            + img[2:, 2:]
        ) / np.float32(9.0)
        img = out
    return img


def box_blur_f32_hand(img, passes):
    n, m = img.shape
    for _ in range(passes):
        out = img.copy()
        for i in range(1, n - 1):
            for j in range(1, m - 1):
                s = np.float32(0.0)
                for di in range(-1, 2):
                    for dj in range(-1, 2):
                        s += img[i + di, j + dj]
                out[i, j] = s / np.float32(9.0)
        img = out
    return img


def histogram_edges(x, edges):
    counts = np.zeros(edges.shape[0] - 1, dtype=np.int64)
    for b in range(edges.shape[0] - 1):
        counts[b] = ((x >= edges[b]) & (x < edges[b + 1])).sum()
    return counts


def histogram_edges_hand(x, edges):
    nb = edges.shape[0] - 1
    counts = np.zeros(nb, dtype=np.int64)
    for i in range(x.shape[0]):
        v = x[i]
        for b in range(nb):
            if edges[b] <= v < edges[b + 1]:
                counts[b] += 1
                break
    return counts


def downsample2x(img):
    return 0.25 * (img[::2, ::2] + img[1::2, ::2] + img[::2, 1::2] + img[1::2, 1::2])


def downsample2x_hand(img):
    n, m = img.shape[0] // 2, img.shape[1] // 2
    out = np.empty((n, m))
    for i in range(n):
        for j in range(m):
            out[i, j] = 0.25 * (
                img[2 * i, 2 * j] + img[2 * i + 1, 2 * j] + img[2 * i, 2 * j + 1] + img[2 * i + 1, 2 * j + 1]
            )
    return out


def fir_f32(x, taps):
    n = x.shape[0] - taps.shape[0] + 1
    y = np.zeros(n, dtype=np.float32)
    for k in range(taps.shape[0]):
        y += taps[k] * x[taps.shape[0] - 1 - k : taps.shape[0] - 1 - k + n]
    return y


def fir_f32_hand(x, taps):
    t = taps.shape[0]
    n = x.shape[0] - t + 1
    y = np.zeros(n, dtype=np.float32)
    for i in range(n):
        s = np.float32(0.0)
        for k in range(t):
            s += taps[k] * x[t - 1 - k + i]
        y[i] = s
    return y


def iir_biquad(x, b0, b1, b2, a1, a2):
    y = np.zeros_like(x)
    for i in range(2, x.shape[0]):
        y[i] = b0 * x[i] + b1 * x[i - 1] + b2 * x[i - 2] - a1 * y[i - 1] - a2 * y[i - 2]
    return y


def iir_biquad_hand(x, b0, b1, b2, a1, a2):
    y = np.zeros_like(x)
    for i in range(2, x.shape[0]):
        y[i] = b0 * x[i] + b1 * x[i - 1] + b2 * x[i - 2] - a1 * y[i - 1] - a2 * y[i - 2]
    return y


def sobel_edges(img):
    gx = (img[:-2, 2:] + 2 * img[1:-1, 2:] + img[2:, 2:]) - (img[:-2, :-2] + 2 * img[1:-1, :-2] + img[2:, :-2])
    gy = (img[2:, :-2] + 2 * img[2:, 1:-1] + img[2:, 2:]) - (img[:-2, :-2] + 2 * img[:-2, 1:-1] + img[:-2, 2:])
    return np.sqrt(gx * gx + gy * gy)


def sobel_edges_hand(img):
    n, m = img.shape
    out = np.empty((n - 2, m - 2))
    for i in range(n - 2):
        for j in range(m - 2):
            gx = (img[i, j + 2] + 2 * img[i + 1, j + 2] + img[i + 2, j + 2]) - (
                img[i, j] + 2 * img[i + 1, j] + img[i + 2, j]
            )
            gy = (img[i + 2, j] + 2 * img[i + 2, j + 1] + img[i + 2, j + 2]) - (
                img[i, j] + 2 * img[i, j + 1] + img[i, j + 2]
            )
            out[i, j] = np.sqrt(gx * gx + gy * gy)
    return out


# ---------------------------------------------------------------- n-body and pairwise distances


def nbody_accel(pos, mass, soft):
    d = pos[None, :, :] - pos[:, None, :]
    r2 = (d * d).sum(axis=2) + soft * soft
    inv3 = r2**-1.5
    return (d * (inv3 * mass[None, :])[:, :, None]).sum(axis=1)


def nbody_accel_hand(pos, mass, soft):
    n = pos.shape[0]
    acc = np.zeros((n, 3))
    for i in range(n):
        for j in range(n):
            dx = pos[j, 0] - pos[i, 0]
            dy = pos[j, 1] - pos[i, 1]
            dz = pos[j, 2] - pos[i, 2]
            f = mass[j] * (dx * dx + dy * dy + dz * dz + soft * soft) ** -1.5
            acc[i, 0] += f * dx
            acc[i, 1] += f * dy
            acc[i, 2] += f * dz
    return acc


def pairwise_dist(a, b):
    return np.sqrt(((a[:, None, :] - b[None, :, :]) ** 2).sum(axis=-1))


def pairwise_dist_hand(a, b):
    n, m, k = a.shape[0], b.shape[0], a.shape[1]
    out = np.empty((n, m))
    for i in range(n):
        for j in range(m):
            s = 0.0
            for c in range(k):
                d = a[i, c] - b[j, c]
                s += d * d
            out[i, j] = np.sqrt(s)
    return out


# ---------------------------------------------------------------- radial and azimuthal binning


def radial_profile(data, cx, cy, nbins):
    y, x = np.indices(data.shape)
    r = np.sqrt((x - cx) ** 2 + (y - cy) ** 2)
    rmax = r.max()
    out = np.zeros(nbins)
    for b in range(nbins):
        sel = (r >= rmax * b / nbins) & (r < rmax * (b + 1) / nbins)
        out[b] = data[sel].mean() if sel.any() else 0.0
    return out


def radial_profile_hand(data, cx, cy, nbins):
    n, m = data.shape
    r = np.empty((n, m))
    rmax = 0.0
    for i in range(n):
        for j in range(m):
            r[i, j] = np.sqrt((j - cx) ** 2 + (i - cy) ** 2)
            rmax = max(rmax, r[i, j])
    out = np.zeros(nbins)
    for b in range(nbins):
        lo = rmax * b / nbins
        hi = rmax * (b + 1) / nbins
        s = 0.0
        k = 0
        for i in range(n):
            for j in range(m):
                if lo <= r[i, j] < hi:
                    s += data[i, j]
                    k += 1
        out[b] = s / k if k else 0.0
    return out


def azimuthal_bincount(data, cx, cy, nbins):
    y, x = np.indices(data.shape)
    theta = np.arctan2(y - cy, x - cx)
    idx = ((theta + np.pi) / (2 * np.pi) * nbins).astype(np.int64)
    idx = np.minimum(idx, nbins - 1)
    total = np.bincount(idx.ravel(), weights=data.ravel(), minlength=nbins)
    count = np.bincount(idx.ravel(), minlength=nbins)
    return total / np.maximum(count, 1)


def azimuthal_bincount_hand(data, cx, cy, nbins):
    n, m = data.shape
    total = np.zeros(nbins)
    count = np.zeros(nbins)
    for i in range(n):
        for j in range(m):
            t = np.arctan2(i - cy, j - cx)
            b = min(int((t + np.pi) / (2 * np.pi) * nbins), nbins - 1)
            total[b] += data[i, j]
            count[b] += 1
    return total / np.maximum(count, 1)


# ---------------------------------------------------------------- escape-time loops


def mandel_escape(cr, ci, maxiter):
    zr = np.zeros_like(cr)
    zi = np.zeros_like(ci)
    count = np.zeros(cr.shape, dtype=np.int64)
    for _ in range(maxiter):
        inside = zr * zr + zi * zi <= 4.0
        count += inside
        nr = np.where(inside, zr * zr - zi * zi + cr, zr)
        zi = np.where(inside, 2.0 * zr * zi + ci, zi)
        zr = nr
    return count


def mandel_escape_hand(cr, ci, maxiter):
    n, m = cr.shape
    count = np.zeros((n, m), dtype=np.int64)
    for i in range(n):
        for j in range(m):
            a = 0.0
            b = 0.0
            k = 0
            for _ in range(maxiter):
                if a * a + b * b > 4.0:
                    break
                a, b = a * a - b * b + cr[i, j], 2.0 * a * b + ci[i, j]
                k += 1
            count[i, j] = k
    return count


def julia_count_i32(zr, zi, c_re, c_im, maxiter):
    count = np.zeros(zr.shape, dtype=np.int32)
    for _ in range(maxiter):
        alive = (zr * zr + zi * zi) < 4.0
        count = count + alive.astype(np.int32)
        zr, zi = np.where(alive, zr * zr - zi * zi + c_re, zr), np.where(alive, 2.0 * zr * zi + c_im, zi)
    return count


def julia_count_i32_hand(zr, zi, c_re, c_im, maxiter):
    count = np.zeros(zr.shape, dtype=np.int32)
    for i in range(zr.shape[0]):
        a = zr[i]
        b = zi[i]
        k = 0
        for _ in range(maxiter):
            if a * a + b * b >= 4.0:
                break
            a, b = a * a - b * b + c_re, 2.0 * a * b + c_im
            k += 1
        count[i] = k
    return count


# ---------------------------------------------------------------- integer kernels


def collatz_steps(n, steps):
    count = np.zeros_like(n)
    for _ in range(steps):
        live = n != 1
        count += live
        n = np.where(live, np.where(n % 2 == 0, n // 2, 3 * n + 1), n)
    return count


def collatz_steps_hand(n, steps):
    count = np.zeros_like(n)
    for i in range(n.shape[0]):
        v = n[i]
        k = 0
        for _ in range(steps):
            if v == 1:
                break
            v = v // 2 if v % 2 == 0 else 3 * v + 1
            k += 1
        count[i] = k
    return count


def life_step_i32(board, gens):
    for _ in range(gens):
        nb = np.zeros_like(board)
        nb[1:-1, 1:-1] = (
            board[:-2, :-2]
            + board[:-2, 1:-1]
            + board[:-2, 2:]
            + board[1:-1, :-2]
            + board[1:-1, 2:]
            + board[2:, :-2]
            + board[2:, 1:-1]
            + board[2:, 2:]
        )
        board = ((nb == 3) | ((board == 1) & (nb == 2))).astype(np.int32)
    return board


def life_step_i32_hand(board, gens):
    n, m = board.shape
    for _ in range(gens):
        nxt = np.zeros_like(board)
        for i in range(n):
            for j in range(m):
                s = 0
                if 0 < i < n - 1 and 0 < j < m - 1:
                    for di in range(-1, 2):
                        for dj in range(-1, 2):
                            if di != 0 or dj != 0:
                                s += board[i + di, j + dj]
                nxt[i, j] = 1 if s == 3 or (board[i, j] == 1 and s == 2) else 0
        board = nxt
    return board


# ---------------------------------------------------------------- broadcasting of mixed ranks


def outer3_broadcast(a, b, c, w):
    t = a[:, None, None] * b[None, :, None] + c[None, None, :]
    return (t * w).sum(axis=0) + w.mean()


def outer3_broadcast_hand(a, b, c, w):
    n, m, k = a.shape[0], b.shape[0], c.shape[0]
    out = np.zeros((m, k))
    s = 0.0
    for j in range(m):
        for q in range(k):
            s += w[j, q]
    mean = s / (m * k)
    for i in range(n):
        for j in range(m):
            for q in range(k):
                out[j, q] += (a[i] * b[j] + c[q]) * w[j, q]
    return out + mean


def bias_scale_3d(x, scale, bias, row):
    # x (N, C, L); scale (C,), bias (N, 1, 1) and row (L,) broadcast against it
    return np.tanh(x * scale[None, :, None] + bias) * row - x.mean(axis=2, keepdims=True)


def bias_scale_3d_hand(x, scale, bias, row):
    n, c, length = x.shape
    out = np.empty_like(x)
    for i in range(n):
        for k in range(c):
            s = 0.0
            for q in range(length):
                s += x[i, k, q]
            mean = s / length
            for q in range(length):
                out[i, k, q] = np.tanh(x[i, k, q] * scale[k] + bias[i, 0, 0]) * row[q] - mean
    return out


def args(rng, small):
    """name -> (category, unseen, make): ``make()`` builds fresh arguments."""

    def size(big, tiny):
        return tiny if small else big

    ft = np.float32
    img = size(600, 10)
    grid = size(200, 9)
    re, im = np.meshgrid(np.linspace(-2.0, 0.6, grid), np.linspace(-1.2, 1.2, grid))
    return {
        "box_blur_f32": ("image_signal", False, lambda: (rng.random((img, img), dtype=ft), size(3, 2))),
        "histogram_edges": (
            "image_signal",
            False,
            lambda: (rng.standard_normal(size(200_000, 50)), np.linspace(-3, 3, size(17, 5))),
        ),
        "downsample2x": ("image_signal", True, lambda: (rng.random((size(1200, 10), size(1200, 12))),)),
        "fir_f32": (
            "image_signal",
            True,
            lambda: (rng.standard_normal(size(400_000, 40), dtype=ft), rng.standard_normal(size(15, 4), dtype=ft)),
        ),
        "iir_biquad": ("image_signal", False, lambda: (rng.standard_normal(size(3000, 30)), 0.2, 0.3, 0.2, -0.5, 0.2)),
        "sobel_edges": ("image_signal", True, lambda: (rng.random((size(800, 10), size(800, 9))),)),
        "nbody_accel": (
            "nbody",
            False,
            lambda: (rng.standard_normal((size(300, 7), 3)), rng.random(size(300, 7)), 0.1),
        ),
        "pairwise_dist": (
            "nbody",
            True,
            lambda: (rng.standard_normal((size(300, 6), 3)), rng.standard_normal((size(400, 5), 3))),
        ),
        "radial_profile": (
            "binning",
            False,
            lambda: (rng.random((size(300, 12), size(300, 12))), 150.3, 140.7, size(24, 4)),
        ),
        "azimuthal_bincount": (
            "binning",
            True,
            lambda: (rng.random((size(500, 12), size(500, 12))), 250.5, 240.5, size(36, 6)),
        ),
        "mandel_escape": ("escape", False, lambda: (re, im, size(30, 8))),
        "julia_count_i32": (
            "escape",
            True,
            lambda: (
                rng.uniform(-1.5, 1.5, size(40_000, 30)),
                rng.uniform(-1.5, 1.5, size(40_000, 30)),
                -0.8,
                0.156,
                size(30, 8),
            ),
        ),
        "collatz_steps": (
            "escape",
            False,
            lambda: (rng.integers(1, 100_000, size(20_000, 30), dtype=np.int64), size(40, 12)),
        ),
        "life_step_i32": (
            "stencil",
            True,
            lambda: ((rng.random((size(500, 10), size(500, 10))) < 0.3).astype(np.int32), size(5, 3)),
        ),
        "outer3_broadcast": (
            "broadcast",
            False,
            lambda: (
                rng.random(size(100, 4)),
                rng.random(size(120, 5)),
                rng.random(size(150, 6)),
                rng.random((size(120, 5), size(150, 6))),
            ),
        ),
        "bias_scale_3d": (
            "broadcast",
            True,
            lambda: (
                rng.standard_normal((size(64, 3), size(64, 4), size(256, 5))),
                rng.random(size(64, 4)),
                rng.random((size(64, 3), 1, 1)),
                rng.random(size(256, 5)),
            ),
        ),
    }
