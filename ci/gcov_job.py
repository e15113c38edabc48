"""Runs inside tox's gcov env: C line coverage of the runtime and profiler extensions.

The extensions are built in place with the env's CFLAGS (--coverage -O0), their tests run
against the source trees, and gcovr summarises the .gcda data into ci/results/gcov/.
"""
from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
OUT = ROOT / "ci" / "results" / "gcov"
C_PACKAGES = ("runtime", "profiler")


def main() -> int:
    OUT.mkdir(parents=True, exist_ok=True)
    present = [p for p in C_PACKAGES if (ROOT / "packages" / p / "setup.py").exists()]
    build_dirs = []
    for pkg in present:
        build = OUT / f"{pkg}-build"
        shutil.rmtree(build, ignore_errors=True)
        build_dirs.append(build)
        subprocess.check_call(
            [sys.executable, "setup.py", "-q", "build_ext", "--force", "--inplace", "--build-temp", str(build)],
            cwd=str(ROOT / "packages" / pkg),
        )
    srcs = [str(ROOT / "packages" / p / "src") for p in ("runtime", "profiler", "translator")]
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(srcs))
    ok = True
    try:
        for pkg in present:
            rc = subprocess.call(
                [sys.executable, "-m", "pytest", str(ROOT / "packages" / pkg / "tests"), "-q",
                 "-p", "no:cacheprovider", "--import-mode=importlib", "-x"],
                cwd=str(ROOT), env=env,
            )
            ok &= rc in (0, 5)
        reports = []
        for pkg, build in zip(present, build_dirs):
            # Sources were compiled relative to the package directory: run gcovr there.
            pkg_dir = ROOT / "packages" / pkg
            summary = subprocess.run(
                [sys.executable, "-m", "gcovr", "--root", str(pkg_dir), str(build), "--txt-summary",
                 "--txt", str(OUT / f"{pkg}.txt"), "--filter", re.escape(str(pkg_dir)) + "/"],
                cwd=str(pkg_dir), capture_output=True, text=True,
            )
            if summary.returncode != 0:
                print(summary.stdout[-2000:], summary.stderr[-3000:])
                ok = False
                continue
            lines = [l for l in summary.stdout.splitlines() if l.startswith(("lines:", "functions:"))]
            reports.append(f"framehook-{pkg} (C, gcov):\n" + (OUT / f"{pkg}.txt").read_text() + "\n".join(lines))
        (OUT / "summary.txt").write_text("\n\n".join(reports) + "\n")
        print((OUT / "summary.txt").read_text())
    finally:
        for pkg in present:
            for so in (ROOT / "packages" / pkg / "src").rglob("*.so"):
                so.unlink()
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
