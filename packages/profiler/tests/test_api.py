"""Annotations, tagged calls, the single-recorder rule and bad-input handling."""

from __future__ import annotations

import atexit
import sys
import threading
import warnings

import pytest

from framehook.profiler import Profiler, ProfilerWarning, record_function, tag_calls, untag_calls, _tracer
from fhprof_helpers import calls_of, only, shape

# Each test runs against every backend this interpreter has.
pytestmark = pytest.mark.usefixtures("backend")


def leaf():
    return 1


def test_record_function_context_manager():
    with Profiler() as prof:
        with record_function("outer"):
            leaf()
            with record_function("inner"):
                leaf()
        leaf()
    profile = prof.profile
    outer = only(profile, "outer")
    assert outer.kind == "annotation"
    assert shape(outer) == ("outer", (("leaf", ()), ("inner", (("leaf", ()),))))
    assert outer.parent is not None and outer.parent.start_frame
    # __enter__/__exit__ of the annotation are the profiler's own calls: not recorded
    assert not [e for e in profile.events if "__exit__" in e.name or "__enter__" in e.name]


def test_record_function_decorator_on_functions_and_methods():
    @record_function("step")
    def step(x, y=0):
        """doc"""
        return leaf() + x + y

    class Model:
        @record_function("forward")
        def forward(self, x):
            return x * 2

    assert step.__name__ == "step" and step.__doc__ == "doc" and step.__wrapped__ is not None
    assert step.annotation == "step"
    with Profiler() as prof:
        assert step(1, y=2) == 4
        assert Model().forward(3) == 6
    profile = prof.profile
    (ann,) = [e for e in profile.find("step") if e.kind == "annotation"]
    assert [c.name.rpartition(".")[2] for c in ann.children] == ["step"]
    assert [c.name for c in ann.children[0].children] == ["leaf"]
    (fwd,) = [e for e in profile.find("forward") if e.kind == "annotation"]
    assert fwd.children[0].name.endswith("forward")
    assert "record_function" in repr(step) and repr(record_function("x")) == "record_function('x')"


def test_record_function_closes_on_exceptions_and_is_free_when_not_recording():
    @record_function("failing")
    def failing():
        raise KeyError("k")

    with pytest.raises(KeyError):
        failing()  # not recording: just calls through
    with record_function("idle"):
        pass
    with Profiler() as prof:
        with pytest.raises(KeyError):
            failing()
        leaf()
    profile = prof.profile
    (ann,) = [e for e in profile.find("failing") if e.kind == "annotation"]
    assert ann.end_ns <= only(profile, "leaf").start_ns


def test_record_function_rejects_bad_arguments():
    with pytest.raises(TypeError):
        record_function(3)
    with pytest.raises(TypeError):
        record_function("x")(42)
    with pytest.raises(TypeError):
        record_function("x")(leaf, extra=1)


class Layer:
    def __init__(self, n):
        import numpy as np

        self.weight = np.zeros((n, 3), dtype=np.float32)
        self.bias = np.ones(3)
        self.note = "not an array"

    def __call__(self, x):
        return self.forward(x)

    def forward(self, x):
        return x + 1


class Opt:
    def step(self):
        return 0


def test_tagged_calls_record_class_instance_number_and_arrays():
    pytest.importorskip("numpy")
    tag_calls(Layer)
    tag_calls(Opt.step)
    try:
        a, b = Layer(2), Layer(5)
        opt = Opt()
        with Profiler() as prof:
            a(1)
            b(1)
            a(2)
            opt.step()
    finally:
        untag_calls(Layer)
        untag_calls(Opt.step)
    calls = calls_of(prof.profile, Layer.__call__)
    assert [c.tag.class_name for c in calls] == ["Layer"] * 3
    assert [c.tag.instance for c in calls] == [0, 1, 0]
    assert dict((n, (d, s)) for n, d, s in calls[1].tag.arrays) == {
        "weight": ("float32", (5, 3)),
        "bias": ("float64", (3,)),
    }
    assert calls[0].tag.as_dict()["arrays"]["weight"] == {"dtype": "float32", "shape": [2, 3]}
    (step,) = calls_of(prof.profile, Opt.step)
    assert step.tag.class_name == "Opt" and step.tag.instance == 0 and step.tag.arrays == ()
    # untagged methods carry no tag
    forwards = calls_of(prof.profile, Layer.forward)
    assert len(forwards) == 3 and all(e.tag is None for e in forwards)
    assert "Layer" in repr(calls[0].tag)


def test_tags_registered_while_recording_take_effect_at_once():
    class Layer:
        def __call__(self, x):
            return x

    layer = Layer()
    with Profiler() as prof:
        layer(1)  # its call site is interned untagged
        tag_calls(Layer)
        layer(2)
        untag_calls(Layer)
        layer(3)
    calls = calls_of(prof.profile, Layer.__call__)
    assert [c.tag is not None for c in calls] == [False, True, False]
    assert calls[1].tag.class_name.endswith("Layer")
    with pytest.raises(TypeError, match="code objects"):
        _tracer.Tracer().retag([1])


def test_tag_calls_rejects_what_it_cannot_tag():
    class NoCall:
        pass

    with pytest.raises(TypeError):
        tag_calls(NoCall)
    with pytest.raises(TypeError):
        tag_calls(len)
    with pytest.raises(TypeError):
        tag_calls(lambda: None)

    class Base:
        def __call__(self):
            return 1

    class Child(Base):
        pass

    assert tag_calls(Child) is Child  # inherits Base.__call__
    untag_calls(Child)
    untag_calls(Child)  # twice is fine


def test_second_profiler_warns_and_records_nothing():
    first = Profiler()
    first.start()
    second = Profiler()
    with pytest.warns(ProfilerWarning, match="already recording"):
        second.start()
    assert second.state == "refused" and not second.recording
    leaf()
    empty = second.stop()
    profile = first.stop()
    assert empty.events == [] and empty.threads == []
    assert len(profile.find("leaf")) == 1
    assert second.state == "stopped"


def test_bad_call_order_gives_clear_errors():
    prof = Profiler()
    with pytest.raises(RuntimeError, match="before start"):
        prof.stop()
    with pytest.raises(RuntimeError, match="after stop"):
        prof.profile
    prof.start()
    try:
        with pytest.raises(RuntimeError, match="recording"):
            prof.start()
        with pytest.raises(RuntimeError, match="stop"):
            prof.export("x.json")
        with pytest.raises(RuntimeError, match="after stop"):
            prof.profile
        leaf()
    finally:
        prof.stop()
    with pytest.raises(RuntimeError, match="already stopped"):
        prof.stop()
    with pytest.raises(RuntimeError, match="records once"):
        prof.start()
    assert len(prof.profile.find("leaf")) == 1


def test_tracer_level_errors():
    tracer = _tracer.Tracer()
    with pytest.raises(RuntimeError, match="never started"):
        tracer.collect()
    with pytest.raises(RuntimeError, match="never started"):
        tracer.stop()
    assert tracer.state == "new" and tracer.event_count == 0
    assert tracer.start() is True
    try:
        with pytest.raises(RuntimeError, match="already recording"):
            tracer.start()
        with pytest.raises(RuntimeError, match="before collecting"):
            tracer.collect()
        assert _tracer.active() is tracer and _tracer.is_recording_thread()
    finally:
        tracer.stop()
    assert not _tracer.is_recording_thread() and _tracer.active() is None
    with pytest.raises(RuntimeError, match="already stopped"):
        tracer.stop()
    with pytest.raises(RuntimeError, match="only be started once"):
        tracer.start()
    raw = tracer.collect()
    assert raw["clock"] == _tracer.clock_name()
    with pytest.raises(TypeError):
        _tracer.Tracer(tagged=[1])
    with pytest.raises(TypeError):
        _tracer.Tracer(describe=3)
    with pytest.raises(TypeError):
        tracer.thread_hook(1, 2)
    with pytest.raises(RuntimeError):
        tracer.__init__()


def test_garbage_collected_recording_profiler_stops_with_a_warning():
    prof = Profiler()
    prof.start()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        prof.__del__()
    assert any(issubclass(w.category, ProfilerWarning) for w in caught)
    assert prof.state == "stopped" and _tracer.active() is None


def test_exit_handler_is_registered_while_recording_only(monkeypatch):
    registered = []  # atexit cannot be asked what it holds: its calls are watched
    real_register, real_unregister = atexit.register, atexit.unregister

    def register(func, *args, **kwargs):
        registered.append(func)
        return real_register(func, *args, **kwargs)

    def unregister(func):
        registered[:] = [f for f in registered if f != func]
        real_unregister(func)

    monkeypatch.setattr(atexit, "register", register)
    monkeypatch.setattr(atexit, "unregister", unregister)
    prof = Profiler()
    prof.start()
    assert registered == [prof._exit_hook]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ProfilerWarning)
        refused = Profiler().start()
    assert refused.state == "refused" and registered == [prof._exit_hook]
    prof.stop()
    refused.stop()
    assert registered == [] and prof._exit_hook is None

    class FailingTracer:  # as when an audit hook refuses (tests/test_audit.py)
        def __init__(self, **kwargs):
            pass

        def start(self):
            assert registered, "registered before the tracer starts"
            raise PermissionError("refused")

    monkeypatch.setattr(_tracer, "Tracer", FailingTracer)
    failing = Profiler()
    with pytest.raises(PermissionError):
        failing.start()
    assert registered == [] and failing.state == "stopped"


def test_exit_handler_stops_and_a_later_stop_returns_the_profile():
    def marker(frame, event, arg):
        pass

    threading.setprofile(marker)
    try:
        prof = Profiler()
        prof.start()
        leaf()
        prof._exit_hook()  # as atexit would
        assert prof.state == "stopped" and _tracer.active() is None
        assert threading._profile_hook is marker
        assert prof._profile is None  # nothing is built at exit
        profile = prof.stop()  # an exit handler of the program's, run after ours
        assert prof.stop() is profile
        assert len(calls_of(profile, leaf)) == 1
        names = [e.name for e in profile.events]
        assert not [n for n in names if "_stop_at_exit" in n or "_halt" in n], names
    finally:
        threading.setprofile(None)
    stopped = Profiler()
    stopped.start()
    stopped.stop()
    with pytest.raises(RuntimeError, match="already stopped"):
        stopped.stop()  # a plain second stop() still raises


def test_del_while_finalizing_only_stops_the_tracer():
    prof = Profiler()
    prof.start()
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            prof.__del__(_is_finalizing=lambda: True)
        assert prof.state == "stopped" and _tracer.active() is None
        assert prof._profile is None
    finally:
        threading.setprofile(None)  # left as it was: threading may be torn down then
    Profiler.__new__(Profiler).__del__()  # __init__ never ran: nothing to do


def test_thread_hook_after_stop_uninstalls_itself():
    prof = Profiler()
    prof.start()
    hook = prof._thread_hook
    prof.stop()
    seen = []

    def target():
        sys.setprofile(hook)  # as threading would, if a thread raced with stop()
        leaf()
        seen.append(sys.getprofile())

    t = threading.Thread(target=target)
    t.start()
    t.join()
    assert seen == [None]


def test_profiler_records_the_previous_threading_hook_and_restores_it():
    def marker(frame, event, arg):
        pass

    threading.setprofile(marker)
    try:
        with Profiler():
            assert threading._profile_hook is not marker
        assert threading._profile_hook is marker
    finally:
        threading.setprofile(None)
