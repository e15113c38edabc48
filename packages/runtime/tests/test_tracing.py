"""Trace and profile functions, bdb and coverage.py see the same thing with the hook as
without it; callbacks and guards stay invisible to them unless asked."""

from __future__ import annotations

import bdb
import contextlib
import gc
import json
import os
import subprocess
import sys
import textwrap

import framehook.runtime as rt
from passthrough import PassThrough


def workload(n):
    total = 0
    for i in range(n):
        total += helper(i)
    try:
        failing()
    except ValueError:
        total += 1
    return total


def helper(i):
    return i * 2 if i % 2 else len(str(i))


def failing():
    raise ValueError("expected")


@contextlib.contextmanager
def gc_paused():
    """Collections run gc.callbacks (Python functions) at arbitrary moments, which tracers
    would then see in one run and not the other."""
    gc.collect()
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was_enabled:
            gc.enable()


def recorded_events(install, fn, args, hook):
    """Runs fn(*args) with a recorder installed by install(recorder), optionally under a
    framehook callback; returns the result and the events outside the harness itself."""
    events = []

    def run():
        install(events)
        try:
            return fn(*args)
        finally:
            install(None)

    with gc_paused():
        if hook is None:
            result = run()
        else:
            with rt.enable(hook):
                result = run()
    return result, [e for e in events if e[1] not in ("run", "settrace", "setprofile", "install")]


def install_tracer(events):
    def tracer(frame, event, arg):
        events.append((event, frame.f_code.co_name, frame.f_lineno))
        return tracer

    sys.settrace(None if events is None else tracer)


def install_profiler(events):
    def profiler(frame, event, arg):
        name = arg.__name__ if event.startswith("c_") else frame.f_code.co_name
        events.append((event, name))

    sys.setprofile(None if events is None else profiler)


def trace_events(fn, *args, hook=None):
    return recorded_events(install_tracer, fn, args, hook)


def profile_events(fn, *args, hook=None):
    return recorded_events(install_profiler, fn, args, hook)


def test_settrace_sees_same_events():
    plain = trace_events(workload, 6)
    hooked_first = trace_events(workload, 6, hook=PassThrough())  # misses: callbacks run
    hooked_again = trace_events(workload, 6, hook=PassThrough())  # hits: guards run
    assert hooked_first == plain
    assert hooked_again == plain
    assert any(e[0] == "exception" for e in plain[1])


def test_setprofile_sees_same_events():
    plain = profile_events(workload, 5)
    assert profile_events(workload, 5, hook=PassThrough()) == plain
    assert profile_events(workload, 5, hook=PassThrough()) == plain


def test_callbacks_visible_to_tracers_when_asked():
    def visible_cb(frame, entry, state):
        return None

    def target():
        return 1

    events = []

    def tracer(frame, event, arg):
        events.append(frame.f_code.co_name)
        return tracer

    previous = rt.set_trace_callbacks(True)
    try:
        assert previous is False
        with rt.enable(visible_cb):
            sys.settrace(tracer)
            target()
            sys.settrace(None)
    finally:
        rt.set_trace_callbacks(False)
    assert "visible_cb" in events
    rt.reset_code(target.__code__)


def test_set_trace_callbacks_validates():
    import pytest

    with pytest.raises(TypeError, match="argument 'enabled' must be a bool"):
        rt.set_trace_callbacks(1)


class Recorder(bdb.Bdb):
    def __init__(self):
        super().__init__()
        self.stops = []

    def user_call(self, frame, args):
        self.stops.append(("call", frame.f_code.co_name))
        self.set_step()

    def user_line(self, frame):
        self.stops.append(("line", frame.f_code.co_name, frame.f_lineno))
        self.set_step()

    def user_return(self, frame, value):
        self.stops.append(("return", frame.f_code.co_name, value))
        self.set_step()


def test_bdb_steps_identically():
    plain = Recorder()
    hooked = Recorder()
    with gc_paused():
        expected = plain.runcall(workload, 4)
        with rt.enable(PassThrough()):
            got = hooked.runcall(workload, 4)
    assert got == expected
    assert hooked.stops == plain.stops
    assert len(plain.stops) > 20


COVERAGE_LIB = textwrap.dedent("""
    def branchy(x):
        if x > 0:
            y = x * 2
        else:
            y = -x
        return y

    def main():
        return [branchy(v) for v in (1, -1, 2)]
""")

COVERAGE_SCRIPT = textwrap.dedent("""
    import os, sys
    sys.path.insert(0, {tests!r})
    import framehook.runtime as rt
    from passthrough import PassThrough
    from cov_lib import main

    if os.environ.get("FH_HOOK"):
        with rt.enable(PassThrough()):
            print(main())
    else:
        print(main())
""")


def test_coverage_py_measures_same_lines(tmp_path):
    pytest = __import__("pytest")
    pytest.importorskip("coverage")
    script = tmp_path / "cov_target.py"
    script.write_text(COVERAGE_SCRIPT.format(tests=os.path.dirname(__file__)))
    (tmp_path / "cov_lib.py").write_text(COVERAGE_LIB)
    lines = {}
    for mode in ("plain", "hook"):
        env = dict(os.environ, COVERAGE_FILE=str(tmp_path / f".cov-{mode}"))
        env.pop("COVERAGE_PROCESS_START", None)
        env.pop("COVERAGE_RCFILE", None)
        if mode == "hook":
            env["FH_HOOK"] = "1"
        out = subprocess.run(
            [sys.executable, "-m", "coverage", "run", str(script)],
            env=env,
            capture_output=True,
            text=True,
            cwd=str(tmp_path),
        )
        assert out.returncode == 0, out.stderr
        assert out.stdout.strip() == "[2, 1, 4]"
        report = tmp_path / f"{mode}.json"
        subprocess.run(
            [sys.executable, "-m", "coverage", "json", "-o", str(report)],
            env=env,
            check=True,
            capture_output=True,
            cwd=str(tmp_path),
        )
        data = json.loads(report.read_text())["files"]
        (entry,) = [v for k, v in data.items() if k.endswith("cov_lib.py")]
        lines[mode] = entry["executed_lines"]
    assert lines["hook"] == lines["plain"]
