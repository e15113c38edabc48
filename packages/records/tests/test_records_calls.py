"""record_calls(): functions, modules and packages recorded through the runtime's hook or
by patching, generator and coroutine targets, the per-function cap, and a suite whose
per-test outcomes are the same with recording on."""

from __future__ import annotations

import asyncio
import importlib
import inspect
import sys

import pytest

from framehook.records import load, replay
from framehook.records.calls import CallRecording, observer_factory, record_calls

pytest_plugins = ["pytester"]

HAS_HOOK = observer_factory() is not None
THROUGH = [
    pytest.param("hook", marks=pytest.mark.skipif(not HAS_HOOK, reason="needs framehook-runtime")),
    "patch",
]

PKG_INIT = """
from .more import chunked, Box
from . import more
"""

PKG_MORE = """
_marker = object()

def chunked(items, n):
    return [list(items[i:i + n]) for i in range(0, len(items), n)]

def first(items, default=_marker):
    if items:
        return items[0]
    if default is _marker:
        raise ValueError("empty")
    return default

def total(items):
    return sum(len(c) for c in chunked(items, 2))

def windows(items, n):
    for i in range(len(items) - n + 1):
        yield tuple(items[i:i + n])
    return len(items)

def failing_gen():
    yield 1
    raise KeyError("gone")

async def add(a, b):
    return a + b

async def countdown(n):
    while n:
        yield n
        n -= 1

class Box:
    def __init__(self, v):
        self.v = v

    def get(self):
        return self.v

    @staticmethod
    def make(v):
        return Box(v)
"""

PKG_LATE = """
def late(x):
    return x * 10
"""


@pytest.fixture
def pkg(tmp_path, monkeypatch):
    """A fresh package ``calpkg`` on sys.path (removed from sys.modules afterwards)."""
    root = tmp_path / "src"
    (root / "calpkg").mkdir(parents=True)
    (root / "calpkg" / "__init__.py").write_text(PKG_INIT)
    (root / "calpkg" / "more.py").write_text(PKG_MORE)
    (root / "calpkg" / "late.py").write_text(PKG_LATE)
    monkeypatch.syspath_prepend(str(root))
    for name in [m for m in sys.modules if m == "calpkg" or m.startswith("calpkg.")]:
        del sys.modules[name]
    module = importlib.import_module("calpkg")
    yield module
    for name in [m for m in sys.modules if m == "calpkg" or m.startswith("calpkg.")]:
        del sys.modules[name]


def _files(directory, stem):
    return sorted(directory.glob(f"{stem}.*.fhrec"))


@pytest.mark.parametrize("through", THROUGH)
def test_a_function_is_caught_under_every_name(pkg, tmp_path, through):
    more = pkg.more
    chunked, code = more.chunked, more.chunked.__code__
    alias = {"f": more.chunked}  # a reference no attribute patch reaches
    with record_calls(more.chunked, tmp_path / "r", through=through) as rec:
        assert pkg.chunked([1, 2, 3], 2) == [[1, 2], [3]]
        assert more.chunked("abcd", 3) == [["a", "b", "c"], ["d"]]
        assert alias["f"]([1], 1) == [[1]]
        # identity: one object under every name, its signature and attributes
        assert pkg.chunked is more.chunked
        assert list(inspect.signature(more.chunked).parameters) == ["items", "n"]
        if through == "hook":
            assert more.chunked is chunked and more.chunked.__code__ is code
    assert rec.mechanism == through
    files = _files(tmp_path / "r", "calpkg.more.chunked")
    assert len(files) == (3 if through == "hook" else 2)  # a patch misses the dict's reference
    assert more.chunked is chunked and pkg.chunked is chunked and more.chunked.__code__ is code
    for path in files:
        assert load(path).label.startswith("calpkg.more:chunked#")
        assert replay(path, modes=("plain",)).ok


@pytest.mark.parametrize("through", THROUGH)
def test_exceptions_and_sentinels_reach_the_caller(pkg, tmp_path, through):
    with record_calls(pkg.more.first, tmp_path, through=through) as rec:
        with pytest.raises(ValueError, match="empty") as info:
            pkg.more.first([])
        assert pkg.more.first([], None) is None
        assert pkg.more.first([5]) == 5
    assert len(rec.records) == 3 and not rec.errors
    # the traceback starts at the caller and ends in the function's own line
    assert info.traceback[-1].frame.code.name == "first"


@pytest.mark.parametrize("through", THROUGH)
def test_only_the_outermost_call_is_recorded(pkg, tmp_path, through):
    more = pkg.more
    with record_calls([more.total, more.chunked], tmp_path, through=through) as rec:
        assert more.total([1, 2, 3]) == 3  # calls chunked inside: not recorded
        assert more.chunked([1], 1) == [[1]]
    assert rec.counts() == {"calpkg.more:total": (1, 1), "calpkg.more:chunked": (1, 1)}


@pytest.mark.parametrize("through", THROUGH)
def test_methods_and_staticmethods(pkg, tmp_path, through):
    Box = pkg.more.Box
    static = vars(Box)["make"]
    with record_calls([Box.get, Box.make], tmp_path, through=through) as rec:
        assert Box.make(3).get() == 3
        assert Box(4).get() == 4
    assert sorted(rec.counts()) == ["calpkg.more:Box.get", "calpkg.more:Box.make"]
    assert vars(Box)["make"] is static


@pytest.mark.parametrize("through", THROUGH)
def test_generator_functions_yield_and_return_what_they_did(pkg, tmp_path, through):
    more = pkg.more
    with record_calls([more.windows, more.failing_gen], tmp_path, through=through) as rec:
        assert inspect.isgeneratorfunction(more.windows)
        gen = more.windows([1, 2, 3], 2)
        assert list(gen) == [(1, 2), (2, 3)]

        def returned():
            return (yield from more.windows("abc", 3))

        outer = returned()
        assert next(outer) == ("a", "b", "c")
        with pytest.raises(StopIteration) as stop:
            next(outer)
        assert stop.value.value == 3
        failing = more.failing_gen()
        assert next(failing) == 1
        with pytest.raises(KeyError):
            next(failing)
    assert rec.counts() == {"calpkg.more:windows": (2, 2), "calpkg.more:failing_gen": (1, 1)}
    for path in rec.records:
        assert replay(path, modes=("plain",)).ok
    # generators are never seen by the hook at their start: they are patched
    assert rec.patched == {"calpkg.more:windows", "calpkg.more:failing_gen"}


@pytest.mark.parametrize("through", THROUGH)
def test_coroutine_functions(pkg, tmp_path, through):
    more = pkg.more

    async def main():
        return await more.add(2, 3)

    with record_calls(more.add, tmp_path, through=through) as rec:
        assert inspect.iscoroutinefunction(more.add)
        assert asyncio.run(main()) == 5
    assert len(rec.records) == 1
    assert replay(rec.records[0], modes=("plain",)).ok


@pytest.mark.parametrize("through", THROUGH)
def test_a_package_records_each_function_up_to_the_cap(pkg, tmp_path, through):
    more = pkg.more
    with record_calls("calpkg", tmp_path, cap=2, through=through) as rec:
        for i in range(5):
            more.chunked(list(range(i)), 2)  # five distinct inputs: two records
        for _ in range(5):
            more.first([7])  # the same input five times: one record
        assert list(more.windows([1, 2], 1)) == [(1,), (2,)]  # a generator: left alone
        late = importlib.import_module("calpkg.late")  # loaded after recording started
        assert late.late(2) == 20
    counts = rec.counts()
    assert counts["calpkg.more:chunked"][1] == 2
    assert counts["calpkg.more:first"] == (5, 1)
    assert "calpkg.more:windows" not in counts
    # the hook sees code loaded later; patching sees what was loaded when it started
    assert ("calpkg.late:late" in counts) == (through == "hook")
    assert len(_files(tmp_path, "calpkg.more.chunked")) == 2


@pytest.mark.parametrize("through", THROUGH)
def test_async_generator_functions(pkg, tmp_path, through):
    more = pkg.more

    async def main():
        return [n async for n in more.countdown(3)]

    with record_calls(more.countdown, tmp_path, through=through) as rec:
        assert inspect.isasyncgenfunction(more.countdown)
        assert asyncio.run(main()) == [3, 2, 1]
    assert rec.counts() == {"calpkg.more:countdown": (1, 1)}


def test_a_failing_recorder_leaves_the_call_alone(pkg, tmp_path, monkeypatch):
    import framehook.records.reader as reader
    import framehook.records.recorder as recorder

    more = pkg.more
    with record_calls(more.chunked, tmp_path / "r") as rec:
        monkeypatch.setattr(reader, "dumps", lambda r: 1 / 0)
        assert more.chunked([1, 2], 1) == [[1], [2]]  # recorded, not written
        monkeypatch.setattr(recorder, "record_with_outcome", lambda *a, **k: 1 / 0)
        assert more.chunked([1, 2, 3], 2) == [[1, 2], [3]]  # not recorded: made plainly
    assert rec.records == [] and list((tmp_path / "r").iterdir()) == []
    assert [line.split(": ", 1)[1] for line in rec.errors] == [
        "writing: ZeroDivisionError: division by zero",
        "ZeroDivisionError: division by zero",
    ]


def test_a_recording_is_entered_once_and_takes_no_targets_while_entered(pkg, tmp_path):
    rec = CallRecording(tmp_path)
    rec.add_function(pkg.more.first)
    with rec:
        with pytest.raises(RuntimeError):
            rec.__enter__()
        with pytest.raises(RuntimeError):
            rec.add_function(pkg.more.chunked)
        with pytest.raises(RuntimeError):
            rec.add_package("calpkg")
    with pytest.raises(TypeError):
        rec.add_function(len)
    with pytest.raises(ValueError):
        CallRecording(tmp_path, through="magic")


def test_without_an_observer_the_hook_is_refused(monkeypatch, tmp_path):
    import framehook.records.calls as calls

    monkeypatch.setattr(calls, "observer_factory", lambda: None)
    assert CallRecording(tmp_path).mechanism == "patch"
    with pytest.raises(ValueError, match="no call observer"):
        CallRecording(tmp_path, through="hook")


# -- a suite with and without recording: the same per-test outcomes ----------------------

SUITE = '''
import inspect
import pytest
import calpkg
import calpkg.more
from calpkg.more import chunked

CODE = calpkg.more.chunked.__code__

def test_identity():
    assert calpkg.chunked is calpkg.more.chunked is chunked

def test_code_is_untouched():
    assert calpkg.more.chunked.__code__ is CODE
    assert calpkg.more.chunked.__code__.co_name == "chunked"

def test_signature():
    assert str(inspect.signature(calpkg.more.first)) == "(items, default=<object object at %s>)" % (
        hex(id(calpkg.more._marker)))

def test_values():
    assert calpkg.more.total([1, 2, 3, 4, 5]) == 5
    assert calpkg.more.first([], 0) == 0

def test_raises():
    with pytest.raises(ValueError):
        calpkg.more.first([])

def test_generator():
    gen = calpkg.more.windows([1, 2, 3], 2)
    assert next(gen) == (1, 2)

def test_method():
    assert calpkg.more.Box.make(1).get() == 1

def test_fails():
    assert calpkg.more.chunked([1], 1) == []
'''


def _outcomes(result) -> dict:
    out = {}
    for line in result.stdout.lines:
        if "::test_" in line and (" PASSED" in line or " FAILED" in line or " ERROR" in line):
            name, _, rest = line.partition(" ")
            out[name] = rest.split()[0]
    return out


def _plugin_args() -> list[str]:
    from importlib import metadata

    eps = metadata.entry_points()
    group = eps.select(group="pytest11") if hasattr(eps, "select") else eps.get("pytest11", [])
    if any(ep.value == "framehook.records.pytest_plugin" for ep in group):
        return []
    return ["-p", "framehook.records.pytest_plugin"]


@pytest.mark.parametrize("through", THROUGH)
def test_the_suite_outcome_is_the_same_with_recording_on(pytester, through):
    pytester.mkpydir("calpkg")
    pytester.path.joinpath("calpkg", "__init__.py").write_text(PKG_INIT)
    pytester.path.joinpath("calpkg", "more.py").write_text(PKG_MORE)
    pytester.makepyfile(test_suite=SUITE)
    base = ("-p", "no:cacheprovider", "-v", *_plugin_args())
    plain = pytester.runpytest_subprocess(*base)
    recorded = pytester.runpytest_subprocess(
        *base,
        "--framehook-record=calpkg",
        "--framehook-record=calpkg.more:windows",
        f"--framehook-record-through={through}",
        "--framehook-record-dir=recs",
    )
    expected = _outcomes(plain)
    assert len(expected) == 8 and list(expected.values()).count("FAILED") == 1
    if through == "patch":
        # patching replaces the function object: the identity of a module attribute with a
        # name imported before is kept, but __code__ is the wrapper's
        expected["test_suite.py::test_code_is_untouched"] = "FAILED"
    assert _outcomes(recorded) == expected
    assert list(pytester.path.joinpath("recs").glob("calpkg.more.*.fhrec"))
    recorded.stdout.fnmatch_lines(["framehook: * records written to recs"])


def test_record_cap_option_is_checked(pytester):
    pytester.makepyfile(test_x="def test_x():\n    pass\n")
    result = pytester.runpytest(*_plugin_args(), "--framehook-record=os.path", "--framehook-record-cap=0")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["ERROR: --framehook-record-cap: expected a whole number of at least 1, got '0'"])
