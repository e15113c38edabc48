"""The Firefox Profiler format: its tables hold together, its samples give back each
function's self and total time as the call trees have them, and the Firefox Profiler's
own importer (``profiler-cli``, from the npm registry, under node) loads it and computes
the same times, threads and markers.

The importer's check needs node and npm: it installs the pinned ``profiler-cli`` once
into a cache directory and skips, saying why, where neither is found or the install
fails (no network).
"""

from __future__ import annotations

import asyncio
import collections
import json
import pathlib
import os
import shutil
import subprocess
import sys
import threading
import uuid
from unittest import mock

import pytest

from framehook.profiler import ExportError, Profiler, record_function
from framehook.profiler._gecko import PROCESSED_VERSION, to_gecko

from fhprof_helpers import npm_package

PROFILER_CLI = "@firefox-devtools/profiler-cli@0.10.0"


def fib(n):
    return n if n < 2 else fib(n - 1) + fib(n - 2)


def spin(n):
    return sorted(range(n, 0, -1))


def recorded(max_events=None):
    kwargs = {} if max_events is None else {"max_events": max_events}
    with Profiler(**kwargs) as prof:
        with record_function("first phase"):
            fib(12)
        worker = threading.Thread(target=lambda: [fib(9) for _ in range(3)], name="worker")
        worker.start()
        worker.join()
        with record_function("second phase"):
            spin(50)
    return prof.profile


def tree_times(tree):
    """Each function's self and total time on one thread, in ms, from the trees, by
    (name, file, line): total counts a call once however deep the same function recurses
    under it."""
    self_ms: collections.Counter = collections.Counter()
    total_ms: collections.Counter = collections.Counter()
    for root in tree.roots:
        stack = [(root, ())]
        while stack:
            event, above = stack.pop()
            func = event.function
            key = (func.name, func.filename, func.lineno if func.filename else None)
            self_ms[key] += event.self_ns / 1e6
            if key not in above:
                total_ms[key] += event.duration_ns / 1e6
            stack.extend((child, above + (key,)) for child in event.children)
    return +self_ms, +total_ms  # (+: calls of 0 ns have no samples)


def by_name(times):
    """Times of functions of the same name, side by side: the importer names functions
    only by name."""
    grouped: dict = collections.defaultdict(list)
    for key, value in times.items():
        grouped[key[0] if isinstance(key, tuple) else key].append(value)
    return {name: sorted(values) for name, values in grouped.items()}


def sample_times(thread):
    """The same, read back from a Gecko thread's samples, stack table and functions."""
    strings, funcs = thread["stringArray"], thread["funcTable"]
    frames, stacks = thread["frameTable"], thread["stackTable"]
    self_ms: collections.Counter = collections.Counter()
    total_ms: collections.Counter = collections.Counter()
    samples = thread["samples"]
    for stack, weight in zip(samples["stack"], samples["weight"]):
        names = []
        while stack is not None:
            func = frames["func"][stacks["frame"][stack]]
            filename = funcs["fileName"][func]
            names.append(
                (
                    strings[funcs["name"][func]],
                    None if filename is None else strings[filename],
                    funcs["lineNumber"][func],
                )
            )
            stack = stacks["prefix"][stack]
        if names:
            self_ms[names[0]] += weight
        for name in set(names):
            total_ms[name] += weight
    return self_ms, total_ms


def assert_close(got, expected, what):
    assert set(got) == set(expected), what
    for name in expected:
        pairs = zip(got[name], expected[name]) if isinstance(expected[name], list) else [(got[name], expected[name])]
        assert all(abs(a - b) < 1e-6 for a, b in pairs), (what, name, got[name], expected[name])


def test_tables_hold_together_and_give_back_the_trees_times():
    profile = recorded()
    doc = to_gecko(profile)
    assert doc["meta"]["preprocessedProfileVersion"] == PROCESSED_VERSION
    assert [t["name"] for t in doc["threads"]] == [t.name for t in profile.threads]
    main = threading.main_thread().ident
    assert [t["isMainThread"] for t in doc["threads"]] == [t.thread_id == main for t in profile.threads]
    for tree, thread in zip(profile.threads, doc["threads"]):
        for table in ("samples", "markers", "stackTable", "frameTable", "funcTable"):
            columns = {k: v for k, v in thread[table].items() if isinstance(v, list)}
            assert {len(v) for v in columns.values()} == {thread[table]["length"]}, table
        prefixes = thread["stackTable"]["prefix"]
        assert all(p is None or p < i for i, p in enumerate(prefixes))  # callers come first
        times = thread["samples"]["time"]
        assert times == sorted(times)
        assert all(w >= 0 for w in thread["samples"]["weight"])
        self_ms, total_ms = tree_times(tree)
        got_self, got_total = sample_times(thread)
        assert_close(+got_self, self_ms, f"self times of {tree.name}")
        assert_close(got_total, total_ms, f"total times of {tree.name}")
    # (the test's own thread: pytest-xdist runs tests in a thread of its own)
    (here,) = [n for n, tree in enumerate(profile.threads) if tree.thread_id == threading.get_ident()]
    ours = doc["threads"][here]
    strings = ours["stringArray"]
    markers = [(strings[n], e - s) for n, s, e in zip(*(ours["markers"][k] for k in ("name", "startTime", "endTime")))]
    phases = [e for e in profile.threads[here].walk() if e.kind == "annotation"]
    assert [name for name, _ in markers] == ["first phase", "second phase"]
    for (_, duration), event in zip(markers, phases):
        assert abs(duration - event.duration_ns / 1e6) < 1e-6


def test_a_bounded_run_says_how_many_events_were_dropped():
    profile = recorded(max_events=40)
    dropped = profile.aggregates().dropped
    assert dropped > 0
    (section,) = to_gecko(profile)["meta"]["extra"]
    entries = {entry["label"]: entry["value"] for entry in section["entries"]}
    assert entries == {"Dropped events": dropped, "Left out by": "max_events"}
    assert to_gecko(recorded())["meta"]["extra"] == []


def test_the_format_is_chosen_by_name_and_extension(tmp_path):
    profile = recorded()
    by_name = profile.export(tmp_path / "a.json", format="gecko")
    by_extension = profile.export(tmp_path / "b.gecko.json")
    for path in (by_name, by_extension):
        assert json.loads(pathlib.Path(path).read_text())["meta"]["preprocessedProfileVersion"] == PROCESSED_VERSION


def test_the_writer_refuses_a_thread_it_has_not_and_passes_on_write_errors(tmp_path):
    profile = recorded()
    tracer = profile._tracer
    n = len(profile.threads)
    with pytest.raises(IndexError, match=f"index: {n} recorded threads, no thread {n}"):
        tracer.write_gecko_samples(lambda chunk: None, n)

    def refuse(chunk):
        raise OSError(28, "No space left on device")

    with pytest.raises(OSError, match="No space left"):
        tracer.write_gecko_samples(refuse, 0)
    with pytest.raises(ExportError, match="No space left on device"):
        with mock.patch("framehook.profiler._export.os.fdopen") as fdopen:
            fdopen.return_value.__enter__.return_value.write.side_effect = refuse
            profile.export(tmp_path / "full.gecko.json")


# ---- the Firefox Profiler's own importer ---------------------------------------------------------


@pytest.fixture(scope="module")
def profiler_cli():
    if not shutil.which("node"):
        pytest.skip("node is needed to run the Firefox Profiler's importer (profiler-cli)")
    return npm_package(PROFILER_CLI, "profiler-cli", "@firefox-devtools/profiler-cli/dist/profiler-cli.js")


class Session:
    """A profiler-cli daemon with the profile loaded, its sessions kept in a directory of
    the test's own."""

    def __init__(self, tool, path, home):
        self.tool = tool
        self.env = dict(os.environ, PROFILER_CLI_SESSION_DIR=str(home), PROFILER_CLI_NO_SYMBOLICATE="1")
        self.id = uuid.uuid4().hex[:12]
        self.query("load", str(path))

    def query(self, *args):
        proc = subprocess.run(
            ["node", self.tool, *args, "--session", self.id, "--json"],
            capture_output=True,
            text=True,
            timeout=120,
            env=self.env,
        )
        assert proc.returncode == 0, proc.stdout + proc.stderr
        return json.loads(proc.stdout) if args[0] != "load" else None

    def stop(self):
        subprocess.run(["node", self.tool, "stop", self.id], capture_output=True, timeout=60, env=self.env)


def test_the_firefox_profilers_importer_computes_the_same_times(profiler_cli, tmp_path):
    profile = recorded()
    path = profile.export(tmp_path / "profile.gecko.json")
    session = Session(profiler_cli, path, tmp_path / "sessions")
    try:
        listed = session.query("thread", "list", "--sort", "index")["threads"]
        assert [(t["name"], t["pid"]) for t in listed] == [(t.name, str(os.getpid())) for t in profile.threads]
        for handle, tree in zip((t["threadHandle"] for t in listed), profile.threads):
            found = session.query("thread", "functions", "--thread", handle, "--limit", "0")
            assert found["weightType"] == "tracing-ms"
            functions = found["functions"]
            got_self = by_name(
                {(f["name"], i): f["selfSamples"] for i, f in enumerate(functions) if f["selfSamples"] > 1e-9}
            )
            got_total = by_name({(f["name"], i): f["totalSamples"] for i, f in enumerate(functions)})
            self_ms, total_ms = tree_times(tree)
            assert_close(got_self, by_name(self_ms), f"self times of {tree.name}")
            assert_close(got_total, by_name(total_ms), f"total times of {tree.name}")
        (here,) = [n for n, tree in enumerate(profile.threads) if tree.thread_id == threading.get_ident()]
        markers = session.query("thread", "markers", "--thread", listed[here]["threadHandle"])
        assert sorted((m["markerName"], m["count"]) for m in markers["byType"]) == [
            ("first phase", 1),
            ("second phase", 1),
        ]
    finally:
        session.stop()


def test_the_importer_opens_a_merged_profile_of_several_processes(profiler_cli, tmp_path):
    script = tmp_path / "forks.py"
    script.write_text(
        "import os\n"
        "def leaf(i):\n    return i\n"
        "for n in (3, 4):\n"
        "    pid = os.fork()\n"
        "    if pid == 0:\n"
        "        [leaf(i) for i in range(n)]\n"
        "        os._exit(0)\n"
        "    os.waitpid(pid, 0)\n"
        "    print(pid)\n"
    )
    out = tmp_path / "out.gecko.json"
    proc = subprocess.run(
        [sys.executable, "-m", "framehook.profiler", "--follow", "-o", str(out), str(script)],
        capture_output=True,
        text=True,
        timeout=120,
        cwd=str(tmp_path),
    )
    assert proc.returncode == 0, proc.stderr
    children = proc.stdout.split()
    session = Session(profiler_cli, out, tmp_path / "sessions")
    try:
        listed = session.query("thread", "list", "--sort", "index")["threads"]
        assert [t["pid"] for t in listed[1:]] == children  # one track each, in the order they started
        assert listed[0]["processName"] == f"framehook-profile {listed[0]['pid']}: forks.py"
        assert [t["processName"] for t in listed[1:]] == [f"fork child {pid}: forks.py" for pid in children]
        for handle in (t["threadHandle"] for t in listed[1:]):
            found = session.query("thread", "functions", "--thread", handle, "--limit", "0")
            assert "leaf" in {func["name"] for func in found["functions"]}
    finally:
        session.stop()


def test_a_profile_that_recorded_nothing_still_opens(profiler_cli, tmp_path):
    # a profiler refused (another was recording) has no thread: the importer needs one
    with Profiler():
        refused = Profiler()
        with pytest.warns(Warning, match="already recording"):
            refused.start()
        refused.stop()
    doc = to_gecko(refused.profile)
    assert [(t["name"], t["samples"]["length"]) for t in doc["threads"]] == [("nothing recorded", 0)]
    path = refused.profile.export(tmp_path / "empty.gecko.json")
    session = Session(profiler_cli, path, tmp_path / "sessions")
    try:
        listed = session.query("thread", "list")["threads"]
        assert [t["name"] for t in listed] == ["nothing recorded"]
    finally:
        session.stop()


def test_the_importer_opens_asyncio_task_tracks(profiler_cli, tmp_path):
    from test_tasks import WORKERS, ring

    with Profiler(async_tasks=True) as prof:
        asyncio.run(ring())
    profile = prof.profile
    path = profile.export(tmp_path / "tasks.gecko.json")
    session = Session(profiler_cli, path, tmp_path / "sessions")
    try:
        listed = session.query("thread", "list", "--sort", "index")["threads"]
        assert [t["name"] for t in listed] == [t.name for t in profile.threads]
        for name in WORKERS:
            (handle,) = [t["threadHandle"] for t in listed if t["name"] == f"Task {name}"]
            found = session.query("thread", "functions", "--thread", handle, "--limit", "0")
            assert {"worker", "await"} <= {func["name"] for func in found["functions"]}
            markers = session.query("thread", "markers", "--thread", handle)
            waits = [m["count"] for m in markers["byType"] if m["markerName"] == "await"]
            tree = [t for t in profile.threads if t.name == f"Task {name}"][0]
            assert waits == [sum(1 for r in tree.roots if r.name == "await")]
    finally:
        session.stop()
