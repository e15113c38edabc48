"""The README's examples run as written and print what they show: recording a call and
replaying it, and record_calls over a function and a module (Sybil runs the fenced python
blocks in order in one namespace; doctest blocks compare their output)."""

from __future__ import annotations

from pathlib import Path

from sybil import Sybil
from sybil.parsers.markdown import PythonCodeBlockParser, SkipParser

README = Path(__file__).resolve().parent.parent / "README.md"


def test_every_readme_example_runs_and_prints_what_it_shows(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)  # the files the examples write
    examples = list(Sybil([PythonCodeBlockParser(), SkipParser()]).parse(README))
    for example in examples:
        example.evaluate()
    assert len(examples) >= 12
