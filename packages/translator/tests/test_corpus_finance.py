"""Corpus: quantitative-finance kernels (option pricing and greeks, binomial trees, simulated
paths, portfolio statistics, drawdowns, bond maths). Checked by corpus_helpers.run_case."""

from __future__ import annotations

import math

import numpy as np
import pytest

from corpus_helpers import run_case

RNG = np.random.default_rng(606)
SPOTS = np.linspace(60.0, 140.0, 9)
RETURNS = RNG.normal(0.0005, 0.01, size=(40, 4))
PRICES = 100 * np.exp(np.cumsum(RETURNS, axis=0))
SHOCKS = RNG.standard_normal((16, 12))
WEIGHTS = np.array([0.4, 0.3, 0.2, 0.1])
CASHFLOWS = np.array([5.0, 5.0, 5.0, 105.0])
TIMES = np.array([1.0, 2.0, 3.0, 4.0])


def norm_cdf(x):
    # Abramowitz-Stegun 26.2.17, as vectorized code writes it
    t = 1.0 / (1.0 + 0.2316419 * np.abs(x))
    poly = t * (0.319381530 + t * (-0.356563782 + t * (1.781477937 + t * (-1.821255978 + t * 1.330274429))))
    tail = np.exp(-0.5 * x * x) / math.sqrt(2 * math.pi) * poly
    return np.where(x >= 0, 1.0 - tail, tail)


def black_scholes_put(s, k, t, r, sigma):
    sqrt_t = np.sqrt(t)
    d1 = (np.log(s / k) + (r + 0.5 * sigma * sigma) * t) / (sigma * sqrt_t)
    d2 = d1 - sigma * sqrt_t
    return k * np.exp(-r * t) * norm_cdf(-d2) - s * norm_cdf(-d1)


def bs_greeks(s, k, t, r, sigma):
    d1 = (np.log(s / k) + (r + 0.5 * sigma**2) * t) / (sigma * np.sqrt(t))
    pdf = np.exp(-0.5 * d1**2) / np.sqrt(2 * np.pi)
    delta = norm_cdf(d1)
    gamma = pdf / (s * sigma * np.sqrt(t))
    vega = s * pdf * np.sqrt(t)
    return {"delta": delta, "gamma": gamma, "vega": vega}


def binomial_call(s, k, r, sigma, t, steps=12):
    dt = t / steps
    u = math.exp(sigma * math.sqrt(dt))
    d = 1 / u
    q = (math.exp(r * dt) - d) / (u - d)
    j = np.arange(steps + 1)
    values = np.maximum(s * u**j * d ** (steps - j) - k, 0.0)
    disc = math.exp(-r * dt)
    for _ in range(steps):
        values = disc * (q * values[1:] + (1 - q) * values[:-1])
    return values[0]


def gbm_paths(s0, mu, sigma, dt, z):
    increments = (mu - 0.5 * sigma**2) * dt + sigma * math.sqrt(dt) * z
    log_paths = np.cumsum(increments, axis=1)
    return s0 * np.exp(np.concatenate([np.zeros((z.shape[0], 1)), log_paths], axis=1))


def asian_call_mc(s0, k, r, sigma, t, z):
    dt = t / z.shape[1]
    paths = gbm_paths(s0, r, sigma, dt, z)
    payoff = np.maximum(paths[:, 1:].mean(axis=1) - k, 0.0)
    return math.exp(-r * t) * payoff.mean(), payoff.std(ddof=1) / math.sqrt(z.shape[0])


def portfolio_stats(weights, returns, periods=252):
    mu = returns.mean(axis=0) * periods
    cov = np.cov(returns, rowvar=False) * periods
    ret = weights @ mu
    vol = np.sqrt(weights @ cov @ weights)
    return ret, vol, ret / vol


def max_drawdown(prices):
    peaks = np.maximum.accumulate(prices, axis=0)
    drawdowns = prices / peaks - 1.0
    return drawdowns.min(axis=0), drawdowns.argmin(axis=0)


def log_returns(prices):
    return np.diff(np.log(prices), axis=0)


def rolling_volatility(returns, window=10, periods=252):
    c1 = np.cumsum(returns, axis=0)
    c2 = np.cumsum(returns**2, axis=0)
    s1 = c1[window - 1 :] - np.concatenate([np.zeros((1,) + returns.shape[1:]), c1[:-window]])
    s2 = c2[window - 1 :] - np.concatenate([np.zeros((1,) + returns.shape[1:]), c2[:-window]])
    var = (s2 - s1**2 / window) / (window - 1)
    return np.sqrt(var * periods)


def bond_price(cashflows, times, y):
    return (cashflows * np.exp(-y * times)).sum()


def duration_convexity(cashflows, times, y):
    pv = cashflows * np.exp(-y * times)
    price = pv.sum()
    return price, (times * pv).sum() / price, (times**2 * pv).sum() / price


def annuity_schedule(principal, rate, n):
    payment = principal * rate / (1 - (1 + rate) ** -n)
    k = np.arange(1, n + 1)
    balance = principal * (1 + rate) ** k - payment * ((1 + rate) ** k - 1) / rate
    interest = np.concatenate([[principal], balance[:-1]]) * rate
    return payment, interest, balance


def historical_var(pnl, level=95):
    return -np.percentile(pnl, 100 - level, axis=0)


def expected_shortfall(pnl, level=0.95):
    sorted_pnl = np.sort(pnl, axis=0)
    cutoff = int(math.floor((1 - level) * pnl.shape[0]))
    return -sorted_pnl[: max(cutoff, 1)].mean(axis=0)


def ewma_volatility(returns, lam=0.94):
    n = returns.shape[0]
    w = (1 - lam) * lam ** np.arange(n - 1, -1, -1)
    return np.sqrt((w[:, None] * returns**2).sum(axis=0) / w.sum())


def min_variance_weights(returns):
    cov = np.cov(returns, rowvar=False)
    ones = np.ones(cov.shape[0])
    raw = np.linalg.solve(cov, ones)
    return raw / raw.sum()


def implied_vol_newton(price, s, k, t, r, sigma=0.3, iters=6):
    for _ in range(iters):
        d1 = (np.log(s / k) + (r + 0.5 * sigma**2) * t) / (sigma * np.sqrt(t))
        d2 = d1 - sigma * np.sqrt(t)
        model = s * norm_cdf(d1) - k * np.exp(-r * t) * norm_cdf(d2)
        vega = s * np.exp(-0.5 * d1**2) / np.sqrt(2 * np.pi) * np.sqrt(t)
        sigma = sigma - (model - price) / vega
    return sigma


def crossover_signal(prices, fast=3, slow=8):
    c = np.cumsum(np.concatenate([np.zeros((1,) + prices.shape[1:]), prices]), axis=0)
    fast_ma = (c[fast:] - c[:-fast])[slow - fast :] / fast
    slow_ma = (c[slow:] - c[:-slow]) / slow
    return np.sign(fast_ma - slow_ma)


def rebalance(weights, period_returns):
    grown = weights * (1 + period_returns)
    return grown / grown.sum(axis=-1, keepdims=True)


# ---- expected to break


def pnl_report(weights, returns):
    daily = returns @ weights
    total = float(daily.sum())  # FH012
    print(f"total pnl {total:.4%}")  # FH005
    return daily


def stop_loss(prices, limit=-0.05):
    ret = prices[-1] / prices[0] - 1
    if (ret < limit).any():  # data-dependent: FH002
        return np.zeros_like(prices[-1])
    return ret


NEAR = SPOTS[3:6].copy()
CALLS = NEAR * norm_cdf(np.array([0.1, 0.2, 0.3])) - 100.0 * math.exp(-0.02) * norm_cdf(np.array([-0.15, -0.05, 0.05]))

CORPUS = [
    (black_scholes_put, [(SPOTS, 100.0, 1.0, 0.03, 0.25), (SPOTS[:3].astype(np.float32), 90.0, 0.5, 0.01, 0.4)], 1, []),
    (bs_greeks, [(SPOTS, 100.0, 1.0, 0.03, 0.25), (SPOTS[2:5], 95.0, 2.0, 0.02, 0.3)], 1, []),
    (binomial_call, [(100.0, 100.0, 0.05, 0.2, 1.0), (90.0, 100.0, 0.01, 0.3, 0.5, 6)], 1, []),
    (gbm_paths, [(100.0, 0.05, 0.2, 1 / 12, SHOCKS), (50.0, 0.0, 0.1, 0.5, SHOCKS[:3, :4])], 1, []),
    (asian_call_mc, [(100.0, 100.0, 0.03, 0.2, 1.0, SHOCKS), (100.0, 95.0, 0.03, 0.2, 1.0, SHOCKS[:5, :6])], 1, []),
    (portfolio_stats, [(WEIGHTS, RETURNS), (WEIGHTS[:2] * 2, RETURNS[:20, :2], 12)], 1, []),
    (max_drawdown, [(PRICES,), (PRICES[:10, 0],)], 1, []),
    (log_returns, [(PRICES,), (PRICES[:5, :2].astype(np.float32),)], 1, []),
    (rolling_volatility, [(RETURNS,), (RETURNS[:15, :1], 5, 12)], 1, []),
    (bond_price, [(CASHFLOWS, TIMES, 0.04), (CASHFLOWS[:2], TIMES[:2], 0.02)], 1, []),
    (duration_convexity, [(CASHFLOWS, TIMES, 0.04), (CASHFLOWS[1:], TIMES[1:], 0.06)], 1, []),
    (annuity_schedule, [(1000.0, 0.01, 12), (500.0, 0.02, 6)], 1, []),
    (historical_var, [(RETURNS,), (RETURNS[:, 0], 99)], 1, []),
    (expected_shortfall, [(RETURNS,), (RETURNS[:20, :2], 0.9)], 1, []),
    (ewma_volatility, [(RETURNS,), (RETURNS[:10, 1:3], 0.9)], 1, []),
    (min_variance_weights, [(RETURNS,), (RETURNS[:, :2],)], 1, []),
    (
        implied_vol_newton,
        [(CALLS, NEAR, 100.0, 1.0, 0.02), (CALLS[:2].copy(), NEAR[:2].copy(), 100.0, 1.0, 0.02, 0.2, 4)],
        1,
        [],
    ),
    (crossover_signal, [(PRICES,), (PRICES[:12, 0], 2, 5)], 1, []),
    (rebalance, [(WEIGHTS, RETURNS[0]), (WEIGHTS[None, :2], RETURNS[:3, :2])], 1, []),
    (pnl_report, [(WEIGHTS, RETURNS), (WEIGHTS[:2], RETURNS[:5, :2])], 1, ["FH012", "FH005"]),
    (stop_loss, [(PRICES,), (PRICES[:, :2] * np.linspace(1, 0.5, 40)[:, None],)], 1, ["FH002"]),
]


@pytest.mark.parametrize("fn,calls,graphs,breaks", CORPUS, ids=[c[0].__name__ for c in CORPUS])
def test_corpus_finance(fn, calls, graphs, breaks, capsys):
    run_case(fn, calls, graphs, breaks)
    capsys.readouterr()
