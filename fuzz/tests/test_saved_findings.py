"""A finding saved by run.py --save replays from its recorded source, as on another CPython."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import run  # noqa: E402

records = pytest.importorskip("framehook.records", reason="framehook-records is not installed")

SOURCE = "def f(x):\n    y = x * 2\n    return y + np.ones(2)\n"


def test_saved_finding_replays_from_its_source(tmp_path):
    written = run.save_finding(tmp_path, 7, SOURCE, (3,))
    assert written == [str(tmp_path / "fuzz_7.py"), str(tmp_path / "fuzz_7.fhrec")]
    rec = records.load(written[1])
    assert rec.code["firstlineno"] == 4  # after the file's three header lines
    result = records.replay(written[1], modes=("plain",), prefer_source=True)
    assert result.code_from == "source" and result.ok, result.report()
