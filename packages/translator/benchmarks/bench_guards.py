"""Per-call cost of a compiled check function with 1, 10 and 100 guards (ns per guard).

    python benchmarks/bench_guards.py            # framehook only
    python benchmarks/bench_guards.py --dynamo   # also Dynamo's guards (torch installed, CPython 3.11)

Two guard families: TYPE_MATCH on N int locals, and NDARRAY_MATCH on N arrays (Dynamo:
TENSOR_MATCH on N tensors, its guards on N int arguments). Each figure is the median of
repeated timeit runs of the check function called on the same f_locals dict, the way the
runtime calls it on a cache hit; the empty-function floor is reported alongside.
"""
from __future__ import annotations

import argparse
import statistics
import sys
import timeit

import numpy as np

from framehook.translator.guard_builder import build_check_fn
from framehook.translator.guards import GuardKind
from framehook.translator.sources import LocalSource

SIZES = (1, 10, 100)


def median_ns(fn, arg, number=20000, repeat=15) -> float:
    times = timeit.repeat(lambda: fn(arg), number=number, repeat=repeat)
    return statistics.median(times) / number * 1e9


def framehook_check(kind: str, n: int):
    if kind == "int":
        L = {f"a{i}": i for i in range(n)}
        guards = [LocalSource(k).make_guard(GuardKind.TYPE_MATCH) for k in L]
    else:
        L = {f"a{i}": np.ones((4, 4), np.float32) for i in range(n)}
        guards = [LocalSource(k).make_guard(GuardKind.NDARRAY_MATCH) for k in L]
    fn = build_check_fn(guards, L, {})
    assert fn(L)
    return fn, L


def dynamo_check(kind: str, n: int):
    import torch
    import torch._dynamo

    torch._dynamo.reset()
    names = [f"a{i}" for i in range(n)]
    # a tensor op so that Dynamo compiles the frame; the int arguments are specialized (guarded)
    src = f"def f({', '.join(names)}):\n    return torch.ones(1) + a0\n"
    ns: dict = {"torch": torch}
    exec(src, ns)
    f = ns["f"]
    if kind == "int":
        args = list(range(n))
    else:
        args = [torch.ones(4, 4) for _ in range(n)]
    opt = torch.compile(f, backend="eager", dynamic=False)
    opt(*args)
    entries = torch._dynamo.eval_frame._debug_get_cache_entry_list(f.__code__)
    entry = entries[0]
    manager = getattr(entry, "guard_manager", None) or entry.check_fn
    L = dict(zip(names, args))
    check = getattr(manager, "check", manager)
    assert check(L)
    return check, L


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--dynamo", action="store_true", help="also measure Dynamo (needs torch)")
    args = parser.parse_args()
    floor = median_ns(lambda L: True, {})
    print(f"CPython {sys.version.split()[0]}, numpy {np.__version__}; call floor {floor:.0f} ns")
    have_dynamo = False
    if args.dynamo:
        try:
            import torch
            have_dynamo = True
            print(f"torch {torch.__version__}")
        except ImportError:
            print("Dynamo comparison skipped: torch is not installed (pip install torch==2.13.0 on CPython 3.11)")
    header = f"{'guards':<22}{'framehook ns/call':>18}{'ns/guard':>10}"
    if have_dynamo:
        header += f"{'dynamo ns/call':>16}{'ns/guard':>10}{'ratio fh/dyn':>14}"
    print(header)
    for kind in ("int", "array"):
        for n in SIZES:
            fn, L = framehook_check(kind, n)
            ours = median_ns(fn, L)
            label = f"{n} x {'TYPE_MATCH int' if kind == 'int' else 'NDARRAY_MATCH'}"
            row = f"{label:<22}{ours:>18.0f}{ours / n:>10.1f}"
            if have_dynamo:
                dfn, dL = dynamo_check(kind, n)
                theirs = median_ns(dfn, dL)
                row += f"{theirs:>16.0f}{theirs / n:>10.1f}{ours / theirs:>14.2f}"
            print(row)
    return 0


if __name__ == "__main__":
    sys.exit(main())
