"""Audit hooks refusing the events the profiler raises: start() fails cleanly, stop() stops.

The profile-function backend raises "sys.setprofile" (before 3.12 once per start and once
per stop, from 3.12 once per thread it puts a function on and once per stop); the
sys.monitoring backend raises "sys.monitoring.register_callback" (once per callback).
Audit hooks cannot be removed, so each scenario runs in a fresh interpreter, with a hook
that refuses only while a flag is set.

From 3.12 the interpreter switches its profile events (sys.monitoring's events of the
legacy profile functions) by its count of thread states that have a profile function,
and only inside an allowed sys.setprofile. Whether they are on is seen in the code of a
function that ran: its instructions are the INSTRUMENTED_ ones while they are.
"""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap

import pytest

from framehook.profiler import _tracer

PY312 = sys.version_info >= (3, 12)

EVENTS = {"profile": "sys.setprofile", "monitoring": "sys.monitoring.register_callback"}

BACKENDS = [
    "profile",
    pytest.param(
        "monitoring",
        marks=pytest.mark.skipif(not _tracer.HAVE_MONITORING, reason="the sys.monitoring backend needs CPython 3.12+"),
    ),
]

CHILD = textwrap.dedent('''
    import json, opcode, sys, threading, _thread
    from framehook.profiler import Profiler, _tracer

    backend, event, allow, phase = json.loads(sys.argv[1])
    refusing = False
    seen = 0

    churn = None  # set to a function: run by the hook at the first event it sees

    def hook(name, args):
        global seen, churn
        if churn is not None and name == event:
            run, churn = churn, None
            run()
        if refusing and name == event:
            if seen >= allow:
                raise PermissionError("refused " + name)
            seen += 1

    sys.addaudithook(hook)
    unraisable = []
    sys.unraisablehook = lambda u: unraisable.append(repr(u.exc_value))

    def work():
        return sum(range(3))

    INSTRUMENTED = {v for k, v in opcode.opmap.items() if k.startswith("INSTRUMENTED_")}

    def profile_events_on():
        """3.12+: whether code runs instrumented (None before 3.12)."""
        if sys.version_info < (3, 12):
            return None
        work()
        code = work.__code__._co_code_adaptive
        return any(code[i] in INSTRUMENTED for i in range(0, len(code), 2))

    def previous(frame, ev, arg):  # a profile function set before the profiler
        pass

    # a second thread, waiting for commands, so that there are threads to walk
    requests, answers = [], []
    wake, done = threading.Event(), threading.Event()

    def helper():
        while True:
            wake.wait()
            wake.clear()
            cmd = requests.pop()
            if cmd == "quit":
                done.set()
                return
            answers.append(work() if cmd == "work" else sys.getprofile() is None
                           if cmd == "no_profile" else _tracer.profile_function_installed())
            done.set()

    def ask(cmd):
        requests.append(cmd)
        done.clear()
        wake.set()
        assert done.wait(30)
        return answers.pop() if cmd != "quit" else None

    helper_thread = threading.Thread(target=helper, name="helper", daemon=True)  # a failure exits
    helper_thread.start()

    def tools_in_use():
        mon = getattr(sys, "monitoring", None)
        return [] if mon is None else [i for i in (2, 3, 4) if mon.get_tool(i) is not None]

    def state():
        return {
            "active": _tracer.active() is not None,
            "main_installed": _tracer.profile_function_installed(),
            "helper_installed": ask("installed"),
            "previous_kept": sys.getprofile() is previous,
            "previous_gone": sys.getprofile() is None,
            "helper_profile_none": ask("no_profile"),
            "thread_hook_kept": threading._profile_hook is None,
            "tools": tools_in_use(),
        }

    def names(profile):
        return sorted({e.name.rpartition(".")[2] for e in profile.events if e.kind == "python"})

    if phase != "stop_bare":
        sys.setprofile(previous)
    out = {}
    if phase == "start":
        prof = Profiler(backend=backend)
        refusing = True
        try:
            prof.start()
        except PermissionError as exc:
            out["error"] = str(exc)
        refusing = False
        out["after"] = state()
        out["state"] = prof.state
        out["recorded"] = len(prof.profile.events) + len(prof.profile.threads)
    elif phase in ("stop", "stop_bare", "adopt"):
        prof = Profiler(backend=backend).start()
        work()
        ask("work")
        refusing = True
        if phase == "adopt":  # a thread started while recording, refused its function
            finished = threading.Event()
            ident = _thread.start_new_thread(lambda: (work(), finished.set()), ())
            assert finished.wait(30)
            refusing = False
        prof.stop()
        # still refusing: plain code on both threads, after the stop
        idle, recorded = _tracer.idle_calls(), prof._tracer.event_count
        work()
        ask("work")
        out["idle_calls_after_stop"] = _tracer.idle_calls() - idle
        out["recorded_after_stop"] = prof._tracer.event_count - recorded
        out["refusing"] = state()
        out["events_on_while_refusing"] = profile_events_on()
        refusing = False
        out["after"] = state()
        out["first"] = names(prof.profile)
        out["threads"] = [t.thread_id for t in prof.profile.threads]
        out["adopted"] = phase == "adopt" and ident in out["threads"]
    elif phase == "churn":
        # While start() runs the hook, a thread it found ends and a new one starts.
        leaving = threading.Event()

        def ending_thread_body():
            leaving.wait()

        def fresh_thread_body():
            work()

        ending = threading.Thread(target=ending_thread_body)
        ending.start()

        def run():
            leaving.set()
            ending.join()
            fresh = threading.Thread(target=fresh_thread_body)
            fresh.start()
            fresh.join()

        churn = run
        prof = Profiler(backend=backend).start()
        work()
        prof.stop()
        out["churned"] = churn is None
        out["after"] = state()
        out["first"] = names(prof.profile)
    elif phase == "spawn":
        # While start() runs the hook, the hook starts two threads with _thread: one that
        # is inside a function when start() ends (blocked in it), and one that may not
        # have run yet.
        go, blocked = threading.Event(), threading.Event()
        finished = [threading.Event(), threading.Event()]
        idents = []

        def spawned_inner():
            work()

        def spawned_outer():
            blocked.set()
            go.wait()
            spawned_inner()
            finished[0].set()

        def spawned_late():
            go.wait()
            work()
            finished[1].set()

        def run():
            idents.append(_thread.start_new_thread(spawned_outer, ()))
            assert blocked.wait(30)
            idents.append(_thread.start_new_thread(spawned_late, ()))

        churn = run
        prof = Profiler(backend=backend).start()
        go.set()
        assert all(f.wait(30) for f in finished)
        prof.stop()
        out["churned"] = churn is None
        out["after"] = state()
        profile = prof.profile
        inner = [e for e in profile.events if e.name.endswith("spawned_inner")]
        out["inner"] = [(e.thread_id == idents[0], e.parent.name.rpartition(".")[2],
                         e.parent.start_frame) for e in inner]
        late = [e for e in profile.events if e.name.endswith("spawned_late")]
        out["late"] = [(e.thread_id == idents[1], e.start_frame) for e in late]
        out["late_work"] = [w.thread_id == idents[1] for w in profile.find("work")
                            if w.parent is not None and w.parent in late]
    out["unraisable"] = unraisable
    # once the hook allows it, a new profiler records every thread
    sys.setprofile(previous)
    with Profiler(backend=backend) as again:
        work()
        ask("work")
    out["again"] = names(again.profile)
    out["again_threads"] = len({e.thread_id for e in again.profile.find("work")})
    out["again_after"] = state()
    ask("quit")
    helper_thread.join()
    sys.setprofile(None)
    # no thread state has a profile function: if the count says so, the events go off
    out["events_on_at_end"] = profile_events_on()
    print(json.dumps(out))
''')


def run_child(backend: str, allow: int, phase: str) -> dict:
    args = json.dumps([backend, EVENTS[backend], allow, phase])
    proc = subprocess.run([sys.executable, "-c", CHILD, args], capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    return json.loads(proc.stdout.strip().splitlines()[-1])


def assert_clean(state: dict, previous: str = "previous_kept") -> None:
    """Nothing of the profiler is left: no recorder, no profile function on any thread, no
    sys.monitoring tool, threading's hook and the previous profile function as they were."""
    assert not state["active"]
    assert not state["main_installed"] and not state["helper_installed"]
    assert state["tools"] == []
    assert state["thread_hook_kept"]
    assert state[previous]
    assert state["helper_profile_none"]


def assert_records_again(out: dict) -> None:
    assert "work" in out["again"] and out["again_threads"] == 2
    assert_clean(out["again_after"])
    # the interpreter's count of profiled threads is right: once no thread has a profile
    # function, the next sys.setprofile switches the profile events off
    assert out["events_on_at_end"] is (False if PY312 else None)


@pytest.mark.parametrize("backend", BACKENDS)
def test_refused_start_fails_and_leaves_nothing(backend):
    out = run_child(backend, 0, "start")
    assert out["error"] == "refused " + EVENTS[backend]
    assert out["state"] == "stopped" and out["recorded"] == 0
    assert_clean(out["after"])
    assert_records_again(out)


# Refusing after some events were allowed: the functions (or callbacks) set so far are
# taken off again. Before 3.12 the profile backend raises one event per start.
PARTIAL = [
    pytest.param(
        "profile",
        1,
        marks=pytest.mark.skipif(not PY312, reason="before 3.12 start() raises sys.setprofile once for all threads"),
    ),
    pytest.param(
        "monitoring",
        3,
        marks=pytest.mark.skipif(not _tracer.HAVE_MONITORING, reason="the sys.monitoring backend needs CPython 3.12+"),
    ),
]


@pytest.mark.parametrize("backend, allow", PARTIAL)
def test_start_refused_midway_takes_back_what_it_set(backend, allow):
    out = run_child(backend, allow, "start")
    assert out["error"] == "refused " + EVENTS[backend]
    assert out["state"] == "stopped" and out["recorded"] == 0
    assert_clean(out["after"])
    assert_records_again(out)


@pytest.mark.parametrize("backend", BACKENDS)
def test_refused_stop_still_stops(backend):
    out = run_child(backend, 0, "stop")
    assert "work" in out["first"]  # what was recorded is kept
    assert out["unraisable"] and all("refused" in u for u in out["unraisable"])
    if backend == "profile":
        # one sys.setprofile event per stop, on every version: refused, it is not asked again
        assert len(out["unraisable"]) == 1
    # While the hook still refuses: nothing of ours on either thread (the previous profile
    # function is back on the main thread, none on the helper), no call into our profile
    # function from plain code there, nothing recorded.
    assert_clean(out["refusing"])
    assert out["idle_calls_after_stop"] == 0 and out["recorded_after_stop"] == 0
    assert_clean(out["after"])
    assert_records_again(out)


def test_refused_stop_without_previous_function():
    out = run_child("profile", 0, "stop_bare")
    assert "work" in out["first"]
    assert len(out["unraisable"]) == 1 and "refused" in out["unraisable"][0]
    assert_clean(out["refusing"], "previous_gone")
    assert out["idle_calls_after_stop"] == 0 and out["recorded_after_stop"] == 0
    # From 3.12 the release is complete, but the profile events stay on: only an allowed
    # sys.setprofile switches them (CPython exports no other way), and the refused one was
    # the stop's. They call no profile function (none is left), and go off at the next
    # allowed sys.setprofile, since the count is right (checked at the end of the child).
    assert out["events_on_while_refusing"] is (True if PY312 else None)
    assert_clean(out["after"], "previous_gone")
    assert_records_again(out)


def test_refused_thread_adoption_leaves_that_thread_out():
    out = run_child("profile", 0, "adopt")
    assert not out["adopted"] and "work" in out["first"]
    assert out["unraisable"] and all("refused" in u for u in out["unraisable"])
    assert_clean(out["after"])
    assert_records_again(out)


@pytest.mark.parametrize("backend", BACKENDS)
def test_threads_ending_and_starting_while_an_audit_hook_runs_in_start(backend):
    out = run_child(backend, 0, "churn")
    assert out["churned"] and not out["unraisable"]
    assert "work" in out["first"]
    if backend == "profile":
        # the thread ended before its function was put in place: its start frames go
        # (sys.monitoring needs no per-thread install, so there it is kept as it was at
        # start, like a thread that stayed blocked)
        assert "ending_thread_body" not in out["first"]
    if backend == "profile" and PY312:
        # the hook ran while start() put the functions in place, recording already: the
        # new thread gets its context through threading's hook
        assert "fresh_thread_body" in out["first"]
    else:
        # before 3.12 the hook runs before start() looks at any thread, and with
        # sys.monitoring before any event is switched on: that thread ran before
        # recording began
        assert "fresh_thread_body" not in out["first"]
    assert_clean(out["after"])
    assert_records_again(out)


@pytest.mark.parametrize("backend", BACKENDS)
def test_threads_started_with_thread_by_an_audit_hook_in_start_are_recorded(backend):
    # From 3.12 (profile backend) the hook runs while start() stages the functions, after
    # it collected the threads: these threads are adopted at the end of start(). Before,
    # it runs before the collection; with sys.monitoring, before the events are on.
    out = run_child(backend, 0, "spawn")
    assert out["churned"] and not out["unraisable"]
    # the thread that was inside spawned_outer: that frame is a start frame of its tree
    assert out["inner"] == [[True, "spawned_outer", True]]
    # the other one, whether or not it had run before start() ended
    assert len(out["late"]) == 1 and out["late"][0][0]
    assert out["late_work"] == [True]
    assert_clean(out["after"])
    assert_records_again(out)
