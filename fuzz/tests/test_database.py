"""Findings are shared through an example database: one process finds a (planted) failure
and stores it; another, generating nothing, replays it first. Through a directory and
through a real redis-server."""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest

FUZZ = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(FUZZ))

from fhfuzz import harness  # noqa: E402
from fhfuzz.database import open_database  # noqa: E402

TOKEN = "print("


def fuzz(*args: str, plant: bool = True) -> subprocess.CompletedProcess:
    env = dict(os.environ)
    env.pop(harness.PLANT_VARIABLE, None)
    if plant:
        env[harness.PLANT_VARIABLE] = TOKEN
    cmd = [sys.executable, str(FUZZ / "run.py"), "--target", "runtime", *args]
    return subprocess.run(cmd, capture_output=True, text=True, env=env, cwd=str(FUZZ.parent), timeout=600)


def programs_run(out: str) -> int:
    line = next(line for line in out.splitlines() if line.startswith("fuzz: ") and "CPU s" in line)
    return int(line.split()[1])


def share(spec: str, tmp_path: Path) -> None:
    # 12 s of generating: the planted finding needs a program with a print( call, which a
    # loaded machine (a CI run beside benchmarks: 50 programs in 3 s) did not reach in 3 s
    first = fuzz("--minutes", "0.2", "--database", spec, "--save", str(tmp_path / "first"))
    assert first.returncode == 1 and "FINDING [planted: differs]" in first.stdout, first.stdout + first.stderr
    found = sorted((tmp_path / "first").glob("*.py"))
    assert len(found) == 1
    second = fuzz("--replay", "--database", spec, "--save", str(tmp_path / "second"))
    assert second.returncode == 1 and "FINDING [planted: differs] (replayed)" in second.stdout, second.stdout
    # nothing generated: only the stored finding ran (Hypothesis may run it twice to report it)
    assert 1 <= programs_run(second.stdout) <= 3, second.stdout
    replayed = sorted((tmp_path / "second").glob("*.py"))
    assert [p.read_text() for p in replayed] == [p.read_text() for p in found]
    # fixed (no planted oracle): the replay passes
    third = fuzz("--replay", "--database", spec, plant=False)
    assert third.returncode == 0 and "0 findings" in third.stdout, third.stdout


def test_two_processes_share_a_directory_database(tmp_path):
    share(str(tmp_path / "db"), tmp_path)


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def test_two_processes_share_a_redis_database(tmp_path):
    server = shutil.which("redis-server")
    if server is None:
        pytest.skip("redis-server is not installed (Debian: apt-get install redis-server)")
    redis = pytest.importorskip("redis", reason="the redis package is not installed (pip install redis)")
    port = free_port()
    proc = subprocess.Popen(
        [server, "--port", str(port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no"],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        client = redis.Redis(host="127.0.0.1", port=port)
        for _ in range(100):
            try:
                client.ping()
                break
            except redis.ConnectionError:
                time.sleep(0.05)
        share(f"redis://127.0.0.1:{port}/3", tmp_path)
        assert client.keys(b"framehook-fuzz:*") == []  # the fixed finding was dropped
    finally:
        proc.terminate()
        proc.wait(timeout=30)


@pytest.mark.parametrize(
    "spec, message",
    [
        ("http://host:1", "unknown scheme 'http'"),
        ("redis://host", "with a host and a port"),
        ("redis://host:6379/x", "must be a non-negative integer"),
        ("", "expected a directory path or redis://"),
    ],
)
def test_bad_specs_are_refused_clearly(spec, message):
    with pytest.raises(ValueError, match=message):
        open_database(spec)


def test_a_file_is_not_a_directory_database(tmp_path):
    (tmp_path / "f").write_text("")
    with pytest.raises(ValueError, match="expected a directory"):
        open_database(str(tmp_path / "f"))


def test_redis_without_its_package_names_it(monkeypatch):
    monkeypatch.setitem(sys.modules, "redis", None)
    with pytest.raises(ValueError, match="pip install redis"):
        open_database("redis://127.0.0.1:6379/0")


def test_a_bad_database_is_a_usage_error():
    result = fuzz("--minutes", "1", "--database", "ftp://x:1", plant=False)
    assert result.returncode == 2 and "unknown scheme 'ftp'" in result.stderr
