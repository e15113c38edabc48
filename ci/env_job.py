"""Runs inside one tox env: the packages' tests and/or the conformance suite.

Each package's tests run in their own pytest process (so test modules of different
packages never collide) under coverage.py, writing a JUnit XML file per package into
$FRAMEHOOK_RESULTS, which ci/matrix.py reads to print its tables. Only the packages that
support this interpreter (their requires-python, see ci/support.py) are installed and
tested; the conformance suite and the fuzz batch run where the translator is supported, and the
conformance suite once more in a venv without the translator (runtime, records, profiler).
On a CPython debug build (python3.14d: the py314d env) every supported package is installed
but only a subset runs (ci/support.py DEBUG_BUILD_*): the runtime's and profiler's tests
without the slow kinds, and the fuzz batch.

The realcode-record job (the ``realcode`` tox env, on the recording CPython) installs only
framehook-records and records the conformance suite's real-code tier
(conformance/realcode/record.py) into ci/results/realcode/records; the conformance job
then replays those records in every mode on each version (conformance/realcode/replay.py).

Usage: python ci/env_job.py [tests] [conformance] [realcode-record]
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import tempfile
import sys
from pathlib import Path

from support import (
    DEBUG_BUILD_MARKERS,
    PACKAGES,
    copy_sources,
    cross_package_jobs,
    current_version,
    is_debug,
    present,
    supported_packages,
    tested_packages,
    why_not,
)

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
            print(
                f"[env_job] {name}: not supported on CPython {version}, not installed or tested "
                f"({why_not(name, version)})",
                flush=True,
            )
        elif present(name) and name not in tested_packages(version):
            print(f"[env_job] {name}: installed, its tests not run ({why_not(name, version)})", flush=True)


def build_matches_env() -> bool:
    """A debug env (tox.ini sets FRAMEHOOK_DEBUG_BUILD) must have got a debug interpreter,
    and a release env a release one: else the tables would credit the wrong build."""
    wanted = os.environ.get("FRAMEHOOK_DEBUG_BUILD") == "1"
    if wanted == is_debug(current_version()):
        return True
    print(
        f"[env_job] error: this env wants a {'debug' if wanted else 'release'} build of CPython, "
        f"but {sys.executable} is CPython {current_version()}",
        flush=True,
    )
    return False


def build_wheels(scratch: Path) -> list[Path] | None:
    """Build a wheel of every package this interpreter supports, from a copy of its source.

    pip builds in the source tree (build/, *.egg-info), which the envs running in parallel
    would share: each env builds from its own copy instead. The wheels are installed into
    the tox env and, for the conformance run without the translator, into a second venv."""
    names = present_packages()
    paths = []
    for name in names:
        dest = scratch / "src" / name
        paths.append(str(copy_sources(name, dest)))
    wheels = scratch / "wheels"
    if paths:
        cmd = [
            sys.executable,
            "-m",
            "pip",
            "wheel",
            "--no-build-isolation",
            "--no-deps",
            "--quiet",
            "--wheel-dir",
            str(wheels),
            *paths,
        ]
        print(f"[env_job] building {', '.join(names)}", flush=True)
        if subprocess.call(cmd, cwd=str(scratch)) != 0:
            return None
    return sorted(wheels.glob("*.whl")) if paths else []


def wheel_of(wheels: list[Path], package: str) -> Path:
    prefix = f"framehook_{package}-"
    return next(w for w in wheels if w.name.startswith(prefix))


def install_packages(wheels: list[Path]) -> bool:
    """Install every built package into this interpreter's env."""
    if not wheels:
        return True
    cmd = [sys.executable, "-m", "pip", "install", "--no-deps", "--force-reinstall", "--quiet", *map(str, wheels)]
    print(f"[env_job] installing {', '.join(w.name for w in wheels)}", flush=True)
    return subprocess.call(cmd) == 0


def run_package_tests(results: Path) -> bool:
    ok = True
    # a debug build leaves the slow kinds out: valgrind and regrtest take several times longer
    markers = ["-m", DEBUG_BUILD_MARKERS] if is_debug(current_version()) else []
    for name in tested_packages(current_version()):
        tests = ROOT / "packages" / name / "tests"
        if not any(tests.glob("test_*.py")):
            print(f"[env_job] {name}: no tests yet", flush=True)
            continue
        cmd = [
            sys.executable,
            "-m",
            "coverage",
            "run",
            "-m",
            "pytest",
            str(tests),
            "-p",
            "no:cacheprovider",
            "--import-mode=importlib",
            "-q",
            f"--junitxml={results / (name + '.xml')}",
            "-o",
            "junit_family=xunit1",
            *markers,
        ]
        print(f"[env_job] {name}: {' '.join(cmd[3:])}", flush=True)
        rc = subprocess.call(cmd, cwd=str(ROOT))
        if rc != 0:
            print(f"[env_job] {name}: pytest exited {rc}", flush=True)
            ok = False
    return ok


def _conformance_command(python: str, out: Path) -> list[str]:
    return [python, "-m", "coverage", "run", str(ROOT / "conformance" / "run.py"), "--json", str(out)]


def _suite_env() -> dict:
    # coverage.py does not put a script's directory on sys.path on every version: the
    # suite imports its helpers from there
    suite_dir = str(ROOT / "conformance")
    return dict(os.environ, PYTHONPATH=os.pathsep.join(filter(None, [suite_dir, os.environ.get("PYTHONPATH")])))


def run_conformance(results: Path) -> bool:
    if not (ROOT / "conformance" / "run.py").exists():
        print("[env_job] conformance: suite not present yet", flush=True)
        return True
    cmd = _conformance_command(sys.executable, results / "conformance.json")
    print(f"[env_job] conformance: {' '.join(cmd[3:])}", flush=True)
    return subprocess.call(cmd, cwd=str(ROOT), env=_suite_env()) == 0


# The profiler's path through the suite must not depend on the translator being installed.
WITHOUT_TRANSLATOR = ("runtime", "records", "profiler")


def run_conformance_without_translator(results: Path, wheels: list[Path], scratch: Path) -> bool:
    """The conformance suite in a fresh venv holding only the runtime, records and profiler.

    Plain, shadow and profiled replays must match the golden records there, and the
    translator mode must be reported as skipped because its package is absent."""
    if not all(name in present_packages() for name in WITHOUT_TRANSLATOR):
        return True
    venv = scratch / "without-translator"
    python = str(venv / "bin" / "python")
    # The venv is also the proof that the built wheels install and work with no compiler:
    # only binaries are accepted and the venv's own bin/ is the whole PATH.
    no_compiler = dict(os.environ, PATH=str(venv / "bin"))
    steps = [
        [sys.executable, "-m", "venv", str(venv)],
        [python, "-m", "pip", "install", "--quiet", "--only-binary", ":all:", "numpy", "coverage>=7.2"],
        [
            python,
            "-m",
            "pip",
            "install",
            "--quiet",
            "--no-deps",
            "--only-binary",
            ":all:",
            *(str(wheel_of(wheels, name)) for name in WITHOUT_TRANSLATOR),
        ],
    ]
    print(
        f"[env_job] conformance without the translator: venv with {', '.join(WITHOUT_TRANSLATOR)}"
        " (wheels only, no compiler on PATH)",
        flush=True,
    )
    for step in steps:
        if subprocess.call(step, cwd=str(scratch), env=no_compiler if step[0] == python else None) != 0:
            print(f"[env_job] conformance without the translator: {' '.join(step[1:4])} failed", flush=True)
            return False
    probe = subprocess.run(
        [python, "-c", "import importlib.util as u; print(u.find_spec('framehook.translator') is None)"],
        capture_output=True,
        text=True,
        cwd=str(scratch),
    )
    if probe.stdout.strip() != "True":
        print(
            "[env_job] conformance without the translator: framehook.translator is importable "
            f"in the venv ({probe.stdout.strip() or probe.stderr.strip()})",
            flush=True,
        )
        return False
    out = results / "conformance-without-translator.json"
    cmd = _conformance_command(python, out) + ["--no-progress"]  # (the first run showed it)
    print(f"[env_job] conformance without the translator: {' '.join(cmd[3:])}", flush=True)
    # run from the scratch directory, so that nothing of the repository's packages is on sys.path
    ok = subprocess.call(cmd, cwd=str(scratch), env=_suite_env()) == 0
    return ok and _translator_skipped_as_absent(out)


def _translator_skipped_as_absent(out: Path) -> bool:
    data = json.loads(out.read_text())
    # a case whose syntax this version lacks is skipped for that reason in every mode
    wrong = [
        i
        for i in data["results"]
        if i["mode"] == "translator"
        and not (
            i["status"] == "skip"
            and ("framehook-translator is not installed" in i["reason"] or i["reason"].startswith("case needs CPython"))
        )
    ]
    for item in wrong[:3]:
        print(
            f"[env_job] conformance without the translator: {item['case']} translator mode was "
            f"{item['status']} ({item['reason']}), expected a skip naming the absent package",
            flush=True,
        )
    return not wrong


# conformance/realcode: recorded once by the realcode env, replayed by every version's env
REALCODE = ROOT / "conformance" / "realcode"
REALCODE_RECORDS = ROOT / "ci" / "results" / "realcode" / "records"


def run_realcode_record(results: Path, scratch: Path) -> bool:
    """Record the real-code tier on this interpreter with only framehook-records installed
    (a record names the packages it was made with), then test the tier's classification."""
    dest = scratch / "src" / "records"
    copy_sources("records", dest)
    wheels = scratch / "wheels"
    build = [sys.executable, "-m", "pip", "wheel", "--no-build-isolation", "--no-deps", "--quiet", "-w", str(wheels)]
    print("[env_job] realcode: building and installing framehook-records", flush=True)
    if subprocess.call([*build, str(dest)], cwd=str(scratch)) != 0 or not install_packages(
        sorted(wheels.glob("*.whl"))
    ):
        return False
    cmd = [sys.executable, str(REALCODE / "record.py"), "--out", str(REALCODE_RECORDS)]
    print(f"[env_job] realcode: {' '.join(cmd[1:])}", flush=True)
    ok = subprocess.call(cmd, cwd=str(ROOT)) == 0
    tests = [
        sys.executable,
        "-m",
        "pytest",
        str(REALCODE / "tests"),
        "-p",
        "no:cacheprovider",
        "--import-mode=importlib",
        "-q",
        f"--junitxml={results / 'realcode-tests.xml'}",
        "-o",
        "junit_family=xunit1",
    ]
    print(f"[env_job] realcode tests: {' '.join(tests[3:])}", flush=True)
    return subprocess.call(tests, cwd=str(ROOT)) == 0 and ok


def run_realcode_replay(results: Path) -> bool:
    """Replay the real-code tier's records here in every mode (not under coverage: the
    tier measures the records, the package tests measure the lines)."""
    if not (REALCODE_RECORDS / "manifest.json").exists():
        print(
            f"[env_job] realcode: no records in {REALCODE_RECORDS.relative_to(ROOT)} "
            "(ci/matrix.py makes them in its realcode env first): not replayed",
            flush=True,
        )
        return True
    cmd = [
        sys.executable,
        str(REALCODE / "replay.py"),
        "--records",
        str(REALCODE_RECORDS),
        "--json",
        str(results / "realcode.json"),
    ]
    print(f"[env_job] realcode: {' '.join(cmd[1:])}", flush=True)
    return subprocess.call(cmd, cwd=str(ROOT)) == 0


def run_fuzz(results: Path) -> bool:
    """A fixed batch of Hypothesis-drawn programs, plain vs every package (fuzz/run.py
    --examples: derandomized, no database; failures shrunk and saved), and fuzz/tests."""
    cmd = [
        sys.executable,
        "-m",
        "coverage",
        "run",
        str(ROOT / "fuzz" / "run.py"),
        "--examples",
        # 280: within the CPU time of the seeded batch it replaced (300 programs without
        # the profiler call-count oracle), measured on 3.11
        "280",
        "--json",
        str(results / "fuzz.json"),
        "--save",
        str(results / "fuzz-findings"),
    ]
    installed = [p for p in present_packages() if p in FUZZ_MODES]
    if len(installed) < len(FUZZ_MODES):
        cmd += ["--modes", ",".join(FUZZ_MODES[p] for p in installed)]
    print(f"[env_job] fuzz: {' '.join(cmd[3:])}", flush=True)
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(filter(None, [str(ROOT / "fuzz"), os.environ.get("PYTHONPATH")])))
    ok = subprocess.call(cmd, cwd=str(ROOT), env=env) == 0
    if is_debug(current_version()):
        # the fuzzer's own tests check its generators and harness, not our C code: a debug
        # build leaves them (and their redis-server) to the release envs
        print("[env_job] fuzz tests: not run on a debug build", flush=True)
        return ok
    # fuzz/tests/test_database.py shares findings through a real redis-server: installed
    # with the system's apt-get when missing, as provisioning installs patchelf
    if not shutil.which("redis-server") and shutil.which("apt-get") and os.geteuid() == 0:
        apt_env = dict(os.environ, DEBIAN_FRONTEND="noninteractive")
        # two envs at once: the second waits for dpkg's lock instead of failing
        install = ["apt-get", "-o", "DPkg::Lock::Timeout=300", "install", "-y", "-q", "redis-server"]
        print("[env_job] installing redis-server with the system's apt-get", flush=True)
        if subprocess.call(install, env=apt_env) != 0:
            subprocess.call(["apt-get", "-o", "DPkg::Lock::Timeout=300", "update", "-q"], env=apt_env)
            subprocess.call(install, env=apt_env)
    if not shutil.which("redis-server"):
        print("[env_job] redis-server is missing: the fuzz tests' redis database test skips", flush=True)
    # the fuzzer's own tests: its generators, the harness's comparisons, the database
    tests = [
        sys.executable,
        "-m",
        "pytest",
        str(ROOT / "fuzz" / "tests"),
        "-p",
        "no:cacheprovider",
        "--import-mode=importlib",
        "-q",
        f"--junitxml={results / 'fuzz-tests.xml'}",
        "-o",
        "junit_family=xunit1",
    ]
    print(f"[env_job] fuzz tests: {' '.join(tests[3:])}", flush=True)
    return subprocess.call(tests, cwd=str(ROOT), env=env) == 0 and ok


def main(argv: list[str]) -> int:
    jobs = argv or ["tests"]
    unknown = set(jobs) - {"tests", "conformance", "realcode-record"}
    if unknown:
        print(f"env_job.py: unknown job(s) {sorted(unknown)}; expected 'tests', 'conformance' or 'realcode-record'")
        return 2
    results = Path(os.environ.get("FRAMEHOOK_RESULTS", ROOT / "ci" / "results" / "local"))
    results.mkdir(parents=True, exist_ok=True)
    if not build_matches_env():
        return 2
    report_unsupported()
    scratch = Path(tempfile.mkdtemp(prefix="framehook-build-"))
    try:
        return 0 if _run_jobs(jobs, results, scratch) else 1
    finally:
        shutil.rmtree(scratch, ignore_errors=True)


def _run_jobs(jobs: list[str], results: Path, scratch: Path) -> bool:
    if jobs == ["realcode-record"]:
        return run_realcode_record(results, scratch)
    wheels = build_wheels(scratch)
    if wheels is None or not install_packages(wheels):
        print("[env_job] building or installing the packages failed")
        return False
    ok = True
    cross = cross_package_jobs(current_version())
    if not cross:
        print(
            f"[env_job] conformance and fuzzing: not run on CPython {current_version()}, they need "
            f"the translator ({why_not('translator', current_version())})",
            flush=True,
        )
    if "tests" in jobs:
        ok &= run_package_tests(results)
        if cross:
            ok &= run_fuzz(results)
    if "conformance" in jobs and cross:
        ok &= run_conformance(results)
        ok &= run_realcode_replay(results)
    if "conformance" in jobs:
        ok &= run_conformance_without_translator(results, wheels, scratch)
    return ok


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
