"""Replay shows what it runs (issue 30): the names a record binds, what it imports, and
sources that would crash or swamp compile(), each refused or replayed in a child process
under an audit hook."""

from __future__ import annotations

import importlib.util
import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from framehook.records import (
    RecordFormatError,
    load,
    loads,
    record_call,
    replay,
    replay_record,
    save,
)
from framehook.records.cli import main as cli_main
from framehook.records.errors import SourceLimitError, UnsafeBindingError
from framehook.records.limits import DEFAULT

HERE = Path(__file__).resolve().parent
spec = importlib.util.spec_from_file_location("hostile_replay", HERE / "records_data" / "hostile_replay.py")
hostile = importlib.util.module_from_spec(spec)
spec.loader.exec_module(hostile)

# Runs one case: builds it, warms up on a good record (lazy imports of the package itself),
# then loads and replays it with an audit hook on, and prints what happened as JSON.
CHILD = textwrap.dedent(
    r"""
    import importlib.util, json, sys, threading
    case, data_dir, side_dir, stack = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4])
    sys.path.insert(0, side_dir)
    spec = importlib.util.spec_from_file_location("hostile_replay", data_dir + "/hostile_replay.py")
    hostile = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(hostile)
    from framehook.records import RecordError, loads, replay_record
    data = hostile.build(case)
    replay_record(loads(hostile.pack(hostile.base())), modes=("plain",))
    WATCHED = {"import", "exec", "compile", "os.system", "subprocess.Popen", "os.exec", "os.posix_spawn",
               "os.fork", "ctypes.dlopen", "marshal.loads", "pickle.find_class"}
    events, active = [], [False]
    def hook(event, args):
        if active[0] and event in WATCHED:
            first = args[1] if event == "compile" else (args[0] if args else None)
            first = getattr(first, "co_filename", first)  # exec: the code's file
            events.append([event, first if isinstance(first, str) else repr(first)[:80]])
    sys.addaudithook(hook)
    report = {}
    def run():
        active[0] = True
        try:
            rec = loads(data, path=case + ".fhrec")
        except RecordError as exc:
            report.update(stage="load", error=type(exc).__name__, message=str(exc))
            return
        try:
            result = replay_record(rec, modes=("plain",))
        except RecordError as exc:
            report.update(stage="replay", error=type(exc).__name__, message=str(exc))
            return
        finally:
            active[0] = False
        report.update(stage="runs", verdict=result.verdict, imports=result.imports, bindings=result.bindings,
                      ignored=len(result.plan.ignored_globals))
    if stack:
        threading.stack_size(stack)
        worker = threading.Thread(target=run)
        worker.start()
        worker.join()
    else:
        run()
    active[0] = False
    report["events"] = events
    report["side_effect_imported"] = hostile.SIDE_EFFECT_MODULE in sys.modules
    print(json.dumps(report))
    """
)


@pytest.fixture(scope="module")
def side_effect_dir(tmp_path_factory):
    """A directory holding the module whose import the hostile records try to cause."""
    folder = tmp_path_factory.mktemp("side")
    (folder / f"{hostile.SIDE_EFFECT_MODULE}.py").write_text(
        "import os\nopen(os.path.join(os.path.dirname(__file__), 'IMPORTED'), 'w').close()\n"
        "def run(*args):\n    return 'ran'\n"
    )
    return folder


@pytest.fixture(autouse=True)
def no_import_yet(side_effect_dir):
    """Each test starts with the side-effect module not imported (its marker absent)."""
    marker = side_effect_dir / "IMPORTED"
    if marker.exists():
        marker.unlink()
    sys.modules.pop(hostile.SIDE_EFFECT_MODULE, None)
    yield


def _run_case(name: str, side_dir: Path, stack: int = 0) -> dict:
    proc = subprocess.run(
        [sys.executable, "-c", CHILD, name, str(HERE / "records_data"), str(side_dir), str(stack)],
        capture_output=True,
        text=True,
        timeout=300,
    )
    # a crash (a negative return code) fails here, not in pytest's own process
    assert proc.returncode == 0, f"child ended with {proc.returncode}: {proc.stderr[-2000:]}"
    return json.loads(proc.stdout.strip().splitlines()[-1])


@pytest.mark.parametrize("name", sorted(hostile.CASES))
def test_hostile_record(name, side_effect_dir):
    stage, expected = hostile.CASES[name][1]
    got = _run_case(name, side_effect_dir)
    assert got["stage"] == stage, got
    if stage == "runs":
        assert got["imports"] == expected, got
    else:
        assert expected in got["message"], got
        assert name in got["message"]  # the message names the file
    # nothing ran that the record does not show: no import beyond the listed ones, no
    # exec, no process, and compile() only of the record's own source
    listed = set(got.get("imports", []))
    for event, arg in got["events"]:
        if event == "import":
            assert arg.split(".")[0] in {m.split(".")[0] for m in listed}, (event, arg)
        elif event == "compile":
            assert arg == "sample.py", (event, arg)
        else:
            pytest.fail(f"audit event {event} ({arg}) during the replay of {name}")
    assert not got["side_effect_imported"]
    assert not (side_effect_dir / "IMPORTED").exists()


def test_the_audit_child_sees_imports_and_compiles(side_effect_dir):
    # the proof above is only as good as its hook: a global the code does name is
    # imported, and the child's hook reports the import and the compile
    script = CHILD.replace(
        "data = hostile.build(case)",
        "doc = hostile._unused_global_import(); doc['code']['source'] = "
        "'def sample(a, b=2):\\n    return [a, b] if zen else 0\\n'; data = hostile.pack(doc)",
    )
    proc = subprocess.run(
        [sys.executable, "-c", script, "names_zen", str(HERE / "records_data"), str(side_effect_dir), "0"],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert proc.returncode == 0, proc.stderr[-2000:]
    got = json.loads(proc.stdout.strip().splitlines()[-1])
    assert got["stage"] == "runs" and got["verdict"] == "MATCH", got
    assert got["imports"] == [hostile.SIDE_EFFECT_MODULE]
    assert got["bindings"] == [f"zen -> module {hostile.SIDE_EFFECT_MODULE}"]
    # importlib runs the module's code through exec(), which the hook sees
    assert any(event == "exec" and hostile.SIDE_EFFECT_MODULE in arg for event, arg in got["events"]), got
    assert ["compile", "sample.py"] in got["events"]
    assert got["side_effect_imported"]


def _saved(tmp_path: Path, doc: dict, name: str = "r.fhrec") -> Path:
    path = tmp_path / name
    path.write_bytes(hostile.pack(doc))
    return path


def test_builtins_may_name_only_their_own_builtin(tmp_path):
    for target in (
        {"t": "global", "module": "os", "qualname": "system"},
        {"t": "global", "module": "builtins", "qualname": "print"},  # another builtin
        {"t": "module", "name": "os"},
        {"t": "int", "v": "1"},
    ):
        doc = hostile._with_source("len(a)")()
        doc["builtins"]["len"] = target
        with pytest.raises(UnsafeBindingError) as info:
            load(_saved(tmp_path, doc))
        assert "builtins['len']: may only name the builtin len (builtins.len)" in str(info.value)
    # the builtin itself, under its own name or the path it has here (open is io.open,
    # which records made before this change hold)
    rec = record_call(_reads_builtins, ("ab",))
    rec.builtins["open"] = {"t": "global", "module": "io", "qualname": "open"}
    path = tmp_path / "legacy.fhrec"
    save(rec, path)
    result = replay(path, modes=("plain",))
    assert result.ok, result.report()
    assert result.bindings == ["open -> io.open"]


def _reads_builtins(path):
    return open is not None and len(path)


def test_recorded_builtins_are_written_by_their_builtins_name():
    rec = record_call(_reads_builtins, ("x",))
    assert rec.builtins["open"] == {"t": "global", "module": "builtins", "qualname": "open"}
    assert rec.builtins["len"] == {"t": "global", "module": "builtins", "qualname": "len"}


def test_the_plan_is_shown_before_anything_is_imported_or_run(tmp_path, side_effect_dir, monkeypatch):
    monkeypatch.syspath_prepend(str(side_effect_dir))
    monkeypatch.delitem(sys.modules, hostile.SIDE_EFFECT_MODULE, raising=False)
    doc = hostile._with_source("runner(a)")()
    doc["globals"]["runner"] = {"t": "global", "module": hostile.SIDE_EFFECT_MODULE, "qualname": "run"}
    doc["globals"]["unused"] = {"t": "module", "name": "antigravity"}
    doc["outcome"]["value"] = "ran"
    path = _saved(tmp_path, doc)
    seen = []

    def show(plan):
        seen.append((list(plan.bindings), list(plan.imports), list(plan.ignored_globals)))
        assert not (side_effect_dir / "IMPORTED").exists()  # nothing imported yet

    result = replay(path, modes=("plain",), show=show)
    expected = ([f"runner -> {hostile.SIDE_EFFECT_MODULE}.run"], [hostile.SIDE_EFFECT_MODULE], ["unused"])
    assert seen == [expected]
    assert result.ok and result.bindings == expected[0] and result.imports == expected[1]
    assert f"imports: {hostile.SIDE_EFFECT_MODULE}" in result.summary()
    assert f"  binds runner -> {hostile.SIDE_EFFECT_MODULE}.run" in result.report().splitlines()
    assert "antigravity" not in sys.modules


def test_a_show_callback_that_raises_stops_the_replay(tmp_path, side_effect_dir, monkeypatch):
    monkeypatch.syspath_prepend(str(side_effect_dir))
    monkeypatch.delitem(sys.modules, hostile.SIDE_EFFECT_MODULE, raising=False)
    doc = hostile._with_source("runner(a)")()
    doc["globals"]["runner"] = {"t": "global", "module": hostile.SIDE_EFFECT_MODULE, "qualname": "run"}

    class Refused(Exception):
        pass

    def refuse(plan):
        raise Refused(plan.bindings)

    with pytest.raises(Refused):
        replay(_saved(tmp_path, doc), show=refuse)
    assert not (side_effect_dir / "IMPORTED").exists()


def test_cli_plan_prints_the_bindings_and_runs_nothing(tmp_path, side_effect_dir, monkeypatch, capsys):
    monkeypatch.syspath_prepend(str(side_effect_dir))
    monkeypatch.delitem(sys.modules, hostile.SIDE_EFFECT_MODULE, raising=False)
    doc = hostile._with_source("runner(a)")()
    doc["globals"]["runner"] = {"t": "global", "module": hostile.SIDE_EFFECT_MODULE, "qualname": "run"}
    path = _saved(tmp_path, doc)
    assert cli_main(["replay", "--plan", str(path)]) == 0
    out = capsys.readouterr().out.splitlines()
    assert out == [
        f"PLAN     {path}",
        f"  imports: {hostile.SIDE_EFFECT_MODULE}",
        f"  binds runner -> {hostile.SIDE_EFFECT_MODULE}.run",
    ]
    assert not (side_effect_dir / "IMPORTED").exists()
    # -v shows the same plan first, then runs
    assert cli_main(["replay", "-v", "--mode", "plain", str(path)]) == 1  # outcome differs
    out = capsys.readouterr().out.splitlines()
    assert out[:3] == [
        f"PLAN     {path}",
        f"  imports: {hostile.SIDE_EFFECT_MODULE}",
        f"  binds runner -> {hostile.SIDE_EFFECT_MODULE}.run",
    ]
    assert out[3].startswith("MISMATCH")


def test_globals_of_same_file_helpers_count_as_named():
    # a helper rebuilt from the source names a global the function itself does not
    rec = loads(hostile.pack(hostile.base()))
    helper_source = "def sample(a, b=2):\n    return [a, b]\ndef helper():\n    return SCALE\n"
    rec.code["source"] = helper_source
    rec.call["args"] = {
        "t": "tuple",
        "items": [
            {
                "t": "function",
                "id": 0,
                "name": "helper",
                "qualname": "helper",
                "firstlineno": 3,
                "flags": 0,
                "defaults": None,
                "kwdefaults": None,
                "closure": [],
            }
        ],
    }
    rec.globals = {"SCALE": {"t": "int", "v": "7"}, "other": {"t": "int", "v": "1"}}
    result = replay_record(rec, modes=("plain",))
    assert result.plan.globals_used == ["SCALE"] and result.plan.ignored_globals == ["other"]


def test_python_version_must_agree_with_the_bytecode_magic(tmp_path):
    doc = hostile.base()
    doc["python"]["version"] = "4.2.0"
    with pytest.raises(RecordFormatError, match=r"python: claims Python 4\.2\.0 with the bytecode magic"):
        load(_saved(tmp_path, doc))
    doc["python"]["magic"] = "00000000"  # another interpreter: its version is its own business
    assert load(_saved(tmp_path, doc)).python["version"] == "4.2.0"


def test_code_kind_must_be_the_codes_kind(tmp_path):
    for kind in ("generator", "coroutine", "async_generator"):
        doc = hostile.base()
        doc["code"]["kind"] = kind
        with pytest.raises(RecordFormatError) as info:
            replay(_saved(tmp_path, doc), modes=("plain",))
        assert f"code.kind: the record says '{kind}', but the code of sample is a function" in str(info.value)


@pytest.mark.parametrize(
    "body",
    [
        "a" + "+1" * 880,
        "a" + ".a" * 880,
        "a" + "()" * 440,
        "not " * 880 + "a",
        "lambda: " * 440 + "a",
        "[" * 75 + "a" + "]" * 75,
        "f'{a" + "+1" * 800 + "}'",
    ],
    ids=["additions", "attributes", "calls", "nots", "lambdas", "brackets", "fstring"],
)
@pytest.mark.parametrize("stack", [0, 256 * 1024], ids=["main-thread", "256k-thread"])
def test_sources_just_inside_the_limits_never_crash(body, stack, side_effect_dir):
    # what the scan lets through compiles in the main thread; in a thread of 256 KiB it
    # compiles too, or (3.14+, whose compiler measures its stack) is refused cleanly
    script = CHILD.replace(
        "data = hostile.build(case)",
        f"data = hostile.pack(hostile._with_source({body!r})())",
    )
    proc = subprocess.run(
        [sys.executable, "-c", script, "inside", str(HERE / "records_data"), str(side_effect_dir), str(stack)],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert proc.returncode == 0, f"child ended with {proc.returncode}: {proc.stderr[-2000:]}"
    got = json.loads(proc.stdout.strip().splitlines()[-1])
    if stack and got["stage"] == "replay":
        assert got["error"] == "SourceUnavailableError" and "too complex to compile" in got["message"], got
    else:
        assert got["stage"] == "runs", got  # compiled and ran (its outcome differs: no matter)


def test_a_raised_limit_hands_the_source_to_compile(tmp_path):
    source = hostile._with_source("a" + "+1" * 1_500)
    path = _saved(tmp_path, source())
    with pytest.raises(SourceLimitError) as info:
        replay(path, modes=("plain",))
    assert "source_nesting exceeds the limit of 1000" in str(info.value)
    assert "raise it with limits= or --limit source_nesting=N" in str(info.value)
    result = replay(path, modes=("plain",), limits=DEFAULT.replace(source_nesting=2_000))
    assert result.mode("plain").status == "mismatch"  # compiled and ran


@pytest.mark.skipif(
    sys.version_info < (3, 11), reason="CPython 3.9 and 3.10 have no recursion guard in the compiler to test"
)
def test_compile_giving_up_is_a_record_error(tmp_path):
    # with the scan's limit raised past what the compiler takes, its own RecursionError
    # (3.11+) becomes a SourceUnavailableError naming the file
    path = _saved(tmp_path, hostile._with_source("a" + "+1" * 100_000)())
    proc = subprocess.run(
        [
            sys.executable,
            "-c",
            "import sys\nfrom framehook.records import replay, SourceUnavailableError, Limits\n"
            "try:\n    replay(sys.argv[1], modes=('plain',), limits=Limits(source_nesting=10**9, source_tokens=10**9))\n"
            "except SourceUnavailableError as exc:\n    print(type(exc).__name__, exc)\n",
            str(path),
        ],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert proc.stdout.startswith("SourceUnavailableError ") and "too complex to compile" in proc.stdout
    assert str(path) in proc.stdout


def test_the_scan_refuses_no_module_of_the_standard_library():
    import sysconfig

    from framehook.records import sourcescan

    stdlib = Path(sysconfig.get_paths()["stdlib"])
    checked = 0
    for name in ("typing.py", "_pydecimal.py", "argparse.py", "inspect.py", "dataclasses.py", "test/test_grammar.py"):
        path = stdlib / name
        if path.exists():
            sourcescan.check(path.read_text(encoding="utf-8"), DEFAULT, name, None)
            checked += 1
    assert checked >= 5


def test_save_never_writes_through_a_planted_symlink(tmp_path):
    victim = tmp_path / "victim.txt"
    victim.write_text("precious")
    path = tmp_path / "bug.fhrec"
    rec = record_call(hostile.sample, (1,))
    # the old temporary name, and the record's own name, both planted as symlinks
    os.symlink(victim, f"{path}.tmp{os.getpid()}")
    save(rec, path)
    assert victim.read_text() == "precious"
    os.remove(path)
    os.symlink(victim, path)
    save(rec, path)
    assert victim.read_text() == "precious"
    assert path.is_file() and not path.is_symlink()
    assert load(path).code["qualname"] == "sample"
    # no temporary file is left behind
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted(
        ["victim.txt", "bug.fhrec", f"bug.fhrec.tmp{os.getpid()}"]
    )


def test_save_gives_the_usual_permissions(tmp_path):
    old = os.umask(0o022)
    try:
        path = save(record_call(hostile.sample, (1,)), tmp_path / "p.fhrec")
    finally:
        os.umask(old)
    assert os.stat(path).st_mode & 0o777 == 0o644


def test_cli_unknown_mode_is_a_usage_error(capsys):
    with pytest.raises(SystemExit) as info:
        cli_main(["replay", "--mode", "bogus", "x.fhrec"])
    assert info.value.code == 2
    err = capsys.readouterr().err
    assert "--mode 'bogus' is not a mode; expected one of plain, shadow, translator, profiled" in err
    assert err.startswith("usage: framehook replay")


def test_cli_bad_limit_prints_the_replay_usage(capsys):
    with pytest.raises(SystemExit) as info:
        cli_main(["replay", "--limit", "bogus=3", "x.fhrec"])
    assert info.value.code == 2
    err = capsys.readouterr().err
    assert err.startswith("usage: framehook replay") and "--limit 'bogus=3'" in err


def test_a_replay_where_no_mode_ran_is_not_a_match(tmp_path, capsys, monkeypatch):
    from framehook.records import modes

    monkeypatch.setattr(modes, "_entry_points", lambda: [])  # no other package installed
    path = tmp_path / "r.fhrec"
    record_call(hostile.sample, (1,), path=path)
    result = replay(path, modes=("shadow", "profiled"))
    assert [m.status for m in result.modes] == ["skip", "skip"]
    assert result.verdict == "NOT RUN" and not result.ok
    assert result.summary().startswith("NOT RUN  ")
    assert cli_main(["replay", "--mode", "shadow", str(path)]) == 3
    out = capsys.readouterr().out
    assert out.startswith("NOT RUN  ") and "shadow: skipped: framehook-runtime is not installed" in out
    # an error outranks a mismatch, which outranks a record that did not run
    assert cli_main(["replay", "--mode", "shadow", str(path), str(tmp_path / "absent.fhrec")]) == 2
    capsys.readouterr()
