"""The command line's output: --max-events, files written whole or not at all, progress."""

from __future__ import annotations

import errno
import io
import json
import os
import pstats
import re
import select
import signal
import subprocess
import sys
import textwrap

import pytest

from framehook.profiler import ExportError, Profiler, _cli
from framehook.profiler._cli import main
from framehook.profiler._progress import Progress
from fhprof_helpers import chrome_spans

SCRIPT = textwrap.dedent("""
    def fib(n):
        return n if n < 2 else fib(n - 1) + fib(n - 2)

    print("ran")
    fib(12)
""")


@pytest.fixture
def script(tmp_path):
    path = tmp_path / "prog.py"
    path.write_text(SCRIPT)
    return path


def leftovers(folder):
    return sorted(p for p in os.listdir(folder) if p.endswith(".part"))


# --max-events ----------------------------------------------------------------------------
@pytest.mark.parametrize("value", ["0", "-5", "many", "1.5", ""])
def test_max_events_must_be_a_positive_number(script, tmp_path, capsys, value):
    for argv in (["--max-events", value], [f"--max-events={value}"]):
        assert main(argv + ["-o", str(tmp_path / "t.json"), str(script)]) == 2
        captured = capsys.readouterr()
        assert "ran" not in captured.out
        lines = captured.err.splitlines()
        assert len(lines) == 1 and lines[0].startswith("framehook-profile: error: --max-events:")
        assert repr(value) in lines[0]
        assert not (tmp_path / "t.json").exists()


@pytest.mark.parametrize("fmt", ["chrome", "pstats"])
def test_max_events_limits_what_is_kept(script, tmp_path, capsys, fmt):
    out = tmp_path / ("t.json" if fmt == "chrome" else "t.pstats")
    assert main(["--max-events", "100", "-o", str(out), str(script)]) == 0
    err = capsys.readouterr().err
    recorded = int(re.search(r"\((\d+) events recorded", err).group(1))
    dropped = int(re.search(r"the oldest (\d+) events were left out \(--max-events\)", err).group(1))
    assert recorded > 2 * 465 and 0 < dropped < recorded  # fib(12): 465 calls
    if fmt == "chrome":
        doc = json.loads(out.read_text())
        assert doc["otherData"]["dropped_events"] == dropped
        assert 0 < len(chrome_spans(doc)) < 465
    else:  # aggregates stay exact
        stats = pstats.Stats(str(out)).stats
        assert [v[1] for (f, _, name), v in stats.items() if name == "fib" and f.endswith("prog.py")] == [465]
    assert main(["-o", str(out), str(script)]) == 0
    assert "left out" not in capsys.readouterr().err


def test_events_counted_past_the_ring_of_aggregated_outputs(tmp_path, capsys):
    # pstats keeps only a ring of events (folded into exact aggregates): the count said
    # is still every event recorded, and nothing is said to be left out
    prog = tmp_path / "deep.py"
    prog.write_text("def fib(n):\n    return n if n < 2 else fib(n - 1) + fib(n - 2)\nfib(22)\n")
    out = tmp_path / "t.pstats"
    assert main(["-o", str(out), str(prog)]) == 0
    err = capsys.readouterr().err
    recorded = int(re.search(r"\((\d+) events recorded", err).group(1))
    assert recorded >= 2 * 57313  # fib(22): 57313 calls, more than the ring holds
    assert "left out" not in err
    stats = pstats.Stats(str(out)).stats
    assert [v[1] for (f, _, name), v in stats.items() if name == "fib" and f.endswith("deep.py")] == [57313]


def test_max_events_reaches_the_profiler(script, tmp_path, capsys, monkeypatch):
    given = []

    class Limited(Profiler):
        def __init__(self, *, max_events=None, **options):
            given.append(max_events)
            super().__init__(**options)

    monkeypatch.setattr(_cli, "Profiler", Limited)
    out = tmp_path / "t.json"
    assert main(["--max-events", "1000", "-o", str(out), str(script)]) == 0
    assert main(["-o", str(out), str(script)]) == 0
    assert main(["-o", str(tmp_path / "t.pstats"), str(script)]) == 0
    assert main(["--max-events", "7", "-o", str(tmp_path / "t.pstats"), str(script)]) == 0
    # only aggregated outputs: a ring of its own, so memory need not follow the run
    assert given == [1000, None, _cli.AGGREGATE_RING, 7]
    assert "ran" in capsys.readouterr().out and out.exists()


@pytest.mark.parametrize("fmt", ["pstats", "text", "svg", "collapsed-calls"])
def test_aggregated_outputs_are_exact_with_the_commands_own_ring(script, tmp_path, capsys, monkeypatch, fmt):
    monkeypatch.setattr(_cli, "AGGREGATE_RING", 100)  # far fewer than the script's events
    out = tmp_path / "out"
    assert main(["-o", str(out), "--format", fmt, str(script)]) == 0
    assert "left out" not in capsys.readouterr().err  # nothing the user asked to leave out
    # the notes on dropped events name the command's own ring, and how to widen it
    ring = "dropped by framehook-profile's default ring of 100 events per thread (--max-events N widens it)"
    if fmt == "pstats":
        stats = pstats.Stats(str(out)).stats
        assert [v[1] for (f, _, name), v in stats.items() if name == "fib" and f.endswith("prog.py")] == [
            465
        ]  # fib(12): 465 calls
        assert [name for (_, _, name) in stats if ring in name and "max_events" not in name]
    elif fmt == "text":
        rows = [line.split() for line in out.read_text().splitlines()]
        assert [r[0] for r in rows if len(r) > 3 and r[3] == "fib"] == ["465", "465"]
        assert ring in out.read_text() and "max_events" not in out.read_text()
    elif fmt == "collapsed-calls":  # (a format with no place for the note)
        lines = [line.rpartition(" ") for line in out.read_text().splitlines()]
        assert sum(int(n) for stack, _, n in lines if stack.rpartition(";")[2].startswith("fib (")) == 465
    else:
        assert "fib" in out.read_text()
        assert ring in out.read_text() and "max_events" not in out.read_text()


@pytest.mark.parametrize("fmt", ["pstats", "text", "svg"])
def test_an_explicit_max_events_is_named_as_the_user_wrote_it(script, tmp_path, capsys, fmt):
    out = tmp_path / "out"
    assert main(["-o", str(out), "--format", fmt, "--max-events", "100", str(script)]) == 0
    assert "events were left out (--max-events)" in capsys.readouterr().err
    text = out.read_bytes().decode("latin-1")  # pstats is marshalled: its strings are there as written
    assert "events dropped by max_events" in text and "default ring" not in text


# files written whole or not at all -------------------------------------------------------
def recorded():
    def fib(n):
        return n if n < 2 else fib(n - 1) + fib(n - 2)

    with Profiler() as prof:
        fib(10)
    return prof.profile


class FailingHalfway(io.RawIOBase):
    """A file whose first write stores half the data, then fails as a full disk would."""

    def __init__(self, real):
        self.real = real

    def writable(self):
        return True

    def write(self, data):
        data = bytes(data)
        self.real.write(data[: len(data) // 2])
        self.real.flush()
        raise OSError(errno.ENOSPC, "No space left on device")

    def close(self):
        self.real.close()
        super().close()


@pytest.mark.parametrize("existing", [False, True])
def test_an_export_failing_midway_leaves_no_partial_file(tmp_path, monkeypatch, existing):
    profile = recorded()
    out = tmp_path / "t.json"
    if existing:
        out.write_text("the previous profile")
    real_fdopen = os.fdopen
    opened = []

    def fdopen(fd, *args, **kwargs):
        opened.append(fd)
        return FailingHalfway(real_fdopen(fd, *args, **kwargs))

    monkeypatch.setattr(os, "fdopen", fdopen)
    with pytest.raises(ExportError, match="No space left"):
        profile.export(out)
    monkeypatch.undo()
    assert len(opened) == 1  # it did write (half)
    if existing:
        assert out.read_text() == "the previous profile"
    else:
        assert not out.exists()
    assert leftovers(tmp_path) == []


def test_an_export_replaces_the_file_whole_with_the_usual_mode(tmp_path):
    profile = recorded()
    out = tmp_path / "t.json"
    out.write_text("old")
    os.chmod(out, 0o640)
    assert profile.export(out) == str(out)
    assert json.loads(out.read_text())["traceEvents"]
    assert os.stat(out).st_mode & 0o777 == 0o640  # an existing file keeps its mode
    fresh = tmp_path / "new.json"
    profile.export(fresh)
    mask = os.umask(0)
    os.umask(mask)
    assert os.stat(fresh).st_mode & 0o777 == 0o666 & ~mask  # as open() would make it
    assert leftovers(tmp_path) == []


# The command line in a child, its write paused halfway (after the first half is on disk)
# until the test signals it.
PAUSED_WRITE = textwrap.dedent("""
    import contextlib, sys, time
    from framehook.profiler import _cli, _export

    real = _export.replacing

    @contextlib.contextmanager
    def paused(path):
        with real(path) as fh:
            class Half:
                def write(self, data):
                    fh.write(data[:len(data) // 2])
                    fh.flush()
                    sys.stderr.write("HALF WRITTEN\\n")
                    sys.stderr.flush()
                    time.sleep(120)
                    fh.write(data[len(data) // 2:])
            yield Half()

    _export.replacing = paused
    sys.exit(_cli.main(sys.argv[1:], exiting=True))
""")


@pytest.mark.parametrize("signum", [signal.SIGTERM, signal.SIGINT])
def test_a_run_killed_while_writing_leaves_no_file(script, tmp_path, signum):
    out = tmp_path / "out" / "t.json"
    out.parent.mkdir()
    proc = subprocess.Popen(
        [sys.executable, "-c", PAUSED_WRITE, "-o", str(out), str(script)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        line = proc.stderr.readline()
        assert line == "HALF WRITTEN\n", line + proc.stderr.read()
        assert not out.exists()  # the half is under a temporary name
        assert len(leftovers(out.parent)) == 1
        proc.send_signal(signum)
        proc.wait(60)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
        proc.stdout.close()
        proc.stderr.close()
    assert proc.returncode == -signum  # ended by the signal, as without the profiler
    assert os.listdir(out.parent) == []  # no partial file, not even a temporary one


# progress ----------------------------------------------------------------------------------
class Terminal(io.StringIO):
    def isatty(self):
        return True


class Clock:
    def __init__(self):
        self.now = 100.0

    def __call__(self):
        return self.now


def test_progress_shows_events_and_rate_on_a_terminal_only():
    clock = Clock()
    shown = Terminal()
    progress = Progress(shown, 4_000_000, "building", after=1.0, interval=0.5, clock=clock)
    progress(1000)
    assert shown.getvalue() == ""  # not a long run yet
    clock.now += 2.0
    progress(3_000_000)
    assert shown.getvalue() == "\rbuilding: 3,000,000 of 4,000,000 events, 1.5 M events/s\x1b[K"
    clock.now += 0.1
    progress(3_100_000)  # within the interval: not redrawn
    assert shown.getvalue().count("\r") == 1
    clock.now += 1.9
    progress.finish()
    assert shown.getvalue().endswith("\rbuilding: 3,100,000 of 4,000,000 events, 775.0 k events/s\x1b[K\n")
    plain = io.StringIO()  # not a terminal
    quiet = Progress(plain, 10, "x", after=0, interval=0, clock=clock)
    clock.now += 5
    quiet(5)
    quiet.finish()
    assert plain.getvalue() == ""


def test_cli_progress_when_stderr_is_a_terminal(script, tmp_path, monkeypatch, capsys):
    monkeypatch.setattr(_cli, "PROGRESS_AFTER", 0.0)
    out = tmp_path / "t.json"
    assert main(["-o", str(out), str(script)]) == 0
    assert "events/s" not in capsys.readouterr().err  # captured: not a terminal
    terminal = Terminal()
    monkeypatch.setattr(sys, "stderr", terminal)
    assert main(["-o", str(out), str(script)]) == 0
    err = terminal.getvalue()
    assert "\rwriting the chrome file: " in err and " events/s" in err
    assert f"wrote chrome profile to {out}" in err.splitlines()[-1]


PROGRESS_NOW = textwrap.dedent("""
    import sys
    from framehook.profiler import _cli
    _cli.PROGRESS_AFTER = 0.0
    sys.exit(_cli.main(sys.argv[1:], exiting=True))
""")


@pytest.mark.skipif(not hasattr(os, "openpty"), reason="needs a pseudo-terminal (os.openpty)")
def test_cli_progress_on_a_real_terminal(script, tmp_path):
    out = tmp_path / "t.json"
    command = [sys.executable, "-c", PROGRESS_NOW, "-o", str(out), str(script)]
    master, slave = os.openpty()
    try:
        proc = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=slave)
        os.close(slave)
        chunks = []
        while True:
            ready, _, _ = select.select([master], [], [], 60)
            assert ready, "no output from the child"
            try:
                data = os.read(master, 4096)
            except OSError:  # the child closed its end
                break
            if not data:
                break
            chunks.append(data)
        assert proc.wait(60) == 0
    finally:
        os.close(master)
    shown = b"".join(chunks).decode()
    assert "writing the chrome file: " in shown and " events/s" in shown
    piped = subprocess.run(command, capture_output=True, text=True, timeout=120)
    assert piped.returncode == 0 and "events/s" not in piped.stderr
    assert "wrote chrome profile" in piped.stderr
