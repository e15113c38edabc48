"""Kernels calling scipy's BLAS run with scipy's thread pool on one thread (``blas_threads``):
which graphs count as calling BLAS, which loaded library is scipy's own, that the pool is
set for the kernel's call only and given back (also when the call raises), and that a
compiled ``@`` kernel goes through it."""

from __future__ import annotations

import importlib.util
import operator
from types import SimpleNamespace
from typing import Any, List

import numpy as np
import pytest

numba = pytest.importorskip("numba", reason="numba is not installed for this interpreter")
import framehook.translator as ft  # noqa: E402
from framehook.translator.backends import numba as bnb  # noqa: E402
from framehook.translator.backends.numba import blas_threads  # noqa: E402
from test_backend_numba import captured_graph, numba_cache  # noqa: E402,F401 - the cache fixture

HAS_SCIPY = importlib.util.find_spec("scipy") is not None
NO_SCIPY = "scipy is not installed (no wheels for this interpreter): numba compiles no `@` through BLAS"


class FakePool:
    """A thread pool that records what it is set to."""

    def __init__(self, threads: int) -> None:
        self.threads = threads
        self.set: List[int] = []

    def get_num_threads(self) -> int:
        return self.threads

    def set_num_threads(self, n: int) -> None:
        self.set.append(n)
        self.threads = n


@pytest.fixture
def fake_pool(monkeypatch: Any) -> FakePool:
    pool = FakePool(2)
    monkeypatch.setattr(blas_threads, "_pool", pool)
    return pool


def _mm(a, b):
    return (a @ b) * 2.0 + 1.0


def _linalg(a):
    return np.linalg.norm(a, axis=0) + 1.0


def _method_dot(a, b):
    return a.dot(b) - 1.0


def _elementwise(a, b):
    return np.sqrt(a * b + 1.0)


def _loop(a, b, n):
    for _ in range(n):
        a = a @ b
    return a


@pytest.mark.parametrize(
    "fn, blas",
    [(_mm, True), (_linalg, True), (_method_dot, True), (_elementwise, False), (_loop, True)],
)
def test_which_graphs_reach_blas(fn, blas):
    a = np.linspace(0, 1, 16).reshape(4, 4)
    args = (a,) if fn is _linalg else (a, a.T.copy(), 3) if fn is _loop else (a, a.T.copy())
    assert blas_threads.reaches_blas(captured_graph(fn, *args).nodes) is blas


def test_the_lowering_says_whether_the_kernel_calls_blas():
    a = np.linspace(0, 1, 16).reshape(4, 4)
    assert bnb.lower(captured_graph(_mm, a, a), (a, a)).blas is True
    assert bnb.lower(captured_graph(_elementwise, a, a), (a, a)).blas is False


def _lib(path: str) -> Any:
    return SimpleNamespace(filepath=path)


@pytest.mark.parametrize(
    "paths, picked",
    [
        # pip wheels on Linux and Windows: numpy's and scipy's own OpenBLAS
        (["/sp/numpy.libs/libscipy_openblas64_-a.so", "/sp/scipy.libs/libscipy_openblas-b.so"], 1),
        # macOS wheels
        (["/sp/numpy/.dylibs/libscipy_openblas64_.dylib", "/sp/scipy/.dylibs/libscipy_openblas.dylib"], 1),
        # one BLAS for both (conda, distributions): limiting it would limit numpy's calls
        (["/usr/lib/libopenblas.so.0"], None),
        # numpy's alone
        (["/sp/numpy.libs/libscipy_openblas64_-a.so"], None),
        # two BLAS libraries in scipy's folder: which numba calls is not known
        (["/sp/scipy.libs/liba.so", "/sp/scipy.libs/libb.so"], None),
    ],
)
def test_the_pool_limited_is_scipys_own_library_only(paths, picked):
    libs = [_lib(p) for p in paths]
    assert blas_threads.pick_scipy_pool(libs) is (None if picked is None else libs[picked])


def test_a_library_numpy_loads_too_is_not_limited(tmp_path):
    real = tmp_path / "libopenblas.so"
    real.write_bytes(b"")
    (tmp_path / "scipy.libs").mkdir()
    link = tmp_path / "scipy.libs" / "libopenblas.so"
    link.symlink_to(real)
    assert blas_threads.pick_scipy_pool([_lib(str(real)), _lib(str(link))]) is None


def test_the_pool_is_on_one_thread_for_the_call_only(fake_pool):
    seen = blas_threads.single_threaded(lambda: fake_pool.get_num_threads())
    assert (seen, fake_pool.threads, fake_pool.set) == (1, 2, [1, 2])


def test_the_pool_is_given_back_when_the_call_raises(fake_pool):
    with pytest.raises(ZeroDivisionError):
        blas_threads.single_threaded(operator.truediv, 1, 0)
    assert (fake_pool.threads, fake_pool.set) == (2, [1, 2])


def test_a_pool_already_on_one_thread_is_left_alone(fake_pool):
    fake_pool.threads = 1
    assert blas_threads.single_threaded(operator.add, 1, 2) == 3
    assert fake_pool.set == []


def test_no_pool_found_calls_straight_through(monkeypatch):
    monkeypatch.setattr(blas_threads, "_pool", False)
    assert blas_threads.scipy_pool() is None
    assert blas_threads.single_threaded(operator.add, 1, 2) == 3


@pytest.mark.skipif(not HAS_SCIPY, reason=NO_SCIPY)
def test_scipys_real_pool_is_found_and_set_for_the_call():
    pool = blas_threads.scipy_pool()
    if pool is None:
        pytest.skip("scipy's BLAS is not a library of its own here (or threadpoolctl is missing)")
    numpy_threads = [
        c.get_num_threads()
        for c in __import__("threadpoolctl").ThreadpoolController().lib_controllers
        if c.user_api == "blas" and c is not pool and c.filepath != pool.filepath
    ]
    before = pool.get_num_threads()
    pool.set_num_threads(2)
    try:
        assert blas_threads.single_threaded(pool.get_num_threads) == 1
        assert pool.get_num_threads() == 2
    finally:
        pool.set_num_threads(before)
    after = [
        c.get_num_threads()
        for c in __import__("threadpoolctl").ThreadpoolController().lib_controllers
        if c.user_api == "blas" and c.filepath != pool.filepath
    ]
    assert after == numpy_threads  # numpy's pool is never touched


@pytest.mark.skipif(not HAS_SCIPY, reason=NO_SCIPY)
@pytest.mark.usefixtures("numba_cache")
def test_a_compiled_matmul_kernel_runs_with_the_pool_on_one_thread(fake_pool):
    a = np.linspace(0, 1, 64).reshape(8, 8)
    b = np.linspace(1, 2, 64).reshape(8, 8)
    seen: List[Any] = []
    bnb.add_note_observer(seen.append)
    ft.reset()
    try:
        opt = ft.optimize("numba")(_mm)
        results = [opt(a, b) for _ in range(4)]
    finally:
        bnb.remove_note_observer(seen.append)
        ft.reset()
    assert any(n.status == "compiled" for n in seen), [str(n) for n in seen]
    for got in results:
        np.testing.assert_allclose(got, _mm(a, b))
    calls = len(fake_pool.set) // 2
    assert calls >= 1 and fake_pool.set == [1, 2] * calls and fake_pool.threads == 2
