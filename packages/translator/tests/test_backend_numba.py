"""The ``numba`` backend: every corpus case agrees with plain numpy (first call, cache hit,
recompiles, first call again), graphs numba cannot take or whose semantics differ fall
back to eager with an FH016 note, the on-disk cache is reused only for the same graph and
input types, and explain() reports the notes.

The corpus run compiles about 230 graphs cold: 4.6 minutes for the file on 3.11 untraced
(load 1-2), 6-12 minutes with the machine's two cores shared. Under a tracer (coverage, as
in CI) each interpreter runs a different seventh of the corpus (the matrix runs all of it)
and half the fuzz programs, unless FRAMEHOOK_NUMBA_CORPUS=all.
Kernels are compiled into one cache directory per test session (FRAMEHOOK_NUMBA_CACHE_DIR),
so the cache-hit tests reload kernels the corpus run compiled.
"""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from typing import Any, List

import numpy as np
import pytest

numba = pytest.importorskip("numba", reason="numba is not installed for this interpreter")
import framehook.translator as ft  # noqa: E402
from corpus_helpers import assert_close, corpus_modules  # noqa: E402
from framehook.translator.backends import numba as bnb  # noqa: E402
from framehook.translator.exc import InvalidBackendError  # noqa: E402
from symbolic_helpers import outcome  # noqa: E402

CASES = [(m.__name__.replace("_corpus_count_", ""), case) for m in corpus_modules() for case in m.CORPUS]
# Under a tracer (coverage in CI) numba's compiler runs several times slower: each
# interpreter then runs a seventh of the corpus, a different seventh per minor version, so
# that the matrix (3.9-3.15) runs all of it. FRAMEHOOK_NUMBA_CORPUS=all asks for the whole
# corpus (the default untraced).
_WHOLE = os.environ.get("FRAMEHOOK_NUMBA_CORPUS", "all" if sys.gettrace() is None else "sample") == "all"
RUN_CASES = CASES if _WHOLE else CASES[sys.version_info.minor % 7 :: 7]


@pytest.fixture(scope="module", autouse=True)
def numba_cache(tmp_path_factory: Any) -> Any:
    path = tmp_path_factory.mktemp("numba-cache")
    old = os.environ.get("FRAMEHOOK_NUMBA_CACHE_DIR")
    os.environ["FRAMEHOOK_NUMBA_CACHE_DIR"] = str(path)
    # every call runs the kernel (one test measures), compiled on the call that needs it
    with ft.config.patch(numba_measure_calls=0, numba_background=False):
        yield path
    if old is None:
        del os.environ["FRAMEHOOK_NUMBA_CACHE_DIR"]
    else:
        os.environ["FRAMEHOOK_NUMBA_CACHE_DIR"] = old


@pytest.fixture
def notes() -> Any:
    seen: List[bnb.NumbaNote] = []
    bnb.add_note_observer(seen.append)
    yield seen
    bnb.remove_note_observer(seen.append)


def _calls(calls: Any) -> Any:
    for call in [calls[0], calls[0], *calls[1:], calls[0]]:
        yield (call if len(call) == 2 and isinstance(call[0], tuple) and isinstance(call[1], dict) else (call, {}))


def run_under_numba(fn: Any, calls: Any) -> None:
    ft.reset()
    opt = ft.optimize("numba")(fn)
    try:
        for args, kwargs in _calls(calls):
            want = outcome(fn, args, kwargs)
            got = outcome(opt, args, kwargs)
            assert got[0] == want[0], (
                f"{fn.__name__}: plain {want[0]}s {want[1]!r:.200}, numba {got[0]}s {got[1]!r:.200}"
            )
            if want[0] == "raise":
                assert got[1][0] is want[1][0], f"{got[1]} != {want[1]}"
            else:
                assert_close(got[1], want[1])
            assert_close(got[2], want[2], "arguments after the call")
    finally:
        ft.reset()


_compiled_cases: List[str] = []


@pytest.mark.parametrize("module,case", RUN_CASES, ids=[f"{m}.{c[0].__name__}" for m, c in RUN_CASES])
def test_corpus_case_agrees_under_numba(module, case, notes, capsys):
    run_under_numba(case[0], case[1])
    if any(n.status == "compiled" for n in notes):
        _compiled_cases.append(case[0].__name__)
    capsys.readouterr()


def test_the_corpus_agreement_is_not_vacuous(notes, capsys):
    # numba does compile most corpus graphs (the rest fall back, with a reason each)
    by_name = {case[0].__name__: case for _, case in CASES}
    for name in ("black_scholes_call", "gelu", "smooth_abs"):
        run_under_numba(*by_name[name][:2])
    assert {n.graph for n in notes if n.status == "compiled"}, [str(n) for n in notes]
    assert all(n.reason for n in notes if n.status == "fallback")
    capsys.readouterr()


# ------------------------------------------------------------------ fallbacks


def _floor(x, k):
    return x // k + 1


def _errstate(x):
    with np.errstate(divide="ignore"):
        y = 1.0 / x
    return y * 2.0


def _int_power(n, x):
    return x * (n**70)


def _object_graph(x, table):
    return x + table[1]


def _int_cube(n, x):
    return x + n * n * n


def _int8_plus(a, k):
    return a + k


@pytest.mark.parametrize(
    "fn,args,why",
    [
        (_floor, (np.arange(-3, 4), 0), "integer-array // or %"),
        (_int_power, (3, np.ones(3)), "more than 64 bits"),
        (_int_cube, (2**30, np.ones(3)), "more than 64 bits"),
        (_int8_plus, (np.arange(3, dtype=np.int8), 5), "OverflowError"),
    ],
)
def test_risky_graphs_fall_back_with_a_reason(fn, args, why, notes):
    ft.reset()
    with np.errstate(all="ignore"):
        want = outcome(fn, args, {})
    got = outcome(ft.optimize("numba")(fn), args, {})
    assert got[0] == want[0] == "return"
    assert_close(got[1], want[1])
    falls = [n for n in notes if n.status == "fallback"]
    assert falls and why in falls[0].reason and falls[0].code == "FH016"
    ft.reset()


# ------------------------------------------------------------------ as plain Python does


def _observed(fn: Any, args: Any) -> Any:
    """What a call does: its result or exception (type and message), the warnings it
    gives (category and message), and its array arguments afterwards."""
    import copy
    import warnings

    args = copy.deepcopy(args)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        try:
            result: Any = ("return", fn(*args))
        except Exception as e:  # noqa: BLE001 - compared with plain's
            result = ("raise", type(e), str(e))
    return result, [(w.category, str(w.message)) for w in caught], args


def assert_as_plain(fn: Any, *calls: Any) -> List[bnb.NumbaNote]:
    """Each call of ``fn`` under numba (twice: compiling, then compiled) does exactly what
    plain code does; the notes the backend gave."""
    seen: List[bnb.NumbaNote] = []
    bnb.add_note_observer(seen.append)
    ft.reset()
    try:
        opt = ft.optimize("numba")(fn)
        for args in calls:
            for _ in range(2):
                want, got = _observed(fn, args), _observed(opt, args)
                assert got[0][0] == want[0][0], (got[0], want[0])
                if want[0][0] == "raise":
                    assert got[0][1:] == want[0][1:]
                else:
                    assert_close(got[0][1], want[0][1])
                assert got[1] == want[1], "warnings differ"
                assert_close(got[2], want[2], "arguments after the call")
    finally:
        bnb.remove_note_observer(seen.append)
        ft.reset()
    return seen


def _recip(x):
    return (1.0 / x) * 2.0 + np.log(x)


@pytest.mark.parametrize(
    "settings", [{}, {"all": "ignore"}, {"divide": "raise"}, {"invalid": "raise"}, {"all": "warn", "under": "warn"}]
)
def test_floating_point_warnings_and_errors_as_plain_under_each_errstate(settings):
    x = np.array([1.0, 0.0, -1.0, 1e-310])
    ok = np.array([1.0, 2.0, 4.0])
    with np.errstate(**settings):
        notes = assert_as_plain(_recip, (ok,), (x,), (ok,))
    assert any(n.status == "compiled" for n in notes), [str(n) for n in notes]


def _norm_f32(x, g, eps):
    mu = x.mean(axis=1, keepdims=True)
    spread = ((x - mu) ** 2).mean(axis=1, keepdims=True)
    return (x - mu) / np.sqrt(spread + eps) * g, x.std(axis=0, ddof=1)


@pytest.mark.skipif(int(np.__version__.split(".")[0]) < 2, reason="numpy 1 promotes Python floats by value")
@pytest.mark.parametrize("settings", [{}, {"over": "raise"}, {"all": "ignore"}])
def test_a_python_float_in_a_float32_tree_is_cast_first_as_numpy_2_does(settings):
    x = np.linspace(-2, 3, 24, dtype=np.float32).reshape(4, 6)
    g = np.linspace(0.5, 1.5, 6, dtype=np.float32)
    # 1e-5 is not a float32: numpy rounds it to one before adding; 1e300 overflows that cast
    # (a warning, or an error) and the kernel's call is redone as plain code
    with np.errstate(**settings):
        notes = assert_as_plain(_norm_f32, (x, g, 1e-5), (x, g, 0.1), (x, g, 1e300), (x[:1], g, 1e-5))
    assert any(n.status == "compiled" for n in notes), [str(n) for n in notes]
    assert not any("promotion" in str(n) or "TypingError" in str(n) for n in notes), [str(n) for n in notes]


def _errstate_raise(x):
    with np.errstate(divide="raise"):
        y = 1.0 / x
    return y * 2.0


@pytest.mark.parametrize("outer", [{}, {"all": "ignore"}])
def test_a_captured_errstate_block_as_plain(outer):
    with np.errstate(**outer):
        for fn in (_errstate, _errstate_raise):
            notes = assert_as_plain(fn, (np.array([1.0, 2.0]),), (np.array([0.0, 2.0]),))
            assert any(n.status == "compiled" for n in notes), [str(n) for n in notes]


def test_python_float_math_raises_as_plain_even_where_numpy_ignores_errors():
    import math

    def grow(x, s):
        return x * math.exp(s)

    with np.errstate(all="ignore"):
        assert_as_plain(grow, (np.ones(3), 2.0), (np.ones(3), 1000.0))


def test_a_kernel_that_keeps_needing_plain_error_handling_runs_eager_for_good(notes):
    ft.reset()
    opt = ft.optimize("numba")(_recip)
    x = np.array([0.0, 1.0])
    with np.errstate(all="raise"):
        for _ in range(bnb.RERUN_LIMIT + 1):
            with pytest.raises(FloatingPointError):
                opt(x)
    falls = [n for n in notes if n.status == "fallback"]
    assert len(falls) == 1 and "floating-point error handling" in falls[0].reason
    ft.reset()


def _write_then_index(a, x, k):
    a[0] = 5.0
    a[1:] = a[1:] * 2.0
    return a + x[k]


def test_an_exception_mid_kernel_leaves_the_writes_and_message_plain_gives():
    a, x = np.arange(4.0), np.arange(3.0)
    notes = assert_as_plain(_write_then_index, (a, x, 1), (a, x, 9), (a, x, -2), (a, x, -4))
    assert any(n.status == "compiled" for n in notes), [str(n) for n in notes]


def _loop_update(a, b, n):
    for t in range(n):
        a[1:-1] = (a[:-2] + a[2:]) * 0.5 + b[t]
    return a


def test_an_exception_in_a_captured_loop_leaves_the_writes_plain_gives():
    # b has fewer elements than the loop has steps: plain raises at step 3 with its writes
    a = np.arange(8.0)
    assert_as_plain(_loop_update, (a, np.ones(5), 4), (a, np.ones(3), 4))


def _index_math(x, n):
    m = n * 2 - 1
    return x[: m % x.shape[0]] * (n + x.shape[0])


def test_bounded_python_int_arithmetic_compiles_and_agrees():
    notes = assert_as_plain(_index_math, (np.arange(10.0), 3), (np.arange(10.0), 4))
    assert any(n.status == "compiled" for n in notes), [str(n) for n in notes]


def test_python_ints_beyond_the_argument_bound_run_eager_exactly():
    def scale(x, n):
        return x * (n * n)

    big = 2**40
    assert_as_plain(scale, (np.ones(2), 3), (np.ones(2), big))


def test_a_returned_view_of_an_input_is_linked_as_plain(notes):
    def evens(x):
        y = x[::2]
        return y * 1.0, y

    ft.reset()
    x = np.arange(6.0)
    opt = ft.optimize("numba")(evens)
    for _ in range(2):
        got = opt(x)
        assert got[1].base is evens(x)[1].base is x
        np.testing.assert_array_equal(got[0], evens(x)[0])
    assert any("view of an input" in n.reason for n in notes if n.status == "fallback")
    ft.reset()


def test_a_graph_numba_cannot_type_falls_back_and_never_raises_numba_errors(notes):
    def join(x, n):
        return np.array2string(x[:n] * 2.0)  # a numpy function numba does not implement

    ft.reset()
    x = np.arange(5.0)
    want = join(x, 3)
    assert ft.optimize("numba")(join)(x, 3) == want
    assert ft.optimize("numba")(join)(x, 3) == want
    ft.reset()


def test_numba_typing_failure_is_a_fallback(notes):
    # numba cannot take a 3-argument np.clip of mixed scalars and a complex array here; the
    # call still returns plain's result, and the reason quotes numba
    def clipc(z):
        return np.sort_complex(z) * 2.0

    ft.reset()
    z = np.array([3 + 1j, 1 - 2j, 2 + 0j])
    want = clipc(z)
    got = ft.optimize("numba")(clipc)(z)
    np.testing.assert_array_equal(got, want)
    reasons = [n.reason for n in notes if n.status == "fallback"]
    compiled = [n for n in notes if n.status == "compiled"]
    # numba either compiles it (then it agreed above) or falls back saying numba refused
    assert compiled or any("numba cannot compile it" in r for r in reasons), [str(n) for n in notes]
    ft.reset()


def test_out_of_bounds_index_raises_index_error_as_plain():
    def pick(x, i):
        return x[i] * 2.0

    ft.reset()
    opt = ft.optimize("numba")(pick)
    x = np.arange(4.0)
    assert opt(x, 2) == pick(x, 2) and type(opt(x, 2)) is type(pick(x, 2))
    with pytest.raises(IndexError):
        pick(x, 7)
    with pytest.raises(IndexError):
        opt(x, 7)
    assert opt(x, -1) == pick(x, -1)
    ft.reset()


def test_float_division_by_a_python_zero_raises_as_plain():
    def scale(x, d):
        return x * (1.0 / d)

    ft.reset()
    opt = ft.optimize("numba")(scale)
    x = np.ones(3)
    np.testing.assert_array_equal(opt(x, 4.0), scale(x, 4.0))
    with pytest.raises(ZeroDivisionError):
        opt(x, 0.0)
    ft.reset()


def test_non_default_error_settings_run_eager():
    def recip(x):
        return 1.0 / x

    ft.reset()
    opt = ft.optimize("numba")(recip)
    x = np.array([1.0, 0.0])
    with np.errstate(divide="ignore"):
        opt(x)  # compiled or not, the settings below must be honoured
    with np.errstate(divide="raise"):
        with pytest.raises(FloatingPointError):
            recip(x)
        with pytest.raises(FloatingPointError):
            opt(x)
    ft.reset()


def test_arguments_returned_as_they_are_keep_their_identity_and_mutation_is_seen():
    def bump(a, b):
        a += b
        return a, a.sum()

    ft.reset()
    opt = ft.optimize("numba")(bump)
    a, b = np.arange(4.0), np.ones(4)
    plain_a = a.copy()
    want = bump(plain_a, b)
    got = opt(a, b)
    assert got[0] is a
    np.testing.assert_array_equal(a, plain_a)
    assert type(got[1]) is type(want[1]) and got[1] == want[1]
    ft.reset()


def test_numba_frames_are_never_translated(notes):
    # numba's own Python code (its compiler; a typed dict's lazily compiled methods when a
    # graph returns a dict) runs with the frame callback off
    from framehook.translator.symbolic import add_observer, remove_observer

    def greeks(s, k):
        d = np.log(s / k)
        return {"d": d, "e": np.exp(-d)}

    reports: List[Any] = []
    add_observer(reports.append)
    try:
        ft.reset()
        got = ft.optimize("numba")(greeks)(np.linspace(1.0, 2.0, 5), 1.5)
    finally:
        remove_observer(reports.append)
        ft.reset()
    assert type(got) is dict and list(got) == ["d", "e"]
    assert_close(got, greeks(np.linspace(1.0, 2.0, 5), 1.5))
    assert [r.code.co_name for r in reports] == ["greeks"]


def test_missing_numba_names_the_extra(monkeypatch):
    # in one line; the strict form raises, the backend itself runs eager (test_availability)
    monkeypatch.setitem(sys.modules, "numba", None)
    with pytest.raises(InvalidBackendError, match=r"framehook-translator\[numba\]") as raised:
        bnb.require_numba()
    assert "\n" not in str(raised.value)


# ------------------------------------------------------------------ the on-disk cache


def _cache_note(fn: Any, *args: Any) -> List[bnb.NumbaNote]:
    seen: List[bnb.NumbaNote] = []
    bnb.add_note_observer(seen.append)
    try:
        ft.reset()
        ft.optimize("numba")(fn)(*args)
    finally:
        bnb.remove_note_observer(seen.append)
        ft.reset()
    return [n for n in seen if n.status == "compiled"]


def captured_graph(fn: Any, *args: Any) -> Any:
    """The graph the eager translator captures from ``fn(*args)`` (nothing cached after)."""
    from framehook.translator.symbolic import add_observer, remove_observer

    reports: List[Any] = []
    add_observer(reports.append)
    try:
        ft.reset()
        ft.optimize("eager")(fn)(*args)
    finally:
        remove_observer(reports.append)
        ft.reset()
    return reports[0].graph


def test_lowering_key_changes_with_the_graph_and_the_input_types():
    def axpy(a, x, y):
        return a * x + y

    def axmy(a, x, y):
        return a * x - y

    f64 = (2.0, np.ones(3), np.ones(3))
    f32 = (2.0, np.ones(3, np.float32), np.ones(3, np.float32))
    keys = {
        bnb.lower(captured_graph(axpy, *f64), f64).key,
        bnb.lower(captured_graph(axpy, *f32), f32).key,
        bnb.lower(captured_graph(axmy, *f64), f64).key,
    }
    assert len(keys) == 3 and all(keys)
    assert bnb.lower(captured_graph(axpy, *f64), f64).key in keys  # the same graph and types: the same key


def test_lowering_key_changes_with_scipys_presence(monkeypatch):
    # numba compiles `@` only with scipy: a kernel refused without it is tried again with it
    from framehook.translator.backends.numba import lowering

    def dot(a, x):
        return a @ x + 1.0

    ex = (np.ones((3, 3)), np.ones(3))
    graph = captured_graph(dot, *ex)
    keys = set()
    for version in ("1.17.1", None):
        monkeypatch.setattr(lowering, "_scipy_version", lambda v=version: v)
        keys.add(bnb.lower(graph, ex).key)
    assert len(keys) == 2


_CHILD = textwrap.dedent("""
    import sys, numpy as np
    import framehook.translator as ft
    from framehook.translator.backends import numba as bnb
    notes = []
    bnb.add_note_observer(notes.append)
    def axpy(a, x, y):
        return a * x + y
    ft.config.numba_background = False
    dtype = np.dtype(sys.argv[1])
    out = ft.optimize("numba")(axpy)(2.0, np.arange(4, dtype=dtype), np.ones(4, dtype=dtype))
    assert np.array_equal(out, 2.0 * np.arange(4, dtype=dtype) + 1), out
    assert out.dtype == (2.0 * np.ones(1, dtype=dtype)).dtype
    print(";".join(n.status + ":" + (n.cache if n.status == "compiled" else n.reason) for n in notes))
""")


def _child(dtype: str, cache: Any) -> str:
    env = dict(os.environ, FRAMEHOOK_NUMBA_CACHE_DIR=str(cache), PYTHONPATH=os.pathsep.join(p for p in sys.path if p))
    done = subprocess.run([sys.executable, "-c", _CHILD, dtype], env=env, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    return done.stdout.strip()


def test_a_new_process_reuses_the_kernel_only_for_the_same_graph_and_dtype(tmp_path):
    assert _child("float64", tmp_path) == "compiled:miss"
    assert _child("float64", tmp_path) == "compiled:hit"
    assert _child("int64", tmp_path) == "compiled:miss"  # another dtype: never the float64 kernel
    assert _child("int64", tmp_path) == "compiled:hit"


def test_where_numba_promotes_otherwise_than_numpy_the_graph_falls_back(notes):
    # numba computes float32 * 2.0 in float64; numpy 2 keeps float32
    def scale(x):
        return x * 2.0 + 1.0

    ft.reset()
    x = np.arange(4, dtype=np.float32)
    got = ft.optimize("numba")(scale)(x)
    assert got.dtype == scale(x).dtype == np.float32
    np.testing.assert_array_equal(got, scale(x))
    assert [n.status for n in notes] == ["fallback"] and "type promotion" in notes[0].reason
    ft.reset()


def test_explain_reports_numba_notes_and_times():
    def f(x):
        return np.sqrt(x * x + 1.0).sum()

    def g(x, k):
        return x // k

    out = ft.explain(f, backend="numba")(np.arange(5.0))
    assert out.result == f(np.arange(5.0))
    (note,) = out.backend_notes
    assert note.status == "compiled" and note.numba_seconds > 0 and note.cache in ("hit", "miss")
    assert out.compile_times and "Backend notes:" in str(out)
    out = ft.explain(g, backend="numba")(np.arange(5), 2)
    assert [n.code for n in out.backend_notes] == ["FH016"]
    assert "FH016" in str(out) and "integer-array //" in str(out)
    ft.reset()


def test_a_kernel_not_measured_faster_than_eager_runs_eager_for_good(notes, monkeypatch):
    def f(x):
        return x * 2.0 + 1.0

    import time

    kernel = bnb.NumbaGraph._call_kernel

    def slow_kernel(self, entry, args):  # a kernel made surely slower than eager
        time.sleep(0.005)
        return kernel(self, entry, args)

    monkeypatch.setattr(bnb.NumbaGraph, "_call_kernel", slow_kernel)
    ft.reset()
    with ft.config.patch(numba_measure_calls=2):
        opt = ft.optimize("numba")(f)
        for _ in range(5):
            np.testing.assert_array_equal(opt(np.ones(3)), f(np.ones(3)))
    assert [n.status for n in notes] == ["compiled", "fallback"], [str(n) for n in notes]
    assert "not measured faster than eager" in notes[-1].reason
    ft.reset()


def test_eager_first_compiles_on_a_later_call(notes):
    def f(x):
        return np.sqrt(x * x + 1.0)

    ft.reset()
    with ft.config.patch(numba_compile_after=2):
        opt = ft.optimize("numba")(f)
        for i in range(3):
            np.testing.assert_allclose(opt(np.arange(4.0)), f(np.arange(4.0)))
            assert [n.status for n in notes] == (["compiled"] if i == 2 else []), i
    ft.reset()


# ------------------------------------------------------------------ the fuzz kernel family

_FUZZ = os.path.join(os.path.dirname(__file__), os.pardir, os.pardir, os.pardir, "fuzz")


@pytest.mark.skipif(not os.path.isdir(_FUZZ), reason="fuzz/ is not beside the package (an sdist)")
def test_fuzz_kernel_and_errstate_programs_agree_under_numba():
    # fuzz/run.py's numba mode: floats within numpy.allclose, everything else exact
    sys.path.insert(0, os.path.abspath(_FUZZ))
    try:
        import run as fuzz_run
    finally:
        sys.path.pop(0)
    watcher = fuzz_run.FailedTranslations()
    share = 1 if _WHOLE else 2
    seeds = fuzz_run.seeds(3, 8 // share, "kernel") + fuzz_run.seeds(4, 4 // share, "errstate")
    compared = 0
    for seed in seeds:
        findings, n, _ = fuzz_run.check_seed(seed, ["numba"], watcher)
        assert findings == [], findings[0]
        compared += n
    assert compared > 3 * len(seeds)


def test_an_input_returned_after_swaps_in_a_loop_is_the_input_itself(notes):
    def ping_pong(a, b, steps):
        for _ in range(steps):
            b[1:-1] = (a[:-2] + a[2:]) * 0.5
            a, b = b, a
        return a

    ft.reset()
    opt = ft.optimize("numba")(ping_pong)
    for steps in (6, 7):
        a, b = np.arange(8.0), np.zeros(8)
        pa, pb = a.copy(), b.copy()
        want = ping_pong(pa, pb, steps)
        got = opt(a, b, steps)
        assert got is (a if want is pa else b)
        np.testing.assert_allclose(got, want)
    assert not [n for n in notes if n.status == "fallback"], [str(n) for n in notes]
    ft.reset()


def test_a_python_int_growing_around_a_captured_loop_runs_eager_exactly(notes):
    # 3**60 is far past int64: numba's loop would wrap, Python's int does not
    def grow(x, k, n):
        s = k
        for i in range(n):
            s = s * 3 + i
            x = x + s
        return x, s

    assert_as_plain(grow, (np.ones(2), 1, 10), (np.ones(2), 2, 12), (np.ones(2), 5, 60))
    falls = [n for n in notes if n.status == "fallback"]
    assert falls and "carried around a loop" in falls[0].reason, [str(n) for n in notes]
