"""Building on an interpreter the tracer does not support stops with one line naming the
supported versions, before anything is compiled."""

from __future__ import annotations

import glob
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parent.parent
SUPPORTED = "framehook-profiler supports CPython 3.9 to 3.15 (built with the GIL); "

# Runs setup.py in this interpreter as if it were another one: sys.version_info, and
# sysconfig's answer for Py_GIL_DISABLED, as given on the command line.
AS_IF = textwrap.dedent('''
    import sys, sysconfig
    version, gil_disabled = sys.argv[1], int(sys.argv[2])
    sys.version_info = tuple(int(p) for p in version.split(".")) + (0, "final", 0)
    real = sysconfig.get_config_var
    sysconfig.get_config_var = lambda name: gil_disabled if name == "Py_GIL_DISABLED" else real(name)
    sys.argv = ["setup.py", "--name"]
    # closed at once: a debug build reports an unclosed file on stderr (ResourceWarning)
    with open("setup.py") as fh:
        source = fh.read()
    exec(compile(source, "setup.py", "exec"), {"__name__": "__main__"})
''')


def run_setup_as(version: str, gil_disabled: bool) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-c", AS_IF, version, str(int(gil_disabled))],
        cwd=str(PACKAGE),
        capture_output=True,
        text=True,
        timeout=120,
    )


@pytest.mark.parametrize("version", ["3.8", "3.16", "4.0"])
def test_unsupported_versions_are_refused_in_one_line(version):
    out = run_setup_as(version, False)
    assert out.returncode == 1
    assert out.stderr.splitlines() == [
        SUPPORTED + f"this is {version}. Its C tracer uses each version's profiling hooks "
        "and is not built for other versions."
    ]


@pytest.mark.parametrize("version", ["3.13", "3.14", "3.15"])
def test_free_threaded_builds_are_refused_in_one_line(version):
    out = run_setup_as(version, True)
    assert out.returncode == 1
    lines = out.stderr.splitlines()
    assert len(lines) == 1 and lines[0].startswith(SUPPORTED + f"this is a free-threaded build of {version}"), (
        out.stderr
    )


def test_supported_versions_get_past_the_checks():
    # the metadata query (--name) runs once the checks pass: the checks are not what fails
    version = "%d.%d" % sys.version_info[:2]
    out = run_setup_as(version, False)
    assert (out.returncode, out.stdout.splitlines()[-1:]) == (0, ["framehook-profiler"]), out.stderr


def test_a_real_older_interpreter_is_refused():
    root = os.environ.get("PYENV_ROOT", os.path.expanduser("~/.pyenv"))
    found = sorted(glob.glob(os.path.join(root, "versions", "3.8.*", "bin", "python3.8")))
    if not found:
        pytest.skip("no CPython 3.8 on this machine to try an unsupported build with")
    out = subprocess.run(
        [found[-1], "setup.py", "--name"], cwd=str(PACKAGE), capture_output=True, text=True, timeout=120
    )
    assert out.returncode == 1
    assert out.stderr.splitlines() == [
        SUPPORTED + "this is 3.8. Its C tracer uses each version's profiling hooks and is not built for other versions."
    ]
