"""Writing each output format from one recording, against writing the Chrome trace.

    python bench_formats.py [--n 30 | --paths 5] [--reps 5] [--formats chrome,collapsed,...]

Records fib(n) once (2,692,537 calls for n=30; its calls share 31 call paths), or with
--paths D a tree in which every call has a path of its own (10 functions, each calling
all 10, D deep: 111,110 paths for D=5), then writes it in every format, the
formats interleaved in each round (Chrome first), and prints per format the median time
over the rounds, its ratio to Chrome's median, and the file's size. The aggregated
outputs (pstats, text, svg, collapsed stacks) compute the tracer's aggregates once per
profile: the first round pays for them, so the median is what a second export costs; the
"first" column is the first round's time, aggregates included.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time

from framehook.profiler import Profiler
from framehook.profiler._export import FORMATS, DEFAULT_SUFFIX


def fib(n: int) -> int:
    return n if n < 2 else fib(n - 1) + fib(n - 2)


def distinct_paths(width: int) -> list:
    """`width` functions, each calling every one of them while depth remains."""
    space: dict = {}
    for i in range(width):
        exec(f"def f{i}(depth):\n    if depth:\n        for g in FUNCS:\n            g(depth - 1)\n", space)
    space["FUNCS"] = [space[f"f{i}"] for i in range(width)]
    return space["FUNCS"]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=30)
    parser.add_argument("--paths", type=int, default=0, help="record the distinct-paths tree, this deep")
    parser.add_argument("--reps", type=int, default=5)
    parser.add_argument("--formats", default=",".join(FORMATS))
    args = parser.parse_args()
    formats = ["chrome"] + [f for f in args.formats.split(",") if f != "chrome"]
    sys.setrecursionlimit(10_000)
    funcs = distinct_paths(10) if args.paths else []
    with Profiler(c_calls=False) as prof:
        if args.paths:
            for f in funcs:
                f(args.paths - 1)
        else:
            fib(args.n)
    profile = prof.profile
    times = {f: [] for f in formats}
    sizes = {}
    with tempfile.TemporaryDirectory() as tmp:
        for _ in range(args.reps):
            for fmt in formats:
                path = os.path.join(tmp, "out" + DEFAULT_SUFFIX[fmt])
                start = time.perf_counter()
                profile.export(path, fmt)
                times[fmt].append(time.perf_counter() - start)
                sizes[fmt] = os.path.getsize(path)
    chrome = statistics.median(times["chrome"])
    what = f"distinct paths ({args.paths} deep)" if args.paths else f"fib({args.n})"
    print(f"{what}, {profile.event_count:,} events, Python {sys.version.split()[0]}, {args.reps} rounds")
    print("| format | first (s) | median (s) | / chrome | size (MB) |")
    print("|---|---|---|---|---|")
    for fmt in formats:
        med = statistics.median(times[fmt])
        print(f"| {fmt} | {times[fmt][0]:.3f} | {med:.3f} | {med / chrome:.2f} | {sizes[fmt] / 1e6:.1f} |")


if __name__ == "__main__":
    main()
