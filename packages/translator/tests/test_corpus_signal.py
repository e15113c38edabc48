"""Corpus: 1-D signal processing (FIR/IIR filters, windows, a DFT by matrix product,
resampling, peak and zero-crossing detection). Checked by corpus_helpers.run_case."""

from __future__ import annotations

import math

import numpy as np
import pytest

from corpus_helpers import run_case

RNG = np.random.default_rng(303)
T = np.linspace(0.0, 1.0, 64)
TONE = np.sin(2 * np.pi * 5 * T) + 0.3 * RNG.standard_normal(64)
NOISE = RNG.standard_normal(20)
NOISE32 = RNG.standard_normal(24).astype(np.float32)
KERNEL = np.array([0.1, 0.2, 0.4, 0.2, 0.1])


def moving_average(x, width=5):
    return np.convolve(x, np.ones(width) / width, mode="valid")


def cross_correlation(a, b):
    a = (a - a.mean()) / a.std()
    b = (b - b.mean()) / b.std()
    return np.correlate(a, b, mode="full") / len(a)


def fir_filter(x, taps):
    n = len(x) - len(taps) + 1
    y = np.zeros(n, dtype=np.result_type(x, taps))
    for k, h in enumerate(taps[::-1]):
        y += h * x[k : k + n]
    return y


def iir_lowpass(x, a=0.8):
    y = np.zeros_like(x)
    y[0] = (1 - a) * x[0]
    for i in range(1, x.shape[0]):
        y[i] = a * y[i - 1] + (1 - a) * x[i]
    return y


def hann_window(x):
    n = x.shape[-1]
    w = 0.5 - 0.5 * np.cos(2 * np.pi * np.arange(n) / (n - 1))
    return x * w


def dft(x):
    n = x.shape[0]
    k = np.arange(n)
    basis = np.exp(-2j * np.pi * np.outer(k, k) / n)
    return basis @ x


def power_spectrum(x, fs=64.0):
    spec = dft(x - x.mean())
    half = x.shape[0] // 2
    freqs = np.arange(half) * fs / x.shape[0]
    return freqs, np.abs(spec[:half]) ** 2 / x.shape[0]


def zero_crossing_rate(x):
    signs = np.sign(x)
    return np.mean(np.abs(np.diff(signs)) > 0)


def downsample_mean(x, factor=4):
    usable = x.shape[0] // factor * factor
    phases = [x[i:usable:factor] for i in range(factor)]
    return np.stack(phases, axis=1).mean(axis=1)


def upsample_linear(x, factor=3):
    n = x.shape[0]
    fine = np.linspace(0, n - 1, (n - 1) * factor + 1)
    return np.interp(fine, np.arange(n), x)


def smooth_5point(x):
    y = x.copy()
    y[2:-2] = (-3 * x[:-4] + 12 * x[1:-3] + 17 * x[2:-2] + 12 * x[3:-1] - 3 * x[4:]) / 35
    return y


def detrend(x):
    t = np.arange(x.shape[0], dtype=x.dtype)
    tc = t - t.mean()
    slope = (tc * (x - x.mean())).sum() / (tc * tc).sum()
    return x - x.mean() - slope * tc


def autocorrelation(x, max_lag=6):
    xc = x - x.mean()
    denom = xc @ xc
    return np.array([xc[: len(xc) - lag] @ xc[lag:] / denom for lag in range(max_lag)])


def median3(x):
    return np.median(np.stack([x[:-2], x[1:-1], x[2:]]), axis=0)


def local_peaks(x):
    mid = x[1:-1]
    is_peak = (mid > x[:-2]) & (mid > x[2:])
    return np.concatenate([[False], is_peak, [False]])


def rms_db(x, ref=1.0):
    rms = np.sqrt(np.mean(x**2))
    return 20 * np.log10(rms / ref)


def chirp(t, f0=1.0, f1=8.0):
    k = (f1 - f0) / t[-1]
    return np.sin(2 * np.pi * (f0 * t + 0.5 * k * t**2))


def quantize(x, bits=8):
    levels = 2 ** (bits - 1) - 1
    return np.round(np.clip(x, -1.0, 1.0) * levels).astype(np.int16)


def envelope(x, width=4):
    mag = np.abs(x)
    padded = np.pad(mag, (width // 2, width - width // 2 - 1), mode="edge")
    out = padded[: len(x)]
    for k in range(1, width):
        out = np.maximum(out, padded[k : k + len(x)])
    return out


def gradient_energy(x, dt=1.0):
    g = np.gradient(x, dt)
    return g, 0.5 * (g**2).sum() * dt


def sinc_interpolate(samples, t_new, period=1.0):
    n = np.arange(samples.shape[0])
    return np.sinc((t_new[:, None] - n[None, :] * period) / period) @ samples


def mix_down(stereo, gains=(0.6, 0.4)):
    left, right = stereo[:, 0], stereo[:, 1]
    return gains[0] * left + gains[1] * right


def preemphasis(x, coeff=0.97):
    return np.append(x[:1], x[1:] - coeff * x[:-1])


def frame_signal(x, size=8, hop=4):
    count = 1 + (x.shape[0] - size) // hop
    idx = np.arange(size)[None, :] + hop * np.arange(count)[:, None]
    return x[idx]


def spectral_centroid(x):
    freqs, power = power_spectrum(x)
    return (freqs * power).sum() / power.sum()


def snr_db(clean, noisy):
    noise = noisy - clean
    return 10 * math.log10(1.0) + 10 * np.log10((clean**2).sum() / (noise**2).sum())


# ---- expected to break


def peak_positions(x):
    return np.arange(x.shape[0])[local_peaks(x)]  # boolean mask: captured, its length a symbolic dimension


def clipping_warning(x, limit=1.0):
    clipped = np.abs(x) > limit
    if clipped.any():  # data-dependent: FH002
        print("clipping", clipped.sum())  # FH005 in the resumed branch (sum: a graph of its own)
    return np.clip(x, -limit, limit)


CORPUS = [
    (moving_average, [(TONE,), (NOISE, 3)], 1, []),
    (cross_correlation, [(TONE[:16], TONE[8:24]), (NOISE, NOISE[::-1].copy())], 1, []),
    (fir_filter, [(TONE, KERNEL), (NOISE32, KERNEL[:3].astype(np.float32))], 1, []),
    (iir_lowpass, [(NOISE,), (NOISE32[:9], 0.5)], 1, []),
    (hann_window, [(TONE,), (NOISE32,)], 1, []),
    (dft, [(TONE[:16],), (NOISE[:8],)], 1, []),
    (power_spectrum, [(TONE,), (NOISE, 20.0)], 1, []),
    (zero_crossing_rate, [(TONE,), (NOISE32,)], 1, []),
    (downsample_mean, [(TONE,), (NOISE, 3)], 1, []),
    (upsample_linear, [(NOISE[:6],), (TONE[:5], 2)], 1, []),
    (smooth_5point, [(TONE,), (NOISE32,)], 1, []),
    (detrend, [(TONE,), (NOISE32,)], 1, []),
    (autocorrelation, [(TONE,), (NOISE, 3)], 1, []),
    (median3, [(TONE,), (NOISE32,)], 1, []),
    (local_peaks, [(TONE,), (NOISE,)], 1, []),
    (rms_db, [(TONE,), (NOISE32, 0.5)], 1, []),
    (chirp, [(T,), (T[:10], 2.0, 4.0)], 1, []),
    (quantize, [(TONE,), (NOISE32, 4)], 1, []),
    (envelope, [(TONE,), (NOISE, 3)], 1, []),
    (gradient_energy, [(TONE,), (NOISE32, 0.5)], 1, []),
    (sinc_interpolate, [(NOISE[:8], np.linspace(0, 7, 15)), (NOISE[:5], np.linspace(0, 4, 9), 2.0)], 1, []),
    (mix_down, [(RNG.standard_normal((10, 2)),), (RNG.standard_normal((4, 2)).astype(np.float32), (0.5, 0.5))], 1, []),
    (preemphasis, [(TONE,), (NOISE32, 0.9)], 1, []),
    (frame_signal, [(TONE,), (NOISE, 6, 3)], 1, []),
    (spectral_centroid, [(TONE[:32],), (NOISE,)], 1, []),
    (snr_db, [(TONE, TONE + 0.1 * NOISE[0]), (NOISE, NOISE * 1.1)], 1, []),
    (peak_positions, [(TONE,), (NOISE,)], 1, []),
    (clipping_warning, [(TONE,), (NOISE * 0.1,)], 3, ["FH002", "FH005"]),
]


@pytest.mark.parametrize("fn,calls,graphs,breaks", CORPUS, ids=[c[0].__name__ for c in CORPUS])
def test_corpus_signal(fn, calls, graphs, breaks, capsys):
    run_case(fn, calls, graphs, breaks)
    capsys.readouterr()
