"""Shared test set-up for framehook-translator.

The runtime hides its callbacks from trace functions by default, so coverage.py would not
see the conversion loop run: ``set_trace_callbacks(True)`` lets it, for each test of this
package only and set back after it (a process-wide setting made at import leaked into the
runtime's own tracing tests when every package's tests ran in one process).
"""

import sys
from pathlib import Path

import pytest

import framehook.runtime as _rt

# CI runs pytest with --import-mode=importlib, which does not put this directory on
# sys.path; shared helpers (symbolic_helpers) are imported from here.
sys.path.insert(0, str(Path(__file__).resolve().parent))


@pytest.fixture(autouse=True)
def _callbacks_seen_by_coverage():
    previous = _rt.set_trace_callbacks(True)
    yield
    _rt.set_trace_callbacks(previous)


@pytest.fixture
def fresh_translator():
    """``ft.reset()`` before and after the test: no compiled entry, compile id or
    logged-once message carries over between tests. A module asks for it with
    ``pytestmark = pytest.mark.usefixtures("fresh_translator")``."""
    import framehook.translator as ft

    ft.reset()
    yield
    ft.reset()
