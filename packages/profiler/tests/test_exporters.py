"""Exporters: Chrome trace (validated against the trace event format), speedscope, pstats
(loaded by pstats.Stats, counts matching cProfile), text summary and SVG flame graph."""

from __future__ import annotations

import cProfile
import io
import json
import marshal
import os
import pstats
import threading
import xml.etree.ElementTree as ET

import pytest

from framehook.profiler import ExportError, Profiler, _tracer, record_function
from framehook.profiler._export import format_for, render
from framehook.profiler._flamegraph import merged_tree

from fhprof_helpers import chrome_spans


def fib(n):
    return n if n < 2 else fib(n - 1) + fib(n - 2)


def helper(items):
    out = []
    for i in items:
        out.append(abs(i))
    return sorted(out)


def workload():
    fib(7)
    with record_function("sorting"):
        helper(range(-5, 5))
    try:
        {}.pop(1)
    except KeyError:
        pass
    t = threading.Thread(target=fib, args=(5,), name="worker")
    t.start()
    t.join()


@pytest.fixture(scope="module")
def profile():
    with Profiler() as prof:
        workload()
    return prof.profile


def validate_chrome_trace(doc):
    """Checks a document against the trace event format's JSON object form; returns the
    calls (begin/end pairs, see chrome_spans) per track."""
    assert isinstance(doc, dict) and isinstance(doc["traceEvents"], list)
    assert doc.get("displayTimeUnit", "ms") in ("ms", "ns")
    for ev in doc["traceEvents"]:
        assert isinstance(ev, dict)
        assert ev["ph"] in ("M", "B", "E")
        assert isinstance(ev["pid"], int) and isinstance(ev["tid"], int)
        assert isinstance(ev.get("args", {}), dict)
        if ev["ph"] == "M":
            assert ev["name"] in (
                "process_name",
                "thread_name",
                "thread_sort_index",
                "process_sort_index",
                "process_labels",
            )
            assert isinstance(ev["args"], dict)
            continue
        assert isinstance(ev["ts"], (int, float)) and ev["ts"] >= 0
        if ev["ph"] == "B":
            assert isinstance(ev["name"], str) and ev["name"]
            assert isinstance(ev.get("cat", ""), str)
    tracks = {}
    for span in chrome_spans(doc):  # balanced, and monotone per track
        assert span["dur"] >= 0
        tracks.setdefault((span["pid"], span["tid"]), []).append(span)
    return tracks


def test_chrome_trace_is_valid_and_complete(profile, tmp_path):
    path = profile.export(tmp_path / "trace.json")
    doc = json.loads(open(path).read())
    tracks = validate_chrome_trace(doc)
    xs = chrome_spans(doc)
    assert len(xs) == len(profile.events)
    assert len(tracks) == len(profile.threads)
    names = {e["args"]["name"] for e in doc["traceEvents"] if e["ph"] == "M" and e["name"] == "thread_name"}
    assert any(n.startswith("worker") for n in names)
    by_id = {e["args"]["id"]: e for e in xs}
    for event in profile.events:
        x = by_id[event.id]
        assert x["name"] == event.name and x["cat"] == event.kind
        assert x["args"].get("parent") == event.parent_id
    pop = [e for e in xs if e["name"] == "dict.pop"]
    assert pop and pop[0]["args"]["exception"] is True
    assert any(e["args"].get("start_frame") for e in xs)
    assert any("file" in e["args"] and "line" in e["args"] for e in xs)


def validate_speedscope(doc):
    assert doc["$schema"] == "https://www.speedscope.app/file-format-schema.json"
    frames = doc["shared"]["frames"]
    assert all(isinstance(f["name"], str) for f in frames)
    assert 0 <= doc["activeProfileIndex"] < len(doc["profiles"])
    for prof in doc["profiles"]:
        assert prof["type"] == "evented" and prof["unit"] == "nanoseconds"
        assert prof["startValue"] <= prof["endValue"]
        stack, last = [], prof["startValue"]
        for ev in prof["events"]:
            assert ev["type"] in ("O", "C") and 0 <= ev["frame"] < len(frames)
            assert last <= ev["at"] <= prof["endValue"]
            last = ev["at"]
            if ev["type"] == "O":
                stack.append(ev["frame"])
            else:
                assert stack and stack.pop() == ev["frame"]
        assert stack == []


def test_speedscope_document_is_well_formed(profile, tmp_path):
    path = profile.export(tmp_path / "p.speedscope.json")
    doc = json.loads(open(path).read())
    validate_speedscope(doc)
    opens = sum(1 for p in doc["profiles"] for e in p["events"] if e["type"] == "O")
    assert opens == len(profile.events)
    assert {f["name"] for f in doc["shared"]["frames"]} >= {"fib", "sorting", "helper"}


def _ours_and_cprofile(tmp_path):
    with Profiler() as prof:
        workload_single()
    ours = pstats.Stats(prof.profile.export(tmp_path / "ours.pstats"))
    reference = cProfile.Profile()
    reference.runcall(workload_single)
    reference.dump_stats(str(tmp_path / "ref.pstats"))
    return ours, pstats.Stats(str(tmp_path / "ref.pstats"))


def workload_single():
    fib(8)
    helper(range(-3, 3))
    len("abc")


def test_pstats_file_loads_and_counts_match_cprofile(tmp_path):
    ours, ref = _ours_and_cprofile(tmp_path)
    here = os.path.abspath(__file__).rstrip("c")
    # the test's own frames are start frames in ours (they were running at start)
    mine = ("fib", "helper", "workload_single")
    ours_here = {k: v[:2] for k, v in ours.stats.items() if k[0] == here and k[2] in mine}
    ref_here = {k: v[:2] for k, v in ref.stats.items() if k[0] == here}
    assert ours_here == ref_here
    assert ours_here[(here, fib.__code__.co_firstlineno, "fib")] == (1, 67)
    ours_c = {k[2]: v[:2] for k, v in ours.stats.items() if k[0] == "~"}
    ref_c = {k[2]: v[:2] for k, v in ref.stats.items() if k[0] == "~"}
    for label in (
        "<built-in method builtins.len>",
        "<method 'append' of 'list' objects>",
        "<built-in method builtins.sorted>",
    ):
        assert ours_c[label] == ref_c[label]
    # callers: fib is called by itself 66 times and by workload_single once
    callers = ours.stats[(here, fib.__code__.co_firstlineno, "fib")][4]
    assert sorted(v[0] for v in callers.values()) == [1, 66]
    out = io.StringIO()
    ours.stream = out
    ours.sort_stats("cumulative").print_stats(5)
    ours.print_callers("fib")
    assert "fib" in out.getvalue()


def test_pstats_times_are_consistent(profile):
    stats = profile.to_pstats()
    for key, (cc, nc, tt, ct, callers) in stats.items():
        assert 0 < cc <= nc
        assert tt >= 0 and ct >= 0
        assert tt <= ct + 1e-6 or cc < nc
        for caller, (cnc, ccc, ctt, cct) in callers.items():
            assert caller in stats and ccc <= cnc <= nc


def test_text_summary(profile):
    text = profile.summary(limit=5)
    assert "Top 5 by self time" in text and "Top 5 by total time" in text
    lines = text.splitlines()
    assert len(lines[lines.index("Top 5 by self time") + 2 : lines.index("") + 8]) >= 5
    # (a test runner's own thread, xdist's, is recorded too when it runs Python meanwhile)
    names = [name for _, name in profile.thread_names]
    assert {threading.main_thread().name, "worker"} <= set(names)
    assert lines[0].startswith("framehook-profiler: ") and f"{len(names)} thread(s)" in lines[0]
    full = profile.summary(limit=1000).splitlines()
    fib_rows = [l.split() for l in full if l.split()[-2:-1] == ["fib"]]
    # fib(7) on the main thread (41 calls) and fib(5) on the worker (15), merged
    assert fib_rows and {int(r[0]) for r in fib_rows} == {56}


def test_svg_flame_graph(profile, tmp_path):
    path = profile.export(tmp_path / "flame.svg")
    root = ET.parse(path).getroot()
    ns = "{http://www.w3.org/2000/svg}"
    assert root.tag == ns + "svg"
    groups = root.findall(f"{ns}g")
    titles = [g.find(f"{ns}title").text for g in groups]
    assert titles[0].startswith("all: ")
    assert any(t.startswith("fib (") for t in titles)
    assert any(t.startswith("worker (") for t in titles)
    widths = [float(g.find(f"{ns}rect").get("width")) for g in groups]
    assert widths[0] == max(widths)
    assert "<script" not in open(path).read()


def test_svg_flame_graph_boxes_are_drawn_in_their_colours_by_a_real_renderer(profile, tmp_path):
    """cairosvg follows SVG 1.1, which has no hsl(): such fills came out black."""
    cairosvg = pytest.importorskip(
        "cairosvg", reason="cairosvg is not installed (the debug-build envs install only their subset's deps)"
    )
    from PIL import Image

    path = profile.export(tmp_path / "flame.svg")
    root = ET.parse(path).getroot()
    ns = "{http://www.w3.org/2000/svg}"
    image = Image.open(io.BytesIO(cairosvg.svg2png(url=str(path)))).convert("RGB")
    checked = 0
    for rect in (g.find(f"{ns}rect") for g in root.findall(f"{ns}g")):
        x, y, w, h = (float(rect.get(k)) for k in ("x", "y", "width", "height"))
        if w < 4:
            continue
        fill = rect.get("fill")
        want = tuple(int(fill[i : i + 2], 16) for i in (1, 3, 5))
        got = image.getpixel((int(x + w / 2), int(y + 2)))  # above the label's baseline
        assert max(abs(a - b) for a, b in zip(got, want)) <= 2, (fill, got)
        assert sum(got) > 300, got  # light boxes, where black text reads
        checked += 1
    assert checked >= 5


def test_export_formats_by_name_and_errors(profile, tmp_path):
    assert format_for("a.json") == "chrome"
    assert format_for("a.speedscope.json") == "speedscope"
    assert format_for("a.prof") == format_for("a.pstats") == "pstats"
    assert format_for("a.TXT") == "text" and format_for("a.svg") == "svg"
    with pytest.raises(ValueError, match="cannot tell the format"):
        format_for("a.bin")
    with pytest.raises(ValueError, match="unknown format"):
        format_for("a.json", "xml")
    with pytest.raises(ValueError, match="unknown format"):
        render(profile, "xml")
    written = profile.export(tmp_path / "out.bin", format="pstats")
    assert isinstance(marshal.loads(open(written, "rb").read()), dict)
    text = profile.export(tmp_path / "s.txt")
    assert open(text).read() == profile.summary()
    with pytest.raises(ExportError, match="cannot write the profile to") as info:
        profile.export(tmp_path / "missing-dir" / "x.json")
    assert isinstance(info.value, OSError)


def workload_both():
    fib(6)
    with record_function("sorting"):
        helper(range(-4, 4))
    try:
        {}.pop(1)
    except KeyError:
        pass
    sorted(gen_items(3), key=lambda v: -v)


def gen_items(n):
    for i in range(n):
        yield i


def exported_calls(backend, folder):
    """What each format holds about one run of workload_both, times left out."""
    with Profiler(backend=backend) as prof:
        workload_both()
    profile = prof.profile
    folder.mkdir()
    chrome = json.loads(open(profile.export(folder / "t.json")).read())
    speedscope = json.loads(open(profile.export(folder / "t.speedscope.json")).read())
    stats = pstats.Stats(profile.export(folder / "t.pstats")).stats
    frames = speedscope["shared"]["frames"]

    def flame(node):
        return (node.name, node.kind, tuple(flame(c) for c in sorted(node.children.values(), key=lambda n: n.name)))

    return {
        "chrome": sorted((e["name"], e["tid"]) for e in chrome_spans(chrome)),
        "speedscope": [
            (p["name"], [(e["type"], frames[e["frame"]]["name"]) for e in p["events"]]) for p in speedscope["profiles"]
        ],
        "pstats": {
            k: (cc, nc, {c: v[0] for c, v in callers.items()}) for k, (cc, nc, tt, ct, callers) in stats.items()
        },
        "flame graph": flame(merged_tree(profile)),
    }


@pytest.mark.skipif(not _tracer.HAVE_MONITORING, reason="one backend only before 3.12: sys.monitoring is 3.12+")
def test_both_backends_export_the_same_calls(tmp_path):
    by_profile = exported_calls("profile", tmp_path / "profile")
    by_monitoring = exported_calls("monitoring", tmp_path / "monitoring")
    for fmt in by_profile:
        assert by_profile[fmt] == by_monitoring[fmt], fmt
    here = os.path.abspath(__file__).rstrip("c")
    # the content compared is the workload's: fib(6) is 25 calls in the pstats of each
    assert by_profile["pstats"][(here, fib.__code__.co_firstlineno, "fib")][:2] == (1, 25)


def test_an_interrupted_export_leaves_no_file(profile, tmp_path, monkeypatch):
    """The file is written under a temporary name and renamed once complete: an export
    that fails half-way (here a KeyboardInterrupt after the first chunk) leaves nothing
    under the final name, and no temporary file either."""
    from framehook.profiler import _chrome

    real = _chrome.write_chrome

    def interrupted(prof, out, progress=None):
        out.write(b'{"traceEvents":[')
        raise KeyboardInterrupt

    monkeypatch.setattr(_chrome, "write_chrome", interrupted)
    with pytest.raises(KeyboardInterrupt):
        profile.export(tmp_path / "t.json")
    assert os.listdir(tmp_path) == []
    monkeypatch.setattr(_chrome, "write_chrome", real)
    written = profile.export(tmp_path / "t.json")
    assert os.listdir(tmp_path) == ["t.json"] and json.load(open(written))["traceEvents"]
