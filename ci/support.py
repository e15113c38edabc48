"""The CPython versions of the matrix and which of them each framehook package supports.

A package's support range is its own metadata (``requires-python`` in its pyproject.toml),
so a port to a new version shows up in the matrix as soon as the package declares it; a
package whose in-repository dependency (framehook-runtime for the translator) is not
supported somewhere is not supported there either. Standard library only: ci/matrix.py
runs this under whichever python3 is at hand and ci/env_job.py under every version.

The matrix also holds CPython debug builds (Py_DEBUG, assertions on), spelled with a "d":
"3.14d" is the debug build of 3.14, python3.14d, found on PATH, else provisioned from
Debian's python3.14-dbg (ci/provision.py 3.14d). A package supports a debug build where it
supports the release; a debug env runs a bounded subset (DEBUG_BUILD_*), since a debug
interpreter is several times slower.
"""

from __future__ import annotations

import re
import shutil
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
VERSIONS = ("3.9", "3.10", "3.11", "3.12", "3.13", "3.14", "3.15")
# debug builds of the matrix: the C code's assertions and CPython's own (Py_DEBUG) catch
# what a release build lets pass, like the abort Dynamo's eval-frame code hit (pytorch#189556)
DEBUG_VERSIONS = ("3.14d", "3.15d")
# what a debug env runs: the tests of the C packages (the runtime's pass-through corpus
# among them) without the slow kinds (valgrind, regrtest), and the fuzz batch through every
# package; not the translator's or records' tests (pure Python: what a debug build checks
# is the C code, which the fuzz batch drives through the translator), nor the fuzzer's own
# tests (its generators and harness), nor the conformance suite (its replays go through
# the same C paths as the fuzz batch)
DEBUG_BUILD_PACKAGES = ("runtime", "profiler")
DEBUG_BUILD_MARKERS = "not valgrind and not regrtest"
# install order: each package after the ones it depends on (records depends on none)
PACKAGES = ("runtime", "records", "profiler", "translator")
# the conformance suite and the fuzzer replay frames through every package, the translator
# (which needs the runtime) included; records supports every version the translator does
CROSS_PACKAGE_JOBS_NEED = "translator"


def present(package: str) -> bool:
    return (ROOT / "packages" / package / "pyproject.toml").exists()


def _project_table(package: str) -> dict:
    text = (ROOT / "packages" / package / "pyproject.toml").read_text()
    try:
        import tomllib
    except ImportError:  # before 3.11: the two keys read here are simple enough to scan
        return _scan_project(text)
    return tomllib.loads(text).get("project", {})


def _scan_project(text: str) -> dict:
    """requires-python and dependencies of the [project] table, for Pythons without tomllib."""
    match = re.search(r"^\[project\]\s*$(.*?)(?=^\[|\Z)", text, re.M | re.S)
    body = match.group(1) if match else ""
    table: dict = {}
    req = re.search(r'^requires-python\s*=\s*["\']([^"\']*)["\']', body, re.M)
    if req:
        table["requires-python"] = req.group(1)
    deps = re.search(r"^dependencies\s*=\s*\[(.*?)\]", body, re.M | re.S)
    if deps:
        table["dependencies"] = re.findall(r'["\']([^"\']+)["\']', deps.group(1))
    return table


def requires_python(package: str) -> str:
    return _project_table(package).get("requires-python", "")


def _release(text: str) -> tuple[int, ...]:
    parts = tuple(int(p) for p in text.split("."))
    return parts + (0,) * (3 - len(parts))


def admits(specifier: str, version: str) -> bool:
    """Whether a requires-python specifier ("" admits everything) admits CPython X.Y.

    The X.Y release is compared as X.Y.0; wildcards ("==3.9.*", "!=3.14.*") match on
    the written prefix. Raises ValueError naming the clause it cannot read."""
    here = _release(version)
    for clause in filter(None, (c.strip() for c in specifier.split(","))):
        match = re.fullmatch(r"(~=|==|!=|<=|>=|<|>)\s*(\d+(?:\.\d+)*)(\.\*)?", clause)
        if not match:
            raise ValueError(f"requires-python clause {clause!r}: expected an operator and a version like '<3.16'")
        op, text, wildcard = match.groups()
        if wildcard:
            if op not in ("==", "!="):
                raise ValueError(f"requires-python clause {clause!r}: '.*' only goes with == or !=")
            prefix = tuple(int(p) for p in text.split("."))
            same = here[: len(prefix)] == prefix
            if same != (op == "=="):
                return False
            continue
        bound = _release(text)
        if op == "~=":
            # ~=X.Y means >=X.Y,==X.*
            given = tuple(int(p) for p in text.split("."))
            if len(given) < 2:
                raise ValueError(f"requires-python clause {clause!r}: ~= needs at least two parts")
            ok = here >= bound and here[: len(given) - 1] == given[:-1]
        else:
            ok = {
                "==": here == bound,
                "!=": here != bound,
                "<=": here <= bound,
                ">=": here >= bound,
                "<": here < bound,
                ">": here > bound,
            }[op]
        if not ok:
            return False
    return True


def _repo_dependencies(package: str) -> list[str]:
    """The framehook packages of this repository that `package` depends on."""
    names = []
    for dep in _project_table(package).get("dependencies", []):
        name = re.match(r"[A-Za-z0-9._-]+", dep)
        if name and name.group(0).lower().startswith("framehook-"):
            short = name.group(0).lower()[len("framehook-") :]
            if short in PACKAGES:
                names.append(short)
    return names


def is_debug(version: str) -> bool:
    """Whether a matrix version ("3.14d") names a debug build."""
    return version.endswith("d")


def minor(version: str) -> str:
    """The CPython minor version of a matrix version: "3.14d" -> "3.14"."""
    return version[:-1] if is_debug(version) else version


def supports(package: str, version: str) -> bool:
    version = minor(version)
    if not present(package):
        return False
    if not admits(requires_python(package), version):
        return False
    return all(supports(dep, version) for dep in _repo_dependencies(package))


def supported_packages(version: str) -> list[str]:
    """The present packages that support CPython `version`, in install order."""
    return [p for p in PACKAGES if supports(p, version)]


def tested_packages(version: str) -> list[str]:
    """The supported packages whose tests run on `version` (a debug build: a subset)."""
    return [p for p in supported_packages(version) if not is_debug(version) or p in DEBUG_BUILD_PACKAGES]


def cross_package_jobs(version: str) -> bool:
    """Whether the fuzz batch (and, on a release build, the conformance suite) runs on `version`."""
    return supports(CROSS_PACKAGE_JOBS_NEED, version)


def fuzz_tests_run(version: str) -> bool:
    """Whether the fuzzer's own tests (fuzz/tests) run on `version`: not on a debug build."""
    return cross_package_jobs(version) and not is_debug(version)


def conformance_runs(version: str) -> bool:
    """Whether the conformance suite runs on `version`: not on a debug build."""
    return cross_package_jobs(version) and not is_debug(version)


DEBUG_SUBSET_NOTE = "a debug build runs only the runtime's and profiler's tests and the fuzz batch"


def why_not(package: str, version: str) -> str:
    """One line saying why `package` does not run on `version` (for the tables' footnotes)."""
    if supports(package, version) and is_debug(version) and package not in DEBUG_BUILD_PACKAGES:
        return DEBUG_SUBSET_NOTE
    version = minor(version)
    if not present(package):
        return f"packages/{package} has no pyproject.toml"
    spec = requires_python(package)
    if not admits(spec, version):
        return f"framehook-{package} declares requires-python {spec!r}"
    for dep in _repo_dependencies(package):
        if not supports(dep, version):
            return f"it needs framehook-{dep}, which " + why_not(dep, version).split(" ", 1)[1]
    return "supported"


def current_version() -> str:
    """This interpreter as a matrix version: "3.14", or "3.14d" for a debug build (only a
    Py_DEBUG build has sys.gettotalrefcount)."""
    return "%d.%d" % sys.version_info[:2] + ("d" if hasattr(sys, "gettotalrefcount") else "")


def copy_sources(package: str, dest: Path) -> Path:
    """A copy of a package's tree without build output, to build from: pip and setup.py
    write into the tree they build (build/, *.egg-info, in-place *.so), which envs running
    at the same time would otherwise share."""
    shutil.copytree(
        ROOT / "packages" / package, dest, ignore=shutil.ignore_patterns("build", "*.egg-info", "__pycache__", "*.so")
    )
    return dest
