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


def test_record_option_errors(project):
    result = project.runpytest(*_plugin_args(), "--framehook-record=samplelib")
    assert result.ret != 0
    result.stderr.fnmatch_lines(["*expects MODULE:QUALNAME*"])
    result = project.runpytest(*_plugin_args(), "--framehook-record=samplelib:nothing")
    result.stderr.fnmatch_lines(["*samplelib:nothing*"])


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
    from framehook.translator.backends import _registry  # registered for this test only

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
        ["*framehook optimize[[]eager[]]: 2 tests run under the translator*", "*framehook: 0 tests diverged*"]
    )
