"""asyncio tasks (Profiler(async_tasks=True), --async): each task's coroutine frames form
the task's own tree, named after it, with its waits between steps as "await" frames, in
every output; on its thread, each step is a frame named after the task.

The reference is sys.setprofile's: a call belongs to a task when the task is running and
the task's coroutine frame is among the frame's callers (its own frame included)."""

from __future__ import annotations

import asyncio
import gzip
import json
import os
import pstats
import subprocess
import sys
import threading
from collections import Counter
from typing import Dict, List

import pytest

from framehook.profiler import Profile, Profiler, _tracer
from framehook.profiler._compat import code_qualname

pytestmark = pytest.mark.usefixtures("backend")

WORKERS = ("w1", "w2", "w3")
ROUNDS = 4


def work(n: int) -> int:
    return sum(range(n))


async def hand_on(value: int, into: "asyncio.Queue[int]") -> None:
    await asyncio.sleep(0)
    await into.put(value + work(3))


async def worker(inbox: "asyncio.Queue[int]", outbox: "asyncio.Queue[int]") -> int:
    total = 0
    for _ in range(ROUNDS):
        value = await inbox.get()  # waits for the worker before it
        total += value
        await hand_on(value, outbox)
    return total


async def ring() -> List[int]:
    """Three tasks awaiting each other: a token goes round a ring of queues."""
    queues: List["asyncio.Queue[int]"] = [asyncio.Queue() for _ in WORKERS]
    tasks = [
        asyncio.get_running_loop().create_task(worker(queues[i], queues[(i + 1) % 3]), name=name)
        for i, name in enumerate(WORKERS)
    ]
    await queues[0].put(1)
    results = await asyncio.gather(*tasks)
    await queues[0].get()  # the token's last hand-on
    return results


def reference_counts() -> Dict[str, Counter]:
    """Per task name, the Python calls sys.setprofile sees in that task's steps."""
    counts: Dict[str, Counter] = {}

    def hook(frame, event, arg):
        if event != "call" or asyncio._get_running_loop() is None:
            return
        task = asyncio.current_task()
        if task is None:
            return
        root = task.get_coro().cr_frame
        f = frame
        while f is not None and f is not root:
            f = f.f_back
        if f is not None:
            counts.setdefault(task.get_name(), Counter())[code_qualname(frame.f_code)] += 1

    sys.setprofile(hook)
    try:
        asyncio.run(ring())
    finally:
        sys.setprofile(None)
    return counts


def record(**options) -> Profile:
    with Profiler(async_tasks=True, **options) as prof:
        asyncio.run(ring())
    return prof.profile


def track(profile: Profile, name: str):
    found = [t for t in profile.threads if t.name == name]
    assert len(found) == 1, [t.name for t in profile.threads]
    return found[0]


def main_track(profile: Profile):
    return profile.thread(threading.main_thread().ident)


def walk(thread):
    for root in thread.roots:
        yield from root.walk()


def test_three_tasks_awaiting_each_other_have_trees_with_the_reference_counts():
    expected = reference_counts()
    profile = record(c_calls=False)
    for name in WORKERS:
        tree = track(profile, f"Task {name}")
        got = Counter(e.name for e in walk(tree) if e.kind == "python")
        assert got == expected[name], name
        # (the ring makes each worker wait for the others)
        steps = [r for r in tree.roots if r.kind == "python"]
        waits = [r for r in tree.roots if r.kind == "task"]
        assert {r.name for r in steps} == {"worker"} and {r.name for r in waits} == {"await"}
        assert len(waits) == len(steps) - 1 >= ROUNDS
        # on the thread, a frame per step, named after the task, holds nothing
        on_thread = [e for e in walk(main_track(profile)) if e.kind == "task" and e.name == name]
        assert len(on_thread) == len(steps)
        assert all(not e.children for e in on_thread)
    # no coroutine frame of a worker is left on the thread
    assert not [e for e in walk(main_track(profile)) if e.name.endswith(("worker", "hand_on"))]
    assert [t.task for t in profile.threads].count(False) == len(profile.threads) - len(expected)


def test_c_calls_go_to_the_task_that_makes_them():
    profile = record()
    for name in WORKERS:
        tree = track(profile, f"Task {name}")
        assert any(e.kind == "c" for e in walk(tree))
        # work() is called by hand_on in each round
        assert sum(1 for e in walk(tree) if e.name == "work") == ROUNDS


async def sleeper(seconds: float) -> None:
    await asyncio.sleep(seconds)


async def sleeps() -> None:
    await asyncio.gather(
        asyncio.get_running_loop().create_task(sleeper(0.05), name="slow"),
        asyncio.get_running_loop().create_task(sleeper(0.0), name="quick"),
    )


def test_the_wait_is_shown_as_await_for_as_long_as_it_lasted():
    with Profiler(async_tasks=True) as prof:
        asyncio.run(sleeps())
    profile = prof.profile
    slow = track(profile, "Task slow")
    waits = [r for r in slow.roots if r.kind == "task"]
    assert [w.name for w in waits] == ["await"]
    assert waits[0].duration_ns >= 49_000_000  # (asyncio.sleep never wakes early)
    quick = track(profile, "Task quick")
    assert sum(r.duration_ns for r in quick.roots if r.kind == "task") < waits[0].duration_ns


def test_a_task_still_waiting_at_stop_waits_to_the_end_and_a_done_one_does_not():
    async def main() -> None:
        never = asyncio.Event()
        done = asyncio.get_running_loop().create_task(sleeper(0), name="done")
        pending = asyncio.get_running_loop().create_task(never.wait(), name="pending")
        await done
        await asyncio.sleep(0)
        prof.stop()  # (inside a step of main: it stays on the thread's track)
        pending.cancel()

    prof = Profiler(async_tasks=True).start()
    asyncio.run(main())
    profile = prof.profile
    end = max(e.end_ns for e in profile.events)
    pending = track(profile, "Task pending")
    assert pending.roots[-1].name == "await" and pending.roots[-1].end_ns == end
    done = track(profile, "Task done")
    assert done.roots[-1].kind == "python"


def test_without_async_tasks_coroutines_stay_on_their_thread():
    with Profiler() as prof:
        asyncio.run(ring())
    profile = prof.profile
    assert not [t for t in profile.threads if t.task or t.name.startswith("Task")]
    assert not [e for e in profile.events if e.kind == "task"]
    assert sum(1 for e in profile.events if e.name.endswith("worker")) >= 3 * ROUNDS


def test_coroutines_driven_by_hand_stay_on_their_thread():
    async def inner() -> int:
        return 7

    coro = inner()
    with Profiler(async_tasks=True) as prof:
        with pytest.raises(StopIteration):
            coro.send(None)
    profile = prof.profile
    assert not [t for t in profile.threads if t.task]
    assert len([e for e in walk(main_track(profile)) if e.name.endswith("inner")]) == 1


def test_annotations_in_a_task_go_to_its_track():
    from framehook.profiler import record_function

    async def annotated() -> None:
        with record_function("inside"):
            await asyncio.sleep(0)

    async def main() -> None:
        await asyncio.get_running_loop().create_task(annotated(), name="annotated")

    with Profiler(async_tasks=True) as prof:
        asyncio.run(main())
    tree = track(prof.profile, "Task annotated")
    assert [e.name for e in walk(tree) if e.kind == "annotation"] == ["inside"]


def read(path: str) -> str:
    with open(path, encoding="utf-8") as fh:
        return fh.read()


def test_every_output_has_a_track_per_task(tmp_path):
    profile = record()
    names = [f"Task {n}" for n in WORKERS]

    chrome = json.loads(read(profile.export(tmp_path / "p.json", "chrome")))
    tracks = {e["args"]["name"] for e in chrome["traceEvents"] if e.get("name") == "thread_name"}
    for name in names:
        assert any(t.startswith(name + " ") for t in tracks), tracks
    assert any(e.get("name") == "await" and e.get("cat") == "task" for e in chrome["traceEvents"])

    speedscope = json.loads(read(profile.export(tmp_path / "p.speedscope.json", "speedscope")))
    assert set(names) <= {p["name"].split(" (")[0] for p in speedscope["profiles"]}

    gecko_path = profile.export(tmp_path / "p.gecko.json", "gecko")
    opener = gzip.open if gecko_path.endswith(".gz") else open
    with opener(gecko_path, "rt") as fh:
        gecko = json.load(fh)
    assert set(names) <= {t["name"] for t in gecko["threads"]}
    assert any("asyncio" == c["name"] for c in gecko["meta"]["categories"])

    collapsed = read(profile.export(tmp_path / "p.collapsed", "collapsed"))
    stacks = [line.rsplit(" ", 1)[0].split(";") for line in collapsed.splitlines()]
    roots = Counter((s[0].split(" (")[0], s[1].split(" (")[0]) for s in stacks if len(s) > 1)
    for name in names:
        assert roots[(name, "worker")] and roots[(name, "await")]

    stats = pstats.Stats(profile.export(tmp_path / "p.pstats", "pstats"))
    labels = {func[2] for func in stats.stats}  # type: ignore[attr-defined]
    assert {"<asyncio await>", "<asyncio w1>"} <= labels

    text = read(profile.export(tmp_path / "p.txt", "text"))
    html = read(profile.export(tmp_path / "p.html", "html"))
    svg = read(profile.export(tmp_path / "p.svg", "svg"))
    # (the text summary is per function: a task's steps and waits are functions there)
    assert {"await", *WORKERS} <= {line.split()[-1] for line in text.splitlines() if line.strip()}
    for name in names:
        assert name in html and name in svg


def test_a_tracer_refuses_a_current_task_that_cannot_be_called():
    with pytest.raises(TypeError, match="current_task must be callable"):
        _tracer.Tracer(current_task=5)
    with pytest.raises(TypeError, match="async_tasks"):
        Profiler(async_tasks="yes")  # type: ignore[arg-type]


def test_the_command_line_async_option(tmp_path):
    script = tmp_path / "prog.py"
    script.write_text(
        "import asyncio\n"
        "async def job():\n    await asyncio.sleep(0)\n"
        "async def main():\n"
        "    await asyncio.gather(*(asyncio.create_task(job(), name=f'job{i}') for i in range(3)))\n"
        "asyncio.run(main())\n"
    )
    out = tmp_path / "prog.speedscope.json"
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(sys.path))
    for flag, expected in (([], set()), (["--async"], {"Task job0", "Task job1", "Task job2"})):
        subprocess.run(
            [sys.executable, "-m", "framehook.profiler", "-o", str(out), *flag, str(script)],
            check=True,
            env=env,
            capture_output=True,
        )
        profiles = {p["name"].split(" (")[0] for p in json.loads(out.read_text())["profiles"]}
        assert {p for p in profiles if p.startswith("Task job")} == expected
