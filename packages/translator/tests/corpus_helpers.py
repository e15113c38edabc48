"""The check every corpus case goes through (test_numpy_corpus.py and test_corpus_*.py).

A case is ``(fn, calls, graphs, breaks)``: ``calls[0]`` is the first call, made twice (the
second must be a cache hit: nothing is translated), then every other call (each must
translate something: other shapes or dtypes recompile), then ``calls[0]`` again; each agrees
exactly with the plain function. ``explain(fn)(*calls[0])`` must report ``graphs`` graphs and
the break identifiers ``breaks``, in order, and return what the plain function returns.
"""

from __future__ import annotations

import copy
import importlib.util
import sys
from pathlib import Path
from typing import Any, Callable, List, Sequence

import numpy as np
import pytest

import framehook.translator as ft
from framehook.translator.symbolic import add_observer, remove_observer
from symbolic_helpers import assert_same, check_agrees

HERE = Path(__file__).resolve().parent


def _translations(opt: Any, fn: Callable[..., Any], call: tuple) -> List[Any]:
    reports: List[Any] = []
    add_observer(reports.append)
    try:
        check_agrees(fn, call, optimized=opt)
    finally:
        remove_observer(reports.append)
    return reports


def run_case(fn: Callable[..., Any], calls: Sequence[tuple], graphs: int, breaks: List[str]) -> None:
    ft.reset()
    opt = ft.optimize("eager")(fn)
    check_agrees(fn, calls[0], optimized=opt)
    hit = _translations(opt, fn, calls[0])
    assert not hit, f"{fn.__name__}: the repeated first call translated {[r.code.co_name for r in hit]} again"
    for call in calls[1:]:
        again = _translations(opt, fn, call)
        assert again, f"{fn.__name__}: the call with other inputs did not recompile"
    check_agrees(fn, calls[0], optimized=opt)
    out = ft.explain(fn)(*copy.deepcopy(calls[0]))
    assert out.graph_count == graphs, str(out)
    assert [b.code for b in out.break_reasons] == breaks, str(out)
    assert_same(out.result, fn(*copy.deepcopy(calls[0])))
    ft.reset()


def corpus_modules() -> List[Any]:
    """Every corpus module of this directory, loaded under a private name (so that the
    count does not depend on which modules pytest collected, nor how it imported them)."""
    mods = []
    for path in sorted(HERE.glob("test_corpus_*.py")) + [HERE / "test_numpy_corpus.py"]:
        spec = importlib.util.spec_from_file_location(f"_corpus_count_{path.stem}", path)
        assert spec is not None and spec.loader is not None
        mod = importlib.util.module_from_spec(spec)
        sys.modules[spec.name] = mod  # as an import would: its functions' import names lead to them
        spec.loader.exec_module(mod)
        mods.append(mod)
    return mods


# relative and absolute tolerance by precision: a fused kernel may round differently from
# numpy's sequence of ufuncs (numexpr's own exp/log/sin..., a float32 expression computed
# with double constants), by a few units in the last place
_TOLERANCE = {2: 2e-3, 4: 2e-5, 8: 1e-10, 16: 1e-12}


def tolerance(dtype: np.dtype) -> float:
    size = dtype.itemsize // 2 if dtype.kind == "c" else dtype.itemsize
    return _TOLERANCE[size]


def assert_close(got: Any, want: Any, path: str = "result") -> None:
    assert type(got) is type(want), f"{path}: type {type(got).__name__} != {type(want).__name__}"
    if isinstance(want, (np.ndarray, np.generic)):
        assert got.dtype == want.dtype, f"{path}: dtype {got.dtype} != {want.dtype}"
        assert np.shape(got) == np.shape(want), f"{path}: shape {np.shape(got)} != {np.shape(want)}"
        if want.dtype.kind in "fc":
            tol = tolerance(want.dtype)
            # scaled by the array's magnitude: a difference in the last place of a large
            # value is not one of a value near zero
            scale = float(np.max(np.abs(want[np.isfinite(want)]), initial=1.0)) if np.ndim(want) else 1.0
            np.testing.assert_allclose(got, want, rtol=tol, atol=tol * scale, err_msg=path)
        else:
            np.testing.assert_array_equal(got, want, err_msg=path)
    elif isinstance(want, (tuple, list)):
        assert len(got) == len(want), f"{path}: length {len(got)} != {len(want)}"
        if hasattr(want, "_fields"):
            assert got._fields == want._fields, path
        for i, (g, w) in enumerate(zip(got, want)):
            assert_close(g, w, f"{path}[{i}]")
    elif isinstance(want, dict):
        assert list(got) == list(want), f"{path}: keys {list(got)} != {list(want)}"
        for k in want:
            assert_close(got[k], want[k], f"{path}[{k!r}]")
    elif isinstance(want, (float, complex)):
        assert got == pytest.approx(want, rel=1e-10, abs=1e-12, nan_ok=True), f"{path}: {got!r} != {want!r}"
    else:
        assert got == want, f"{path}: {got!r} != {want!r}"
