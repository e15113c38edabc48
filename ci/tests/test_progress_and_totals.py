"""What the jobs print while and after they run: conformance/run.py's line per finished case
group, ci/matrix.py relaying those lines from an env's log as they appear, and the last
line saying what its totals count."""

from __future__ import annotations

import importlib.util
import io
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent.parent
sys.path.insert(0, str(ROOT / "ci"))
sys.path.insert(0, str(ROOT / "conformance"))  # (its run.py imports its helpers from there)
import matrix  # noqa: E402

# by path, under a name of its own: fuzz/run.py is "run" too in a root pytest run
_spec = importlib.util.spec_from_file_location("conformance_run", ROOT / "conformance" / "run.py")
conformance_run = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(conformance_run)


def test_a_line_per_finished_case_group():
    out = io.StringIO()
    progress = conformance_run.Progress(["basics.a", "basics.b", "loops.x"], out)
    results = [
        {"case": "basics.a", "mode": "plain", "status": "pass"},
        {"case": "basics.a", "mode": "shadow", "status": "skip"},
        {"case": "basics.b", "mode": "plain", "status": "fail"},
        {"case": "loops.x", "mode": "plain", "status": "pass"},
    ]
    progress.group_done("basics", results)
    progress.group_done("loops", results)
    lines = out.getvalue().splitlines()
    assert lines[0].startswith("[conformance] basics: 2 cases, 3 replays: 1 passed, 1 failed, 1 skipped (1/2 groups, ")
    assert lines[1].startswith("[conformance] loops: 1 cases, 1 replays: 1 passed, 0 failed, 0 skipped (2/2 groups, ")


def test_the_matrix_shows_an_envs_progress_lines_as_they_come(tmp_path, capsys):
    log = tmp_path / "py311.log"
    script = (
        "import sys, time\n"
        "print('tox noise', flush=True)\n"
        "print('[conformance] basics: 2 cases', flush=True)\n"
        "time.sleep(0.3)\n"
        "print('[conformance] loops: 1 cases', flush=True)\n"
        "sys.exit(3)\n"
    )
    with open(log, "w") as fh:
        running = subprocess.Popen([sys.executable, "-c", script], stdout=fh, stderr=subprocess.STDOUT)
        assert matrix.relay_progress(log, running, "py311", every=0.05) == 3
    assert capsys.readouterr().out.splitlines() == [
        "[matrix] py311: basics: 2 cases",
        "[matrix] py311: loops: 1 cases",
    ]


def test_the_last_line_says_what_it_counts():
    line = matrix.totals_line([("tests", 100, 1, 5), ("replays", 20, 0, 4), ("fuzz", 7, 0, 0)])
    assert line == (
        "127 passed, 1 failed, 9 skipped (of 106 tests; 24 conformance replays (a case in one mode on one "
        "CPython; real-code defects count as failed); 7 fuzzed programs)"
    )
