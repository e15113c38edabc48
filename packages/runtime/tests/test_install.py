"""Installation on an unsupported interpreter stops with a clear message."""

from __future__ import annotations

import glob
import os
import subprocess
import sys
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parent.parent


def other_interpreter(version):
    root = os.environ.get("PYENV_ROOT", os.path.expanduser("~/.pyenv"))
    found = sorted(glob.glob(os.path.join(root, "versions", f"{version}.*", "bin", f"python{version}")))
    return found[-1] if found else None


@pytest.mark.parametrize("version", ["3.8", "3.7"])
def test_setup_refuses_unsupported_python(version):
    exe = other_interpreter(version)
    if exe is None:
        pytest.skip(f"no CPython {version} on this machine to try an unsupported install with")
    out = subprocess.run([exe, "setup.py", "--name"], cwd=str(PACKAGE), capture_output=True, text=True)
    assert out.returncode != 0
    assert f"framehook-runtime supports CPython 3.9 to 3.15; this is {version}" in out.stderr
    assert "error:" not in out.stderr.lower()  # no compiler error: it stopped before building


def test_setup_refuses_a_free_threaded_build():
    # no free-threaded CPython here: setup.py runs with the build's config variable faked
    script = (
        "import sys, sysconfig\n"
        "real = sysconfig.get_config_var\n"
        "sysconfig.get_config_var = lambda name: 1 if name == 'Py_GIL_DISABLED' else real(name)\n"
        "sys.argv = ['setup.py', '--name']\n"
        # closed at once: a debug build reports an unclosed file on stderr (ResourceWarning)
        "with open('setup.py') as fh:\n"
        "    source = fh.read()\n"
        "exec(compile(source, 'setup.py', 'exec'), {'__name__': '__main__'})\n"
    )
    out = subprocess.run([sys.executable, "-c", script], cwd=str(PACKAGE), capture_output=True, text=True)
    assert out.returncode != 0
    version = "%d.%d" % sys.version_info[:2]
    assert out.stderr.strip() == (
        f"framehook-runtime supports CPython 3.9 to 3.15 with the GIL; this is a free-threaded build "
        f"({version}t), which is not supported."
    )
