"""Choosing the backend, and what only the sys.monitoring backend does (3.12+)."""

from __future__ import annotations

import sys

import pytest

from framehook.profiler import Profiler, _tracer
from framehook.profiler._profiler import default_backend

needs_monitoring = pytest.mark.skipif(not _tracer.HAVE_MONITORING, reason="sys.monitoring is CPython 3.12+")


def leaf():
    return 1


def test_auto_picks_the_faster_backend_for_this_interpreter():
    expected = "monitoring" if sys.version_info >= (3, 12) else "profile"
    assert default_backend() == expected
    assert Profiler().backend == expected
    with Profiler() as prof:
        leaf()
    assert prof._tracer.backend == expected
    assert Profiler(backend="profile").backend == "profile"


def test_bad_backend_names_are_refused():
    with pytest.raises(ValueError, match="backend must be one of"):
        Profiler(backend="settrace")


@pytest.mark.parametrize("option", ["c_calls", "runtime_events"])
@pytest.mark.parametrize("value", ["yes", "no", 0, 1, None])
def test_on_off_options_take_only_booleans(option, value):
    # "no" is a true value: taken as given it would do the opposite of what was meant
    with pytest.raises(TypeError, match=rf"Profiler\({option}=\.\.\.\) must be True or False; got {value!r}"):
        Profiler(**{option: value})
    assert getattr(Profiler(**{option: False}), option) is False


def test_monitoring_backend_needs_3_12():
    if _tracer.HAVE_MONITORING:
        assert Profiler(backend="monitoring").backend == "monitoring"
    else:
        with pytest.raises(ValueError, match="3.12"):
            Profiler(backend="monitoring")
        with pytest.raises(ValueError, match="3.12"):
            _tracer.Tracer(monitoring=True)


@needs_monitoring
def test_the_tool_id_is_taken_and_given_back():
    mon = sys.monitoring
    with Profiler(backend="monitoring") as prof:
        assert mon.get_tool(mon.PROFILER_ID) == "framehook-profiler"
        leaf()
    assert mon.get_tool(mon.PROFILER_ID) is None
    assert len(prof.profile.find("leaf")) == 1


@needs_monitoring
def test_another_tool_on_the_profiler_id_is_left_alone():
    import cProfile

    other = cProfile.Profile()  # cProfile holds sys.monitoring.PROFILER_ID on 3.12+
    other.enable()
    try:
        with Profiler(backend="monitoring") as prof:
            leaf()
            leaf()
        assert sys.monitoring.get_tool(sys.monitoring.PROFILER_ID) == "cProfile"
    finally:
        other.disable()
    assert len(prof.profile.find("leaf")) == 2
    stats = {func[2]: calls[0] for func, calls in _cprofile_stats(other).items()}
    assert stats["leaf"] == 2


def _cprofile_stats(prof):
    import pstats

    return pstats.Stats(prof).stats


@needs_monitoring
def test_no_free_tool_id_is_a_clear_error():
    mon = sys.monitoring
    taken = [i for i in (2, 3, 4) if mon.get_tool(i) is None]
    for i in taken:
        mon.use_tool_id(i, "test")
    try:
        prof = Profiler(backend="monitoring")
        with pytest.raises(RuntimeError, match="no free sys.monitoring tool id"):
            prof.start()
        assert prof.state == "stopped" and _tracer.active() is None
    finally:
        for i in taken:
            mon.free_tool_id(i)
    with Profiler(backend="monitoring") as again:  # nothing was left behind
        leaf()
    assert len(again.profile.find("leaf")) == 1
