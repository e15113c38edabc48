"""Decoding limits: hostile sizes are refused before the memory is taken, in a child process
under an address-space cap, with an audit hook showing load() runs nothing.

The child's wall-clock timeout only guards against a hang; nothing here measures time.
"""

from __future__ import annotations

import base64
import functools
import hashlib
import json
import re
import struct
import subprocess
import sys
import textwrap
import zlib
from pathlib import Path

import pytest

from framehook.records.limits import DEFAULT

from framehook.records import Limits, RecordLimitError, load, record_call, replay
from framehook.records import container
from framehook.records.cli import main as cli_main

resource = pytest.importorskip("resource", reason="address-space caps need the POSIX resource module")

HERE = Path(__file__).resolve().parent
MEMORY_CAP = 300 * 1024 * 1024
HANG_GUARD_SECONDS = 300
MIB = 1024 * 1024

CHILD = textwrap.dedent("""
    import importlib.util, json, resource, sys
    path, limits_json, audit_file, cap = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4])
    resource.setrlimit(resource.RLIMIT_AS, (cap, cap))
    from framehook.records import Limits, load
    spec = importlib.util.spec_from_file_location("records_audit", audit_file)
    audit = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(audit)
    limits = Limits(**json.loads(limits_json))
    with audit.AuditWatch():
        try:
            load(path, limits=limits)
            outcome = {"type": None, "message": ""}
        except Exception as exc:
            outcome = {"type": type(exc).__name__, "message": str(exc),
                       "classes": [c.__name__ for c in type(exc).__mro__]}
    outcome["events"] = audit.AuditWatch.events
    print(json.dumps(outcome))
""")


def _arg_in_call(marker: str = "@@ARG@@") -> bytes:
    """The body of a real record whose first argument is ``marker`` (to splice raw JSON in)."""

    def target(a):
        return a

    doc = record_call(target, (0,)).to_document()
    doc["call"]["args"]["items"][0] = marker
    return json.dumps(doc, sort_keys=True, separators=(",", ":")).encode("ascii")


def _envelope(body: bytes, *, declared: int | None = None, compress: bool = True) -> bytes:
    stored = zlib.compress(body, 9) if compress else body
    size = len(body) if declared is None else declared
    head = struct.pack(
        ">8sHHIQQ32s",
        container.MAGIC,
        container.FORMAT_MAJOR,
        0,
        int(compress),
        len(stored),
        size,
        hashlib.sha256(body).digest(),
    )
    return head + stored


@functools.lru_cache(maxsize=None)
def _deflated_zeros(size: int) -> bytes:
    """Zeros compressed chunk by chunk, so the parent never holds them inflated."""
    deflater = zlib.compressobj(1)
    chunk = bytes(MIB)
    return b"".join(deflater.compress(chunk) for _ in range(size // MIB)) + deflater.flush()


def _zeros_bomb(expands_to: int, declared: int) -> bytes:
    stored = _deflated_zeros(expands_to)
    head = struct.pack(">8sHHIQQ32s", container.MAGIC, container.FORMAT_MAJOR, 0, 1, len(stored), declared, b"\0" * 32)
    return head + stored


def _npy(descr: str, shape: tuple, data: bytes) -> str:
    header = repr({"descr": descr, "fortran_order": False, "shape": shape}).encode("latin-1")
    header += b" " * (63 - (len(header) + 10) % 64) + b"\n"
    return base64.b64encode(b"\x93NUMPY\x01\x00" + struct.pack("<H", len(header)) + header + data).decode()


def _with_arg(raw_json: str) -> bytes:
    return _envelope(_arg_in_call().replace(b'"@@ARG@@"', raw_json.encode("ascii")))


def _run_child(tmp_path: Path, data: bytes, limits: dict | None = None) -> dict:
    path = tmp_path / "hostile.fhrec"
    path.write_bytes(data)
    proc = subprocess.run(
        [
            sys.executable,
            "-c",
            CHILD,
            str(path),
            json.dumps(limits or {}),
            str(HERE / "records_data" / "audit.py"),
            str(MEMORY_CAP),
        ],
        capture_output=True,
        text=True,
        timeout=HANG_GUARD_SECONDS,
    )
    assert proc.returncode == 0, proc.stderr[-2000:]
    outcome = json.loads(proc.stdout.strip().splitlines()[-1])
    assert outcome["events"] == [], outcome["events"]
    assert str(path) in outcome["message"]
    assert "\n" not in outcome["message"]
    return outcome


def _expect(outcome: dict, error: str, pattern: str) -> re.Match:
    assert outcome["type"] == error, outcome
    assert "RecordError" in outcome["classes"]
    found = re.search(pattern, outcome["message"])
    assert found, outcome["message"]
    return found


def test_zip_bomb_under_the_declared_size_stops_at_it(tmp_path):
    data = _zeros_bomb(256 * MIB, declared=60 * MIB)
    assert len(data) < 2_000_000
    _expect(_run_child(tmp_path, data), "RecordFormatError", "does not match its declared length")


def test_zip_bomb_declaring_its_size_is_refused_by_body_bytes(tmp_path):
    data = _zeros_bomb(256 * MIB, declared=256 * MIB)
    _expect(
        _run_child(tmp_path, data),
        "RecordLimitError",
        rf"body_bytes {256 * MIB} exceeds the limit of {Limits().body_bytes}",
    )


def test_compressed_run_of_empty_lists_refused_by_node_count(tmp_path):
    count = 20_000_000  # 60 MB of "[]," from a file of about 60 KB
    data = _envelope(b"[]," * count)
    assert len(data) < 300_000
    _expect(
        _run_child(tmp_path, data),
        "RecordLimitError",
        rf"nodes exceeds the limit of {Limits().nodes} \(counting stopped at {Limits().nodes + 1}\)",
    )


def test_deep_nesting_refused_by_depth_even_with_nodes_raised(tmp_path):
    depth = 5_000_000
    data = _envelope(b"[" * depth + b"]" * depth)
    outcome = _run_child(tmp_path, data, {"nodes": 10 * depth})
    _expect(
        outcome,
        "RecordLimitError",
        rf"depth exceeds the limit of {Limits().depth} \(counting stopped at {Limits().depth + 1}\)",
    )


def test_unbalanced_closing_brackets_refused(tmp_path):
    data = _envelope(b"{}" + b"]" * 5_000_000)
    _expect(_run_child(tmp_path, data), "RecordFormatError", "body is not valid JSON")


def test_three_million_small_ints_refused_by_node_count(tmp_path):
    items = ",".join(['{"t":"int","v":"1"}'] * 3_000_000)
    data = _with_arg('{"t":"list","id":0,"items":[' + items + "]}")
    _expect(_run_child(tmp_path, data), "RecordLimitError", rf"nodes exceeds the limit of {Limits().nodes}")


def test_huge_npy_shape_refused_by_element_count(tmp_path):
    data = _with_arg('{"t":"ndarray","id":0,"npy":"%s"}' % _npy("<f8", (10**6, 10**6), bytes(16)))
    _expect(
        _run_child(tmp_path, data),
        "RecordLimitError",
        rf"array_elements {10**12} exceeds the limit of {Limits().array_elements}",
    )


def test_wide_npy_dtype_refused_by_byte_size(tmp_path):
    data = _with_arg('{"t":"ndarray","id":0,"npy":"%s"}' % _npy("<U64", (1 << 20,), bytes(16)))
    _expect(
        _run_child(tmp_path, data),
        "RecordLimitError",
        rf"array_bytes {256 << 20} exceeds the limit of {Limits().array_bytes}",
    )


def test_npy_data_shorter_than_its_shape_refused(tmp_path):
    data = _with_arg('{"t":"ndarray","id":0,"npy":"%s"}' % _npy("<f8", (10,), bytes(16)))
    _expect(
        _run_child(tmp_path, data),
        "RecordFormatError",
        r"numpy data of 16 bytes disagrees with its header \(10 x 8 bytes\)",
    )


@pytest.mark.parametrize("descr", ["|O", [("a", "<i4"), ("b", "|O")]], ids=["object", "object-field"])
def test_npy_object_dtype_refused_at_load(tmp_path, descr):
    data = _with_arg('{"t":"ndarray","id":0,"npy":"%s"}' % _npy(descr, (1,), bytes(8)))
    _expect(_run_child(tmp_path, data), "RecordFormatError", "numpy object dtype refused")


def _wide_record(path: Path) -> Path:
    def total(xs):
        return sum(xs)

    record_call(total, (list(range(2_000)),), path=path)  # 5 nodes per int, stored 3 times
    return path


def test_limits_keyword_lowers_and_raises_the_bound(tmp_path):
    path = _wide_record(tmp_path / "wide.fhrec")
    low = Limits(nodes=10_000)
    with pytest.raises(RecordLimitError, match=r"nodes exceeds the limit of 10000") as info:
        load(path, limits=low)
    assert info.value.limit == "nodes" and info.value.maximum == 10_000
    with pytest.raises(RecordLimitError, match="nodes exceeds the limit of 10000"):
        replay(path, modes=["plain"], limits=low)
    assert load(path, limits=low.replace(nodes=100_000)).call["args"]["items"][0]["t"] == "list"
    result = replay(path, modes=["plain"], limits=Limits(nodes=100_000))
    assert result.ok, result.report()


def test_cli_limit_flag(tmp_path, capsys):
    path = _wide_record(tmp_path / "wide.fhrec")
    assert cli_main(["replay", "--mode", "plain", "--limit", "nodes=10000", str(path)]) == 2
    refused = capsys.readouterr().out.strip().splitlines()
    assert len(refused) == 1 and refused[0].startswith("ERROR")
    assert f"lowered by the caller from the default {DEFAULT.nodes}" in refused[0] and "raise it" not in refused[0]
    assert cli_main(["replay", "--mode", "plain", "--limit", "nodes=100000", str(path)]) == 0
    for bad in ("bogus=3", "nodes=0", "nodes"):
        with pytest.raises(SystemExit) as info:
            cli_main(["replay", "--limit", bad, str(path)])
        assert info.value.code == 2
        assert f"--limit {bad!r}: expected" in capsys.readouterr().err


def test_limits_reject_bad_values():
    with pytest.raises(TypeError, match="Limits.nodes: expected a positive int"):
        Limits(nodes=0)
    with pytest.raises(TypeError, match="limits: expected a framehook.records.Limits"):
        load(HERE / "records_data" / "hostile" / "01_empty.fhrec", limits={"nodes": 5})


def test_defaults_leave_room_over_every_golden_record():
    # The largest golden uses a few hundred nodes and depth 13 (FORMAT.md): the defaults
    # must stay far above, and every golden must load with a tenth of each default.
    goldens = sorted((HERE.parents[2] / "conformance" / "golden").glob("*.fhrec"))
    if not goldens:
        pytest.skip("conformance goldens are not next to this checkout")
    tight = Limits(**{name: max(1, getattr(Limits(), name) // 10) for name in Limits.names()})
    for golden in goldens:
        load(golden, limits=tight)


def test_limit_message_advice_depends_on_whether_the_caller_lowered_it(tmp_path):
    path = _wide_record(tmp_path / "wide.fhrec")
    with pytest.raises(RecordLimitError) as lowered:
        load(path, limits=Limits(nodes=10_000))
    assert lowered.value.default == Limits().nodes
    assert "lowered by the caller from the default" in str(lowered.value)
    assert "raise it" not in str(lowered.value)
    bomb = HERE / "records_data" / "hostile" / "19_json_nesting_bomb.fhrec"
    for limits in (Limits(), Limits(depth=Limits().depth * 2)):  # at and above the default
        with pytest.raises(RecordLimitError) as info:
            load(bomb, limits=limits)
        assert info.value.limit == "depth"
        assert "raise it with limits= or --limit depth=N" in str(info.value)
        assert "lowered" not in str(info.value)
