"""Runs inside one tox env: the packages' tests and/or the conformance suite.

Each package's tests run in their own pytest process (so test modules of different
packages never collide) under coverage.py, writing a JUnit XML file per package into
$FRAMEHOOK_RESULTS, which ci/matrix.py reads to print its tables. Only the packages that
support this interpreter (their requires-python, see ci/support.py) are installed and
tested; the conformance suite and the fuzz batch run where the translator is supported.

Usage: python ci/env_job.py [tests] [conformance]
"""
from __future__ import annotations

import os
import shutil
import subprocess
import tempfile
import sys
from pathlib import Path

from support import PACKAGES, cross_package_jobs, current_version, present, supported_packages, why_not

ROOT = Path(__file__).resolve().parent.parent
# fuzz/run.py's mode that needs each package
FUZZ_MODES = {"runtime": "shadow", "profiler": "profiler", "translator": "translator"}


def present_packages() -> list[str]:
    """The packages this interpreter installs and tests (in ci/support.py's install order)."""
    return supported_packages(current_version())


def report_unsupported() -> None:
    version = current_version()
    for name in PACKAGES:
        if present(name) and name not in present_packages():
            print(f"[env_job] {name}: not supported on CPython {version}, not installed or tested "
                  f"({why_not(name, version)})", flush=True)


def install_packages() -> bool:
    """Build and install every package from source for this interpreter (runtime first).

    pip builds in the source tree (build/, *.egg-info), which the envs running in parallel
    would share: each env builds from its own copy instead."""
    names = present_packages()
    if not names:
        return True
    scratch = Path(tempfile.mkdtemp(prefix="framehook-build-"))
    try:
        paths = []
        for name in names:
            dest = scratch / name
            shutil.copytree(ROOT / "packages" / name, dest,
                            ignore=shutil.ignore_patterns("build", "*.egg-info", "__pycache__", "*.so"))
            paths.append(str(dest))
        cmd = [sys.executable, "-m", "pip", "install", "--no-build-isolation", "--no-deps",
               "--force-reinstall", "--quiet", *paths]
        print(f"[env_job] installing {', '.join(names)}", flush=True)
        return subprocess.call(cmd, cwd=str(scratch)) == 0
    finally:
        shutil.rmtree(scratch, ignore_errors=True)


def run_package_tests(results: Path) -> bool:
    ok = True
    for name in present_packages():
        tests = ROOT / "packages" / name / "tests"
        if not any(tests.glob("test_*.py")):
            print(f"[env_job] {name}: no tests yet", flush=True)
            continue
        cmd = [
            sys.executable, "-m", "coverage", "run", "-m", "pytest", str(tests),
            "-p", "no:cacheprovider", "--import-mode=importlib", "-q",
            f"--junitxml={results / (name + '.xml')}",
            "-o", "junit_family=xunit1",
        ]
        print(f"[env_job] {name}: {' '.join(cmd[3:])}", flush=True)
        rc = subprocess.call(cmd, cwd=str(ROOT))
        if rc != 0:
            print(f"[env_job] {name}: pytest exited {rc}", flush=True)
            ok = False
    return ok


def run_conformance(results: Path) -> bool:
    if not (ROOT / "conformance" / "run.py").exists():
        print("[env_job] conformance: suite not present yet", flush=True)
        return True
    cmd = [
        sys.executable, "-m", "coverage", "run", str(ROOT / "conformance" / "run.py"),
        "--json", str(results / "conformance.json"),
    ]
    print(f"[env_job] conformance: {' '.join(cmd[3:])}", flush=True)
    # coverage.py does not put a script's directory on sys.path on every version: the
    # suite imports its helpers from there
    suite_dir = str(ROOT / "conformance")
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(filter(None, [suite_dir, os.environ.get("PYTHONPATH")])))
    return subprocess.call(cmd, cwd=str(ROOT), env=env) == 0


def run_fuzz(results: Path) -> bool:
    """A fixed batch of generated programs, plain vs every package (fuzz/run.py), and fuzz/tests."""
    cmd = [
        sys.executable, "-m", "coverage", "run", str(ROOT / "fuzz" / "run.py"),
        "--seed", "0", "--count", "300", "--json", str(results / "fuzz.json"),
        "--save", str(results / "fuzz-findings"),
    ]
    installed = [p for p in present_packages() if p in FUZZ_MODES]
    if len(installed) < len(FUZZ_MODES):
        cmd += ["--modes", ",".join(FUZZ_MODES[p] for p in installed)]
    print(f"[env_job] fuzz: {' '.join(cmd[3:])}", flush=True)
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(filter(None, [str(ROOT / "fuzz"), os.environ.get("PYTHONPATH")])))
    ok = subprocess.call(cmd, cwd=str(ROOT), env=env) == 0
    # the fuzzer's own tests: its generators and the harness's comparisons
    tests = [sys.executable, "-m", "pytest", str(ROOT / "fuzz" / "tests"), "-p", "no:cacheprovider",
             "--import-mode=importlib", "-q", f"--junitxml={results / 'fuzz-tests.xml'}", "-o", "junit_family=xunit1"]
    print(f"[env_job] fuzz tests: {' '.join(tests[3:])}", flush=True)
    return subprocess.call(tests, cwd=str(ROOT), env=env) == 0 and ok


def main(argv: list[str]) -> int:
    jobs = argv or ["tests"]
    unknown = set(jobs) - {"tests", "conformance"}
    if unknown:
        print(f"env_job.py: unknown job(s) {sorted(unknown)}; expected 'tests' and/or 'conformance'")
        return 2
    results = Path(os.environ.get("FRAMEHOOK_RESULTS", ROOT / "ci" / "results" / "local"))
    results.mkdir(parents=True, exist_ok=True)
    report_unsupported()
    if not install_packages():
        print("[env_job] installing the packages failed")
        return 1
    ok = True
    cross = cross_package_jobs(current_version())
    if not cross:
        print(f"[env_job] conformance and fuzzing: not run on CPython {current_version()}, they need "
              f"the translator ({why_not('translator', current_version())})", flush=True)
    if "tests" in jobs:
        ok &= run_package_tests(results)
        if cross:
            ok &= run_fuzz(results)
    if "conformance" in jobs and cross:
        ok &= run_conformance(results)
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
