"""Corpus: descriptive statistics, as data-analysis code writes it (reductions with axis and
keepdims, weighted moments, rolling windows by cumulative sums, quantiles, empirical
distributions). Checked by corpus_helpers.run_case."""

from __future__ import annotations

import math

import numpy as np
import pytest

from corpus_helpers import run_case

RNG = np.random.default_rng(101)
TABLE = RNG.normal(3.0, 2.0, size=(24, 4))
TABLE32 = RNG.normal(size=(10, 3)).astype(np.float32)
SERIES = RNG.normal(size=48).cumsum()
SHORT = RNG.normal(size=15)
WEIGHTS = RNG.uniform(0.5, 2.0, size=24)
LABELS = RNG.integers(0, 3, size=24)


def zscore_rows(x, ddof=0):
    mu = x.mean(axis=1, keepdims=True)
    sd = x.std(axis=1, ddof=ddof, keepdims=True)
    return (x - mu) / sd


def weighted_moments(x, w):
    mean = np.average(x, axis=0, weights=w)
    var = np.average((x - mean) ** 2, axis=0, weights=w)
    return mean, np.sqrt(var)


def rolling_std(x, window):
    c1 = np.cumsum(np.concatenate(([0.0], x)))
    c2 = np.cumsum(np.concatenate(([0.0], x * x)))
    s1 = c1[window:] - c1[:-window]
    s2 = c2[window:] - c2[:-window]
    var = (s2 - s1 * s1 / window) / (window - 1)
    return np.sqrt(np.maximum(var, 0.0))


def ewma(x, alpha=0.3):
    out = np.empty_like(x)
    out[0] = x[0]
    for i in range(1, len(x)):
        out[i] = alpha * x[i] + (1 - alpha) * out[i - 1]
    return out


def pearson(x, y):
    xc = x - x.mean()
    yc = y - y.mean()
    return (xc * yc).sum() / np.sqrt((xc**2).sum() * (yc**2).sum())


def correlation_matrix(x):
    return np.corrcoef(x, rowvar=False)


def shrunk_covariance(x, shrinkage=0.1):
    cov = np.cov(x, rowvar=False)
    target = np.trace(cov) / cov.shape[0] * np.eye(cov.shape[0])
    return (1 - shrinkage) * cov + shrinkage * target


def quantile_bands(x):
    lo, mid, hi = np.percentile(x, [5, 50, 95], axis=0)
    return np.stack([lo, mid, hi]), hi - lo


def median_abs_deviation(x, scale=1.4826):
    med = np.median(x, axis=0)
    return scale * np.median(np.abs(x - med), axis=0)


def histogram_counts(x, bins=6):
    edges = np.linspace(x.min(), x.max(), bins + 1)
    inside = (x[:, None] >= edges[None, :-1]) & (x[:, None] < edges[None, 1:])
    counts = inside.sum(axis=0)
    counts[-1] += np.sum(x == edges[-1])
    return edges, counts


def bootstrap_means(x, idx):
    return x[idx].mean(axis=1)


def skew_kurtosis(x):
    m = x.mean(axis=0)
    d = x - m
    m2 = (d**2).mean(axis=0)
    m3 = (d**3).mean(axis=0)
    m4 = (d**4).mean(axis=0)
    return m3 / m2**1.5, m4 / m2**2 - 3.0


def moving_max(x, width=4):
    n = len(x) - width + 1
    windows = [x[i : i + n] for i in range(width)]
    return np.max(np.stack(windows), axis=0)


def running_mean(x):
    return np.cumsum(x, axis=0) / np.arange(1, x.shape[0] + 1)[:, None]


def ecdf(sample, grid):
    return (sample[:, None] <= grid[None, :]).mean(axis=0)


def winsorize(x, lower=5, upper=95):
    lo, hi = np.percentile(x, [lower, upper])
    return np.clip(x, lo, hi)


def group_means(x, labels, groups=3):
    onehot = labels[:, None] == np.arange(groups)[None, :]
    sums = onehot.T.astype(x.dtype) @ x
    return sums / onehot.sum(axis=0)[:, None]


def standard_error(x):
    return x.std(axis=0, ddof=1) / math.sqrt(len(x))


def summary(x):
    return {"mean": x.mean(axis=0), "std": x.std(axis=0), "min": x.min(axis=0), "max": x.max(axis=0), "n": x.shape[0]}


def nan_robust_mean(x):
    y = np.where(np.abs(x) > 3, np.nan, x)
    return np.nanmean(y, axis=0), np.isnan(y).sum(axis=0)


def autocovariance(x, lags=5):
    xc = x - x.mean()
    n = len(x)
    return np.array([np.dot(xc[: n - k], xc[k:]) / n for k in range(lags)])


# ---- expected to break


def rescale_if_wide(x):
    spread = x.max() - x.min()
    if spread > 10:  # data-dependent: FH002
        x = x / spread
    return x - x.mean()


def outlier_report(x, k=2.0):
    z = np.abs(zscore_rows(x.T)).T
    n = int((z > k).sum())  # array value -> int: FH012
    print("outliers:", n)  # FH005
    return np.where(z > k, 0.0, x)


def trimmed_values(x, k=1.0):
    keep = np.abs(x - x.mean()) <= k * x.std()
    return x[keep].mean()  # boolean mask: captured (a symbolic dimension)


BOOT = RNG.integers(0, 24, size=(5, 24))


def coefficient_of_variation(x):
    mu = x.mean(axis=0)
    sd = x.std(axis=0)
    with np.errstate(divide="ignore", invalid="ignore"):  # a column of zeros has no ratio
        cv = sd / np.abs(mu)
    return np.where(np.isfinite(cv), cv, np.nan)


def log_fold_change(a, b, pseudo=0.0):
    with np.errstate(divide="ignore"):
        lfc = np.log2(a + pseudo) - np.log2(b + pseudo)
    return np.clip(lfc, -10.0, 10.0)


CORPUS = [
    (zscore_rows, [(TABLE,), (TABLE32,), (TABLE[:5, :2], 1)], 1, []),
    (weighted_moments, [(TABLE, WEIGHTS), (TABLE[:10], WEIGHTS[:10])], 1, []),
    (rolling_std, [(SERIES, 5), (SHORT, 3)], 1, []),
    (ewma, [(SHORT,), (SHORT[:7], 0.5)], 1, []),
    (pearson, [(SERIES, SERIES**2), (SHORT, SHORT[::-1].copy())], 1, []),
    (correlation_matrix, [(TABLE,), (TABLE32,)], 1, []),
    (shrunk_covariance, [(TABLE,), (TABLE32, 0.5)], 1, []),
    (quantile_bands, [(TABLE,), (TABLE32,)], 1, []),
    (median_abs_deviation, [(TABLE,), (SHORT,)], 1, []),
    (histogram_counts, [(SERIES,), (SHORT, 4)], 1, []),
    (bootstrap_means, [(SERIES[:24], BOOT), (SHORT, BOOT[:2, :10] % 15)], 1, []),
    (skew_kurtosis, [(TABLE,), (TABLE32,)], 1, []),
    (moving_max, [(SERIES,), (SHORT, 3)], 1, []),
    (running_mean, [(TABLE,), (TABLE32,)], 1, []),
    (ecdf, [(SERIES, np.linspace(-3, 3, 7)), (SHORT, np.linspace(-1, 1, 4))], 1, []),
    (winsorize, [(SERIES,), (TABLE, 10, 90)], 1, []),
    (group_means, [(TABLE, LABELS), (TABLE32, LABELS[:10] % 2, 2)], 1, []),
    (standard_error, [(TABLE,), (TABLE32,)], 1, []),
    (summary, [(TABLE,), (TABLE32,)], 1, []),
    (nan_robust_mean, [(TABLE - 3.0,), (TABLE32 * 2,)], 1, []),
    (autocovariance, [(SERIES,), (SHORT, 3)], 1, []),
    (rescale_if_wide, [(SERIES,), (SHORT,)], 2, ["FH002"]),
    (outlier_report, [(TABLE,), (TABLE32, 1.0)], 2, ["FH012", "FH005"]),
    (trimmed_values, [(SERIES,), (TABLE32,)], 1, []),
    (coefficient_of_variation, [(np.hstack([TABLE, np.zeros((24, 1))]),), (TABLE32,)], 1, []),
    (
        log_fold_change,
        [(np.abs(SHORT) * (SHORT > 0), np.abs(SHORT[::-1])), (np.abs(SERIES), np.abs(SERIES) + 1, 0.5)],
        1,
        [],
    ),
]


@pytest.mark.parametrize("fn,calls,graphs,breaks", CORPUS, ids=[c[0].__name__ for c in CORPUS])
def test_corpus_stats(fn, calls, graphs, breaks, capsys):
    run_case(fn, calls, graphs, breaks)
    capsys.readouterr()
