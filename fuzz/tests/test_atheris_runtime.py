"""The atheris target for the runtime (fuzz/atheris_runtime.py): its decoding and oracle on
every CPython, and a bounded libFuzzer run where atheris installs."""

from __future__ import annotations

import importlib.util
import random
import subprocess
import sys
from pathlib import Path

import pytest

FUZZ = Path(__file__).resolve().parent.parent
TARGET = FUZZ / "atheris_runtime.py"
sys.path.insert(0, str(FUZZ))

import atheris_runtime as ar  # noqa: E402

# Why atheris is missing where it is (pip install atheris, November 2026; tox.ini's pins follow)
NO_ATHERIS = {
    (3, 15): "no cp315 wheel; its sdist (3.0.0) builds only with clang and libFuzzer installed, "
    "and then refuses to import (unsupported python version)",
}
VERSION = "%d.%d" % sys.version_info[:2]


def run_target(*args: str, timeout: float = 120) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, str(TARGET), *args], capture_output=True, text=True, timeout=timeout, cwd=str(FUZZ)
    )


def encode(*indexes: int) -> bytes:
    """Bytes whose successive choices are these option indexes (Reader.pick takes a byte modulo)."""
    return bytes(indexes)


# target: signature 2 ("a, b"), free ("v",), body "tuple", no extra locals; installed with
# set_eval_frame, helper calls skipped, no guard error hook, no bad API call; one callback
# result: GuardedCode (after reading the frame view) with a "twin" replacement (body "sum",
# 1 extra local) behind the guard "true"; two calls: (0, 1) then (1, 2.5)
HAND_MADE = encode(
    2, 1, 0, 0,  # signature, free variables, body, extra locals
    0, 0, 0, 0,  # install, helper policy, guard error hook, bad API call
    0,  # one callback result
    1, 2, 1, 1, 2, 0, 0,  # guarded, read_view; twin: body sum, 1 extra local; one guard: true
    1,  # two calls
    0, 0, 0, 0, 1,  # hook, fitting the signature, as many arguments as it takes: 0 and 1
    0, 0, 0, 1, 3,  # hook, fitting, 1 and 2.5 (no keywords: the signature takes none)
)  # fmt: skip


def test_hand_made_input_decodes_as_written():
    case = ar.decode(HAND_MADE)
    assert case.target.text() == (
        "def factory(v):\n    def target(a, b):\n        return ('t', a, b, v, )\n    return target\n"
    )
    assert (case.install, case.helper_policy, case.guard_error_hook, case.bad_api) == ("set", "skip", False, "none")
    (resp,) = case.responses
    assert (resp.kind, resp.before, resp.replacement, resp.guards) == ("guarded", "read_view", "twin", ("true",))
    assert (resp.replacement_source.body, resp.replacement_source.extra_locals) == ("sum", 1)
    assert [(c.mode, c.args, c.kwargs) for c in case.calls] == [("hook", (0, 1), {}), ("hook", (1, 2.5), {})]


def test_hand_made_input_runs_the_replacement_then_hits_its_entry():
    run = ar.Run(ar.decode(HAND_MADE))
    outcomes = []
    real = run.hooked
    run.hooked = lambda call: outcomes.append(real(call)) or outcomes[-1]
    assert run.run() == []
    # the twin returns ('r0', a + b + v): a miss that installs it, then a cache hit
    assert outcomes == [("value", repr(("r0", 11))), ("value", repr(("r0", 13.5)))]


def test_describe_and_run_from_the_command_line(tmp_path):
    path = tmp_path / "hand-made"
    path.write_bytes(HAND_MADE)
    described = run_target("--describe", str(path))
    assert described.returncode == 0, described.stderr
    assert "def target(a, b):" in described.stdout
    assert "callback result 0: {'kind': 'guarded', 'before': 'read_view', 'replacement': 'twin'" in described.stdout
    assert "call 1: mode=hook args=(1, 2.5) kwargs={}" in described.stdout
    ran = run_target("--run", str(path))
    assert (ran.returncode, ran.stdout.strip()) == (0, f"{path}: ok"), ran.stderr


@pytest.mark.parametrize("kind", ["none", "guarded", "wrong", "raise", "bad_guarded"])
@pytest.mark.parametrize("install", ar.INSTALLS)
def test_each_callback_result_on_each_install_path(kind, install):
    target = ar.Source(7, ("v", "w"), "cell", 8, "t")
    twin = ar.Source(7, ("v", "w"), "tuple", 300, "r0")
    resp = ar.Response(kind, "keep_view", replacement="twin", replacement_source=twin, guards=("truthy", "false"))
    resp.wrong, resp.exception = "tuple", "FuzzInterrupt"
    calls = [ar.Call("hook", (1, 2), {"z": None}), ar.Call("run_only", (3,), {}), ar.Call("hook", (4,), {"k": 5})]
    run = ar.Run(ar.Case(target, install, "passthrough", True, [resp], calls, "call_with_fn"))
    assert run.run() == []
    assert run.misses >= 1


@pytest.mark.parametrize("guard", ar.GUARDS)
def test_each_guard_result(guard):
    target = ar.Source(3, (), "helper", 0, "t")
    resp = ar.Response("guarded", "nothing", replacement="same", guards=(guard,))
    calls = [ar.Call(mode, (i,), {}) for i, mode in enumerate(["hook", "hook", "run_only", "hook"])]
    run = ar.Run(ar.Case(target, "enable", "skip", True, [resp], calls, "none"))
    assert run.run() == []


def test_incompatible_replacements_are_rejected_and_never_cached():
    target = ar.Source(1, ("v",), "tuple", 0, "t")
    responses = [
        ar.Response("guarded", "nothing", "other_free", ar.Source(1, ("w",), "tuple", 0, "r0"), ("true",)),
        ar.Response("guarded", "nothing", "other_signature", ar.Source(2, ("v",), "tuple", 0, "r1"), ("true",)),
        ar.Response("guarded", "nothing", "twin", ar.Source(1, ("v",), "yield", 0, "r2"), ("true",)),
        ar.Response("guarded", "nothing", "helper", guards=("true",)),
    ]
    run = ar.Run(ar.Case(target, "call_with", "skip", False, responses, [ar.Call("hook", (1,), {})] * 4, "none"))
    assert [m["compatible"] for m in run.responses] == [False, False, False, False]
    assert run.run() == []
    assert run.misses == 4


def test_the_oracle_reports_a_wrong_outcome():
    """A runtime that ran the original instead of the replacement would be caught."""
    run = ar.Run(ar.decode(HAND_MADE))
    run.replacement_outcome = lambda made, call: ("value", "not what ran")
    problems = run.run()
    assert len(problems) == 2 and all("expected ('value', 'not what ran')" in p for p in problems)


def test_random_inputs_pass_the_oracle():
    rng = random.Random(23)
    for _ in range(100):
        data = bytes(rng.randrange(256) for _ in range(rng.randrange(80)))
        assert ar.run_input(data) == [], ar.describe(ar.decode(data))


def test_check_leaks_counts_objects(tmp_path):
    path = tmp_path / "hand-made"
    path.write_bytes(HAND_MADE)
    result = run_target("--check-leaks", str(path))
    assert result.returncode == 0, result.stdout + result.stderr
    assert "more objects after 200 runs" in result.stdout


def atheris_missing() -> str:
    why = NO_ATHERIS.get(sys.version_info[:2], "it is not installed in this environment")
    if importlib.util.find_spec("atheris") is not None:
        try:
            import atheris  # noqa: F401
        except Exception as exc:  # 3.15: RuntimeError, unsupported version
            why = f"it imports with {type(exc).__name__}: {exc}"
        else:
            return ""
    return f"atheris does not install on CPython {VERSION}: {why}"


@pytest.mark.skipif(bool(atheris_missing()), reason=atheris_missing())
def test_bounded_libfuzzer_run_finds_no_crash(tmp_path):
    crashes = tmp_path / "crashes"
    result = run_target("--crashes", str(crashes), "-runs=600", "-max_total_time=20", "-seed=7", timeout=300)
    assert result.returncode == 0, result.stderr[-3000:]
    assert "Done 600 runs" in result.stderr or "DONE" in result.stderr, result.stderr[-3000:]
    assert list(crashes.iterdir()) == []


@pytest.mark.skipif(bool(atheris_missing()), reason=atheris_missing())
def test_libfuzzer_replays_a_saved_input(tmp_path):
    path = tmp_path / "crash-hand-made"
    path.write_bytes(HAND_MADE)
    result = run_target("--crashes", str(tmp_path), str(path))
    assert result.returncode == 0, result.stderr[-3000:]
    assert f"Running: {path}" in result.stderr


ATHERIS_REGRESSIONS = sorted(p for p in (FUZZ / "regressions" / "atheris").iterdir() if p.suffix != ".txt")


@pytest.mark.parametrize("path", ATHERIS_REGRESSIONS, ids=lambda p: p.name)
def test_fixed_atheris_findings_stay_fixed(path):
    # inputs the target once failed on (a crash, a wrong outcome or objects that pile up),
    # replayed on every CPython without atheris
    data = path.read_bytes()
    assert ar.run_input(data) == [], ar.describe(ar.decode(data))
    rounds = 50
    grown = ar.check_leaks(data, rounds=rounds)
    assert grown < rounds // 2, f"{grown} more objects after {rounds} runs of {path.name}"
