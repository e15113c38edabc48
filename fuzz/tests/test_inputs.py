"""fhfuzz.inputs: argument texts rebuild their values exactly (bytes, dtype, shape) with the
layout and flags asked for."""

from __future__ import annotations

import math
import sys
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis.extra import numpy as hnp

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from fhfuzz import inputs  # noqa: E402
from fhfuzz.drawing import drawing  # noqa: E402
from fhfuzz.program import evaluate_arguments  # noqa: E402

FAST = drawing(derandomize=True)


def rebuild(text):
    return evaluate_arguments(f"({text},)")[0]


def check_layout(got, layout, writeable):
    assert got.flags.writeable == writeable
    if got.ndim == 0 or got.size <= 1:
        return
    if layout == "F" and got.ndim >= 2:
        assert got.flags.f_contiguous
        # with one axis longer than 1 the array is C-contiguous too
        assert not got.flags.c_contiguous or sum(side > 1 for side in got.shape) < 2
    elif layout == "reversed" and got.shape[0] > 1:
        assert got.strides[0] < 0
    elif layout == "strided" and got.shape[-1] >= 1:
        assert not got.flags.c_contiguous and got.strides[-1] == 2 * got.itemsize
    elif layout == "C":
        assert got.flags.c_contiguous


def same_array(got, want):
    assert got.dtype == want.dtype and got.shape == want.shape
    assert np.ascontiguousarray(got).tobytes() == np.ascontiguousarray(want).tobytes()


@pytest.mark.parametrize("dtype", inputs.DTYPES)
@pytest.mark.parametrize("layout", inputs.LAYOUTS)
@pytest.mark.parametrize("writeable", [False, True])
def test_array_text_rebuilds_value_layout_and_flags(dtype, layout, writeable):
    want = (np.arange(24) % 7 - 3).astype(dtype).reshape(2, 3, 4)
    if want.dtype.kind in "fc":
        flat = want.reshape(-1)
        flat[0], flat[1], flat[2] = np.nan, -0.0, np.inf
    got = rebuild(inputs.array_text(want, layout, writeable))
    same_array(got, want)
    check_layout(got, layout, writeable)


def test_nan_payload_and_negative_zero_survive():
    want = np.frombuffer(bytes.fromhex("0100000000f8ff7f0000000000000080"), dtype="<f8")
    got = rebuild(inputs.array_text(want, "reversed", True))
    assert got.tobytes() == want.tobytes()  # payload 1 on the NaN, the sign on the zero
    assert math.copysign(1.0, got[1]) == -1.0


@pytest.mark.parametrize("shape", [(), (0,), (0, 3), (5,), (1, 2, 3, 2)])
def test_every_shape_rebuilds(shape):
    want = np.ones(shape, dtype="<i2")
    for layout in inputs.LAYOUTS if shape else ("C",):
        same_array(rebuild(inputs.array_text(want, layout)), want)


def test_bad_layouts_are_named():
    with pytest.raises(ValueError, match="layout: expected one of C, F, reversed, strided"):
        inputs.array_text(np.zeros(3), "diagonal")
    with pytest.raises(ValueError, match="0-d"):
        inputs.array_text(np.zeros(()), "F")


@settings(FAST, max_examples=60)
@given(hnp.arrays(hnp.scalar_dtypes(), hnp.array_shapes(min_dims=1, max_dims=4, min_side=0, max_side=3)))
def test_any_array_rebuilds_in_any_layout(want):
    want = want.astype(want.dtype.newbyteorder("<")) if want.dtype.byteorder == ">" else want
    for layout in inputs.LAYOUTS:
        for writeable in (False, True):
            got = rebuild(inputs.array_text(want, layout, writeable))
            same_array(got, want)
            check_layout(got, layout, writeable)


@pytest.mark.parametrize("value", [0.0, -0.0, 1.5, -1e308, 5e-324, float("inf"), float("-inf")])
def test_float_text_is_exact(value):
    got = rebuild(inputs.float_text(value))
    assert got == value and math.copysign(1.0, got) == math.copysign(1.0, value)


def test_nan_float_text():
    assert math.isnan(rebuild(inputs.float_text(float("nan"))))


@settings(FAST, max_examples=60)
@given(inputs.values())
def test_values_evaluate_and_are_fresh(text):
    first, second = rebuild(text), rebuild(text)
    assert type(first) is type(second)
    if isinstance(first, np.ndarray):
        assert first is not second
        same_array(first, second)
    assert repr(first) == repr(second)


@settings(FAST, max_examples=40)
@given(inputs.grammar_arguments(), inputs.grammar_arguments(other=True))
def test_grammar_arguments_fit_the_parameters(text, other):
    a, b, x, s, arr, _ = evaluate_arguments(text)
    assert [type(v) for v in (a, b, x, s)] == [int, int, float, str]
    assert arr.ndim >= 1 and arr.dtype.str in inputs.REAL_DTYPES
    assert isinstance(evaluate_arguments(other)[4], np.ndarray)


def test_ints_reach_beyond_64_bits():
    @settings(FAST, max_examples=100)
    @given(inputs.ints())
    def collect(text):
        seen.append(rebuild(text))

    seen = []
    collect()
    assert any(abs(v) >= 2**64 for v in seen) and any(-3 <= v <= 9 for v in seen)
