"""Runs inside one of tox's gcov envs: C line coverage of the runtime and profiler extensions
on that env's CPython.

The runtime reads frames through one layout per CPython generation (compat.h), so one gcov
env per layout measures its own branches. Each env builds its extensions (CFLAGS
--coverage -O0) in place in a private copy of the sources, because the envs may run at the
same time; runs their tests against the copies; and writes, per package, a gcovr JSON
tracefile and a text summary into ci/results/gcov/<env>/. ci/matrix.py merges the
tracefiles of every env (merge_reports below) into the combined figure.

Usage: python ci/gcov_job.py            (inside tox)
       python ci/gcov_job.py merge DIR  (merge DIR/*/<pkg>.json; needs gcovr)
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

from support import copy_sources

ROOT = Path(__file__).resolve().parent.parent
GCOV_RESULTS = ROOT / "ci" / "results" / "gcov"
C_PACKAGES = ("runtime", "profiler")


def _summary_lines(stdout: str) -> str:
    return "\n".join(line for line in stdout.splitlines() if line.startswith(("lines:", "functions:")))


def measure(out: Path) -> int:
    """Build, test and report this interpreter's C coverage into `out`."""
    shutil.rmtree(out, ignore_errors=True)
    out.mkdir(parents=True)
    present = [p for p in C_PACKAGES if (ROOT / "packages" / p / "setup.py").exists()]
    copies = {}
    for pkg in present:
        copy = out / "src" / pkg
        copy_sources(pkg, copy)
        subprocess.check_call(
            [
                sys.executable,
                "setup.py",
                "-q",
                "build_ext",
                "--force",
                "--inplace",
                "--build-temp",
                str(out / f"{pkg}-build"),
            ],
            cwd=str(copy),
        )
        copies[pkg] = copy
    srcs = [str(copies[p] / "src") for p in present] + [str(ROOT / "packages" / "translator" / "src")]
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(srcs))
    ok = True
    reports = []
    for pkg in present:
        rc = subprocess.call(
            # the tests themselves from the repository: they find ci/ and their data by path
            [
                sys.executable,
                "-m",
                "pytest",
                str(ROOT / "packages" / pkg / "tests"),
                "-q",
                "-p",
                "no:cacheprovider",
                "--import-mode=importlib",
                "-x",
                # The test envs run both. Under --coverage memcheck would only measure itself,
                # and CPython's regression modules add no C line (3.11: 1366 lines with them,
                # 1367 without) for 90 s per env.
                "-m",
                "not valgrind and not regrtest",
            ],
            cwd=str(ROOT),
            env=env,
        )
        ok &= rc in (0, 5)
        # Paths are kept relative to the package copy, so that every env's tracefile names
        # a source file the same way and the merge adds them up line by line.
        summary = subprocess.run(
            [
                sys.executable,
                "-m",
                "gcovr",
                "--root",
                str(copies[pkg]),
                str(out / f"{pkg}-build"),
                "--filter",
                re.escape(str(copies[pkg])) + "/",
                "--json",
                str(out / f"{pkg}.json"),
                "--txt",
                str(out / f"{pkg}.txt"),
                "--txt-summary",
            ],
            cwd=str(copies[pkg]),
            capture_output=True,
            text=True,
        )
        if summary.returncode != 0:
            print(summary.stdout[-2000:], summary.stderr[-3000:])
            ok = False
            continue
        reports.append(
            f"framehook-{pkg} (C, gcov):\n" + (out / f"{pkg}.txt").read_text() + _summary_lines(summary.stdout)
        )
    (out / "summary.txt").write_text("\n\n".join(reports) + "\n")
    print((out / "summary.txt").read_text())
    shutil.rmtree(out / "src", ignore_errors=True)
    for pkg in present:
        shutil.rmtree(out / f"{pkg}-build", ignore_errors=True)
    return 0 if ok else 1


def merge_reports(root: Path, python: str = sys.executable) -> tuple[bool, str]:
    """Merge the per-env tracefiles under `root` into one summary per package: a line counts
    as covered if any CPython ran it, and as a line if any CPython compiled it."""
    blocks = []
    ok = True
    for pkg in C_PACKAGES:
        tracefiles = sorted(root.glob(f"*/{pkg}.json"))
        if not tracefiles:
            continue
        envs = ", ".join(t.parent.name for t in tracefiles)
        # a function defined once per version (#if) sits on other lines in each: keep both
        args = [python, "-m", "gcovr", "--root", str(ROOT / "packages" / pkg), "--merge-mode-functions", "separate"]
        for t in tracefiles:
            args += ["--json-add-tracefile", str(t)]
        run = subprocess.run(
            args + ["--txt-summary", "--txt", str(root / f"{pkg}-combined.txt")], capture_output=True, text=True
        )
        if run.returncode != 0:
            ok = False
            blocks.append(f"framehook-{pkg}: merging {envs} failed:\n{run.stderr[-2000:]}")
            continue
        blocks.append(
            f"framehook-{pkg} (C, gcov, merged over {envs}):\n"
            + (root / f"{pkg}-combined.txt").read_text()
            + _summary_lines(run.stdout)
        )
    text = "\n\n".join(blocks)
    (root / "summary.txt").write_text(text + "\n")
    return ok, text


def main(argv: list[str]) -> int:
    if argv[:1] == ["merge"] and len(argv) == 2:
        ok, text = merge_reports(Path(argv[1]))
        print(text)
        return 0 if ok else 1
    if argv:
        print(f"usage: {Path(__file__).name} [merge DIR]", file=sys.stderr)
        return 2
    env = os.environ.get("TOX_ENV_NAME", f"gcov-py{sys.version_info[0]}{sys.version_info[1]}")
    return measure(GCOV_RESULTS / env)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
