"""File names in profiles are shortened by the longest sys.path entry they start with."""

from __future__ import annotations

import importlib
import os
import sys

from framehook.profiler import Profiler
from framehook.profiler._names import PathShortener
from fhprof_helpers import calls_of


def test_the_longest_matching_entry_wins(tmp_path):
    lib = tmp_path / "lib"
    site = lib / "site-packages"
    shorten = PathShortener([str(lib), str(site)])
    assert shorten(str(site / "pkg" / "mod.py")) == os.path.join("pkg", "mod.py")
    assert shorten(str(lib / "os.py")) == "os.py"


def test_entries_match_whole_directories_only(tmp_path):
    shorten = PathShortener([str(tmp_path / "lib")])
    other = str(tmp_path / "library" / "x.py")
    assert shorten(other) == other


def test_names_outside_every_entry_are_kept(tmp_path):
    shorten = PathShortener([str(tmp_path / "a")])
    for name in ("<string>", "relative.py", str(tmp_path / "b" / "y.py")):
        assert shorten(name) == name


def test_an_empty_entry_stands_for_the_working_directory_and_slashes_do_not_matter(tmp_path):
    cwd = os.getcwd()
    assert PathShortener([""])(os.path.join(cwd, "here.py")) == "here.py"
    trailing = PathShortener([str(tmp_path) + os.sep])
    assert trailing(str(tmp_path / "t.py")) == "t.py"


def test_the_default_is_sys_path_at_construction(tmp_path, monkeypatch):
    monkeypatch.setattr(sys, "path", [str(tmp_path)])
    shorten = PathShortener()
    monkeypatch.setattr(sys, "path", [])
    assert shorten(str(tmp_path / "m.py")) == "m.py"


def test_profiles_carry_short_names_and_keep_full_paths(tmp_path, monkeypatch):
    root = tmp_path / "root"
    (root / "fhpkg_short").mkdir(parents=True)
    (root / "fhpkg_short" / "__init__.py").write_text("")
    (root / "fhpkg_short" / "work.py").write_text("def busy(n):\n    return sum(range(n))\n")
    # a shorter entry that also matches: the longer one must win
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.syspath_prepend(str(root))
    module = importlib.import_module("fhpkg_short.work")
    try:
        with Profiler() as prof:
            module.busy(10)
    finally:
        sys.modules.pop("fhpkg_short.work", None)
        sys.modules.pop("fhpkg_short", None)
    profile = prof.profile
    [event] = calls_of(profile, module.busy)
    short = os.path.join("fhpkg_short", "work.py")
    assert event.function.filename == short
    assert event.function.path == module.__file__
    chrome = [e for e in profile.to_chrome()["traceEvents"] if e.get("args", {}).get("id") == event.id]
    assert chrome[0]["args"]["file"] == short
    # pstats keys keep the real path, so tools that open the source still find it
    assert any(key[0] == module.__file__ and key[2] == "busy" for key in profile.to_pstats())
