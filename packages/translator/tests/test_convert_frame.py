"""The conversion loop on the real runtime: caching, recompilation reasons, the cache-size
limit, restart analysis, global-state preservation, strict vs non-strict failures,
bytecode hooks and the skip rules."""

import collections
import logging
import random
import threading
import types

import numpy as np
import pytest

import framehook.runtime as rt
import framehook.translator as ft
from framehook.translator import config
from framehook.translator.bytecode import create_instruction, transform_code_object
from framehook.translator.guards.contexts import CompileContext, register_global_state, unregister_global_state
from framehook.translator.conversion.convert_frame import (
    ConvertFrame,
    convert_frame,
    convert_frame_assert,
    has_array_in_frame,
    last_decisions,
)
from framehook.translator.exc import (
    BackendCompilerFailed,
    CacheLimitExceeded,
    InternalTranslatorError,
    SkipFrame,
    SpeculationRestartAnalysis,
    Unsupported,
    UnspecializeRestartAnalysis,
)
from framehook.translator.translation.base import InstructionTranslatorBase, MinimalTranslator, TranslationOutput


@pytest.fixture(autouse=True)
def clean():
    ft.reset()
    yield
    ft.reset()
    assert rt.get_eval_frame() is None


def entries(fn):
    return rt.cache_entries(ft.innermost_fn(fn).__code__)


def scale(x, k):
    return x * k


def test_compiles_once_then_hits_cache():
    calls = []

    def backend(graph, inputs):
        calls.append(([p.name for p in graph.placeholders], [np.shape(i) for i in inputs]))
        return graph.forward

    f = ft.optimize(backend)(scale)
    a = np.arange(3.0)
    np.testing.assert_array_equal(f(a, 2), a * 2)
    np.testing.assert_array_equal(f(a + 1, 3), (a + 1) * 3)
    assert calls == [(["x", "k"], [(3,), ()])]  # k is a graph input: one entry for every int
    (entry,) = entries(f)
    assert entry.hits >= 1
    d = last_decisions(f)
    assert d["compile_id"] == "0/0" and d["backend"] == "backend"
    assert "type(L['k']) is int" in d["guards"]
    assert last_decisions(types.SimpleNamespace()) is None


def test_recompile_reason_and_guard_fail_fn(caplog):
    fails = []
    f = ft.optimize("eager", guard_fail_fn=fails.append, dynamic=False)(scale)
    f(np.ones(3), 2)
    with caplog.at_level(logging.INFO, logger="framehook.translator.recompiles"):
        f(np.ones(3), 2.5)
        f(np.ones((2, 2)), 2)
    assert [x.reason for x in fails] == [
        "cache entry 0 [0/0]: TYPE_MATCH: L['k'] -- expected type int, got type float",
        # every cached entry is explained, most recent first, with every guard that fails
        "cache entry 0 [0/1]: TYPE_MATCH: L['k'] -- expected type float, got type int; "
        "NDARRAY_MATCH: L['x'] -- expected shape (3,), got (2, 2); "
        "NDARRAY_MATCH: L['x'] -- expected strides (8,), got (16, 8)",
        "cache entry 1 [0/0]: "
        "NDARRAY_MATCH: L['x'] -- expected shape (3,), got (2, 2); "
        "NDARRAY_MATCH: L['x'] -- expected strides (8,), got (16, 8)",
    ]
    assert fails[0].orig_code is scale.__code__
    assert "Recompiling scale" in caplog.text and "expected shape (3,), got (2, 2)" in caplog.text
    assert len(entries(f)) == 3
    assert last_decisions(f)["compile_id"] == "0/2"
    assert len(last_decisions(f)["recompile_reasons"]) == 2


def test_python_guards_are_compiled_only_for_recompilation_reasons(monkeypatch):
    from framehook.translator.guards import builder as guard_builder

    compiled = []
    real = compile

    def counting(source, filename, *args, **kwargs):
        if str(filename).startswith("<framehook guards"):
            compiled.append(filename)
        return real(source, filename, *args, **kwargs)

    monkeypatch.setattr(guard_builder, "compile", counting, raising=False)
    f = ft.optimize("eager", dynamic=False)(scale)
    np.testing.assert_array_equal(f(np.ones(3), 2), np.full(3, 2.0))
    (entry,) = entries(f)
    assert isinstance(entry.check_fn, rt.GuardChecker) and compiled == []  # the plain first call
    assert "type(L['k']) is int" in last_decisions(f)["guards"]
    f(np.ones(3), 2.5)  # the reason for recompiling comes from entry 0's Python form
    assert len(compiled) == 1
    assert last_decisions(f)["recompile_reasons"] == [
        "cache entry 0 [0/0]: TYPE_MATCH: L['k'] -- expected type int, got type float"
    ]


def test_output_code_is_the_same_with_or_without_the_cleaning_pass():
    def plus_one(x, k):
        return x + k

    def branches(x, k):
        y = x * 2
        print(end="")  # a graph break that resumes: its output code jumps
        return y + k

    for fn in (plus_one, branches):
        codes = []
        for dce in (True, False):
            ft.reset()
            with config.patch(dead_code_elimination=dce):
                np.testing.assert_array_equal(ft.optimize("eager")(fn)(np.ones(2), 2), fn(np.ones(2), 2))
            codes.append(entries(fn)[0].code)
        assert codes[0] is not fn.__code__
        if fn is plus_one:  # nothing to clean: the pass is skipped, and would change nothing
            assert codes[0].co_code == codes[1].co_code


def test_automatic_dynamic_dimension():
    f = ft.optimize("eager")(scale)
    f(np.ones(3), 2)
    f(np.ones(4), 2)  # dimension 0 changed: the new entry is shape-polymorphic
    f(np.ones(9), 2)
    assert len(entries(f)) == 2
    assert "L['x'].ndim == 1" in last_decisions(f)["guards"]
    g = ft.optimize("eager", dynamic=True)(lambda x: x + np.float64(1))
    g(np.ones(3))
    g(np.ones(5))
    assert len(entries(g)) == 1


def test_cache_size_limit_non_strict(caplog):
    f = ft.optimize("eager")(scale)
    with config.patch(cache_size_limit=2), caplog.at_level(logging.WARNING, logger="framehook.translator"):
        for k in (1, 2.0, 3j, "s", b"b"):
            assert f(np.ones(2), k).tolist() == (np.ones(2) * k).tolist() if not isinstance(k, (str, bytes)) else True
    assert len(entries(f)) == 2
    warnings = [r for r in caplog.records if "cache_size_limit" in r.getMessage()]
    assert len(warnings) == 1
    assert "reached config.cache_size_limit (2)" in warnings[0].getMessage()
    assert "expected type" in warnings[0].getMessage()
    assert rt.is_skipped(scale.__code__)


def test_cache_size_limit_strict():
    f = ft.optimize("eager", nopython=True)(scale)
    with config.patch(cache_size_limit=1):
        f(np.ones(2), 1)
        with pytest.raises(CacheLimitExceeded, match="cache_size_limit \\(1\\)"):
            f(np.ones(2), 1.5)


class Speculating(MinimalTranslator):
    attempts = []

    def run(self):
        entry = self.speculate(0)
        Speculating.attempts.append(entry.failed)
        if not entry.failed:
            entry.fail_and_restart_analysis("assumed x was small")
        return MinimalTranslator.run(self)


def test_speculation_restart_keeps_what_was_learned(caplog):
    Speculating.attempts = []
    cb = convert_frame(ft.lookup_backend("eager"), translator=Speculating)
    with caplog.at_level(logging.INFO, logger="framehook.translator.restarts"), rt.enable(cb):
        scale(np.ones(2), 2)
    assert Speculating.attempts == [False, True]
    assert "assumed x was small" in caplog.text
    assert last_decisions(scale)["restarts"] == ["speculation: assumed x was small"]


class Unspecializing(MinimalTranslator):
    seen = []

    def run(self):
        self.speculate(0)
        Unspecializing.seen.append((len(self.speculation_log.entries), CompileContext.current_trace_id().attempt))
        if len(Unspecializing.seen) == 1:
            raise UnspecializeRestartAnalysis("forget it")
        return MinimalTranslator.run(self)


def test_unspecialize_restart_clears_the_log():
    Unspecializing.seen = []
    with rt.enable(convert_frame(ft.lookup_backend("eager"), translator=Unspecializing)):
        scale(np.ones(2), 2)
    # the second attempt starts from an empty log (one fresh entry), with attempt number 1
    assert Unspecializing.seen == [(1, 0), (1, 1)]


class AlwaysRestart(InstructionTranslatorBase):
    def run(self):
        raise SpeculationRestartAnalysis("again")


def test_restart_limit():
    with config.patch(restart_limit=3):
        with rt.enable(convert_frame_assert(ft.lookup_backend("eager"), translator=AlwaysRestart)):
            with pytest.raises(Unsupported, match="gave up after 4 restarts"):
                scale(np.ones(2), 2)
        ft.reset()
        with rt.enable(convert_frame(ft.lookup_backend("eager"), translator=AlwaysRestart)):
            assert scale(np.ones(2), 3).tolist() == [3.0, 3.0]
        assert rt.is_skipped(scale.__code__)


class Skipping(InstructionTranslatorBase):
    def run(self):
        raise SkipFrame("not today")


def test_skip_frame_runs_unmodified(caplog):
    with (
        caplog.at_level(logging.INFO, logger="framehook.translator"),
        rt.enable(convert_frame_assert(ft.lookup_backend("eager"), translator=Skipping)),
    ):
        assert scale(np.ones(1), 4).tolist() == [4.0]
    assert "not today" in caplog.text and rt.is_skipped(scale.__code__)


class Messy(MinimalTranslator):
    """Changes global state while translating, as a careless translator would."""

    def run(self):
        np.seterr(all="ignore")
        random.seed(1234)
        np.random.seed(99)
        return MinimalTranslator.run(self)


def test_global_state_restored_after_translation():
    err = np.geterr()
    py_state = random.getstate()
    np_state = np.random.get_state()
    with rt.enable(convert_frame(ft.lookup_backend("eager"), translator=Messy)):
        scale(np.ones(1), 2)
    assert np.geterr() == err
    assert random.getstate() == py_state
    after = np.random.get_state()
    assert after[0] == np_state[0] and np.array_equal(after[1], np_state[1]) and after[2:] == np_state[2:]
    assert len(rt.cache_entries(scale.__code__)) == 1


def _state_changer(box, step):
    """A translator that changes a registered piece of global state while it runs."""

    class Changer(MinimalTranslator):
        def run(self):
            box["v"] += step
            return MinimalTranslator.run(self)

    return Changer


def test_unrestorable_global_state_change_is_an_error():
    box = {"v": 0}
    register_global_state("test.mode", lambda: box["v"])  # no setter: cannot be restored

    Changer = _state_changer(box, 1)
    try:
        with rt.enable(convert_frame_assert(ft.lookup_backend("eager"), translator=Changer)):
            with pytest.raises(InternalTranslatorError, match="could not be restored: test.mode"):
                scale(np.ones(1), 2)
    finally:
        unregister_global_state("test.mode")


def test_global_state_is_set_back_only_when_it_changed():
    box = {"v": 0}
    sets = []

    def setter(v):
        sets.append(v)
        box["v"] = v

    register_global_state("test.counted", lambda: box["v"], setter, guarded=False)

    Changer = _state_changer(box, 10)
    try:
        with rt.enable(convert_frame(ft.lookup_backend("eager"))):
            scale(np.ones(1), 2)
        assert sets == [] and box["v"] == 0  # nothing changed: nothing set back
        ft.reset()
        with rt.enable(convert_frame_assert(ft.lookup_backend("eager"), translator=Changer)):
            scale(np.ones(1), 2)
        assert sets == [0] and box["v"] == 0
    finally:
        unregister_global_state("test.counted")


def test_global_state_whose_setter_does_not_restore_is_an_error():
    box = {"v": 0}
    register_global_state("test.sticky", lambda: box["v"], lambda v: None)  # ignores the value

    Changer = _state_changer(box, 1)
    try:
        with rt.enable(convert_frame_assert(ft.lookup_backend("eager"), translator=Changer)):
            with pytest.raises(InternalTranslatorError, match="could not be restored: test.sticky"):
                scale(np.ones(1), 2)
    finally:
        unregister_global_state("test.sticky")


class Broken(InstructionTranslatorBase):
    def run(self):
        from framehook.translator.guards.contexts import TracingContext

        TracingContext.set_current_loc(self.frame.code.co_filename, self.frame.code.co_firstlineno + 1, "scale")
        return {}["missing"]


def test_strict_raises_with_user_stack_non_strict_logs_once(caplog):
    with rt.enable(convert_frame_assert(ft.lookup_backend("eager"), translator=Broken)):
        with pytest.raises(InternalTranslatorError) as info:
            scale(np.ones(1), 2)
    msg = str(info.value)
    assert "KeyError" in msg and "from user code:" in msg and "in scale" in msg
    assert isinstance(info.value.__cause__, KeyError)
    ft.reset()
    with caplog.at_level(logging.WARNING, logger="framehook.translator"):
        with rt.enable(convert_frame(ft.lookup_backend("eager"), translator=Broken)):
            assert scale(np.ones(1), 2).tolist() == [2.0]
            assert scale(np.ones(1), 3).tolist() == [3.0]
    failures = [r for r in caplog.records if "failed" in r.getMessage()]
    assert len(failures) == 1 and "runs unmodified" in failures[0].getMessage()


def test_failure_is_recorded_when_asked(tmp_path):
    with config.patch(record_dir=str(tmp_path)):
        with rt.enable(convert_frame_assert(ft.lookup_backend("eager"), translator=Broken)):
            with pytest.raises(InternalTranslatorError) as info:
                scale(np.ones(1), 2)
    records = list(tmp_path.iterdir())
    if records:  # the records package is present and wrote one
        assert str(records[0]) in str(info.value)


def test_backend_failures():
    def raising(graph, inputs):
        raise RuntimeError("backend exploded")

    def not_callable(graph, inputs):
        return 42

    for backend, text in ((raising, "backend exploded"), (not_callable, "returned int, which is not callable")):
        ft.reset()
        strict = ft.optimize(backend, nopython=True)(scale)
        with pytest.raises(BackendCompilerFailed, match=text) as info:
            strict(np.ones(2), 2)
        assert info.value.backend_name == backend.__name__
        ft.reset()
        lenient = ft.optimize(backend)(scale)
        assert lenient(np.ones(2), 2).tolist() == [2.0, 2.0]


def test_bytecode_hooks_and_generated_code():
    seen = []

    def hook(old, new):
        seen.append((old.co_name, new.co_name))
        return None

    class Rewriting(MinimalTranslator):
        """Returns new code: the original with dead code appended (removed again by DCE)."""

        def run(self):
            MinimalTranslator.run(self)

            def add_dead(insts, opts):
                insts.extend([create_instruction("LOAD_CONST", argval=None), create_instruction("RETURN_VALUE")])

            return TranslationOutput(code=transform_code_object(self.frame.code, add_dead))

    handle = ft.register_bytecode_hook(hook)
    try:
        with rt.enable(convert_frame(ft.lookup_backend("eager"), translator=Rewriting)):
            assert scale(np.ones(1), 5).tolist() == [5.0]
        (entry,) = rt.cache_entries(scale.__code__)
        assert entry.code.co_code == scale.__code__.co_code  # the dead tail was removed
        assert seen == [("scale", "scale")]
    finally:
        handle.remove()
    with ft.register_bytecode_hook(lambda old, new: new.replace(co_name="renamed")):
        ft.reset()
        with rt.enable(convert_frame(ft.lookup_backend("eager"))):
            scale(np.ones(1), 5)
        assert rt.cache_entries(scale.__code__)[0].code.co_name == "renamed"
    with pytest.raises(TypeError):
        ft.register_bytecode_hook(3)


def no_numpy(a, b):
    return a + b


P = collections.namedtuple("P", "arr n")


def uses_np_global(n):
    return np.zeros(n)


def test_skip_rules():
    cb = convert_frame(ft.lookup_backend("eager"))
    with rt.enable(cb):
        assert no_numpy(1, 2) == 3
        assert uses_np_global(2).tolist() == [0.0, 0.0]
        scale([np.ones(1)], 2)  # an array inside a list counts
        P(np.ones(1), 1)
        import json

        json.dumps({"a": np.ones(1).tolist()})
    assert rt.is_skipped(no_numpy.__code__)
    assert not rt.is_skipped(uses_np_global.__code__) and rt.cache_entries(uses_np_global.__code__)
    assert rt.cache_entries(scale.__code__)
    assert rt.is_skipped(P.__new__.__code__)
    import json.encoder

    assert rt.is_skipped(json.dumps.__code__)
    with config.patch(trace_numpy=False):
        with rt.enable(cb):
            no_numpy(1, 2)
    with config.patch(disable=True):
        ft.reset()
        with rt.enable(cb):
            scale(np.ones(1), 2)
        assert rt.is_skipped(scale.__code__)


def test_skip_dirs_and_force_dirs(tmp_path):
    import os

    here = os.path.dirname(__file__)
    cb = convert_frame(ft.lookup_backend("eager"))
    with config.patch(skip_dirs=(here,)):
        with rt.enable(cb):
            scale(np.ones(1), 2)
        assert rt.is_skipped(scale.__code__)
    ft.reset()
    with config.patch(skip_dirs=(here,), force_dirs=(here,)):
        with rt.enable(cb):
            scale(np.ones(1), 2)
        assert rt.cache_entries(scale.__code__)


def test_has_array_in_frame_and_started():
    class View:
        def __init__(self, code, g, L):
            self.f_code, self.f_globals, self.f_locals = code, g, L

    code = no_numpy.__code__
    assert not has_array_in_frame(View(code, {}, {"a": 1, "b": [1, (2, {"k": "v"})]}))
    assert has_array_in_frame(View(code, {}, {"a": 1, "b": [1, (2, {"k": np.float32(1)})]}))
    assert has_array_in_frame(View(code, {}, {"a": P(np.ones(1), 1), "b": 0}))
    loop = []
    loop.append(loop)
    assert not has_array_in_frame(View(code, {}, {"a": loop, "b": loop}))
    g = uses_np_global.__code__
    assert has_array_in_frame(View(g, {"np": np}, {"n": 1}))
    assert has_array_in_frame(View(g, {"np": np.linalg}, {"n": 1}))
    assert not has_array_in_frame(View(g, {"np": collections}, {"n": 1}))
    assert has_array_in_frame(View(g, {"np": np.sum}, {"n": 1}))


def test_compile_lock_with_threads():
    f = ft.optimize("eager")(scale)
    out = {}

    def work(i):
        out[i] = f(np.full(3, float(i)), 2).tolist()

    threads = [threading.Thread(target=work, args=(i,)) for i in range(6)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert out == {i: [2.0 * i] * 3 for i in range(6)}
    # translations are serialized by the lock; threads that all missed an empty cache at
    # once each add an (identical) entry, bounded by the thread count
    assert 1 <= len(entries(f)) <= 6
    assert all(e.check_fn({"x": np.ones(3), "k": 2}) for e in entries(f))


def test_convert_frame_repr():
    assert "eager" in repr(ConvertFrame(ft.lookup_backend("eager")))


class _FrameWithoutFunction:
    """A frame whose ``function`` must not be read (it is a heap scan on 3.9/3.10)."""

    def __init__(self, frame):
        self._frame = frame

    def __getattr__(self, name):
        if name == "function":
            raise AssertionError("frame.function read for a frame that did not need it")
        return getattr(self._frame, name)


def _ones_plus(n):
    return np.ones(n) + 1


def test_skip_reason_reads_the_function_only_for_exec_code():
    from framehook.translator.conversion.convert_frame import frame_skip_reason

    seen = []

    def callback(frame, cache_entry, frame_state):
        seen.append(frame_skip_reason(_FrameWithoutFunction(frame)))
        return None

    rt.call_with(callback, uses_np_global, 2)
    assert seen == [None]
    # nor does a translation that succeeds
    ft.reset()
    cb = convert_frame(ft.lookup_backend("eager"))
    out = rt.call_with(lambda frame, e, s: cb(_FrameWithoutFunction(frame), e, s), _ones_plus, 3)
    assert out.tolist() == [2.0, 2.0, 2.0] and rt.cache_entries(_ones_plus.__code__)
    namespace = {}
    exec("class K:\n    def __new__(cls, a):\n        return object.__new__(cls)\n", namespace)
    seen.clear()
    rt.call_with(lambda frame, e, s: seen.append(frame_skip_reason(frame)) or None, namespace["K"], np.ones(1))
    assert seen == ["namedtuple constructor"]


def test_skip_verdicts_from_the_name_as_written_need_no_file_system(monkeypatch, tmp_path):
    import os
    import threading

    from framehook.translator.conversion import skipfiles

    def no_fs(path):
        raise AssertionError(f"resolved {path}")

    verdict = skipfiles._file_reason.__wrapped__  # uncached
    skipfiles.prepare()
    with monkeypatch.context() as m:
        m.setattr(os.path, "realpath", no_fs)
        assert verdict(threading.__file__, True, True, (), ()) == "standard library"
        assert verdict(np.__file__, True, True, (), ()) == "framehook or numpy internals"
        assert verdict(convert_frame.__code__.co_filename, True, True, (), ()) == "framehook or numpy internals"
    # what the name does not tell is resolved as before: a user's file, a skip setting, a
    # standard library file reached through a symlink, a site-packages dir inside stdlib
    assert verdict(__file__, True, True, (), ()) is None
    assert verdict(threading.__file__, False, True, (), ()) is None
    here = os.path.dirname(threading.__file__)
    assert verdict(threading.__file__, True, True, (here,), ()) == "in config.skip_dirs"
    assert verdict(threading.__file__, True, True, (), (here,)) is None
    link = tmp_path / "lib"
    link.symlink_to(here)
    assert verdict(str(link / "threading.py"), True, True, (), ()) == "standard library"
    assert verdict(os.path.join(here, "site-packages", "pkg", "m.py"), True, True, (), ()) is None
