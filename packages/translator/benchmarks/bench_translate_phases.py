"""Where a first call's translation time goes, phase by phase, on the tuned NPBench-class kernels.

    PYTHONPATH=packages/translator/src python packages/translator/benchmarks/bench_translate_phases.py \
        [--only KERNEL ...] [--cpu]

One process translates each tuned kernel once (``optimize("eager")(fn)(*args)`` after
``reset()``; a warm-up kernel first, so the process's one-time work is not counted), the way
a new process meets each function the first time (the translator's per-code caches survive
``reset()``, so a second pass would not be a first call). Prints one JSON line: the time of
each phase summed over the kernels, in ms, and the number of calls.

The phases are read by wrapping internal functions in this process only (clearly-internal
timing: the names below may move with the code; a phase whose function is gone reports
nothing): ``convert`` (the whole translation of one frame, ``ConvertFrame._convert``),
``decode`` (bytecode to instructions, by the interpreter and again by the output-code
transform), ``proxies`` (running operations on proxies for their result metadata),
``compile_graph`` (a graph's Python source and its ``compile``), ``output_code``
(the replacement bytecode) and ``guards`` (building the check function). Phases nest
(``proxies`` is inside ``convert``), so they do not add up. ``--cpu`` reads this thread's CPU
time instead of the wall clock (less disturbed by a shared machine; numpy's BLAS threads are
then left out). The unseen kernels are never run.
"""

from __future__ import annotations

import argparse
import collections
import copy
import json
import sys
import time
from pathlib import Path
from typing import Any, Callable, Dict

sys.path.insert(0, str(Path(__file__).resolve().parent))
import npbench_kernels  # noqa: E402

import framehook.translator as ft  # noqa: E402

# phase -> (module, attribute) of the functions wrapped; a module path relative to the package
PHASES = {
    "convert": [("conversion.convert_frame", "ConvertFrame._convert")],
    "decode": [("symbolic.interpreter", "decode"), ("bytecode.transform", "decode")],
    "proxies": [("symbolic.numpy_support", "run_on_proxies")],
    "compile_graph": [("graph.ir", "_compile_graph")],
    "output_code": [("symbolic.translator", "make_output_code")],
    "guards": [("conversion.convert_frame", "build_check_fn")],
}


def _wrap(totals: Dict[str, float], counts: Dict[str, int], clock: Callable[[], float]) -> None:
    import importlib

    for phase, places in PHASES.items():
        for module_name, attr in places:
            try:
                module = importlib.import_module(f"framehook.translator.{module_name}")
            except ImportError:
                continue
            owner: Any = module
            *path, name = attr.split(".")
            for part in path:
                owner = getattr(owner, part, None)
            inner = getattr(owner, name, None) if owner is not None else None
            if inner is None:
                continue

            def timed(*args: Any, _inner: Any = inner, _phase: str = phase, **kwargs: Any) -> Any:
                start = clock()
                try:
                    return _inner(*args, **kwargs)
                finally:
                    totals[_phase] += clock() - start
                    counts[_phase] += 1

            setattr(owner, name, timed)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--only", nargs="*", default=[], help="tuned kernels to run (default: all)")
    parser.add_argument("--cpu", action="store_true", help="this thread's CPU time instead of the wall clock")
    opts = parser.parse_args()
    kernels = [k for k in npbench_kernels.corpus() if not k.unseen]
    unknown = set(opts.only) - {k.name for k in kernels}
    if unknown:
        parser.error(f"--only: not a tuned kernel: {', '.join(sorted(unknown))}")
    totals: Dict[str, float] = collections.defaultdict(float)
    counts: Dict[str, int] = collections.defaultdict(int)
    warm = kernels[0]
    ft.optimize("eager")(warm.fn)(*copy.deepcopy(warm.args))  # one-time work of the process
    ft.reset()
    _wrap(totals, counts, time.thread_time if opts.cpu else time.perf_counter)
    ran = 0
    for k in kernels:
        if opts.only and k.name not in opts.only:
            continue
        ft.reset()
        ft.optimize("eager")(k.fn)(*copy.deepcopy(k.args))
        ran += 1
    ft.reset()
    out = {"python": sys.version.split()[0], "kernels": ran, "clock": "thread cpu" if opts.cpu else "wall"}
    out.update({p: {"ms": round(totals[p] * 1e3, 2), "calls": counts[p]} for p in PHASES if counts[p]})
    print(json.dumps(out))


if __name__ == "__main__":
    main()
