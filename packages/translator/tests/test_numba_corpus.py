"""The numba backend's benchmark corpus (benchmarks/npbench_kernels.py and its two sibling
modules) stays sound: at least 50 kernels, every category covered, float32, int32 and int64
kernels present, a held-out ``unseen`` split of about 15, and each kernel's numpy version
agrees with its hand-written loop version on small inputs (in pure Python: the loops are
njit-compatible code, but compiling 56 of them would take a minute; a handful are compiled
with numba to check that they stay njit-able).
"""

from __future__ import annotations

import copy
import importlib.util
import sys
from pathlib import Path

import numpy as np
import pytest

pytest.importorskip("numba", reason="numba is not installed for this interpreter")

BENCH = Path(__file__).resolve().parent.parent / "benchmarks"


def _corpus():
    saved = list(sys.path)  # the corpus puts its directory on the path: not for the other tests
    sys.path.insert(0, str(BENCH))
    try:
        spec = importlib.util.spec_from_file_location("npbench_kernels", BENCH / "npbench_kernels.py")
        mod = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(mod)
    finally:
        sys.path[:] = saved
    return mod


CORPUS = _corpus()
SMALL = CORPUS.corpus(small=True)


def _agree(a, b):
    if isinstance(a, tuple):
        assert isinstance(b, tuple) and len(a) == len(b)
        for x, y in zip(a, b):
            _agree(x, y)
        return
    a, b = np.asarray(a), np.asarray(b)
    assert a.shape == b.shape
    tol = 1e-3 if np.float32 in (a.dtype, b.dtype) else 1e-7
    np.testing.assert_allclose(a, b, rtol=tol, atol=tol)


def test_size_categories_and_split():
    names = [k.name for k in SMALL]
    assert len(names) >= 50
    assert len(set(names)) == len(names)
    assert {k.category for k in SMALL} == set(CORPUS.CATEGORIES)
    unseen = [k for k in SMALL if k.unseen]
    assert 12 <= len(unseen) <= 18
    # the held-out set spans the categories rather than one kind of computation
    assert len({k.category for k in unseen}) >= 7


def _dtypes(value):
    if isinstance(value, tuple):
        return {d for v in value for d in _dtypes(v)}
    return {np.asarray(value).dtype}


def test_dtypes_covered():
    seen = set()
    for k in SMALL:
        for arg in k.args:
            seen |= _dtypes(arg)
        seen |= _dtypes(k.fn(*copy.deepcopy(k.args)))
    for dtype in (np.float64, np.float32, np.int32, np.int64):
        assert np.dtype(dtype) in seen


@pytest.mark.parametrize("kernel", SMALL, ids=[k.name for k in SMALL])
def test_numpy_and_hand_written_agree(kernel):
    _agree(kernel.fn(*copy.deepcopy(kernel.args)), kernel.hand(*copy.deepcopy(kernel.args)))


@pytest.mark.parametrize("name", ["heat_3d", "relu_mlp", "int_mod_sums", "fir_f32", "azimuthal_bincount"])
def test_hand_written_compiles_with_numba(name):
    import numba

    kernel = next(k for k in SMALL if k.name == name)
    _agree(kernel.fn(*copy.deepcopy(kernel.args)), numba.njit(kernel.hand)(*copy.deepcopy(kernel.args)))


def test_docstring_names_the_unseen_set():
    # the fusion helper reads the held-out names there: they must be the flagged ones
    doc = " ".join(CORPUS.__doc__.split())
    listed = doc.split("set (", 1)[1].split(")", 1)[0].split(", ")
    assert sorted(listed) == sorted(k.name for k in SMALL if k.unseen)
