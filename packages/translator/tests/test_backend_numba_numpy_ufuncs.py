"""Transcendental ufuncs run by numpy's own loops from inside a numba kernel
(``numpy_ufuncs``): which calls are left to numpy, that the values are numpy's bit for bit,
that the floating-point flags raised before and inside numpy's loop reach the caller (the
call then warns or raises as plain code does), that small arrays take numba's loop, and
that such a kernel is found again in numba's disk cache by a new process."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
import warnings
from typing import Any, Dict, List, Tuple

import numpy as np
import pytest

numba = pytest.importorskip("numba", reason="numba is not installed for this interpreter")
import framehook.translator as ft  # noqa: E402
from framehook.translator.backends import numba as bnb  # noqa: E402
from framehook.translator.backends.numba import fpstatus, fusion, numpy_ufuncs  # noqa: E402
from framehook.translator.backends.numba.fusion import FusedStore  # noqa: E402
from framehook.translator.backends.numba.numpy_ufuncs import NUMPY_FROM, NumpyUfunc  # noqa: E402
from test_backend_numba import assert_as_plain, captured_graph, numba_cache  # noqa: E402,F401 - the cache fixture

BIG = (16, NUMPY_FROM // 8)  # NUMPY_FROM * 2 elements: numpy's loop
SMALL = (3, 5)  # numba's


def _kernel(fn: Any, args: Tuple[Any, ...]) -> Tuple[Any, str]:
    """The compiled kernel of ``fn``'s graph (its inputs in ``fn``'s order) and its source."""
    lowered = bnb.lower(captured_graph(fn, *args), args)
    assert lowered.reason is None, lowered.reason
    scope: Dict[str, Any] = dict(lowered.scope)
    exec(compile(lowered.source, "<kernel>", "exec"), scope)  # noqa: S102 - the generated kernel
    return numba.njit(error_model=lowered.error_model)(scope["forward"]), lowered.source


def _plan(fn: Any, *args: Any) -> List[Any]:
    return fusion.rewrite(captured_graph(fn, *args))[1]


def _gelu(x, shift):
    return 0.5 * x * (1.0 + np.tanh(0.79788456 * (x + shift)))


def test_a_transcendental_call_is_left_to_numpy_and_the_trees_around_it_still_fuse():
    x = np.linspace(-3, 3, 24).reshape(4, 6)
    plan = _plan(_gelu, x, 0.25)
    ufuncs = [p for p in plan if isinstance(p, NumpyUfunc)]
    assert [u.ufunc for u in ufuncs] == [np.tanh] and ufuncs[0].in_place == 0
    assert sum(isinstance(p, FusedStore) for p in plan) == 2, plan  # the argument, and the rest


@pytest.mark.parametrize(
    "fn, dtype, left",
    [
        (lambda x: np.sin(x) * 2.0, np.float64, False),  # float64 sin: as fast in numba's loop
        (lambda x: np.sin(x) * 2.0, np.float32, True),
        (lambda x: np.sqrt(x) * 2.0, np.float64, False),  # vectorised by LLVM: stays fused
        (lambda x: np.exp(x) * 2, np.int64, False),  # integer input: another dtype out
        (lambda x: np.arctan2(x + 1.0, x * 2.0), np.float64, True),
        (lambda x: np.arctan2(x, x[:1]), np.float64, False),  # broadcast: numba's loop
    ],
)
def test_which_calls_are_left_to_numpy(fn, dtype, left):
    x = np.linspace(1, 2, 12, dtype=dtype).reshape(3, 4)
    plan = _plan(fn, x)
    assert any(isinstance(p, NumpyUfunc) for p in plan) == left, plan


def test_an_input_is_never_written_and_a_dying_temporary_is_reused():
    def direct(x):
        return np.exp(x)

    x = np.linspace(0, 1, BIG[0] * BIG[1]).reshape(BIG)
    plan = _plan(direct, x)
    assert [p.in_place for p in plan] == [None]
    kernel, _ = _kernel(direct, (x,))
    keep = x.copy()
    assert np.array_equal(kernel(x), np.exp(keep)) and np.array_equal(x, keep)
    kernel, source = _kernel(_gelu, (x, 0.5))
    assert "_loop(" in source
    assert np.array_equal(kernel(x, 0.5), _gelu(x, 0.5))  # numpy's loop: numpy's values, bit for bit


_FUNCS = {
    "exp": lambda x: np.exp(x * 3.0) - 1.0,
    "log": lambda x: np.log(x + 0.5) * 2.0,
    "tanh": lambda x: np.tanh(x - 0.25) + x,
    "arcsin": lambda x: np.arcsin(x * 0.5) / 3.0,
    "log1p": lambda x: np.log1p(x * x) + 1.0,
    "power": lambda x: np.power(x + 1.0, x * 0.5),
    "arctan2": lambda x: np.arctan2(x - 0.5, x + 0.25),
}


@pytest.mark.parametrize("name", sorted(_FUNCS))
@pytest.mark.parametrize("dtype", [np.float64, np.float32])
@pytest.mark.parametrize("shape", [BIG, SMALL], ids=["numpy-loop", "numba-loop"])
def test_values_are_numpys_on_both_paths(name, dtype, shape):
    fn = _FUNCS[name]
    x = np.random.default_rng(7).random(shape).astype(dtype)
    kernel, source = _kernel(fn, (x,))
    assert f"fh_numpy_loop({numpy_ufuncs._INDEX[getattr(np, name)]}, " in source, source
    got, want = kernel(x), fn(x)
    assert got.dtype == want.dtype and got.shape == want.shape
    if shape == BIG:
        assert np.array_equal(got, want), name  # numpy's own loop
    else:
        np.testing.assert_allclose(got, want, rtol=2e-6 if dtype == np.float32 else 1e-13)


def test_flags_raised_before_numpys_loop_still_reach_the_caller():
    # the division by zero is in numba's loop, before numpy's loop (which clears the flags)
    def divide_then_exp(x, y):
        return np.exp(x / y)

    x = np.ones(BIG)
    y = np.ones(BIG)
    y[3, 4] = 0.0
    with np.errstate(divide="ignore"):
        kernel, _ = _kernel(divide_then_exp, (x, y))
    fpstatus.clear()
    with np.errstate(all="ignore"):
        kernel(x, y)
    assert fpstatus.raised() & fpstatus.FLAGS["divide"]
    # and those numpy's loop raises (exp overflows), with the earlier ones
    fpstatus.clear()
    x[0, 0] = 1e4
    with np.errstate(all="ignore"):
        kernel(x, y)
    assert fpstatus.raised() & fpstatus.FLAGS["over"] and fpstatus.raised() & fpstatus.FLAGS["divide"]
    fpstatus.clear()


def _risky(x):
    return np.log(x - 1.0) * 2.0 + np.exp(x * 800.0)


@pytest.mark.parametrize(
    "settings", [{}, {"all": "ignore"}, {"divide": "raise"}, {"over": "raise"}, {"invalid": "warn"}]
)
def test_warnings_and_errors_of_numpys_loop_are_plain_codes(settings):
    ok = np.linspace(1.5, 2.0, BIG[0] * BIG[1]).reshape(BIG)
    bad = ok.copy()
    bad[0, :3] = [1.0, 0.5, 2.0]  # log(0): divide; log(-0.5): invalid; exp(1600): over
    with np.errstate(**settings):
        notes = assert_as_plain(_risky, (ok,), (bad,), (ok,))
    assert any(n.status == "compiled" for n in notes), [str(n) for n in notes]


def test_numpys_loop_does_not_warn_inside_the_kernel():
    x = np.zeros(BIG)
    with np.errstate(divide="ignore"):
        kernel, _ = _kernel(lambda x: np.log(x) + 1.0, (x,))
    with warnings.catch_warnings(), np.errstate(divide="raise"):  # plain would raise here
        warnings.simplefilter("error")
        out = kernel(x)  # the kernel leaves the judgement to its caller, who reads the flags
    assert np.isneginf(out).all()
    fpstatus.clear()


def test_the_cache_key_names_every_ufunc_in_the_order_kernels_number_them():
    from framehook.translator.backends.numba import lowering

    why, text = lowering._global_ok("fh_numpy_loop", numpy_ufuncs.LOOP)
    assert why is None and text == numpy_ufuncs.LOOP.key
    assert text.split(": ")[1].split() == [u.__name__ for u in numpy_ufuncs._TABLE]
    assert lowering._global_ok("numpy_exp", np.exp) == (None, "ufunc exp")  # not the extern's text


def test_a_failing_loop_reports_instead_of_raising_into_the_kernel():
    x = np.ones(4)
    out = np.empty(4)
    ok = numpy_ufuncs._callback(numpy_ufuncs._INDEX[np.exp], 0, x.ctypes.data, 0, out.ctypes.data, 4)
    assert ok == 0 and np.array_equal(out, np.exp(x))
    assert numpy_ufuncs._callback(len(numpy_ufuncs._TABLE), 0, x.ctypes.data, 0, out.ctypes.data, 4) == 1


def test_operands_of_other_shapes_than_traced_take_numbas_loop():
    def angle(x, y):
        return np.arctan2(x, y)

    x = np.linspace(0.1, 1, BIG[0] * BIG[1]).reshape(BIG)
    kernel, _ = _kernel(angle, (x, x * 2.0))
    np.testing.assert_allclose(kernel(x, x[:1] * 2.0), angle(x, x[:1] * 2.0), rtol=1e-13)  # broadcast now


def test_a_strided_argument_takes_numbas_loop():
    def strided(x):
        return np.exp(x[:, ::2])

    x = np.linspace(0, 1, 4 * BIG[0] * BIG[1]).reshape(BIG[0], -1)
    kernel, _ = _kernel(strided, (x,))
    np.testing.assert_allclose(kernel(x), strided(x), rtol=1e-13)


_CHILD = textwrap.dedent("""
    import numpy as np
    import framehook.translator as ft
    from framehook.translator.backends import numba as bnb
    notes = []
    bnb.add_note_observer(notes.append)
    def soft(x):
        e = np.exp(x - x.max(axis=1, keepdims=True))
        return e / e.sum(axis=1, keepdims=True)
    ft.config.numba_background = False
    ft.config.numba_measure_calls = 0
    x = np.linspace(-4.0, 4.0, 4096).reshape(8, 512)
    out = ft.optimize("numba")(soft)(x)
    out = ft.optimize("numba")(soft)(x)
    assert np.allclose(out, soft(x)), out
    print(";".join(n.status + ":" + (n.cache if n.status == "compiled" else n.reason) for n in notes))
""")


def test_a_new_process_loads_a_kernel_calling_numpys_loop_from_the_cache(tmp_path):
    env = dict(
        os.environ, FRAMEHOOK_NUMBA_CACHE_DIR=str(tmp_path), PYTHONPATH=os.pathsep.join(p for p in sys.path if p)
    )
    seen = []
    for _ in range(2):
        done = subprocess.run([sys.executable, "-c", _CHILD], env=env, capture_output=True, text=True, timeout=300)
        assert done.returncode == 0, done.stderr
        seen.append(done.stdout.strip().split(";")[-1])
    assert seen == ["compiled:miss", "compiled:hit"], seen


def test_the_backend_keeps_such_a_kernel_and_agrees_with_plain():
    x = np.random.default_rng(3).random((40, 300))
    notes = assert_as_plain(_gelu, (x, 0.5), (x[:2, :3].copy(), 0.5))
    assert {n.status for n in notes} == {"compiled"}, [str(n) for n in notes]
    ft.reset()
