"""This checkout's translator against another revision's, side by side, on the NPBench-class
kernels: first calls (translation, and compilation under numba) and steady state.

    python packages/translator/benchmarks/bench_versus.py --base REV [--rounds N]
        [--backend eager --backend numba] [--only KERNEL ...]

The base revision's ``packages/translator/src`` is taken with ``git archive`` into a
temporary directory; each round runs one fresh worker process per side and backend, the
two sides in alternating order, through the public API only (``optimize``, ``reset``), so
revisions with another internal layout compare alike. A worker times each kernel's first
call (``optimize(backend)(fn)(*args)`` after ``reset()``) and its steady state (the median
of 5 timings of enough calls to last about 10 ms). The tables give, per kernel, the
median over rounds of each side and the ratio this / base, with the geometric mean and
the worst ratio; a load change on a shared machine hits both sides of a round alike.
Nothing is asserted: the figures go to BENCHMARKS.md.
"""

from __future__ import annotations

import argparse
import copy
import json
import math
import os
import statistics
import subprocess
import sys
import tarfile
import tempfile
import time
import timeit
from pathlib import Path

HERE = Path(__file__).resolve().parent
REPO = HERE.parents[2]
THIS_SRC = REPO / "packages" / "translator" / "src"


def _worker(backend: str, only: list) -> None:
    sys.path.insert(0, str(HERE))
    import framehook.translator as ft
    import npbench_kernels

    if backend == "numba":
        import numba  # noqa: F401 - its import is no kernel's first call

        if "numba_background" in ft.config.to_dict():  # compile in the first call, as before it
            ft.config.numba_background = False

    out = {}
    for name, fn, _hand, args in npbench_kernels.kernels():
        if only and name not in only:
            continue
        ft.reset()
        opt = ft.optimize(backend)(fn)
        start = time.perf_counter()
        opt(*copy.deepcopy(args))
        first = time.perf_counter() - start
        opt(*copy.deepcopy(args))
        fresh = [copy.deepcopy(args) for _ in range(64)]
        one = timeit.timeit(lambda: opt(*fresh[0]), number=1)
        number = max(1, min(len(fresh), int(0.01 / max(one, 1e-7))))
        times = []
        for _ in range(5):
            start = time.perf_counter()
            for k in range(number):
                opt(*fresh[k])
            times.append((time.perf_counter() - start) / number)
        out[name] = {"first": first, "steady": statistics.median(times)}
        ft.reset()
    print(json.dumps(out))


def _export(rev: str, into: Path) -> Path:
    archive = subprocess.run(
        ["git", "-C", str(REPO), "archive", "--format=tar", rev, "packages/translator/src"],
        check=True,
        capture_output=True,
    ).stdout
    tar_path = into / "base.tar"
    tar_path.write_bytes(archive)
    with tarfile.open(tar_path) as tar:
        try:
            tar.extractall(into, filter="data")  # plain files only
        except TypeError:  # a CPython without extraction filters
            tar.extractall(into)
    return into / "packages" / "translator" / "src"


def _run_side(src: Path, backend: str, only: list) -> dict:
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(src), str(HERE)]))
    cmd = [sys.executable, str(Path(__file__).resolve()), "--worker", "--backend", backend]
    if only:
        cmd += ["--only", *only]
    done = subprocess.run(cmd, env=env, check=True, capture_output=True, text=True)
    return json.loads(done.stdout.strip().splitlines()[-1])


def _geomean(values: list) -> float:
    return math.exp(sum(math.log(v) for v in values) / len(values)) if values else float("nan")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--base", help="the revision to compare with (a commit, tag or branch)")
    ap.add_argument("--rounds", type=int, default=3, help="fresh workers per side and backend (default 3)")
    ap.add_argument("--backend", action="append", help="eager, numexpr or numba (default: eager and numba)")
    ap.add_argument("--only", nargs="*", default=[], help="kernels to run (default: all)")
    ap.add_argument("--worker", action="store_true", help=argparse.SUPPRESS)
    opts = ap.parse_args()
    backends = opts.backend or ["eager", "numba"]
    if opts.worker:
        _worker(backends[0], opts.only)
        return
    if not opts.base:
        ap.error("--base: give the revision to compare with, e.g. --base HEAD~3")
    if opts.rounds < 1:
        ap.error(f"--rounds: expected a positive number of rounds, got {opts.rounds}")
    with tempfile.TemporaryDirectory() as tmp:
        base_src = _export(opts.base, Path(tmp))
        sides = {"base": base_src, "this": THIS_SRC}
        for backend in backends:
            runs: dict = {"base": [], "this": []}
            for r in range(opts.rounds):
                order = ("base", "this") if r % 2 == 0 else ("this", "base")
                for side in order:
                    runs[side].append(_run_side(sides[side], backend, opts.only))
            _table(opts.base, backend, runs)


def _table(base: str, backend: str, runs: dict) -> None:
    names = list(runs["this"][0])
    print(f"\n### {backend}: this checkout / {base}, medians of {len(runs['this'])} fresh workers each\n")
    print("| kernel | first base ms | first this / base | steady base ms | steady this / base |")
    print("|---|---|---|---|---|")
    firsts, steadies = [], []
    for name in names:
        med = {
            side: {key: statistics.median(run[name][key] for run in runs[side]) for key in ("first", "steady")}
            for side in runs
        }
        f = med["this"]["first"] / med["base"]["first"]
        s = med["this"]["steady"] / med["base"]["steady"]
        firsts.append((f, name))
        steadies.append((s, name))
        print(f"| {name} | {med['base']['first'] * 1e3:.1f} | {f:.2f} | {med['base']['steady'] * 1e3:.3f} | {s:.2f} |")
    print(
        f"| geomean | | {_geomean([f for f, _ in firsts]):.2f} | | {_geomean([s for s, _ in steadies]):.2f} |\n"
        f"\nworst first call: {max(firsts)[1]} {max(firsts)[0]:.2f}; worst steady: {max(steadies)[1]} "
        f"{max(steadies)[0]:.2f}"
    )


if __name__ == "__main__":
    main()
