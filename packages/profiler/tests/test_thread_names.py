"""Thread names survive thread-id reuse: one name per recorded thread, not per id."""

from __future__ import annotations

import _thread
import json
import threading
import time
from concurrent.futures import ThreadPoolExecutor

import pytest

from framehook.profiler import Profiler
from fhprof_helpers import chrome_spans

pytestmark = pytest.mark.usefixtures("backend")

WAIT = 30  # seconds; generous for a loaded machine
TRIES = 50  # recordings tried until the OS hands three threads in a row the same id


def leaf():
    return 1


def first_work():
    leaf()


def raw_work():
    leaf()


def pool_work():
    leaf()
    return threading.get_ident()


def _wait_gone(count_before):
    """Waits until the _thread threads started since `count_before` have ended (their id
    is free again once the OS thread exits, just after)."""
    deadline = time.monotonic() + WAIT
    while _thread._count() > count_before:
        assert time.monotonic() < deadline, "a _thread thread did not end"
        time.sleep(0.001)
    time.sleep(0.005)


def _raw_thread():
    """Runs raw_work on a thread started with _thread (unknown to threading), waits until
    it is gone; returns its id."""
    count = _thread._count()
    done = threading.Event()
    idents = []

    def run():
        try:
            idents.append(threading.get_ident())
            raw_work()
        finally:
            done.set()

    _thread.start_new_thread(run, ())
    assert done.wait(WAIT)
    _wait_gone(count)
    return idents[0]


def _three_threads_in_a_row():
    """threading.Thread(name="first"), then a _thread thread, then a pool thread, each
    started once the one before has ended; returns the three thread ids."""
    first = threading.Thread(target=first_work, name="first")
    first.start()
    first.join()
    time.sleep(0.005)
    raw_ident = _raw_thread()
    with ThreadPoolExecutor(max_workers=1, thread_name_prefix="pool") as pool:
        pool_ident = pool.submit(pool_work).result(WAIT)
    return first.ident, raw_ident, pool_ident


def _record_with_reuse():
    for _ in range(TRIES):
        with Profiler() as prof:
            idents = _three_threads_in_a_row()
        if len(set(idents)) == 1:
            return prof.profile, idents[0]
    pytest.skip(f"the OS gave three threads in a row the same id in none of {TRIES} tries")


def _named(event, name):
    return event.name == name or event.name.endswith("." + name)  # qualified from 3.11


def _tree_running(profile, name):
    trees = [t for t in profile.threads if any(_named(e, name) for e in t.walk())]
    assert len(trees) == 1, (name, trees)
    return trees[0]


def test_threads_that_reuse_an_id_keep_their_own_names(tmp_path):
    profile, ident = _record_with_reuse()
    first = _tree_running(profile, "first_work")
    raw = _tree_running(profile, "raw_work")
    pool = _tree_running(profile, "pool_work")
    assert first.thread_id == raw.thread_id == pool.thread_id == ident
    assert first.name == "first"
    assert raw.name == f"Thread-{ident}-2"  # the second recorded thread with that id
    assert pool.name == "pool_0"
    assert len({first.index, raw.index, pool.index}) == 3
    # the names are known before (and without) building the trees, in the same order
    assert (ident, "first") in profile.thread_names
    assert [n for i, n in profile.thread_names if i == ident] == ["first", raw.name, "pool_0"]
    with pytest.raises(KeyError, match="3 recorded threads with id"):
        profile.thread(ident)
    assert profile.thread("pool_0") is pool

    out = tmp_path / "reuse.json"
    profile.export(out)
    doc = json.loads(out.read_text())
    track_names = {
        e["tid"]: e["args"]["name"] for e in doc["traceEvents"] if e["ph"] == "M" and e["name"] == "thread_name"
    }
    tracks = {}
    for e in chrome_spans(doc):
        if e["name"] in ("first_work", "raw_work", "pool_work"):
            tracks[e["name"]] = e["tid"]  # (module-level functions: plain names)
    assert len(set(tracks.values())) == 3
    assert track_names[tracks["first_work"]] == f"first ({ident})"
    assert track_names[tracks["raw_work"]] == f"Thread-{ident}-2 ({ident})"
    assert track_names[tracks["pool_work"]] == f"pool_0 ({ident})"


def test_a_thread_running_at_start_lends_its_name_to_no_later_thread():
    go = threading.Event()

    def before_work():
        go.wait()
        leaf()

    for _ in range(TRIES):
        before = threading.Thread(target=before_work, name="before")
        before.start()
        with Profiler() as prof:
            go.set()
            before.join()
            time.sleep(0.005)
            raw_ident = _raw_thread()
        go.clear()
        if raw_ident == before.ident:
            break
    else:
        pytest.skip(f"the OS reused no thread id in {TRIES} tries")
    profile = prof.profile
    old = _tree_running(profile, "before_work")
    new = _tree_running(profile, "raw_work")
    assert old.name == "before" and old.thread_id == before.ident
    assert new.name == f"Thread-{before.ident}-2" and new.thread_id == before.ident


def test_a_thread_renamed_while_recording_has_its_last_name():
    renamed = threading.Event()

    def work():
        threading.current_thread().name = "renamed"
        leaf()
        renamed.set()

    with Profiler() as prof:
        t = threading.Thread(target=work, name="original")
        t.start()
        t.join()
    assert renamed.is_set()
    tree = _tree_running(prof.profile, "work")
    assert tree.name == "renamed" and tree.thread_id == t.ident


def test_main_thread_and_a_thread_started_while_recording():
    with Profiler() as prof:
        t = threading.Thread(target=first_work, name="worker-x")
        t.start()
        t.join()
    profile = prof.profile
    main = threading.main_thread()
    assert profile.thread(main.ident).name == main.name
    assert profile.thread(t.ident).name == "worker-x"
    assert dict(profile.thread_names)[t.ident] == "worker-x"
