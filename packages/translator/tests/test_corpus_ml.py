"""Corpus: machine-learning building blocks written in numpy (activations, losses,
normalization layers, optimizer steps, pooling and convolution by slicing, attention with
reshapes, a few fixed training steps). Checked by corpus_helpers.run_case."""

from __future__ import annotations

import numpy as np
import pytest

from corpus_helpers import run_case

RNG = np.random.default_rng(505)
ACT = RNG.standard_normal((6, 10))
ACT32 = RNG.standard_normal((3, 4)).astype(np.float32)
LOGITS = RNG.standard_normal((8, 5))
TARGETS = RNG.integers(0, 5, size=8)
IMGS = RNG.standard_normal((2, 3, 8, 8))
FEATS = RNG.standard_normal((30, 4))
YBIN = (FEATS @ np.array([1.0, -1.0, 0.5, 0.0]) > 0).astype(np.float64)
SEQ = RNG.standard_normal((2, 6, 8))


def leaky_relu(x, slope=0.01):
    return np.where(x > 0, x, slope * x)


def elu(x, alpha=1.0):
    return np.where(x > 0, x, alpha * (np.exp(np.minimum(x, 0)) - 1))


def softplus(x):
    return np.logaddexp(0.0, x)


def swish(x, beta=1.0):
    return x / (1 + np.exp(-beta * x))


def cross_entropy(logits, labels):
    shifted = logits - logits.max(axis=1, keepdims=True)
    logp = shifted - np.log(np.exp(shifted).sum(axis=1, keepdims=True))
    picked = np.take_along_axis(logp, labels[:, None], axis=1)
    return -picked.mean()


def one_hot(labels, classes):
    return np.eye(classes)[labels]


def batch_norm(x, gamma, beta, eps=1e-5):
    mu = x.mean(axis=0)
    var = x.var(axis=0)
    xhat = (x - mu) / np.sqrt(var + eps)
    return gamma * xhat + beta, mu, var


def rms_norm(x, weight, eps=1e-6):
    return x / np.sqrt((x * x).mean(axis=-1, keepdims=True) + eps) * weight


def inverted_dropout(x, keep_mask, p=0.5):
    return x * keep_mask / (1 - p)


def max_pool_2x2(x):
    n, c, h, w = x.shape
    return x.reshape(n, c, h // 2, 2, w // 2, 2).max(axis=(3, 5))


def avg_pool_2x2(x):
    return 0.25 * (x[..., ::2, ::2] + x[..., 1::2, ::2] + x[..., ::2, 1::2] + x[..., 1::2, 1::2])


def conv2d_valid(x, w):
    kh, kw = w.shape[-2:]
    oh, ow = x.shape[-2] - kh + 1, x.shape[-1] - kw + 1
    out = np.zeros(x.shape[:-3] + (w.shape[0], oh, ow), dtype=x.dtype)
    for i in range(kh):
        for j in range(kw):
            patch = x[..., i : i + oh, j : j + ow]
            out += np.einsum("nchw,oc->nohw", patch, w[:, :, i, j])
    return out


def adam_step(param, grad, m, v, t, lr=1e-3, b1=0.9, b2=0.999, eps=1e-8):
    m = b1 * m + (1 - b1) * grad
    v = b2 * v + (1 - b2) * grad * grad
    mhat = m / (1 - b1**t)
    vhat = v / (1 - b2**t)
    return param - lr * mhat / (np.sqrt(vhat) + eps), m, v


def sgd_momentum(params, grads, velocity, lr=0.1, mu=0.9):
    new_v = [mu * v - lr * g for v, g in zip(velocity, grads)]
    new_p = [p + v for p, v in zip(params, new_v)]
    return new_p, new_v


def causal_mask_scores(q, k):
    t = q.shape[-2]
    scores = q @ np.swapaxes(k, -1, -2)
    mask = np.triu(np.ones((t, t), dtype=bool), 1)
    return np.where(mask, -np.inf, scores)


def linear(x, w, b=None):
    y = x @ w
    if b is not None:
        y = y + b
    return y


def mse_and_grad(w, x, y):
    resid = x @ w - y
    return (resid**2).mean(), 2 * x.T @ resid / len(y)


def accuracy(logits, labels):
    return (np.argmax(logits, axis=1) == labels).mean()


def knn_predict(train_x, train_y, test_x, k=3, classes=2):
    d = ((test_x[:, None, :] - train_x[None, :, :]) ** 2).sum(-1)
    nearest = np.argsort(d, axis=1)[:, :k]
    votes = (train_y[nearest][..., None] == np.arange(classes)).sum(axis=1)
    return np.argmax(votes, axis=1)


def logistic_train(x, y, lr=0.5, steps=15):
    w = np.zeros(x.shape[1])
    b = 0.0
    for _ in range(steps):
        p = 1 / (1 + np.exp(-(x @ w + b)))
        w = w - lr * x.T @ (p - y) / len(y)
        b = b - lr * (p - y).mean()
    return w, b


def label_smoothing_loss(logits, labels, smoothing=0.1):
    k = logits.shape[-1]
    target = np.full(logits.shape, smoothing / (k - 1))
    np.put_along_axis(target, labels[:, None], 1 - smoothing, axis=1)
    logp = logits - np.log(np.exp(logits).sum(axis=-1, keepdims=True))
    return -(target * logp).sum(axis=-1).mean()


def gru_cell(x, h, wz, wr, wh):
    xh = np.concatenate([x, h], axis=-1)
    z = 1 / (1 + np.exp(-(xh @ wz)))
    r = 1 / (1 + np.exp(-(xh @ wr)))
    cand = np.tanh(np.concatenate([x, r * h], axis=-1) @ wh)
    return (1 - z) * h + z * cand


def positional_encoding(seq_len, dim):
    pos = np.arange(seq_len)[:, None]
    i = np.arange(dim // 2)[None, :]
    angles = pos / 10000 ** (2 * i / dim)
    enc = np.zeros((seq_len, dim))
    enc[:, 0::2] = np.sin(angles)
    enc[:, 1::2] = np.cos(angles)
    return enc


# ---- expected to break


def train_with_early_stop(x, y, lr=0.5, steps=20, tol=0.3):
    w = np.zeros(x.shape[1])
    for _ in range(steps):
        p = 1 / (1 + np.exp(-(x @ w)))
        loss = -np.mean(y * np.log(p + 1e-9) + (1 - y) * np.log(1 - p + 1e-9))
        if loss < tol:  # a data-dependent exit with more body after it: a loop node that exits
            break
        w = w - lr * x.T @ (p - y) / len(y)
    return w


def log_metrics(logits, labels):
    acc = accuracy(logits, labels)
    loss = cross_entropy(logits, labels)
    print("loss", loss, "accuracy", acc)  # FH005
    return loss, acc


WQ = RNG.standard_normal((8, 8)) * 0.3
GX, GH = RNG.standard_normal((4, 3)), RNG.standard_normal((4, 5))
WZ, WR, WH = (RNG.standard_normal((8, 5)) * 0.5 for _ in range(3))
CONV_W = RNG.standard_normal((4, 3, 3, 3)) * 0.2

CORPUS = [
    (leaky_relu, [(ACT,), (ACT32, 0.2)], 1, []),
    (elu, [(ACT,), (ACT32, 0.5)], 1, []),
    (softplus, [(ACT,), (ACT32,)], 1, []),
    (swish, [(ACT,), (ACT32, 2.0)], 1, []),
    (cross_entropy, [(LOGITS, TARGETS), (LOGITS[:3, :3], TARGETS[:3] % 3)], 1, []),
    (one_hot, [(TARGETS, 5), (TARGETS[:4] % 3, 3)], 1, []),
    (
        batch_norm,
        [(ACT, np.ones(10), np.zeros(10)), (ACT32, np.full(4, 2.0, np.float32), np.ones(4, np.float32))],
        1,
        [],
    ),
    (rms_norm, [(ACT, np.linspace(0.5, 1.5, 10)), (ACT32, np.ones(4, np.float32))], 1, []),
    (inverted_dropout, [(ACT, RNG.uniform(size=(6, 10)) < 0.5), (ACT32, np.ones((3, 4), bool), 0.2)], 1, []),
    (max_pool_2x2, [(IMGS,), (IMGS[:1, :2, :4, :6],)], 1, []),
    (avg_pool_2x2, [(IMGS,), (IMGS[0, :, :6, :4],)], 1, []),
    (conv2d_valid, [(IMGS, CONV_W), (IMGS[:1, :, :5, :5], CONV_W[:2, :, :2, :2])], 1, []),
    (
        adam_step,
        [(ACT, ACT * 0.1, np.zeros_like(ACT), np.zeros_like(ACT), 1), (ACT32, ACT32, ACT32 * 0, ACT32 * 0, 3, 0.01)],
        1,
        [],
    ),
    (
        sgd_momentum,
        [([ACT, LOGITS], [ACT * 0.1, LOGITS * 0.2], [ACT * 0, LOGITS * 0]), ([ACT32], [ACT32], [ACT32 * 0], 0.01)],
        1,
        [],
    ),
    (causal_mask_scores, [(SEQ, SEQ), (SEQ[:, :3], SEQ[:, :3])], 1, []),
    (linear, [(ACT, WQ[:, :3].repeat(2, axis=0)[:10], np.ones(3)), (ACT32, np.ones((4, 2), np.float32))], 1, []),
    (mse_and_grad, [(np.ones(4), FEATS, FEATS[:, 0]), (np.ones(2), FEATS[:5, :2], FEATS[:5, 3])], 1, []),
    (accuracy, [(LOGITS, TARGETS), (LOGITS[:4, :2], TARGETS[:4] % 2)], 1, []),
    (
        knn_predict,
        [(FEATS, YBIN.astype(np.int64), FEATS[:5] + 0.1), (FEATS[:10], YBIN[:10].astype(np.int64), FEATS[:2], 1)],
        1,
        [],
    ),
    (logistic_train, [(FEATS, YBIN), (FEATS[:12, :2], YBIN[:12], 0.1, 5)], 1, []),
    (gru_cell, [(GX, GH, WZ, WR, WH), (GX[:2], GH[:2], WZ, WR, WH)], 1, []),
    (positional_encoding, [(6, 8), (4, 4)], 1, []),
    (train_with_early_stop, [(FEATS, YBIN), (FEATS[:10, :2], YBIN[:10], 0.1, 5)], 1, []),
    (log_metrics, [(LOGITS, TARGETS), (LOGITS[:3, :3], TARGETS[:3] % 3)], 1, ["FH005"]),
]


@pytest.mark.parametrize("fn,calls,graphs,breaks", CORPUS, ids=[c[0].__name__ for c in CORPUS])
def test_corpus_ml(fn, calls, graphs, breaks, capsys):
    run_case(fn, calls, graphs, breaks)
    capsys.readouterr()
