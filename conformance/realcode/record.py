"""Record the real-code tier: each library's own test suite under the records pytest plugin.

    python conformance/realcode/record.py --out DIR [--cap N] [--lib NAME ...]

Runs on the recording interpreter (CPython 3.11 in CI: ci/matrix.py's ``realcode`` tox
env). For each library of ``libraries/*.json`` it fetches the pinned source (sources.py),
installs its tests' pinned requirements into this environment, and runs its tests with
``--framehook-record=MODULE:QUALNAME`` for every listed function and
``--framehook-record-dir=DIR/NAME``. The plugin writes one record per call; to keep the
replays short, at most ``--cap`` records per function are kept, chosen deterministically
(evenly spaced over the calls in the order they were made; the others are deleted).
``DIR/manifest.json`` says what was recorded: the interpreter, each library's version,
the pytest outcome, and per function the calls recorded and the records kept.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import re
import shutil
import subprocess
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import sources  # noqa: E402

DEFAULT_CAP = 20
# str hashes are salted per process: a value that caches one (a hashed key tuple) records
# a number only a process with the same seed reproduces; record and replay under this one
HASH_SEED = sources.HASH_SEED
RECORD_NAME = re.compile(r"^(?P<stem>.+)\.(?P<index>\d+)\.fhrec$")


def stem_of(target: str) -> str:
    """The file name stem the plugin gives a target's records (MODULE.QUALNAME, sanitized)."""
    return re.sub(r"[^A-Za-z0-9_.]+", "_", target.replace(":", "."))


def spaced(count: int, cap: int) -> list:
    """``min(count, cap)`` indices out of ``range(count)``, evenly spaced, first and last included."""
    if count <= cap:
        return list(range(count))
    if cap == 1:
        return [0]
    return sorted({round(i * (count - 1) / (cap - 1)) for i in range(cap)})


def cap_records(directory: Path, targets: tuple, cap: int) -> dict:
    """Keep at most ``cap`` records per target (spaced(...) over its call order); returns
    ``{target: {"recorded": n, "kept": k}}``. Files no target claims are left alone."""
    by_stem: dict = {}
    for path in directory.glob("*.fhrec"):
        match = RECORD_NAME.match(path.name)
        if match:
            by_stem.setdefault(match.group("stem"), []).append((int(match.group("index")), path))
    counts = {}
    for target in targets:
        files = sorted(by_stem.get(stem_of(target), []))
        keep = set(spaced(len(files), cap))
        for i, (_, path) in enumerate(files):
            if i not in keep:
                path.unlink()
        counts[target] = {"recorded": len(files), "kept": len(keep)}
    return counts


def _pytest_summary(output: str) -> str:
    for line in reversed(output.strip().splitlines()):
        if re.search(r"\b(passed|failed|error|no tests ran)\b", line):
            return line.strip("= ").strip()
    return "no summary line"


def record_library(lib: sources.Library, out: Path, cap: int) -> dict:
    tree = sources.source_tree(lib)
    if lib.test_requires:
        cmd = [sys.executable, "-m", "pip", "install", "--quiet", *lib.test_requires]
        if subprocess.call(cmd) != 0:
            raise sources.FetchError(f"realcode: installing {', '.join(lib.test_requires)} for {lib.name} failed")
    directory = out / lib.name
    shutil.rmtree(directory, ignore_errors=True)
    directory.mkdir(parents=True)
    cmd = [
        sys.executable,
        "-m",
        "pytest",
        *lib.tests,
        "-q",
        "-p",
        "no:cacheprovider",
        f"--framehook-record-dir={directory}",
        *(f"--framehook-record={t}" for t in lib.targets),
    ]
    env = dict(
        os.environ,
        PYTHONPATH=os.pathsep.join(filter(None, [str(tree / lib.import_root), os.environ.get("PYTHONPATH")])),
    )
    env["PYTHONDONTWRITEBYTECODE"] = "1"  # the cached tree is shared by every env
    env["PYTHONHASHSEED"] = HASH_SEED
    start = time.monotonic()
    cpu = os.times()
    run = subprocess.run(cmd, cwd=str(tree), env=env, capture_output=True, text=True)
    after = os.times()
    elapsed = time.monotonic() - start
    summary = _pytest_summary(run.stdout + run.stderr)
    if run.returncode not in (0, 1):  # 1: some tests failed under recording, reported below
        tail = "\n".join((run.stdout + run.stderr).strip().splitlines()[-30:])
        raise RuntimeError(f"realcode: pytest of {lib.name} exited {run.returncode}:\n{tail}")
    counts = cap_records(directory, lib.targets, cap)
    recorded = sum(c["recorded"] for c in counts.values())
    kept = sum(c["kept"] for c in counts.values())
    print(
        f"[realcode] {lib.key}: pytest {summary} in {elapsed:.1f}s; {recorded} calls of "
        f"{len(lib.targets)} functions recorded, {kept} records kept (at most {cap} per function)",
        flush=True,
    )
    if run.returncode == 1:
        failed = [line for line in run.stdout.splitlines() if line.startswith(("FAILED", "ERROR"))]
        for line in failed[:10]:
            print(f"[realcode]   under recording: {line}", flush=True)
    return {
        "version": lib.version,
        "sha256": lib.sha256,
        "pytest": summary,
        "pytest_exit": run.returncode,
        "seconds": round(elapsed, 2),
        "cpu_seconds": round(
            (after.children_user + after.children_system) - (cpu.children_user + cpu.children_system), 2
        ),
        "functions": counts,
    }


def main(argv: list | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--out", required=True, help="the record directory (replaced)")
    parser.add_argument(
        "--cap", type=int, default=DEFAULT_CAP, help=f"records kept per function (default {DEFAULT_CAP})"
    )
    parser.add_argument("--lib", action="append", help="only this library (repeatable)")
    args = parser.parse_args(argv)
    out = Path(args.out).resolve()
    out.mkdir(parents=True, exist_ok=True)
    (out / "manifest.json").unlink(missing_ok=True)
    manifest = {
        "python": platform.python_version(),
        "cap": args.cap,
        "libraries": {},
    }
    try:
        for lib in sources.libraries(args.lib):
            manifest["libraries"][lib.name] = record_library(lib, out, args.cap)
    except sources.FetchError as exc:
        print(f"[realcode] error: {exc}", flush=True)
        return 2
    (out / "manifest.json").write_text(json.dumps(manifest, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
