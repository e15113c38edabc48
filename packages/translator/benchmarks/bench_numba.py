"""The numba backend against plain numpy and the eager backend, in one run.

    python packages/translator/benchmarks/bench_numba.py [--repeat N] [--skip-corpus] [--first N]
        [--only KERNEL ...] [--parallel] [--no-fuse]

Prints three markdown tables:

1. the test corpus (``calls[0]`` of every case, small inputs): steady-state time per call of
   plain numpy, ``optimize("eager")`` and ``optimize("numba")``, as geometric means of the
   ratios to plain, and how many cases numba compiled or ran eager (FH016, by reason);
2. loop-heavy kernels (the triangular nests of bench_triangular.py, a stencil with a time
   loop, an explicit-loop reduction): plain, eager, numba, each kernel's ratios;
3. first calls in fresh processes: cold (empty numba cache) and warm (the cache the cold run
   filled), median and maximum over the loop-heavy kernels, with numba's share.

``--parallel`` compiles with numba's ``parallel=True`` (the lowered loops' independent rows
under ``prange``), ``--no-fuse`` without the loop lowering of ``numba_fusion``: both only
to measure the backend's choices.

Steady state: plain and the optimized functions alternate, each the median of ``--repeat``
timeit repeats of enough calls to last about 20 ms. Nothing here is asserted: the figures
go to BENCHMARKS.md.
"""

from __future__ import annotations

import argparse
import copy
import importlib.util
import json
import math
import os
import platform
import statistics
import subprocess
import sys
import tempfile
import time
import warnings
from collections import Counter
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
TESTS = HERE.parent / "tests"
sys.path.insert(0, str(HERE))
import npbench_kernels  # noqa: E402


def _load(path: Path, name: str):
    spec = importlib.util.spec_from_file_location(name, path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def loop_kernels():
    """(label, numpy function, arguments) of the NPBench-class kernels."""
    return [(name, fn, args) for name, fn, _, args in npbench_kernels.kernels()]


def _time(fn, args, number):
    """Seconds a call, each call on fresh copies of the arguments (kernels write them)."""
    total = 0.0
    for _ in range(number):
        fresh = copy.deepcopy(args)
        start = time.perf_counter()
        fn(*fresh)
        total += time.perf_counter() - start
    return total / number


def _warm(opt, args):
    from framehook.translator import config

    for _ in range(2 * config.numba_measure_calls + 2):  # past the backend's measuring calls
        opt(*copy.deepcopy(args))


def steady(fn, args, repeat):
    """Median seconds per call: plain, eager and numba. The translator caches per code
    object, whatever the backend: each backend gets the function afresh (reset between)."""
    import framehook.translator as ft

    number = max(1, int(0.02 / max(_time(fn, args, 1), 1e-7)))
    t = {"plain": [], "eager": [], "numba": []}
    for backend in ("eager", "numba"):
        ft.reset()
        opt = ft.optimize(backend)(fn)
        _warm(opt, args)
        for _ in range(repeat):  # alternate so that machine noise hits both alike
            t["plain"].append(_time(fn, args, number))
            t[backend].append(_time(opt, args, number))
    ft.reset()
    return {k: statistics.median(v) for k, v in t.items()}


def geomean(xs):
    return math.exp(sum(math.log(x) for x in xs) / len(xs)) if xs else float("nan")


def corpus_table(repeat):
    sys.path.insert(0, str(TESTS))
    from corpus_helpers import corpus_modules
    from framehook.translator.backends import numba as bnb

    cases = [case for m in corpus_modules() for case in m.CORPUS]
    notes = []
    bnb.add_note_observer(notes.append)
    rows, status = [], Counter()
    for case in cases:
        fn, calls = case[0], case[1]
        call = calls[0]
        args, kwargs = (
            call if len(call) == 2 and isinstance(call[0], tuple) and isinstance(call[1], dict) else (call, {})
        )
        if kwargs:
            continue
        before = len(notes)
        try:
            row = steady(fn, args, repeat)
        except Exception as e:  # a case that raises by design: its outcome is the test's business
            status[f"raises ({type(e).__name__})"] += 1
            continue
        mine = notes[before:]
        if any(n.status == "compiled" for n in mine):
            status["numba compiled"] += 1
        elif mine:
            status["FH016: " + mine[0].reason.split(":")[0].split(" (")[0]] += 1
        else:
            status["no graph op"] += 1
        rows.append((fn.__name__, row))
    bnb.remove_note_observer(notes.append)
    print(f"\n### Test corpus, {len(rows)} cases (calls[0]), median of {repeat}\n")
    print("| | eager / plain | numba / plain |\n|---|---|---|")
    print(
        f"| geomean | {geomean([r['eager'] / r['plain'] for _, r in rows]):.2f} "
        f"| {geomean([r['numba'] / r['plain'] for _, r in rows]):.2f} |"
    )
    compiled = [r for name, r in rows]
    print("\nnumba outcome per case: " + ", ".join(f"{k} {v}" for k, v in status.most_common()))
    fastest = sorted(rows, key=lambda x: x[1]["numba"] / x[1]["plain"])
    print("\nbest numba/plain: " + ", ".join(f"{n} {r['numba'] / r['plain']:.2f}" for n, r in fastest[:5]))
    print("worst numba/plain: " + ", ".join(f"{n} {r['numba'] / r['plain']:.2f}" for n, r in fastest[-5:]))
    return compiled


def _agrees(a, b):
    if isinstance(a, tuple):
        return all(_agrees(x, y) for x, y in zip(a, b))
    return np.allclose(a, b, equal_nan=True)


def kernel_table(repeat, only=None):
    """NPBench-class kernels: plain numpy, captured and compiled (numba backend), the same
    kernel hand-written for numba; medians of ``repeat`` alternating rounds."""
    import numba
    import framehook.translator as ft
    from framehook.translator.backends import numba as bnb

    notes = []
    bnb.add_note_observer(notes.append)
    rows = []
    for name, fn, hand_fn, args in npbench_kernels.kernels():
        if only and name not in only:
            continue
        hand = numba.njit(hand_fn)
        ft.reset()
        before = len(notes)
        opt = ft.optimize("numba")(fn)
        _warm(opt, args)
        hand(*copy.deepcopy(args))
        ok = _agrees(opt(*copy.deepcopy(args)), fn(*copy.deepcopy(args))) and _agrees(
            hand(*copy.deepcopy(args)), fn(*copy.deepcopy(args))
        )
        number = max(1, int(0.02 / max(_time(fn, args, 1), 1e-7)))
        t = {"plain": [], "numba": [], "hand": []}
        for _ in range(repeat):
            for key, f in (("plain", fn), ("numba", opt), ("hand", hand)):
                t[key].append(_time(f, args, number))
        r = {k: statistics.median(v) for k, v in t.items()}
        mine = notes[before:]
        state = ("numba" if any(n.status == "compiled" for n in mine) else "") + "".join(
            f"; eager: {n.reason.split(' (')[0]}" for n in mine if n.status == "fallback"
        )
        rows.append((name, r, state.lstrip("; ") or "no graph", ok))
        ft.reset()
    bnb.remove_note_observer(notes.append)
    print(f"\n### NPBench-class kernels, median of {repeat} rounds (plain, captured, hand-written alternating)\n")
    print("| kernel | plain | numba / plain | hand-written / plain | captured / hand-written | graphs |")
    print("|---|---|---|---|---|---|")
    for name, r, state, ok in rows:
        print(
            f"| {name} | {r['plain'] * 1e3:.2f} ms | {r['numba'] / r['plain']:.2f} | {r['hand'] / r['plain']:.2f} "
            f"| {r['numba'] / r['hand']:.2f} | {state}{'' if ok else ' MISMATCH'} |"
        )
    ratios = [r["numba"] / r["plain"] for _, r, _, _ in rows]
    print(
        f"| geomean | | {geomean(ratios):.2f} | {geomean([r['hand'] / r['plain'] for _, r, _, _ in rows]):.2f} "
        f"| {geomean([r['numba'] / r['hand'] for _, r, _, _ in rows]):.2f} | |"
    )
    print(
        f"\nmax numba / plain: {max(ratios):.2f}; kernels over 1.2x: "
        f"{[n for n, r, _, _ in rows if r['numba'] / r['plain'] > 1.2]}"
    )


def _first_worker():
    """One fresh process: each loop kernel's first call under numba (trace + compile + run)."""
    import framehook.translator as ft
    from framehook.translator.backends import numba as bnb
    import numba  # noqa: F401 - its import is not part of any kernel's first call

    notes = []
    bnb.add_note_observer(notes.append)
    out = []
    for label, fn, args in loop_kernels():
        ft.reset()
        before = len(notes)
        start = time.perf_counter()
        ft.optimize("numba")(fn)(*copy.deepcopy(args))
        total = time.perf_counter() - start
        mine = notes[before:]
        out.append(
            {
                "label": label,
                "first": total,
                "numba": sum(n.numba_seconds for n in mine),
                "compiled": sum(n.status == "compiled" for n in mine),
                "fallback": [n.reason for n in mine if n.status == "fallback"],
            }
        )
    print(json.dumps(out))


def first_call_table(runs):
    cache = tempfile.mkdtemp(prefix="fh-numba-bench-")
    env = dict(os.environ, FRAMEHOOK_NUMBA_CACHE_DIR=cache, PYTHONPATH=os.pathsep.join(p for p in sys.path if p))
    results = {"cold": [], "warm": []}
    for i in range(runs):
        for kind in ("cold", "warm"):
            if kind == "cold":
                subprocess.run(["rm", "-rf", cache], check=True)
            done = subprocess.run(
                [sys.executable, __file__, "--first-worker"], env=env, capture_output=True, text=True, check=True
            )
            results[kind].append(json.loads(done.stdout.strip().splitlines()[-1]))
    print(f"\n### First call in a fresh process, {runs} runs (numba imported beforehand)\n")
    print("| | cold median | cold max | warm median | warm max | numba share cold / warm |\n|---|---|---|---|---|---|")
    labels = [r["label"] for r in results["cold"][0]]
    for j, label in enumerate(labels):
        c = [run[j]["first"] for run in results["cold"]]
        w = [run[j]["first"] for run in results["warm"]]
        cn = statistics.median(run[j]["numba"] for run in results["cold"])
        wn = statistics.median(run[j]["numba"] for run in results["warm"])
        print(
            f"| {label} | {statistics.median(c) * 1e3:.0f} ms | {max(c) * 1e3:.0f} ms "
            f"| {statistics.median(w) * 1e3:.0f} ms | {max(w) * 1e3:.0f} ms "
            f"| {cn * 1e3:.0f} / {wn * 1e3:.0f} ms |"
        )
    allc = [r["first"] for run in results["cold"] for r in run]
    allw = [r["first"] for run in results["warm"] for r in run]
    print(
        f"| all kernels | {statistics.median(allc) * 1e3:.0f} ms | {max(allc) * 1e3:.0f} ms "
        f"| {statistics.median(allw) * 1e3:.0f} ms | {max(allw) * 1e3:.0f} ms | |"
    )
    falls = {r["label"]: r["fallback"] for r in results["cold"][0] if r["fallback"]}
    if falls:
        print("\nFH016 fallbacks: " + "; ".join(f"{k}: {v}" for k, v in falls.items()))
    subprocess.run(["rm", "-rf", cache], check=True)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--first", type=int, default=3, help="fresh-process runs for the first-call table")
    ap.add_argument("--skip-corpus", action="store_true")
    ap.add_argument("--only", nargs="*", help="kernels to run (default: all)")
    ap.add_argument("--parallel", action="store_true", help="compile with parallel=True and prange")
    ap.add_argument("--no-fuse", action="store_true", help="without the loop lowering (numba_fusion)")
    ap.add_argument("--first-worker", action="store_true", help=argparse.SUPPRESS)
    opts = ap.parse_args()
    warnings.simplefilter("ignore")
    from framehook.translator.backends import numba as bnb

    bnb.PARALLEL = opts.parallel
    bnb.FUSE = not opts.no_fuse
    if opts.first_worker:
        _first_worker()
        return
    import numba

    print(
        f"Python {platform.python_version()}, numpy {np.__version__}, numba {numba.__version__}, "
        f"{os.cpu_count()} cores; numba cache in {os.environ.get('FRAMEHOOK_NUMBA_CACHE_DIR', 'the default')}"
        f"{'; parallel=True' if opts.parallel else ''}{'; no loop lowering' if opts.no_fuse else ''}"
    )
    if not opts.skip_corpus:
        corpus_table(opts.repeat)
    kernel_table(opts.repeat, opts.only)
    if opts.first:
        first_call_table(opts.first)


if __name__ == "__main__":
    main()
