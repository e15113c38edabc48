"""export(), debug.dump(), guard_filter_fn, config.verify_backend and the recompilation /
cache-limit diagnostics."""

from __future__ import annotations

import logging
import os
import pickle

import numpy as np
import pytest

import framehook.translator as ft
from framehook.translator import debug
from framehook.translator.conversion.convert_frame import cache_limit_message, describe_failures, filter_guards
from framehook.translator.exporting import ExportError, ExportGuardError
from framehook.translator.backends.verify import BackendVerificationError, check_result

SCALE = np.float64(3.0)


pytestmark = pytest.mark.usefixtures("fresh_translator")


def helper(x):
    return x * SCALE


def step(x, k, *, scale=2.0):
    y = np.sin(x) + helper(x) * k
    return y / scale, np.linalg.norm(y)


def with_break(x):
    print("side effect")
    y = x + 1
    if y.sum() > 0:
        return y
    return x


def make_closure():
    offset = np.ones(3)

    def inner(x, *rest, **named):
        return x + offset + len(rest) + len(named)

    return inner


class Holder:
    def __init__(self) -> None:
        self.w = 2.0

    def apply(self, x):
        return x * 2.0


# ------------------------------------------------------------------ export


def test_export_runs_the_graph_behind_its_guards():
    exported = ft.export(step)(np.ones(4), 0.5)
    assert "exported step" in repr(exported) and exported.__name__ == "step"
    assert any("L['x'].shape == (4,)" in g for g in exported.guards)
    assert "numpy.sin" in str(exported.graph)
    x = np.arange(4.0)
    got, want = exported(x, 0.25), step(x, 0.25)
    np.testing.assert_allclose(got[0], want[0])
    assert got[1] == want[1]
    np.testing.assert_allclose(exported(x, 0.25, scale=4.0)[0], step(x, 0.25, scale=4.0)[0])
    # fn itself keeps no cache entry
    from framehook.runtime import cache_entries

    assert cache_entries(step.__code__) == []


def test_export_rejects_inputs_failing_its_guards():
    exported = ft.export(step)(np.ones(4), 0.5)
    with pytest.raises(ExportGuardError) as info:
        exported(np.ones(5, np.float32), 1)
    text = str(info.value)
    assert "exported step was called with inputs its guards reject" in text
    assert "TYPE_MATCH: L['k'] -- expected type float, got type int" in text
    assert "NDARRAY_MATCH: L['x'] -- expected dtype float64, got dtype float32" in text
    assert len(info.value.reasons) >= 3  # every failing guard, not only the first
    with pytest.raises(TypeError):
        exported()  # arguments that do not bind


def test_export_refuses_at_a_graph_break_before_anything_runs(capsys):
    with pytest.raises(ExportError) as info:
        ft.export(with_break)(np.ones(3))
    text = str(info.value)
    assert text.startswith("cannot export with_break: a graph break, found while tracing (none of with_break ran)")
    assert "FH005" in text and "test_export_debug.py:35 (in with_break): a call to print()" in text
    assert "hint:" in text
    assert [b.code for b in info.value.breaks] == ["FH005"] and info.value.breaks[0].lineno == 35
    assert capsys.readouterr().out == ""  # its print never ran (it did before the refusal)


def _deep_break(x):
    y = x * 2
    return _helper_with_break(y)


def _helper_with_break(y):
    open(os.devnull).close()
    return y + 1


def test_a_break_in_a_called_function_names_that_function():
    with pytest.raises(ExportError) as info:
        ft.export(_deep_break)(np.ones(3))
    (brk,) = info.value.breaks
    assert brk.function == "_helper_with_break" and brk.lineno is not None


def test_export_closure_varargs_and_methods():
    inner = make_closure()
    exported = ft.export(inner)(np.zeros(3), 1, 2, a=3)
    np.testing.assert_array_equal(exported(np.zeros(3), 1, 2, a=3), inner(np.zeros(3), 1, 2, a=3))
    assert "offset" in exported.f_locals(np.zeros(3))
    h = Holder()
    bound = ft.export(h.apply)(np.ones(2))
    np.testing.assert_array_equal(bound(np.full(2, 3.0)), np.full(2, 6.0))


def test_export_errors():
    with pytest.raises(TypeError, match="expects a callable"):
        ft.export(3)
    with pytest.raises(ExportError, match="needs a Python function"):
        ft.export(np.sin)(np.ones(2))
    with pytest.raises(ExportError, match="did not capture it"):
        ft.export(lambda n: n + 1)(3)  # no numpy reachable: not translated


# ------------------------------------------------------------------ debug.dump


def test_dump_writes_graphs_guards_and_generated_code(tmp_path):
    opt = ft.optimize("eager")(step)
    opt(np.ones(4), 0.5)
    opt(np.ones((2, 2)), 0.5)
    paths = ft.debug.dump(step, str(tmp_path))
    names = sorted(os.path.basename(p) for p in paths)
    assert names == [
        "entry0_generated.py",
        "entry0_graph0.py",
        "entry0_guards.py",
        "entry1_generated.py",
        "entry1_graph0.py",
        "entry1_guards.py",
        "index.txt",
    ]
    for p in paths:
        if p.endswith(".py"):
            compile(open(p).read(), p, "exec")  # every file is valid Python
    generated = (tmp_path / "entry0_generated.py").read_text()
    assert "def step(x, k, *, scale):" in generated
    assert "return ___entry0_graph0(x, SCALE, k, scale)" in generated
    assert "# bind ___entry0_graph0: graph entry0_graph0.py" in generated
    guards = (tmp_path / "entry1_guards.py").read_text()
    assert "L['x'].shape == (4,)" in guards and "def ___make_check_fn" in guards
    forward = debug.load_graph(str(tmp_path / "entry1_graph0.py"))
    got = forward(np.ones(4), SCALE, 0.5, 2.0)
    want = step(np.ones(4), 0.5)
    np.testing.assert_allclose(got[0], want[0])
    assert "entry 0 [compile" in (tmp_path / "index.txt").read_text()


def test_dump_pickles_constants_and_backend_graphs(tmp_path):
    pytest.importorskip("numexpr", reason="numexpr is not installed")

    def poly(x):
        return (x * 2.0 + 1.0) * x + np.array([1.0, 2.0, 3.0])

    opt = ft.optimize("numexpr")(poly)
    opt(np.ones(3))
    paths = ft.debug.dump(poly, str(tmp_path))
    names = {os.path.basename(p) for p in paths}
    assert {"entry0_graph0_backend.py", "entry0_graph0_backend_constants.pkl"} <= names
    forward = debug.load_graph(str(tmp_path / "entry0_graph0_backend.py"))
    np.testing.assert_allclose(forward(np.full(3, 2.0)), poly(np.full(3, 2.0)))
    assert "return ___entry0_graph0_backend(x)" in (tmp_path / "entry0_generated.py").read_text()


def test_dump_without_entries(tmp_path):
    with pytest.raises(ValueError, match="has no compiled entry"):
        ft.debug.dump(step, str(tmp_path))
    with pytest.raises(TypeError, match="cannot find the code object"):
        ft.debug.dump(3, str(tmp_path))


def test_generated_source_helpers():
    def sig(a, b=1, *args, c, d=2, **kw):
        return a

    assert debug._signature_text(sig.__code__) == "a, b, *args, c, d, **kw"

    def posonly(a, /, b):
        return a

    assert debug._signature_text(posonly.__code__) == "a, /, b"

    def kwonly(*, a):
        return a

    assert debug._signature_text(kwonly.__code__) == "*, a"

    def rebuilt(x, d):
        return np.add((x.T, [d["k"]]), 1)

    text = debug.generated_source(rebuilt.__code__)
    assert text is None or "def rebuilt(x, d):" in text

    def loop(x):
        for i in x:
            x = i
        return x

    assert debug.generated_source(loop.__code__) is None
    assert debug._importable(np.sin) == "numpy.sin" and debug._importable(len) == "builtins.len"
    assert debug._importable(object()) is None and debug._importable(np) == "numpy"
    with pytest.raises(ImportError):
        debug._load("no_such_module_framehook.x")


def test_graph_module_source_unpicklable_constant():
    from framehook.translator.graph import ArrayMeta, Graph

    g = Graph("g")
    x = g.placeholder("x", ArrayMeta((2,), np.dtype("float64")))
    lock = __import__("threading").Lock()
    y = g.call(lambda a, _lock=lock: a + 1, (x,), meta=ArrayMeta((2,), np.dtype("float64")))
    g.output(y)
    text, pickled = debug.graph_module_source(g)
    assert "not reproducible outside the process" in text and not pickled


# ------------------------------------------------------------------ guard_filter_fn


def test_guard_filter_fn_drops_guards():
    seen = []

    def keep_arrays_only(guards):
        seen.append([g.name for g in guards])
        return [g.kind.name != "TYPE_MATCH" for g in guards]

    @ft.optimize("eager", guard_filter_fn=keep_arrays_only)
    def f(x, k):
        return x + k

    np.testing.assert_array_equal(f(np.ones(3), 1), np.full(3, 2.0))
    guards = ft.last_decisions(f)["guards"]
    assert not any("L['k']" in g and "type(" in g for g in guards)
    assert any("L['x']" in g for g in guards) and seen and "L['k']" in seen[0]


def test_guard_filter_fn_validation():
    with pytest.raises(TypeError, match="guard_filter_fn must be callable"):
        ft.optimize("eager", guard_filter_fn=3)
    from framehook.translator.guards.sources import LocalSource
    from framehook.translator.guards import GuardKind

    g = LocalSource("x").make_guard(GuardKind.TYPE_MATCH)
    with pytest.raises(TypeError, match="one bool per guard"):
        filter_guards(lambda gs: [], {g})
    assert filter_guards(lambda gs: [False], {g}) == set()
    logging.getLogger("framehook.translator.translator").setLevel(logging.DEBUG)
    try:
        assert filter_guards(lambda gs: [False], {g}) == set()
    finally:
        logging.getLogger("framehook.translator.translator").setLevel(logging.NOTSET)


# ------------------------------------------------------------------ verify_backend


def _wrong_dtype_backend(graph, example_inputs):
    forward = graph.forward
    return ft.disable(lambda *a: forward(*a).astype(np.float32))


def _wrong_structure_backend(graph, example_inputs):
    return ft.disable(lambda *a: [1])


def test_verify_backend_catches_wrong_results():
    @ft.optimize_assert(_wrong_dtype_backend)
    def f(x):
        return x * 2

    with ft.config.patch(verify_backend=True):
        with pytest.raises(BackendVerificationError) as info:
            f(np.ones(3))
    text = str(info.value)
    assert "backend '_wrong_dtype_backend' returned a wrong result for graph " in text
    assert "output: expected ndarray float64(3,), got ndarray float32(3,)" in text and "verify_backend" in text
    ft.reset()
    assert f(np.ones(3)).dtype == np.float32  # unchecked without the setting


def test_verify_backend_accepts_right_results():
    @ft.optimize("eager")
    def f(x, k):
        return {"a": (x * k, x.sum()), "b": [x.shape, k + 1]}

    with ft.config.patch(verify_backend=True):
        out = f(np.ones(3), 2.0)
    assert out["a"][1] == 3.0


def test_check_result_mismatches():
    from framehook.translator.graph import ArrayMeta, Graph, ScalarMeta

    g = Graph("g")
    x = g.placeholder("x", ArrayMeta((3,), np.dtype("float64")))
    s = g.placeholder("s", ArrayMeta((), np.dtype("float64"), np.float64))
    k = g.placeholder("k", ScalarMeta(int, 1))
    problems = []
    check_result((x, s, k), (np.ones(4), np.float32(1), 1.5), "output", problems)
    assert problems == [
        "output[0]: expected ndarray float64(3,), got ndarray float64(4,)",
        "output[1]: expected numpy scalar float64, got numpy scalar float32",
        "output[2]: expected int, got float",
    ]
    problems = []
    check_result((x,), [np.ones(3)], "output", problems)
    check_result({"a": x}, {"b": 1}, "output", problems)
    check_result({"a": x}, {"a": np.ones((3, 1))}, "o", problems)
    check_result([x], 5, "p", problems)
    assert problems[0] == "output: expected a tuple of 1, got list of 1"
    assert problems[1] == "output: expected a dict with keys ['a'], got dict with keys ['b']"
    assert problems[2] == "o['a']: expected ndarray float64(3,), got ndarray float64(3, 1)"
    assert problems[3] == "p: expected a list of 1, got int"


def test_verify_backend_structure_message():
    @ft.optimize_assert(_wrong_structure_backend)
    def f(x):
        return x + 1, x - 1

    with ft.config.patch(verify_backend=True):
        with pytest.raises(BackendVerificationError, match="expected a tuple of 2, got list of 1"):
            f(np.ones(2))


# ------------------------------------------------------------------ diagnostics


def test_recompile_reason_lists_every_failing_guard_of_every_entry(caplog):
    reasons = []

    @ft.optimize("eager", guard_fail_fn=lambda fail: reasons.append(fail.reason))
    def f(x, k):
        return x * k

    f(np.ones(3), 1)
    f(np.ones(4), 1.5)
    f(np.ones((2, 2), np.float32), 2)
    assert len(reasons) == 3
    entry0, entry1 = reasons[1:]
    # the newest entry (k float; x's first dimension dynamic after (3,) then (4,)): the guard
    # on k, x's dtype and x's ndim fail
    assert entry0 == (
        "cache entry 0 [0/1]: TYPE_MATCH: L['k'] -- expected type float, got type int; "
        "NDARRAY_MATCH: L['x'] -- expected dtype float64, got dtype float32; "
        "NDARRAY_MATCH: L['x'] -- expected ndim 1, got 2"
    )
    # the first entry (k int, x of shape (3,)): k passes; x's dtype, shape and strides fail
    assert entry1 == (
        "cache entry 1 [0/0]: NDARRAY_MATCH: L['x'] -- expected dtype float64, got dtype float32; "
        "NDARRAY_MATCH: L['x'] -- expected shape (3,), got (2, 2); "
        "NDARRAY_MATCH: L['x'] -- expected strides (8,), got (8, 4)"
    )
    assert ft.last_decisions(f)["recompile_reasons"] == reasons[1:]


def test_cache_limit_gives_one_summarized_warning(caplog):
    @ft.optimize("eager")
    def f(x):
        return x + 1

    with ft.config.patch(cache_size_limit=2), caplog.at_level(logging.WARNING, logger="framehook.translator"):
        for dtype in ("float64", "float32", "int64", "int32", "int8"):
            f(np.ones(3, dtype))
    warnings = [r.getMessage() for r in caplog.records if "cache_size_limit" in r.getMessage()]
    assert len(warnings) == 1
    text = warnings[0]
    assert "reached config.cache_size_limit (2)" in text and "Recompilation reasons seen" in text
    assert "expected dtype float64, got dtype float32" in text
    assert "(last call from " in text and "test_export_debug.py:" in text


def test_cache_limit_message_and_describe_failures():
    long = cache_limit_message(step.__code__, 8, [f"r{i}" for i in range(25)], shown=20)
    assert "  - r19" in long and "r20" not in long and "... and 5 more" in long

    class Plain:
        def __call__(self, f_locals):
            return False

    assert describe_failures(Plain(), {}) == ["guards of a cache entry not made by the translator failed"]
    one = Plain()
    one.fail_reason = lambda f_locals: "only one"
    assert describe_failures(one, {}) == ["only one"]


def test_cache_limit_strict_raises():
    from framehook.translator.exc import CacheLimitExceeded

    @ft.optimize_assert("eager")
    def f(x):
        return x + 1

    with ft.config.patch(cache_size_limit=1):
        f(np.ones(2))
        with pytest.raises(CacheLimitExceeded, match="Recompilation reasons seen"):
            f(np.ones(3))


def test_pickle_of_fused_kernel_roundtrip():
    from framehook.translator.backends.numexpr import FusedKernel

    k = pickle.loads(pickle.dumps(FusedKernel("i0 + 1", ["i0"], np.dtype("float64"), 1)))
    assert k.expression == "i0 + 1"


def _rewriting_backend(graph, example_inputs):
    forward = graph.forward
    forward.fused_graph = graph  # a backend that shows what it compiled (as numexpr does)
    return forward


def test_dump_backend_graph_without_numexpr(tmp_path):
    def poly(x):
        return (x * 2.0 + 1.0) * x + np.array([1.0, 2.0, 3.0])

    ft.optimize(_rewriting_backend)(poly)(np.ones(3))
    names = {os.path.basename(p) for p in ft.debug.dump(poly, str(tmp_path))}
    assert "entry0_graph0_backend.py" in names
    forward = debug.load_graph(str(tmp_path / "entry0_graph0_backend.py"))
    np.testing.assert_allclose(forward(np.full(3, 2.0)), poly(np.full(3, 2.0)))


def test_graph_module_source_pickles_constants(tmp_path):
    from framehook.translator.graph import ArrayMeta, Graph

    g = Graph("g")
    x = g.placeholder("x", ArrayMeta((2,), np.dtype("float64")))
    y = g.call(np.add, (x, 1.0), {"dtype": np.dtype("float32")}, meta=ArrayMeta((2,), np.dtype("float32")))
    g.output(y)
    text, pickled = debug.graph_module_source(g, "c.pkl")
    assert "_constants[" in text and list(pickled.values()) == [np.dtype("float32")]
    (tmp_path / "g.py").write_text(text)
    with open(tmp_path / "c.pkl", "wb") as f:
        pickle.dump(pickled, f)
    assert debug.load_graph(str(tmp_path / "g.py"))(np.ones(2)).dtype == np.float32


def with_resume(x):
    y = x * 2.0
    print("between graphs")
    return y + 1.0


def test_dump_follows_resume_functions(tmp_path, capsys):
    opt = ft.optimize("eager")(with_resume)
    np.testing.assert_array_equal(opt(np.ones(2)), np.full(2, 3.0))
    paths = ft.debug.dump(with_resume, str(tmp_path))
    index = (tmp_path / "index.txt").read_text()
    assert "framehook dump of with_resume" in index
    resumed = [p for p in paths if os.path.basename(p).startswith("resume")]
    if resumed:  # graph breaks resume in a generated function (when the translator supports it)
        assert any(p.endswith("_graph0.py") for p in resumed)
        assert "resume1: framehook dump of" in index


def test_called_codes_skips_graph_functions():
    def f():
        return 1

    f.graph_source = "x"

    def g():
        return 2

    code = (lambda: None).__code__.replace(co_consts=(None, f, g))
    assert debug._called_codes(code) == [g.__code__]


def test_recompile_log_names_the_call_site(caplog):
    @ft.optimize("eager")
    def f(x):
        return x + 1

    f(np.ones(3))
    with caplog.at_level(logging.INFO, logger="framehook.translator.recompiles"):
        f(np.ones(3, np.float32))
    assert "user's stack at the call (most recent call last):" in caplog.text
    assert ", in test_recompile_log_names_the_call_site\n    f(np.ones(3, np.float32))" in caplog.text


def fused(x, y):
    return (x * 2.0 + y) ** 2 - x


def test_export_dynamic_and_backend():
    exported = ft.export(fused, dynamic=True)(np.ones(4), np.ones(4))
    assert not any("shape ==" in g for g in exported.guards)
    np.testing.assert_array_equal(exported(np.arange(6.0), np.ones(6)), fused(np.arange(6.0), np.ones(6)))
    with pytest.raises(ExportGuardError, match="expected ndim 1, got 2"):
        exported(np.ones((2, 2)), np.ones(2))
    pytest.importorskip("numexpr", reason="numexpr is not installed")
    with_numexpr = ft.export(fused, backend="numexpr")(np.ones(4), np.ones(4))
    np.testing.assert_allclose(with_numexpr(np.arange(4.0), np.ones(4)), fused(np.arange(4.0), np.ones(4)))


def test_explain_stays_the_function_after_export():
    import subprocess
    import sys

    code = (
        "import numpy as np, framehook.translator as ft\n"
        "ft.export(lambda x: x + 1)(np.ones(2))\n"
        "assert callable(ft.explain), ft.explain\n"
    )
    subprocess.run([sys.executable, "-c", code], check=True)
