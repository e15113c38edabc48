"""Transcendental ufuncs on float arrays run by numpy's own loops, from inside a kernel.

numpy computes ``exp``, ``log``, ``tanh``, ``arcsin`` and their kin over an array with SIMD
loops of its own; numba's loops call the C library's scalar functions, element by element.
Measured on this project's machines (1M float64, then float32): ``tanh`` 1.6 against 13.9 ms
(0.4 against 12.9), ``exp`` 0.8 against 5.2, ``log`` 1.2 against 4.0, ``arcsin`` 1.5 against
13.0; ``sin`` and ``cos`` only in float32 (float64 is a tie). A kernel fusing such a call
into its loops lost to plain numpy however little else it did, so ``fusion`` leaves these
calls out of its elementwise trees (their argument becomes a tree of its own), and each is
written as:

    if x.size >= NUMPY_FROM and x.flags.c_contiguous:   # below, the call costs more
        out = <x itself when it dies here, else a new array>
        fh_numpy_loop(<tanh>, <float64>, x.ctypes.data, ..., out.ctypes.data, x.size)
    else:
        out = numpy.tanh(x)                                # numba's loop

where ``fh_numpy_loop`` is a C callback into ``run_loop`` (numpy's loop, under
``errstate(all="ignore")``).

numpy's loop clears the floating-point flags before it runs and, with every error ignored,
leaves its own set afterwards; ``run_loop`` raises again the flags the kernel had set
before the call, so that the kernel's caller reads them all (``fpstatus``) and redoes the
call eager where plain numpy would have warned or raised. The values are numpy's, bit for
bit.
"""

from __future__ import annotations

import ctypes
from dataclasses import dataclass
from typing import Any, List, Optional, Tuple

import numpy as np

from ...graph import Node, NodeKind
from . import fpstatus
from .allocation import new_array
from .externs import Extern
from .fusion_ops import array_meta, fresh_array

__all__ = ["NumpyUfunc", "numpy_ufunc", "left_to_numpy", "ufunc_lines", "run_loop", "LOOP"]

#: unary ufuncs numpy's SIMD loops compute several times faster than numba's scalar calls
_FASTER = {
    np.exp,
    np.exp2,
    np.expm1,
    np.log,
    np.log2,
    np.log10,
    np.log1p,
    np.tanh,
    np.sinh,
    np.cosh,
    np.tan,
    np.arcsin,
    np.arccos,
    np.arctan,
    np.arcsinh,
    np.arccosh,
    np.arctanh,
    np.cbrt,
}
#: ... and those only in float32 (float64's are as fast in both)
_FASTER_F4 = {np.sin, np.cos}
#: binary ones, taken where both operands are arrays of the result's shape and dtype
#: (``arctan2`` 2.4 against 13.6 ms, ``power`` 2.7 against 11.3)
_FASTER_2 = {np.arctan2, np.power}
#: the dtypes taken, in the order the callback numbers them
_FLOATS = (np.dtype(np.float64), np.dtype(np.float32))
#: the element count from which numpy's loop is called: below it the call (about 4 us)
#: costs more than numba's scalar loop saves
NUMPY_FROM = 512


def left_to_numpy(op: Any, dtype: np.dtype) -> bool:
    """Does a ufunc call of this dtype run faster as numpy's loop than fused into numba's?"""
    if dtype not in _FLOATS:
        return False
    try:
        return op in _FASTER or op in _FASTER_2 or dtype == _FLOATS[1] and op in _FASTER_F4
    except TypeError:  # an unhashable target
        return False


@dataclass(eq=False)
class NumpyUfunc:
    """The target of a call node written as ``ufunc_lines``: ``in_place`` is the position
    of an argument that is a new array dying at the call (numpy's loop then writes into
    it), or None."""

    ufunc: Any
    dtype: np.dtype
    in_place: Optional[int]
    args: List[Node]  # the call's operands (every one of the result's shape)
    nodes: Tuple[Node, ...] = ()  # none of the graph's nodes is replaced but the call
    __name__ = "numpy_ufunc"

    def __call__(self, *args: Any) -> Any:  # pragma: no cover - only ever written as source
        raise RuntimeError("a numpy ufunc call is only ever written as numba source")


def numpy_ufunc(node: Node) -> Optional[NumpyUfunc]:
    """``ufunc(x)`` (or ``ufunc(x, y)``) on float arrays, as a ``NumpyUfunc``, where
    ``left_to_numpy`` says so."""
    if node.kind is not NodeKind.CALL or node.kwargs or node.meta.get("errstate"):
        return None
    out = array_meta(node)
    if out is None or not out.ndim or not left_to_numpy(node.target, out.dtype) or len(node.args) != node.target.nin:
        return None
    for arg in node.args:
        meta = array_meta(arg)
        if meta is None or meta.dtype != out.dtype or len(node.args) > 1 and tuple(meta.shape) != tuple(out.shape):
            return None
    dying = [
        k for k, x in enumerate(node.args) if fresh_array(x) and list(x.users) == [node] and node.args.count(x) == 1
    ]
    return NumpyUfunc(node.target, out.dtype, dying[0] if dying else None, list(node.args))


#: every ufunc this module may call, in a fixed order: a kernel names one by its position
_TABLE = tuple(sorted(_FASTER | _FASTER_F4 | _FASTER_2, key=lambda u: u.__name__))
_INDEX = {u: k for k, u in enumerate(_TABLE)}
_SYMBOL = "framehook_numpy_ufunc_loop"


_raise_raw = fpstatus.raise_raw
_test_raw = fpstatus.test_raw
_ALL = fpstatus.ALL


def run_loop(ufunc: Any, *args: np.ndarray) -> None:
    """``ufunc(*args[:-1], out=args[-1])`` by numpy, the floating-point flags raised before
    it kept."""
    before = _test_raw(_ALL)
    with np.errstate(all="ignore"):  # the kernel's caller reads the flags; numpy must not
        ufunc(*args[:-1], out=args[-1])
    if before:
        _raise_raw(before)


# The kernel reaches numpy through a C function pointer (a ctypes callback, which takes the
# GIL), bound to a symbol name that numba links by name, as it does libc's: a kernel that
# calls it is cached on disk like any other. numba's object mode would do the same with
# less code, but it compiles its lifted block anew in every process (60-300 ms, in a call
# of the user's) and, inside a branch of a larger function, into code LLVM rejects.
_memory = ctypes.pythonapi.PyMemoryView_FromMemory
_memory.restype = ctypes.py_object
_memory.argtypes = (ctypes.c_void_p, ctypes.c_ssize_t, ctypes.c_int)
_READ, _WRITE = 0x100, 0x200  # PyBUF_READ, PyBUF_WRITE


def _callback(which: int, kind: int, x0: int, x1: int, out: int, size: int) -> int:
    """numpy's loop over C-contiguous buffers of ``size`` elements; 0, or 1 on any error
    (the kernel then raises, and the call is redone eager)."""
    try:
        ufunc, dtype = _TABLE[which], _FLOATS[kind]
        nbytes = size * dtype.itemsize
        args = [np.frombuffer(_memory(x, nbytes, _READ), dtype) for x in (x0, x1)[: ufunc.nin]]
        run_loop(ufunc, *args, np.frombuffer(_memory(out, nbytes, _WRITE), dtype))
        return 0
    except BaseException:  # noqa: BLE001 - never into the C caller; the call is redone eager
        return 1


_CALLBACK = ctypes.CFUNCTYPE(
    ctypes.c_int, ctypes.c_int64, ctypes.c_int64, ctypes.c_void_p, ctypes.c_void_p, ctypes.c_void_p, ctypes.c_int64
)(_callback)


def _declare_loop() -> Any:
    import llvmlite.binding
    from numba import types

    llvmlite.binding.add_symbol(_SYMBOL, ctypes.cast(_CALLBACK, ctypes.c_void_p).value)
    args = (types.int64, types.int64, types.voidptr, types.voidptr, types.voidptr, types.int64)
    return types.ExternalFunction(_SYMBOL, types.intc(*args))


#: the callback in the kernels' globals; its key names the table the kernels index
LOOP = Extern(f"{_SYMBOL} 1: {' '.join(u.__name__ for u in _TABLE)}", _declare_loop)


def ufunc_lines(nu: NumpyUfunc, out: str, arg: str, names: Any, p: str) -> List[str]:
    """``out = ufunc(arg)`` as numpy's loop for large C-contiguous arrays, numba's for the
    others (``arg``: the text of the arguments, comma-separated)."""
    xs = [f"{p}x{k}" for k in range(nu.ufunc.nin)]
    ufunc = names.bind(nu.ufunc, f"numpy_{nu.ufunc.__name__}")
    loop = names.bind(LOOP, "fh_numpy_loop")
    dtype = names.bind(nu.dtype.type, f"numpy_{nu.dtype.name}")
    # the C function reads each buffer as the first's size: same shapes, C order
    contiguous = " and ".join([f"{x}.flags.c_contiguous" for x in xs] + [f"{x}.shape == {xs[0]}.shape" for x in xs[1:]])
    lines = [f"{', '.join(xs)}, = ({arg},)", f"if {xs[0]}.size >= {NUMPY_FROM} and {contiguous}:"]
    if nu.in_place is not None:
        lines.append(f"    {out} = {xs[nu.in_place]}")
    else:
        lines += ["    " + line for line in new_array(names, out, f"{xs[0]}.shape", dtype)]
    pointers = ", ".join(f"{xs[min(k, len(xs) - 1)]}.ctypes.data" for k in range(2))
    kind = _FLOATS.index(nu.dtype)
    lines += [
        f"    if {loop}({_INDEX[nu.ufunc]}, {kind}, {pointers}, {out}.ctypes.data, {xs[0]}.size) != 0:",
        f"        raise FloatingPointError('numpy {nu.ufunc.__name__} loop failed')",
        "else:",
        f"    {out} = {ufunc}({', '.join(xs)})",
    ]
    return lines
