"""The profiler's C code under valgrind memcheck: no invalid reads or writes, no use of
uninitialised memory, no definite leak allocated by the tracer, on every backend."""

from __future__ import annotations

import importlib.util
import re
from pathlib import Path

import pytest

pytestmark = pytest.mark.valgrind

HERE = Path(__file__).resolve().parent
_DRIVER = HERE.parents[2] / "ci" / "memcheck.py"  # shared with the runtime's memcheck test
if not _DRIVER.is_file():
    pytest.skip("needs ci/memcheck.py of a framehook checkout", allow_module_level=True)
_spec = importlib.util.spec_from_file_location("framehook_ci_memcheck", _DRIVER)
memcheck = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(memcheck)

# every C source and header of the extension (names are distinct from CPython's sources)
_CSRC = sorted(p.name for p in (HERE.parent / "csrc").iterdir() if p.suffix in (".c", ".h"))
OUR_SOURCES = re.compile(r"\((%s):\d+\)" % "|".join(re.escape(n) for n in _CSRC))
# made once at import (types, the module) or kept for the next recording (the block pool)
LIVES_UNTIL_EXIT = ("PyInit__tracer", "fh_pool_warm", "fh_block_take")


@pytest.fixture(scope="module")
def report(tmp_path_factory):
    out_dir = tmp_path_factory.mktemp("outputs")
    try:
        out = memcheck.run(HERE / "memcheck_workload.py", [str(out_dir)], tmp_path_factory.mktemp("memcheck"))
    except memcheck.CannotRun as e:
        pytest.skip(str(e))
    assert out.returncode == 0, out.stderr[-3000:]
    assert "workload done" in out.stdout
    assert len(list(out_dir.iterdir())) >= 5, "every output format was written"
    return out.stderr


def test_the_sources_pattern_names_the_tracer_and_not_cpython():
    assert OUR_SOURCES.search("   at 0x1: fh_profile (profile.c:120)")
    assert OUR_SOURCES.search("   by 0x1: fh_buffer_grow (blocks.c:45)")
    assert not OUR_SOURCES.search("   by 0x1: Py_DECREF (object.h:700)")


def test_no_memory_errors_in_the_tracer(report):
    errors = memcheck.errors(report, OUR_SOURCES)
    assert not errors, "\n\n".join(errors[:5])


def test_no_definite_leak_from_the_tracer(report):
    leaks = memcheck.definite_leaks(report, OUR_SOURCES, LIVES_UNTIL_EXIT)
    assert not leaks, "\n\n".join(leaks[:5])
