"""Runs framehook's CPython matrix and prints its tables.

    python3 ci/matrix.py conformance   # main job: conformance suite on every CPython, case x version table
    python3 ci/matrix.py test          # all tests: every package on every CPython, coverage, gcov, conformance

Interpreters are found on PATH (python3.X) and in pyenv's versions directory; a version
found in neither is provisioned from Debian's packages by ci/provision.py (once: it is
kept in a cache directory). Every one of CPython 3.9-3.15 is required: a missing one that
cannot be provisioned is an error, not a skip. The test job also runs the debug builds
3.14d and 3.15d (python3.14d on PATH, else provisioned from Debian's python3.14-dbg; just
as required), on a bounded subset: the runtime's and profiler's tests and the fuzz batch
(ci/support.py DEBUG_BUILD_*). --versions runs a subset and then needs only
those; the gcov envs (C line coverage, one per frame layout) run for the versions among
3.10-3.14 asked for. Each package runs only on the versions its
metadata (requires-python) admits, the conformance suite and the fuzz batch only where
the translator does (ci/support.py); the tables show the other cells as n/a. tox is
bootstrapped into ci/.bootstrap if the running Python does not have it.
"""

from __future__ import annotations

import argparse
import glob
import json
import os
import shutil
import subprocess
import sys
import time
import xml.etree.ElementTree as ET
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import provision
from support import (
    DEBUG_SUBSET_NOTE,
    DEBUG_VERSIONS,
    PACKAGES,
    VERSIONS,
    conformance_runs,
    cross_package_jobs,
    fuzz_tests_run,
    is_debug,
    supports,
    tested_packages,
    why_not,
)

ROOT = Path(__file__).resolve().parent.parent
RESULTS = ROOT / "ci" / "results"
BOOTSTRAP = ROOT / "ci" / ".bootstrap"
COVERAGE_FLOOR = 90.0
# one gcov env per frame layout the runtime reads (tox.ini's gcov-py3XX envs): 3.9 shares
# 3.10's (only its tracing switch differs); 3.15 shares 3.14's stack references but arms the
# hook per call (marks.c, compiled for 3.15 only)
GCOV_VERSIONS = ("3.10", "3.11", "3.12", "3.13", "3.14", "3.15")
# conformance/realcode: its libraries' suites are recorded on this CPython (tox.ini's
# realcode env) before the version envs replay them
REALCODE_ENV = "realcode"
REALCODE_RECORDING = "3.11"


# every version the test job runs: the release builds, then the debug builds ("3.14d")
ALL_VERSIONS = VERSIONS + DEBUG_VERSIONS


def env_name(version: str) -> str:
    return "py" + version.replace(".", "")  # 3.14d -> py314d


def _reported_version(exe: str) -> str | None:
    """The version an interpreter reports: "3.14", or "3.14d" for a debug build."""
    try:
        out = subprocess.run(
            [exe, "-c", provision.WHICH_VERSION],
            capture_output=True,
            text=True,
            timeout=60,
        )
    except (OSError, subprocess.TimeoutExpired):
        return None
    return out.stdout.strip() if out.returncode == 0 else None


def find_interpreters() -> dict[str, str]:
    """Map each version of the matrix to an interpreter path: PATH first, then pyenv, then
    an earlier provisioning (ci/provision.py). A debug build ("3.14d") is python3.14d on
    PATH, else provisioned; a candidate counts only if it is the build asked for."""
    pyenv_root = os.environ.get("PYENV_ROOT", os.path.expanduser("~/.pyenv"))
    found: dict[str, str] = {}
    for version in ALL_VERSIONS:
        candidates = []
        on_path = shutil.which(f"python{version}")
        if on_path and "/shims/" not in on_path:
            candidates.append(on_path)
        if not is_debug(version):
            pattern = os.path.join(pyenv_root, "versions", f"{version}.*", "bin", f"python{version}")
            candidates.extend(sorted(glob.glob(pattern), reverse=True))
        for exe in candidates:
            if _reported_version(exe) == version:
                found[version] = exe
                break
        else:
            provisioned = provision.existing(version)
            if provisioned:
                found[version] = provisioned
    return found


def provision_missing(interpreters: dict[str, str], missing: list[str]) -> list[str]:
    """Provision each missing version into the cache; returns those that failed."""
    failed = []
    for version in missing:
        print(
            f"[matrix] CPython {version} not found on PATH{'' if is_debug(version) else ' or in pyenv'}: provisioning it "
            f"under {provision.default_root()}",
            flush=True,
        )
        try:
            interpreters[version] = provision.provision(version)
        except provision.ProvisionError as exc:
            print(f"[matrix] error: provisioning CPython {version} failed: {exc}", flush=True)
            failed.append(version)
    return failed


def tox_command() -> list[str]:
    try:
        import tox  # noqa: F401

        return [sys.executable, "-m", "tox"]
    except ImportError:
        pass
    py = BOOTSTRAP / "bin" / "python"
    if not py.exists() or subprocess.call([str(py), "-c", "import tox"], stderr=subprocess.DEVNULL):
        print(f"[matrix] installing tox into {BOOTSTRAP.relative_to(ROOT)}", flush=True)
        subprocess.check_call([sys.executable, "-m", "venv", "--clear", str(BOOTSTRAP)])
        subprocess.check_call([str(py), "-m", "pip", "install", "--quiet", "tox>=4.11"])
    return [str(py), "-m", "tox"]


def debug_interpreter_variable(version: str) -> str:
    """The variable tox.ini's debug env takes its interpreter from: 3.14d -> FRAMEHOOK_PYTHON_314D."""
    return "FRAMEHOOK_PYTHON_" + version.replace(".", "").upper()


#: lines of an env's log shown while it runs (conformance/run.py's, one per case group)
PROGRESS_PREFIX = "[conformance] "


def relay_progress(log: Path, running: subprocess.Popen, env: str, every: float = 1.0) -> int:
    """Wait for ``running``, showing each progress line of its log as it appears; its exit
    status."""
    seen = 0
    while True:
        rc = running.poll()
        try:
            text = log.read_text(errors="replace")
        except OSError:
            text = ""
        lines = text.splitlines(keepends=True)
        complete = [line for line in lines if line.endswith("\n")]
        for line in complete[seen:]:
            if line.startswith(PROGRESS_PREFIX):
                print(f"[matrix] {env}: {line[len(PROGRESS_PREFIX) :].rstrip()}", flush=True)
        seen = len(complete)
        if rc is not None:
            return rc
        time.sleep(every)


def run_env(
    tox: list[str], env: str, interpreters: dict[str, str], jobs: list[str], relay: bool = False
) -> tuple[str, int, float]:
    """Run a tox env, its output into its log; with ``relay``, its progress lines shown."""
    log = RESULTS / "logs" / f"{env}.log"
    log.parent.mkdir(parents=True, exist_ok=True)
    # Only release builds are offered to discovery: a debug build also answers to "py314",
    # and a debug prefix holds a release python3.14 too. A debug env is given its
    # interpreter's path by name (tox.ini's base_python of py314d, py315d).
    release = [exe for version, exe in interpreters.items() if not is_debug(version)]
    variables = {debug_interpreter_variable(v): exe for v, exe in interpreters.items() if is_debug(v)}
    # --discover takes every path at once (repeating it keeps only the last); the
    # interpreters' directories also go on PATH for virtualenv's own discovery.
    cmd = [*tox, "-c", str(ROOT / "tox.ini"), *(["--discover", *release] if release else []), "-e", env]
    if jobs:
        cmd += ["--", *jobs]
    path = os.pathsep.join([os.path.dirname(exe) for exe in release] + [os.environ.get("PATH", "")])
    start = time.monotonic()
    print(f"[matrix] {env}: started (log: {log.relative_to(ROOT)})", flush=True)
    with open(log, "w") as fh:
        running = subprocess.Popen(
            cmd, cwd=str(ROOT), stdout=fh, stderr=subprocess.STDOUT, env=dict(os.environ, PATH=path, **variables)
        )
        rc = relay_progress(log, running, env) if relay else running.wait()
    elapsed = time.monotonic() - start
    print(f"[matrix] {env}: exit {rc} after {elapsed:.0f}s", flush=True)
    if rc != 0:
        tail = log.read_text(errors="replace").splitlines()[-40:]
        print("\n".join(f"    | {line}" for line in tail), flush=True)
    return env, rc, elapsed


def junit_counts(path: Path) -> tuple[int, int, int] | None:
    """(passed, failed, skipped) from a pytest JUnit file, or None when it is absent."""
    if not path.exists():
        return None
    try:
        root = ET.parse(path).getroot()
    except ET.ParseError:
        return None
    suites = [root] if root.tag == "testsuite" else list(root.iter("testsuite"))
    tests = failed = skipped = 0
    for suite in suites:
        tests += int(suite.get("tests", 0))
        failed += int(suite.get("failures", 0)) + int(suite.get("errors", 0))
        skipped += int(suite.get("skipped", 0))
    return tests - failed - skipped, failed, skipped


def _not_applicable(versions: list[str]) -> list[str]:
    """Footnotes for the n/a cells: one per (package, version) a package does not support,
    and one line for the packages a debug build leaves out."""
    notes = []
    for pkg in PACKAGES:
        for version in versions:
            if not supports(pkg, version):
                notes.append(f"  {pkg} on {version}: {why_not(pkg, version)}")
    subset = [(p, v) for v in versions for p in PACKAGES if supports(p, v) and p not in tested_packages(v)]
    subset += [("fuzz", v) for v in versions if cross_package_jobs(v) and not fuzz_tests_run(v)]
    if subset:
        pkgs = ", ".join(sorted({p for p, _ in subset}, key=(*PACKAGES, "fuzz").index))
        debug = ", ".join(sorted({v for _, v in subset}, key=versions.index))
        notes.append(f"  {pkgs} on {debug}: {DEBUG_SUBSET_NOTE}")
    return notes


def print_test_table(versions: list[str]) -> tuple[int, int, int]:
    totals = [0, 0, 0]
    width = 16
    print("\nTests: passed/failed/skipped per package and CPython")
    print("package".ljust(12) + "".join(v.ljust(width) for v in versions))
    # the fuzzer's own tests (fuzz/tests: its generators and comparisons) get a row too
    rows = [(p, f"{p}.xml", lambda v, p=p: p in tested_packages(v)) for p in PACKAGES]
    rows.append(("fuzz", "fuzz-tests.xml", fuzz_tests_run))
    for pkg, junit, applies in rows:
        row = pkg.ljust(12)
        for version in versions:
            counts = junit_counts(RESULTS / env_name(version) / junit)
            if counts is None and not applies(version):
                cell = "n/a"
            elif counts is None:
                cell = "-"
            else:
                cell = "/".join(map(str, counts))
                for i, n in enumerate(counts):
                    totals[i] += n
            row += cell.ljust(width)
        print(row)
    notes = _not_applicable(versions)
    if notes:
        print(
            "n/a: not run, the package does not support that CPython (yet) or the env is a"
            " debug build's subset; the fuzz row runs where the translator does, on release builds:"
        )
        print("\n".join(notes))
    return totals[0], totals[1], totals[2]


def print_conformance_table(versions: list[str], full: bool = True) -> tuple[int, int, int]:
    """Case x version table (a cell names the modes that did not pass), or with
    full=False a per-version summary plus every failure."""
    by_version: dict[str, dict[str, list[dict]]] = {}
    for version in versions:
        path = RESULTS / env_name(version) / "conformance.json"
        if path.exists():
            data = json.loads(path.read_text())
            cases: dict[str, list[dict]] = {}
            for item in data.get("results", []):
                cases.setdefault(item["case"], []).append(item)
            by_version[version] = cases
    names = sorted({case for cases in by_version.values() for case in cases})
    if not names:
        print("\nConformance: no results")
        _print_cross_package_notes(versions)
        return 0, 0, 0
    width = max(14, max(len(n) for n in names) + 2)
    col = 14
    print(
        f"\nConformance: {len(names)} cases x {len(versions)} CPython versions "
        "(ok = plain, shadow, translator and profiled replays all match the golden record)"
    )
    if not full:
        return _conformance_summary(by_version, versions)
    print("case".ljust(width) + "".join(v.ljust(col) for v in versions))
    passed = failed = skipped = 0
    notes: list[str] = []
    for name in names:
        row = name.ljust(width)
        for version in versions:
            items = by_version.get(version, {}).get(name)
            if items is None:
                row += ("-" if conformance_runs(version) else "n/a").ljust(col)
                continue
            bad = [i for i in items if i["status"] == "fail"]
            skip = [i for i in items if i["status"] == "skip"]
            passed += sum(1 for i in items if i["status"] == "pass")
            failed += len(bad)
            skipped += len(skip)
            if bad:
                cell = "FAIL:" + ",".join(i["mode"] for i in bad)
            elif skip and len(skip) == len(items):
                cell = "skip"
            elif skip:
                cell = "ok*"
            else:
                cell = "ok"
            # one line per (status, reason), naming the modes it applies to
            grouped: dict[tuple[str, str], list[str]] = {}
            for i in bad + skip:
                grouped.setdefault((i["status"], i.get("reason", "")), []).append(i["mode"])
            for (status, reason), modes in grouped.items():
                which = "all modes" if len(modes) == len(items) else ",".join(modes)
                notes.append(f"  {name} [{version} {which}] {status}: {reason}")
            row += cell.ljust(col)
        print(row)
    if notes:
        print("\nReasons (ok* = some modes skipped):")
        print("\n".join(notes))
    for version in versions:
        path = RESULTS / env_name(version) / "conformance.json"
        if path.exists():
            diffs = json.loads(path.read_text()).get("decision_diffs", [])
            for diff in diffs:
                print(f"  translator decisions differ on {version}: {diff}")
    _print_cross_package_notes(versions)
    p, f, s = print_without_translator(versions)
    return passed + p, failed + f, skipped + s


def print_realcode_table(versions: list[str]) -> tuple[int, int]:
    """The real-code tier (conformance/realcode): a library:function x version table of
    matched/total records, totals, the classes of the others and their causes. Returns
    (records replayed, framehook defects)."""
    by_version: dict[str, dict] = {}
    for version in versions:
        path = RESULTS / env_name(version) / "realcode.json"
        if path.exists():
            by_version[version] = json.loads(path.read_text())
    manifest_path = RESULTS / REALCODE_ENV / "records" / "manifest.json"
    manifest = json.loads(manifest_path.read_text()) if manifest_path.exists() else None
    print(
        "\nConformance, real code (conformance/realcode): libraries' own test suites recorded once,"
        " replayed on every version in every mode"
    )
    if manifest:
        libs = ", ".join(f"{name} {info['version']} ({info['pytest']})" for name, info in manifest["libraries"].items())
        print(
            f"  recorded on CPython {manifest['python']}: {libs}; at most {manifest['cap']} records kept per "
            "function (evenly spaced over its calls)"
        )
    if not by_version:
        print("  no results" + ("" if manifest else f" (no records: see {RESULTS.name}/logs/{REALCODE_ENV}.log)"))
        return 0, 0
    cells: dict[str, dict[str, list[int]]] = {}
    for version, data in by_version.items():
        for item in data["results"]:
            cell = cells.setdefault(item["case"], {}).setdefault(version, [0, 0])
            cell[0] += item["cls"] == "match"
            cell[1] += 1
    names = sorted(cells)
    width = max(len(n) for n in names) + 2
    col = 10
    print("  cell: records that MATCH in every mode / records replayed")
    print("  " + "case".ljust(width) + "".join(v.ljust(col) for v in versions))
    for name in names:
        row = "".join(
            ("%d/%d" % tuple(cells[name][v]) if v in cells[name] else ("-" if conformance_runs(v) else "n/a")).ljust(
                col
            )
            for v in versions
        )
        print("  " + name.ljust(width) + row)
    classes = ("not-recordable", "cpython-difference", "library-version", "framehook-defect")
    # a placeholder compares equal to a placeholder of the same type: such a MATCH checked less
    weak = [
        str(sum(1 for i in by_version[v]["results"] if i["cls"] == "match" and i.get("placeholders")))
        if v in by_version
        else "-"
        for v in versions
    ]
    totals = ["%d/%d" % _realcode_totals(by_version[v]) if v in by_version else "-" for v in versions]
    print("  " + "all records".ljust(width) + "".join(t.ljust(col) for t in totals))
    print("  " + "MATCH %".ljust(width) + "".join(_realcode_percent(by_version.get(v)).ljust(col) for v in versions))
    print("  " + "MATCH with placeholders".ljust(width) + "".join(w.ljust(col) for w in weak))
    seconds = [f"{by_version[v]['seconds']:.0f}s" if v in by_version else "-" for v in versions]
    print("  " + "replay time".ljust(width) + "".join(t.ljust(col) for t in seconds))
    for cls in classes:
        counts = [
            str(sum(1 for i in by_version[v]["results"] if i["cls"] == cls)) if v in by_version else "-"
            for v in versions
        ]
        print("  " + cls.ljust(width) + "".join(c.ljust(col) for c in counts))
    causes: dict[tuple[str, str], dict[str, int]] = {}
    for version, data in by_version.items():
        for item in data["results"]:
            if item["cls"] != "match":
                per = causes.setdefault((item["cls"], item["cause"]), {})
                per[version] = per.get(version, 0) + 1
    print("  Causes (records per version):")
    # defects first, then the named classes; the placeholders' causes only the most frequent
    ranked = sorted(causes.items(), key=lambda kv: (-classes.index(kv[0][0]), -sum(kv[1].values())))
    unrecordable = [kv for kv in ranked if kv[0][0] == "not-recordable"]
    ranked = [kv for kv in ranked if kv[0][0] != "not-recordable"] + unrecordable[:15]
    for (cls, cause), per in ranked:
        where = ", ".join(f"{v}: {n}" for v, n in sorted(per.items(), key=lambda kv: versions.index(kv[0])))
        print(f"    {cls}: {cause} [{where}]")
    if len(unrecordable) > 15:
        print(f"    (and {len(unrecordable) - 15} less frequent causes of not-recordable: see realcode.json)")
    defects = sum(1 for d in by_version.values() for i in d["results"] if i["cls"] == "framehook-defect")
    total = sum(len(d["results"]) for d in by_version.values())
    strict = any(d.get("strict") for d in by_version.values())
    print(
        f"  framehook defects: {defects} of {total} replays"
        + (" (strict: they fail the job)" if strict else " (lenient: FRAMEHOOK_REALCODE_STRICT=0 was set)")
    )
    return total, defects if strict else 0


def _realcode_totals(data: dict) -> tuple[int, int]:
    return sum(1 for i in data["results"] if i["cls"] == "match"), len(data["results"])


def _realcode_percent(data: dict | None) -> str:
    if not data or not data["results"]:
        return "-"
    matched = sum(1 for i in data["results"] if i["cls"] == "match")
    return f"{100 * matched / len(data['results']):.1f}"


def print_without_translator(versions: list[str]) -> tuple[int, int, int]:
    """The suite's run in a venv holding only the runtime, records and profiler."""
    print(
        "\nConformance without the translator (only runtime, records and profiler installed; translator mode skipped):"
    )
    totals = [0, 0, 0]
    for version in versions:
        path = RESULTS / env_name(version) / "conformance-without-translator.json"
        if not path.exists():
            print(f"  {version:<6} " + (f"n/a: {DEBUG_SUBSET_NOTE}" if is_debug(version) else "-"))
            continue
        items = json.loads(path.read_text()).get("results", [])
        counts = _print_version_counts(version, items)
        totals = [a + b for a, b in zip(totals, counts)]
    return totals[0], totals[1], totals[2]


def _print_version_counts(version: str, items: list[dict], suffix: str = "") -> list[int]:
    """One version's passed/failed/skipped line, then each failure; returns the counts."""
    counts = [sum(1 for i in items if i["status"] == s) for s in ("pass", "fail", "skip")]
    print(f"  {version:<6} {counts[0]} passed, {counts[1]} failed, {counts[2]} skipped{suffix}")
    for i in items:
        if i["status"] == "fail":
            print(f"    FAIL {i['case']} [{i['mode']}]: {i.get('reason', '')}")
    return counts


def _cross_package_note(version: str) -> str:
    """Why conformance (or fuzzing) does not run on `version`."""
    if cross_package_jobs(version) and is_debug(version):
        return DEBUG_SUBSET_NOTE
    return f"they run through the translator, and {why_not('translator', version)}"


def _print_cross_package_notes(versions: list[str]) -> None:
    for version in versions:
        if not conformance_runs(version):
            print(f"  n/a on {version}: {_cross_package_note(version)}")


def _conformance_summary(by_version: dict, versions: list[str]) -> tuple[int, int, int]:
    totals = [0, 0, 0]
    for version in versions:
        if version not in by_version and not conformance_runs(version):
            print(f"  {version:<6} n/a: {_cross_package_note(version)}")
            continue
        if version not in by_version:
            print(f"  {version:<6} - (no results: see the env's log)")
            continue
        items = [i for case in by_version[version].values() for i in case]
        skipped_modes = sorted({i["mode"] for i in items if i["status"] == "skip"})
        counts = _print_version_counts(
            version, items, f" (skipped modes: {', '.join(skipped_modes)})" if skipped_modes else ""
        )
        totals = [a + b for a, b in zip(totals, counts)]
    print("  (python3 ci/matrix.py conformance prints the case x version table)")
    p, f, s = print_without_translator(versions)
    return totals[0] + p, totals[1] + f, totals[2] + s


def print_fuzz_summary(versions: list[str]) -> tuple[int, int]:
    """Outcomes of fuzz/run.py's fixed batch per version (a mismatch counts as a failure)."""
    print("\nDifferential fuzzing (fuzz/run.py --examples; plain vs shadow, profiler, translator):")
    matched = mismatched = 0
    for version in versions:
        path = RESULTS / env_name(version) / "fuzz.json"
        if not path.exists():
            print(f"  {version:<6} " + ("-" if cross_package_jobs(version) else f"n/a: {_cross_package_note(version)}"))
            continue
        data = json.loads(path.read_text())
        bad = len(data["mismatches"])
        matched += data["compared"] - bad
        mismatched += bad
        # a batch written before fuzz.json named its batch was the seeded one
        batch = data.get("batch", "seeds 0-299")
        rate = data.get("programs_per_cpu_second")
        print(
            f"  {version:<6} {data['programs']} programs ({batch}"
            + (f"; {rate:g} per CPU s" if rate else "")
            + f"), {data['compared'] - bad} outcomes matched, {bad} mismatched"
        )
        for m in data["mismatches"][:5]:
            where = f"seed {m['seed']}" if m.get("seed") is not None else m.get("signature", "program")
            print(f"    {where} [{m['mode']}]: plain {m['expected']} vs {m['got']}")
            if m.get("saved"):
                print(f"      saved: {', '.join(m['saved'])}")
    return matched, mismatched


def combine_coverage(tox: list[str], versions: list[str]) -> bool:
    """Combine coverage data from every env and hold each package that ran to the floor."""
    data_dir = RESULTS / "coverage"
    # a package held to the floor had its tests run here (not only a debug build's subset)
    measured = [pkg for pkg in PACKAGES if any(pkg in tested_packages(v) for v in versions)]
    if not measured:
        print(f"\n[matrix] no package supports CPython {', '.join(versions)}: no coverage to combine")
        return True
    parts = list(data_dir.glob(".coverage.*"))
    if not parts and not (data_dir / ".coverage").exists():
        print("[matrix] no coverage data was recorded")
        return False
    py = tox[0]
    env = dict(os.environ, COVERAGE_RCFILE=str(ROOT / "ci" / "coveragerc"), COVERAGE_FILE=str(data_dir / ".coverage"))
    if subprocess.call([py, "-c", "import coverage"], stderr=subprocess.DEVNULL):
        subprocess.check_call([py, "-m", "pip", "install", "--quiet", "coverage>=7.2"])
    if parts:  # else a report of an earlier combination (report after test)
        subprocess.check_call([py, "-m", "coverage", "combine", "--keep", "-q"], cwd=str(ROOT), env=env)
    ok = True
    print("\nPython line coverage, combined over every CPython (floor %.0f%%):" % COVERAGE_FLOOR)
    for pkg in measured:
        src = ROOT / "packages" / pkg / "src"
        if not (ROOT / "packages" / pkg / "pyproject.toml").exists() or not any(src.rglob("*.py")):
            continue  # not a package yet: nothing installs or tests it
        rc = subprocess.call(
            [
                py,
                "-m",
                "coverage",
                "report",
                f"--include=packages/{pkg}/src/*",
                f"--fail-under={COVERAGE_FLOOR}",
                "--format=total",
            ],
            cwd=str(ROOT),
            env=env,
            stdout=subprocess.PIPE,
        )
        total = subprocess.run(
            [py, "-m", "coverage", "report", f"--include=packages/{pkg}/src/*", "--format=total"],
            cwd=str(ROOT),
            env=env,
            capture_output=True,
            text=True,
        ).stdout.strip()
        verdict = "ok" if rc == 0 else "BELOW FLOOR"
        print(f"  {pkg:<12}{total:>6}%  {verdict}")
        if rc != 0:
            ok = False
            subprocess.call(
                [py, "-m", "coverage", "report", "-m", f"--include=packages/{pkg}/src/*", "--skip-covered"],
                cwd=str(ROOT),
                env=env,
            )
    return ok


def record_realcode(tox: list[str], interpreters: dict[str, str], no_provision: bool) -> tuple[str, int, float]:
    """The real-code tier's recording env (tox.ini's realcode), on CPython 3.11 whichever
    versions were asked for: the version envs replay what it records."""
    shutil.rmtree(RESULTS / REALCODE_ENV, ignore_errors=True)
    if REALCODE_RECORDING not in interpreters and (
        no_provision or provision_missing(interpreters, [REALCODE_RECORDING])
    ):
        print(
            f"[matrix] error: the real-code tier records on CPython {REALCODE_RECORDING}, which is missing", flush=True
        )
        return REALCODE_ENV, 2, 0.0
    return run_env(tox, REALCODE_ENV, interpreters, ["realcode-record"])


def env_jobs(env: str, jobs: list[str]) -> list[str]:
    """ci/env_job.py's jobs for a tox env: a debug build's env runs no conformance (its
    tests job is the debug subset), the gcov and checks envs take none."""
    if not env.startswith("py"):
        return []
    if env.endswith("d") and "tests" in jobs:
        return ["tests"]
    return jobs


def gcov_envs(versions: list[str]) -> list[str]:
    return [f"gcov-{env_name(v)}" for v in versions if v in GCOV_VERSIONS]


def merge_gcov(tox: list[str]) -> bool:
    """Merge the gcov envs' tracefiles (a line counts if any CPython ran it) and print them."""
    root = RESULTS / "gcov"
    if not any(root.glob("*/*.json")):
        return True
    py = tox[0]
    if subprocess.call([py, "-c", "import gcovr"], stderr=subprocess.DEVNULL):
        subprocess.check_call([py, "-m", "pip", "install", "--quiet", "gcovr>=7"])
    rc = subprocess.call([py, str(ROOT / "ci" / "gcov_job.py"), "merge", str(root)], stdout=subprocess.DEVNULL)
    print("\nC line coverage (gcov), one env per frame layout, merged:")
    print((root / "summary.txt").read_text().rstrip())
    for env_dir in sorted(p for p in root.iterdir() if p.is_dir()):
        for line in (env_dir / "summary.txt").read_text().splitlines() if (env_dir / "summary.txt").exists() else []:
            if line.startswith("framehook-") or line.startswith("lines:"):
                print(f"  {env_dir.name}: {line}")
    return rc == 0


#: what one count of each kind is, for the last line of a job
COUNTED = {
    "tests": "tests",
    "replays": "conformance replays (a case in one mode on one CPython; real-code defects count as failed)",
    "fuzz": "fuzzed programs",
}


def totals_line(parts: list[tuple[str, int, int, int]]) -> str:
    """The job's last line: the totals, and what was counted (``parts``: kind, passed,
    failed, skipped)."""
    p, f, s = (sum(part[i] for part in parts) for i in (1, 2, 3))
    what = "; ".join(f"{pp + ff + ss:,} {COUNTED[kind]}" for kind, pp, ff, ss in parts)
    return f"{p} passed, {f} failed, {s} skipped (of {what})"


def report(
    tox: list[str], versions: list[str], coverage: bool, full_table: bool = False
) -> tuple[bool, list[tuple[str, int, int, int]]]:
    """Every table of the test job from the results on disk (this run's, or the per-version
    CI jobs' artifacts gathered into ci/results); whether all is well, and the counts per
    kind (``totals_line``)."""
    p, f, s = print_test_table(versions)
    cp, cf, cs = print_conformance_table(versions, full=full_table)
    _, realcode_defects = print_realcode_table(versions)
    cf += realcode_defects
    fp, ff = print_fuzz_summary(versions)
    ok = True
    if coverage:
        ok &= combine_coverage(tox, versions)
    ok &= merge_gcov(tox)
    checks_log = RESULTS / "logs" / "checks.log"
    if checks_log.exists():
        print("\nRepository checks (ci/checks.py):")
        for line in checks_log.read_text(errors="replace").splitlines():
            if line.startswith("[checks]"):
                print("  " + line[len("[checks] ") :])
    return ok, [("tests", p, f, s), ("replays", cp, cf, cs), ("fuzz", fp, ff, 0)]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument(
        "job",
        choices=["test", "conformance", "gcov", "checks", "report", "interpreters"],
        help="test: all tests; conformance: the conformance table; gcov: only the C "
        "coverage envs; checks: only the repository checks (ci/checks.py); "
        "report: print the test job's tables from ci/results; interpreters: list them",
    )
    parser.add_argument(
        "--parallel",
        type=int,
        default=max(1, min(2, os.cpu_count() or 1)),
        help="tox envs run at once (default: up to 2)",
    )
    parser.add_argument(
        "--versions",
        default=None,
        help="comma-separated subset of %s (default: all; the conformance and gcov jobs: the "
        "release builds; a subset needs only those interpreters; 3.14d is the debug build)" % ",".join(ALL_VERSIONS),
    )
    parser.add_argument(
        "--no-gcov",
        action="store_true",
        help="skip the gcov envs (one per frame layout: %s)" % ", ".join(GCOV_VERSIONS),
    )
    parser.add_argument(
        "--no-coverage-report",
        action="store_true",
        help="record coverage data but do not combine it or hold it to the floor "
        "(a per-version CI job; the report job does that over every version)",
    )
    parser.add_argument(
        "--no-provision",
        action="store_true",
        help="fail on a missing interpreter instead of provisioning it (ci/provision.py)",
    )
    args = parser.parse_args(argv)

    if args.versions is None:
        # the debug builds run the test job's subset only: conformance and gcov leave them out
        args.versions = ",".join(VERSIONS if args.job in ("conformance", "gcov") else ALL_VERSIONS)
    versions = [v.strip() for v in args.versions.split(",") if v.strip()]
    bad = [v for v in versions if v not in ALL_VERSIONS]
    if bad:
        parser.error(f"--versions: {bad} not among the supported {list(ALL_VERSIONS)}")
    if args.job == "report":
        tox = tox_command()
        ok, parts = report(tox, versions, not args.no_coverage_report, full_table=True)
        print(f"\n[matrix] report over {', '.join(versions)}")
        print(totals_line(parts))
        return 0 if ok and not any(part[2] for part in parts) else 1

    if args.job == "checks":  # runs on tox's own Python: no interpreter of the matrix needed
        return run_env(tox_command(), "checks", {}, [])[1]

    # Only the versions asked for must be present: the default asks for the whole matrix,
    # which is what .ci/run checks; a subset is for a machine that has only those.
    interpreters = find_interpreters()
    missing = [v for v in versions if v not in interpreters]
    if missing and not args.no_provision:
        missing = provision_missing(interpreters, missing)
    for version in versions:
        print(f"[matrix] CPython {version}: {interpreters.get(version, 'MISSING')}", flush=True)
    if missing:
        how = "looked on PATH and in pyenv" + ("" if args.no_provision else "; provisioning failed")
        print(
            f"[matrix] error: CPython {', '.join(missing)} not found ({how}); "
            "this run needs every one of " + ", ".join(versions),
            flush=True,
        )
        return 2
    if args.job == "interpreters":
        return 0

    tox = tox_command()
    if args.job == "gcov":
        envs, jobs = gcov_envs(versions), []
    else:
        # the debug envs first: among the longest (a debug interpreter is several times
        # slower), they should not be left running alone at the end while a core idles
        envs = [env_name(v) for v in versions if is_debug(v)] + [env_name(v) for v in versions if not is_debug(v)]
        jobs = ["tests", "conformance"] if args.job == "test" else ["conformance"]
        if args.job == "test" and not args.no_gcov:
            envs += gcov_envs(versions)
        if args.job == "test":
            envs.append("checks")
    for env in envs:
        shutil.rmtree(RESULTS / env, ignore_errors=True)
    if args.job in ("test", "gcov"):
        shutil.rmtree(RESULTS / "gcov", ignore_errors=True)
    if args.job == "test":
        shutil.rmtree(RESULTS / "coverage", ignore_errors=True)
    if not envs:
        print(f"[matrix] nothing to run: gcov runs on {', '.join(GCOV_VERSIONS)} only", flush=True)
        return 2
    start = time.monotonic()
    recorded: list[tuple[str, int, float]] = []
    if args.job in ("test", "conformance") and any(conformance_runs(v) for v in versions):
        recorded = [record_realcode(tox, interpreters, args.no_provision)]
    with ThreadPoolExecutor(max_workers=args.parallel) as pool:
        relay = args.job == "conformance"  # the test job's envs run for minutes of tests first
        outcomes = list(pool.map(lambda e: run_env(tox, e, interpreters, env_jobs(e, jobs), relay), envs))
    failed_envs = [env for env, rc, _ in recorded + outcomes if rc != 0]

    ok = not failed_envs
    parts: list[tuple[str, int, int, int]] = []
    if args.job == "test":
        good, parts = report(tox, versions, not args.no_coverage_report)
        ok &= good
    elif args.job == "gcov":
        ok &= merge_gcov(tox)
    else:
        p, f, s = print_conformance_table(versions)
        _, realcode_defects = print_realcode_table(versions)
        parts = [("replays", p, f + realcode_defects, s)]
    print(
        f"\n[matrix] {len(envs) + len(recorded)} envs in {time.monotonic() - start:.0f}s; failed envs: {failed_envs or 'none'}"
    )
    if parts:
        print(totals_line(parts))
    return 0 if ok and not any(part[2] for part in parts) else 1


if __name__ == "__main__":
    sys.exit(main())
