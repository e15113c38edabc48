"""Per-call cost of a compiled check function with 1, 10 and 100 guards (ns per guard):
the C guard checker and the generated Python function side by side, and Dynamo's.

    python benchmarks/bench_guards.py            # framehook only (C and Python paths)
    python benchmarks/bench_guards.py --dynamo   # also Dynamo's guards (torch installed, CPython 3.11)
    python benchmarks/bench_guards.py --json out.json

Guard families, on a function of N arguments:

* ``int TYPE_MATCH``: TYPE_MATCH on N int locals;
* ``int EQUALS_MATCH``: EQUALS_MATCH on N int locals (type check and ==); Dynamo specializes
  int arguments with ``dynamic=False`` and guards each one the same way;
* ``NDARRAY_MATCH``: on N float32 (4, 4) arrays; Dynamo: TENSOR_MATCH on N (4, 4) tensors.

The Dynamo function uses every argument (``torch.ones(1) + (a0 + a1 + ...)``), so that each
one is guarded; the number of leaf guards in its guard tree is reported. Each figure is the
median of repeated timeit runs of the check function called on the same f_locals dict, the
way the runtime calls it on a cache hit (through a lambda: the call floor, reported, is
included in every figure). The paths of one row are timed in turn within each repetition.
"""

from __future__ import annotations

import argparse
import json
import re
import statistics
import sys
import timeit

import numpy as np

from framehook.translator.guards.builder import build_check_fn, c_checker_available
from framehook.translator.guards import GuardKind
from framehook.translator.guards.sources import LocalSource

SIZES = (1, 10, 100)
FAMILIES = {"int": "int TYPE_MATCH", "eq": "int EQUALS_MATCH", "array": "NDARRAY_MATCH"}


def median_ns(fn, arg, number=20000, repeat=15) -> float:
    times = timeit.repeat(lambda: fn(arg), number=number, repeat=repeat)
    return statistics.median(times) / number * 1e9


def interleaved_medians(calls, number=20000, repeat=15):
    """Median ns per call of each (fn, arg), timed in turn within each repetition, so that
    load changes on a shared machine hit all of them alike."""
    timers = [timeit.Timer(lambda fn=fn, arg=arg: fn(arg)) for fn, arg in calls]
    samples = [[] for _ in calls]
    for _ in range(repeat):
        for timer, out in zip(timers, samples):
            out.append(timer.timeit(number))
    return [statistics.median(out) / number * 1e9 for out in samples]


def framehook_check(kind: str, n: int, use_c: bool):
    if kind in ("int", "eq"):
        L = {f"a{i}": i for i in range(n)}
        gk = GuardKind.TYPE_MATCH if kind == "int" else GuardKind.EQUALS_MATCH
        guards = [LocalSource(k).make_guard(gk) for k in L]
    else:
        L = {f"a{i}": np.ones((4, 4), np.float32) for i in range(n)}
        guards = [LocalSource(k).make_guard(GuardKind.NDARRAY_MATCH) for k in L]
    fn = build_check_fn(guards, L, {}, use_c=use_c)
    assert (fn.c_guards is not None) == use_c  # type: ignore[attr-defined]
    assert fn(L)
    return fn, L


def dynamo_check(kind: str, n: int):
    import torch
    import torch._dynamo

    torch._dynamo.reset()
    names = [f"a{i}" for i in range(n)]
    # every argument is used, so that Dynamo guards every one (ints are specialized)
    src = f"def f({', '.join(names)}):\n    return torch.ones(1) + ({' + '.join(names)})\n"
    ns: dict = {"torch": torch}
    exec(src, ns)
    f = ns["f"]
    args = list(range(n)) if kind in ("int", "eq") else [torch.ones(4, 4) for _ in range(n)]
    opt = torch.compile(f, backend="eager", dynamic=False)
    opt(*args)
    entries = torch._dynamo.eval_frame._debug_get_cache_entry_list(f.__code__)
    entry = entries[0]
    manager = getattr(entry, "guard_manager", None) or entry.check_fn
    L = dict(zip(names, args))
    check = getattr(manager, "check", manager)
    assert check(L)
    leaves = len(re.findall(r"\+- [A-Z_]+:", str(manager)))
    return check, L, leaves


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--dynamo", action="store_true", help="also measure Dynamo (needs torch)")
    parser.add_argument("--json", help="write the figures here")
    parser.add_argument("--repeat", type=int, default=15)
    args = parser.parse_args()
    floor = median_ns(lambda L: True, {}, repeat=args.repeat)
    print(f"CPython {sys.version.split()[0]}, numpy {np.__version__}; call floor {floor:.0f} ns")
    have_c = c_checker_available()
    if not have_c:
        print("C guard checker not available (runtime without GuardChecker): Python path only")
    have_dynamo = False
    if args.dynamo:
        try:
            import torch

            have_dynamo = True
            print(f"torch {torch.__version__}")
        except ImportError:
            print("Dynamo comparison skipped: torch is not installed (pip install torch==2.13.0 on CPython 3.11)")
    header = f"{'guards':<24}{'C ns/call':>10}{'ns/guard':>9}{'Py ns/call':>11}{'ns/guard':>9}{'Py/C':>6}"
    if have_dynamo:
        header += f"{'dyn ns/call':>12}{'ns/guard':>9}{'leaves':>7}{'C/dyn':>7}{'Py/dyn':>7}"
    print(header)
    rows = []
    for kind in FAMILIES:
        for n in SIZES:
            row = {"family": FAMILIES[kind], "n": n}
            line = f"{f'{n} x {FAMILIES[kind]}':<24}"
            calls = [framehook_check(kind, n, False)]
            if have_c:
                calls.append(framehook_check(kind, n, True))
            if have_dynamo:
                dfn, dL, leaves = dynamo_check(kind, n)
                calls.append((dfn, dL))
                row["dynamo_leaves"] = leaves
            figures = interleaved_medians(calls, repeat=args.repeat)
            row["py"] = figures[0]
            if have_c:
                row["c"] = figures[1]
                line += f"{row['c']:>10.0f}{row['c'] / n:>9.1f}"
            else:
                line += f"{'-':>10}{'-':>9}"
            line += f"{row['py']:>11.0f}{row['py'] / n:>9.1f}"
            line += f"{row['py'] / row['c']:>6.1f}" if have_c else f"{'-':>6}"
            if have_dynamo:
                row["dynamo"] = figures[-1]
                line += f"{row['dynamo']:>12.0f}{row['dynamo'] / n:>9.1f}{leaves:>7}"
                line += f"{row['c'] / row['dynamo']:>7.2f}" if have_c else f"{'-':>7}"
                line += f"{row['py'] / row['dynamo']:>7.2f}"
            print(line, flush=True)
            rows.append(row)
    if args.json:
        with open(args.json, "w") as fh:
            json.dump({"python": sys.version.split()[0], "floor": floor, "rows": rows}, fh, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
