"""valgrind memcheck for the packages' C extensions: run a workload, split the report into
records, and tell a package's own errors and leaks from CPython's.

Shared by the runtime's and the profiler's tests/test_memcheck.py (each names its own C
sources); it lives here because no package may import another's tests.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path
from typing import List, Optional, Pattern, Sequence

# the evaluator's frames: below them, a report is about Python code the workload ran
EVALUATOR = re.compile(r"_PyEval_EvalFrameDefault|_PyEval_Vector|_PyEval_EvalFrame\b")
ERROR_KINDS = ("Invalid", "Conditional jump", "Use of uninitialised", "Mismatched", "Source and")


class CannotRun(Exception):
    """valgrind is missing or cannot start this interpreter (the message says why)."""


def records(stderr: str) -> List[str]:
    """valgrind's report split into records (an error or a leak, with its stacks)."""
    out: List[str] = []
    current: List[str] = []
    for line in stderr.splitlines():
        body = re.sub(r"^==\d+==\s?", "", line)
        if body.strip():
            current.append(body)
        elif current:
            out.append("\n".join(current))
            current = []
    if current:
        out.append("\n".join(current))
    return out


def stacks(record: str) -> List[List[str]]:
    """Each stack of a record (the error's, and the origin's or allocation's)."""
    out: List[List[str]] = []
    current: List[str] = []
    for line in record.splitlines()[1:]:
        if line.lstrip().startswith(("at ", "by ")):
            current.append(line)
        elif current:
            out.append(current)
            current = []
    if current:
        out.append(current)
    return out


def own_frames(record: str, sources: Pattern[str]) -> List[str]:
    """Frames from ``sources`` above the first evaluator frame of each stack: where it
    happened. (A hook or tracer sees every Python call, so CPython's own reports from
    Python code further down would otherwise all look like the package's.)"""
    found = []
    for stack in stacks(record):
        for line in stack:
            if EVALUATOR.search(line):
                break
            if sources.search(line):
                found.append(line)
    return found


def errors(stderr: str, sources: Pattern[str]) -> List[str]:
    """Invalid accesses and uses of uninitialised memory that happened in ``sources``."""
    return [r for r in records(stderr) if r.startswith(ERROR_KINDS) and own_frames(r, sources)]


def definite_leaks(stderr: str, sources: Pattern[str], lives_until_exit: Sequence[str] = ()) -> List[str]:
    """Blocks definitely lost that ``sources`` allocated, except those allocated under one
    of ``lives_until_exit`` (module set-up and the like, meant to last the process)."""
    out = []
    for r in records(stderr):
        if "definitely lost" not in r.splitlines()[0]:
            continue
        frames = own_frames(r, sources)
        if frames and not any(name in frame for frame in frames for name in lives_until_exit):
            out.append(r)
    return out


def _readelf_field(args: Sequence[str], pattern: str, path: str) -> Optional[str]:
    out = subprocess.run(["readelf", *args, path], capture_output=True, text=True, errors="replace").stdout
    found = re.search(pattern, out)
    return found.group(1) if found else None


def loader_debuginfo(scratch: Path) -> List[str]:
    """valgrind options giving it the debug info of the interpreter's own dynamic loader.

    valgrind must redirect functions inside the loader, so an interpreter that brings its
    own stripped loader (a newer C library unpacked beside it, as ci/provision.py does)
    stops valgrind at startup unless that loader's symbols are found: in the unpacked debug
    package named by FRAMEHOOK_VALGRIND_DEBUGINFO (a usr/lib/debug directory holding
    .build-id/), or else under the interpreter's prefix (lib/debug). valgrind looks for
    them beside the loader, by its debuglink name, under --extra-debuginfo-path: that
    layout is mirrored with a symlink."""
    root = os.environ.get("FRAMEHOOK_VALGRIND_DEBUGINFO")
    if not root:
        beside = Path(sys.base_prefix) / "lib" / "debug"
        root = str(beside) if (beside / ".build-id").is_dir() else None
    if not root or shutil.which("readelf") is None:
        return []
    loader = _readelf_field(["-l"], r"program interpreter: ([^\]]+)\]", os.path.realpath(sys.executable))
    if loader is None:
        return []
    build_id = _readelf_field(["-n"], r"Build ID: ([0-9a-f]+)", loader)
    link = _readelf_field(["--string-dump=.gnu_debuglink"], r"\[\s*0\]\s+(\S+)", loader)
    if build_id is None or link is None:
        return []
    debug = Path(root) / ".build-id" / build_id[:2] / (build_id[2:] + ".debug")
    if not debug.is_file():
        return []
    target = scratch / "debuginfo" / os.path.dirname(loader).lstrip("/") / link
    target.parent.mkdir(parents=True, exist_ok=True)
    if not target.exists():
        target.symlink_to(debug)
    return [f"--extra-debuginfo-path={scratch / 'debuginfo'}"]


def run(script: Path, args: Sequence[str], scratch: Path, timeout: float = 900) -> subprocess.CompletedProcess:
    """``python script *args`` under memcheck (definite leaks, origins tracked), in
    ``scratch``; raises CannotRun when valgrind is missing or cannot start the interpreter."""
    if shutil.which("valgrind") is None:
        raise CannotRun("valgrind is not installed on this machine")
    env = dict(os.environ, PYTHONMALLOC="malloc")  # let memcheck see every allocation
    for var in ("COVERAGE_PROCESS_START", "PYTHONTRACEMALLOC"):
        env.pop(var, None)
    scratch.mkdir(parents=True, exist_ok=True)
    out = subprocess.run(
        [
            "valgrind",
            "--leak-check=full",
            "--show-leak-kinds=definite",
            "--num-callers=40",
            "--track-origins=yes",
            *loader_debuginfo(scratch),
            sys.executable,
            str(script),
            *args,
        ],
        capture_output=True,
        text=True,
        env=env,
        cwd=str(scratch),
        timeout=timeout,
    )
    if out.returncode != 0 and "must-be-redirected function" in out.stderr:
        raise CannotRun(
            "valgrind cannot start this interpreter: its dynamic loader has no symbols; point "
            "FRAMEHOOK_VALGRIND_DEBUGINFO at the loader's unpacked debug package (usr/lib/debug)"
        )
    return out
