"""Transcendental ufuncs on float arrays run by numpy's own loops, from inside a kernel.

numpy computes ``exp``, ``log``, ``tanh``, ``arcsin`` and their kin over an array with SIMD
loops of its own; numba's loops call the C library's scalar functions, element by element.
Measured on this project's machines (1M float64, then float32): ``tanh`` 1.6 against 13.9 ms
(0.4 against 12.9), ``exp`` 0.8 against 5.2, ``log`` 1.2 against 4.0, ``arcsin`` 1.5 against
13.0; ``sin`` and ``cos`` only in float32 (float64 is a tie). A kernel fusing such a call
into its loops lost to plain numpy however little else it did, so ``fusion`` leaves these
calls out of its elementwise trees (their argument becomes a tree of its own), and each is
written as:

    if x.size >= NUMPY_FROM:               # below, an object-mode call costs more
        out = <x itself when it dies here, else a new array>
        numpy_tanh_loop(x, out)            # numpy's loop, under errstate(all="ignore"),
                                           # from a numba function in object mode
    else:
        out = numpy.tanh(x)                # numba's loop

numpy's loop clears the floating-point flags before it runs and, with every error ignored,
leaves its own set afterwards; ``run_loop`` raises again the flags the kernel had set
before the call, so that the kernel's caller reads them all (``fpstatus``) and redoes the
call eager where plain numpy would have warned or raised. The values are numpy's, bit for
bit.
"""

from __future__ import annotations

import sys
import threading
import types
from dataclasses import dataclass
from typing import Any, Dict, List, Optional

import numpy as np

from ...graph import ArrayMeta, Node, NodeKind
from . import fpstatus
from .allocation import new_array
from .fusion_ops import fresh_array

__all__ = ["NumpyUfunc", "numpy_ufunc", "left_to_numpy", "ufunc_lines", "run_loop", "describe", "resolve"]

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
_FLOATS = (np.dtype(np.float64), np.dtype(np.float32))
#: the element count from which numpy's loop is called: below it the object-mode call
#: (about 3 us) costs more than numba's scalar loop saves
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
    __name__ = "numpy_ufunc"

    def __call__(self, *args: Any) -> Any:  # pragma: no cover - only ever written as source
        raise RuntimeError("a numpy ufunc call is only ever written as numba source")


def _array(arg: Any) -> Optional[ArrayMeta]:
    meta = arg.meta.get("val") if isinstance(arg, Node) else None
    return meta if isinstance(meta, ArrayMeta) and meta.is_array else None


def numpy_ufunc(node: Node) -> Optional[NumpyUfunc]:
    """``ufunc(x)`` (or ``ufunc(x, y)``) on float arrays, as a ``NumpyUfunc``, where
    ``left_to_numpy`` says so."""
    if node.kind is not NodeKind.CALL or node.kwargs or node.meta.get("errstate"):
        return None
    out = _array(node)
    if out is None or not out.ndim or not left_to_numpy(node.target, out.dtype) or len(node.args) != node.target.nin:
        return None
    for arg in node.args:
        meta = _array(arg)
        if meta is None or meta.dtype != out.dtype or len(node.args) > 1 and tuple(meta.shape) != tuple(out.shape):
            return None
    dying = [
        k
        for k, x in enumerate(node.args)
        if fresh_array(x) and list(x.users) == [node] and node.args.count(x) == 1 and _same(_array(x), out)
    ]
    return NumpyUfunc(node.target, out.dtype, dying[0] if dying else None)


def _same(meta: Optional[ArrayMeta], out: ArrayMeta) -> bool:
    return meta is not None and tuple(meta.shape) == tuple(out.shape)


class _Loop:
    """Stands in the lowering's globals for the numba function that calls numpy's loop of
    one ufunc, until the kernel compiles (``resolve``): lowering does not import numba."""

    def __init__(self, ufunc: Any) -> None:
        self.ufunc = ufunc

    def __repr__(self) -> str:
        return f"<numpy's {self.ufunc.__name__} loop>"


_LOOPS: Dict[Any, _Loop] = {}
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


def describe(value: Any) -> Optional[str]:
    """The cache key's text for a global this module binds, or None for any other."""
    if isinstance(value, _Loop):
        return f"numpy loop of {value.ufunc.__name__} 1"
    return None


# The object-mode block lives in a small numba function of its own, never in a kernel:
# numba lifts a ``with objmode()`` inside a branch of a larger function into code that
# LLVM rejects ("Instruction does not dominate all uses"). Its globals must be a module's
# that numba finds again by name.
_MODULE = types.ModuleType(f"{__name__}._loops")
_MODULE.__dict__.update(np=np, run_loop=run_loop)
_compiled: Dict[Any, Any] = {}
_lock = threading.Lock()  # kernels compile in background threads


def _compiled_loop(ufunc: Any) -> Any:
    with _lock:
        return _compiled[ufunc] if ufunc in _compiled else _compile_loop(ufunc)


def _compile_loop(ufunc: Any) -> Any:
    import numba

    sys.modules.setdefault(_MODULE.__name__, _MODULE)
    _MODULE.objmode = numba.objmode
    name = f"numpy_{ufunc.__name__}"
    params = ", ".join([f"x{k}" for k in range(ufunc.nin)] + ["out"])
    source = f"def {name}({params}):\n    with objmode():\n        run_loop(np.{ufunc.__name__}, {params})\n"
    exec(compile(source, f"<framehook numpy loop {ufunc.__name__}>", "exec"), _MODULE.__dict__)  # noqa: S102
    _compiled[ufunc] = numba.njit(_MODULE.__dict__[name])
    return _compiled[ufunc]


def resolve(scope: Dict[str, Any]) -> None:
    """Bind each ufunc's numba function where the lowering put its ``_Loop`` (imports numba)."""
    for name, value in scope.items():
        if isinstance(value, _Loop):
            scope[name] = _compiled_loop(value.ufunc)


def ufunc_lines(nu: NumpyUfunc, out: str, arg: str, names: Any, p: str) -> List[str]:
    """``out = ufunc(arg)`` as numpy's loop for large arrays, numba's for small ones
    (``arg``: the text of the arguments, comma-separated)."""
    xs = [f"{p}x{k}" for k in range(nu.ufunc.nin)]
    ufunc = names.bind(nu.ufunc, f"numpy_{nu.ufunc.__name__}")
    loop = names.bind(_LOOPS.setdefault(nu.ufunc, _Loop(nu.ufunc)), f"fh_numpy_{nu.ufunc.__name__}_loop")
    dtype = names.bind(nu.dtype.type, f"numpy_{nu.dtype.name}")
    lines = [f"{', '.join(xs)}, = ({arg},)", f"if {xs[0]}.size >= {NUMPY_FROM}:"]
    if nu.in_place is not None:
        lines.append(f"    {out} = {xs[nu.in_place]}")
    else:
        lines += ["    " + line for line in new_array(names, out, f"{xs[0]}.shape", dtype)]
    lines += [f"    {loop}({', '.join(xs)}, {out})", "else:", f"    {out} = {ufunc}({', '.join(xs)})"]
    return lines
