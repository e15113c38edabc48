"""The real-code tier's classification, record capping and source checks (no network)."""

from __future__ import annotations

import hashlib
import io
import os
import sys
import tarfile
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import classify  # noqa: E402
import record  # noqa: E402
import sources  # noqa: E402

VERSION_DIFF = "return value[str 'python_version']: recorded str '3.11', replayed str '3.9'"


def verdict(**given):
    args = dict(
        verdict="MISMATCH",
        diffs=[],
        errors=[],
        missing=[],
        recorded_on="3.11.7",
        replayed_on="3.9.18",
    )
    args.update(given)
    return classify.classify("packaging:packaging.markers:default_environment", **args)


def test_match_is_not_classified():
    assert verdict(verdict="MATCH") == classify.Verdict(classify.MATCH, "")


def test_placeholders_make_a_record_not_recordable_whatever_differs():
    got = verdict(
        missing=["args[0]"],
        placeholder_kinds=[("re.Pattern", "no codec registered for this type")],
        diffs=["return value: recorded int 1, replayed int 2"],
    )
    assert got == classify.Verdict(classify.NOT_RECORDABLE, "re.Pattern: no codec registered for this type")


def test_test_defined_classes_are_one_cause():
    kinds = [("tests.CacheTestMixin.test_missing.<locals>.DefaultCache", "no codec registered for this type")]
    got = verdict(missing=["args[0]"], placeholder_kinds=kinds)
    assert got.cause == "a class defined in the tests: no codec registered for this type"


def test_modes_that_disagree_are_a_defect_even_with_placeholders():
    got = verdict(
        missing=["args[0]"],
        placeholder_kinds=[("re.Pattern", "no codec registered for this type")],
        diffs=["return value: recorded int 1, replayed int 2"],
        modes={"plain": "match", "shadow": "mismatch", "translator": "skip", "profiled": "match"},
    )
    assert got == classify.Verdict(classify.DEFECT, "modes disagree: plain match, shadow mismatch, profiled match")


def test_modes_that_agree_keep_the_placeholder_class():
    got = verdict(
        missing=["args[0]"],
        placeholder_kinds=[("re.Pattern", "no codec registered for this type")],
        modes={"plain": "mismatch", "shadow": "mismatch", "translator": "skip"},
    )
    assert got.cls == classify.NOT_RECORDABLE


def test_the_running_version_is_a_named_cpython_difference():
    diffs = [
        VERSION_DIFF,
        "return value[str 'python_full_version']: recorded str '3.11.7', replayed str '3.9.18'",
        "return value: recorded str 'cp311', replayed str 'cp39'",
        "return value: recorded str '311', replayed str '39'",
    ]
    assert verdict(diffs=diffs) == classify.Verdict(classify.CPYTHON_DIFFERENCE, "running-interpreter-version")


def test_a_version_not_the_interpreters_own_is_a_defect():
    # a test mocked the version (3.10.0): the replay cannot reproduce that, and it is not
    # what this CPython or the recording one would say
    diffs = ["return value[str 'python_full_version']: recorded str '3.10.0', replayed str '3.9.18'", VERSION_DIFF]
    got = verdict(diffs=diffs)
    assert got.cls == classify.DEFECT
    assert got.cause == diffs[0]  # the unexplained one, not the first line


def test_mixed_spellings_are_not_explained():
    got = verdict(diffs=["return value: recorded str '3.11', replayed str '39'"])
    assert got.cls == classify.DEFECT


def test_no_named_difference_on_the_recording_interpreter():
    got = verdict(diffs=["return value: recorded str '3.11', replayed str '3.11'"], replayed_on="3.11.7")
    assert got.cls == classify.DEFECT


def test_a_mode_error_is_never_explained_by_a_known_difference():
    got = verdict(diffs=[VERSION_DIFF], errors=["shadow: shadow mode failed: RuntimeError: boom"])
    assert got == classify.Verdict(classify.DEFECT, "shadow: shadow mode failed: RuntimeError: boom")


def test_another_library_version_is_its_own_class():
    got = verdict(
        diffs=["return value: recorded int 1, replayed int 2"], recorded_library="1.0", replayed_library="1.1"
    )
    assert got == classify.Verdict(classify.LIBRARY_VERSION, "recorded with 1.0, replayed with 1.1")


def test_anything_else_is_a_defect_with_its_first_text():
    got = verdict(verdict="ERROR", errors=["RecordFormatError: python: claims Python 3.10.0 with the bytecode magic"])
    assert got == classify.Verdict(
        classify.DEFECT, "RecordFormatError: python: claims Python 3.10.0 with the bytecode magic"
    )
    assert verdict(verdict="NOT RUN").cause == "no mode ran"


def test_normalize_takes_out_addresses_paths_and_lines():
    text = "object at 0x7f00deadbeef in /root/.cache/x/src/pkg/mod.py, line 12"
    assert classify.normalize(text) == "object at 0x… in …/mod.py, line N"
    assert len(classify.normalize("x" * 500, 40)) == 40


def test_placeholders_are_found_once_each_anywhere_in_a_document():
    doc = {
        "call": {"t": "tuple", "items": [{"t": "missing", "type": "re.Pattern", "why": "no codec"}]},
        "outcome": [{"t": "missing", "type": "re.Pattern", "why": "no codec"}, {"t": "int", "v": 1}],
        "globals": {"x": {"t": "missing", "type": "builtins.function", "why": "not importable"}},
    }
    assert classify.placeholders(doc) == [("re.Pattern", "no codec"), ("builtins.function", "not importable")]


def test_spaced_keeps_first_and_last_evenly():
    assert record.spaced(5, 20) == [0, 1, 2, 3, 4]
    assert record.spaced(100, 5) == [0, 25, 50, 74, 99]
    assert record.spaced(7, 1) == [0]


def test_cap_records_deletes_the_extras_by_call_order(tmp_path):
    for i in range(12):
        (tmp_path / f"pkg.mod.f.{i}.fhrec").write_text("x")
    (tmp_path / "pkg.mod.g.0.fhrec").write_text("x")
    counts = record.cap_records(tmp_path, ("pkg.mod:f", "pkg.mod:g", "pkg.mod:h"), 4)
    assert counts == {
        "pkg.mod:f": {"recorded": 12, "kept": 4},
        "pkg.mod:g": {"recorded": 1, "kept": 1},
        "pkg.mod:h": {"recorded": 0, "kept": 0},
    }
    left = sorted(p.name for p in tmp_path.glob("pkg.mod.f.*"))
    # numerically 0, 4, 7, 11 (index 10 sorts before 2 by name: the order must be numeric)
    assert left == ["pkg.mod.f.0.fhrec", "pkg.mod.f.11.fhrec", "pkg.mod.f.4.fhrec", "pkg.mod.f.7.fhrec"]


def _library(tmp_path, data: bytes, sha: str) -> sources.Library:
    (tmp_path / "archives").mkdir(exist_ok=True)
    (tmp_path / "archives" / "demo-1.0.tar.gz").write_bytes(data)
    return sources.Library("demo", "1.0", "demo-1.0.tar.gz", sha, "src", ("tests",), (), ("demo:f",))


def _tarball(members: dict) -> bytes:
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w:gz") as tar:
        for name, text in members.items():
            info = tarfile.TarInfo(name)
            info.size = len(text)
            tar.addfile(info, io.BytesIO(text))
    return buf.getvalue()


def test_a_cached_archive_with_the_pinned_hash_is_unpacked(tmp_path, monkeypatch):
    monkeypatch.setenv("FRAMEHOOK_REALCODE_CACHE", str(tmp_path))
    data = _tarball({"demo-1.0/src/demo.py": b"def f():\n    return 1\n"})
    lib = _library(tmp_path, data, hashlib.sha256(data).hexdigest())
    assert sources.import_path(lib) == tmp_path / "src" / "demo-1.0" / "src"
    assert (sources.import_path(lib) / "demo.py").read_text().startswith("def f")


def test_an_archive_with_another_hash_is_fetched_again_and_refused(tmp_path, monkeypatch):
    monkeypatch.setenv("FRAMEHOOK_REALCODE_CACHE", str(tmp_path))
    data = _tarball({"demo-1.0/src/demo.py": b"x = 1\n"})
    lib = _library(tmp_path, data, "0" * 64)

    def fake_download(lib, dest):  # the index serves the same (wrong) bytes
        dest.write_bytes(data)

    monkeypatch.setattr(sources, "_download", fake_download)
    with pytest.raises(sources.FetchError, match="is not the pinned"):
        sources.source_tree(lib)
    assert not (tmp_path / "archives" / "demo-1.0.tar.gz").exists()


def test_a_member_outside_the_tree_is_refused(tmp_path, monkeypatch):
    monkeypatch.setenv("FRAMEHOOK_REALCODE_CACHE", str(tmp_path))
    data = _tarball({"../evil.py": b"x = 1\n"})
    lib = _library(tmp_path, data, hashlib.sha256(data).hexdigest())
    with pytest.raises(sources.FetchError, match="refusing the member"):
        sources.source_tree(lib)
    assert not (tmp_path.parent / "evil.py").exists()


def test_a_failed_download_names_the_archive(tmp_path, monkeypatch):
    monkeypatch.setenv("FRAMEHOOK_REALCODE_CACHE", str(tmp_path))
    # no index and no configuration: the download fails at once, without the network
    monkeypatch.setenv("PIP_CONFIG_FILE", os.devnull)
    monkeypatch.setenv("PIP_NO_INDEX", "1")
    monkeypatch.setenv("PIP_FIND_LINKS", str(tmp_path))
    lib = sources.Library("no-such-dist-framehook", "1.0", "x-1.0.tar.gz", "0" * 64, ".", (), (), ())
    with pytest.raises(
        sources.FetchError, match=r"downloading x-1.0.tar.gz \(no-such-dist-framehook==1.0\) with pip failed"
    ):
        sources.archive(lib)


def test_every_library_is_pinned_and_lists_10_to_25_functions():
    libs = sources.libraries()
    assert len(libs) >= 3
    for lib in libs:
        assert len(lib.sha256) == 64 and int(lib.sha256, 16) >= 0
        assert lib.archive == f"{lib.name}-{lib.version}.tar.gz"
        assert 10 <= len(lib.targets) <= 25, lib.name
        assert all(":" in t for t in lib.targets)
        assert all("==" in r for r in lib.test_requires)


def test_a_marker_flipping_on_another_minor_version_is_named():
    line = "return value: recorded True, replayed False"
    args = dict(verdict="MISMATCH", diffs=[line], errors=[], missing=[], recorded_on="3.11.7")
    got = classify.classify("packaging.markers:Marker.evaluate", replayed_on="3.12.1", **args)
    assert got == classify.Verdict(classify.CPYTHON_DIFFERENCE, "marker-on-interpreter-version")
    # the same flip on the recording minor version, or in another function, stays a defect
    assert classify.classify("packaging.markers:Marker.evaluate", replayed_on="3.11.9", **args).cls == classify.DEFECT
    assert classify.classify("packaging.tags:sys_tags", replayed_on="3.12.1", **args).cls == classify.DEFECT
