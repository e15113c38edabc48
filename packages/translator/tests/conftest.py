"""Shared test set-up for framehook-translator.

The runtime hides its callbacks from trace functions by default, so coverage.py would not
see the conversion loop run. ``set_trace_callbacks`` (exported by framehook.runtime but not
yet listed in docs/runtime-api.md) lets it; without it the tests still run, only the
coverage figure drops.
"""

import sys
from pathlib import Path

import pytest

import framehook.runtime as _rt

# CI runs pytest with --import-mode=importlib, which does not put this directory on
# sys.path; shared helpers (symbolic_helpers) are imported from here.
sys.path.insert(0, str(Path(__file__).resolve().parent))

if hasattr(_rt, "set_trace_callbacks"):
    _rt.set_trace_callbacks(True)


@pytest.fixture
def fresh_translator():
    """``ft.reset()`` before and after the test: no compiled entry, compile id or
    logged-once message carries over between tests. A module asks for it with
    ``pytestmark = pytest.mark.usefixtures("fresh_translator")``."""
    import framehook.translator as ft

    ft.reset()
    yield
    ft.reset()
