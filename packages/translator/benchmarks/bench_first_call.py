"""First calls only: bench_corpus's first-call measurement without the steady state.

    PYTHONPATH=packages/translator/src python packages/translator/benchmarks/bench_first_call.py \
        [--filter REGEX] [--first-repeat N]

Prints one JSON line (version, cases, median first call and median compile time per frame, ms).
A run of the whole corpus takes seconds, so several interpreters can be run in turn, round after
round, and compared by the per-round ratio: a load change on a shared machine then hits the
compared versions alike (see BENCHMARKS.md, "3.14 and 3.15: first call").
"""

from __future__ import annotations

import argparse
import contextlib
import io
import json
import statistics
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import bench_corpus as bc  # noqa: E402


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--filter", default=None, help="regular expression searched in 'area/function'")
    parser.add_argument("--first-repeat", type=int, default=3, help="fresh compilations per case (default 3)")
    opts = parser.parse_args()
    if opts.first_repeat < 1:
        parser.error(f"--first-repeat must be at least 1, got {opts.first_repeat}")
    cases = bc.load_cases(opts.filter)
    if not cases:
        parser.error(f"--filter {opts.filter!r} matches no corpus case")
    firsts, frames = [], []
    with contextlib.redirect_stdout(io.StringIO()):  # some corpus functions print
        bc.fixed_cost(3, 0.001)  # warm-up: first-use imports of the translator, as bench_corpus does
        for case in cases:
            mutates = bc.mutates_arguments(case.fn, case.args)  # also runs the plain function once
            first, per_frame, _graphs, _breaks = bc.first_calls(case.fn, case.args, mutates, opts.first_repeat)
            firsts.append(first)
            frames.extend(per_frame)
    print(
        json.dumps(
            {
                "python": sys.version.split()[0],
                "cases": len(cases),
                "first_call_ms": round(statistics.median(firsts) * 1e3, 3),
                "compile_per_frame_ms": round(statistics.median(frames) * 1e3, 3),
            }
        )
    )


if __name__ == "__main__":
    main()
