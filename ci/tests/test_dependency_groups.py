"""The test dependencies are declared once per package (PEP 735 ``test`` groups), the root's
group holds every package's, and tox's envs install every one of them: what a user installs
with ``pip install --group test`` is what CI tests with."""

from __future__ import annotations

import configparser
from pathlib import Path

import pytest

tomllib = pytest.importorskip("tomllib", reason="tomllib is in the standard library from 3.11")

ROOT = Path(__file__).resolve().parent.parent.parent
PACKAGES = ("runtime", "records", "profiler", "translator")


def _norm(requirement: str) -> str:
    return requirement.replace(" ", "").replace('"', "'")


def _group(pyproject: Path) -> list[str]:
    return [_norm(r) for r in tomllib.loads(pyproject.read_text())["dependency-groups"]["test"]]


def _tox_deps() -> list[str]:
    ini = configparser.ConfigParser(interpolation=None)
    ini.read(ROOT / "tox.ini")
    lines = [line.split("#")[0].strip() for line in ini["testenv"]["deps"].splitlines()]
    return [_norm(line) for line in lines if line]


@pytest.mark.parametrize("package", PACKAGES)
def test_each_packages_group_is_in_the_roots(package):
    root = _group(ROOT / "pyproject.toml")
    mine = _group(ROOT / "packages" / package / "pyproject.toml")
    assert mine and not [r for r in mine if r not in root]


def test_tox_installs_the_whole_root_group():
    deps = _tox_deps()
    assert "pytest>=7" in deps
    assert [r for r in _group(ROOT / "pyproject.toml") if r not in deps] == []
