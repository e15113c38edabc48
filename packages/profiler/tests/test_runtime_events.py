"""framehook-runtime's cache-lookup and compiled-region events appear in the trees."""
from __future__ import annotations

import pytest

from framehook.profiler import Profiler, _tracer
from fhprof_helpers import calls_of

try:
    import framehook.runtime as runtime
except ImportError as exc:  # the profiler must work without it
    runtime = None
    _why = f"framehook.runtime is not importable here ({exc}); runtime events are not tested"
else:
    _why = ""

needs_runtime = pytest.mark.skipif(runtime is None, reason=_why or "runtime present")

# Each test runs against every backend this interpreter has.
pytestmark = pytest.mark.usefixtures("backend")


def original(x):
    return x + 1


def replacement(x):
    return x + 2


def callback(frame, cache_entry, frame_state):
    if frame.f_code is original.__code__:
        return runtime.GuardedCode(replacement.__code__, lambda f_locals: True)
    return None


@needs_runtime
def test_lookup_and_region_events_nest_in_the_tree():
    runtime.reset_code(original.__code__)
    assert _tracer.runtime_available()
    with Profiler() as prof:
        with runtime.enable(callback):
            first = original(1)
            second = original(2)
    runtime.reset_code(original.__code__)
    assert (first, second) == (3, 4)
    profile = prof.profile
    lookups = [e for e in profile.events if e.kind == "cache_lookup"
               and e.name.endswith("original")]
    regions = [e for e in profile.events if e.kind == "compiled_region"]
    assert len(lookups) == 2 and len(regions) == 2
    assert all(e.name.startswith("cache lookup: ") for e in lookups)
    assert all(r.name.startswith("compiled region: ") and r.name.endswith("replacement")
               for r in regions)
    for lookup, region in zip(lookups, regions):
        assert lookup.parent is region.parent  # siblings under the caller
        assert lookup.end_ns <= region.start_ns
        assert [c.function.lineno for c in region.children] == \
            [replacement.__code__.co_firstlineno]
    assert calls_of(profile, original) == []  # the original code never ran
    assert regions[0].function.lineno == replacement.__code__.co_firstlineno


@needs_runtime
def test_runtime_events_can_be_turned_off():
    runtime.reset_code(original.__code__)
    with Profiler(runtime_events=False) as prof:
        with runtime.enable(callback):
            original(1)
    runtime.reset_code(original.__code__)
    assert not [e for e in prof.profile.events if e.kind in ("cache_lookup", "compiled_region")]
    assert len(calls_of(prof.profile, replacement)) == 1


def test_without_a_listener_the_profiler_records_normally():
    with Profiler() as prof:
        original(1)
    assert len(calls_of(prof.profile, original)) == 1
    assert isinstance(_tracer.runtime_available(), bool)
