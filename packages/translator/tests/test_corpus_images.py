"""Corpus: image processing on small arrays (colour conversion, filters by padded slicing,
pooling by reshape, morphology, integral images, thresholds, Mandelbrot escape counts).
Checked by corpus_helpers.run_case."""

from __future__ import annotations

import numpy as np
import pytest

from corpus_helpers import run_case

RNG = np.random.default_rng(808)
RGB = RNG.uniform(size=(12, 10, 3))
RGB32 = RNG.uniform(size=(6, 8, 3)).astype(np.float32)
GRAY = RNG.uniform(size=(16, 16))
GRAY_SMALL = RNG.uniform(size=(7, 9))
BINARY = RNG.uniform(size=(10, 10)) > 0.6
U8 = RNG.integers(0, 256, size=(8, 8), dtype=np.uint8)


def to_gray(img, weights=(0.299, 0.587, 0.114)):
    return img @ np.array(weights, dtype=img.dtype)


def gamma_correct(img, gamma=2.2):
    return np.clip(img, 0.0, 1.0) ** (1.0 / gamma)


def box_blur(img, r=1):
    p = np.pad(img, r, mode="reflect")
    h, w = img.shape
    acc = np.zeros_like(img)
    for dy in range(2 * r + 1):
        for dx in range(2 * r + 1):
            acc = acc + p[dy : dy + h, dx : dx + w]
    return acc / (2 * r + 1) ** 2


def sobel_magnitude(img):
    p = np.pad(img, 1, mode="edge")
    gx = (p[:-2, 2:] + 2 * p[1:-1, 2:] + p[2:, 2:]) - (p[:-2, :-2] + 2 * p[1:-1, :-2] + p[2:, :-2])
    gy = (p[2:, :-2] + 2 * p[2:, 1:-1] + p[2:, 2:]) - (p[:-2, :-2] + 2 * p[:-2, 1:-1] + p[:-2, 2:])
    return np.hypot(gx, gy)


def binarize(img, threshold=0.5):
    return np.where(img > threshold, 1, 0).astype(np.uint8)


def equalize(img):
    flat = np.sort(img.ravel())
    ranks = np.searchsorted(flat, img, side="right")
    return ranks / flat.size


def downsample2(img):
    h, w = img.shape[0] // 2 * 2, img.shape[1] // 2 * 2
    return img[:h, :w].reshape(h // 2, 2, w // 2, 2, *img.shape[2:]).mean(axis=(1, 3))


def upsample_nearest(img, factor=2):
    rows = np.arange(img.shape[0] * factor) // factor
    cols = np.arange(img.shape[1] * factor) // factor
    return img[rows][:, cols]


def augment(img):
    return [img, np.fliplr(img), np.flipud(img), np.rot90(img), np.rot90(img, 2)]


def center_crop(img, size=4):
    top = (img.shape[0] - size) // 2
    left = (img.shape[1] - size) // 2
    return img[top : top + size, left : left + size]


def normalize_channels(img, eps=1e-6):
    mean = img.mean(axis=(0, 1), keepdims=True)
    std = img.std(axis=(0, 1), keepdims=True)
    return (img - mean) / (std + eps)


def alpha_blend(fg, bg, alpha):
    a = alpha[..., None]
    return a * fg + (1 - a) * bg


def unsharp_mask(img, amount=1.5):
    return np.clip(img + amount * (img - box_blur(img)), 0.0, 1.0)


def gaussian_kernel(size=5, sigma=1.0):
    ax = np.arange(size) - (size - 1) / 2
    g = np.exp(-0.5 * (ax / sigma) ** 2)
    k = np.outer(g, g)
    return k / k.sum()


def convolve_same(img, kernel):
    kh, kw = kernel.shape
    p = np.pad(img, ((kh // 2, kh - 1 - kh // 2), (kw // 2, kw - 1 - kw // 2)))
    out = np.zeros(img.shape)
    for i in range(kh):
        for j in range(kw):
            out += kernel[i, j] * p[i : i + img.shape[0], j : j + img.shape[1]]
    return out


def mandelbrot_counts(c, iters=12):
    z = np.zeros_like(c)
    counts = np.zeros(c.shape, dtype=np.int64)
    for _ in range(iters):
        alive = np.abs(z) <= 2.0
        z = np.where(alive, z * z + c, z)
        counts += alive
    return counts


def median_3x3(img):
    p = np.pad(img, 1, mode="edge")
    h, w = img.shape
    stack = np.stack([p[i : i + h, j : j + w] for i in range(3) for j in range(3)])
    return np.median(stack, axis=0)


def dilate(mask):
    p = np.pad(mask, 1)
    return p[:-2, 1:-1] | p[2:, 1:-1] | p[1:-1, :-2] | p[1:-1, 2:] | mask


def erode(mask):
    p = np.pad(mask, 1, constant_values=True)
    return p[:-2, 1:-1] & p[2:, 1:-1] & p[1:-1, :-2] & p[1:-1, 2:] & mask


def integral_box_sums(img, k=3):
    ii = np.pad(img.cumsum(axis=0).cumsum(axis=1), ((1, 0), (1, 0)))
    return ii[k:, k:] - ii[:-k, k:] - ii[k:, :-k] + ii[:-k, :-k]


def otsu_threshold(img, levels=16):
    t = np.linspace(img.min(), img.max(), levels)[1:-1]
    below = img.ravel()[None, :] < t[:, None]
    w0 = below.mean(axis=1)
    w1 = 1 - w0
    flat = img.ravel()[None, :]
    m0 = (flat * below).sum(axis=1) / np.maximum(below.sum(axis=1), 1)
    m1 = (flat * ~below).sum(axis=1) / np.maximum((~below).sum(axis=1), 1)
    between = w0 * w1 * (m0 - m1) ** 2
    return t[np.argmax(between)]


def u8_to_float(img):
    return img.astype(np.float32) / 255.0, (img // 16).astype(np.uint8)


def vignette(img, strength=0.5):
    h, w = img.shape[:2]
    yy, xx = np.meshgrid(np.linspace(-1, 1, h), np.linspace(-1, 1, w), indexing="ij")
    falloff = 1 - strength * (xx**2 + yy**2) / 2
    return img * falloff.reshape(falloff.shape + (1,) * (img.ndim - 2))


def zero_dark_pixels(img, level=0.2):
    out = img.copy()
    out[out < level] = 0.0  # boolean-mask assignment keeps the shape: captured
    return out


# ---- expected to break


def save_preview(img):
    small = downsample2(img)
    print("preview", small.shape, small.dtype)  # FH005
    return small


C_GRID = np.linspace(-2, 0.5, 9)[None, :] + 1j * np.linspace(-1.2, 1.2, 7)[:, None]

CORPUS = [
    (to_gray, [(RGB,), (RGB32,)], 1, []),
    (gamma_correct, [(RGB,), (RGB32, 1.8)], 1, []),
    (box_blur, [(GRAY,), (GRAY_SMALL, 2)], 1, []),
    (sobel_magnitude, [(GRAY,), (GRAY_SMALL.astype(np.float32),)], 1, []),
    (binarize, [(GRAY,), (RGB32, 0.3)], 1, []),
    (equalize, [(GRAY,), (GRAY_SMALL,)], 1, []),
    (downsample2, [(RGB,), (GRAY_SMALL,)], 1, []),
    (upsample_nearest, [(GRAY_SMALL,), (RGB32, 3)], 1, []),
    (augment, [(GRAY_SMALL,), (RGB32,)], 1, []),
    (center_crop, [(GRAY,), (RGB32, 2)], 1, []),
    (normalize_channels, [(RGB,), (RGB32,)], 1, []),
    (alpha_blend, [(RGB, RGB[::-1].copy(), GRAY[:12, :10]), (RGB32, RGB32 * 0, RGB32[..., 0])], 1, []),
    (unsharp_mask, [(GRAY,), (GRAY_SMALL, 0.5)], 1, []),
    (gaussian_kernel, [(), (3, 0.5)], 1, []),
    (convolve_same, [(GRAY, gaussian_kernel()), (GRAY_SMALL, np.ones((2, 3)) / 6)], 1, []),
    (mandelbrot_counts, [(C_GRID,), (C_GRID[:3, :4], 6)], 1, []),
    (median_3x3, [(GRAY,), (GRAY_SMALL,)], 1, []),
    (dilate, [(BINARY,), (BINARY[:4, :6],)], 1, []),
    (erode, [(BINARY,), (BINARY[:5, :3],)], 1, []),
    (integral_box_sums, [(GRAY,), (GRAY_SMALL, 2)], 1, []),
    (otsu_threshold, [(GRAY,), (GRAY_SMALL, 8)], 1, []),
    (u8_to_float, [(U8,), (U8[:3],)], 1, []),
    (vignette, [(RGB,), (GRAY_SMALL, 0.2)], 1, []),
    (zero_dark_pixels, [(GRAY,), (GRAY_SMALL, 0.5)], 1, []),
    (save_preview, [(RGB,), (GRAY_SMALL,)], 1, ["FH005"]),
]


@pytest.mark.parametrize("fn,calls,graphs,breaks", CORPUS, ids=[c[0].__name__ for c in CORPUS])
def test_corpus_images(fn, calls, graphs, breaks, capsys):
    run_case(fn, calls, graphs, breaks)
    capsys.readouterr()
