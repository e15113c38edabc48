"""ci/provision.py: the system's apt-get, when provisioning needs it (patchelf missing, as
root), waits for dpkg's lock that another package manager holds, for a bounded time, and
says so, instead of failing at once."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path
from types import SimpleNamespace

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
import provision  # noqa: E402


@pytest.fixture
def apt(monkeypatch):
    """As root on a machine with apt but no patchelf, which appears once installed; the
    commands are recorded, not run (``apt.fail_first``: the first install fails, as with
    stale package lists)."""
    state = SimpleNamespace(ran=[], installed=False, fail_first=False)

    def which(tool):
        if tool == "patchelf":
            return "/usr/bin/patchelf" if state.installed else None
        return f"/usr/bin/{tool}"

    def run(cmd, what, **kwargs):
        state.ran.append(cmd)
        if "install" in cmd:
            if state.fail_first and sum("install" in c for c in state.ran) == 1:
                raise provision.ProvisionError("stale lists")
            state.installed = True
        return subprocess.CompletedProcess(cmd, 0, "", "")

    monkeypatch.setattr(provision.shutil, "which", which)
    monkeypatch.setattr(provision.os, "geteuid", lambda: 0)
    monkeypatch.setattr(provision.os, "access", lambda path, mode: True)
    monkeypatch.setattr(provision, "_run", run)
    return state


def test_the_system_apt_get_waits_for_dpkgs_lock(apt, capsys):
    provision._require_tools("3.15")
    assert apt.ran == [["apt-get", "-o", "DPkg::Lock::Timeout=300", "install", "-y", "-q", "patchelf"]]
    assert "waiting up to 300 s for it" in capsys.readouterr().err


def test_the_retry_after_an_update_waits_too(apt):
    apt.fail_first = True
    provision._require_tools("3.15")
    assert [cmd[3] for cmd in apt.ran] == ["install", "update", "install"]
    assert all(cmd[:3] == ["apt-get", "-o", "DPkg::Lock::Timeout=300"] for cmd in apt.ran)


def test_the_wait_is_bounded_and_a_real_apt_get_takes_the_option():
    assert 0 < provision.DPKG_LOCK_WAIT <= 600
    if not provision.shutil.which("apt-config"):
        pytest.skip("no apt here (not Debian)")
    # apt reads the option as given on the command line: its configuration shows it back
    out = subprocess.run(
        ["apt-config", "-o", f"DPkg::Lock::Timeout={provision.DPKG_LOCK_WAIT}", "dump", "DPkg::Lock::Timeout"],
        capture_output=True,
        text=True,
        check=True,
    )
    assert f'DPkg::Lock::Timeout "{provision.DPKG_LOCK_WAIT}";' in out.stdout
