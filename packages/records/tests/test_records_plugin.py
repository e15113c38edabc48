"""The pytest plugin against a small sample project (run in a subprocess by pytester)."""

from __future__ import annotations

import sys

import pytest

from framehook.records import replay
from framehook.records.modes import available

pytest_plugins = ["pytester"]

try:  # imported here, not first inside a pytester run, which would unload numpy afterwards
    from framehook.translator import optimize, reset  # noqa: F401

    HAS_TRANSLATOR = True
except ImportError:
    HAS_TRANSLATOR = False  # what --framehook-optimize needs (not the replay-mode entry point)

SAMPLE_LIB = '''
def area(w, h):
    return w * h

def scaled(values, k=2):
    return [area(v, k) for v in values]
'''

SAMPLE_TESTS = '''
import samplelib

def test_area():
    assert samplelib.area(2, 3) == 6

def test_scaled():
    assert samplelib.scaled([1, 2]) == [2, 4]

def test_fails_always():
    assert samplelib.area(1, 1) == 2
'''


def unavailable(mode: str):
    """Why the package behind ``mode`` is absent here, or None."""
    return available()[1].get(mode)


def _plugin_args() -> list[str]:
    """Load the plugin explicitly unless its entry point is installed (loading it twice fails)."""
    from importlib import metadata

    try:
        eps = metadata.entry_points()
        group = eps.select(group="pytest11") if hasattr(eps, "select") else eps.get("pytest11", [])
        if any(ep.value == "framehook.records.pytest_plugin" for ep in group):
            return []
    except Exception:
        pass
    return ["-p", "framehook.records.pytest_plugin"]


@pytest.fixture
def project(pytester):
    # In-process runs, so the plugin's lines count towards coverage.
    pytester.makepyfile(samplelib=SAMPLE_LIB, test_sample=SAMPLE_TESTS)
    pytester.syspathinsert()
    return pytester


def test_plugin_is_inert_without_options(project):
    result = project.runpytest(*_plugin_args(), "-p", "no:cacheprovider")
    result.assert_outcomes(passed=2, failed=1)
    # the header may list the installed plugin; its own report lines must not appear
    lines = result.stdout.str().splitlines()
    assert not [line for line in lines if line.startswith(("framehook shadow", "framehook optimize", "framehook:"))]


def test_record_option_writes_replayable_records(project):
    out_dir = project.path / "recs"
    result = project.runpytest(
        *_plugin_args(),
        "-p",
        "no:cacheprovider",
        "--framehook-record=samplelib:area",
        f"--framehook-record-dir={out_dir}",
    )
    result.assert_outcomes(passed=2, failed=1)
    result.stdout.fnmatch_lines(["*framehook: 4 records written to*"])
    files = sorted(out_dir.glob("*.fhrec"))
    assert len(files) == 4
    sys.path.insert(0, str(project.path))
    try:
        for path in files:
            assert replay(path, modes=("plain",)).ok
    finally:
        sys.path.remove(str(project.path))


SYNTAX = "is not MODULE:QUALNAME (a dotted module name, then a qualified name) or PACKAGE (a dotted module name)"


def _usage_error(result, line: str) -> None:
    """Exit status 4 with exactly this ERROR line, no traceback, and no test run."""
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines([line])
    text = result.stdout.str() + result.stderr.str()
    assert "Traceback" not in text and "INTERNALERROR" not in text
    assert "test_area" not in text and "passed" not in text and "failed" not in text


@pytest.mark.parametrize(
    ("value", "why"),
    [
        ("", "the value is empty"),
        (":area", "the module name is empty"),
        ("samplelib:", "the qualified name is empty"),
        (".mymod:step", "'.mymod' is a relative module name; give the absolute one"),
        ("..:step", "'..' is a relative module name; give the absolute one"),
        ("../../etc:passwd", "'../../etc' is a file path; give the import name, e.g. pkg.mod:func"),
        ("pkg/mod.py:f", "'pkg/mod.py' is a file path; give the import name, e.g. pkg.mod:func"),
        ("pkg\\mod:f", "'pkg\\\\mod' is a file path; give the import name, e.g. pkg.mod:func"),
        ("samplelib:area.<locals>.inner", "'<locals>' is not a Python identifier"),
        ("sample lib:area", "'sample lib' is not a Python identifier"),
        ("samplelib:1area", "'1area' is not a Python identifier"),
        ("samplelib::area", "':area' is not a Python identifier"),
        ("samplelib..x:area", "'' is not a Python identifier"),
    ],
)
def test_record_target_that_is_not_module_qualname_is_a_usage_error(project, value, why):
    # Before: '.mymod:step' and '../../etc:passwd' ended in an INTERNALERROR traceback
    # (importlib's TypeError for a relative name); the others had no reason given.
    result = project.runpytest(*_plugin_args(), "-p", "no:cacheprovider", f"--framehook-record={value}")
    _usage_error(result, f"ERROR: --framehook-record: {value!r} {SYNTAX}: {why}")


BROKEN = """
raise RuntimeError("broken at import")
"""

MORE_LIB = """
import itertools

LIMIT = 3

def gen():
    yield 1

class Shape:
    @staticmethod
    def unit(k):
        return [k]

    @classmethod
    def make(cls):
        return cls()

class Frozen(type):
    def __setattr__(cls, name, value):
        raise TypeError("frozen class")

class Ice(metaclass=Frozen):
    def melt(self):
        return 0
"""

LAZY = """
def __getattr__(name):
    raise ValueError(f"no lazy {name} here")
"""


@pytest.mark.parametrize(
    ("value", "line"),
    [
        ("nosuchmodule:f", "*: 'nosuchmodule:f': cannot import 'nosuchmodule': ModuleNotFoundError: No module named*"),
        ("brokenlib:f", "*: 'brokenlib:f': cannot import 'brokenlib': RuntimeError: broken at import"),
        ("samplelib:nothing", "*: 'samplelib:nothing': module 'samplelib' has no attribute 'nothing'"),
        ("samplelib:area.x", "*: 'samplelib:area.x': function 'samplelib.area' has no attribute 'x'"),
        ("morelib:LIMIT", "*: 'morelib:LIMIT' is an int, not a Python function"),
        ("morelib:itertools", "*: 'morelib:itertools' is a module, not a Python function"),
        ("morelib:Shape.make", "*: 'morelib:Shape.make' is a classmethod, not a Python function"),
        ("nosuchpackage", "*: 'nosuchpackage': cannot import 'nosuchpackage': ModuleNotFoundError: No module named*"),
        ("morelib:Shape.nothing", "*: 'morelib:Shape.nothing': class 'morelib.Shape' has no attribute 'nothing'"),
        ("lazylib:thing", "*: 'lazylib:thing': reading lazylib.thing: ValueError: no lazy thing here"),
    ],
)
def test_record_target_that_cannot_be_recorded_is_a_usage_error(project, value, line):
    # Before: the import failure of brokenlib was an INTERNALERROR; the others were usage
    # errors without saying what the value is.
    project.makepyfile(brokenlib=BROKEN, morelib=MORE_LIB, lazylib=LAZY)
    result = project.runpytest(*_plugin_args(), "-p", "no:cacheprovider", f"--framehook-record={value}")
    _usage_error(result, f"ERROR: --framehook-record{line}")


def test_a_bad_record_target_leaves_the_good_ones_unpatched(project):
    import samplelib

    original = samplelib.area
    result = project.runpytest_inprocess(
        *_plugin_args(), "-p", "no:cacheprovider", "--framehook-record=samplelib:area", "--framehook-record=samplelib:x"
    )
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    assert samplelib.area is original


def _record_dir_error(project, value: str, line: str) -> None:
    result = project.runpytest(
        *_plugin_args(),
        "-p",
        "no:cacheprovider",
        "--framehook-record=samplelib:area",
        f"--framehook-record-dir={value}",
    )
    _usage_error(result, f"ERROR: --framehook-record-dir: {line}")


def test_record_dir_that_is_a_file_is_a_usage_error(project):
    # Before: every test calling the function failed with FileExistsError.
    afile = project.path / "afile"
    afile.write_text("not a directory")
    _record_dir_error(project, str(afile), f"{str(afile)!r} exists and is not a directory")
    assert afile.read_text() == "not a directory"


def test_record_dir_under_a_regular_file_is_a_usage_error(project):
    # makedirs fails with ENOTDIR whoever runs the test, root included: proves that a
    # directory that cannot be created is reported (before: NotADirectoryError per test).
    afile = project.path / "afile"
    afile.write_text("")
    target = afile / "recs"
    _record_dir_error(project, str(target), f"cannot create {str(target)!r}: Not a directory")


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="needs Linux's procfs")
def test_record_dir_that_cannot_be_created_in_procfs_is_a_usage_error(project):
    # procfs refuses mkdir even to root (ENOENT): the other way a directory cannot be made.
    _record_dir_error(project, "/proc/framehook-records", "cannot create '/proc/framehook-records': *")


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="needs Linux's procfs")
def test_record_dir_that_is_not_writable_is_a_usage_error(project):
    # /proc is an existing directory in which nobody, root included, can create a file
    # (os.access says root may write it): proves the check writes a probe file rather
    # than asking for permission bits. Before: every test calling the function failed.
    import os

    _record_dir_error(project, "/proc", "cannot write files in '/proc': *")
    assert not [name for name in os.listdir("/proc") if name.startswith(".framehook")]


def test_empty_record_dir_is_a_usage_error(project):
    # Before: '' silently wrote the records into the current directory.
    _record_dir_error(project, "", "expected a directory, got an empty value")
    assert not list(project.path.glob("*.fhrec"))


RECURSIVE_LIB = """
import os

def fact(n):
    return 1 if n <= 1 else n * fact(n - 1)

class Shape:
    @staticmethod
    def unit(k):
        return [k]

    def sides(self):
        return 0

class Square(Shape):
    pass
"""

RECURSIVE_TESTS = """
import os
import pytest
import recursivelib

def test_raises():
    with pytest.raises(TypeError):
        recursivelib.fact("4")

def test_inherited():
    assert recursivelib.Square().sides() == 0
    assert recursivelib.Square().unit(3) == [3]

def test_fact():
    assert recursivelib.fact(4) == 24

def test_static():
    assert recursivelib.Shape.unit(1) == [1]
    assert recursivelib.Shape().unit(2) == [2]

def test_after_chdir(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    assert recursivelib.fact(1) == 1
"""


def _run_recording(pytester, out_dir, *targets, options=()):
    return pytester.runpytest(
        *_plugin_args(),
        "-p",
        "no:cacheprovider",
        *(f"--framehook-record={t}" for t in targets),
        f"--framehook-record-dir={out_dir}",
        *options,
    )


def _replay_all(pytester, files, qualname: str) -> None:
    from framehook.records import load

    sys.path.insert(0, str(pytester.path))
    try:
        for path in files:
            assert load(path).code["qualname"] == qualname
            assert replay(path, modes=("plain",)).ok
    finally:
        sys.path.remove(str(pytester.path))


@pytest.mark.parametrize("through", ["hook", "patch"])
def test_every_call_gets_its_own_record_and_runs_never_overwrite(pytester, through):
    # Before: the recursive calls all wrote index 0 (one file for "5 records written"),
    # the test that changed directory wrote into a relative dir under its new cwd, the
    # staticmethod became an instance method (test_static failed), the inherited method
    # stayed set on the subclass afterwards, and a second run overwrote the first one's files.
    pytester.makepyfile(recursivelib=RECURSIVE_LIB, test_rec=RECURSIVE_TESTS)
    pytester.syspathinsert()
    import recursivelib  # before the in-process runs, which then patch this module object

    static, function = vars(recursivelib.Shape)["unit"], recursivelib.fact
    targets = ("recursivelib:fact", "recursivelib:Shape.unit", "recursivelib:Square.sides", "recursivelib:Square.unit")
    if through == "hook" and unavailable("shadow"):
        pytest.skip("the hook needs framehook-runtime")
    options = (f"--framehook-record-through={through}",)
    result = _run_recording(pytester, "recs", *targets, options=options)
    result.assert_outcomes(passed=5)
    # only outermost calls: fact("4"), fact(4) and fact(1), not the recursive ones
    result.stdout.fnmatch_lines(["*framehook: 7 records written to recs*"])
    facts = sorted((pytester.path / "recs").glob("recursivelib.fact.*.fhrec"))
    units = sorted((pytester.path / "recs").glob("recursivelib.Shape.unit.*.fhrec"))
    # Square.unit is Shape.unit's function: recorded once, under the first name given
    assert len(facts) == 3 and len(units) == 3
    assert len(list((pytester.path / "recs").glob("recursivelib.Square.sides.*.fhrec"))) == 1
    assert not list((pytester.path / "recs").glob("recursivelib.Square.unit.*.fhrec"))
    _replay_all(pytester, facts, "fact")
    _replay_all(pytester, units, "Shape.unit")
    before = {p.name: p.read_bytes() for p in (pytester.path / "recs").iterdir()}
    second = _run_recording(pytester, "recs", *targets, options=options)
    second.assert_outcomes(passed=5)
    second.stdout.fnmatch_lines(["*framehook: 7 records written to recs*"])
    after = {p.name: p.read_bytes() for p in (pytester.path / "recs").iterdir()}
    assert len(after) == 14 and all(after[name] == data for name, data in before.items())
    # restored exactly: the staticmethod object itself, nothing left on the subclass
    assert vars(recursivelib.Shape)["unit"] is static and recursivelib.fact is function
    assert "sides" not in vars(recursivelib.Square) and "unit" not in vars(recursivelib.Square)


def test_a_target_given_twice_is_recorded_once(project):
    # Before: the second wrapper recorded the first (the plugin's own wrapper function, not
    # area) into the same file names: "8 records written", 4 files, half of them wrong.
    out_dir = project.path / "recs"
    result = _run_recording(project, out_dir, "samplelib:area", "samplelib:area")
    result.assert_outcomes(passed=2, failed=1)
    result.stdout.fnmatch_lines(["*framehook: 4 records written to*"])
    files = sorted(out_dir.glob("*.fhrec"))
    assert len(files) == 4
    _replay_all(project, files, "area")


def test_shadow_option(project):
    result = project.runpytest(*_plugin_args(), "-p", "no:cacheprovider", "--framehook-shadow")
    reason = unavailable("shadow")
    if reason is None:
        result.assert_outcomes(passed=2, failed=1)
        result.stdout.fnmatch_lines(["*framehook shadow: * frames intercepted*", "*framehook: 0 tests diverged*"])
    else:  # without framehook-runtime: a clear usage error, not a crash
        assert result.ret != 0
        result.stderr.fnmatch_lines(["*--framehook-shadow needs framehook-runtime*"])


def test_optimize_option(project):
    result = project.runpytest(*_plugin_args(), "-p", "no:cacheprovider", "--framehook-optimize=eager")
    if HAS_TRANSLATOR:
        result.assert_outcomes(passed=2, failed=1)
        result.stdout.fnmatch_lines(["*framehook optimize[[]eager[]]: 3 tests run under the translator*"])
    else:
        assert result.ret != 0
        result.stderr.fnmatch_lines(["*--framehook-optimize needs framehook-translator*"])


def test_optimize_option_rejects_an_unknown_backend_at_configure_time(project):
    if not HAS_TRANSLATOR:
        pytest.skip("needs framehook-translator (without it the option is a usage error of its own)")
    from framehook.translator import list_backends

    for value in ("nosuch", ""):
        result = project.runpytest(*_plugin_args(), "-p", "no:cacheprovider", f"--framehook-optimize={value}")
        assert result.ret == pytest.ExitCode.USAGE_ERROR
        result.stderr.fnmatch_lines(
            [f"*--framehook-optimize={value!r}: unknown backend; available: {', '.join(list_backends())}*"]
        )
        text = result.stdout.str() + result.stderr.str()
        assert "Traceback" not in text and "test_area" not in text  # no test ran


def test_optimize_option_reports_a_backend_that_cannot_run_here(project, monkeypatch):
    if not HAS_TRANSLATOR:
        pytest.skip("needs framehook-translator")
    from framehook.translator.backends.registry import _registry  # registered for this test only

    def needs_extra(graph, example_inputs):
        return graph.forward

    def check_available():
        raise RuntimeError("the needs_extra backend needs the 'extra' package: pip install extra")

    needs_extra.check_available = check_available
    monkeypatch.setitem(_registry, "needs_extra", needs_extra)
    result = project.runpytest_inprocess(*_plugin_args(), "-p", "no:cacheprovider", "--framehook-optimize=needs_extra")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["*--framehook-optimize='needs_extra': the needs_extra backend needs*"])


def _intercepted(result) -> int:
    line = next(x for x in result.stdout.lines if x.startswith("framehook shadow: "))
    return int(line.split()[2])


PASSING_TESTS = SAMPLE_TESTS.split("def test_fails_always")[0]


def test_shadow_and_optimize_together_intercept_what_each_does_alone(pytester):
    if unavailable("shadow") or unavailable("translator"):
        pytest.skip("needs framehook-runtime and framehook-translator")
    # passing tests only: a failing assert runs pytest's own reporting code under the callback
    pytester.makepyfile(samplelib=SAMPLE_LIB, test_sample=PASSING_TESTS)
    args = [*_plugin_args(), "-p", "no:cacheprovider", "--framehook-shadow"]
    shadow = pytester.runpytest_subprocess(*args)
    both = pytester.runpytest_subprocess(*args, "--framehook-optimize=eager")
    both.assert_outcomes(passed=2)
    # the test functions, area three times, scaled (and its comprehension before 3.12)
    assert _intercepted(shadow) >= 6
    assert _intercepted(both) == _intercepted(shadow)
    both.stdout.fnmatch_lines(
        [
            "*framehook: each of 2 tests ran twice within its one result, under the pass-through callback, "
            "then under the translator*",
            "*framehook optimize[[]eager[]]: 2 tests run under the translator*",
            "*framehook: 0 tests diverged*",
        ]
    )
    assert "ran twice" not in shadow.stdout.str()


PACKAGE_TESTS = """
import samplelib

def test_many():
    for i in range(6):
        assert samplelib.area(i, 1) == i
    assert samplelib.scaled([1]) == [2]
"""


@pytest.mark.parametrize("through", ["hook", "patch"])
def test_a_package_target_records_each_function_up_to_the_cap(project, through):
    if through == "hook" and unavailable("shadow"):
        pytest.skip("the hook needs framehook-runtime")
    project.makepyfile(test_package=PACKAGE_TESTS)
    out_dir = project.path / "recs"
    result = project.runpytest(
        *_plugin_args(),
        "-p",
        "no:cacheprovider",
        "test_package.py",
        "--framehook-record=samplelib",
        "--framehook-record-cap=2",
        f"--framehook-record-through={through}",
        f"--framehook-record-dir={out_dir}",
    )
    result.assert_outcomes(passed=1)
    # area: six distinct calls, two kept; scaled: one (its calls of area are inside it)
    assert len(list(out_dir.glob("samplelib.area.*.fhrec"))) == 2
    assert len(list(out_dir.glob("samplelib.scaled.*.fhrec"))) == 1
    how = "the runtime's hook" if through == "hook" else "patched attributes*"
    result.stdout.fnmatch_lines(["*framehook: 3 records written to*", f"framehook record: calls caught through {how}"])


def test_record_through_hook_without_an_observer_is_a_usage_error(project, monkeypatch):
    import framehook.records.calls as calls

    monkeypatch.setattr(calls, "observer_factory", lambda: None)
    result = project.runpytest_inprocess(
        *_plugin_args(), "-p", "no:cacheprovider", "--framehook-record=samplelib", "--framehook-record-through=hook"
    )
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["ERROR: --framehook-record-through=hook: no call observer is installed*"])
