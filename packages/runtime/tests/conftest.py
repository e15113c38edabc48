from __future__ import annotations

import sys
from pathlib import Path

import pytest

import framehook.runtime as rt

sys.path.insert(0, str(Path(__file__).resolve().parent))

from passthrough import PassThrough  # noqa: E402,F401 - re-exported for the tests
from shim.build import build_shim  # noqa: E402


def pytest_configure(config):
    # the slow kinds of test, selectable with -m (the gcov envs leave valgrind out: the
    # test envs run it, and under --coverage it would only measure itself)
    config.addinivalue_line("markers", "valgrind: runs a workload under valgrind memcheck (slow)")
    config.addinivalue_line("markers", "regrtest: runs CPython's own regression tests under the hook (slow)")


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


def targeting(fn, callback):
    """Wraps a test callback so that it only sees frames of `fn` (others run unmodified)."""
    code = fn.__code__

    def wrapper(frame, cache_entry, frame_state):
        if frame.f_code is not code:
            return None
        return callback(frame, cache_entry, frame_state)

    return wrapper
