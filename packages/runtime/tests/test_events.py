"""The C event interface, exercised through the capsule by the module's own recorder."""

from __future__ import annotations

import pytest

import framehook.runtime as rt
from framehook.runtime import _C
from runtime_helpers import targeting


def test_lookup_and_region_events_in_order():
    def target(x):
        return x * 2

    replacement = target.__code__.replace()
    with rt.enable(targeting(target, lambda *a: rt.GuardedCode(replacement, lambda L: True))):
        _C._start_event_log()
        try:
            target(1)  # miss: lookup, callback, region
            target(2)  # hit
        finally:
            log = _C._stop_event_log()
    mine = [(ev, code) for ev, code in log if code in (target.__code__, replacement)]
    one_call = [
        (_C.EV_LOOKUP_BEGIN, target.__code__),
        (_C.EV_LOOKUP_END, target.__code__),
        (_C.EV_REGION_BEGIN, replacement),
        (_C.EV_REGION_END, replacement),
    ]
    assert mine == one_call * 2


def test_no_events_without_listener_and_recorder_errors():
    with pytest.raises(RuntimeError, match="not recording"):
        _C._stop_event_log()
    _C._start_event_log()
    try:
        with pytest.raises(RuntimeError, match="already recording"):
            _C._start_event_log()
    finally:
        assert _C._stop_event_log() == []


def test_capsule_is_exported():
    assert type(_C._events_api).__name__ == "PyCapsule"
    assert "framehook.runtime._C._events_api" in repr(_C._events_api)
