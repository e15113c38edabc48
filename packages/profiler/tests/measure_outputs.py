"""Times the outputs of a fib(n) profile (not a test: run by hand, figures for the report).

    python tests/measure_outputs.py [--src DIR] [--n 25 30] [--formats pstats chrome]

Each (n, format) runs in a child process: recording time, post-processing time (from stop
to the file written) and the child's peak RSS. --src puts another copy of the package
first on sys.path (to compare with an older build).
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile

CHILD = r"""
import json, os, resource, sys, time
sys.setrecursionlimit(10000)
from framehook.profiler import Profiler

def fib(n):
    return n if n < 2 else fib(n - 1) + fib(n - 2)

n, fmt, path, max_events = int(sys.argv[1]), sys.argv[2], sys.argv[3], sys.argv[4]
options = {} if max_events == "none" else {"max_events": int(max_events)}
t0 = time.perf_counter()
with Profiler(**options) as prof:
    fib(n)
t1 = time.perf_counter()
prof.profile.export(path, fmt)
t2 = time.perf_counter()
try:
    events = sum(t.events + t.dropped for t in prof.profile.aggregates().threads)
except AttributeError:  # a build from before the aggregates (--src)
    events = 0
print(json.dumps({"record_s": t1 - t0, "post_s": t2 - t1, "size": os.path.getsize(path),
                  "events": events,
                  "maxrss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024}))
"""


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--src", default=None)
    parser.add_argument("--n", type=int, nargs="+", default=[25, 30])
    parser.add_argument("--formats", nargs="+", default=["pstats", "chrome"])
    parser.add_argument("--max-events", default="none")
    args = parser.parse_args()
    env = dict(os.environ)
    if args.src:
        env["PYTHONPATH"] = args.src
    with tempfile.TemporaryDirectory() as tmp:
        for n in args.n:
            for fmt in args.formats:
                path = os.path.join(tmp, f"out-{n}.{fmt}")
                out = subprocess.run(
                    [sys.executable, "-c", CHILD, str(n), fmt, path, args.max_events],
                    env=env,
                    capture_output=True,
                    text=True,
                    check=True,
                )
                row = json.loads(out.stdout)
                rate = row["events"] / row["post_s"] / 1e6 if row.get("events") else 0.0
                print(
                    f"fib({n}) {fmt:10} record {row['record_s']:7.2f} s  post "
                    f"{row['post_s']:7.2f} s ({rate:6.1f} M events/s)  file "
                    f"{row['size'] / 1e6:8.1f} MB  peak RSS {row['maxrss_mb']:7.0f} MB",
                    flush=True,
                )


if __name__ == "__main__":
    main()
