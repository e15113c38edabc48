"""A process's first hooked call against its later first calls, in fresh processes.

    python benchmarks/bench_first_hook.py [--runs N] [--import MODULE ...]

Each run is a new interpreter that imports framehook.runtime, then the given modules (numpy
by default: large processes are where one-time costs grow), then calls two new functions
through a ``CallbackWrapper`` whose callback skips every code. The first call pays whatever
the hook does once per process or per thread; the second is the cost of a first call of a
code. Prints the medians over the runs and their ratio.
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys

_WORKER = """
import json, sys, time
import framehook.runtime as rt
for name in sys.argv[1:]:
    __import__(name)

def skip(frame, *rest):
    return None

rt.skip_code(skip.__code__)

def first(x):
    return x + 1

def second(x):
    return x + 2

out = []
for fn in (first, second):
    wrapper = rt.CallbackWrapper(skip, fn)
    start = time.perf_counter()
    wrapper(1)
    out.append(time.perf_counter() - start)
print(json.dumps(out))
"""


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--runs", type=int, default=15)
    ap.add_argument("--import", dest="modules", nargs="*", default=["numpy"], metavar="MODULE")
    opts = ap.parse_args()
    if opts.runs < 1:
        ap.error(f"--runs must be at least 1, got {opts.runs}")
    firsts, seconds = [], []
    for _ in range(opts.runs):
        done = subprocess.run(
            [sys.executable, "-c", _WORKER, *opts.modules], capture_output=True, text=True, check=True
        )
        a, b = json.loads(done.stdout.strip().splitlines()[-1])
        firsts.append(a)
        seconds.append(b)
    f, s = statistics.median(firsts) * 1e6, statistics.median(seconds) * 1e6
    print(f"Python {sys.version.split()[0]}, imports {', '.join(opts.modules) or 'none'}, {opts.runs} fresh processes")
    print(f"first hooked call of the process, median: {f:.1f} us")
    print(f"first call of another code, median:       {s:.1f} us")
    print(f"ratio: {f / s:.1f}x")


if __name__ == "__main__":
    main()
