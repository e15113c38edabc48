"""framehook-runtime's cache-lookup and compiled-region events appear in the trees."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap

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
    lookups = [e for e in profile.events if e.kind == "cache_lookup" and e.name.endswith("original")]
    regions = [e for e in profile.events if e.kind == "compiled_region"]
    assert len(lookups) == 2 and len(regions) == 2
    assert all(e.name.startswith("cache lookup: ") for e in lookups)
    assert all(r.name.startswith("compiled region: ") and r.name.endswith("replacement") for r in regions)
    for lookup, region in zip(lookups, regions):
        assert lookup.parent is region.parent  # siblings under the caller
        assert lookup.end_ns <= region.start_ns
        assert [c.function.lineno for c in region.children] == [replacement.__code__.co_firstlineno]
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


# The profiler alone, and with a stand-in for framehook-runtime's event interface: a
# capsule of the same name and layout (docs/runtime-api.md, ABI 1), made with ctypes in a
# child process, so that it runs on every version whether or not the runtime is installed
# (on 3.14 and 3.15 it is not yet). The child prints what the profile holds as JSON.
STAND_IN = textwrap.dedent('''
    import ctypes, json, sys, types
    import framehook
    from framehook.profiler import Profiler, _tracer

    how, backend = sys.argv[1], sys.argv[2]
    sys.path.insert(0, sys.argv[3])  # the tests' folder: the tree walk's outputs
    if how == "blocked":  # as when framehook-runtime is not installed
        sys.modules["framehook.runtime"] = None
    else:
        REGISTER = ctypes.PYFUNCTYPE(ctypes.c_int, ctypes.c_void_p, ctypes.c_void_p)
        LISTENER = ctypes.PYFUNCTYPE(None, ctypes.c_void_p, ctypes.c_int, ctypes.py_object)
        listeners = []

        @REGISTER
        def add_listener(fn, userdata):
            listeners.append((fn, userdata))
            return 0

        @REGISTER
        def remove_listener(fn, userdata):
            listeners.remove((fn, userdata))
            return 0

        class Api(ctypes.Structure):
            _fields_ = [("abi_version", ctypes.c_int), ("add_listener", REGISTER),
                        ("remove_listener", REGISTER)]

        api = Api(1 if how == "abi1" else 2, add_listener, remove_listener)
        capsule_new = ctypes.pythonapi.PyCapsule_New
        capsule_new.restype = ctypes.py_object
        capsule_new.argtypes = [ctypes.c_void_p, ctypes.c_char_p, ctypes.c_void_p]
        NAME = b"framehook.runtime._C._events_api"
        runtime = types.ModuleType("framehook.runtime")
        runtime._C = types.ModuleType("framehook.runtime._C")
        runtime._C._events_api = capsule_new(ctypes.addressof(api), NAME, None)
        sys.modules["framehook.runtime"] = framehook.runtime = runtime
        sys.modules["framehook.runtime._C"] = runtime._C

    def original(x):
        return x + 1

    def replacement(x):
        return x + 2

    def program(listening):
        # what the runtime reports around a call it serves from its cache
        for fire, userdata in listening:
            fire(userdata, 1, original.__code__)
            fire(userdata, 2, original.__code__)
            fire(userdata, 3, replacement.__code__)
        replacement(1)
        for fire, userdata in listening:
            fire(userdata, 4, replacement.__code__)

    prof = Profiler(backend=backend)
    prof.start()
    listening = [(LISTENER(fn), data) for fn, data in listeners] if how != "blocked" else []
    program(listening)
    prof.stop()
    root, = [e for e in prof.profile.events if e.name.endswith("program")]
    from fhprof_helpers import chrome_spans
    from framehook.profiler._flamegraph import merged_tree
    from tree_reference import (chrome_from_trees, flame_from_trees, flame_shape,
                                pstats_from_trees, summary_from_trees)
    profile = prof.profile
    spans = lambda calls: sorted(({k: v for k, v in e.items() if k != "ph"} for e in calls),
                                 key=lambda e: e["args"]["id"])
    same = {
        "pstats": profile.to_pstats() == pstats_from_trees(profile),
        "summary": profile.summary() == summary_from_trees(profile),
        "flame graph": flame_shape(merged_tree(profile)) == flame_shape(flame_from_trees(profile)),
        "chrome": spans(chrome_spans(profile.to_chrome())) == spans(
            e for e in chrome_from_trees(profile)["traceEvents"] if e["ph"] == "X"),
    }
    from framehook.profiler._gecko import to_gecko
    gecko = to_gecko(profile)["threads"]
    print(json.dumps({
        "same_as_trees": same,
        "gecko_markers": [[d["kind"], d["name"]] for t in gecko for d in t["markers"]["data"]],
        "available": _tracer.runtime_available(),
        "listening": len(listening),
        "left": len(listeners) if how != "blocked" else 0,
        "children": [[c.kind, c.name, [[g.kind, g.name] for g in c.children]]
                     for c in root.children if c.kind != "c"],
    }))
''')


def run_stand_in(how: str, backend: str) -> dict:
    tests = os.path.dirname(os.path.abspath(__file__))
    out = subprocess.run(
        [sys.executable, "-c", STAND_IN, how, backend, tests], capture_output=True, text=True, timeout=120
    )
    assert out.returncode == 0, out.stderr
    return json.loads(out.stdout)


def test_runtime_events_from_an_interface_like_the_runtimes_nest_in_the_tree(backend):
    got = run_stand_in("abi1", backend)
    assert got["available"] is True
    assert (got["listening"], got["left"]) == (1, 0)  # one listener while recording
    assert got["children"] == [
        ["cache_lookup", "cache lookup: original", []],
        ["compiled_region", "compiled region: replacement", [["python", "replacement"]]],
    ]
    # the outputs made by the tracer (aggregates, Chrome writer) hold the runtime's events
    # as the tree walk does
    assert got["same_as_trees"] == dict.fromkeys(("pstats", "summary", "flame graph", "chrome"), True)
    # and the Firefox Profiler's markers
    assert got["gecko_markers"] == [
        ["Cache lookup", "cache lookup: original"],
        ["Compiled region", "compiled region: replacement"],
    ]


@pytest.mark.parametrize("how", ["blocked", "abi2"])
def test_without_the_runtime_or_with_another_abi_nothing_listens(backend, how):
    got = run_stand_in(how, backend)
    assert got["available"] is False and got["listening"] == 0
    assert got["children"] == [["python", "replacement", []]]
