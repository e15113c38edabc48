"""Records of failed translations, written through framehook-records' public API, and
records of functions the translator's decorators wrap."""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pytest

from framehook.translator import disable, optimize
from framehook.translator.conversion.failure_records import args_from_locals, record_translation_failure

records = pytest.importorskip(
    "framehook.records", reason="framehook-records (the translator's optional 'records' extra) is not installed"
)

SCALE = 3


def compute(xs, k=2, *, extra=0):
    xs.append(k)
    return [x * SCALE for x in xs], sum(xs) + extra


def target(a, b=1, *rest, c, **kw):
    return a + b + sum(rest) + c + len(kw)


F_LOCALS = {"a": 1, "b": 2, "rest": (3, 4), "c": 5, "kw": {"z": 0}}


def test_arguments_are_rebuilt_from_the_frame_locals():
    args, kwargs = args_from_locals(target.__code__, F_LOCALS)
    assert args == (1, 2, 3, 4) and kwargs == {"c": 5, "z": 0}


def test_translation_failure_recording(tmp_path, monkeypatch):
    monkeypatch.delenv("FRAMEHOOK_RECORD_DIR", raising=False)
    assert record_translation_failure(target, F_LOCALS, RuntimeError("x")) is None
    monkeypatch.setenv("FRAMEHOOK_RECORD_DIR", str(tmp_path))
    path = record_translation_failure(target, F_LOCALS, RuntimeError("boom"), decisions={"guards": ["g"]})
    assert path and Path(path).parent == tmp_path
    rec = records.load(path)
    assert rec.translator["error"] == "translation failed: RuntimeError: boom"
    assert rec.translator["decisions"] == {"guards": ["g"]}
    assert records.replay(path, modes=("plain",)).ok
    assert record_translation_failure(len, {}, RuntimeError("x")) is None
    blocker = tmp_path / "a-file"
    blocker.write_text("")
    assert record_translation_failure(target, F_LOCALS, RuntimeError("x"), directory=str(blocker)) is None


def test_without_framehook_records_no_record_is_written(tmp_path, monkeypatch):
    monkeypatch.setitem(sys.modules, "framehook.records", None)  # as if it were not installed
    assert record_translation_failure(target, F_LOCALS, RuntimeError("x"), directory=str(tmp_path)) is None
    assert list(tmp_path.iterdir()) == []


def test_record_of_a_decorated_function_records_the_function_it_wraps():
    decorated = optimize("eager")(compute)
    rec = records.record(decorated, [1], extra=1)
    assert (rec.code["name"], rec.code["qualname"]) == ("compute", "compute")
    assert rec.outcome["kind"] == "return" and rec.locals["k"]["t"] == "int"

    class Box:
        def __init__(self, v):
            self.v = v

        @disable
        def scaled(self, k):
            return self.v * k

    rec = records.record(Box(np.ones(2)).scaled, 3)  # bound: the instance is kept as the first argument
    assert rec.code["name"] == "scaled" and set(rec.locals) == {"self", "k"}
    assert rec.outcome["kind"] == "return"


def test_translator_replay_mode_reports_its_decisions(tmp_path):
    from framehook.translator.replay_mode import translator_replay

    def add(x, y):
        return x + y

    report = translator_replay(add, lambda fn: fn(np.ones(2), 1.0))
    assert np.array_equal(report["outcome"], np.full(2, 2.0))
    assert isinstance(report["decisions"], dict) and report["decisions"]
