"""Every code example of this package's README, and of the repository's top README (which
uses the runtime, the translator and the profiler), runs as written and prints what it
shows: Sybil runs the fenced python blocks in order in one namespace, comparing a doctest
block's output with the text (a block after `<!-- skip: next -->` is a file's content)."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest
from sybil import Sybil
from sybil.parsers.markdown import PythonCodeBlockParser, SkipParser

import framehook.translator as ft

HERE = Path(__file__).resolve().parent
READMES = {"translator": (HERE.parent / "README.md", 20), "top": (HERE.parent.parent.parent / "README.md", 18)}


@pytest.fixture
def isolated(tmp_path, monkeypatch):
    """In a scratch directory and home (an example keeps translations under ~/.cache), the
    settings the examples change given back after."""
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("HOME", str(tmp_path))
    settings = ft.config.to_dict()
    ft.reset()
    yield
    ft.reset()
    for name, value in settings.items():
        setattr(ft.config, name, value)


@pytest.mark.parametrize("which", sorted(READMES))
def test_every_readme_example_runs_and_prints_what_it_shows(which, isolated):
    path, least = READMES[which]
    if not path.exists():
        pytest.skip(f"{path} is not beside this package (an installed copy of its tests)")
    if which == "top" and importlib.util.find_spec("framehook.profiler") is None:
        pytest.skip("the top README's examples use framehook-profiler, which is not installed")
    examples = list(Sybil([PythonCodeBlockParser(), SkipParser()]).parse(path))
    for example in examples:
        example.evaluate()
    assert len(examples) >= least
