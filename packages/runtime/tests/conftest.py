from __future__ import annotations

import sys
from pathlib import Path

import pytest

import framehook.runtime as rt

sys.path.insert(0, str(Path(__file__).resolve().parent))

from passthrough import PassThrough  # noqa: E402
from shim.build import build_shim  # noqa: E402


@pytest.fixture(autouse=True)
def clean_thread_callback():
    """Every test starts and ends with no callback on this thread and the hook removed."""
    rt.set_eval_frame(None)
    yield
    leftover = rt.set_eval_frame(None)
    assert leftover is None, f"test left a callback set: {leftover!r}"
    assert not rt.eval_frame_installed()


@pytest.fixture(scope="session")
def shim(tmp_path_factory):
    return build_shim(str(tmp_path_factory.mktemp("shim")))


@pytest.fixture
def passthrough():
    return PassThrough()
