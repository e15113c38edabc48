"""Kernels that call BLAS run with scipy's BLAS on one thread.

numba compiles ``@``, ``np.dot`` and ``np.linalg`` into calls of scipy's BLAS and LAPACK
bindings. scipy's wheels bring an OpenBLAS of their own, beside numpy's, so a process
using both has two thread pools, and an OpenBLAS thread keeps spinning for a while after
its call returns. Eager calls (numpy's pool) and kernel calls (scipy's) in turn, as the
backend's measurement makes them and as a graph break between two graphs does, then
oversubscribe the cores: on this 2-core machine relu_mlp's kernel took 14 ms where its
eager calls took 1.2 ms, and a kept gemver_like ran from 0.9x to 1.7x plain from one run
to the next. With scipy's pool on one thread while a kernel runs, the kernel's BLAS runs
in the calling thread and meets no spinning pool of its own: gemver_like 0.79-0.83x in
three runs, relu_mlp measured as the near-tie it is (BENCHMARKS.md).

The number of threads is set for the kernel's call only and given back after it (two
calls into OpenBLAS, about 3 us): the user's own scipy calls keep the pool they chose.
Nothing is done when threadpoolctl is not installed, when scipy's BLAS is not loaded as a
library of its own (a scipy built against numpy's BLAS, or the system's, shares one pool),
or when the pool already has one thread.
"""

from __future__ import annotations

import operator
import os
import threading
from typing import Any, Callable, Iterable, Optional, Sequence

import numpy as np

from ...graph import Graph, Node, NodeKind

__all__ = ["reaches_blas", "single_threaded", "scipy_pool"]

#: calls numba compiles through scipy's BLAS (any ``np.linalg`` function besides)
_BLAS_TARGETS = (operator.matmul, operator.imatmul, np.matmul, np.dot, np.vdot, np.inner)


def _calls_blas(node: Node) -> bool:
    if node.kind is NodeKind.CALL_METHOD:
        return node.target == "dot"
    if node.kind is not NodeKind.CALL:
        return False
    target = node.target
    if any(target is t for t in _BLAS_TARGETS):
        return True
    return str(getattr(target, "__module__", "")).startswith("numpy.linalg")


def reaches_blas(nodes: Iterable[Node]) -> bool:
    """Does any of these nodes (loop bodies included) become a BLAS or LAPACK call?"""
    for node in nodes:
        if _calls_blas(node):
            return True
        body = getattr(node.target, "body", None) if node.kind is NodeKind.CALL else None
        if isinstance(body, Graph) and reaches_blas(body.nodes):
            return True
    return False


def _package_dir(path: str) -> str:
    """The package whose wheel vendors a library: ``site-packages/scipy.libs/lib.so`` (Linux,
    Windows) and ``site-packages/scipy/.dylibs/lib.dylib`` (macOS) give ``scipy``."""
    folder = os.path.dirname(path)
    name = os.path.basename(folder)
    if name.startswith("."):
        name = os.path.basename(os.path.dirname(folder))
    return name.split(".", 1)[0]


def pick_scipy_pool(controllers: Sequence[Any]) -> Optional[Any]:
    """The controller of the BLAS library scipy's wheel vendors, when numpy does not use
    that very library; None otherwise (``controllers``: threadpoolctl's, for BLAS)."""
    by_package = {}
    for c in controllers:
        by_package.setdefault(_package_dir(c.filepath), []).append(c)
    scipy_libs = [c for p, cs in by_package.items() if p == "scipy" for c in cs]
    if len(scipy_libs) != 1:
        return None
    shared = {os.path.realpath(c.filepath) for p, cs in by_package.items() if p != "scipy" for c in cs}
    return None if os.path.realpath(scipy_libs[0].filepath) in shared else scipy_libs[0]


_lock = threading.Lock()
_pool: Any = None  # not looked for yet; False: none to limit


def scipy_pool() -> Optional[Any]:
    """threadpoolctl's controller of scipy's own BLAS pool, looked for once, or None."""
    global _pool
    with _lock:
        if _pool is None:
            _pool = False
            try:
                import scipy.linalg.cython_blas  # noqa: F401 - loads the library numba calls
                import threadpoolctl

                blas = [c for c in threadpoolctl.ThreadpoolController().lib_controllers if c.user_api == "blas"]
                _pool = pick_scipy_pool(blas) or False
            except Exception:  # noqa: BLE001 - no scipy, no threadpoolctl, an unknown BLAS: nothing to limit
                _pool = False
        return _pool or None


def single_threaded(call: Callable[..., Any], *args: Any) -> Any:
    """``call(*args)`` with scipy's BLAS pool on one thread, then as it was."""
    pool = _pool if _pool is not None else scipy_pool()
    if not pool:
        return call(*args)
    before = pool.get_num_threads()
    if before == 1:
        return call(*args)
    pool.set_num_threads(1)
    try:
        return call(*args)
    finally:
        pool.set_num_threads(before)
