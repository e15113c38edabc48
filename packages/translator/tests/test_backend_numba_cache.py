"""The numba backend's on-disk cache when it is not usable, and when numba is not: a cache
directory that cannot be written (a file in its place) or holds garbage (numba's index,
framehook's markers) is ignored with ONE NumbaCacheWarning per process and the graph still
compiles; a changed graph, dtype or numba version misses the cache; a numba that is
missing, too old or fails to import leaves every graph eager with a one-line FH016 note."""

from __future__ import annotations

import glob
import os
import sys
import types
import warnings
from typing import Any, List

import numpy as np
import pytest

numba = pytest.importorskip("numba", reason="numba is not installed for this interpreter")
import framehook.translator as ft  # noqa: E402
from framehook.translator.backends import numba as bnb  # noqa: E402
from framehook.translator.backends.numba import availability, diskcache  # noqa: E402
from test_backend_numba import captured_graph, numba_cache  # noqa: E402,F401 - the cache fixture


@pytest.fixture
def notes() -> Any:
    seen: List[bnb.NumbaNote] = []

    def verdicts(note: bnb.NumbaNote) -> None:  # what became of each graph, not that it is pending
        if note.status != "pending":
            seen.append(note)

    bnb.add_note_observer(verdicts)
    yield seen
    bnb.remove_note_observer(verdicts)


def poly(x):
    return np.sqrt(x * x + 1.0) * 0.25 + x


def other(x):
    return np.sqrt(x * x + 2.0) * 0.25 + x


X = np.linspace(-2.0, 2.0, 9)


@pytest.fixture
def cache_at(monkeypatch: Any) -> Any:
    """Point the cache somewhere (fresh warnings state), compile in the foreground."""

    def use(path: Any) -> None:
        monkeypatch.setenv("FRAMEHOOK_NUMBA_CACHE_DIR", str(path))
        diskcache._reset_for_tests()

    with ft.config.patch(numba_background=False, numba_measure_calls=0):
        yield use
    ft.reset()
    diskcache._reset_for_tests()


def run(*fns: Any) -> List[Any]:
    """Each function once under numba (correct results), and the cache warnings raised."""
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        for fn in fns:
            ft.reset()
            np.testing.assert_allclose(ft.optimize("numba")(fn)(X), fn(X))
    ft.reset()
    return [w for w in caught if issubclass(w.category, bnb.NumbaCacheWarning)]


def test_a_file_where_the_cache_directory_should_be_is_ignored_with_one_warning(tmp_path, cache_at, notes):
    blocker = tmp_path / "a-file"
    blocker.write_text("not a directory")
    cache_at(blocker / "numba")  # under a regular file: cannot be created, even as root
    caught = run(poly, other)
    assert len(caught) == 1 and "cannot be written" in str(caught[0].message), [str(w.message) for w in caught]
    assert [(n.status, n.cache) for n in notes] == [("compiled", ""), ("compiled", "")]
    cache_at(blocker)  # the cache directory is itself a file
    assert len(run(poly)) == 1
    assert blocker.read_text() == "not a directory"


def test_an_unwritable_cache_directory_is_ignored(tmp_path, cache_at, notes):
    if os.geteuid() == 0:
        pytest.skip("root writes into read-only directories (the file-in-the-way test covers it)")
    tmp_path.chmod(0o500)
    try:
        cache_at(tmp_path / "numba")
        assert len(run(poly)) == 1 and [n.status for n in notes] == ["compiled"]
    finally:
        tmp_path.chmod(0o700)


def test_a_corrupt_numba_index_is_ignored_with_one_warning(tmp_path, cache_at, notes):
    cache_at(tmp_path)
    assert run(poly, other) == []
    indexes = glob.glob(str(tmp_path / "**" / "*.nbi"), recursive=True)
    assert len(indexes) == 2
    for path in indexes:
        with open(path, "wb") as f:
            f.write(b"garbage\x00\xff")
    diskcache._reset_for_tests()
    caught = run(poly, other)
    assert len(caught) == 1 and "cannot read its cache entry" in str(caught[0].message)
    assert [n.status for n in notes] == ["compiled"] * 4


def test_corrupt_framehook_markers_are_ignored_with_one_warning(tmp_path, cache_at, notes):
    cache_at(tmp_path)
    run(poly)
    (checked,) = [p for p in os.listdir(tmp_path) if p.endswith(".checked")]
    (tmp_path / checked).write_bytes(b"\xff\xfe garbage")
    stem = checked.rsplit(".", 1)[0]
    (tmp_path / f"{stem}.refused").write_text("garbage: not a refusal")
    (tmp_path / f"{checked.split('.')[0]}.slow").write_text("garbage: not over any budget")
    diskcache._reset_for_tests()
    caught = run(poly, poly)
    assert len(caught) == 1 and "corrupt" in str(caught[0].message)
    assert [n.status for n in notes] == ["compiled"] * 3
    # the checked kernel's markers were written again, sound: a later run loads it quietly
    assert run(poly) == [] and notes[-1].cache == "hit"


def test_the_key_misses_for_another_graph_dtype_or_numba_version(monkeypatch):
    f64 = (np.ones(3),)
    i64 = (np.ones(3, np.int64),)
    key = bnb.lower(captured_graph(poly, *f64), f64).key
    assert bnb.lower(captured_graph(other, *f64), f64).key != key
    assert bnb.lower(captured_graph(poly, *i64), i64).key != key
    monkeypatch.setattr(numba, "__version__", "0.99.0")
    assert bnb.lower(captured_graph(poly, *f64), f64).key != key
    monkeypatch.undo()
    assert bnb.lower(captured_graph(poly, *f64), f64).key == key


# ------------------------------------------------------------------ numba unusable


def one_fallback(seen: List[Any], fn: Any = poly) -> str:
    ft.reset()
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("error")  # no warning, no exception: a note
            np.testing.assert_allclose(ft.optimize("numba")(fn)(X), fn(X))
    finally:
        assert bnb.wait_for_compiles(300)  # a background compile's note
        ft.reset()
    assert [n.code for n in seen] == ["FH016"], [str(n) for n in seen]
    assert "\n" not in str(seen[0])
    return seen[0].reason


def test_missing_numba_runs_eager_with_a_one_line_note(monkeypatch, notes):
    monkeypatch.setitem(sys.modules, "numba", None)
    assert "not installed" in one_fallback(notes) and "framehook-translator[numba]" in notes[0].reason


def test_too_old_a_numba_runs_eager_with_a_one_line_note(monkeypatch, notes):
    monkeypatch.setattr(numba, "__version__", "0.50.1")
    reason = one_fallback(notes)
    assert "numba 0.50.1 is older than" in reason
    assert ".".join(map(str, availability.MIN_NUMBA_VERSION)) in reason


class _BrokenFinder:
    """Makes ``import numba`` fail as a broken install does (not with ImportError)."""

    def find_spec(self, name: str, path: Any = None, target: Any = None) -> Any:
        if name == "numba":
            raise OSError("libllvmlite.so: cannot open shared object file")
        return None


def test_a_numba_failing_to_import_runs_eager_with_a_one_line_note(monkeypatch, notes):
    monkeypatch.delitem(sys.modules, "numba")
    monkeypatch.setattr(sys, "meta_path", [_BrokenFinder(), *sys.meta_path])
    reason = one_fallback(notes)
    assert reason.startswith("numba fails to import (OSError: libllvmlite.so")


def test_explain_shows_the_missing_numba_note(monkeypatch):
    monkeypatch.setitem(sys.modules, "numba", types.ModuleType("numba"))  # no __version__: unusable
    out = ft.explain(poly, backend="numba")(X)
    np.testing.assert_allclose(out.result, poly(X))
    assert [n.code for n in out.backend_notes] == ["FH016"] and "FH016" in str(out)
    ft.reset()


def test_a_numba_failing_only_when_the_kernel_compiles_runs_eager(monkeypatch, notes, cache_at, tmp_path):
    # the metadata says numba is there; importing it (with the compile) fails
    from framehook.translator.backends.numba import kernel

    cache_at(tmp_path)
    monkeypatch.setattr(kernel, "numba_or_reason", lambda: (None, "numba fails to import (OSError: no llvm)"))
    for background in (False, True):
        with ft.config.patch(numba_background=background):
            notes.clear()
            assert one_fallback(notes) == "numba fails to import (OSError: no llvm)"


def test_numba_version_is_read_from_the_dist_info_beside_the_package(tmp_path, monkeypatch):
    # importlib.metadata scans every sys.path entry (10-15 ms of a first call); the
    # dist-info directory pip writes beside the package says the same
    site = tmp_path / "site"
    (site / "numba").mkdir(parents=True)
    spec = types.SimpleNamespace(submodule_search_locations=[str(site / "numba")])
    assert availability._dist_info_version(spec) is None  # none there: importlib.metadata decides
    (site / "numba-0.61.2.dist-info").mkdir()
    (site / "numba_extras-1.0.dist-info").mkdir()  # another package: not numba's
    assert availability._dist_info_version(spec) == "0.61.2"
    (site / "numba-0.59.0.dist-info").mkdir()  # a stale second install: ambiguous
    assert availability._dist_info_version(spec) is None
    assert availability._dist_info_version(types.SimpleNamespace(submodule_search_locations=None)) is None
    # and the real one agrees with importlib.metadata
    from importlib import metadata
    import importlib.util

    real = availability._dist_info_version(importlib.util.find_spec("numba"))
    assert real in (None, metadata.version("numba"))
