"""``framehook-profile --follow``: the Python processes a profiled script starts (os.fork,
multiprocessing's fork, spawn and forkserver, subprocess) each record themselves, and the
command line merges their parts into its one output, a process per track.

The counts are checked against ``sys.setprofile``: the same script runs once without the
profiler, each process counting its own calls with a profile function, and once under
``--follow``; each process's calls in the merged output must equal its own reference.
Every run is a fresh interpreter, so that a child that hangs or crashes fails the test,
not pytest.
"""

from __future__ import annotations

import collections
import ctypes
import json
import marshal
import os
import re
import subprocess
import sys
import tempfile
import textwrap

import pytest

from framehook.profiler import _cli, _follow

from fhprof_helpers import chrome_spans

pytestmark = pytest.mark.skipif(not hasattr(os, "fork"), reason="following children needs os.fork (POSIX)")
# a followed child's SIGTERM that would never run its handler is re-delivered on Linux only
# (csrc/sigterm.c): elsewhere these tests wait for good, or now and then
linux_only = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="SIGTERM is re-delivered on Linux only")

# Each process calls `leaf` and `branch` a number of times of its own, then says which
# process it was (its role) and, in the reference run, what sys.setprofile counted.
FAMILY = """
    import json, multiprocessing, os, subprocess, sys

    NAMES = ("leaf", "branch")

    def leaf(i):
        return i

    def branch(n):
        total = 0
        for i in range(n):
            total += leaf(i)
        return total

    def work(roles, mode, role, n):
        counts = dict.fromkeys(NAMES, 0)

        def count(frame, event, arg):
            if event == "call" and frame.f_code.co_name in counts:
                counts[frame.f_code.co_name] += 1

        if mode == "reference":
            sys.setprofile(count)
        for k in range(n):
            branch(k)
        if mode == "reference":
            sys.setprofile(None)
        with open(os.path.join(roles, role + ".json"), "w") as fh:
            json.dump({"pid": os.getpid(), "counts": counts}, fh)

    def main(roles, mode, kinds):
        work(roles, mode, "parent", 3)
        if "fork" in kinds:
            pid = os.fork()
            if pid == 0:
                work(roles, mode, "fork", 4)
                os._exit(0)
            os.waitpid(pid, 0)
        for n, method in enumerate(("fork", "spawn", "forkserver"), 5):
            if "mp-" + method in kinds:
                ctx = multiprocessing.get_context(method)
                proc = ctx.Process(target=work, args=(roles, mode, "mp-" + method, n))
                proc.start()
                proc.join()
                assert proc.exitcode == 0, proc.exitcode
        if "subprocess" in kinds:
            subprocess.run([sys.executable, __file__, roles, mode, "as-subprocess"], check=True)

    if __name__ == "__main__":
        roles, mode, kinds = sys.argv[1], sys.argv[2], sys.argv[3].split(",")
        if kinds == ["as-subprocess"]:
            work(roles, mode, "subprocess", 8)
        else:
            main(roles, mode, kinds)
"""

KINDS = ["fork", "mp-fork", "mp-spawn", "mp-forkserver", "subprocess"]


def measured_env(tmp_path, env=None):
    """The environment for the command line's process tree. Under coverage (tox), every
    process of it is measured too: most of --follow runs only in children. The tox env's
    coverage settings, plus saving data at os._exit and in forked children."""
    env = dict(os.environ if env is None else env)
    try:
        import coverage
    except ImportError:
        return env
    rcfile = os.environ.get("COVERAGE_RCFILE")
    if coverage.Coverage.current() is None or not rcfile:
        return env
    with open(rcfile) as fh:
        text = fh.read()
    own = tmp_path.parent / f"{tmp_path.name}.coveragerc"
    if "\npatch" not in text:  # (an rc file that patches already is used as it is)
        text = text.replace("[run]\n", "[run]\npatch =\n    _exit\n    fork\n", 1)
    own.write_text(text)
    env["COVERAGE_PROCESS_START"] = str(own)
    return env


def run(args, cwd, env=None, timeout=180):
    return subprocess.run(
        [sys.executable] + args,
        capture_output=True,
        text=True,
        timeout=timeout,
        cwd=str(cwd),
        env=measured_env(cwd, env),
    )


def run_follow(tmp_path, name, source):
    """Runs a script under --follow (into out.json), which must succeed."""
    script = tmp_path / name
    script.write_text(textwrap.dedent(source))
    out = tmp_path / "out.json"
    proc = run(["-m", "framehook.profiler", "--follow", "-o", str(out), str(script)], tmp_path)
    assert proc.returncode == 0, proc.stderr
    return proc, out


def roles_of(folder):
    return {name[: -len(".json")]: json.loads((folder / name).read_text()) for name in os.listdir(folder)}


@pytest.fixture
def family(tmp_path):
    script = tmp_path / "family.py"
    script.write_text(textwrap.dedent(FAMILY))
    return script


def reference(tmp_path, script, kinds):
    roles = tmp_path / "reference"
    roles.mkdir()
    proc = run([str(script), str(roles), "reference", ",".join(kinds)], tmp_path)
    assert proc.returncode == 0, proc.stderr
    return {role: info["counts"] for role, info in roles_of(roles).items()}


def profiled(tmp_path, script, kinds, fmt="chrome", extra=()):
    roles = tmp_path / "profiled"
    roles.mkdir()
    out = tmp_path / f"out.{fmt}"
    args = ["-m", "framehook.profiler", "--follow", "--format", fmt, "-o", str(out), *extra]
    proc = run(args + [str(script), str(roles), "profiled", ",".join(kinds)], tmp_path)
    return proc, out, roles_of(roles)


def chrome_counts(doc):
    counts: dict = collections.defaultdict(collections.Counter)
    for span in chrome_spans(doc):
        counts[span["pid"]][span["name"]] += 1
    return counts


def process_names(doc):
    return {e["pid"]: e["args"]["name"] for e in doc["traceEvents"] if e["ph"] == "M" and e["name"] == "process_name"}


def test_every_kind_of_child_is_one_process_with_the_reference_counts(tmp_path, family):
    expected = reference(tmp_path, family, KINDS)
    assert sorted(expected) == sorted(["parent"] + KINDS)
    proc, out, roles = profiled(tmp_path, family, KINDS)
    assert proc.returncode == 0, proc.stderr
    assert "this one and 5 child(ren))" in proc.stderr
    assert "missing" not in proc.stderr, proc.stderr
    doc = json.loads(out.read_text())
    names = process_names(doc)
    pids = {role: info["pid"] for role, info in roles.items()}
    # one track per process, and only those: the command line and its five children
    assert sorted(names) == sorted(pids.values())
    assert [p["pid"] for p in doc["otherData"]["processes"]] == list(names)
    assert doc["otherData"]["missing"] == []
    kind_of = {"fork": "fork", "mp-fork": "fork", "mp-spawn": "spawn", "mp-forkserver": "forkserver"}
    kind_of["subprocess"] = "spawn"
    for role, kind in kind_of.items():
        assert names[pids[role]].startswith(f"{kind} child {pids[role]}: "), names
    assert names[pids["parent"]].startswith(f"framehook-profile {pids['parent']}: family.py")
    counts = chrome_counts(doc)
    for role, pid in pids.items():
        assert {name: counts[pid][name] for name in ("leaf", "branch")} == expected[role], role
    # nothing of the command line's own machinery in the children's trees
    for pid in pids.values():
        assert not any("_follow" in name or "sitecustomize" in name for name in counts[pid]), counts[pid]
    assert not [name for name in os.listdir(tmp_path) if ".parts-" in name]  # parts cleaned up


MERGED_FORMATS = ["pstats", "collapsed-calls", "speedscope", "gecko", "svg", "html", "text"]


@pytest.mark.parametrize("fmt", MERGED_FORMATS)
def test_each_format_merges_the_processes(tmp_path, family, fmt):
    kinds = ["fork", "mp-fork"]
    expected = reference(tmp_path, family, kinds)
    proc, out, roles = profiled(tmp_path, family, kinds, fmt)
    assert proc.returncode == 0, proc.stderr
    assert "this one and 2 child(ren))" in proc.stderr
    pids = {role: info["pid"] for role, info in roles.items()}
    total = collections.Counter()
    for counts in expected.values():
        total.update(counts)
    if fmt == "pstats":
        with open(out, "rb") as fh:
            stats = marshal.load(fh)
        calls = collections.Counter()
        for (filename, _, name), (_, nc, *_rest) in stats.items():
            if filename.endswith("family.py") and name in total:
                calls[name] += nc
        assert calls == total  # pstats has no processes: summed
    elif fmt == "collapsed-calls":
        per_root: dict = collections.defaultdict(collections.Counter)
        for line in out.read_text().splitlines():
            stack, _, weight = line.rpartition(" ")
            frames = stack.split(";")
            leafname = frames[-1].split(" ")[0]
            if leafname in ("leaf", "branch"):
                per_root[frames[0]][leafname] += int(weight)
        for role, pid in pids.items():
            (root,) = [r for r in per_root if f" {pid}: " in r]
            assert dict(per_root[root]) == expected[role]
    elif fmt == "speedscope":
        doc = json.loads(out.read_text())
        for pid in pids.values():
            assert [p for p in doc["profiles"] if f" {pid}: " in p["name"]]
        frames = doc["shared"]["frames"]
        opened = collections.Counter()
        for profile in doc["profiles"]:
            for event in profile["events"]:
                if event["type"] == "O":
                    opened[frames[event["frame"]]["name"]] += 1
        assert {name: opened[name] for name in total} == dict(total)
    elif fmt == "gecko":
        doc = json.loads(out.read_text())
        assert {t["pid"] for t in doc["threads"]} == {str(pid) for pid in pids.values()}
        for thread in doc["threads"]:
            (pid,) = [pid for pid in pids.values() if thread["pid"] == str(pid)]
            assert f" {pid}: " in thread["processName"]
            names = {thread["stringArray"][n] for n in thread["funcTable"]["name"]}
            assert {"leaf", "branch"} <= names
        times = [t for thread in doc["threads"] for t in thread["samples"]["time"]]
        assert 0 <= min(times) and max(times) <= doc["meta"]["profilingEndTime"]  # on one clock
    elif fmt in ("svg", "html"):
        text = out.read_text()
        for pid in pids.values():
            assert f" {pid}: " in text
        assert "framehook-profiler flame graph: 3 process(es)" in text
    else:
        text = out.read_text()
        for pid in pids.values():
            assert text.count(f" {pid}: ") == 1
        assert text.count("=== ") == 3


def test_a_child_killed_is_named_and_the_others_kept(tmp_path):
    proc, out = run_follow(
        tmp_path,
        "killed.py",
        """
            import os, signal
            def leaf(i):
                return i
            for n in (2, 3):
                pid = os.fork()
                if pid == 0:
                    for i in range(n):
                        leaf(i)
                    if n == 3:
                        os.kill(os.getpid(), signal.SIGKILL)
                    os._exit(0)
                os.waitpid(pid, 0)
                print(pid)
        """,
    )
    kept, killed = (int(pid) for pid in proc.stdout.split())
    assert (
        f"fork child {killed} (killed.py) wrote no profile: it was killed, crashed or was still running" in proc.stderr
    )
    assert "this one and 1 child(ren); 1 missing)" in proc.stderr
    doc = json.loads(out.read_text())
    assert killed not in process_names(doc)
    assert chrome_counts(doc)[kept]["leaf"] == 2
    assert [note for note in doc["otherData"]["missing"] if f"child {killed} " in note]


def test_a_terminated_child_still_writes_its_part(tmp_path):
    # SIGTERM (Process.terminate, Pool.terminate) ends a followed child once its part is written
    proc, out = run_follow(
        tmp_path,
        "terminated.py",
        """
            import multiprocessing, time
            def leaf(i):
                return i
            def wait(ready):
                for i in range(5):
                    leaf(i)
                ready.set()
                time.sleep(60)
            if __name__ == "__main__":
                ctx = multiprocessing.get_context("fork")
                ready = ctx.Event()
                proc = ctx.Process(target=wait, args=(ready,))
                proc.start()
                ready.wait()
                proc.terminate()
                proc.join()
                print(proc.pid, proc.exitcode)
                with ctx.Pool(2) as pool:  # Pool.__exit__ terminates workers, exiting or not
                    print(sum(pool.map(leaf, range(10))))
        """,
    )
    first, pool_sum = proc.stdout.splitlines()
    pid, exitcode = (int(word) for word in first.split())
    assert exitcode == -15  # still ended by the signal
    assert pool_sum == "45"
    assert "missing" not in proc.stderr, proc.stderr
    doc = json.loads(out.read_text())
    counts = chrome_counts(doc)
    assert counts[pid]["leaf"] == 5
    workers = [p for p in process_names(doc) if p != pid and counts[p]["leaf"]]
    assert sum(counts[p]["leaf"] for p in workers) == 10


@linux_only
def test_a_sigterm_that_interrupts_no_blocking_call_still_ends_the_child(tmp_path):
    # CPython's C handler only flags a SIGTERM: the Python handler that writes the part runs
    # at the main thread's next check for signals. One that comes after that check and before
    # the thread blocks (a pool worker taking its next task: sem_wait, read) interrupts
    # nothing, and the handler would never run (Pool.terminate() then waits for good): the
    # guard re-delivers it to the main thread. Here the call that sends it and the call that
    # blocks are both made from C (map), with no check between them; and once the signal
    # goes to another thread while the main thread waits.
    proc, out = run_follow(
        tmp_path,
        "blocked.py",
        """
            import multiprocessing, os, signal, threading, time
            from functools import partial
            from operator import methodcaller

            def leaf(i):
                return i

            def term_from_another_thread():
                time.sleep(0.2)  # (the main thread blocks meanwhile)
                signal.pthread_kill(threading.get_ident(), signal.SIGTERM)

            def blocked(how, sender):
                for i in range(3):
                    leaf(i)
                if how == "semaphore":
                    block = multiprocessing.get_context("fork").Semaphore(0).acquire
                else:
                    block = partial(os.read, os.pipe()[0], 1)
                if sender == "itself":
                    os.setpgid(0, 0)  # alone in its group: os.killpg, unlike os.kill, checks no signal
                    term = partial(os.killpg, os.getpgid(0), signal.SIGTERM)
                    list(map(methodcaller("__call__"), [term, block]))
                else:
                    threading.Thread(target=term_from_another_thread).start()
                    block()

            if __name__ == "__main__":
                ctx = multiprocessing.get_context("fork")
                for how, sender in [("semaphore", "itself"), ("pipe", "itself"), ("pipe", "thread")]:
                    proc = ctx.Process(target=blocked, args=(how, sender))
                    proc.start()
                    proc.join(10)
                    if proc.exitcode is None:  # still blocked: its handler never ran
                        proc.kill()
                        proc.join()
                    print(how, sender, proc.pid, proc.exitcode, flush=True)
        """,
    )
    ended = {
        (how, sender): (int(pid), int(code)) for how, sender, pid, code in map(str.split, proc.stdout.splitlines())
    }
    assert {case: code for case, (_, code) in ended.items()} == {
        ("semaphore", "itself"): -15,  # (-9: blocked for good, killed)
        ("pipe", "itself"): -15,
        ("pipe", "thread"): -15,
    }
    assert "missing" not in proc.stderr, proc.stderr
    counts = chrome_counts(json.loads(out.read_text()))
    assert [counts[pid]["leaf"] for pid, _ in ended.values()] == [3, 3, 3]


@linux_only
def test_a_sigterm_that_reaches_a_fork_before_os_fork_returns_there_still_ends_it(tmp_path):
    # a fork of a followed child inherits its SIGTERM handlers; a SIGTERM that reaches it
    # before os.fork() has returned there (Pool.terminate() before a worker forked late ever
    # ran) sets the flag that CPython then clears in the new process (PyOS_AfterFork_Child),
    # and the process would go on to wait for good: the guard, once the fork installs its
    # own, re-delivers it. Here the fork pauses inside fork() (an at-fork child handler of
    # the C library) until the signal has come.
    if not hasattr(ctypes.CDLL(None), "__register_atfork"):
        pytest.skip("pauses a fork with glibc's __register_atfork")
    proc, out = run_follow(
        tmp_path,
        "early.py",
        """
            import ctypes, multiprocessing, os, signal, time

            def leaf(i):
                return i

            def state(pid):
                with open(f"/proc/{pid}/stat") as fh:
                    return fh.read().rpartition(")")[2].split()[0]

            def forks_and_terminates_at_once():
                libc = ctypes.CDLL(None)
                pause = ctypes.cast(libc.pause, ctypes.c_void_p)
                # (glibc's pthread_atfork is not exported for dlsym: its own entry point)
                assert getattr(libc, "__register_atfork")(None, None, pause, None) == 0
                r, w = os.pipe()
                pid = os.fork()
                if pid == 0:
                    leaf(0)
                    os.read(r, 1)  # waits for good unless the SIGTERM ends it
                    os._exit(0)
                while state(pid) != "S":
                    time.sleep(0.001)  # (until it pauses)
                os.kill(pid, signal.SIGTERM)
                deadline = time.monotonic() + 10
                while True:
                    done, status = os.waitpid(pid, os.WNOHANG)
                    if done:
                        break
                    if time.monotonic() > deadline:  # still waiting: its handler never ran
                        os.kill(pid, signal.SIGKILL)
                        deadline = float("inf")
                    time.sleep(0.01)
                print(pid, os.waitstatus_to_exitcode(status), flush=True)

            if __name__ == "__main__":
                proc = multiprocessing.get_context("fork").Process(target=forks_and_terminates_at_once)
                proc.start()
                proc.join()
                print(proc.exitcode)
        """,
    )
    forked, code, exitcode = proc.stdout.split()
    assert (code, exitcode) == ("-15", "0")  # (-9: waited for good, killed)
    assert "missing" not in proc.stderr, proc.stderr  # (ended before it recorded, or wrote)


GUARD = """
    import os, signal, sys, time
    from framehook.profiler import _tracer

    calls = []

    def handler(signum, frame):
        calls.append(time.monotonic())
        if len(calls) == int(sys.argv[1]):
            _tracer.sigterm_seen()  # (what the followed child's handler does first)

    def term(wait):  # how many times the handler ran
        del calls[:]
        start = time.monotonic()
        os.kill(os.getpid(), signal.SIGTERM)
        while time.monotonic() - start < wait:
            time.sleep(0.01)
        return len(calls)

    print(_tracer.sigterm_guard(True))  # no Python handler (SIG_DFL): nothing to chain to
    signal.signal(signal.SIGTERM, handler)
    print(_tracer.sigterm_guard(True), _tracer.sigterm_guard(True))  # (twice: chained once)
    print(term(2.0))
    print(_tracer.sigterm_guard(False))
    print(term(0.5))
"""


@linux_only
@pytest.mark.parametrize("seen_at", [1, 3])
def test_the_sigterm_guard_re_delivers_until_the_handler_says_it_began(tmp_path, seen_at):
    script = tmp_path / "guard.py"
    script.write_text(textwrap.dedent(GUARD))
    proc = run([str(script), str(seen_at)], tmp_path)
    assert proc.returncode == 0, proc.stderr
    # re-delivered after 50 ms, then 100 ms, ... until sigterm_seen(); none once undone
    assert proc.stdout.split() == ["False", "True", "True", str(seen_at), "False", "1"]


@linux_only
def test_a_pool_in_a_followed_child_ends_and_its_workers_write(tmp_path):
    # a pool's workers are grandchildren here: each replaces the handler it inherits, and the
    # pool's end (Pool.terminate(), SIGTERM to workers idle or exiting) ends them all. It hung
    # now and then (both ways are made to happen above): a worker's SIGTERM came just before
    # it blocked waiting for a task, or before a worker forked late returned from os.fork()
    proc, out = run_follow(
        tmp_path,
        "nested.py",
        """
            import multiprocessing
            def leaf(i):
                return i
            def child():
                with multiprocessing.get_context("fork").Pool(2) as pool:
                    print(sum(pool.map(leaf, range(8))), flush=True)
            if __name__ == "__main__":
                proc = multiprocessing.get_context("fork").Process(target=child)
                proc.start()
                proc.join()
                print(proc.pid, proc.exitcode)
        """,
    )
    total, last = proc.stdout.splitlines()
    pid, exitcode = (int(word) for word in last.split())
    assert (total, exitcode) == ("28", 0)
    # the child and its workers; a worker ended before it recorded (forked late, its
    # SIGTERM came before it began) wrote nothing and is not missing
    assert re.search(r"this one and [23] child\(ren\)\)", proc.stderr), proc.stderr
    assert "missing" not in proc.stderr, proc.stderr
    counts = chrome_counts(json.loads(out.read_text()))
    assert sum(c["leaf"] for p, c in counts.items() if p != pid) == 8


def test_without_follow_children_never_write(tmp_path, family):
    roles = tmp_path / "roles"
    roles.mkdir()
    out = tmp_path / "out.json"
    kinds = ["fork", "mp-spawn", "subprocess"]
    proc = run(
        ["-m", "framehook.profiler", "-o", str(out), str(family), str(roles), "plain", ",".join(kinds)], tmp_path
    )
    assert proc.returncode == 0, proc.stderr
    assert len(roles_of(roles)) == 4  # every child ran
    doc = json.loads(out.read_text())
    assert list(process_names(doc)) == [roles_of(roles)["parent"]["pid"]]
    assert sorted(os.listdir(tmp_path)) == ["family.py", "out.json", "roles"]


def test_a_stale_environment_starts_nothing(tmp_path):
    # the variable outlives the command line that set it: an interpreter finding it is not followed
    env = dict(os.environ)
    env[_follow.ENV] = json.dumps({"parts": str(tmp_path / "gone"), "format": "chrome", "options": {}})
    env["PYTHONPATH"] = os.pathsep.join([_follow.BOOT_DIR] + [p for p in [env.get("PYTHONPATH")] if p])
    code = "import sys; from framehook.profiler import _follow; print(_follow._CHILD[0] is None, 'site' in sys.modules)"
    proc = run(["-c", code], tmp_path, env)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.split() == ["True", "True"]


def test_a_hidden_sitecustomize_still_runs(tmp_path):
    (tmp_path / "site_dir").mkdir()
    (tmp_path / "site_dir" / "sitecustomize.py").write_text("import os\nos.environ['HIDDEN_RAN'] = 'yes'\n")
    script = tmp_path / "child.py"
    script.write_text(
        textwrap.dedent("""
            import os, subprocess, sys
            code = "import os, sys; print(os.environ.get('HIDDEN_RAN'), sys.modules['sitecustomize'].__file__)"
            print(subprocess.run([sys.executable, "-c", code], capture_output=True, text=True).stdout.strip())
        """)
    )
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join([str(tmp_path / "site_dir")] + [p for p in [env.get("PYTHONPATH")] if p])
    out = tmp_path / "out.json"
    proc = run(["-m", "framehook.profiler", "--follow", "-o", str(out), str(script)], tmp_path, env)
    assert proc.returncode == 0, proc.stderr
    ran, module_file = proc.stdout.split()
    assert ran == "yes"
    assert module_file == str(tmp_path / "site_dir" / "sitecustomize.py")
    assert "this one and 1 child(ren))" in proc.stderr


def test_no_directory_for_the_parts_is_refused_before_the_script_runs(tmp_path, capsys, monkeypatch):
    script = tmp_path / "prog.py"
    script.write_text("open('ran', 'w').close()\n")

    def refuse(*args, **kwargs):
        raise PermissionError(13, "Permission denied")

    monkeypatch.setattr(tempfile, "mkdtemp", refuse)
    monkeypatch.chdir(tmp_path)
    assert _cli.main(["--follow", "-o", str(tmp_path / "out.json"), str(script)]) == 2
    err = capsys.readouterr().err
    assert f"--follow: cannot make a directory for the children's parts in {tmp_path} (Permission denied)" in err
    assert not (tmp_path / "ran").exists()


def test_children_still_running_are_waited_for_and_grandchildren_followed(tmp_path):
    proc, out = run_follow(
        tmp_path,
        "late.py",
        """
            import os, time
            def leaf(i):
                return i
            if os.fork() == 0:  # not waited for: still running when the script ends
                time.sleep(3.5)
                for i in range(3):
                    leaf(i)
                grandchild = os.fork()
                if grandchild == 0:
                    for i in range(4):
                        leaf(i)
                    os._exit(0)
                os.waitpid(grandchild, 0)
                print(os.getpid(), grandchild, flush=True)
                os._exit(0)
        """,
    )
    assert "waiting for 1 child process(es) to finish (at most 10 s)" in proc.stderr
    assert "this one and 2 child(ren))" in proc.stderr
    child, grandchild = (int(pid) for pid in proc.stdout.split())
    counts = chrome_counts(json.loads(out.read_text()))
    assert (counts[child]["leaf"], counts[grandchild]["leaf"]) == (3, 4)


def test_a_fork_after_the_command_line_ended_records_nothing(tmp_path):
    # a process left running forks once the parts are merged and their directory removed
    config = {"parts": str(tmp_path / "merged-and-gone"), "format": "chrome", "options": {}}
    child = _follow._Child(config, "fork", ["prog.py"])
    assert child.start() is False
    assert child.prof.state == "new"
    assert not (tmp_path / "merged-and-gone").exists()


def test_children_the_script_did_not_wait_for_are_recorded(tmp_path):
    # the script ends at once: its children may not have run a line yet when it does
    proc, out = run_follow(
        tmp_path,
        "unwaited.py",
        """
            import os, subprocess, sys
            def leaf(i):
                return i
            code = "def leaf(i):\\n    return i\\nfor i in range(6):\\n    leaf(i)\\n"
            spawned = subprocess.Popen([sys.executable, "-c", code])
            forked = os.fork()
            if forked == 0:
                for i in range(5):
                    leaf(i)
                os._exit(0)
            print(forked, spawned.pid, flush=True)
        """,
    )
    forked, spawned = (int(pid) for pid in proc.stdout.split())
    assert "this one and 2 child(ren))" in proc.stderr, proc.stderr
    counts = chrome_counts(json.loads(out.read_text()))
    assert (counts[forked]["leaf"], counts[spawned]["leaf"]) == (5, 6)


def test_a_child_ended_before_it_recorded_is_not_missing(tmp_path):
    # SIGTERM between the start file and the start of recording (Pool.terminate at once):
    # the child ran none of its own code, so it takes its start file back
    config = {"parts": str(tmp_path), "format": "chrome", "options": {}}
    child = _follow._Child(config, "fork", ["prog.py"])
    (tmp_path / f"{child.pid}.started").write_text(json.dumps({"pid": child.pid}))
    child._write_part()
    assert child.prof.state == "new"
    assert os.listdir(tmp_path) == []
    assert _follow.Children.scan(str(tmp_path)).missing() == []
