"""Hypothesis strategies for the arguments of generated programs, as text.

Each strategy draws the *text* of a Python expression over ``np`` that rebuilds one value
exactly: ints of any size, floats by their repr (signed zeros, infinities; NaN is
``float('nan')``), strings and bytes by repr, containers element by element, and numpy
arrays from their bytes (``np.frombuffer(bytes.fromhex(..), dtype=..)`` keeps NaN payloads
and -0.0) in a chosen memory layout: C order, Fortran order, reversed (a negative stride on
the first axis) or strided (every other element of the last axis), read-only (a view of the
bytes object) or writeable (a copy before the view is taken).
"""

from __future__ import annotations

import math
from typing import Any, Sequence, Tuple

import numpy as np
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

#: every common dtype, little-endian, as numpy spells it
DTYPES: Tuple[str, ...] = (
    "|b1",
    "|i1",
    "<i2",
    "<i4",
    "<i8",
    "|u1",
    "<u2",
    "<u4",
    "<u8",
    "<f2",
    "<f4",
    "<f8",
    "<c8",
    "<c16",
)
#: the dtypes of real numbers (what the grammar's ``arr`` parameter holds)
REAL_DTYPES: Tuple[str, ...] = DTYPES[:-2]
LAYOUTS: Tuple[str, ...] = ("C", "F", "reversed", "strided")


def float_text(value: float) -> str:
    if math.isnan(value):
        return "float('nan')"
    if math.isinf(value):
        return "float('inf')" if value > 0 else "float('-inf')"
    return repr(value)


def array_text(values: np.ndarray, layout: str = "C", writeable: bool = False) -> str:
    """Text that rebuilds ``values`` (same dtype, shape and bytes) in ``layout``."""
    if layout not in LAYOUTS:
        raise ValueError(f"layout: expected one of {', '.join(LAYOUTS)}, got {layout!r}")
    if values.ndim == 0 and layout != "C":
        raise ValueError(f"layout: a 0-d array has only the 'C' layout, got {layout!r}")
    dtype = values.dtype.str
    if layout == "F":
        stored, view = values.T.copy(order="C"), ".T"
    elif layout == "reversed":
        stored, view = values[::-1].copy(order="C"), "[::-1]"
    elif layout == "strided":
        wide = np.zeros(values.shape[:-1] + (2 * values.shape[-1],), dtype=values.dtype)
        wide[..., ::2] = values
        stored, view = wide, "[..., ::2]"
    else:
        # not ascontiguousarray: it makes a 0-d array 1-d
        stored, view = values.copy(order="C"), ""
    text = f"np.frombuffer(bytes.fromhex({stored.tobytes().hex()!r}), dtype={dtype!r}).reshape({stored.shape!r})"
    if writeable:
        text += ".copy()"
    return text + view


@st.composite
def arrays(
    draw: Any,
    dtypes: Sequence[str] = DTYPES,
    min_dims: int = 0,
    max_dims: int = 4,
    max_side: int = 3,
) -> str:
    """Text of an array of one of ``dtypes``, of 0 to 4 dimensions (sides 0 to ``max_side``),
    any values (NaN, infinities, -0.0 included), in any layout, read-only or writeable."""
    dtype = np.dtype(draw(st.sampled_from(list(dtypes))))
    shape = draw(hnp.array_shapes(min_dims=min_dims, max_dims=max_dims, min_side=0, max_side=max_side))
    values = draw(hnp.arrays(dtype, shape))
    layout = draw(st.sampled_from(LAYOUTS)) if values.ndim else "C"
    return array_text(values, layout, draw(st.booleans()))


def ints(max_bits: int = 100) -> st.SearchStrategy[str]:
    """Small ints first, then any up to ``max_bits`` bits (beyond 64 bits too)."""
    return st.one_of(st.integers(-3, 9), st.integers(-(2**max_bits), 2**max_bits)).map(repr)


def floats() -> st.SearchStrategy[str]:
    return st.floats(allow_nan=True, allow_infinity=True).map(float_text)


def strings() -> st.SearchStrategy[str]:
    return st.text(max_size=6).map(repr)


def scalars() -> st.SearchStrategy[str]:
    """None, bools, ints, floats, strings and bytes, simplest first."""
    return st.one_of(
        st.just("None"),
        st.booleans().map(repr),
        ints(),
        floats(),
        strings(),
        st.binary(max_size=6).map(repr),
    )


def values() -> st.SearchStrategy[str]:
    """Any argument: scalars, arrays, and tuples and lists of them."""
    leaves = st.one_of(scalars(), arrays(max_dims=2))
    return st.recursive(
        leaves,
        lambda inner: st.one_of(
            st.lists(inner, max_size=3).map(lambda xs: "[" + ", ".join(xs) + "]"),
            st.lists(inner, max_size=3).map(lambda xs: "(" + "".join(x + ", " for x in xs) + ")"),
        ),
        max_leaves=4,
    )


def grammar_arguments(other: bool = False) -> st.SearchStrategy[str]:
    """The arguments of a grammar program's ``f(a, b, x, s, arr, y)`` as tuple text: ints,
    a float, a str, a real array with at least one dimension, anything. With ``other``,
    arrays of any dtype and of 0 dimensions too, so a call with them makes the translator
    compile again."""
    arr = arrays(min_dims=0) if other else arrays(REAL_DTYPES, min_dims=1)
    return st.tuples(ints(), ints(), floats(), strings(), arr, values()).map(
        lambda parts: "(" + ", ".join(parts) + ",)"
    )
