"""The C tracer's aggregates (pstats, summary, flame graph without a Python object per call):
the same results as walking the call trees, exact call counts against sys.setprofile, and
exact counts also when max_events drops events."""

from __future__ import annotations

import io
import os
import pstats
import sys
import threading
from collections import Counter

import pytest

from framehook.profiler import Profiler, record_function
from framehook.profiler._flamegraph import merged_tree
from framehook.profiler._pstats import dropped_key

from fhprof_helpers import chrome_spans
from tree_reference import (
    chrome_from_trees,
    flame_from_trees,
    flame_shape,
    pstats_from_trees,
    speedscope_from_trees,
    summary_from_trees,
)

HERE = os.path.abspath(__file__).rstrip("c")


def fib(n):
    return n if n < 2 else fib(n - 1) + fib(n - 2)


def even(n):
    return True if n == 0 else odd(n - 1)


def odd(n):
    return False if n == 0 else even(n - 1)


def numbers(n):
    for i in range(n):
        yield abs(-i)


def fails(depth):
    if depth == 0:
        raise ValueError("deep")
    fails(depth - 1)


async def leaf(x):
    return x * 2


async def chain(n):
    total = 0
    for i in range(n):
        total += await leaf(i)
    return total


def drive(coro):
    try:
        while True:
            coro.send(None)
    except StopIteration as stop:
        return stop.value


def part(n):
    fib(n)
    even(n)
    sum(numbers(n))
    for _ in range(3):
        try:
            fails(3)
        except ValueError:
            pass
    drive(chain(n))
    with record_function("block"):
        sorted(numbers(n), key=lambda v: -v)


def workload(n=9, nthreads=2):
    part(n)
    threads = [threading.Thread(target=part, args=(n - 2,), name=f"w{i}") for i in range(nthreads)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()


def ours(threads, nthreads=2):
    """The recorded threads that ``workload`` ran on: a test runner's own threads (xdist's
    execnet) are recorded too when they run Python code meanwhile, as any thread is."""
    names = {threading.main_thread().name} | {f"w{i}" for i in range(nthreads)}
    return [t for t in threads if t.name in names]


def recorded(n=9, nthreads=2, **options):
    with Profiler(**options) as prof:
        workload(n, nthreads)
    return prof.profile


def test_aggregates_match_the_trees(backend):
    profile = recorded()
    assert profile.to_pstats() == pstats_from_trees(profile)
    assert profile.summary(limit=1000) == summary_from_trees(profile, limit=1000)
    assert profile.summary() == summary_from_trees(profile)
    assert flame_shape(merged_tree(profile)) == flame_shape(flame_from_trees(profile))
    # the comparison has content: recursion, pairs and paths of every kind of call
    stats = profile.to_pstats()
    fib_key = (HERE, fib.__code__.co_firstlineno, "fib")
    assert stats[fib_key][:2] == (3, 109 + 2 * 41)
    assert len(stats[fib_key][4]) == 2  # called by part and by itself
    assert ("~", 0, "<record_function block>") in stats


def setprofile_counts(func) -> Counter:
    """Calls of this module's functions, as sys.setprofile sees them, on every thread."""
    counts: Counter = Counter()
    lock = threading.Lock()

    def hook(frame, event, arg):
        if event == "call" and frame.f_code.co_filename == HERE:
            code = frame.f_code
            with lock:
                counts[(code.co_filename, code.co_firstlineno, code.co_name)] += 1

    threading.setprofile(hook)
    sys.setprofile(hook)
    try:
        func()
    finally:
        sys.setprofile(None)
        threading.setprofile(None)
    return counts


WORKLOAD = {
    "fib",
    "even",
    "odd",
    "numbers",
    "fails",
    "leaf",
    "chain",
    "drive",
    "part",
    "<lambda>",
    "<listcomp>",
    "workload",
}


def our_counts(stats) -> Counter:
    return Counter({k: v[1] for k, v in stats.items() if k[0] == HERE and k[2] in WORKLOAD})


@pytest.mark.parametrize("max_events", [None, 1, 500])
def test_call_counts_match_setprofile(backend, max_events):
    reference = setprofile_counts(workload)
    reference.pop((HERE, workload.__code__.co_firstlineno, "workload"))
    profile = recorded(max_events=max_events)
    ours = our_counts(profile.to_pstats())
    # the test's own frame is a start frame in ours; workload is called once
    assert ours.pop((HERE, workload.__code__.co_firstlineno, "workload")) == 1
    assert ours == reference
    dropped = profile.aggregates().dropped
    if max_events is None:
        assert dropped == 0
    else:
        assert dropped > 0
        assert all(t.events <= max_events for t in profile.aggregates().threads)
        assert f"note: {dropped} events dropped" in profile.summary()


def test_dropping_keeps_every_aggregate_exact(backend):
    """Counts (calls, primitive calls, per pair and per path) do not depend on max_events."""

    def counts(profile):
        agg = profile.aggregates()
        mine = lambda f: f.path == HERE and f.name.split(".")[-1] in WORKLOAD  # noqa: E731
        per_function = {f.pstats_key: s[:2] for f, s in agg.functions.items() if mine(f)}
        per_pair = {(a.pstats_key, b.pstats_key): s[:2] for (a, b), s in agg.pairs.items() if mine(a) and mine(b)}
        per_path = Counter()
        for paths in agg.paths:
            names = []
            for entry in paths:
                prefix = names[entry.parent] if entry.parent >= 0 else ()
                names.append(prefix + (entry.function.name,))
                if "part" in names[-1]:
                    per_path[names[-1][names[-1].index("part") :]] += entry.count
        return per_function, per_pair, per_path

    # enough events on each thread for the ring to fold blocks while recording
    ring_profile = recorded(16, max_events=2048)
    threads = ours(ring_profile.aggregates().threads)
    assert len(threads) == 3 and threads[0].dropped > 2048 and all(t.dropped > 0 for t in threads)
    full, ring = counts(recorded(16)), counts(ring_profile)
    assert full == ring
    # fib(16) on the main thread, fib(14) on each worker: (calls, primitive calls)
    assert full[0][(HERE, fib.__code__.co_firstlineno, "fib")] == [3193 + 2 * 1219, 3]


@pytest.mark.parametrize("bad", [0, -1, 1.5, "10", True])
def test_max_events_is_checked(bad):
    with pytest.raises(ValueError, match="max_events"):
        Profiler(max_events=bad)


@pytest.mark.parametrize("nthreads", [2, 12])
def test_event_outputs_match_the_tree_writers(backend, nthreads):
    """The Chrome trace and speedscope documents streamed from the buffers hold what the
    tree walk wrote (Chrome: begin/end pairs instead of complete events; ids by start
    time across threads, however many)."""
    profile = recorded(nthreads=nthreads)
    ours = chrome_spans(profile.to_chrome())
    theirs = [e for e in chrome_from_trees(profile)["traceEvents"] if e["ph"] == "X"]
    for span in ours + theirs:
        span.pop("ph")
    key = lambda e: e["args"]["id"]  # noqa: E731
    assert sorted(ours, key=key) == sorted(theirs, key=key)
    assert len(ours) == len(profile.events) > 100

    doc = profile.to_speedscope()
    ref = speedscope_from_trees(profile)

    def resolved(d):
        frames = d["shared"]["frames"]
        return [
            (
                p["name"],
                p["endValue"],
                [(e["type"], frames[e["frame"]]["name"], frames[e["frame"]].get("line"), e["at"]) for e in p["events"]],
            )
            for p in d["profiles"]
        ]

    assert resolved(doc) == resolved(ref)
    assert doc["droppedEvents"] == 0 and doc["name"] == ref["name"]


def test_event_outputs_of_a_ring_are_valid(backend, tmp_path):
    """With events dropped (max_events), the files stay valid: balanced, per-thread
    monotone, and they say how many events were dropped."""
    import json

    profile = recorded(16, max_events=3000)
    dropped = profile.aggregates().dropped
    assert dropped > 0
    doc = json.loads(open(profile.export(tmp_path / "ring.json")).read())
    spans = chrome_spans(doc)  # checks balance and monotone timestamps
    assert doc["otherData"]["dropped_events"] == dropped
    per_thread = Counter(s["tid"] for s in spans)
    # a track per recorded thread (workload's three, and a test runner's own if it ran)
    assert len(ours(profile.aggregates().threads)) == 3
    assert len(per_thread) == len(profile.aggregates().threads) and all(n <= 3000 for n in per_thread.values())
    ss = json.loads(open(profile.export(tmp_path / "ring.speedscope.json")).read())
    assert f"{dropped} events dropped" in ss["name"] and ss["droppedEvents"] == dropped
    for prof in ss["profiles"]:
        stack, last = [], 0
        for ev in prof["events"]:
            assert ev["at"] >= last
            last = ev["at"]
            if ev["type"] == "O":
                stack.append(ev["frame"])
            else:
                assert stack.pop() == ev["frame"]
        assert stack == []
    assert "events dropped" in profile.summary()
    assert f"{dropped} events dropped" in profile.to_svg()
    stats = pstats.Stats(profile.export(tmp_path / "ring.pstats"))
    assert stats.stats[dropped_key(dropped)][:2] == (0, 0)
    listing = io.StringIO()
    stats.stream = listing
    stats.sort_stats("cumulative").print_stats()
    assert f"{dropped} events dropped" in listing.getvalue()


MEMORY_CHILD = r"""
import json, pstats, resource, sys
from framehook.profiler import Profiler

def tick():
    pass

def run(n):
    for _ in range(n):
        tick()

with Profiler(max_events=100_000) as prof:
    run(10_000_000)
path = prof.profile.export(sys.argv[1])
stats = pstats.Stats(path).stats
calls = [v[1] for k, v in stats.items() if k[2] == "tick"]

def peak_rss_kb():
    # ru_maxrss survives exec on Linux: a child of a big pytest process would report its
    # parent's size. The mm's own high-water mark (VmHWM) starts afresh at exec.
    try:
        with open("/proc/self/status") as status:
            for line in status:
                if line.startswith("VmHWM:"):
                    return int(line.split()[1])
    except OSError:
        pass
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss

print(json.dumps({"calls": calls, "dropped": prof.profile.aggregates().dropped,
                  "maxrss_kb": peak_rss_kb()}))
"""


def test_ten_million_calls_in_bounded_memory(tmp_path):
    """10 million calls kept to the newest 100,000 events: the pstats file has every call
    and the process stays far below what keeping every event takes (20 million events of
    16 bytes: 320 MB)."""
    import json
    import subprocess

    out = subprocess.run(
        [sys.executable, "-c", MEMORY_CHILD, str(tmp_path / "ten.pstats")], capture_output=True, text=True, check=True
    )
    result = json.loads(out.stdout)
    assert result["calls"] == [10_000_000]
    assert result["dropped"] > 19_000_000
    assert result["maxrss_kb"] < 120 * 1024, result


class Tagged:
    def __init__(self, n):
        self.data = list(range(n))

    def __call__(self):
        return len(self.data)


def test_chrome_instances_of_tagged_calls_match_the_trees(backend):
    """Tagged calls (tag_calls) carry their instance, numbered per class by start time
    across threads, as in the trees."""
    from framehook.profiler import tag_calls, untag_calls

    objs = [Tagged(i) for i in range(4)]

    def use(order):
        for i in order:
            objs[i]()

    tag_calls(Tagged)
    try:
        with Profiler() as prof:
            use([2, 0, 2])
            t = threading.Thread(target=use, args=([1, 3, 0],))
            t.start()
            t.join()
            use([1])
    finally:
        untag_calls(Tagged)
    profile = prof.profile
    ours = {s["args"]["id"]: s["args"].get("instance") for s in chrome_spans(profile.to_chrome())}
    theirs = {
        e["args"]["id"]: e["args"].get("instance") for e in chrome_from_trees(profile)["traceEvents"] if e["ph"] == "X"
    }
    assert ours == theirs
    numbers = [v["instance"] for k, v in sorted(ours.items()) if v is not None]
    assert numbers == [0, 1, 0, 2, 3, 1, 2]


def test_tracer_methods_check_their_input():
    from framehook.profiler import _tracer

    for bad in (0, -5, 2.0, "1"):
        with pytest.raises(ValueError, match="max_events"):
            _tracer.Tracer(max_events=bad)
    with pytest.raises(TypeError, match="code objects"):
        _tracer.Tracer(hidden=[1])
    fresh = _tracer.Tracer()
    with pytest.raises(RuntimeError, match="never started"):
        fresh.aggregate()
    with Profiler() as prof:
        fib(3)
    tracer = prof._tracer
    sink = io.BytesIO()
    threads = len(tracer.aggregate()["threads"])
    with pytest.raises(ValueError, match="one per recorded thread"):
        tracer.write_chrome(sink.write, 1, [], None)
    with pytest.raises(TypeError, match="per function"):
        tracer.write_chrome(sink.write, 1, [(1, [])] * threads, None)
    with pytest.raises(TypeError, match="per function"):
        tracer.write_speedscope(sink.write, [(b"{", ["x"] * 1000)] * threads)
    assert sink.getvalue() == b""


def test_event_writers_report_progress(tmp_path):
    """The event outputs call progress(calls written so far) after each 1 MiB, in order,
    ending with every call (what a command line shows while a long export runs)."""
    profile = recorded(19)  # a few MB of each
    for name in ("p.json", "p.speedscope.json"):
        seen = []
        profile.export(tmp_path / name, progress=seen.append)
        assert len(seen) >= 2 and seen == sorted(seen)
        assert seen[-1] == len(profile.events)
