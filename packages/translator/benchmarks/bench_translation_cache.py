"""The translation cache over broad corpora: how many first calls it serves, and what a
served first call costs against a translated one, side by side in one process.

    PYTHONPATH=packages/translator/src python packages/translator/benchmarks/bench_translation_cache.py \
        [--rounds N] [--backend eager|numba] [--filter REGEX]

Corpora: the translator's test corpus (bench_corpus's cases, written as users' code across
finance, geometry, images, linear algebra, ML, physics, signal and statistics) and the
NPBench-class kernels of npbench_kernels.py. Per case, with ``config.translation_cache_dir``
set to a fresh directory: one first call fills the cache (a translation, kept when it has a
portable form), then ``--rounds`` rounds each time one first call translating (the cache
directory unset) and one loading (set), alternately, every one after ``reset()``, so that
both meet the same machine state, timed from wrapping the function (``optimize()`` reads its
kept translations ahead of the call) to the call's return. Plain's own first call is not
part of it: this measures what the cache takes off the translator's share. A loaded call's result must equal plain's.

Prints how many cases keep a translation, how many of those a later first call loads (in
parentheses: where the function's own frame is loaded, not only a function resuming after
one of its graph breaks), every mismatch, and the medians and geometric mean of loaded / translated first calls.
Nothing is asserted: the figures go to BENCHMARKS.md.
"""

from __future__ import annotations

import argparse
import contextlib
import copy
import gc
import io
import math
import re
import statistics
import sys
import tempfile
import time
import warnings
from pathlib import Path
from typing import Any, Callable, Dict, List, Tuple

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
import bench_corpus as bc  # noqa: E402
import npbench_kernels  # noqa: E402

import framehook.translator as ft  # noqa: E402
from framehook.translator.conversion import translation_cache  # noqa: E402


def _same(a: Any, b: Any) -> bool:
    if isinstance(a, np.ndarray) or isinstance(b, np.ndarray):
        return np.asarray(a).shape == np.asarray(b).shape and np.allclose(a, b, equal_nan=True)
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(_same(a[k], b[k]) for k in a)
    if isinstance(a, (tuple, list)) and isinstance(b, (tuple, list)):
        return len(a) == len(b) and all(_same(x, y) for x, y in zip(a, b))
    if isinstance(a, float) and isinstance(b, float):
        return a == b or (math.isnan(a) and math.isnan(b)) or math.isclose(a, b, rel_tol=1e-9)
    try:
        return bool(a == b)
    except Exception:  # noqa: BLE001 - incomparable values count as a mismatch
        return False


def _first(fn: Callable[..., Any], args: tuple, backend: str, directory: Any) -> Tuple[float, Any, Dict[str, int]]:
    ft.reset()
    gc.collect()
    before = dict(translation_cache.counts)
    with ft.config.patch(translation_cache_dir=directory):
        call_args = copy.deepcopy(args)
        start = time.perf_counter()  # wrapping included: optimize() reads the kept translations ahead
        opt = ft.optimize(backend)(fn)
        out = opt(*call_args)
        took = time.perf_counter() - start
    return took, out, {k: translation_cache.counts[k] - before[k] for k in before}


def cases(pattern: str) -> List[Tuple[str, str, Callable[..., Any], tuple]]:
    found = [("test corpus", c.name, c.fn, c.args) for c in bc.load_cases(None)]
    found += [("kernels", k.name, k.fn, k.args) for k in npbench_kernels.corpus()]
    return [c for c in found if re.search(pattern, f"{c[0]}/{c[1]}")]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--backend", default="eager", choices=("eager", "numba"))
    ap.add_argument("--filter", default="", help="regular expression searched in 'corpus/name'")
    opts = ap.parse_args()
    warnings.simplefilter("ignore")
    rows: List[Dict[str, Any]] = []
    with contextlib.redirect_stdout(io.StringIO()):  # some corpus functions print
        bc.fixed_cost(3, 0.001)  # first-use imports of the translator, as bench_corpus does
        for corpus, name, fn, args in cases(opts.filter):
            directory = tempfile.mkdtemp(prefix="fh-translations-")
            plain = fn(*copy.deepcopy(args))
            _, _, filled = _first(fn, args, opts.backend, directory)
            translated, loaded, hits, whole, same = [], [], 0, True, True
            for _ in range(opts.rounds):
                t, _, _ = _first(fn, args, opts.backend, None)
                translated.append(t)
                t, out, counts = _first(fn, args, opts.backend, directory)
                loaded.append(t)
                hits = max(hits, counts["hits"])
                whole = whole and (ft.last_decisions(fn) or {}).get("origin") == "loaded"
                same = same and _same(out, plain)
            rows.append(
                {
                    "corpus": corpus,
                    "name": name,
                    "kept": filled["saved"] > 0,
                    "not_portable": filled["not_portable"],
                    "loaded": hits > 0,
                    "whole": whole,
                    "same": same,
                    "translated": statistics.median(translated),
                    "loaded_time": statistics.median(loaded),
                }
            )
    ft.reset()
    print(f"Python {sys.version.split()[0]}, numpy {np.__version__}, backend {opts.backend}, {opts.rounds} rounds\n")
    print(
        "| corpus | cases | kept | loaded by a later first call (the function's own frame) "
        "| results equal to plain | first call translated, median | loaded, median "
        "| loaded / translated, geomean |"
    )
    print("|---|---|---|---|---|---|---|---|")
    for corpus in ("test corpus", "kernels"):
        sel = [r for r in rows if r["corpus"] == corpus]
        if not sel:
            continue
        served = [r for r in sel if r["loaded"]]
        geo = (
            math.exp(statistics.mean(math.log(r["loaded_time"] / r["translated"]) for r in served))
            if served
            else float("nan")
        )
        print(
            f"| {corpus} | {len(sel)} | {sum(r['kept'] for r in sel)} "
            f"| {len(served)} ({sum(r['whole'] for r in sel)}) "
            f"| {sum(r['same'] for r in sel)} | {statistics.median(r['translated'] for r in sel) * 1e3:.2f} ms "
            f"| {statistics.median(r['loaded_time'] for r in served) * 1e3 if served else float('nan'):.2f} ms "
            f"| {geo:.2f} |"
        )
    missing = [f"{r['corpus']}/{r['name']}" for r in rows if not r["loaded"]]
    print(f"\nnot served from the cache ({len(missing)}): {', '.join(missing) or '-'}")
    wrong = [f"{r['corpus']}/{r['name']}" for r in rows if not r["same"]]
    print(f"results differing from plain: {', '.join(wrong) or 'none'}")


if __name__ == "__main__":
    main()
