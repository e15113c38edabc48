"""The command line waits, still recording, for the non-daemon threads a script leaves running.

Every scenario runs the same script twice in fresh interpreters: with plain Python, then
under the command line. The exit code, stdout and stderr must be the plain run's, stderr
followed by the line saying where the profile went. The workers only start working once
the main thread is in the interpreter's wait for threads at exit (they look at its stack),
so what they record was done after the script's code ended. Through a small launcher, the
command line runs once per backend.
"""

from __future__ import annotations

import json
import os
import pstats
import re
import shutil
import signal
import subprocess
import sys
import textwrap
import threading
import time

import pytest

from framehook.profiler import _tracer
from framehook.profiler._cli import main

from fhprof_helpers import chrome_spans as spans_of

BACKENDS = [
    "profile",
    pytest.param(
        "monitoring",
        marks=pytest.mark.skipif(not _tracer.HAVE_MONITORING, reason="the sys.monitoring backend needs CPython 3.12+"),
    ),
]

MODES = {"end": 0, "exit": 3, "raise": 1}

SCRIPT = textwrap.dedent('''
    import signal, sys, threading, time

    def in_exit_wait():
        """Whether the main thread is in the interpreter's wait for threads at exit."""
        frame = sys._current_frames().get(threading.main_thread().ident)
        while frame is not None:
            if frame.f_code.co_name == "_shutdown" and frame.f_globals is vars(threading):
                return True
            frame = frame.f_back
        return False

    def await_exit_wait():
        deadline = time.monotonic() + 60
        while not in_exit_wait():
            if time.monotonic() > deadline:
                raise RuntimeError("the main thread never reached the wait at exit")
            time.sleep(0.005)

    def step(n):
        return sum(i * i for i in range(n))

    def worker(calls):
        await_exit_wait()
        for _ in range(calls):
            step(300)

    def sleeper():  # a daemon thread: never done, never waited for
        while True:
            time.sleep(1)

    def held(flag):  # tells the test it works in the wait at exit, then keeps it waiting
        # The test's SIGINT goes to the process, and Linux may hand it to any thread that
        # does not block it: handled by this one, it would leave the main thread blocked in
        # the join, never woken to raise KeyboardInterrupt (plain Python alike).
        signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGINT})
        await_exit_wait()
        step(300)
        open(flag, "w").close()
        time.sleep(600)

    def start(kind, flag):
        global pool  # an executor left open stays referenced, as by a module's global
        if kind == "threads":
            threading.Thread(target=worker, args=(3,)).start()
            threading.Thread(target=worker, args=(5,)).start()
        elif kind == "daemon":
            threading.Thread(target=sleeper, daemon=True).start()
            threading.Thread(target=worker, args=(4,)).start()
        elif kind == "executor":  # left open: its workers end on threading's exit callback
            from concurrent.futures import ThreadPoolExecutor
            pool = ThreadPoolExecutor(2)
            pool.submit(worker, 3)
            pool.submit(worker, 5)
        elif kind == "held":
            threading.Thread(target=held, args=(flag,)).start()
        elif kind == "held-executor":
            from concurrent.futures import ThreadPoolExecutor
            pool = ThreadPoolExecutor(1)
            pool.submit(held, flag)

    kind, mode = sys.argv[1], sys.argv[2]
    start(kind, sys.argv[3] if len(sys.argv) > 3 else None)
    print("started", kind)
    if mode == "exit":
        sys.exit(3)
    if mode == "raise":
        raise ValueError("boom")
''')

# Runs the command line as framehook-profile does, with the given backend
LAUNCHER = textwrap.dedent('''
    import sys
    from framehook.profiler import _cli, _profiler

    backend = sys.argv.pop(1)
    _profiler.default_backend = lambda: backend  # what the command line's Profiler() takes
    sys.exit(_cli.command_line())
''')

STEP_CALLS = {"threads": 8, "daemon": 4, "executor": 8}
WORKER_THREADS = {"threads": 2, "daemon": 1, "executor": 2}

WROTE = re.compile(
    r"framehook-profile: wrote (\w+) profile to (.+) \((\d+) events recorded, "
    r"(\d+) thread\(s\)\)\n\Z"
)


def _default_sigint() -> None:
    # a child of a process that ignores SIGINT (a background job) would ignore it too
    signal.signal(signal.SIGINT, signal.SIG_DFL)


def run(command, flag=None):
    """Runs a command to its end; with a flag file, sends SIGINT once the file exists."""
    proc = subprocess.Popen(
        command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, preexec_fn=_default_sigint
    )
    try:
        if flag is not None:
            deadline = time.monotonic() + 120
            while not os.path.exists(flag):
                if proc.poll() is not None or time.monotonic() > deadline:
                    break  # the assertions on its output will say what happened
                time.sleep(0.02)
            else:
                proc.send_signal(signal.SIGINT)
        out, err = proc.communicate(timeout=120)
    except subprocess.TimeoutExpired:
        proc.kill()
        out, err = proc.communicate()
        pytest.fail(f"{command} did not end within 120 s; stderr:\n{err}")
    return proc.returncode, out, err


class Case:
    def __init__(self, tmp_path, kind, mode, held=False):
        self.tmp_path = tmp_path
        self.script = tmp_path / "prog.py"
        self.script.write_text(SCRIPT)
        self.launcher = tmp_path / "launch.py"
        self.launcher.write_text(LAUNCHER)
        self.kind, self.mode, self.held = kind, mode, held
        self.plain = self.run([sys.executable], "plain")
        assert self.plain[0] == MODES[mode], self.plain
        assert self.plain[1] == f"started {kind}\n"

    def args(self, name):
        args = [self.kind, self.mode]
        if self.held:
            args.append(str(self.tmp_path / f"{name}.flag"))
        return args

    def run(self, command, name):
        flag = str(self.tmp_path / f"{name}.flag") if self.held else None
        return run(command + [str(self.script)] + self.args(name), flag)

    def profiled(self, command, out):
        """Runs under the command line; checks it against the plain run; returns events."""
        code, stdout, stderr = self.run(command + ["-o", str(out)], out.name)
        assert (code, stdout) == self.plain[:2], stderr
        assert stderr.startswith(self.plain[2]), stderr
        wrote = WROTE.match(stderr, len(self.plain[2]))
        assert wrote is not None, stderr
        assert wrote.group(2) == str(out)
        return int(wrote.group(3)), int(wrote.group(4))

    def launched(self, backend, out):
        return self.profiled([sys.executable, str(self.launcher), backend], out)


def chrome_spans(path):
    return spans_of(json.loads(path.read_text()))


def script_calls(path, name):
    """Call count of a function of the script in a pstats file."""
    stats = pstats.Stats(str(path)).stats
    found = [value[1] for (filename, _, func), value in stats.items() if func == name and filename.endswith("prog.py")]
    assert len(found) == 1, sorted(stats)
    return found[0]


def of_script(spans, name):
    return [e for e in spans if e["name"] == name and e["args"].get("file", "").endswith("prog.py")]


def check_chrome(path, kind, events, threads):
    spans = chrome_spans(path)
    assert 0 < len(spans) <= events  # each span begins with a recorded event of its own
    module = of_script(spans, "<module>")
    assert len(module) == 1
    main_tid = module[0]["tid"]
    steps = of_script(spans, "step")
    assert len(steps) == STEP_CALLS[kind]
    assert main_tid not in {e["tid"] for e in steps}
    assert len({e["tid"] for e in of_script(spans, "worker")}) == WORKER_THREADS[kind]
    assert threads == 1 + WORKER_THREADS[kind] + (kind == "daemon")
    # the wait itself is not the script's: the main thread's tree ends with its code
    module_end = module[0]["ts"] + module[0]["dur"]
    assert [e["name"] for e in spans if e["tid"] == main_tid and e["ts"] > module_end] == []
    assert not {"_shutdown", "_script_end", "_wait_for_threads"} & {e["name"] for e in spans}


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("mode", list(MODES))
def test_threads_left_running_are_waited_for_and_recorded(tmp_path, backend, mode):
    case = Case(tmp_path, "threads", mode)
    chrome = tmp_path / "out.json"
    check_chrome(chrome, "threads", *case.launched(backend, chrome))
    stats = tmp_path / "out.pstats"
    case.launched(backend, stats)
    assert script_calls(stats, "step") == STEP_CALLS["threads"]
    assert script_calls(stats, "worker") == 2


@pytest.mark.parametrize("backend", BACKENDS)
def test_daemon_threads_are_not_waited_for(tmp_path, backend):
    # the daemon thread sleeps forever: the run ends once the non-daemon worker is done
    case = Case(tmp_path, "daemon", "end")
    chrome = tmp_path / "out.json"
    check_chrome(chrome, "daemon", *case.launched(backend, chrome))
    assert len(of_script(chrome_spans(chrome), "sleeper")) == 1


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("mode", ["end", "raise"])
def test_an_executor_left_open_finishes_its_work_as_at_exit(tmp_path, backend, mode):
    # its workers wait for more work until threading's exit callback tells them to stop:
    # the command line's wait runs it, as the interpreter's does
    case = Case(tmp_path, "executor", mode)
    chrome = tmp_path / "out.json"
    check_chrome(chrome, "executor", *case.launched(backend, chrome))


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("kind", ["held", "held-executor"])
@pytest.mark.parametrize("mode", list(MODES))
def test_ctrl_c_during_the_wait_still_writes_the_profile(tmp_path, backend, kind, mode):
    # Ctrl-C once the worker runs in the wait: the interpreter reports the interrupted wait
    # as an ignored exception, keeps the script's exit code and exits without waiting
    # again (the worker sleeps for 600 s); the command line does the same after writing
    case = Case(tmp_path, kind, mode, held=True)
    out = tmp_path / "out.pstats"
    case.launched(backend, out)
    assert "KeyboardInterrupt" in case.plain[2]
    assert script_calls(out, "held") == 1 and script_calls(out, "step") == 1


def test_entry_points_wait_for_threads(tmp_path):
    case = Case(tmp_path, "threads", "exit")
    commands = [[sys.executable, "-m", "framehook.profiler"]]
    exe = shutil.which("framehook-profile", path=os.path.dirname(sys.executable))
    if exe:
        commands.append([exe])
    for i, command in enumerate(commands):
        out = tmp_path / f"out{i}.json"
        check_chrome(out, "threads", *case.profiled(command, out))


def test_called_in_process_recording_ends_with_the_script(tmp_path, capsys):
    # main() without exiting=True (within a program that goes on): the threads the script
    # left are that program's; nothing is waited for and no shutdown is started
    script = tmp_path / "quick.py"
    stop = tmp_path / "stop"
    script.write_text(
        textwrap.dedent(f'''
        import os, threading, time
        def worker():
            deadline = time.monotonic() + 60
            while not os.path.exists({str(stop)!r}) and time.monotonic() < deadline:
                time.sleep(0.01)
        threading.Thread(target=worker, name="left-running").start()
    ''')
    )
    out = tmp_path / "out.json"
    try:
        assert main(["-o", str(out), str(script)]) == 0
        left = [t for t in threading.enumerate() if t.name == "left-running"]
        assert len(left) == 1 and left[0].is_alive()
        assert threading.main_thread().is_alive()
    finally:
        stop.touch()
        for t in threading.enumerate():
            if t.name == "left-running":
                t.join(60)
    assert "wrote chrome profile" in capsys.readouterr().err
    assert "worker" in {e["name"] for e in chrome_spans(out)}
