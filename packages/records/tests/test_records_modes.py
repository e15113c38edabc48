"""Replay modes registered through the ``framehook.replay_modes`` entry point group."""

from __future__ import annotations

import io

import pytest

from framehook.records import modes, record_call, replay_record
from framehook.records.cli import main as cli_main


class FakeEntryPoint:
    def __init__(self, name, target, value=None):
        self.name = name
        self.value = value or f"fake.module:{name}"
        self._target = target

    def load(self):
        if isinstance(self._target, BaseException):
            raise self._target
        return self._target


def double(x):
    return x * 2


def doubled_twice(fn, run):
    first = run(fn)
    return {
        "outcome": run(fn),
        "intercepted": 2,
        "problems": [] if first.value == 6 else ["first run"],
        "decisions": {"runs": 2},
    }


@pytest.fixture
def fake_modes(monkeypatch):
    eps = [
        FakeEntryPoint("twice", doubled_twice),
        FakeEntryPoint("broken", ImportError("no module named fake")),
        FakeEntryPoint("constant", 42),
        FakeEntryPoint("wrong", lambda fn, run: run(fn)),
        FakeEntryPoint("plain", modes.plain, "framehook.records.modes:plain"),
    ]
    monkeypatch.setattr(modes, "_entry_points", lambda: eps)
    return eps


def test_every_registered_mode_runs_after_the_standard_ones(fake_modes):
    rec = record_call(double, (3,))
    result = replay_record(rec)
    assert [m.mode for m in result.modes] == [
        "plain",
        "shadow",
        "translator",
        "profiled",
        "broken",
        "constant",
        "twice",
        "wrong",
    ]
    statuses = {m.mode: m.status for m in result.modes}
    assert statuses["plain"] == "match" and statuses["twice"] == "match"
    assert result.mode("twice").intercepted == 2 and result.mode("twice").decisions == {"runs": 2}
    for standard in ("shadow", "translator", "profiled"):  # hidden by the fake registry
        assert result.mode(standard).reason == f"{modes.STANDARD[standard]} is not installed"
    assert result.mode("broken").status == "skip"
    assert result.mode("broken").reason == (
        "the broken mode (fake.module:broken) cannot be loaded: ImportError: no module named fake"
    )
    assert result.mode("constant").reason == "the constant mode (fake.module:constant) is not a function"
    wrong = result.mode("wrong")
    assert wrong.status == "error" and "not a dict with the outcome of run()" in wrong.reason


def test_a_mode_reports_its_problems_as_differences(monkeypatch):
    def unhappy(fn, run):
        return {"outcome": run(fn), "problems": ["frame not seen"], "intercepted": "many"}

    monkeypatch.setattr(modes, "_entry_points", lambda: [FakeEntryPoint("unhappy", unhappy)])
    result = replay_record(record_call(double, (1,)), modes=("unhappy",))
    unhappy_result = result.mode("unhappy")
    assert unhappy_result.status == "mismatch" and unhappy_result.diffs == ["frame not seen"]
    assert unhappy_result.intercepted is None  # not an int: not reported
    with pytest.raises(ValueError, match="unknown mode 'nowhere'"):
        replay_record(record_call(double, (1,)), modes=("unhappy", "nowhere"))


def test_a_mode_of_no_package_is_skipped_when_asked_for(monkeypatch):
    monkeypatch.setattr(modes, "_entry_points", lambda: [])
    run = modes.run_mode("warp", double, (1,), {}, "function", {})
    assert run.skip == "no package registers the mode 'warp'"


def test_list_modes(fake_modes, capsys):
    assert cli_main(["replay", "--list-modes"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[0] == "plain        available (framehook.records.modes:plain)"
    assert "twice        available (fake.module:twice)" in lines
    assert "shadow       skipped: framehook-runtime is not installed" in lines
    out = io.StringIO()
    modes.describe_modes(out)
    assert out.getvalue().splitlines() == lines


def test_the_installed_registry_names_each_standard_mode_once():
    found = modes.registered()
    names, absent = modes.available()
    assert names[0] == "plain" and set(names).isdisjoint(absent)
    assert set(names) | set(absent) >= set(modes.STANDARD)
    for name in names[1:]:
        assert name in found


def test_replay_without_files_is_a_usage_error(capsys):
    with pytest.raises(SystemExit) as exc:
        cli_main(["replay"])
    assert exc.value.code == 2
    assert "give at least one FILE" in capsys.readouterr().err
