"""ci/wheels.py provisions a version asked for with --versions that is not installed, as
ci/matrix.py does, and refuses it (naming it) with --no-provision or when provisioning
fails, before building anything."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
import wheels  # noqa: E402


@pytest.fixture
def only_311(monkeypatch):
    """A machine with CPython 3.11 only; building is recorded, not done."""
    built = []
    monkeypatch.setattr(wheels, "find_interpreters", lambda: {"3.11": "/usr/bin/python3.11"})
    monkeypatch.setattr(wheels, "build", lambda interpreters, versions, out, tmp: built.append(dict(interpreters)))
    return built


def test_a_missing_version_is_provisioned(only_311, monkeypatch, tmp_path):
    asked = []

    def provision_missing(interpreters, missing):
        asked.append(list(missing))
        interpreters.update({v: f"/cache/{v}/bin/python{v}" for v in missing})
        return []

    monkeypatch.setattr(wheels, "provision_missing", provision_missing)
    assert wheels.main(["--versions", "3.11,3.15", "--out", str(tmp_path)]) == 0
    assert asked == [["3.15"]]
    assert only_311 == [{"3.11": "/usr/bin/python3.11", "3.15": "/cache/3.15/bin/python3.15"}]


def test_a_version_that_cannot_be_provisioned_is_refused(only_311, monkeypatch, capsys, tmp_path):
    monkeypatch.setattr(wheels, "provision_missing", lambda interpreters, missing: list(missing))
    with pytest.raises(SystemExit) as info:
        wheels.main(["--versions", "3.11,3.15", "--out", str(tmp_path)])
    assert info.value.code == 2 and only_311 == []
    assert "CPython 3.15 not found on PATH or in pyenv and could not be provisioned" in capsys.readouterr().err


def test_no_provision_refuses_at_once(only_311, monkeypatch, capsys, tmp_path):
    monkeypatch.setattr(wheels, "provision_missing", lambda *a: pytest.fail("provisioned despite --no-provision"))
    with pytest.raises(SystemExit):
        wheels.main(["--versions", "3.15", "--no-provision", "--out", str(tmp_path)])
    err = capsys.readouterr().err
    assert "CPython 3.15 not found on PATH or in pyenv" in err and "provisioned" not in err and only_311 == []
