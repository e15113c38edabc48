"""Loop kernels shared by the tests and the benchmarks (``benchmarks/``): triangular
nests (Cholesky, LU, Gram-Schmidt), scalar accumulators in nests, while-loop solvers, and a
helper whose loop branches on its indices (called from a Python loop); the Jacobi stencil
of the numpy corpus."""

from __future__ import annotations

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


def cholesky_sums(a):
    # the textbook form: a Python-float accumulator per entry
    n = a.shape[0]
    low = np.zeros_like(a)
    for j in range(n):
        s = 0.0
        for k in range(j):
            s += low[j, k] * low[j, k]
        low[j, j] = np.sqrt(a[j, j] - s)
        for i in range(j + 1, n):
            s = 0.0
            for k in range(j):
                s += low[i, k] * low[j, k]
            low[i, j] = (a[i, j] - s) / low[j, j]
    return low


def lu_sums(a):
    # Doolittle with scalar sums; ``s = 0`` starts as a Python int
    n = a.shape[0]
    lower = np.eye(n)
    upper = np.zeros_like(a)
    for i in range(n):
        for k in range(i, n):
            s = 0
            for j in range(i):
                s += lower[i, j] * upper[j, k]
            upper[i, k] = a[i, k] - s
        for k in range(i + 1, n):
            s = 0
            for j in range(i):
                s += lower[k, j] * upper[j, i]
            lower[k, i] = (a[k, i] - s) / upper[i, i]
    return lower, upper


def jacobi_until(a, b, tol=1e-10):
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


def fill_row(out, a, i, n):
    for j in range(n):
        if j < i:
            out[i, j] = a[i, j] - a[j, i]
        elif j == i:
            out[i, j] = a[i, i]


def jacobi(u, steps):
    for _ in range(steps):
        v = u.copy()
        v[1:-1, 1:-1] = 0.25 * (u[:-2, 1:-1] + u[2:, 1:-1] + u[1:-1, :-2] + u[1:-1, 2:])
        u = v
    return u
