"""Every program in fuzz/regressions (findings of the fuzzer, once fixed) agrees with plain
Python in every mode, and its execution record replays, forever."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from fhfuzz import harness  # noqa: E402

REGRESSIONS = Path(__file__).resolve().parent.parent / "regressions"
PROGRAMS = sorted(REGRESSIONS.glob("*.py"))
RECORDS = sorted(REGRESSIONS.glob("*.fhrec"))


def test_the_directory_holds_programs_and_their_records():
    assert len(PROGRAMS) >= 2
    assert {p.stem for p in RECORDS} == {p.stem for p in PROGRAMS}


@pytest.mark.parametrize("path", PROGRAMS, ids=[p.stem for p in PROGRAMS])
def test_program_agrees_with_plain_in_every_mode(path):
    program = harness.load_program(path)
    result = harness.check_program(program, list(harness.MODES), filename=str(path))
    # plain, shadow x2, profiler + call counts, translator x3 (+3 under the
    # caller's error settings)
    assert result.compared >= 8
    assert result.findings == [], "\n".join(f"{f['mode']}: {f['expected']} != {f['got']}" for f in result.findings)


@pytest.mark.parametrize("path", RECORDS, ids=[p.stem for p in RECORDS])
def test_record_replays(path):
    records = pytest.importorskip("framehook.records", reason="framehook-records is not installed")
    result = records.replay(str(path), prefer_source=True)
    assert result.code_from == "source" and result.ok, result.report()


def test_loading_needs_the_arguments(tmp_path):
    path = tmp_path / "bad.py"
    path.write_text("def f(a, b, arr):\n    return a\n\nARGS = (1, 2, np.arange(2))\n")
    with pytest.raises(ValueError, match="OTHER_ARGS"):
        harness.load_program(path)
