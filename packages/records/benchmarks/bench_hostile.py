"""Time and peak memory of refusing each hostile record, one fresh child process per file.

    python packages/records/benchmarks/bench_hostile.py [--top 10] [--repeat 1]

The child imports framehook.records, then loads the file (and, for the corpus's replay
cases, replays it as if recorded on this interpreter, with trust_bytecode=True where the
bytecode must be refused) and reports the wall and CPU time of that step; the parent
reads the child's peak RSS from os.wait4. A baseline child that loads one small good
record shows what the interpreter itself costs.

The replay attacks of issue 30 (tests/records_data/hostile_replay.py: names bound to what
the code does not show, sources that crash or swamp compile(), values that cost seconds
within the decoding limits) are written to a temporary directory first, then loaded and
replayed in the plain mode, each in its own child ("case" rows).

Targets: every file of the corpus refused in under a second and under 100 MB RSS (issue
19); every replay attack refused or replayed in under a second and under 300 MB (issue
30). Figures go in packages/records/BENCHMARKS.md; tests never assert on them.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import subprocess
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
SRC = HERE.parent / "src"
CORPUS = HERE.parent / "tests" / "records_data" / "hostile"
TARGET_SECONDS = 1.0
TARGET_MB = 100.0
TARGET_CASE_MB = 300.0

CHILD = r"""
import json, sys, time
from framehook.records import RecordError, load, replay_record
from framehook.records.codeloc import current_python
path, mode = sys.argv[1], sys.argv[2]
start, cpu = time.perf_counter(), time.process_time()
outcome = "accepted"
try:
    rec = load(path)
    if mode == "case":
        outcome = "replayed: " + replay_record(rec, modes=("plain",)).verdict
    elif mode != "load":
        rec.python = current_python()
        result = replay_record(rec, modes=("plain",), trust_bytecode=mode == "trust")
        if mode == "replay" and result.bytecode_note and not hasattr(sys, "FRAMEHOOK_PWNED"):
            outcome = "bytecode not run"
except RecordError as exc:
    outcome = type(exc).__name__
seconds, cpu = time.perf_counter() - start, time.process_time() - cpu
print(json.dumps({"seconds": seconds, "cpu": cpu, "outcome": outcome}))
"""


BUILD = r"""
import importlib.util, sys
spec = importlib.util.spec_from_file_location("hostile_replay", sys.argv[1] + "/hostile_replay.py")
module = importlib.util.module_from_spec(spec)
spec.loader.exec_module(module)
open(sys.argv[3], "wb").write(module.build(sys.argv[2]))
"""


def hostile_replay():
    """The replay attacks' builder module (tests/records_data/hostile_replay.py)."""
    import importlib.util

    spec = importlib.util.spec_from_file_location("hostile_replay", CORPUS.parent / "hostile_replay.py")
    module = importlib.util.module_from_spec(spec)
    sys.path.insert(0, str(SRC))
    spec.loader.exec_module(module)
    return module


def run_child(python: str, path: Path, mode: str) -> dict:
    env = dict(os.environ, PYTHONPATH=str(SRC))
    proc = subprocess.Popen(
        [python, "-c", CHILD, str(path), mode], stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env
    )
    out = proc.stdout.read()
    err = proc.stderr.read()
    _, status, usage = os.wait4(proc.pid, 0)
    proc.returncode = os.waitstatus_to_exitcode(status) if hasattr(os, "waitstatus_to_exitcode") else status
    if proc.returncode != 0:
        return {
            "seconds": float("nan"),
            "cpu": float("nan"),
            "outcome": f"child failed ({proc.returncode}): {err.decode()[-200:]}",
            "rss_mb": usage.ru_maxrss / 1024,
        }
    result = json.loads(out.decode().strip().splitlines()[-1])
    result["rss_mb"] = usage.ru_maxrss / 1024  # KiB on Linux
    return result


def baseline(python: str) -> dict:
    env = dict(os.environ, PYTHONPATH=str(SRC))
    with tempfile.TemporaryDirectory() as tmp:
        good = Path(tmp) / "good.fhrec"
        subprocess.run(
            [
                python,
                "-c",
                "import sys\nfrom framehook.records import record_call\n"
                "def f(a):\n    return a + 1\nrecord_call(f, (1,), path=sys.argv[1])",
                str(good),
            ],
            env=env,
            check=True,
        )
        return run_child(python, good, "load")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--python", default=sys.executable, help="interpreter to run the children with")
    parser.add_argument("--top", type=int, default=10, help="print the N slowest and N largest files")
    parser.add_argument("--repeat", type=int, default=1, help="runs per file; the worst is kept")
    args = parser.parse_args(argv)
    manifest = json.loads((CORPUS / "MANIFEST.json").read_text())
    # Bytecode cases: replayed with trust_bytecode=True (refused by the checks), except the
    # one whose bytecode is valid on its generator's interpreter: replayed by default (not run).
    jobs = [(name, "load") for name in sorted(manifest["load"])] + [
        (name, "trust" if expect["trust"] else "replay") for name, expect in sorted(manifest["replay"].items())
    ]
    version = subprocess.run(
        [args.python, "-c", "import platform; print(platform.python_version())"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout.strip()
    base = baseline(args.python)
    cases = tempfile.TemporaryDirectory()
    paths = {name: CORPUS / name for name, _ in jobs}
    for name in sorted(hostile_replay().CASES):
        path = Path(cases.name) / f"{name}.fhrec"
        subprocess.run(
            [args.python, "-c", BUILD, str(CORPUS.parent), name, str(path)],
            env=dict(os.environ, PYTHONPATH=str(SRC)),
            check=True,
        )
        jobs.append((name, "case"))
        paths[name] = path
    rows = []
    for name, mode in jobs:
        worst = None
        for _ in range(args.repeat):
            got = run_child(args.python, paths[name], mode)
            if worst is None or got["seconds"] > worst["seconds"]:
                worst = dict(got, rss_mb=max(got["rss_mb"], worst["rss_mb"] if worst else 0))
        rows.append(dict(worst, name=name, mode=mode))
    cases.cleanup()
    print(
        f"hostile corpus on CPython {version} ({platform.machine()}), {len(rows)} files, "
        f"one child per file; baseline child (one good record): {base['seconds'] * 1000:.1f} ms, "
        f"{base['rss_mb']:.1f} MB"
    )
    header = f"{'file':44} {'step':6} {'ms':>9} {'cpu ms':>9} {'peak MB':>8}  outcome"

    def line(r: dict) -> str:
        return (
            f"{r['name'][:44]:44} {r['mode']:6} {r['seconds'] * 1000:9.1f} {r['cpu'] * 1000:9.1f} "
            f"{r['rss_mb']:8.1f}  {r['outcome']}"
        )

    print(header)
    corpus = [r for r in rows if r["mode"] != "case"]
    shown = sorted(corpus, key=lambda r: -r["seconds"])[: args.top]
    shown += [r for r in sorted(corpus, key=lambda r: -r["rss_mb"])[: args.top] if r not in shown]
    for r in shown:
        print(line(r))
    print(f"replay attacks (issue 30), every case:\n{header}")
    for r in rows:
        if r["mode"] == "case":
            print(line(r))
    slow = max(rows, key=lambda r: r["seconds"])
    big = max(rows, key=lambda r: r["rss_mb"])
    accepted = [r["name"] for r in rows if r["outcome"] == "accepted" or r["outcome"].startswith("child failed")]
    over = [
        r["name"]
        for r in rows
        if not r["seconds"] < TARGET_SECONDS or not r["rss_mb"] < (TARGET_CASE_MB if r["mode"] == "case" else TARGET_MB)
    ]
    print(
        f"worst time: {slow['seconds'] * 1000:.1f} ms ({slow['name']}); worst peak RSS: "
        f"{big['rss_mb']:.1f} MB ({big['name']}); over target: {len(over)} {over}; "
        f"not refused: {len(accepted)} {accepted}"
    )
    return 1 if over or accepted else 0


if __name__ == "__main__":
    sys.exit(main())
