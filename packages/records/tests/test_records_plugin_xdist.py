"""The pytest plugin under pytest-xdist: counts and records from every worker.

The runs with ``-n 2`` are subprocesses (the workers are processes anyway); the
controller's side is also driven in-process with stand-in worker nodes, for the cases a
real run cannot produce on demand (a worker that goes down without reporting).
"""

from __future__ import annotations

import sys
import types

import pytest

from framehook.records import load, replay
from framehook.records import pytest_plugin as plugin
from framehook.records.modes import available

pytest_plugins = ["pytester"]

# The entry point, when installed, loads the plugin under the name "framehook"; blocking
# that name and loading the module by name works whether or not it is installed (the
# workers receive the same arguments). The test modules cannot share a helper module:
# the suite runs with --import-mode=importlib.
PLUGIN = ["-p", "no:framehook", "-p", "framehook.records.pytest_plugin", "-p", "no:cacheprovider"]

LIB = """
def area(w, h):
    return w * h

def scaled(values, k=2):
    return [area(v, k) for v in values]
"""

# Four test modules, so that with two workers each of them runs some (--dist load hands
# them out in turn). area is called 1 + 2 + 3 + 4 = 10 times.
TESTS = {
    f"test_part{n}": f"""
import sys
import samplelib

def test_area_{n}():
    assert samplelib.scaled(list(range({n}))) == [2 * v for v in range({n})]
"""
    for n in (1, 2, 3, 4)
}

DIVERGES = """
import sys

def test_diverges():
    # the shadow frame runs a copy of this code object: fails under the runtime only
    assert sys._getframe().f_code is test_diverges.__code__
"""


@pytest.fixture
def xdist_project(pytester):
    pytest.importorskip("xdist", reason="needs pytest-xdist")
    pytester.makepyfile(samplelib=LIB, **TESTS)
    return pytester


def _lines(result, prefix: str) -> list[str]:
    return [line for line in result.stdout.lines if line.startswith(prefix)]


def test_shadow_counts_are_summed_across_workers(xdist_project):
    # Before: "framehook shadow: 0 frames intercepted (0 code objects) in 0 tests": the
    # controller, which runs no test, reported its own counts.
    if available()[1].get("shadow"):
        pytest.skip("needs framehook-runtime")
    xdist_project.makepyfile(test_diverges=DIVERGES)
    serial = xdist_project.runpytest_subprocess(*PLUGIN, "--framehook-shadow")
    parallel = xdist_project.runpytest_subprocess(*PLUGIN, "--framehook-shadow", "-n", "2")
    serial.assert_outcomes(passed=4, failed=1)
    parallel.assert_outcomes(passed=4, failed=1)
    shadow = _lines(serial, "framehook shadow: ")
    assert len(shadow) == 1 and shadow[0].endswith(" in 5 tests")
    # the same frames run whichever process runs them: the totals are the serial ones
    assert _lines(parallel, "framehook shadow: ") == shadow
    for result in (serial, parallel):
        result.stdout.fnmatch_lines(["framehook: 1 tests diverged", "  diverged: test_diverges.py::test_diverges: *"])
    parallel.stdout.fnmatch_lines(["framehook: counts from 2 xdist workers"])


def test_records_from_workers_do_not_overwrite_each_other(xdist_project):
    # Before: each worker numbered its records from 0 under the same names, so the files
    # written last replaced the others; and the summary counted none.
    result = xdist_project.runpytest_subprocess(
        *PLUGIN, "-n", "2", "--framehook-record=samplelib:area", "--framehook-record=samplelib:area"
    )
    result.assert_outcomes(passed=4)
    result.stdout.fnmatch_lines(["framehook: 10 records written to framehook-records"])
    files = sorted((xdist_project.path / "framehook-records").glob("*.fhrec"))
    assert len(files) == 10
    workers = {path.name.split(".")[2] for path in files}
    assert workers == {"gw0", "gw1"}, [path.name for path in files]
    sys.path.insert(0, str(xdist_project.path))
    try:
        for path in files:
            assert load(path).code["qualname"] == "area"
            assert replay(path, modes=("plain",)).ok
    finally:
        sys.path.remove(str(xdist_project.path))


def test_a_worker_that_crashes_is_named_not_silently_left_out(xdist_project):
    # a worker that dies sends no counts: the summary says whose are missing
    xdist_project.makepyfile(test_crash="import os\n\ndef test_crash():\n    os._exit(3)\n")
    result = xdist_project.runpytest_subprocess(*PLUGIN, "-n", "2", "--framehook-record=samplelib:area")
    result.assert_outcomes(passed=4, failed=1)
    result.stdout.fnmatch_lines(
        [
            "framehook: counts from 2 xdist workers",
            "framehook: no counts from worker gw? (down: *): the totals leave them out",
        ]
    )


def test_a_usage_error_stops_the_run_before_any_worker_starts(xdist_project):
    afile = xdist_project.path / "afile"
    afile.write_text("")
    result = xdist_project.runpytest_subprocess(
        *PLUGIN, "-n", "2", "--framehook-record=samplelib:area", f"--framehook-record-dir={afile}"
    )
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines([f"ERROR: --framehook-record-dir: {str(afile)!r} exists and is not a directory"])
    assert "bringing up nodes" not in result.stdout.str()


# -- the controller's side, in-process ---------------------------------------------------


class _Reporter:
    def __init__(self) -> None:
        self.lines: list[str] = []

    def section(self, title: str) -> None:
        self.lines.append(f"== {title}")

    def write_line(self, line: str) -> None:
        self.lines.append(line)


def _node(config, worker: str, payload=None, *, finished: bool = True):
    """A stand-in for xdist's WorkerController: what the plugin reads of it."""
    node = types.SimpleNamespace(config=config, gateway=types.SimpleNamespace(id=worker))
    if finished:
        node.workeroutput = {"exitstatus": 0} if payload is None else {"exitstatus": 0, plugin.WORKER_OUTPUT: payload}
    return node


def _controller(pytester, *args: str):
    config = pytester.parseconfigure(*PLUGIN, *args)
    return config, getattr(config, plugin.SESSION_KEY)


def test_controller_sums_what_workers_send_and_names_those_that_sent_nothing(pytester):
    pytester.makepyfile(samplelib=LIB)
    pytester.syspathinsert()
    config, session = _controller(pytester, "--framehook-record=samplelib:area")
    first = {
        "tests": 2,
        "frames": 10,
        "codes": [["a.py", 1, "f"], ["b.py", 3, "g"]],
        "diverged": ["t.py::a: AssertionError: x"],
        "records": ["r/a.gw0.0.fhrec"],
    }
    second = dict(first, codes=[["a.py", 1, "f"]], diverged=[], records=["r/a.gw1.0.fhrec", "r/a.gw1.1.fhrec"])
    gw0 = _node(config, "gw0", first)
    plugin.pytest_testnodedown(gw0, None)
    plugin.pytest_testnodedown(gw0, None)  # a node reported down twice counts once
    plugin.pytest_testnodedown(_node(config, "gw1", second), None)
    plugin.pytest_testnodedown(_node(config, "gw2", finished=False), "crashed")  # down before finishing
    plugin.pytest_testnodedown(_node(config, "gw3"), None)  # finished without the plugin's counts
    session.shadow = True
    session.pass_through = types.SimpleNamespace(frames_seen=lambda: 0, codes={}, reset=lambda: None)
    reporter = _Reporter()
    plugin.pytest_terminal_summary(reporter, 0, config)
    assert reporter.lines == [
        "== framehook",
        "framehook shadow: 20 frames intercepted (2 code objects) in 4 tests",
        "framehook: 1 tests diverged",
        "  diverged: t.py::a: AssertionError: x",
        "framehook: 3 records written to framehook-records",
        "framehook: counts from 2 xdist workers",
        "framehook: no counts from worker gw2 (down: crashed), gw3 (sent none): the totals leave them out",
    ]
    config._ensure_unconfigure()


def test_worker_sends_its_counts_at_session_finish(pytester):
    pytester.makepyfile(samplelib=LIB)
    pytester.syspathinsert()
    config, session = _controller(pytester, "--framehook-record=samplelib:area")
    config.workeroutput = {}
    session.tests = 3
    session.records.append("x.fhrec")
    plugin.pytest_sessionfinish(types.SimpleNamespace(config=config), 0)
    assert config.workeroutput[plugin.WORKER_OUTPUT] == {
        "tests": 3,
        "frames": 0,
        "codes": [],
        "diverged": [],
        "records": ["x.fhrec"],
    }
    config._ensure_unconfigure()


def test_controller_hands_workers_its_absolute_record_dir(pytester):
    pytester.makepyfile(samplelib=LIB)
    pytester.syspathinsert()
    config, session = _controller(pytester, "--framehook-record=samplelib:area", "--framehook-record-dir=recs")
    node = types.SimpleNamespace(config=config, workerinput={"workerid": "gw0"})
    plugin.pytest_configure_node(node)
    assert node.workerinput[plugin.RECORD_DIR_INPUT] == str(pytester.path / "recs")
    config._ensure_unconfigure()


def test_worker_writes_into_the_controllers_dir_under_its_own_id(pytester, tmp_path):
    pytester.makepyfile(samplelib=LIB)
    pytester.syspathinsert()
    config = pytester.parseconfig(*PLUGIN, "--framehook-record=samplelib:area", "--framehook-record-dir=elsewhere")
    config.workerinput = {"workerid": "gw7", plugin.RECORD_DIR_INPUT: str(tmp_path)}
    config._do_configure()
    try:
        import samplelib

        assert samplelib.scaled([1, 2]) == [2, 4]
        session = getattr(config, plugin.SESSION_KEY)
        assert sorted(p.name for p in tmp_path.iterdir()) == [
            "samplelib.area.gw7.0.fhrec",
            "samplelib.area.gw7.1.fhrec",
        ]
        assert session.all_records() == [
            str(tmp_path / "samplelib.area.gw7.0.fhrec"),
            str(tmp_path / "samplelib.area.gw7.1.fhrec"),
        ]
        assert load(session.all_records()[1]).label == "samplelib:area#gw7.1"
        assert not (pytester.path / "elsewhere").exists()
        # a record that cannot be written leaves no file behind, and the call fails loudly
        recording = session.recording
        entry = next(iter(recording._functions.values()))
        with pytest.raises(AttributeError):
            recording._write(entry, object())
        assert len(list(tmp_path.iterdir())) == 2
    finally:
        config._ensure_unconfigure()
