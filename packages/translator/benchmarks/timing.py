"""Timing helpers shared by the benchmarks: one call timed, and the steady state of a
function against its optimized version, alternated so that machine noise hits both alike."""

from __future__ import annotations

import statistics
import sys
import time
import timeit
from pathlib import Path
from typing import Any, Callable, Tuple

TESTS = Path(__file__).resolve().parents[1] / "tests"


def use_test_kernels() -> None:
    """Make ``tests/loop_kernels.py`` (the kernels the tests check) importable."""
    if str(TESTS) not in sys.path:
        sys.path.insert(0, str(TESTS))


def timed(fn: Callable[..., Any], args: tuple, clock: Callable[[], float] = time.perf_counter) -> float:
    """Seconds of one call ``fn(*args)``."""
    start = clock()
    fn(*args)
    return clock() - start


def steady_state(
    plain: Callable[..., Any], optimized: Callable[..., Any], args: tuple, repeat: int, budget: float = 0.02
) -> Tuple[float, float]:
    """Median seconds per call of ``plain`` and ``optimized`` over ``repeat`` alternated timeit
    runs, each of as many calls as fit in about ``budget`` seconds of the plain function."""
    if repeat < 1:
        raise ValueError(f"repeat must be at least 1, got {repeat}")
    number = max(1, int(budget / max(timeit.timeit(lambda: plain(*args), number=1), 1e-7)))
    a, b = [], []
    for _ in range(repeat):
        a.append(timeit.timeit(lambda: plain(*args), number=number) / number)
        b.append(timeit.timeit(lambda: optimized(*args), number=number) / number)
    return statistics.median(a), statistics.median(b)
