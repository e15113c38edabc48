"""A finding saved by the harness runs standalone, loads back as the same program, and its
record replays from its source, as on another CPython."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from fhfuzz import harness  # noqa: E402
from fhfuzz.program import Program  # noqa: E402

records = pytest.importorskip("framehook.records", reason="framehook-records is not installed")

SOURCE = "def f(a, b, arr):\n    y = a * 2\n    return y + np.ones(2) + arr\n"
PROGRAM = Program(SOURCE, "(3, 1, np.arange(2))", "(3, 1, np.arange(2.0))", "python", seed=7)


def test_saved_finding_replays_from_its_source(tmp_path):
    written = harness.save_finding(tmp_path, PROGRAM, "a note")
    assert written == [str(tmp_path / "fuzz_7.py"), str(tmp_path / "fuzz_7.fhrec")]
    lines = Path(written[0]).read_text().splitlines()
    rec = records.load(written[1])
    assert lines[rec.code["firstlineno"] - 1] == "def f(a, b, arr):"
    result = records.replay(written[1], modes=("plain",), prefer_source=True)
    assert result.code_from == "source" and result.ok, result.report()


def test_saved_finding_replays_its_verified_bytecode_on_the_cpython_that_saved_it(tmp_path):
    # compiled without this harness's `from __future__ import annotations`, the recorded
    # code is what its source compiles to: replay runs it, verified, not a recompilation
    written = harness.save_finding(tmp_path, PROGRAM)
    result = records.replay(written[1], modes=("plain",))
    assert result.code_from == "marshal (verified against source)" and result.bytecode_note is None
    assert result.ok, result.report()


def test_saved_finding_runs_standalone_and_loads_back(tmp_path):
    path = Path(harness.save_finding(tmp_path, PROGRAM)[0])
    out = subprocess.run([sys.executable, str(path)], capture_output=True, text=True, check=True).stdout
    assert out.strip() == str(harness.build(SOURCE, "expected")(*PROGRAM.args()))
    loaded = harness.load_program(path)
    assert (loaded.args_source, loaded.other_args_source, loaded.family) == (
        PROGRAM.args_source,
        PROGRAM.other_args_source,
        "python",
    )
    assert harness.check_program(loaded, ["shadow"], filename=str(path)).findings == []


def test_unseeded_findings_are_named_by_their_content(tmp_path):
    other = Program(SOURCE, "(4, 1, np.arange(2))", "(3, 1, np.arange(2.0))", "python")
    another = Program(SOURCE, "(5, 1, np.arange(2))", "(1, 1, np.arange(2.0))", "python")
    names = {Path(harness.save_finding(tmp_path, p)[0]).name for p in (other, another)}
    assert len(names) == 2 and all(n.startswith("fuzz_") for n in names)
