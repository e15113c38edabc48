"""The fuzzer's errstate programs (programs.ErrstateGenerator) and the harness's checks of
numpy error handling: the generator emits ``with np.errstate(...)`` blocks of every form the
translator captures or breaks at, over operations that really divide by zero, overflow,
underflow and produce NaN; the harness compares warnings (category, message, file, line),
FloatingPointErrors and ``np.geterr()``; a translator whose graphs ignore the blocks'
settings is reported."""

from __future__ import annotations

import contextlib
import logging
import re
import sys
from pathlib import Path

import numpy as np
import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import programs  # noqa: E402
import run  # noqa: E402

ERRSTATE_SEEDS = run.seeds(0, 40, "errstate")


def test_one_program_in_eight_is_an_errstate_program():
    chosen = [s for s in range(800) if programs.family(s) == "errstate"]
    assert chosen == list(range(4, 800, 8))
    # the other families keep their seeds
    assert all(programs.family(s) == "kernel" for s in range(3, 800, 4))
    assert all(programs.family(s) == "closure" for s in range(800) if s % 8 in (1, 6))
    assert run.seeds(0, 3, "errstate") == [4, 12, 20]
    assert run.seeds(5, 2) == [5, 6]


def test_generator_emits_every_form_of_errstate_block():
    sources = [programs.generate(s) for s in run.seeds(0, 300, "errstate")]
    assert sources == [programs.generate(s) for s in run.seeds(0, 300, "errstate")]  # seeded
    settings = set()
    forms = {
        k: 0
        for k in (
            "nested",
            "in loop",
            "loop inside",
            "return inside",
            "break inside",
            "print inside",
            "data branch inside",
            "variable settings",
        )
    }
    for src in sources:
        compile(src, "<generated>", "exec")
        assert "with np.errstate(" in src
        settings.update(re.findall(r"(divide|over|under|invalid|all)='(ignore|warn|raise)'", src))
        lines = src.splitlines()
        for n, line in enumerate(lines):
            if "with np.errstate(" not in line:
                continue
            depth = len(line) - len(line.lstrip())
            body = []
            for inner in lines[n + 1 :]:
                if len(inner) - len(inner.lstrip()) <= depth:
                    break
                body.append(inner.strip())
            above = [l for l in lines[:n] if len(l) - len(l.lstrip()) < depth]
            forms["nested"] += any(b.startswith("with np.errstate(") for b in body)
            forms["in loop"] += any(l.strip().startswith("for ") for l in above[-1:])
            forms["loop inside"] += any(b.startswith("for ") for b in body)
            forms["return inside"] += any(b.startswith("return ") for b in body)
            forms["break inside"] += any(b in ("break", "continue") for b in body)
            forms["print inside"] += any(b.startswith("print(") for b in body)
            forms["data branch inside"] += any(b.startswith("if np.isnan(") for b in body)
            forms["variable settings"] += "divide=mode" in line
    assert settings == {
        (k, m) for k in ("divide", "over", "under", "invalid", "all") for m in ("ignore", "warn", "raise")
    }
    assert all(n >= 3 for n in forms.values()), forms


def test_programs_hit_the_floating_point_conditions():
    """Plainly run, the programs warn, raise FloatingPointError and compute inf and NaN."""
    seen = {"warnings": set(), "raised": set(), "values": set()}
    for seed in ERRSTATE_SEEDS:
        status, text, _, shown, leaked = run.outcome(run.build(programs.generate(seed), "p"), *run.inputs(seed))
        assert leaked == ""
        seen["warnings"].update(re.findall(r"RuntimeWarning: (\w+)", " ".join(shown)))
        if status == "raised":
            seen["raised"].add(text.split(":")[0])
        seen["values"].update(v for v in ("nan", "inf") if v in text)
    assert {"divide", "overflow", "invalid"} <= seen["warnings"], seen
    assert "FloatingPointError" in seen["raised"], seen
    assert seen["values"] == {"nan", "inf"}, seen


def _warns(x):
    return np.log(x)


def _warns_elsewhere(x):
    y = x
    return np.log(y)


def test_outcome_records_warnings_with_their_location_and_numpy_error_state():
    x = np.array([0.0, -1.0])
    status, text, printed, shown, leaked = run.outcome(_warns, x)
    assert (status, leaked) == ("ok", "")
    assert [s.split(" (")[0] for s in shown] == [
        "RuntimeWarning: divide by zero encountered in log",
        "RuntimeWarning: invalid value encountered in log",
    ]
    assert all(s.endswith(f"{__file__}:{_warns.__code__.co_firstlineno + 1})") for s in shown)
    # same warnings at another line: a different outcome
    assert run.outcome(_warns_elsewhere, x)[3] != shown
    before = np.geterr()

    def leaks():
        np.seterr(divide="raise")

    assert run.outcome(leaks)[4] == "np.geterr() left changed: " + str(dict(before, divide="raise"))
    assert np.geterr() == before  # the harness restored it for the next run


@pytest.fixture
def watcher():
    handler = run.FailedTranslations()
    logging.getLogger("framehook").addHandler(handler)
    yield handler
    logging.getLogger("framehook").removeHandler(handler)


def _mismatched(watcher, modes):
    found = []
    for seed in ERRSTATE_SEEDS:
        findings, compared, _ = run.check_seed(seed, modes, watcher)
        assert compared > 1
        found += findings
    return found


def test_translator_matches_plain_on_errstate_programs(watcher):
    assert _mismatched(watcher, list(run.MODES)) == []


def test_dropping_the_errstate_block_from_graphs_is_reported(watcher, monkeypatch):
    """A translator whose generated code ignores the captured settings (the ``with
    numpy.errstate(...)`` around the block's nodes does nothing) warns where the plain code
    raises or is silent: the fuzzer reports it."""
    from framehook.translator.graph import pysource as codegen

    monkeypatch.setattr(codegen, "_np_errstate", lambda: lambda **settings: contextlib.nullcontext())
    found = _mismatched(watcher, ["translator"])
    assert found and {f["mode"] for f in found} == {"translator"}
    assert any(f["got"][3] != f["expected"][3] or f["got"][1] != f["expected"][1] for f in found)


def test_a_nondeterministic_plain_run_is_reported(watcher, monkeypatch):
    """The oracle is run twice: a program whose plain runs differ is a finding of its own."""
    monkeypatch.setattr(run, "generate", lambda seed: "def f(a, b, arr):\n    return np.random.random()\n")
    findings, _, _ = run.check_seed(4, ["shadow"], watcher)
    assert "plain, run again" in {f["mode"] for f in findings}
    monkeypatch.setattr(run, "generate", lambda seed: "def f(a, b, arr):\n    return np.log(arr - 1.0)\n")
    assert run.check_seed(4, list(run.MODES), watcher)[0] == []


def test_errstate_programs_also_run_under_the_callers_settings(watcher, monkeypatch):
    assert run.outer_errstate(5) is None and all(run.outer_errstate(s) for s in ERRSTATE_SEEDS)
    assert len({tuple(sorted(run.outer_errstate(s).items())) for s in ERRSTATE_SEEDS}) > 10
    got = run.run_modes(
        run.build(programs.generate(4), "p"), run.inputs(4), run.inputs(4, 1), ["translator"], {"divide": "raise"}
    )
    assert [r[0] for r in got["translator"]][3:] == ["outer", "outer", got["translator"][0][0]]
    # an underflow the default settings ignore is folded at trace time; under the caller's
    # 'warn' it must warn, so the graph made under the defaults must not be reused
    monkeypatch.setattr(
        run, "generate", lambda seed: "def f(a, b, arr):\n    return arr + np.exp(np.float64(5) * -800.0)\n"
    )
    monkeypatch.setattr(run, "outer_errstate", lambda seed: {"under": "warn"})
    assert run.check_seed(4, ["translator"], watcher)[0] == []
    from framehook.translator.guards import builder as guard_builder

    real = guard_builder.make_global_state_check

    def unguarded():
        check = real()

        def always() -> bool:
            return True

        always.snapshot, always.fast_path = check.snapshot, None
        return always

    monkeypatch.setattr(guard_builder, "make_global_state_check", unguarded)
    found = run.check_seed(4, ["translator"], watcher)[0]
    assert found and {f["got"][0] for f in found} == {"outer"}


def test_stats_run_under_explain_shows_no_warnings(watcher):
    import collections
    import warnings

    warning = [s for s in ERRSTATE_SEEDS if run.outcome(run.build(programs.generate(s), "<p>"), *run.inputs(s))[3]]
    assert warning  # programs that do warn when run
    stats: "collections.Counter[str]" = collections.Counter()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        for seed in warning[:5]:
            run.explain_stats(
                run.build(programs.generate(seed), f"<fuzz program {seed}>"),
                run.inputs(seed),
                "errstate",
                stats,
                collections.Counter(),
            )
    assert stats["errstate programs"] == len(warning[:5])
    assert [str(w.message) for w in caught] == []  # already compared by the runs; not printed again
