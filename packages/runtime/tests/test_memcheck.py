"""The runtime's C code under valgrind memcheck: no invalid reads or writes, no use of
uninitialised memory, no definite leak allocated by framehook's own code."""
from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

HERE = Path(__file__).resolve().parent
OUR_SOURCES = re.compile(r"\((hook|shadow|extra|frameview|guarded|events|module|guards|callwith)\.c:\d+\)")


def memcheck_records(stderr: str):
    """valgrind's report split into records (an error or a leak, with its stack)."""
    records, current = [], []
    for line in stderr.splitlines():
        body = re.sub(r"^==\d+==\s?", "", line)
        if not body.strip():
            if current:
                records.append("\n".join(current))
            current = []
        else:
            current.append(body)
    if current:
        records.append("\n".join(current))
    return records


EVALUATOR = re.compile(r"_PyEval_EvalFrameDefault|_PyEval_Vector|_PyEval_EvalFrame\b")


def stacks(record: str):
    """Each stack of a record (the error's, and the origin's or allocation's)."""
    out, current = [], []
    for line in record.splitlines()[1:]:
        if line.lstrip().startswith(("at ", "by ")):
            current.append(line)
        elif current:
            out.append(current)
            current = []
    if current:
        out.append(current)
    return out


def our_frames(record: str):
    """framehook's frames above the first evaluator frame of each stack: where it happened.
    (Every Python call passes through the hook, so CPython's own reports from Python code
    further down would otherwise all look like ours.)"""
    found = []
    for stack in stacks(record):
        for line in stack:
            if EVALUATOR.search(line):
                break
            if OUR_SOURCES.search(line):
                found.append(line)
    return found


def ours(record: str) -> bool:
    return bool(our_frames(record))


# Allocations that legitimately outlive the run: module-lifetime objects made at import,
# and the per-code state block, which CPython frees with its code object -- except for code
# objects alive at exit, and 3.12+'s static (deep-frozen) ones, whose extra slots CPython
# releases without calling free functions. That dropped code frees its state is tested in
# test_cache.py.
LIVES_UNTIL_EXIT = ("PyInit__C", "fh_extra_ensure")


def readelf_field(args, pattern, path):
    out = subprocess.run(["readelf", *args, path], capture_output=True, text=True, errors="replace").stdout
    found = re.search(pattern, out)
    return found.group(1) if found else None


def loader_debuginfo(tmp: Path):
    """valgrind options giving it the debug info of the interpreter's own dynamic loader.

    valgrind must redirect functions inside the loader; an interpreter that brings its own
    stripped loader (a newer glibc unpacked next to it) stops valgrind at startup unless
    that loader's symbols are found. CPython packaged that way finds them in the unpacked
    debug package named by FRAMEHOOK_VALGRIND_DEBUGINFO (a usr/lib/debug directory holding
    .build-id/), or else in the interpreter's own prefix (lib/debug); valgrind looks beside the loader under --extra-debuginfo-path by the
    loader's debuglink name, so that layout is mirrored with a symlink."""
    root = os.environ.get("FRAMEHOOK_VALGRIND_DEBUGINFO")
    if not root:
        # an interpreter unpacked with its C library's debug package (ci/provision.py) has it
        # under its own prefix
        beside = Path(sys.base_prefix) / "lib" / "debug"
        root = str(beside) if (beside / ".build-id").is_dir() else None
    if not root or shutil.which("readelf") is None:
        return []
    loader = readelf_field(["-l"], r"program interpreter: ([^\]]+)\]", os.path.realpath(sys.executable))
    if loader is None:
        return []
    build_id = readelf_field(["-n"], r"Build ID: ([0-9a-f]+)", loader)
    link = readelf_field(["--string-dump=.gnu_debuglink"], r"\[\s*0\]\s+(\S+)", loader)
    if build_id is None or link is None:
        return []
    debug = Path(root) / ".build-id" / build_id[:2] / (build_id[2:] + ".debug")
    if not debug.is_file():
        return []
    mirror = tmp / "debuginfo"
    target = mirror / os.path.dirname(loader).lstrip("/") / link
    target.parent.mkdir(parents=True, exist_ok=True)
    target.symlink_to(debug)
    return [f"--extra-debuginfo-path={mirror}"]


@pytest.fixture(scope="module")
def report(tmp_path_factory):
    if shutil.which("valgrind") is None:
        pytest.skip("valgrind is not installed on this machine")
    env = dict(os.environ, PYTHONMALLOC="malloc")  # let memcheck see every allocation
    for var in ("COVERAGE_PROCESS_START", "PYTHONTRACEMALLOC"):
        env.pop(var, None)
    extra = loader_debuginfo(tmp_path_factory.mktemp("valgrind"))
    out = subprocess.run(
        ["valgrind", "--leak-check=full", "--show-leak-kinds=definite", "--num-callers=40", "--track-origins=yes",
         *extra, sys.executable, str(HERE / "memcheck_workload.py"), str(HERE)],
        capture_output=True, text=True, env=env, cwd=str(tmp_path_factory.mktemp("memcheck")), timeout=900,
    )
    if out.returncode != 0 and "must-be-redirected function" in out.stderr:
        pytest.skip("valgrind cannot start this interpreter: its dynamic loader has no symbols; point "
                    "FRAMEHOOK_VALGRIND_DEBUGINFO at the loader's unpacked debug package (usr/lib/debug)")
    assert out.returncode == 0, out.stderr[-3000:]
    assert "workload done" in out.stdout
    return out.stderr


def test_framehook_frames_can_be_named(report):
    # the attribution below only works if memcheck can name our functions and lines: the
    # extension must carry DWARF line information (CPython's build flags include -g)
    from framehook.runtime import _C

    if shutil.which("readelf") is None:
        pytest.skip("readelf (binutils) is not installed")
    sections = subprocess.run(["readelf", "-S", "-W", _C.__file__], capture_output=True, text=True).stdout
    assert ".debug_line" in sections and ".debug_info" in sections


def test_attribution_separates_our_frames_from_cpythons():
    record = "\n".join([
        "Invalid read of size 8",
        "   at 0x1: lookup (hook.c:10)",
        "   by 0x2: _PyEval_EvalFrameDefault (ceval.c:1)",
    ])
    cpython_record = "\n".join([
        "Invalid read of size 8",
        "   at 0x1: get_small_int (longobject.c:62)",
        "   by 0x2: _PyEval_EvalFrameDefault (ceval.c:1)",
        "   by 0x3: intercept (hook.c:273)",
    ])
    assert ours(record)
    assert not ours(cpython_record)
    leak = "\n".join([
        "32 bytes in 1 blocks are definitely lost in loss record 1 of 2",
        "   at 0x1: calloc (in vgpreload_memcheck-amd64-linux.so)",
        "   by 0x2: fh_extra_ensure (extra.c:44)",
        "   by 0x3: ask_callback (hook.c:196)",
    ])
    assert our_frames(leak)[0].endswith("fh_extra_ensure (extra.c:44)")


def test_no_memory_errors_in_framehook_code(report):
    errors = [r for r in memcheck_records(report)
              if r.startswith(("Invalid", "Conditional jump", "Use of uninitialised", "Mismatched", "Source and"))
              and ours(r)]
    assert not errors, "\n\n".join(errors[:5])


def test_no_definite_leak_from_framehook_code(report):
    leaks = [r for r in memcheck_records(report)
             if "definitely lost" in r.splitlines()[0] and ours(r)
             and not any(name in our_frames(r)[0] for name in LIVES_UNTIL_EXIT)]  # module-lifetime objects (types, capsule) live until exit
    assert not leaks, "\n\n".join(leaks[:5])
