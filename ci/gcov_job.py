"""Runs inside tox's gcov env: C line coverage of the runtime and profiler extensions.

The extensions are built in place with the env's CFLAGS (--coverage -O0), their tests run
against the source trees, and gcovr summarises the .gcda data into ci/results/gcov/.
"""
from __future__ import annotations

import os
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
            [sys.executable, "setup.py", "-q", "build_ext", "--inplace", "--build-temp", str(build)],
            cwd=str(ROOT / "packages" / pkg),
        )
    srcs = [str(ROOT / "packages" / p / "src") for p in ("runtime", "profiler", "translator")]
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(srcs))
    ok = True
    try:
        for pkg in present:
            rc = subprocess.call(
                [sys.executable, "-m", "pytest", str(ROOT / "packages" / pkg / "tests"), "-q",
                 "-p", "no:cacheprovider", "--import-mode=importlib", "-x", "-m", "not slow"],
                cwd=str(ROOT), env=env,
            )
            ok &= rc in (0, 5)
        if build_dirs:
            summary = subprocess.run(
                ["gcovr", "--root", str(ROOT), *map(str, build_dirs), "--txt-summary",
                 "--txt", str(OUT / "gcov.txt"), "--filter", str(ROOT / "packages")],
                cwd=str(ROOT), capture_output=True, text=True,
            )
            lines = [l for l in summary.stdout.splitlines() if l.startswith(("lines:", "functions:", "branches:"))]
            table = (OUT / "gcov.txt").read_text() if (OUT / "gcov.txt").exists() else ""
            (OUT / "summary.txt").write_text(table + "\n" + "\n".join(lines) + "\n")
            print(table)
            ok &= summary.returncode == 0
    finally:
        for pkg in present:
            for so in (ROOT / "packages" / pkg / "src").rglob("*.so"):
                so.unlink()
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
