"""More kernels for bench_numba.py: matrix-vector linear algebra, solvers, neural-network
layers and reductions (see npbench_kernels.py for the format and the held-out split).

Written for this benchmark; never part of the product.
"""

from __future__ import annotations

import numpy as np

# ---------------------------------------------------------------- matrix-vector linear algebra


def gesummv_like(alpha, beta, a, b, x):
    return alpha * a @ x + beta * b @ x


def gesummv_like_hand(alpha, beta, a, b, x):
    n, m = a.shape
    out = np.empty(n)
    for i in range(n):
        sa = 0.0
        sb = 0.0
        for j in range(m):
            sa += a[i, j] * x[j]
            sb += b[i, j] * x[j]
        out[i] = alpha * sa + beta * sb
    return out


def bicg_like(a, p, r):
    return r @ a, a @ p


def bicg_like_hand(a, p, r):
    n, m = a.shape
    s = np.zeros(m)
    q = np.zeros(n)
    for i in range(n):
        ri = r[i]
        acc = 0.0
        for j in range(m):
            s[j] += ri * a[i, j]
            acc += a[i, j] * p[j]
        q[i] = acc
    return s, q


def atax_like(a, x):
    return (a @ x) @ a


def atax_like_hand(a, x):
    n, m = a.shape
    out = np.zeros(m)
    for i in range(n):
        t = 0.0
        for j in range(m):
            t += a[i, j] * x[j]
        for j in range(m):
            out[j] += t * a[i, j]
    return out


def gemver_like(alpha, beta, a, u1, v1, u2, v2, y, z):
    a = a + np.outer(u1, v1) + np.outer(u2, v2)
    x = beta * y @ a + z
    w = alpha * a @ x
    return a, x, w


def gemver_like_hand(alpha, beta, a, u1, v1, u2, v2, y, z):
    n = a.shape[0]
    b = np.empty_like(a)
    for i in range(n):
        for j in range(n):
            b[i, j] = a[i, j] + u1[i] * v1[j] + u2[i] * v2[j]
    x = z.copy()
    for i in range(n):
        f = beta * y[i]
        for j in range(n):
            x[j] += f * b[i, j]
    w = np.zeros(n)
    for i in range(n):
        s = 0.0
        for j in range(n):
            s += b[i, j] * x[j]
        w[i] = alpha * s
    return b, x, w


def mvt_f32(x1, x2, y1, y2, a):
    x1 = x1 + a @ y1
    x2 = x2 + a.T @ y2
    return x1, x2


def mvt_f32_hand(x1, x2, y1, y2, a):
    n = a.shape[0]
    o1 = x1.copy()
    o2 = x2.copy()
    for i in range(n):
        s = np.float32(0.0)
        for j in range(n):
            s += a[i, j] * y1[j]
            o2[j] += a[i, j] * y2[i]
        o1[i] += s
    return o1, o2


# ---------------------------------------------------------------- solvers


def seidel_rows(a, steps):
    # row-by-row relaxation: each row sees the rows above already updated
    for _ in range(steps):
        for i in range(1, a.shape[0] - 1):
            a[i, 1:-1] = 0.25 * (a[i - 1, 1:-1] + a[i + 1, 1:-1] + a[i, :-2] + a[i, 2:])
    return a


def seidel_rows_hand(a, steps):
    n, m = a.shape
    row = np.empty(m)
    for _ in range(steps):
        for i in range(1, n - 1):
            for j in range(m):
                row[j] = a[i, j]
            for j in range(1, m - 1):
                a[i, j] = 0.25 * (a[i - 1, j] + a[i + 1, j] + row[j - 1] + row[j + 1])
    return a


def back_subst(up, b):
    n = b.shape[0]
    x = np.zeros_like(b)
    for i in range(n - 1, -1, -1):
        x[i] = (b[i] - up[i, i + 1 :] @ x[i + 1 :]) / up[i, i]
    return x


def back_subst_hand(up, b):
    n = b.shape[0]
    x = np.zeros_like(b)
    for i in range(n - 1, -1, -1):
        s = b[i]
        for j in range(i + 1, n):
            s -= up[i, j] * x[j]
        x[i] = s / up[i, i]
    return x


def conj_grad(a, b, iters):
    x = np.zeros_like(b)
    r = b.copy()
    p = r.copy()
    rr = r @ r
    for _ in range(iters):
        ap = a @ p
        alpha = rr / (p @ ap)
        x = x + alpha * p
        r = r - alpha * ap
        new = r @ r
        p = r + (new / rr) * p
        rr = new
    return x


def conj_grad_hand(a, b, iters):
    n = b.shape[0]
    x = np.zeros(n)
    r = b.copy()
    p = r.copy()
    ap = np.empty(n)
    rr = 0.0
    for i in range(n):
        rr += r[i] * r[i]
    for _ in range(iters):
        pap = 0.0
        for i in range(n):
            s = 0.0
            for j in range(n):
                s += a[i, j] * p[j]
            ap[i] = s
            pap += p[i] * s
        alpha = rr / pap
        new = 0.0
        for i in range(n):
            x[i] += alpha * p[i]
            r[i] -= alpha * ap[i]
            new += r[i] * r[i]
        beta = new / rr
        for i in range(n):
            p[i] = r[i] + beta * p[i]
        rr = new
    return x


def jacobi_solve(a, b, iters):
    d = np.diag(a)
    off = a - np.diag(d)
    x = np.zeros_like(b)
    for _ in range(iters):
        x = (b - off @ x) / d
    return x


def jacobi_solve_hand(a, b, iters):
    n = b.shape[0]
    x = np.zeros(n)
    nxt = np.empty(n)
    for _ in range(iters):
        for i in range(n):
            s = b[i]
            for j in range(n):
                if j != i:
                    s -= a[i, j] * x[j]
            nxt[i] = s / a[i, i]
        x, nxt = nxt, x
    return x


def thomas(lo, di, up, rhs):
    n = di.shape[0]
    c = np.empty_like(di)
    d = np.empty_like(di)
    c[0] = up[0] / di[0]
    d[0] = rhs[0] / di[0]
    for i in range(1, n):
        m = di[i] - lo[i] * c[i - 1]
        c[i] = up[i] / m
        d[i] = (rhs[i] - lo[i] * d[i - 1]) / m
    x = np.empty_like(di)
    x[n - 1] = d[n - 1]
    for i in range(n - 2, -1, -1):
        x[i] = d[i] - c[i] * x[i + 1]
    return x


def thomas_hand(lo, di, up, rhs):
    n = di.shape[0]
    c = np.empty(n)
    d = np.empty(n)
    c[0] = up[0] / di[0]
    d[0] = rhs[0] / di[0]
    for i in range(1, n):
        m = di[i] - lo[i] * c[i - 1]
        c[i] = up[i] / m
        d[i] = (rhs[i] - lo[i] * d[i - 1]) / m
    x = np.empty(n)
    x[n - 1] = d[n - 1]
    for i in range(n - 2, -1, -1):
        x[i] = d[i] - c[i] * x[i + 1]
    return x


# ---------------------------------------------------------------- neural-network layers


def conv2d_multi(x, w, bias):
    # x (C, H, W), w (K, C, 3, 3): valid convolution, bias, relu
    k_out, c_in = w.shape[0], w.shape[1]
    h, wd = x.shape[1] - 2, x.shape[2] - 2
    out = np.zeros((k_out, h, wd))
    for k in range(k_out):
        for c in range(c_in):
            for i in range(3):
                for j in range(3):
                    out[k] += w[k, c, i, j] * x[c, i : i + h, j : j + wd]
        out[k] += bias[k]
    return np.maximum(out, 0.0)


def conv2d_multi_hand(x, w, bias):
    k_out, c_in = w.shape[0], w.shape[1]
    h, wd = x.shape[1] - 2, x.shape[2] - 2
    out = np.empty((k_out, h, wd))
    for k in range(k_out):
        for y in range(h):
            for z in range(wd):
                s = bias[k]
                for c in range(c_in):
                    for i in range(3):
                        for j in range(3):
                            s += w[k, c, i, j] * x[c, y + i, z + j]
                out[k, y, z] = max(s, 0.0)
    return out


def maxpool2d(x):
    c, h, w = x.shape
    return x.reshape(c, h // 2, 2, w // 2, 2).max(axis=(2, 4))


def maxpool2d_hand(x):
    c, h, w = x.shape
    out = np.empty((c, h // 2, w // 2))
    for k in range(c):
        for i in range(h // 2):
            for j in range(w // 2):
                out[k, i, j] = max(
                    max(x[k, 2 * i, 2 * j], x[k, 2 * i, 2 * j + 1]),
                    max(x[k, 2 * i + 1, 2 * j], x[k, 2 * i + 1, 2 * j + 1]),
                )
    return out


def relu_mlp(x, w1, b1, w2, b2):
    h = np.maximum(x @ w1 + b1, 0.0)
    z = h @ w2 + b2
    e = np.exp(z - z.max(axis=1, keepdims=True))
    return e / e.sum(axis=1, keepdims=True)


def relu_mlp_hand(x, w1, b1, w2, b2):
    n, d = x.shape
    hid, k = w2.shape
    h = np.empty(hid)
    z = np.empty((n, k))
    for i in range(n):
        for j in range(hid):
            s = b1[j]
            for q in range(d):
                s += x[i, q] * w1[q, j]
            h[j] = max(s, 0.0)
        top = -np.inf
        for c in range(k):
            s = b2[c]
            for j in range(hid):
                s += h[j] * w2[j, c]
            z[i, c] = s
            top = max(top, s)
        t = 0.0
        for c in range(k):
            z[i, c] = np.exp(z[i, c] - top)
            t += z[i, c]
        for c in range(k):
            z[i, c] /= t
    return z


def batch_norm_f32(x, gamma, beta):
    mean = x.mean(axis=0)
    var = x.var(axis=0)
    return gamma * (x - mean) / np.sqrt(var + np.float32(1e-5)) + beta


def batch_norm_f32_hand(x, gamma, beta):
    n, m = x.shape
    out = np.empty_like(x)
    for j in range(m):
        s = 0.0
        for i in range(n):
            s += x[i, j]
        mean = s / n
        v = 0.0
        for i in range(n):
            d = x[i, j] - mean
            v += d * d
        inv = 1.0 / np.sqrt(v / n + 1e-5)
        for i in range(n):
            out[i, j] = gamma[j] * (x[i, j] - mean) * inv + beta[j]
    return out


# ---------------------------------------------------------------- reductions


def axis_reduce_3d(x):
    return x.sum(axis=1) + x.max(axis=2)[:, :1] - x.min(axis=0).mean()


def axis_reduce_3d_hand(x):
    a, b, c = x.shape
    s = np.zeros((a, c))
    mx = np.empty(a)
    mn = np.empty((b, c))
    for j in range(b):
        for k in range(c):
            mn[j, k] = x[0, j, k]
    for i in range(a):
        m = x[i, 0, 0]
        for j in range(b):
            for k in range(c):
                v = x[i, j, k]
                s[i, k] += v
                if j == 0 and v > m:
                    m = v
                if v < mn[j, k]:
                    mn[j, k] = v
        mx[i] = m
    shift = mn.mean()
    out = np.empty((a, c))
    for i in range(a):
        for k in range(c):
            out[i, k] = s[i, k] + mx[i] - shift
    return out


def argminmax(x):
    return np.argmax(x, axis=1), np.argmin(x, axis=0), x.argmax()


def argminmax_hand(x):
    n, m = x.shape
    amax = np.zeros(n, dtype=np.int64)
    amin = np.zeros(m, dtype=np.int64)
    best = 0
    for i in range(n):
        for j in range(m):
            if x[i, j] > x[i, amax[i]]:
                amax[i] = j
            if x[i, j] < x[amin[j], j]:
                amin[j] = i
            if x[i, j] > x[best // m, best % m]:
                best = i * m + j
    return amax, amin, best


def int_mod_sums(x):
    # int32 data, int64 sums: per column, the residues mod 7 and the even entries
    r = x % 7
    return r.sum(axis=0, dtype=np.int64), (x * (x % 2 == 0)).sum(axis=1, dtype=np.int64)


def int_mod_sums_hand(x):
    n, m = x.shape
    cols = np.zeros(m, dtype=np.int64)
    rows = np.zeros(n, dtype=np.int64)
    for i in range(n):
        for j in range(m):
            v = x[i, j]
            cols[j] += v % 7
            if v % 2 == 0:
                rows[i] += v
    return cols, rows


def args(rng, small):
    """name -> (category, unseen, make): ``make()`` builds fresh arguments."""

    def size(big, tiny):
        return tiny if small else big

    n = size(1000, 12)
    spd = rng.standard_normal((size(400, 8), size(400, 8)))
    spd = spd @ spd.T + spd.shape[0] * np.eye(spd.shape[0])
    t = size(700, 10)
    up = np.triu(rng.uniform(0.5, 1.0, (t, t))) + t * np.eye(t)
    dd = rng.uniform(-1, 1, (size(500, 8), size(500, 8))) + 2 * size(500, 8) * np.eye(size(500, 8))
    ft = np.float32
    m = size(2000, 16)
    nt = size(20_000, 30)
    c, hw = size(3, 2), size(128, 8)
    return {
        "gesummv_like": ("linalg", False, lambda: (1.5, 1.2, rng.random((n, n)), rng.random((n, n)), rng.random(n))),
        "bicg_like": (
            "linalg",
            True,
            lambda: (rng.random((n, n + size(40, 3))), rng.random(n + size(40, 3)), rng.random(n)),
        ),
        "atax_like": ("linalg", False, lambda: (rng.random((n, n - size(20, 3))), rng.random(n - size(20, 3)))),
        "gemver_like": (
            "linalg",
            True,
            lambda: (
                (1.5, 1.2, rng.random((size(1000, 10), size(1000, 10))))
                + tuple(rng.random(size(1000, 10)) for _ in range(6))
            ),
        ),
        "mvt_f32": (
            "linalg",
            False,
            lambda: tuple(rng.random(m, dtype=ft) for _ in range(4)) + (rng.random((m, m), dtype=ft),),
        ),
        "seidel_rows": ("solver", False, lambda: (rng.random((size(200, 8), size(200, 8))), size(2, 2))),
        "back_subst": ("solver", True, lambda: (up, rng.standard_normal(up.shape[0]))),
        "conj_grad": ("solver", False, lambda: (spd, rng.standard_normal(spd.shape[0]), size(100, 4))),
        "jacobi_solve": ("solver", True, lambda: (dd, rng.standard_normal(dd.shape[0]), size(60, 4))),
        "thomas": (
            "solver",
            False,
            lambda: (rng.random(nt), rng.random(nt) + 4.0, rng.random(nt), rng.standard_normal(nt)),
        ),
        "conv2d_multi": (
            "nn",
            False,
            lambda: (
                rng.standard_normal((c, hw, hw)),
                rng.standard_normal((size(8, 2), c, 3, 3)),
                rng.random(size(8, 2)),
            ),
        ),
        "maxpool2d": ("nn", True, lambda: (rng.standard_normal((size(16, 2), size(256, 8), size(256, 8))),)),
        "relu_mlp": (
            "nn",
            False,
            lambda: (
                rng.standard_normal((size(512, 6), size(256, 8))),
                rng.standard_normal((size(256, 8), size(256, 8))) * 0.1,
                rng.standard_normal(size(256, 8)),
                rng.standard_normal((size(256, 8), size(64, 5))) * 0.1,
                rng.standard_normal(size(64, 5)),
            ),
        ),
        "batch_norm_f32": (
            "nn",
            True,
            lambda: (
                rng.standard_normal((size(4000, 20), size(256, 6)), dtype=ft),
                rng.random(size(256, 6), dtype=ft),
                rng.random(size(256, 6), dtype=ft),
            ),
        ),
        "axis_reduce_3d": (
            "reduction",
            False,
            lambda: (rng.standard_normal((size(100, 3), size(120, 4), size(150, 5))),),
        ),
        "argminmax": ("reduction", True, lambda: (rng.standard_normal((size(1600, 7), size(1200, 9))),)),
        "int_mod_sums": (
            "reduction",
            False,
            lambda: (rng.integers(-1000, 1000, (size(600, 7), size(500, 9)), dtype=np.int32),),
        ),
    }
