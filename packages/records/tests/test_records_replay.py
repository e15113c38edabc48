"""record() / replay(): plain replays, diffs, cross-version source replays, golden records, CLI."""

from __future__ import annotations

import platform
import sys
import threading
from pathlib import Path

import numpy as np
import pytest

from framehook.records import (
    NewerPythonError,
    SourceUnavailableError,
    UntrustedBytecodeError,
    dumps,
    load,
    loads,
    record,
    record_call,
    replay,
    replay_record,
    save,
)
from framehook.records.cli import main as cli_main
from framehook.records.codeloc import NEWEST_PYTHON
from framehook.records.modes import STANDARD, available
from framehook.records.replay import FROM_SOURCE, FROM_TRUSTED, FROM_VERIFIED

ROOT = Path(__file__).resolve().parents[3]
GOLDEN = ROOT / "conformance" / "golden"

SCALE = 3
LOCK = threading.Lock()


def helper(x):
    return x * SCALE


def compute(xs, k=2, *, extra=0):
    xs.append(k)
    return [helper(x) for x in xs], sum(xs) + extra


def fact(n):
    return 1 if n <= 1 else n * fact(n - 1)


def make_closure(a):
    b = [a]

    def inner(c):
        b.append(c)
        return a + c + len(b)

    return inner


def gen(n):
    for i in range(n):
        yield i * SCALE
    return "done"


class Awaitable:
    def __await__(self):
        yield "tick"
        return 5


async def coro(n):
    return n + await Awaitable()


async def agen(n):
    for i in range(n):
        await Awaitable()
        yield i


def raises(n):
    raise KeyError(n)


def uses_lock():
    with LOCK:
        return 1


def uses_numpy(a):
    return a * 2, float(a.sum())


def empty_cell_closure():
    def later():
        return unset  # noqa: F821 - the cell is empty on purpose

    f = later
    unset = 1
    del unset
    return f


class Thing:
    def method(self, x):
        return x + 1


MODES = ("plain",)


def both_ways(path):
    """Replay with the recorded bytecode checked against the source, and from the source alone."""
    return replay(path, modes=MODES), replay(path, modes=MODES, prefer_source=True)


@pytest.mark.parametrize(
    "fn,args,kwargs",
    [
        (compute, ([1, 2],), {"extra": 5}),
        (fact, (6,), {}),
        (make_closure(4), (3,), {}),
        (gen, (3,), {}),
        (coro, (1,), {}),
        (agen, (2,), {}),
        (raises, ("k",), {}),
        (uses_numpy, (np.arange(3),), {}),
        (Thing().method, (1,), {}),
        (empty_cell_closure(), (), {}),
    ],
)
def test_record_and_replay_match(tmp_path, fn, args, kwargs):
    path = tmp_path / "r.fhrec"
    rec = record_call(fn, args, kwargs, path=path)
    assert rec.path == str(path)
    exact, source = both_ways(path)
    assert exact.code_from == FROM_VERIFIED and source.code_from == FROM_SOURCE
    assert exact.bytecode_note is None and source.bytecode_note is None
    assert exact.ok, exact.report()
    assert source.ok, source.report()
    assert "MATCH" in exact.summary()


def test_record_shortcut_and_outcome_contents(tmp_path):
    rec = record(compute, [1], path=tmp_path / "a.fhrec", extra=1)
    assert rec.outcome["kind"] == "return"
    assert set(rec.globals) >= {"helper", "SCALE"}
    assert rec.locals["k"]["t"] == "int"
    assert rec.outcome["args_after"] != rec.call["args"]  # the list argument was mutated
    rec2 = record(gen, 2)
    assert rec2.code["kind"] == "generator" and [e[0] for e in rec2.outcome["events"]] == ["yield", "yield"]
    with pytest.raises(TypeError, match="needs a Python function"):
        record(len, [1])


def test_mismatch_is_reported_not_raised(tmp_path):
    rec = record_call(compute, ([1, 2],))
    rec.outcome["value"]["items"][1] = {"t": "int", "v": "ff"}
    path = tmp_path / "bad.fhrec"
    save(rec, path)
    result = replay(path, modes=MODES)
    assert not result.ok
    plain = result.mode("plain")
    assert plain.status == "mismatch"
    assert any("recorded int 255, replayed int 5" in d for d in plain.diffs)
    assert "MISMATCH" in result.report()
    assert cli_main(["replay", str(path)]) == 1


def test_raise_vs_return_diff(tmp_path):
    rec = record_call(raises, ("x",))
    rec.outcome.update(kind="return", value="ok", exception=None)
    result = replay_record(loads(dumps(rec)), modes=MODES)
    assert "replay raised" in result.mode("plain").diffs[0]


def test_missing_values_are_named(tmp_path):
    path = tmp_path / "lock.fhrec"
    rec = record_call(uses_lock, (), path=path)
    assert rec.missing == ["globals['LOCK']"]
    result = replay(path, modes=MODES)
    assert not result.ok
    assert any("LOCK" in m for m in result.missing)
    assert "missing" in result.mode("plain").reason
    assert "missing values" in result.summary()


def scaled_sum(a, k):
    return float((a * k).sum())


def test_arrays_replayed_where_numpy_is_missing_say_so(tmp_path, monkeypatch):
    path = tmp_path / "np.fhrec"
    record_call(scaled_sum, (np.arange(6.0), np.float32(2.0)), path=path)
    monkeypatch.setitem(sys.modules, "numpy", None)  # `import numpy` now fails, as where it is not installed
    result = replay(path, modes=MODES)
    assert not result.ok
    why = "numpy is not installed here: pip install numpy"
    assert result.missing == [f"numpy.ndarray ({why})", f"numpy.generic ({why})"]
    assert "missing" in result.mode("plain").reason and "ModuleNotFoundError" not in result.summary()


def test_cross_version_source_replay(tmp_path):
    older = "3.9.1" if sys.version_info[:2] != (3, 9) else "3.10.1"  # another supported version
    rec = record_call(make_closure(2), (5,))
    rec.python = dict(rec.python, version=older, magic="00000000")
    path = tmp_path / "other.fhrec"
    save(rec, path)
    result = replay(path, modes=MODES)
    assert result.code_from == "source" and result.recorded_on == older
    assert result.ok, result.report()


def _from_python(tmp_path, fn, args, version, source=True):
    rec = record_call(fn, args)
    rec.python = dict(rec.python, version=version, magic="00000000")
    if not source:
        rec.code["source"] = None
    path = tmp_path / f"from-{version}.fhrec"
    save(rec, path)
    return path


def test_record_newer_than_every_supported_python_is_refused(tmp_path, capsys):
    path = _from_python(tmp_path, fact, (4,), "3.99.0")
    for prefer_source in (False, True):
        with pytest.raises(NewerPythonError) as info:
            replay(path, modes=MODES, prefer_source=prefer_source)
        message = str(info.value)
        assert str(path) in message and "recorded on Python 3.99.0" in message
        assert f"this reader (Python {platform.python_version()};" in message
        assert "supports CPython 3.9-%d.%d" % NEWEST_PYTHON in message
        assert "supports Python 3.99" in message
    assert cli_main(["replay", str(path)]) == 2
    out = capsys.readouterr().out
    assert "3.99.0" in out and platform.python_version() in out and "Traceback" not in out


def test_record_without_source_from_a_newer_python_names_both_versions(tmp_path):
    newer = "%d.%d.0" % (sys.version_info[0], sys.version_info[1] + 1)
    path = _from_python(tmp_path, fact, (4,), newer, source=False)
    with pytest.raises(NewerPythonError) as info:
        replay(path, modes=MODES)
    message = str(info.value)
    assert f"recorded on Python {newer}" in message and f"Python {platform.python_version()}" in message
    assert "newer than this reader" in message


def test_record_from_an_older_or_unparsable_python_is_not_refused(tmp_path):
    older = "%d.%d.0" % (sys.version_info[0], sys.version_info[1] - 1)
    for version in (older, "unknown"):
        result = replay(_from_python(tmp_path, fact, (4,), version), modes=MODES)
        assert result.code_from == "source" and result.recorded_on == version
        assert result.ok, result.report()
    with pytest.raises(SourceUnavailableError) as info:  # older, no source: the plain refusal
        replay(_from_python(tmp_path, fact, (4,), older, source=False), modes=MODES)
    assert not isinstance(info.value, NewerPythonError)
    assert older in str(info.value) and f"this is Python {platform.python_version()}" in str(info.value)


def test_cross_version_builtin_message_difference_is_a_note(tmp_path):
    def index_error(xs):
        return xs[5]

    rec = record_call(index_error, ([],))
    rec.outcome["exception"]["args"]["items"][0] = "older wording"
    rec.python = dict(rec.python, magic="00000000")
    result = replay_record(loads(dumps(rec)), modes=MODES)
    assert result.ok
    assert "message differs" in result.mode("plain").notes[0]


def test_source_unavailable(tmp_path):
    namespace: dict = {}
    exec("def dynamic(x):\n    return x + 1\n", namespace)
    rec = record_call(namespace["dynamic"], (1,))
    assert rec.code["source"] is None
    with pytest.raises(UntrustedBytecodeError, match="without source.*--trust-bytecode"):
        replay_record(loads(dumps(rec)), modes=MODES)  # same version: nothing to check the bytecode against
    trusted = replay_record(loads(dumps(rec)), modes=MODES, trust_bytecode=True)
    assert trusted.ok and trusted.code_from == FROM_TRUSTED, trusted.report()
    rec.python = dict(rec.python, magic="00000000")
    path = tmp_path / "nosrc.fhrec"
    save(rec, path)
    with pytest.raises(SourceUnavailableError, match="without source"):
        replay(path)
    assert cli_main(["replay", str(path)]) == 2


def test_source_does_not_compile_here(tmp_path, capsys):
    rec = record_call(fact, (3,))
    rec.code["source"] = "def fact(n:\n"
    rec.python = dict(rec.python, magic="00000000")
    path = tmp_path / "syntax.fhrec"
    save(rec, path)
    with pytest.raises(SourceUnavailableError, match="does not compile on Python"):
        replay(path)
    rec.code["source"] = "def other():\n    pass\n"
    save(rec, path)
    with pytest.raises(SourceUnavailableError, match="not found in the recorded source"):
        replay(path)
    assert cli_main(["replay", str(path)]) == 2
    out = capsys.readouterr().out
    assert "not found in the recorded source" in out and "Traceback" not in out


def test_corrupt_marshal(tmp_path):
    rec = record_call(fact, (3,))
    rec.code["marshal"] = "AAAA"
    result = replay_record(loads(dumps(rec)), modes=MODES)  # the source runs; the damage is reported
    assert result.ok and result.code_from == FROM_SOURCE, result.report()
    assert "differs from the compilation of its source" in result.bytecode_note
    assert "marshalled code is corrupt" in result.summary()
    with pytest.raises(SourceUnavailableError, match="marshalled code"):
        replay_record(loads(dumps(rec)), modes=MODES, trust_bytecode=True)


def test_unknown_mode_is_refused_before_anything_runs():
    rec = loads(dumps(record_call(fact, (3,))))
    with pytest.raises(ValueError, match=r"modes: unknown mode 'warp'; expected some of plain, shadow"):
        replay_record(rec, modes=("plain", "warp"))


def test_every_mode_is_run_or_skipped_with_a_reason(tmp_path):
    path = tmp_path / "m.fhrec"
    record_call(compute, ([3],), path=path)
    result = replay(path)
    names, absent = available()
    assert [m.mode for m in result.modes][:4] == ["plain", "shadow", "translator", "profiled"]
    assert sorted(m.mode for m in result.modes) == sorted(set(names) | set(absent))
    for m in result.modes:
        if m.mode in absent:
            assert m.status == "skip" and m.reason == f"{STANDARD[m.mode]} is not installed"
        else:
            assert m.status == "match", result.report()
    shadow = result.mode("shadow")
    if shadow.status != "skip":
        assert shadow.status == "match", result.report()
        assert shadow.intercepted and shadow.intercepted >= 1


def test_golden_records_replay_here(monkeypatch):
    monkeypatch.syspath_prepend(str(ROOT / "conformance"))  # the cases' own module (fhcases)
    files = sorted(GOLDEN.glob("*.fhrec"))
    assert len(files) >= 200
    for path in files[::7]:
        rec = load(path)
        need = next((n.split("=")[1] for n in rec.notes if n.startswith("min_version=")), "3.9")
        if sys.version_info[:2] < tuple(int(x) for x in need.split(".")):
            with pytest.raises(SourceUnavailableError):
                replay_record(rec, modes=MODES)
            continue
        for prefer_source in (False, True):
            result = replay_record(rec, modes=MODES, prefer_source=prefer_source)
            assert result.ok, result.report()


def test_cli_output(tmp_path, capsys):
    good = tmp_path / "good.fhrec"
    record_call(fact, (4,), path=good)
    assert cli_main(["replay", "--mode", "plain", str(good)]) == 0
    out = capsys.readouterr().out
    assert out.startswith("MATCH") and len(out.strip().splitlines()) == 1
    assert cli_main(["replay", "-v", "--source", str(good)]) == 0
    assert "code from source on" in capsys.readouterr().out
    assert cli_main(["replay", str(good), str(tmp_path / "missing.fhrec"), str(tmp_path)]) == 2
    lines = capsys.readouterr().out.strip().splitlines()
    assert len(lines) == 3 and "no such file" in lines[1] and "is a directory" in lines[2]
    assert cli_main([]) == 2


def test_package_versions_listed():
    rec = record_call(fact, (2,))
    assert set(rec.packages) == {"framehook.records", "framehook.runtime", "framehook.translator", "framehook.profiler"}
    assert rec.packages["framehook.records"] == "0.1.0" or rec.packages["framehook.records"] is None
    assert rec.python["version"].startswith("%d.%d" % sys.version_info[:2])


@pytest.mark.parametrize("fails_at", ["write", "rename"])
def test_a_failed_save_leaves_neither_the_record_nor_its_temp_file(tmp_path, monkeypatch, fails_at):
    import os

    rec = record_call(fact, (3,))
    path = tmp_path / "out.fhrec"
    save(rec, path)
    before = path.read_bytes()
    if fails_at == "rename":
        monkeypatch.setattr(os, "replace", lambda *a: (_ for _ in ()).throw(OSError(28, "No space left on device")))
    else:

        class Full:
            def __init__(self, fh):
                self.fh = fh

            def __enter__(self):
                return self

            def __exit__(self, *exc):
                self.fh.close()

            def fileno(self):
                return self.fh.fileno()

            def write(self, data):
                self.fh.write(data[:10])
                raise OSError(28, "No space left on device")

        real_fdopen = os.fdopen
        monkeypatch.setattr(
            os,
            "fdopen",
            lambda fd, mode="r", *a, **k: (
                Full(real_fdopen(fd, mode, *a, **k)) if "w" in mode else real_fdopen(fd, mode, *a, **k)
            ),
        )
    with pytest.raises(OSError, match="No space left"):
        save(record_call(fact, (4,)), path)
    monkeypatch.undo()
    assert path.read_bytes() == before  # the old record is intact
    assert sorted(p.name for p in tmp_path.iterdir()) == ["out.fhrec"]


def test_replay_does_not_repeat_the_sources_syntax_warnings(tmp_path, recwarn):
    import warnings

    source = "def f(x):\n    return x is 1\n"  # 'is' with a literal: a SyntaxWarning when compiled
    module = tmp_path / "warns.py"
    module.write_text(source)
    ns = {}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", SyntaxWarning)
        exec(compile(source, str(module), "exec"), ns)
    rec = record_call(ns["f"], (1,))
    assert rec.code["source"] == source
    path = tmp_path / "warns.fhrec"
    save(rec, path)
    result = replay(path, modes=("plain",), prefer_source=True)
    assert result.ok and result.code_from == "source"
    assert not [w for w in recwarn if issubclass(w.category, SyntaxWarning)]
