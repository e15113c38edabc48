"""CompileId/TraceId, the thread-local compile and tracing contexts, the user's stack on
exceptions, and the global-state checkpoint/restore/diff."""

import random
import threading
import traceback

import numpy as np
import pytest

from framehook.translator.guards.contexts import (
    Checkpointable,
    CompileContext,
    CompileId,
    GlobalStateCheckpoint,
    GlobalStateContext,
    TraceId,
    TracingContext,
    compile_context,
    register_global_state,
    registered_global_states,
    states_equal,
    tracing,
    unregister_global_state,
)


def test_ids_print_like_dynamo():
    cid = CompileId(3, 1)
    assert str(cid) == "3/1"
    assert str(TraceId(cid, 0)) == "3/1"
    assert str(TraceId(cid, 2)) == "3/1_2"
    assert CompileId(3, 1) == cid and hash(CompileId(3, 1)) == hash(cid)


def test_compile_context_installs_and_restores():
    assert CompileContext.try_get() is None
    assert CompileContext.current_compile_id() is None
    assert CompileContext.current_trace_id() is None
    with pytest.raises(RuntimeError, match="outside compile_context"):
        CompileContext.get()
    outer = CompileContext(CompileId(0, 0))
    with compile_context(outer) as ctx:
        assert ctx is outer and CompileContext.get() is outer
        outer.attempt = 2
        assert str(CompileContext.current_trace_id()) == "0/0_2"
        with compile_context(CompileContext(None)):
            assert CompileContext.current_compile_id() is None
            assert CompileContext.current_trace_id() is None
        assert CompileContext.get() is outer
    assert CompileContext.try_get() is None
    with pytest.raises(TypeError, match="CompileId"):
        CompileContext((0, 0))


def _summary(name, line=10):
    return traceback.FrameSummary("user.py", line, name, lookup_line=False)


def test_tracing_context_stack_and_location():
    assert TracingContext.try_get() is None
    assert list(TracingContext.extract_stack()) == []
    with pytest.raises(RuntimeError, match="within tracing"):
        TracingContext.get()
    tc = TracingContext()
    with tracing(tc):
        assert TracingContext.get() is tc
        with TracingContext.current_frame(_summary("outer", 1)):
            TracingContext.set_current_loc("user.py", 5, "outer")
            with TracingContext.current_frame(_summary("inner", 20)):
                TracingContext.set_current_loc("user.py", 22, "inner")
                names = [(f.name, f.lineno) for f in TracingContext.extract_stack()]
                assert names == [("outer", 1), ("inner", 20), ("inner", 22)]
            # leaving the inner frame restores the outer location
            assert [(f.name, f.lineno) for f in TracingContext.extract_stack()] == [("outer", 1), ("outer", 5)]
            with TracingContext.current_frame(None):
                assert [f.name for f in TracingContext.extract_stack()] == ["outer"]
        with TracingContext.patch(loc_in_frame=_summary("patched", 7)):
            assert [f.name for f in TracingContext.extract_stack()] == ["patched"]
        assert tc.loc_in_frame is None
    assert TracingContext.try_get() is None


def test_real_stack_attached_once_by_innermost_context():
    tc = TracingContext()
    with pytest.raises(ValueError) as info:
        with tracing(tc):
            with TracingContext.current_frame(_summary("outer", 1)):
                with TracingContext.current_frame(_summary("inner", 2)):
                    TracingContext.set_current_loc("user.py", 3, "inner")
                    raise ValueError("boom")
    stack = info.value.real_stack
    assert [(f.name, f.lineno) for f in stack] == [("outer", 1), ("inner", 2), ("inner", 3)]


def test_real_stack_from_tracing_and_clear_frame():
    tc = TracingContext()
    with pytest.raises(KeyError) as info:
        with tracing(tc):
            TracingContext.set_current_loc("user.py", 9, "f")
            raise KeyError("k")
    assert [f.lineno for f in info.value.real_stack] == [9]
    # clear_frame: errors from code that is not the user's carry no user stack
    with pytest.raises(RuntimeError) as info2:
        with tracing(TracingContext()):
            with TracingContext.current_frame(_summary("user_fn")):
                with TracingContext.clear_frame():
                    assert list(TracingContext.extract_stack()) == []
                    raise RuntimeError("backend")
    assert info2.value.real_stack is None
    # an exception that already has one keeps it
    err = ValueError("x")
    err.real_stack = "kept"
    with pytest.raises(ValueError) as info3:
        with tracing(TracingContext()):
            raise err
    assert info3.value.real_stack == "kept"
    with tracing(None):
        assert TracingContext.try_get() is None


def test_contexts_are_thread_local():
    barrier = threading.Barrier(4)
    errors = []

    def worker(i):
        try:
            cc = CompileContext(CompileId(i, 0))
            tc = TracingContext()
            with compile_context(cc), tracing(tc):
                TracingContext.set_current_loc("t.py", i, f"w{i}")
                barrier.wait(timeout=10)
                for _ in range(200):
                    assert CompileContext.get() is cc
                    assert TracingContext.get() is tc
                    assert [f.lineno for f in TracingContext.extract_stack()] == [i]
                barrier.wait(timeout=10)
        except Exception as e:  # pragma: no cover - reported below
            errors.append(e)

    threads = [threading.Thread(target=worker, args=(i,)) for i in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == []
    assert CompileContext.try_get() is None and TracingContext.try_get() is None


def test_global_state_checkpoint_restore_diff():
    ctx = GlobalStateContext()
    assert isinstance(ctx, Checkpointable)
    before = ctx.copy_graphstate()
    old_err = np.seterr(all="raise")
    random.random()
    np.random.random()
    try:
        after = ctx.copy_graphstate()
        assert before.diff(after) == {"numpy.errstate", "numpy.random", "random"}
        assert before != after
        ctx.restore_graphstate(before)
        assert np.geterr() == old_err
        assert before.diff(ctx.copy_graphstate()) is None
        assert before == ctx.copy_graphstate()
    finally:
        np.seterr(**old_err)
    with pytest.raises(TypeError):
        ctx.restore_graphstate({})
    extra = GlobalStateCheckpoint(dict(before.values, other=1))
    assert before.diff(extra) == {"other"}


def test_registered_global_state():
    box = {"v": 1}
    register_global_state("test.box", lambda: box["v"], lambda v: box.__setitem__("v", v))
    register_global_state("test.readonly", lambda: box["v"], guarded=False)
    try:
        assert "test.box" in registered_global_states()
        ctx = GlobalStateContext()
        snap = ctx.copy_graphstate()
        box["v"] = 5
        assert snap.diff(ctx.copy_graphstate()) == {"test.box", "test.readonly"}
        ctx.restore_graphstate(snap)
        assert box["v"] == 1
        assert GlobalStateContext.guarded_snapshot()["test.box"] == 1
        assert "test.readonly" not in GlobalStateContext.guarded_snapshot()
    finally:
        unregister_global_state("test.box")
        unregister_global_state("test.readonly")
    with pytest.raises(KeyError):
        unregister_global_state("test.box")
    with pytest.raises(ValueError, match="built in"):
        unregister_global_state("random")
    with pytest.raises(TypeError):
        register_global_state("", lambda: 0)
    with pytest.raises(TypeError, match="getter"):
        register_global_state("x", 3)
    with pytest.raises(TypeError, match="setter"):
        register_global_state("x", lambda: 0, 3)


def test_states_equal():
    a = np.arange(3)
    assert states_equal((1, a, {"k": [a]}), (1, a.copy(), {"k": [a.copy()]}))
    assert not states_equal((1, a), (1, a + 1))
    assert not states_equal(a, [0, 1, 2])
    assert not states_equal([1], (1,))
    assert not states_equal({"a": 1}, {"b": 1})

    class Weird:
        def __eq__(self, other):
            raise RuntimeError

    w = Weird()
    assert states_equal(w, w) and not states_equal(w, Weird())
