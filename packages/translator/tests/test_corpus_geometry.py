"""Corpus: computational geometry (polygons by np.roll, rotations, meshes indexed by face
arrays, coordinate transforms, grids from meshgrid/mgrid/ogrid). Checked by
corpus_helpers.run_case."""

from __future__ import annotations

import math

import numpy as np
import pytest

from corpus_helpers import run_case

RNG = np.random.default_rng(707)
ANGLES = np.sort(RNG.uniform(0, 2 * np.pi, 9))
POLY = np.stack([np.cos(ANGLES), np.sin(ANGLES)], axis=1) * RNG.uniform(1, 2, (9, 1))
PTS2 = RNG.standard_normal((12, 2))
PTS3 = RNG.standard_normal((10, 3))
VERTS = RNG.standard_normal((6, 3))
FACES = np.array([[0, 1, 2], [0, 2, 3], [1, 3, 4], [2, 4, 5]])


def polygon_area(p):
    x, y = p[:, 0], p[:, 1]
    return 0.5 * (x * np.roll(y, -1) - np.roll(x, -1) * y).sum()


def polygon_centroid(p):
    x, y = p[:, 0], p[:, 1]
    xn, yn = np.roll(x, -1), np.roll(y, -1)
    cross = x * yn - xn * y
    area = 0.5 * cross.sum()
    return np.array([((x + xn) * cross).sum(), ((y + yn) * cross).sum()]) / (6 * area)


def rotate_2d(points, theta):
    c, s = math.cos(theta), math.sin(theta)
    rot = np.array([[c, -s], [s, c]])
    return points @ rot.T


def rodrigues(v, axis, theta):
    k = axis / np.linalg.norm(axis)
    return v * np.cos(theta) + np.cross(k, v) * np.sin(theta) + k * (v @ k)[..., None] * (1 - np.cos(theta))


def triangle_normals(verts, faces):
    a, b, c = verts[faces[:, 0]], verts[faces[:, 1]], verts[faces[:, 2]]
    n = np.cross(b - a, c - a)
    return n / np.linalg.norm(n, axis=1, keepdims=True)


def triangle_areas(verts, faces):
    tri = verts[faces]
    return 0.5 * np.linalg.norm(np.cross(tri[:, 1] - tri[:, 0], tri[:, 2] - tri[:, 0]), axis=1)


def bounding_box(points, pad=0.0):
    lo = points.min(axis=0) - pad
    hi = points.max(axis=0) + pad
    return np.stack([lo, hi]), np.prod(hi - lo)


def nearest_neighbour(points):
    d = np.sqrt(((points[:, None, :] - points[None, :, :]) ** 2).sum(-1))
    d = np.where(np.eye(points.shape[0], dtype=bool), np.inf, d)
    return d.argmin(axis=1), d.min(axis=1)


def barycentric(p, a, b, c):
    v0, v1, v2 = b - a, c - a, p - a
    d00, d01, d11 = v0 @ v0, v0 @ v1, v1 @ v1
    d20, d21 = v2 @ v0, v2 @ v1
    denom = d00 * d11 - d01 * d01
    v = (d11 * d20 - d01 * d21) / denom
    w = (d00 * d21 - d01 * d20) / denom
    return np.stack([1 - v - w, v, w], axis=-1)


def to_polar(points):
    return np.hypot(points[:, 0], points[:, 1]), np.arctan2(points[:, 1], points[:, 0])


def spherical_to_cartesian(r, theta, phi):
    st = np.sin(theta)
    return np.stack([r * st * np.cos(phi), r * st * np.sin(phi), r * np.cos(theta)], axis=-1)


def apply_homogeneous(points, transform):
    ones = np.ones(points.shape[:-1] + (1,), dtype=points.dtype)
    h = np.concatenate([points, ones], axis=-1) @ transform.T
    return h[..., :-1] / h[..., -1:]


def point_segment_distance(p, a, b):
    ab = b - a
    t = np.clip(((p - a) @ ab) / (ab @ ab), 0.0, 1.0)
    closest = a + t[:, None] * ab
    return np.linalg.norm(p - closest, axis=1)


def angle_between(u, v):
    cos = (u * v).sum(-1) / (np.linalg.norm(u, axis=-1) * np.linalg.norm(v, axis=-1))
    return np.degrees(np.arccos(np.clip(cos, -1.0, 1.0)))


def radial_grid(n, scale=1.0):
    xs = np.linspace(-scale, scale, n)
    xx, yy = np.meshgrid(xs, xs)
    return np.hypot(xx, yy)


def mgrid_disk_fraction(n):
    yy, xx = np.mgrid[-1 : 1 : n * 1j, -1 : 1 : n * 1j]
    return (xx**2 + yy**2 <= 1).mean()


def ogrid_gaussian(n, sigma=0.3):
    y, x = np.ogrid[:n, :n]
    c = (n - 1) / 2
    return np.exp(-((x - c) ** 2 + (y - c) ** 2) / (2 * (sigma * n) ** 2))


def align_centroids(src, dst):
    src_c = src - src.mean(axis=0)
    dst_c = dst - dst.mean(axis=0)
    scale = np.sqrt((dst_c**2).sum() / (src_c**2).sum())
    return src_c * scale + dst.mean(axis=0)


def kabsch_covariance(p, q):
    pc = p - p.mean(axis=0)
    qc = q - q.mean(axis=0)
    h = np.einsum("ni,nj->ij", pc, qc)
    return h, np.linalg.det(h)


def signed_distance_box(points, half=(1.0, 0.5)):
    q = np.abs(points) - np.array(half)
    outside = np.linalg.norm(np.maximum(q, 0.0), axis=-1)
    inside = np.minimum(q.max(axis=-1), 0.0)
    return outside + inside


# ---- expected to break


def hull_extreme(points):
    i = int(points[:, 0].argmax())  # FH012
    return points[i], points - points[i]


def inside_count_report(points, radius=1.0):
    inside = (points**2).sum(axis=1) <= radius**2
    print("inside:", inside.sum())  # FH005
    return points[inside]  # boolean mask: captured in the resume function


TRANSFORM = np.array([[1.0, 0.0, 0.0, 0.5], [0.0, 0.8, 0.0, 0.0], [0.0, 0.0, 1.0, 0.2], [0.0, 0.0, 0.1, 1.0]])

CORPUS = [
    (polygon_area, [(POLY,), (POLY[:4].astype(np.float32),)], 1, []),
    (polygon_centroid, [(POLY,), (POLY[:5],)], 1, []),
    (rotate_2d, [(PTS2, 0.3), (PTS2[:3].astype(np.float32), 1.0)], 1, []),
    (rodrigues, [(PTS3, np.array([0.0, 0.0, 1.0]), 0.5), (PTS3[:2], np.array([1.0, 1.0, 0.0]), 1.2)], 1, []),
    (triangle_normals, [(VERTS, FACES), (VERTS[:4], FACES[:2])], 1, []),
    (triangle_areas, [(VERTS, FACES), (VERTS[:4], FACES[:2])], 1, []),
    (bounding_box, [(PTS3,), (PTS2, 0.5)], 1, []),
    (nearest_neighbour, [(PTS2,), (PTS3[:4],)], 1, []),
    (
        barycentric,
        [
            (PTS2, np.zeros(2), np.array([1.0, 0.0]), np.array([0.0, 1.0])),
            (PTS2[:3], np.ones(2), np.array([2.0, 1.0]), np.array([1.0, 3.0])),
        ],
        1,
        [],
    ),
    (to_polar, [(PTS2,), (PTS2[:4].astype(np.float32),)], 1, []),
    (spherical_to_cartesian, [(1.0, ANGLES / 2, ANGLES), (np.ones(3), ANGLES[:3], ANGLES[3:6])], 1, []),
    (apply_homogeneous, [(PTS3, TRANSFORM), (PTS3[:2], np.eye(4))], 1, []),
    (
        point_segment_distance,
        [(PTS2, np.zeros(2), np.ones(2)), (PTS2[:4], np.array([1.0, -1.0]), np.array([2.0, 0.5]))],
        1,
        [],
    ),
    (angle_between, [(PTS3, PTS3[::-1].copy()), (PTS2[:3], PTS2[3:6])], 1, []),
    (radial_grid, [(5,), (7, 2.0)], 1, []),
    (mgrid_disk_fraction, [(9,), (5,)], 1, []),
    (ogrid_gaussian, [(6,), (4, 0.5)], 1, []),
    (align_centroids, [(PTS2, PTS2 * 2 + 1), (PTS3[:4], PTS3[4:8])], 1, []),
    (kabsch_covariance, [(PTS3, PTS3 + 0.1), (PTS2, PTS2[::-1].copy())], 1, []),
    (signed_distance_box, [(PTS2,), (PTS3, (1.0, 1.0, 0.5))], 1, []),
    (hull_extreme, [(PTS2,), (PTS3,)], 2, ["FH012"]),
    (inside_count_report, [(PTS2,), (PTS3, 1.5)], 2, ["FH005"]),
]


@pytest.mark.parametrize("fn,calls,graphs,breaks", CORPUS, ids=[c[0].__name__ for c in CORPUS])
def test_corpus_geometry(fn, calls, graphs, breaks, capsys):
    run_case(fn, calls, graphs, breaks)
    capsys.readouterr()
