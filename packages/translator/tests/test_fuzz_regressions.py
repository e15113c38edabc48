"""Programs found by fuzz/run.py where the translator once differed from plain Python."""

from __future__ import annotations

import numpy as np
import pytest

import framehook.translator as ft


def unused_modulo(a, b, arr):
    # fuzz seed 173: the graph's dead-code elimination dropped `0 % p2` (unused), so the
    # ZeroDivisionError Python raises for a == b vanished
    def g1(p2, k=1):
        return (0 % p2) + k

    v3 = g1(b - a)
    v4 = (-2 - v3) + (b % b)  # noqa: F841 - unused on purpose
    return 7


@pytest.mark.parametrize("a,b", [(1, 4), (3, 3), (0, 0)])
def test_unused_operation_that_raises_still_raises(a, b):
    ft.reset()
    optimized = ft.optimize(backend="eager")(unused_modulo)
    arr = np.arange(3)
    optimized(5, 2, arr)  # compile with arguments where nothing raises
    try:
        expected = ("ok", unused_modulo(a, b, arr))
    except ZeroDivisionError as exc:
        expected = ("raised", str(exc))
    try:
        got = ("ok", optimized(a, b, arr))
    except ZeroDivisionError as exc:
        got = ("raised", str(exc))
    assert got == expected
    ft.reset()
