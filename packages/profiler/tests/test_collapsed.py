"""Collapsed stacks (``collapsed``, ``collapsed-calls``): parsed back as flamegraph.pl reads
them (the count after the last space, frames split on ``;``), each function's calls and
self time summed over the paths it ends equal what pstats says of it, also when
``max_events`` dropped most events, and the frames stay whole whatever their names. What
the tracer writes (from its per-path aggregates) equals, line for line and in order, the
stacks read off the call trees."""

from __future__ import annotations

import io
import pstats
import re
import threading
from collections import Counter
from typing import Dict, List, Tuple

import pytest

from framehook.profiler import Profiler, record_function
from framehook.profiler._collapsed import write_collapsed
from framehook.profiler._export import format_for, render

from tree_reference import collapsed_from_trees


def fib(n):
    return n if n < 2 else fib(n - 1) + fib(n - 2)


def helper(items):
    return sorted(abs(i) for i in items)


def workload():
    fib(12)
    with record_function("odd;name\nwith a newline"):
        helper(range(-50, 50))
    t = threading.Thread(target=fib, args=(9,), name="collapsed-worker")
    t.start()
    t.join()


def record(**options):
    with Profiler(**options) as prof:
        workload()
    return prof.profile


def parse(text: str) -> List[Tuple[List[str], int]]:
    """Lines as flamegraph.pl reads them: the weight after the last space."""
    rows = []
    for line in text.splitlines():
        stack, _, count = line.rpartition(" ")
        assert stack and count.isdigit(), line
        rows.append((stack.split(";"), int(count)))
    return rows


def collapsed_lines(profile, weight: str) -> Dict[str, int]:
    """The lines written, as {stack: weight} in the order written."""
    fmt = {"time": "collapsed", "calls": "collapsed-calls"}[weight]
    lines = {";".join(frames): count for frames, count in parse(render(profile, fmt).decode())}
    assert len(lines) == len(render(profile, fmt).splitlines())  # (no stack written twice)
    return lines


def by_leaf(profile, rows) -> Dict[tuple, int]:
    """Weights summed per pstats key of each line's last frame."""
    labels = {}
    for func in profile.aggregates().functions:
        label = func.name + (f" ({func.location})" if func.location else "")
        labels[label.replace(";", ":").replace("\n", " ")] = func.pstats_key
    sums: Counter = Counter()
    for frames, count in rows:
        sums[labels[frames[-1]]] += count
    return sums


@pytest.fixture(scope="module")
def profile():
    return record()


@pytest.fixture(scope="module")
def stats(profile, tmp_path_factory):
    path = tmp_path_factory.mktemp("collapsed") / "p.pstats"
    profile.export(path)
    return pstats.Stats(str(path)).stats


@pytest.mark.parametrize("fmt, field", [("collapsed-calls", 1), ("collapsed", 2)])
def test_each_functions_weights_sum_to_its_pstats_counts(profile, stats, fmt, field):
    rows = parse(render(profile, fmt).decode())
    sums = by_leaf(profile, rows)
    checked = 0
    for key, entry in stats.items():
        if key[2].startswith("<framehook-profiler"):
            continue
        want = entry[field] if field == 1 else round(entry[field] * 1e9)
        if want == 0 and key not in sums:
            continue
        assert abs(sums[key] - want) <= (0 if field == 1 else 1), (key, sums[key], want)
        checked += 1
    assert checked >= 5
    fib_key = next(k for k in stats if k[2] == "fib")
    if field == 1:
        assert sums[fib_key] == 465 + 109  # fib(12) on the main thread, fib(9) on the worker


@pytest.mark.parametrize("weight", ["time", "calls"])
def test_the_lines_are_the_call_trees_stacks_in_order(profile, weight):
    assert list(collapsed_lines(profile, weight).items()) == list(collapsed_from_trees(profile, weight).items())


def test_each_thread_is_the_root_of_its_paths(profile):
    roots = {frames[0] for frames, _ in parse(render(profile, "collapsed-calls").decode())}
    # (a test runner's own thread, xdist's, may be recorded too)
    assert {r.rpartition(" (")[0] for r in roots} >= {threading.main_thread().name, "collapsed-worker"}
    assert roots == {f"{name} ({tid})" for tid, name in profile.thread_names}


def test_a_frame_name_with_separators_stays_one_frame(profile):
    rows = parse(render(profile, "collapsed-calls").decode())
    named = [frames for frames, _ in rows if any("odd" in f for f in frames)]
    assert named and all("odd:name with a newline" in frames for frames in named)
    # helper, called inside the annotation, is the frame after it
    assert any(frames[-2:][0] == "odd:name with a newline" and frames[-1].startswith("helper") for frames in named)


def test_weights_stay_exact_when_max_events_dropped_most_events():
    def by_thread_name(profile):  # (the two recordings' threads have other ids; a runner's own left out)
        named = {re.sub(r"^([^;]*) \(\d+\)", r"\1", s): n for s, n in collapsed_lines(profile, "calls").items()}
        return {s: n for s, n in named.items() if s.split(";")[0] in (threading.main_thread().name, "collapsed-worker")}

    full, ring = record(), record(max_events=40)
    assert ring.aggregates().dropped > 1000
    assert by_thread_name(ring) == by_thread_name(full)


def test_lines_are_one_per_distinct_path_however_many_calls(profile):
    rows = parse(render(profile, "collapsed-calls").decode())
    stacks = [";".join(frames) for frames, _ in rows]
    assert len(stacks) == len(set(stacks))
    assert sum(c for _, c in rows) == sum(s[0] for s in profile.aggregates().functions.values())


def test_formats_by_extension_and_a_bad_weight():
    assert format_for("a.folded") == "collapsed" and format_for("a.calls.folded") == "collapsed-calls"
    with pytest.raises(ValueError, match="weight must be 'time' or 'calls'"):
        write_collapsed(record(), io.BytesIO(), "samples")


def test_the_tracers_writer_refuses_what_it_cannot_write(profile):
    tracer, n = profile._tracer, len(profile.threads)
    empty = (0, 0, b"", b"")
    cases = [
        (
            (0, [empty] * (n + 1), [b"x"], 0),
            ValueError,
            r"threads: expected one entry per recorded thread \(\d+\), got",
        ),
        ((0, [empty] * n, [b"x"], 0), ValueError, r"threads\[0\]: no label or style for function 0"),
        ((0, [(5, 0, b"", b"")] * n, [b"x"], 0), ValueError, r"threads\[0\]: the root's text is past fragments"),
        ((0, [(0, 0, b"abc", b"")] * n, [b"x"], 0), TypeError, r"threads\[0\]: labels must be bytes of uint32"),
        ((0, [(0, 0)] * n, [b"x"], 0), TypeError, r"threads\[0\]: expected \(root label"),
        ((3, [empty] * n, [b"x"], 0), ValueError, r"mode: expected 0, 1 or 2, got 3"),
        ((0, [empty] * n, ["x"], 0), TypeError, r"fragments\[0\]: expected bytes"),
        ((2, [empty] * n, [b"x", b"y"], 1), ValueError, r"root_style: past fragments"),
    ]
    for args, error, message in cases:
        with pytest.raises(error, match=message):
            tracer.write_folded(io.BytesIO().write, *args)

    def refuse(chunk):
        raise OSError("disk full")

    with pytest.raises(OSError, match="disk full"):
        write_collapsed(profile, _Writer(refuse))


class _Writer:
    def __init__(self, write):
        self.write = write
