"""pytest setup: the helpers module is importable, and no test leaves a tracer recording."""
from __future__ import annotations

import os
import sys

import pytest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from framehook.profiler import _tracer  # noqa: E402


@pytest.fixture(autouse=True)
def no_profiler_left_behind():
    yield
    active = _tracer.active()
    if active is not None:  # a failing test must not leave the tracer on for the rest
        active.stop()
        pytest.fail("a test left a tracer recording")

