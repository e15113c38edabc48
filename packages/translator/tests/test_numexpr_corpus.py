"""Every corpus case (test_numpy_corpus.py and the test_corpus_<area>.py modules, read
through corpus_helpers.corpus_modules) under the numexpr backend -- the registered one
(default categories) and one fusing every category -- agrees with plain numpy within a
tolerance set by the result's dtype: same outcome, types, dtypes and shapes, integers and
booleans exact, inexact values close. Calls follow run_case: the first call, a cache hit,
the recompiling calls, the first call again."""

from __future__ import annotations

from typing import Any

import pytest

import framehook.translator as ft
from corpus_helpers import assert_close, corpus_modules
from framehook.translator.backends import numexpr as bn
from symbolic_helpers import outcome

CASES = [(m.__name__.replace("_corpus_count_", ""), case) for m in corpus_modules() for case in m.CORPUS]


def _counting_backend(categories: Any, kernels: list) -> Any:
    """The numexpr backend of ``categories`` (None: the registered one), noting the kernels it plans."""
    backend = ft.lookup_backend("numexpr") if categories is None else bn.make_numexpr_backend(categories)

    def numexpr_counted(graph: Any, example_inputs: Any) -> Any:
        compiled = backend(graph, example_inputs)
        fused = getattr(compiled, "fused_graph", None)
        kernels.extend(fused.meta["fused_kernels"] if fused is not None else [])
        return compiled

    return numexpr_counted


def run_under_numexpr(fn: Any, calls: Any, categories: Any) -> list:
    """Each call of the corpus schedule, plain and under numexpr; the kernels planned."""
    kernels: list = []
    ft.reset()
    opt = ft.optimize(_counting_backend(categories, kernels))(fn)
    try:
        for call in [calls[0], calls[0], *calls[1:], calls[0]]:
            args, kwargs = (
                call if len(call) == 2 and isinstance(call[0], tuple) and isinstance(call[1], dict) else (call, {})
            )
            want = outcome(fn, args, kwargs)
            got = outcome(opt, args, kwargs)
            assert got[0] == want[0], (
                f"{fn.__name__}: plain {want[0]}s {want[1]!r:.200}, numexpr {got[0]}s {got[1]!r:.200}"
            )
            if want[0] == "raise":
                assert got[1] == want[1]
            else:
                assert_close(got[1], want[1])
            assert_close(got[2], want[2], "arguments after the call")
    finally:
        ft.reset()
    return kernels


@pytest.mark.parametrize("categories", [None, bn.CATEGORIES], ids=["default", "all"])
@pytest.mark.parametrize("module,case", CASES, ids=[f"{m}.{c[0].__name__}" for m, c in CASES])
def test_corpus_case_agrees_under_numexpr(module, case, categories, capsys):
    pytest.importorskip("numexpr", reason="numexpr is not installed (pip install 'framehook-translator[numexpr]')")
    run_under_numexpr(case[0], case[1], categories)
    capsys.readouterr()


def test_the_corpus_is_all_there():
    # the case list is the corpus modules' own: the 150 functions test_corpus_size counts
    assert len(CASES) >= 150
    assert {m for m, _ in CASES} >= {"test_numpy_corpus", "test_corpus_finance", "test_corpus_physics"}


@pytest.mark.parametrize("categories", [None, bn.CATEGORIES], ids=["default", "all"])
def test_the_agreement_is_not_vacuous(categories, capsys):
    # elementwise corpus cases do run through numexpr kernels in both configurations
    pytest.importorskip("numexpr", reason="numexpr is not installed")
    by_name = {case[0].__name__: case for _, case in CASES}
    for name in ("black_scholes_call", "gelu", "smooth_abs"):
        kernels = run_under_numexpr(by_name[name][0], by_name[name][1], categories)
        assert kernels and all(isinstance(k, bn.FusedKernel) for k in kernels), name
    capsys.readouterr()
