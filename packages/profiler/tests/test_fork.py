"""A program that forks while a profiler records: the child never writes the parent's
profile, nor says it did, and does not go on recording into the parent's buffers.

Every scenario runs in a fresh interpreter (the command line, or a script using the API),
so that a child that crashed, hung or wrote where it should not fails the test, not pytest.
The children report what they saw to files, from an exit handler where the point is that
the interpreter went on to exit normally after the profiler's code had run.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap

import pytest

from framehook.profiler import _tracer

from fhprof_helpers import chrome_spans

pytestmark = pytest.mark.skipif(not hasattr(os, "fork"), reason="os.fork is POSIX only")

BACKENDS = [
    "profile",
    pytest.param(
        "monitoring",
        marks=pytest.mark.skipif(not _tracer.HAVE_MONITORING, reason="the sys.monitoring backend needs CPython 3.12+"),
    ),
]


def run(args, **kwargs):
    # (capture_output reads until every holder of the pipes has exited: children included)
    return subprocess.run([sys.executable] + args, capture_output=True, text=True, timeout=120, **kwargs)


def write(tmp_path, name, text):
    path = tmp_path / name
    path.write_text(textwrap.dedent(text))
    return path


def span_names(path):
    return {e["name"] for e in chrome_spans(json.loads(open(path).read()))}


def wrote_lines(stderr):
    return [line for line in stderr.splitlines() if "wrote" in line or "written" in line]


# The child ends either before the parent's script does (the parent waits for it) or after
# the parent's profile is written (it waits for the file): either way, it must not write.
CLI_FORK = """
    import atexit, os, sys, time
    from framehook.profiler import _tracer

    out, marker, order, how = sys.argv[1:]

    def work(n):
        return sum(i * i for i in range(n))

    def parent_only():
        return work(2000)

    def child_only():
        return work(2000)

    work(100)
    pid = os.fork()
    if pid == 0:
        def report():  # runs after the command line has finished in the child
            with open(marker, "w") as fh:
                fh.write(json.dumps({"active": _tracer.active() is not None,
                                     "installed": _tracer.profile_function_installed()}))
        import json
        atexit.register(report)
        if order == "child-last":
            deadline = time.monotonic() + 60
            while not os.path.exists(out) and time.monotonic() < deadline:
                time.sleep(0.01)
        child_only()
        if how == "exit":
            sys.exit(0)
        if how == "raise":
            raise LookupError("the child's own error")
    else:
        if order == "child-first":
            os.waitpid(pid, 0)
        parent_only()
"""


@pytest.mark.parametrize("how", ["end", "exit", "raise"])
@pytest.mark.parametrize("order", ["child-first", "child-last"])
def test_cli_a_forked_child_does_not_write_the_profile(tmp_path, order, how):
    script = write(tmp_path, "forks.py", CLI_FORK)
    out = tmp_path / "out.json"
    marker = tmp_path / "child.json"
    proc = run(["-m", "framehook.profiler", "-o", str(out), str(script), str(out), str(marker), order, how])
    assert proc.returncode == 0, proc.stderr
    # one line about writing: the parent's
    assert len(wrote_lines(proc.stderr)) == 1, proc.stderr
    names = span_names(out)
    assert "parent_only" in names and "child_only" not in names
    # the child got through the command line and on to its exit handlers; the tracer it
    # inherited was taken off at the fork
    assert json.loads(marker.read_text()) == {"active": False, "installed": False}
    if how == "raise":  # the child's own traceback is printed, as Python would
        assert "LookupError: the child's own error" in proc.stderr
    assert sorted(os.listdir(tmp_path)) == sorted(["forks.py", "out.json", "child.json"])


CLI_MULTIPROCESSING = """
    import multiprocessing, sys
    from framehook.profiler import _tracer

    def work(n):
        return sum(i * i for i in range(n))

    def in_child():
        work(2000)
        # the tracer inherited from the parent was taken off at the fork
        gone = _tracer.active() is None and not _tracer.profile_function_installed()
        if hasattr(sys, "monitoring"):
            gone = gone and all(sys.monitoring.get_tool(i) is None for i in (2, 3, 4))
        sys.exit(0 if gone else 5)

    def parent_only():
        return work(2000)

    if __name__ == "__main__":
        ctx = multiprocessing.get_context("fork")
        procs = [ctx.Process(target=in_child) for _ in range(2)]
        for p in procs:
            p.start()
        for p in procs:
            p.join()
        print("exit codes", [p.exitcode for p in procs])
        with ctx.Pool(2) as pool:
            print("pool", pool.map(work, [10, 20, 30]))
        parent_only()
"""


def test_cli_multiprocessing_fork_children_neither_write_nor_record(tmp_path):
    script = write(tmp_path, "mp.py", CLI_MULTIPROCESSING)
    out = tmp_path / "out.json"
    proc = run(["-m", "framehook.profiler", "-o", str(out), str(script)])
    assert proc.returncode == 0, proc.stderr
    assert "exit codes [0, 0]" in proc.stdout
    assert "pool [285, 2470, 8555]" in proc.stdout
    assert len(wrote_lines(proc.stderr)) == 1, proc.stderr
    assert "parent_only" in span_names(out)
    assert sorted(os.listdir(tmp_path)) == ["mp.py", "out.json"]


API_FORK = """
    import json, os, sys, threading, warnings
    from framehook.profiler import Profiler, ProfilerWarning, _tracer

    backend, where, out, report = sys.argv[1:]
    warnings.simplefilter("error", ProfilerWarning)

    def work(n):
        return sum(i * i for i in range(n))

    def parent_only():
        return work(2000)

    def own_work():
        return work(300)

    def in_child(prof):
        seen = {"state": prof.state, "recording": prof.recording,
                "active": _tracer.active() is not None,
                "installed": _tracer.profile_function_installed(),
                "getprofile": sys.getprofile() is not None}
        if hasattr(sys, "monitoring"):
            seen["tools"] = [sys.monitoring.get_tool(i) for i in (2, 3, 4)]
        count = prof._tracer.event_count
        work(5000)
        seen["grew"] = prof._tracer.event_count - count  # nothing recorded any more
        for name, attempt in (("stop", prof.stop), ("profile", lambda: prof.profile),
                              ("export", lambda: prof.export(out))):
            try:
                attempt()
            except RuntimeError as exc:
                seen[name] = str(exc)
            else:
                seen[name] = "no error"
        # the child may record itself with a profiler of its own
        with Profiler(backend=backend) as mine:
            own_work()
        seen["own"] = any(e.name == "own_work" for e in mine.profile.events)
        with open(report, "w") as fh:
            fh.write(json.dumps(seen))

    prof = Profiler(backend=backend)
    prof.start()
    work(100)

    def fork():
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", DeprecationWarning)  # (3.12+: fork with threads)
            pid = os.fork()
        if pid == 0:
            code = 1
            try:
                in_child(prof)
                code = 0
            finally:
                sys.stdout.flush()
                os._exit(code)
        return pid

    if where == "thread":  # forked from another thread than the main one
        pids = []
        t = threading.Thread(target=lambda: pids.append(fork()))
        t.start()
        t.join()
        pid = pids[0]
    else:
        pid = fork()
    _, status = os.waitpid(pid, 0)
    parent_only()
    profile = prof.stop()
    profile.export(out)
    print(json.dumps({"status": status,
                      "parent_only": any(e.name == "parent_only" for e in profile.events)}))
"""


@pytest.mark.parametrize("where", ["main", "thread"])
@pytest.mark.parametrize("backend", BACKENDS)
def test_api_a_forked_child_is_disowned(tmp_path, backend, where):
    script = write(tmp_path, "api.py", API_FORK)
    out = tmp_path / "out.json"
    report = tmp_path / "child.json"
    proc = run([str(script), backend, where, str(out), str(report)])
    assert proc.returncode == 0, proc.stderr
    assert proc.stderr == ""
    parent = json.loads(proc.stdout)
    assert parent == {"status": 0, "parent_only": True}
    assert "parent_only" in span_names(out)  # the parent's profile, written by the parent
    child = json.loads(report.read_text())
    assert child.pop("state") == "forked" and child.pop("recording") is False
    assert child.pop("active") is False and child.pop("installed") is False
    assert child.pop("getprofile") is False
    assert child.pop("tools", [None] * 3) == [None] * 3
    assert child.pop("grew") == 0
    for name in ("stop", "profile", "export"):
        message = child.pop(name)
        assert "fork" in message, message
    assert child.pop("own") is True
    assert child == {}


API_EXIT = """
    import atexit, json, os, sys
    from framehook.profiler import Profiler

    backend, report = sys.argv[1:]
    seen = {}

    def late():  # registered before start(): runs after the profiler's exit handler
        try:
            prof.stop()
        except RuntimeError as exc:
            seen["stop"] = str(exc)
        if os.getpid() != parent:
            with open(report, "w") as fh:
                fh.write(json.dumps(seen))

    atexit.register(late)
    parent = os.getpid()
    prof = Profiler(backend=backend)
    prof.start()
    pid = os.fork()
    if pid:
        os.waitpid(pid, 0)
    sum(range(100))
"""


@pytest.mark.parametrize("backend", BACKENDS)
def test_api_exit_handlers_in_a_forked_child(tmp_path, backend):
    # the child exits without stopping: its exit handlers run, nothing of the profiler
    # is printed, and stop() from the program's own handler says why it has no profile
    script = write(tmp_path, "exits.py", API_EXIT)
    report = tmp_path / "child.json"
    proc = run([str(script), backend, str(report)])
    assert proc.returncode == 0 and proc.stderr == "" and proc.stdout == ""
    assert "fork" in json.loads(report.read_text())["stop"]


CLI_RAW_FORK = """
    import ctypes, os, sys

    def child_only():
        return sum(range(100))

    def parent_only():
        return sum(range(100))

    pid = ctypes.CDLL(None).fork()  # fork(2) itself: CPython's fork handlers do not run
    if pid == 0:
        child_only()
        sys.exit(0)
    os.waitpid(pid, 0)
    parent_only()
"""


def test_cli_raw_fork_child_does_not_write(tmp_path):
    # C code calling fork(2) bypasses os.register_at_fork: the command line and the
    # profiler still see that the process is not the one that started recording
    script = write(tmp_path, "raw.py", CLI_RAW_FORK)
    out = tmp_path / "out.json"
    proc = run(["-m", "framehook.profiler", "-o", str(out), str(script)])
    assert proc.returncode == 0, proc.stderr
    assert len(wrote_lines(proc.stderr)) == 1, proc.stderr
    names = span_names(out)
    assert "parent_only" in names and "child_only" not in names


# In-process: what the fork handler and the process-id check do, without forking (the
# tests above fork; these run the same code where coverage and pytest see it).


def test_fork_handler_disowns_the_recording_profiler(backend):
    from framehook.profiler import Profiler, _profiler

    prof = Profiler()
    prof.start()
    _profiler._after_fork_in_child()  # as in a child, right after the fork
    assert prof.state == "forked" and not prof.recording
    assert _tracer.active() is None and not _tracer.profile_function_installed()
    for attempt in (prof.stop, lambda: prof.profile, lambda: prof.export("never.json")):
        with pytest.raises(RuntimeError, match=f"recorded in process {os.getpid()}.*is a fork of it"):
            attempt()
    prof.__exit__(None, None, None)  # nothing more to do, nothing raised
    _profiler._after_fork_in_child()  # nothing recording: nothing done
    with Profiler() as again:  # the slot of the single recorder is free
        sum(range(10))
    assert again.profile.event_count > 0


def test_fork_handler_stops_a_bare_tracer():
    from framehook.profiler import _profiler

    tracer = _tracer.Tracer()
    assert tracer.start() is True
    _profiler._after_fork_in_child()
    assert tracer.state == "stopped" and _tracer.active() is None


@pytest.mark.parametrize("how", ["with", "stop", "exit-handler"])
def test_a_fork_unseen_by_the_handler_is_found_by_the_process_id(backend, monkeypatch, how):
    from framehook.profiler import Profiler, _profiler

    real_pid = os.getpid()
    prof = Profiler()
    prof.start()
    monkeypatch.setattr(os, "getpid", lambda: real_pid + 1)  # now "in a child"
    if how == "with":
        prof.__exit__(None, None, None)
    elif how == "stop":
        with pytest.raises(RuntimeError, match="is a fork of it"):
            prof.stop()
    else:
        prof._stop_at_exit()
    assert prof.state == "forked" and _tracer.active() is None
    with pytest.raises(RuntimeError, match=f"recorded in process {real_pid}"):
        prof.export("never.json")
    assert _profiler._RECORDING[0] is None


SIMULATED_CHILD = "from framehook.profiler import _profiler\n_profiler._after_fork_in_child()\n"


def test_cli_in_a_child_returns_the_status_writing_nothing(tmp_path, capsys):
    from framehook.profiler._cli import main

    script = tmp_path / "child.py"
    script.write_text(SIMULATED_CHILD + "raise SystemExit(3)\n")
    out = tmp_path / "out.json"
    assert main(["-o", str(out), "--summary", str(script)]) == 3
    assert capsys.readouterr().err == ""
    assert not out.exists()
