"""The CPU's floating-point status flags, read and cleared through the C library's fenv.h.

numpy learns of a division by zero, an overflow or an invalid operation from these sticky
flags after each operation; compiled code (numba's) sets the same flags but never looks at
them. Clearing them before a compiled kernel and reading them after tells whether plain
numpy would have warned or raised somewhere in it.

The flag values are the C library's ``FE_*`` macros, which differ by architecture: they
live in ``_FLAGS`` below, the one place that knows them.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import platform
from typing import Dict, Optional

__all__ = ["available", "clear", "raised", "FLAGS", "ALL", "clear_raw", "test_raw", "raise_raw"]

# numpy's error category -> the FE_* bit, per architecture (glibc and macOS agree)
_FLAGS: Dict[str, Dict[str, int]] = {
    "x86": {"invalid": 0x01, "divide": 0x04, "over": 0x08, "under": 0x10},
    "arm": {"invalid": 0x01, "divide": 0x02, "over": 0x04, "under": 0x08},
}
_ARCH = {"x86_64": "x86", "amd64": "x86", "i386": "x86", "i686": "x86", "aarch64": "arm", "arm64": "arm"}


def _load() -> Optional[ctypes.CDLL]:
    name = ctypes.util.find_library("m") or ctypes.util.find_library("c")
    try:
        lib = ctypes.CDLL(name)
        # no argtypes: ctypes passes a Python int as a C int all the same, and its
        # conversion step costs a third of each call (two calls per kernel call)
        lib.fetestexcept.restype = lib.feclearexcept.restype = lib.feraiseexcept.restype = ctypes.c_int
    except (OSError, AttributeError, TypeError):  # no C library with fenv.h functions (Windows)
        return None
    return lib


FLAGS: Optional[Dict[str, int]] = _FLAGS.get(_ARCH.get(platform.machine().lower(), ""))
_lib = _load() if FLAGS is not None else None
_ALL = sum(FLAGS.values()) if FLAGS else 0
_test = _lib.fetestexcept if _lib is not None else None
_clear = _lib.feclearexcept if _lib is not None else None
_raise = _lib.feraiseexcept if _lib is not None else None
#: the four flags' bits, and the C functions taking them (for a caller's hot path:
#: ``clear_raw(ALL)``, ``test_raw(ALL)``, ``raise_raw(bits)`` sets them again; no-ops
#: giving 0 where ``available()`` is False)
ALL = _ALL
clear_raw = _clear if _clear is not None else (lambda bits: 0)
test_raw = _test if _test is not None else (lambda bits: 0)
raise_raw = _raise if _raise is not None else (lambda bits: 0)


def available() -> bool:
    """Whether this platform's flags can be read (x86 and ARM with a C library fenv.h)."""
    return _lib is not None


def clear() -> None:
    """Clear the four flags numpy reports on (inexact is never reported)."""
    _clear(_ALL)  # type: ignore[misc]


def raised() -> int:
    """The raised flags among the four, as FE_* bits (``FLAGS`` names them)."""
    return _test(_ALL)  # type: ignore[misc]
