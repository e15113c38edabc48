"""Hypothesis strategy for numpy arrays in every memory layout a guard must tell apart."""

import numpy as np
from hypothesis import strategies as st


@st.composite
def arrays(draw, dtypes, shapes):
    """Zero arrays of a drawn dtype and shape, C- or Fortran-ordered, strided (a slice),
    read-only or broadcast (zero strides)."""
    dtype = draw(dtypes)
    shape = draw(shapes)
    a = np.zeros(shape, dtype=dtype)
    layout = draw(st.sampled_from(["c", "f", "slice", "ro", "broadcast"]))
    if layout == "f":
        a = np.asfortranarray(a)
    elif layout == "slice" and a.ndim and a.shape[0] > 1:
        a = np.zeros((a.shape[0] * 2,) + a.shape[1:], dtype=dtype)[::2]
    elif layout == "ro":
        a.flags.writeable = False
    elif layout == "broadcast" and a.ndim:
        a = np.broadcast_to(np.zeros(a.shape[-1:], dtype=dtype), a.shape)
    return a
