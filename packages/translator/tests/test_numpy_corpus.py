"""A first corpus of numpy functions in the style of real scientific code. Each is checked
against the plain function (exact agreement on first call, cache hit and a recompilation
with other shapes/dtypes) and for its expected graph count and graph breaks via explain()."""

from __future__ import annotations

import copy
import math

import numpy as np
import pytest

import framehook.translator as ft
from loop_kernels import jacobi
from symbolic_helpers import assert_same, check_agrees

RNG = np.random.default_rng(0)
X = RNG.standard_normal((8, 5))
Y = RNG.standard_normal((8, 5))
P = RNG.standard_normal((16, 2))
GRID = RNG.standard_normal((12, 12))
SIG = RNG.standard_normal(64)
EPS = 1e-5


pytestmark = pytest.mark.usefixtures("fresh_translator")


def softmax(x, axis=-1):
    shifted = x - np.max(x, axis=axis, keepdims=True)
    e = np.exp(shifted)
    return e / np.sum(e, axis=axis, keepdims=True)


def log_softmax(x):
    m = x.max(axis=-1, keepdims=True)
    return x - m - np.log(np.exp(x - m).sum(axis=-1, keepdims=True))


def layer_norm(x, gamma=1.0, beta=0.0):
    mu = x.mean(axis=-1, keepdims=True)
    var = ((x - mu) ** 2).mean(axis=-1, keepdims=True)
    return gamma * (x - mu) / np.sqrt(var + EPS) + beta


def standardize(x):
    return (x - x.mean(axis=0)) / (x.std(axis=0) + EPS)


def kmeans_step(points, centers):
    d = ((points[:, None, :] - centers[None, :, :]) ** 2).sum(axis=-1)
    labels = np.argmin(d, axis=1)
    onehot = (labels[:, None] == np.arange(centers.shape[0])[None, :]).astype(points.dtype)
    counts = onehot.sum(axis=0)
    sums = onehot.T @ points
    return sums / np.maximum(counts, 1)[:, None], labels


def finite_diff_1d(u, dx):
    du = np.zeros_like(u)
    du[1:-1] = (u[2:] - u[:-2]) / (2 * dx)
    du[0] = (u[1] - u[0]) / dx
    du[-1] = (u[-1] - u[-2]) / dx
    return du


def laplacian_2d(u):
    return u[:-2, 1:-1] + u[2:, 1:-1] + u[1:-1, :-2] + u[1:-1, 2:] - 4 * u[1:-1, 1:-1]


def heat_explicit(u, alpha, dt, steps=5):
    for _ in range(steps):
        u = u + alpha * dt * laplacian_pad(u)
    return u


def laplacian_pad(u):
    p = np.pad(u, 1, mode="edge")
    return p[:-2, 1:-1] + p[2:, 1:-1] + p[1:-1, :-2] + p[1:-1, 2:] - 4 * u


def black_scholes_call(s, k, t, r, sigma):
    d1 = (np.log(s / k) + (r + 0.5 * sigma**2) * t) / (sigma * np.sqrt(t))
    d2 = d1 - sigma * np.sqrt(t)
    cdf1 = 0.5 * (1 + np.tanh(0.7978845608 * (d1 + 0.044715 * d1**3)))
    cdf2 = 0.5 * (1 + np.tanh(0.7978845608 * (d2 + 0.044715 * d2**3)))
    return s * cdf1 - k * np.exp(-r * t) * cdf2


def nbody_step(pos, vel, mass, dt=0.01):
    diff = pos[None, :, :] - pos[:, None, :]
    dist2 = (diff**2).sum(-1) + 1e-3
    inv = dist2**-1.5
    acc = (diff * (inv * mass[None, :])[:, :, None]).sum(axis=1)
    vel = vel + dt * acc
    return pos + dt * vel, vel


def rolling_mean(x, w):
    c = np.cumsum(np.concatenate([np.zeros(1), x]))
    return (c[w:] - c[:-w]) / w


def conv1d_valid(x, k):
    n = len(x) - len(k) + 1
    out = np.zeros(n)
    for i in range(len(k)):
        out = out + k[i] * x[i : i + n]
    return out


def mandelbrot_step(z, c, steps=6):
    for _ in range(steps):
        z = np.where(np.abs(z) <= 2, z * z + c, z)
    return np.abs(z) <= 2


def gelu(x):
    return 0.5 * x * (1 + np.tanh(math.sqrt(2 / math.pi) * (x + 0.044715 * x**3)))


def mlp(x, w1, b1, w2, b2):
    h = np.maximum(x @ w1 + b1, 0)
    return softmax(h @ w2 + b2)


def attention(q, k, v):
    scores = q @ k.T / np.sqrt(q.shape[-1])
    return softmax(scores) @ v


def cosine_similarity(a, b):
    na = np.linalg.norm(a, axis=1, keepdims=True)
    nb = np.linalg.norm(b, axis=1, keepdims=True)
    return (a / na) @ (b / nb).T


def pairwise_distances(a):
    sq = np.sum(a * a, axis=1)
    d2 = sq[:, None] + sq[None, :] - 2 * a @ a.T
    return np.sqrt(np.maximum(d2, 0))


def linear_regression(x, y):
    xb = np.hstack([x, np.ones((x.shape[0], 1))])
    return np.linalg.solve(xb.T @ xb + 1e-6 * np.eye(xb.shape[1]), xb.T @ y)


def power_iteration(a, iters=10):
    v = np.ones(a.shape[0]) / math.sqrt(a.shape[0])
    for _ in range(iters):
        w = a @ v
        v = w / np.linalg.norm(w)
    return v @ a @ v, v


def logistic_loss_grad(w, x, y):
    z = x @ w
    p = 1 / (1 + np.exp(-z))
    loss = -np.mean(y * np.log(p + 1e-12) + (1 - y) * np.log(1 - p + 1e-12))
    return loss, x.T @ (p - y) / len(y)


def normalize_rows(x):
    return x / np.linalg.norm(x, axis=1)[:, None]


def minmax_scale(x):
    lo = x.min(axis=0)
    hi = x.max(axis=0)
    return (x - lo) / (hi - lo)


def histogram_edges(x, bins=4):
    lo, hi = x.min(), x.max()
    return lo + (hi - lo) * np.arange(bins + 1) / bins


def trapezoid(y, dx=1.0):
    return (y[1:] + y[:-1]).sum() * dx / 2


def smooth_abs(x, eps=1e-3):
    return np.sqrt(x * x + eps)


def polynomial(x, coeffs=(1.0, -2.0, 0.5, 3.0)):
    acc = np.zeros_like(x)
    for c in reversed(coeffs):
        acc = acc * x + c
    return acc


def rk4_step(y, t, dt):
    def f(t, y):
        return -0.5 * y + np.sin(t)

    k1 = f(t, y)
    k2 = f(t + dt / 2, y + dt / 2 * k1)
    k3 = f(t + dt / 2, y + dt / 2 * k2)
    k4 = f(t + dt, y + dt * k3)
    return y + dt / 6 * (k1 + 2 * k2 + 2 * k3 + k4)


def covariance(x):
    xc = x - x.mean(axis=0)
    return xc.T @ xc / (x.shape[0] - 1)


def grid_coords(n):
    yy, xx = np.meshgrid(np.arange(n), np.arange(n), indexing="ij")
    return np.stack([yy, xx], axis=-1).reshape(-1, 2).astype(np.float64)


def clip_grad(g, max_norm):
    norm = np.sqrt(np.sum(g * g))
    return g * np.minimum(1.0, max_norm / (norm + 1e-6))


# ---- expected to break (graph count: callees translated on their own)


def adaptive_step(u, tol):
    err = np.abs(laplacian_2d(u)).max()
    if err > tol:  # data-dependent decision
        return u * 0.5
    return u


def report(x):
    s = softmax(x)
    print("max prob", float(s.max()))
    return s


def masked_update(z, c):
    mask = np.abs(z) <= 2
    z[mask] = z[mask] ** 2 + c[mask]
    return z


C = (RNG.standard_normal((6, 6)) + 1j * RNG.standard_normal((6, 6))) * 0.5
Z0 = np.zeros((6, 6), dtype=complex)
W1, B1, W2, B2 = (
    RNG.standard_normal((5, 7)),
    RNG.standard_normal(7),
    RNG.standard_normal((7, 3)),
    RNG.standard_normal(3),
)

CORPUS = [
    # fn, calls (first, then recompilation inputs), graphs, break identifiers
    (softmax, [(X,), (X.astype(np.float32),), (Y[:3],)], 1, []),
    (log_softmax, [(X,), (Y,)], 1, []),
    (layer_norm, [(X,), (X, 2.0, 0.5), (Y.astype(np.float32),)], 1, []),
    (standardize, [(X,), (P,)], 1, []),
    (kmeans_step, [(P, P[:3].copy()), (P * 2, P[:4].copy())], 1, []),
    (finite_diff_1d, [(SIG, 0.1), (SIG[:10], 0.5)], 1, []),
    (laplacian_2d, [(GRID,), (GRID[:6, :7],)], 1, []),
    (jacobi, [(GRID, 5), (GRID[:8, :8], 3)], 1, []),
    (heat_explicit, [(GRID, 0.1, 0.2), (GRID[:5, :5], 0.2, 0.1, 3)], 1, []),
    (
        black_scholes_call,
        [(np.linspace(50, 150, 9), 100.0, 1.0, 0.05, 0.2), (np.linspace(80, 90, 4), 85.0, 0.5, 0.01, 0.3)],
        1,
        [],
    ),
    (nbody_step, [(P[:5], P[5:10], np.ones(5)), (P[:7], P[7:14], np.arange(1.0, 8.0), 0.1)], 1, []),
    (rolling_mean, [(SIG, 4), (SIG[:20], 3)], 1, []),
    (conv1d_valid, [(SIG, np.array([0.25, 0.5, 0.25])), (SIG[:9], np.ones(2))], 1, []),
    (mandelbrot_step, [(Z0, C), (Z0[:3, :3], C[:3, :3])], 1, []),
    (gelu, [(X,), (X.astype(np.float32),)], 1, []),
    (mlp, [(X, W1, B1, W2, B2), (Y[:2], W1, B1, W2, B2)], 1, []),
    (attention, [(X, Y, X), (X[:4], Y[:6], Y[:6])], 1, []),
    (cosine_similarity, [(X, Y), (P, P)], 1, []),
    (pairwise_distances, [(P,), (X,)], 1, []),
    (linear_regression, [(X, Y[:, 0]), (P, P[:, 0])], 1, []),
    (power_iteration, [(X.T @ X,), (P.T @ P, 3)], 1, []),
    (
        logistic_loss_grad,
        [(np.zeros(5), X, (Y[:, 0] > 0).astype(float)), (np.ones(2), P, (P[:, 1] > 0).astype(float))],
        1,
        [],
    ),
    (normalize_rows, [(X,), (P,)], 1, []),
    (minmax_scale, [(X,), (P,)], 1, []),
    (histogram_edges, [(SIG,), (SIG, 6)], 1, []),
    (trapezoid, [(SIG,), (SIG[:5], 0.5)], 1, []),
    (smooth_abs, [(X,), (SIG,)], 1, []),
    (polynomial, [(SIG,), (X, (1.0, 2.0))], 1, []),
    (rk4_step, [(SIG, 0.0, 0.1), (SIG[:4], 1.0, 0.05)], 1, []),
    (covariance, [(X,), (P,)], 1, []),
    (grid_coords, [(3,), (4,)], 1, []),
    (clip_grad, [(X, 1.0), (Y, 5.0)], 1, []),
    (adaptive_step, [(GRID, 0.5), (GRID, 1e9)], 2, ["FH002"]),  # graphs before and after the branch
    (report, [(X,), (Y,)], 1, ["FH012", "FH005"]),  # float() resumes, then print() does
    (masked_update, [(Z0.copy(), C), (Z0[:2, :2].copy(), C[:2, :2])], 1, []),  # the masks stay in the graph
]


@pytest.mark.parametrize("fn,calls,graphs,breaks", CORPUS, ids=[c[0].__name__ for c in CORPUS])
def test_corpus(fn, calls, graphs, breaks, capsys):
    check_agrees(fn, calls[0], calls[0], *calls[1:], calls[0])
    out = ft.explain(fn)(*copy.deepcopy(calls[0]))
    assert out.graph_count == graphs, str(out)
    assert [b.code for b in out.break_reasons] == breaks, str(out)
    assert_same(out.result, fn(*copy.deepcopy(calls[0])))
    capsys.readouterr()


def test_corpus_size():
    # this module and every test_corpus_<area>.py module: at least 150 functions in all
    from corpus_helpers import corpus_modules

    assert len(CORPUS) >= 35
    modules = corpus_modules()
    sizes = {m.__name__: len(m.CORPUS) for m in modules}
    assert len(sizes) >= 9, sizes
    assert sum(sizes.values()) >= 150, sizes
    names = [case[0].__name__ for m in modules for case in m.CORPUS]
    assert len(names) == len(set(names)), sorted(n for n in set(names) if names.count(n) > 1)
