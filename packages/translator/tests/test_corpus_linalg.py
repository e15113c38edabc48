"""Corpus: small linear-algebra kernels (iterative solvers with a fixed number of steps,
orthogonalization, einsum contractions, factorizations from numpy.linalg). Checked by
corpus_helpers.run_case."""

from __future__ import annotations

import numpy as np
import pytest

from corpus_helpers import run_case

RNG = np.random.default_rng(202)
M = RNG.standard_normal((6, 6))
SPD = M @ M.T + 6 * np.eye(6)
SPD4 = SPD[:4, :4].copy()
B = RNG.standard_normal(6)
TALL = RNG.standard_normal((10, 3))
BATCH = RNG.standard_normal((5, 3, 3))
VECS = RNG.standard_normal((5, 3))
MARKOV = RNG.uniform(size=(4, 4))
MARKOV = MARKOV / MARKOV.sum(axis=1, keepdims=True)


def gram_schmidt(a):
    basis = []
    for j in range(a.shape[1]):
        v = a[:, j]
        for q in basis:
            v = v - (q @ v) * q
        basis.append(v / np.linalg.norm(v))
    return np.stack(basis, axis=1)


def conjugate_gradient(a, b, iters=6):
    x = np.zeros_like(b)
    r = b - a @ x
    p = r.copy()
    rs = r @ r
    for _ in range(iters):
        ap = a @ p
        alpha = rs / (p @ ap)
        x = x + alpha * p
        r = r - alpha * ap
        rs_new = r @ r
        p = r + (rs_new / rs) * p
        rs = rs_new
    return x


def jacobi_solve(a, b, iters=25):
    d = np.diag(a)
    off = a - np.diagflat(d)
    x = np.zeros_like(b)
    for _ in range(iters):
        x = (b - off @ x) / d
    return x


def householder(x):
    v = x.copy()
    v[0] = v[0] + np.sign(x[0]) * np.linalg.norm(x)
    v = v / np.linalg.norm(v)
    return np.eye(len(x)) - 2.0 * np.outer(v, v)


def rayleigh_quotient(a, v):
    return (v @ a @ v) / (v @ v)


def expm_taylor(a, terms=10):
    result = np.eye(a.shape[0], dtype=a.dtype)
    term = np.eye(a.shape[0], dtype=a.dtype)
    for k in range(1, terms):
        term = term @ a / k
        result = result + term
    return result


def ridge(x, y, lam=0.1):
    n_features = x.shape[1]
    return np.linalg.solve(x.T @ x + lam * np.eye(n_features), x.T @ y)


def batched_matvec(mats, vecs):
    return np.einsum("bij,bj->bi", mats, vecs)


def bilinear(u, a, v):
    return np.einsum("i,ij,j->", u, a, v)


def trace_of_product(a, b):
    return np.einsum("ij,ji->", a, b), np.trace(a @ b)


def kron_apply(a, b, x):
    return np.kron(a, b) @ x


def inverse_residual(a):
    return np.abs(np.linalg.inv(a) @ a - np.eye(a.shape[0])).max()


def cholesky_solve(a, b):
    low = np.linalg.cholesky(a)
    y = np.linalg.solve(low, b)
    return np.linalg.solve(low.T, y)


def projection_matrix(x):
    return x @ np.linalg.pinv(x)


def markov_stationary(p, steps=16):
    return np.linalg.matrix_power(p, steps)[0]


def triangular_split(a):
    return np.tril(a, -1), np.diag(np.diag(a)), np.triu(a, 1)


def rank_one_update(a, u, v, alpha=0.5):
    return a + alpha * np.outer(u, v)


def frobenius_normalize(a):
    return a / np.linalg.norm(a)


def spectral_bounds(a):
    w = np.linalg.eigvalsh(a)
    return w[0], w[-1], w[-1] / w[0]


def batched_gram(x):
    return np.matmul(x, np.swapaxes(x, -1, -2))


def tensordot_contract(a, b):
    return np.tensordot(a, b, axes=([1, 2], [0, 1]))


def cross_products(u, v):
    w = np.cross(u, v)
    return w, np.einsum("ij,ij->i", w, u)


def vdot_inner(u, v):
    return np.vdot(u, v), np.inner(u, v)


# ---- expected to break


def checked_solve(a, b):
    if abs(np.linalg.det(a)) < 1e-12:  # data-dependent: FH002
        raise np.linalg.LinAlgError("singular")
    return np.linalg.solve(a, b)


CORPUS = [
    (gram_schmidt, [(TALL,), (M[:, :4],)], 1, []),
    (conjugate_gradient, [(SPD, B), (SPD4, B[:4], 3)], 1, []),
    (jacobi_solve, [(SPD, B), (SPD4, B[:4], 10)], 1, []),
    (householder, [(B,), (B[:3],)], 1, []),
    (rayleigh_quotient, [(SPD, B), (SPD4, B[:4])], 1, []),
    (expm_taylor, [(M * 0.1,), (SPD4 * 0.01, 6)], 1, []),
    (ridge, [(TALL, TALL @ np.array([1.0, -2.0, 0.5])), (M, B, 1.0)], 1, []),
    (batched_matvec, [(BATCH, VECS), (BATCH[:2, :2, :2], VECS[:2, :2])], 1, []),
    (bilinear, [(B, SPD, B), (B[:4], SPD4, B[:4])], 1, []),
    (trace_of_product, [(M, SPD), (SPD4, SPD4)], 1, []),
    (kron_apply, [(M[:2, :2], M[2:5, 2:5], B), (SPD4[:2, :2], SPD4[:2, :2], B[:4])], 1, []),
    (inverse_residual, [(SPD,), (SPD4,)], 1, []),
    (cholesky_solve, [(SPD, B), (SPD4, B[:4])], 1, []),
    (projection_matrix, [(TALL,), (M[:, :2],)], 1, []),
    (markov_stationary, [(MARKOV,), (MARKOV[:2, :2] / MARKOV[:2, :2].sum(axis=1, keepdims=True), 4)], 1, []),
    (triangular_split, [(M,), (SPD4,)], 1, []),
    (rank_one_update, [(M, B, B), (SPD4, B[:4], B[2:], 2.0)], 1, []),
    (frobenius_normalize, [(M,), (BATCH,)], 1, []),
    (spectral_bounds, [(SPD,), (SPD4,)], 1, []),
    (batched_gram, [(BATCH,), (TALL,)], 1, []),
    (tensordot_contract, [(BATCH, M[:3, :3]), (np.ones((2, 2, 3)), np.ones((2, 3)))], 1, []),
    (cross_products, [(VECS, VECS[::-1].copy()), (TALL, TALL * 2)], 1, []),
    (vdot_inner, [(B, B), (B[:3], B[3:])], 1, []),
    (checked_solve, [(SPD, B), (SPD4, B[:4])], 2, ["FH002"]),
]


@pytest.mark.parametrize("fn,calls,graphs,breaks", CORPUS, ids=[c[0].__name__ for c in CORPUS])
def test_corpus_linalg(fn, calls, graphs, breaks, capsys):
    run_case(fn, calls, graphs, breaks)
    capsys.readouterr()
