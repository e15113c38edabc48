"""A program that exits while a profiler records: no traceback of ours, the exit code kept.

Each scenario runs in a fresh interpreter. With the API, a profiler never stopped is
stopped by its atexit handler (a probe registered before start() runs after it and checks
that nothing of the tracer is left on any thread); one started after the exit handlers
ran is stopped by __del__ during finalization. Under the command line the profile is
written in every case but os._exit. stderr is compared whole: it must be empty, or the
program's own traceback, exactly as the same program prints it without a profiler.
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
import textwrap

import pytest

from framehook.profiler import _tracer

from fhprof_helpers import chrome_spans

BACKENDS = [
    "profile",
    pytest.param(
        "monitoring",
        marks=pytest.mark.skipif(not _tracer.HAVE_MONITORING, reason="the sys.monitoring backend needs CPython 3.12+"),
    ),
]

MODES = {"end": 0, "exit": 3, "raise": 1}

PROGRAM = textwrap.dedent('''
    import sys, threading, time

    def work(n):
        return sum(i * i for i in range(n))

    report_asked, reported, report = threading.Event(), threading.Event(), []
    spinning, finishing = threading.Event(), threading.Event()

    def spin(installed=None):  # a daemon thread, still running at exit
        while True:
            work(50)
            spinning.set()
            if report_asked.is_set() and not reported.is_set():
                report.append(installed() if installed else None)
                reported.set()
            time.sleep(0.001)

    def finish():  # a thread still running when the main thread ends; exit waits for it
        work(1000)
        finishing.set()
        time.sleep(0.3)

    def start_threads(installed=None):
        threading.Thread(target=spin, args=(installed,), daemon=True).start()
        threading.Thread(target=finish).start()
        assert spinning.wait(10) and finishing.wait(10)

    def end(mode):
        work(100)
        if mode == "exit":
            sys.exit(3)
        if mode == "raise":
            raise ValueError("boom")
        if mode == "os-exit":
            import os
            os._exit(4)
''')

API_SCRIPT = PROGRAM + textwrap.dedent('''
    import atexit, json
    from framehook.profiler import Profiler, _tracer

    backend, mode, threads, stop_late = json.loads(sys.argv[1])
    prof = None

    def probe():  # registered before start(): runs after the profiler's exit handler
        result = {"active": _tracer.active() is not None, "state": prof.state,
                  "main_installed": _tracer.profile_function_installed()}
        if hasattr(sys, "monitoring"):
            result["tools"] = [sys.monitoring.get_tool(i) for i in (2, 3, 4)]
        if threads:
            report_asked.set()
            result["daemon_installed"] = report[0] if reported.wait(10) else "no answer"
        if stop_late:  # the program's own exit handler stops it: it gets the profile
            profile = prof.stop()
            names = [e.name for e in profile.events]
            result["work_threads"] = len({e.thread_id for e in profile.events
                                          if e.name == "work"})
            result["ours"] = [n for n in names if "_stop_at_exit" in n or "_ExitHook" in n
                              or "_halt" in n]
        print(json.dumps(result))

    if backend is not None:
        atexit.register(probe)
        prof = Profiler(backend=backend)
        prof.start()
    if threads:
        start_threads(_tracer.profile_function_installed)
    end(mode)
''')


def run(args, **kwargs):
    return subprocess.run([sys.executable] + args, capture_output=True, text=True, timeout=120, **kwargs)


def expected_stderr(script, mode, threads):
    """What the program prints to stderr without any profiler (the user's own traceback)."""
    plain = run([str(script), json.dumps([None, mode, threads, False])])
    assert plain.returncode == MODES[mode]
    assert plain.stdout == ""
    if mode == "raise":
        assert plain.stderr.startswith("Traceback (most recent call last):\n")
        assert plain.stderr.endswith("ValueError: boom\n")
    else:
        assert plain.stderr == ""
    return plain.stderr


def write(tmp_path, name, text):
    path = tmp_path / name
    path.write_text(text)
    return path


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("threads", [False, True], ids=["alone", "threads"])
@pytest.mark.parametrize("mode", list(MODES))
def test_profiler_never_stopped_is_stopped_at_exit(tmp_path, backend, mode, threads):
    script = write(tmp_path, "prog.py", API_SCRIPT)
    proc = run([str(script), json.dumps([backend, mode, threads, False])])
    assert proc.returncode == MODES[mode]
    assert proc.stderr == expected_stderr(script, mode, threads)
    probe = json.loads(proc.stdout)
    # the exit handler stopped it: nothing of ours on the main thread, the daemon thread
    # or in sys.monitoring, and the slot of the single recorder is free
    assert probe["state"] == "stopped" and probe["active"] is False
    assert probe["main_installed"] is False
    if threads:
        assert probe["daemon_installed"] is False
    if "tools" in probe:
        assert probe["tools"] == [None, None, None]


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("mode", list(MODES))
def test_stop_in_an_exit_handler_registered_before_start_gets_the_profile(tmp_path, backend, mode):
    # exit handlers run last registered first, so the profiler's ran before this one:
    # stop() then returns what was recorded until exit instead of raising
    script = write(tmp_path, "prog.py", API_SCRIPT)
    proc = run([str(script), json.dumps([backend, mode, True, True])])
    assert proc.returncode == MODES[mode]
    assert proc.stderr == expected_stderr(script, mode, True)
    probe = json.loads(proc.stdout)
    assert probe["work_threads"] == 3  # main, the daemon thread and the one waited for
    assert probe["ours"] == []  # the exit handler's own frames are hidden


FINALIZING_SCRIPT = textwrap.dedent('''
    import atexit, os, sys
    from framehook.profiler import Profiler, _tracer

    backend = sys.argv[1]
    monitoring = getattr(sys, "monitoring", None)

    class Reporting(Profiler):
        # Reports what the base __del__ left, through the file descriptor: this late in
        # interpreter exit, globals, builtins and sys.stdout may be gone.
        def __del__(self, base=Profiler.__del__, write=os.write, active=_tracer.active,
                    installed=_tracer.profile_function_installed,
                    finalizing=sys.is_finalizing,
                    get_tool=monitoring.get_tool if monitoring else None):
            before = self.__dict__.get("_state")
            base(self)
            tools = [get_tool(2), get_tool(3), get_tool(4)] if get_tool else []
            write(1, ("finalizing=%s %s->%s active=%s installed=%s tools=%s\\n" % (
                finalizing(), before, self._state, active() is not None, installed(),
                tools)).encode())

    def late():  # an exit handler: the profiler's own, registered now, will not run
        global prof
        prof = Reporting(backend=backend)
        prof.start()
        sum(range(10))

    atexit.register(late)
''')


@pytest.mark.parametrize("backend", BACKENDS)
def test_profiler_started_after_the_exit_handlers_is_stopped_by_del(tmp_path, backend):
    script = write(tmp_path, "late.py", FINALIZING_SCRIPT)
    proc = run([str(script), backend])
    assert proc.returncode == 0
    assert proc.stderr == ""
    tools = "[None, None, None]" if _tracer.HAVE_MONITORING else "[]"
    assert proc.stdout == (f"finalizing=True recording->stopped active=False installed=False tools={tools}\n")


OS_EXIT_SCRIPT = textwrap.dedent('''
    import os, sys
    from framehook.profiler import Profiler

    backend, form, mode = sys.argv[1:]

    def end():
        sum(range(100))
        if mode == "exit":
            sys.exit(3)
        os._exit(4)

    if form == "with":
        with Profiler(backend=backend):
            end()
    else:
        Profiler(backend=backend).start()
        end()
''')


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("form", ["with", "start"])
@pytest.mark.parametrize("mode,code", [("exit", 3), ("os-exit", 4)])
def test_with_block_or_start_left_by_sys_exit_or_os_exit(tmp_path, backend, form, mode, code):
    script = write(tmp_path, "quit.py", OS_EXIT_SCRIPT)
    proc = run([str(script), backend, form, mode])
    assert (proc.returncode, proc.stdout, proc.stderr) == (code, "", "")


CLI_SCRIPT = PROGRAM + textwrap.dedent('''
    if sys.argv[2] == "threads":
        start_threads()
    end(sys.argv[1])
''')

WROTE = re.compile(
    r"framehook-profile: wrote chrome profile to (.+) \((\d+) events recorded, "
    r"(\d+) thread\(s\)\)\n"
)


@pytest.mark.parametrize("threads", [False, True], ids=["alone", "threads"])
@pytest.mark.parametrize("mode", list(MODES))
def test_command_line_writes_the_profile_however_the_script_exits(tmp_path, mode, threads):
    script = write(tmp_path, "prog.py", CLI_SCRIPT)
    which = "threads" if threads else "alone"
    plain = run([str(script), mode, which])
    assert plain.returncode == MODES[mode]
    out = tmp_path / "out.json"
    proc = run(["-m", "framehook.profiler", "-o", str(out), str(script), mode, which])
    assert proc.returncode == MODES[mode]
    # exactly what the script prints without the profiler (its traceback comes before the
    # wait for threads at exit, as Python prints it), then where the profile went
    assert proc.stderr.startswith(plain.stderr), proc.stderr
    wrote = WROTE.fullmatch(proc.stderr, len(plain.stderr))
    assert wrote is not None, proc.stderr
    assert wrote.group(1) == str(out) and int(wrote.group(3)) == (3 if threads else 1)
    doc = json.loads(out.read_text())
    spans = chrome_spans(doc)
    assert 0 < len(spans) <= int(wrote.group(2))  # each begins with a recorded event
    assert len({e["tid"] for e in spans if e["name"] == "work"}) == (3 if threads else 1)


def test_command_line_script_calling_os_exit_writes_nothing(tmp_path):
    # os._exit ends the process at once: no profiler code runs, nothing is printed
    script = write(tmp_path, "prog.py", CLI_SCRIPT)
    out = tmp_path / "out.json"
    proc = run(["-m", "framehook.profiler", "-o", str(out), str(script), "os-exit", "threads"])
    assert (proc.returncode, proc.stdout, proc.stderr) == (4, "", "")
    assert not out.exists()
