"""What recording costs on real test suites, and what replaying the records costs.

    python packages/records/benchmarks/bench_real_suites.py \\
        --suite NAME=TREE:IMPORT_ROOT:PACKAGE:TESTS [--suite ...] [--repeat 3] [--cap 20]

For each suite (a library's unpacked source TREE, the directory its package imports from,
the PACKAGE to record, the TESTS to run, relative to TREE), side by side in one run:

* the suite's CPU time (its pytest child's user+system) plain and with
  ``--framehook-record=PACKAGE``, alternating, ``--repeat`` times each; the median ratio;
* the records written: how many, their median and largest size on disk;
* the time per record to record it (the recording run's extra CPU over the plain run's,
  divided by the calls recorded; a call past the per-function cap is only counted);
* replay: ``framehook replay`` on every record, in one process per 50 records, CPU per
  record (plain mode only, and all modes available here).

The suites of the real-code tier are in ~/.cache/framehook/realcode/src once
``conformance/realcode/record.py`` has run; for example:

    S=~/.cache/framehook/realcode/src
    python3.11 packages/records/benchmarks/bench_real_suites.py \\
        --suite inflection=$S/inflection-0.5.1:.:inflection:test_inflection.py \\
        --suite cachetools=$S/cachetools-5.5.2:src:cachetools:tests
"""

from __future__ import annotations

import argparse
import glob
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time


def _child_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def _run(cmd: list[str], cwd: str, env: dict) -> tuple[float, float, str]:
    """(child CPU seconds, wall seconds, output) of one command."""
    cpu, wall = _child_cpu(), time.perf_counter()
    proc = subprocess.run(cmd, cwd=cwd, env=env, capture_output=True, text=True)
    cpu, wall = _child_cpu() - cpu, time.perf_counter() - wall
    if proc.returncode not in (0, 1, 2, 3, 4) or (proc.returncode == 2 and "ERROR" not in proc.stdout):
        raise SystemExit(f"{' '.join(cmd[:6])}...: exit {proc.returncode}\n{proc.stdout[-2000:]}{proc.stderr[-2000:]}")
    return cpu, wall, proc.stdout


def bench_suite(name: str, spec: str, repeat: int, cap: int) -> dict:
    tree, import_root, package, tests = spec.split(":")
    tree = os.path.expanduser(tree)
    env = dict(os.environ, PYTHONPATH=os.path.join(tree, import_root), PYTHONHASHSEED="0", PYTHONDONTWRITEBYTECODE="1")
    base = [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", *tests.split(",")]
    plain, recording, records = [], [], []
    for i in range(repeat):
        plain.append(_run(base, tree, env)[0])
        out_dir = tempfile.mkdtemp(prefix=f"fhbench-{name}-{i}-")
        cmd = base + [
            f"--framehook-record={package}",
            f"--framehook-record-dir={out_dir}",
            f"--framehook-record-cap={cap}",
        ]
        recording.append(_run(cmd, tree, env)[0])
        records = sorted(glob.glob(os.path.join(out_dir, "*.fhrec")))
    sizes = [os.path.getsize(p) for p in records]
    replay_cpu = []
    verdicts: dict[str, int] = {}
    for start in range(0, len(records), 50):
        chunk = records[start : start + 50]
        cmd = [sys.executable, "-m", "framehook.records.cli", "replay", "--mode", "plain", *chunk]
        cpu, _, out = _run(cmd, tree, env)
        replay_cpu.append(cpu / len(chunk))
        for line in out.splitlines():
            word = line.split(" ", 1)[0]
            if word in ("MATCH", "MISMATCH", "NONDETERMINISTIC", "ERROR") or line.startswith("NOT RUN"):
                verdicts[word] = verdicts.get(word, 0) + 1
    return {
        "suite": name,
        "plain": statistics.median(plain),
        "recording": statistics.median(recording),
        "ratio": statistics.median(r / p for r, p in zip(recording, plain)),
        "records": len(records),
        "size_median": statistics.median(sizes) if sizes else 0,
        "size_max": max(sizes, default=0),
        "per_record_ms": 1000 * (statistics.median(recording) - statistics.median(plain)) / max(len(records), 1),
        "replay_ms": 1000 * statistics.median(replay_cpu) if replay_cpu else 0.0,
        "verdicts": verdicts,
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--suite", action="append", required=True, metavar="NAME=TREE:ROOT:PACKAGE:TESTS")
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--cap", type=int, default=20)
    args = parser.parse_args()
    print(f"CPython {sys.version.split()[0]}, {args.repeat} alternating runs each, cap {args.cap} records/function")
    print("suite        plain s  recording s  ratio  records  median KB  max KB  record ms  replay ms  verdicts")
    for item in args.suite:
        name, _, spec = item.partition("=")
        r = bench_suite(name, spec, args.repeat, args.cap)
        print(
            f"{name:12} {r['plain']:7.2f}  {r['recording']:11.2f}  {r['ratio']:5.2f}  {r['records']:7}  "
            f"{r['size_median'] / 1024:9.1f}  {r['size_max'] / 1024:6.1f}  {r['per_record_ms']:9.2f}  {r['replay_ms']:9.2f}  "
            + ", ".join(f"{k} {v}" for k, v in sorted(r["verdicts"].items())),
            flush=True,
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
