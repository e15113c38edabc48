"""The hostile corpus: every file is rejected cleanly, and loading executes nothing."""

from __future__ import annotations

import importlib.util
import json
import sys
from pathlib import Path

import pytest

from framehook.records import RecordError, SourceUnavailableError, load, loads, record_call, replay_record, save
from framehook.records.codeloc import current_python
from framehook.records.replay import BYTECODE_DIFFERS, FROM_SOURCE, plan, replay
from framehook.records.cli import main as cli_main
from framehook.records.errors import RecordTooLargeError, RecordVersionError

HERE = Path(__file__).resolve().parent
HOSTILE = HERE / "records_data" / "hostile"
_MANIFEST = json.loads((HOSTILE / "MANIFEST.json").read_text())
MANIFEST = _MANIFEST["load"]  # name -> fragment of the load() error
REPLAY = _MANIFEST["replay"]  # name -> {"note": ..., "trust": ...} (see make_hostile.py)

spec = importlib.util.spec_from_file_location("records_audit", HERE / "records_data" / "audit.py")
helpers = importlib.util.module_from_spec(spec)
spec.loader.exec_module(helpers)


def _sample(a, b=2):
    return [a, b]


@pytest.fixture(scope="module", autouse=True)
def warm_up(tmp_path_factory):
    # Load one good record first so lazily imported stdlib modules are already imported.
    path = tmp_path_factory.mktemp("warm") / "good.fhrec"
    record_call(_sample, (1,), path=path)
    load(path)


def test_corpus_is_large_enough():
    files = sorted(HOSTILE.glob("*.fhrec"))
    assert len(files) >= 100
    assert {f.name for f in files} == set(MANIFEST) | set(REPLAY)
    assert not set(MANIFEST) & set(REPLAY)


@pytest.mark.parametrize("name", sorted(MANIFEST))
def test_hostile_file_rejected_without_executing_anything(name):
    path = HOSTILE / name
    with helpers.AuditWatch():
        with pytest.raises(RecordError) as info:
            load(path)
        also_trusted_parse = None
        try:  # trusted=True permits pickle values but must still reject malformed files
            load(path, trusted=True)
        except RecordError as exc:
            also_trusted_parse = exc
    message = str(info.value)
    assert str(path) in message
    assert MANIFEST[name] in message
    assert helpers.AuditWatch.events == []
    assert not hasattr(sys, "FRAMEHOOK_PWNED")
    if "pickle" not in name:
        assert also_trusted_parse is not None


def test_audit_watch_really_sees_events():
    # The proof above is only as good as the hook: check that it notices an exec and an import.
    with helpers.AuditWatch():
        exec("x = 1", {})
        with pytest.raises(ImportError):
            __import__("framehook_no_such_module_for_audit")
    names = [e for e, _ in helpers.AuditWatch.events]
    assert "exec" in names and "import" in names


def _rebuild_it():
    return _Rebuilt()


class _Rebuilt:
    kind = "rebuilt"

    def __reduce__(self):
        return (_rebuild_it, ())


def test_pickle_payload_needs_trusted(tmp_path):
    value = _Rebuilt()  # reduces through another callable: only pickle stores it

    def uses(u):
        return u.kind

    path = tmp_path / "p.fhrec"
    rec = record_call(uses, (value,), path=path, allow_pickle=True)
    assert rec.missing == []
    with pytest.raises(RecordError, match="trusted=True"):
        load(path)
    assert load(path, trusted=True).call["args"]["items"][0]["t"] == "pickle"
    from framehook.records import replay

    result = replay(path, modes=("plain",), trusted=True)
    assert result.ok, result.report()


def test_cli_reports_hostile_files_without_traceback(capsys):
    files = [str(HOSTILE / n) for n in sorted(MANIFEST)]
    assert cli_main(["replay", *files]) == 2
    out = capsys.readouterr()
    lines = out.out.split("\n")
    assert lines[-1] == "" and len(lines) - 1 == len(files)  # one line per file, nothing else
    assert all(l.startswith("ERROR") for l in lines[:-1])
    assert all(ch.isprintable() for l in lines for ch in l)  # control characters arrive escaped
    assert not any(l.startswith("MATCH") for l in lines)
    assert "Traceback" not in out.out + out.err


@pytest.mark.parametrize("name", sorted(REPLAY))
def test_hostile_bytecode_loads_cleanly_and_is_never_run(name):
    path = HOSTILE / name
    expect = REPLAY[name]
    with helpers.AuditWatch():
        rec = load(path)
    assert helpers.AuditWatch.events == []
    rec.python = current_python()  # as if recorded here, so replay considers the bytecode
    result = replay_record(rec, modes=("plain",))
    assert not hasattr(sys, "FRAMEHOOK_PWNED")
    assert result.ok and result.code_from == FROM_SOURCE, result.report()
    assert BYTECODE_DIFFERS in result.bytecode_note and expect["note"] in result.bytecode_note
    assert expect["note"] in result.summary()
    if expect["trust"] is not None:
        with pytest.raises(SourceUnavailableError) as info:
            replay_record(rec, modes=("plain",), trust_bytecode=True)
        assert expect["trust"] in str(info.value) and str(path) in str(info.value)
        assert not hasattr(sys, "FRAMEHOOK_PWNED")


def test_cli_refuses_hostile_bytecode_with_trust(tmp_path, capsys):
    files = []
    for name in sorted(REPLAY):
        if REPLAY[name]["trust"] is None:
            continue
        rec = load(HOSTILE / name)
        rec.python = current_python()
        files.append(str(tmp_path / name))
        save(rec, files[-1])
    assert cli_main(["replay", "--trust-bytecode", "--mode", "plain", *files]) == 2
    lines = capsys.readouterr().out.strip().split("\n")
    assert len(lines) == len(files) and all(l.startswith("ERROR") for l in lines)
    assert cli_main(["replay", "--mode", "plain", *files]) == 0  # without trust: the source runs
    assert all("recorded bytecode differs" in l for l in capsys.readouterr().out.strip().split("\n"))


def test_oversized_file_rejected_before_reading(tmp_path):
    path = tmp_path / "big.fhrec"
    record_call(_sample, (list(range(2000)),), path=path)
    with pytest.raises(RecordTooLargeError, match="exceeds the limit"):
        load(path, max_bytes=200)
    with pytest.raises(RecordTooLargeError):
        loads(path.read_bytes(), max_bytes=200)


def test_missing_file_and_directory(tmp_path):
    with pytest.raises(RecordError, match="no such file"):
        load(tmp_path / "nope.fhrec")
    with pytest.raises(RecordError, match="is a directory"):
        load(tmp_path)


@pytest.mark.parametrize(
    "call, argument", [(load, "load(path)"), (replay, "replay(filename)"), (plan, "plan(filename)")]
)
@pytest.mark.parametrize("value, kind", [(42, "int"), (None, "NoneType"), (["a.fhrec"], "list")])
def test_a_file_name_that_is_not_one_is_named_by_the_argument(call, argument, value, kind):
    with pytest.raises(TypeError) as info:
        call(value)
    assert str(info.value) == f"{argument}: expected a file name (str, bytes or os.PathLike), got {kind}"


def test_newer_minor_version_ignores_unknown_fields(tmp_path):
    from framehook.records import container

    rec = record_call(_sample, (5,))
    doc = rec.to_document()
    doc["format"] = [container.FORMAT_MAJOR, container.FORMAT_MINOR + 1]
    doc["future_field"] = {"anything": 1}
    body = container.pack(doc)
    # Patch the header's minor version to match the body.
    data = bytearray(body)
    data[10:12] = (container.FORMAT_MINOR + 1).to_bytes(2, "big")
    loaded = loads(bytes(data))
    assert loaded.format == (container.FORMAT_MAJOR, container.FORMAT_MINOR + 1)


def test_newer_major_version_message(tmp_path):
    with pytest.raises(RecordVersionError, match="upgrade framehook"):
        load(HOSTILE / "13_newer_major.fhrec")


def test_uncompressed_roundtrip_and_length_mismatch(tmp_path):
    from framehook.records import container

    rec = record_call(_sample, (5,))
    path = tmp_path / "plain.fhrec"
    save(rec, path, compress=False)
    assert load(path).outcome == rec.outcome
    data = bytearray(path.read_bytes())
    data[24:32] = (len(data) + 5).to_bytes(8, "big")  # decoded length disagrees with stored
    with pytest.raises(RecordError, match="length mismatch"):
        container.unpack(bytes(data))


MEMORY_CHILD = r"""
import json, resource, sys
cap = int(sys.argv[1])
resource.setrlimit(resource.RLIMIT_AS, (cap, cap))
from framehook.records import RecordError, load
outcomes = {}
for path in sys.argv[2:]:
    try:
        load(path)
        outcomes[path] = "accepted"
    except RecordError as exc:
        outcomes[path] = "refused"
    except MemoryError:
        outcomes[path] = "MemoryError"
print(json.dumps(outcomes))
"""


def test_every_hostile_file_is_refused_within_a_memory_cap():
    # A bound on memory, not time: one child under an address-space cap far below what the
    # bombs expand to (the interpreter itself maps part of it).
    pytest.importorskip("resource", reason="address-space caps need the POSIX resource module")
    import os
    import subprocess

    cap = 250 * 1024 * 1024
    files = [str(HOSTILE / n) for n in sorted(MANIFEST)]
    src = Path(__file__).resolve().parents[1] / "src"
    proc = subprocess.run(
        [sys.executable, "-c", MEMORY_CHILD, str(cap), *files],
        capture_output=True,
        text=True,
        timeout=600,
        env=dict(os.environ, PYTHONPATH=str(src)),
    )
    assert proc.returncode == 0, proc.stderr[-2000:]
    outcomes = json.loads(proc.stdout.strip().splitlines()[-1])
    assert outcomes == {f: "refused" for f in files}
