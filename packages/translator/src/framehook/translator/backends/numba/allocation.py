"""New arrays in the kernels ``fusion`` writes: allocated as numpy allocates them.

numpy asks Linux for transparent huge pages (``madvise(MADV_HUGEPAGE)``) on every
allocation of 4 MiB or more; numba's allocator does not. A kernel writing a new 8 MB
array into memory fresh from the OS (as when the caller's arrays are new each call) then
takes 2,048 page faults where numpy takes a few hundred, measured at 2 us each on this
project's machines: enough to make a fused kernel that reads and writes once slower than
numpy's two passes. The kernel's large arrays therefore ask for huge pages as numpy's do
(a hint: the kernel's results are the same either way). Elsewhere than on Linux nothing
is added.
"""

from __future__ import annotations

import sys
from typing import Any, List

import numpy as np

from .externs import Extern

__all__ = ["new_array", "MADVISE"]

#: numpy's threshold for asking for huge pages
HUGE_BYTES = 1 << 22
_MADV_HUGEPAGE = 14  # the same value on every Linux architecture
_PAGE = 4096


def _declare_madvise() -> Any:
    from numba import types

    return types.ExternalFunction("madvise", types.intc(types.uintp, types.uintp, types.intc))


#: libc's ``madvise`` in the kernels' globals
MADVISE = Extern("libc madvise", _declare_madvise)


def new_array(names: Any, var: str, shape: str, dtype: str) -> List[str]:
    """Lines assigning ``var`` a new uninitialised array (``shape``: a tuple's source)."""
    empty = names.bind(np.empty, "numpy_empty")
    lines = [f"{var} = {empty}({shape}, {dtype})"]
    if sys.platform.startswith("linux"):
        advise = names.bind(MADVISE, "fh_madvise")
        # from the first page boundary inside the buffer, as numpy does
        lines += [
            f"if {var}.nbytes >= {HUGE_BYTES}:",
            f"    {advise}(({var}.ctypes.data + {_PAGE - 1}) & ~{_PAGE - 1}, {var}.nbytes - {_PAGE}, {_MADV_HUGEPAGE})",
        ]
    return lines
