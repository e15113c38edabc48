"""The translator's tests leave no process-wide setting behind for other packages' tests
run in the same process (``python -m pytest`` from the repository's root): its conftest
once turned ``set_trace_callbacks`` on at import, and the runtime's tracing tests, which
expect the default, then failed on 3.14 and 3.15."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

import framehook.runtime as rt

HERE = Path(__file__).resolve().parent
RUNTIME_TRACING = HERE.parent.parent / "runtime" / "tests" / "test_tracing.py"


def test_trace_callbacks_are_on_for_a_test_and_off_by_default():
    previous = rt.set_trace_callbacks(True)  # (the conftest's fixture turned it on)
    assert previous is True
    code = "import framehook.runtime as rt; print(rt.set_trace_callbacks(False))"
    fresh = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert fresh.stdout.strip() == "False"


@pytest.mark.skipif(not RUNTIME_TRACING.exists(), reason="the runtime's tests are not beside this checkout's")
def test_the_runtimes_tracing_tests_pass_after_ours_in_one_process(tmp_path):
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(p for p in sys.path if p))
    env.pop("COVERAGE_PROCESS_START", None)
    run = subprocess.run(
        [
            sys.executable,
            "-m",
            "pytest",
            "-q",
            "-p",
            "no:cacheprovider",
            "-p",
            "no:randomly",
            "--import-mode=importlib",
            str(HERE / "test_eval_frame.py"),
            str(RUNTIME_TRACING),
        ],
        capture_output=True,
        text=True,
        env=env,
        cwd=tmp_path,
    )
    assert run.returncode == 0, run.stdout[-3000:] + run.stderr[-2000:]
