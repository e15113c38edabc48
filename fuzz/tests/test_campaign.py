"""Hypothesis drives the oracle: a failure is shrunk, saved once per kind, and a campaign
goes on past kinds it already saved; the profiler's call counts are held to sys.setprofile's."""

from __future__ import annotations

import sys
from pathlib import Path

from hypothesis import Phase

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from fhfuzz import campaign, harness  # noqa: E402
from fhfuzz.program import Program  # noqa: E402

TOKEN = "print("


def planted(monkeypatch, tmp_path):
    monkeypatch.setenv(harness.PLANT_VARIABLE, TOKEN)
    run = campaign.Campaign(["shadow"], save=tmp_path)
    failing = []
    check = run.check

    def counting(program):
        try:
            check(program)
        except campaign.Mismatch:
            failing.append(program)
            raise

    monkeypatch.setattr(run, "check", counting)
    return run, failing


def test_a_failure_is_shrunk_and_saved(monkeypatch, tmp_path):
    run, failing = planted(monkeypatch, tmp_path)
    kept = run.run(60, [Phase.generate, Phase.shrink], derandomize=True)
    assert [k["signature"] for k in kept] == ["planted: differs"]
    assert len(failing) > 1  # shrinking ran the property again on smaller programs
    assert kept[0]["program"] is failing[-1]  # the minimal one, run last
    py, fhrec = (Path(p) for p in kept[0]["paths"])
    assert py.exists() and fhrec.exists()
    saved = harness.load_program(py)
    assert TOKEN in saved.source and saved.args_source == failing[-1].args_source
    # the saved file fails the same way, and passes once the planted oracle is gone
    assert [f["mode"] for f in harness.check_program(saved, ["shadow"], filename=str(py)).findings] == ["planted"]
    monkeypatch.delenv(harness.PLANT_VARIABLE)
    assert harness.check_program(saved, ["shadow"], filename=str(py)).findings == []


def test_a_saved_kind_no_longer_stops_the_campaign(monkeypatch, tmp_path):
    run, failing = planted(monkeypatch, tmp_path)
    assert len(run.run(60, [Phase.generate, Phase.shrink], derandomize=True)) == 1
    before, seen = run.programs, len(failing)
    assert run.run(40, [Phase.generate], derandomize=False) == []
    assert run.programs - before == 40 and len(failing) == seen
    assert "1 findings" in campaign.summary(run) and str(tmp_path) in campaign.summary(run)


GENERATORS = """def f(a, b, arr):
    def g(n):
        for i in range(n):
            yield i * 2
    h = lambda x: x + 1
    return sum(g(a % 4 + 2)) + sum([h(v) for v in range(3)]), (lambda: a)
"""


def test_profiler_call_counts_agree_with_setprofile():
    program = Program(GENERATORS, "(3, 2, np.arange(3))", "(1, 2, np.arange(3.0))", "python")
    counts = harness.setprofile_calls(harness.build(GENERATORS, "<counts>"), program.args())
    assert "g@2 x6" in counts and "f@1 x1" in counts  # a generator's resumptions are calls
    result = harness.check_program(program, ["profiler"])
    assert result.findings == [] and result.compared == 3  # plain, profiler, call counts


def test_a_profiler_miscounting_is_reported(monkeypatch):
    real = harness.profiled_calls
    monkeypatch.setattr(harness, "profiled_calls", lambda profile, name: real(profile, name).replace("x6", "x5"))
    program = Program(GENERATORS, "(3, 2, np.arange(3))", "(1, 2, np.arange(3.0))", "python")
    found = harness.check_program(program, ["profiler"]).findings
    assert [f["signature"] for f in found] == ["profiler: call counts"]
    assert "g@2 x5" in found[0]["got"][1] and "g@2 x6" in found[0]["expected"][1]


def test_each_kind_of_failure_is_saved_once(monkeypatch, tmp_path):
    monkeypatch.setenv(harness.PLANT_VARIABLE, TOKEN)
    real, check_program = harness.profiled_calls, harness.check_program
    current = {}

    def remembering(program, *args, **kwargs):
        current["source"] = program.source
        return check_program(program, *args, **kwargs)

    def miscounting(profile, filename):  # wrong for programs with a loop only
        counts = real(profile, filename)
        return counts + ", extra@0 x1" if "for " in current["source"] else counts

    monkeypatch.setattr(harness, "check_program", remembering)
    monkeypatch.setattr(harness, "profiled_calls", miscounting)
    run = campaign.Campaign(["profiler"], save=tmp_path)
    for _ in range(4):  # a kind seen only with another one is raised once that one is known
        run.run(40, [Phase.generate, Phase.shrink], derandomize=False)
        if len(run.findings) == 2:
            break
    assert sorted(run.known) == ["planted: differs", "profiler: call counts"]
    for kept in run.findings:
        assert all(Path(p).exists() for p in kept["paths"])
        wanted = "for " if kept["signature"] == "profiler: call counts" else TOKEN
        assert wanted in kept["program"].source


def test_every_call_gets_fresh_arguments():
    # a program that mutates its argument: with one tuple shared by the calls, every call
    # after the first would see the array the previous one changed
    source = "def f(a, b, arr):\n    arr += a\n    return arr.sum()\n"
    program = Program(source, "(1, 2, np.arange(3))", "(1, 2, np.arange(3.0))", "python")
    result = harness.check_program(program, list(harness.MODES))
    assert result.findings == [] and result.compared == 8
    shared = program.args()
    got = harness.run_modes(harness.build(source, "<shared>"), shared, shared, ["shadow"])
    assert got["shadow"][0][1] != got["shadow"][1][1]
