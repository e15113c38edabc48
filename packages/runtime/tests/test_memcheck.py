"""The runtime's C code under valgrind memcheck: no invalid reads or writes, no use of
uninitialised memory, no definite leak allocated by framehook's own code."""

from __future__ import annotations

import importlib.util
import re
import shutil
import subprocess
from pathlib import Path

import pytest

pytestmark = pytest.mark.valgrind

HERE = Path(__file__).resolve().parent
_DRIVER = HERE.parents[2] / "ci" / "memcheck.py"  # shared with the profiler's memcheck test
if not _DRIVER.is_file():
    pytest.skip("needs ci/memcheck.py of a framehook checkout", allow_module_level=True)
_spec = importlib.util.spec_from_file_location("framehook_ci_memcheck", _DRIVER)
memcheck = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(memcheck)
OUR_SOURCES = re.compile(r"\((hook|shadow|extra|frameview|guarded|events|module|guards|callwith)\.c:\d+\)")


# Allocations that legitimately outlive the run: module-lifetime objects made at import,
# and the per-code state block, which CPython frees with its code object -- except for code
# objects alive at exit, and 3.12+'s static (deep-frozen) ones, whose extra slots CPython
# releases without calling free functions. That dropped code frees its state is tested in
# test_cache.py.
LIVES_UNTIL_EXIT = ("PyInit__C", "fh_extra_ensure")


def ours(record: str) -> bool:
    return bool(memcheck.own_frames(record, OUR_SOURCES))


@pytest.fixture(scope="module")
def report(tmp_path_factory):
    try:
        out = memcheck.run(HERE / "memcheck_workload.py", [str(HERE)], tmp_path_factory.mktemp("memcheck"))
    except memcheck.CannotRun as e:
        pytest.skip(str(e))
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
    record = "\n".join(
        [
            "Invalid read of size 8",
            "   at 0x1: lookup (hook.c:10)",
            "   by 0x2: _PyEval_EvalFrameDefault (ceval.c:1)",
        ]
    )
    cpython_record = "\n".join(
        [
            "Invalid read of size 8",
            "   at 0x1: get_small_int (longobject.c:62)",
            "   by 0x2: _PyEval_EvalFrameDefault (ceval.c:1)",
            "   by 0x3: intercept (hook.c:273)",
        ]
    )
    assert ours(record)
    assert not ours(cpython_record)
    leak = "\n".join(
        [
            "32 bytes in 1 blocks are definitely lost in loss record 1 of 2",
            "   at 0x1: calloc (in vgpreload_memcheck-amd64-linux.so)",
            "   by 0x2: fh_extra_ensure (extra.c:44)",
            "   by 0x3: ask_callback (hook.c:196)",
        ]
    )
    assert memcheck.own_frames(leak, OUR_SOURCES)[0].endswith("fh_extra_ensure (extra.c:44)")


def test_no_memory_errors_in_framehook_code(report):
    errors = memcheck.errors(report, OUR_SOURCES)
    assert not errors, "\n\n".join(errors[:5])


def test_no_definite_leak_from_framehook_code(report):
    leaks = memcheck.definite_leaks(report, OUR_SOURCES, LIVES_UNTIL_EXIT)
    assert not leaks, "\n\n".join(leaks[:5])
