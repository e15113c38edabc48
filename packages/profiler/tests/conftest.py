"""pytest setup: the helpers module is importable, and no test leaves a tracer recording."""

from __future__ import annotations

import os
import sys

import pytest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from framehook.profiler import _profiler, _tracer  # noqa: E402

BACKENDS = [
    "profile",
    pytest.param(
        "monitoring",
        marks=pytest.mark.skipif(not _tracer.HAVE_MONITORING, reason="the sys.monitoring backend needs CPython 3.12+"),
    ),
]


@pytest.fixture(params=BACKENDS)
def backend(request, monkeypatch):
    """Runs a test once per backend: Profiler() (backend "auto") resolves to it."""
    monkeypatch.setattr(_profiler, "default_backend", lambda: request.param)
    return request.param


@pytest.fixture(autouse=True)
def no_profiler_left_behind():
    yield
    active = _tracer.active()
    if active is not None:  # a failing test must not leave the tracer on for the rest
        active.stop()
        pytest.fail("a test left a tracer recording")
