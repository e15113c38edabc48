"""Writing a graph for numba: the source of one function (``fusion``'s loop nests in
place of the statements it lowers), the globals it reads, and the key its kernel is
cached under; or the reason the graph runs eager instead."""

from __future__ import annotations

import functools
import hashlib
import importlib.metadata
import operator
import re
import sys
from dataclasses import dataclass
from typing import Any, Dict, Optional, Sequence, Tuple

import numpy as np

from ...graph import ArrayMeta, Graph, NodeKind, ScalarMeta
from ...graph import pysource
from ...graph.ir import display_name
from . import blas_threads, bounds, externs, fusion
from .externs import Extern
from .availability import numba_version, require_numba
from .checks import integer_risk, mutated_inputs, user_index

__all__ = ["Lowered", "lower", "input_types", "FUSE", "PARALLEL"]

#: write sliced elementwise stores and axis reductions as explicit loops (``fusion``)
FUSE = True
#: compile with ``parallel=True``, the lowered loops' independent rows under ``prange``:
#: off, as it was not measured faster on a 2-core machine (BENCHMARKS.md); for benchmarks
PARALLEL = False


# ---------------------------------------------------------------- lowering checks

_SAFE_MODULES = ("numpy", "math", "builtins", "cmath")
#: the dtypes numba has (not float16, not structured, strings or datetimes)
_NUMBA_DTYPES = "?bBhHiIlLqQfdFD"


def _walk(graph: Graph) -> Any:
    for node in graph.nodes:
        yield node
        body = getattr(node.target, "body", None) if node.kind is NodeKind.CALL else None
        if isinstance(body, Graph):
            yield from _walk(body)


def _python_float_math(graph: Graph) -> bool:
    """Does the graph do Python-float math (``math.exp``, ``**``), which raises where numpy
    and numba give inf or nan, whatever ``np.errstate`` says?"""
    for node in _walk(graph):
        meta = node.meta.get("val")
        if node.kind is NodeKind.CALL and isinstance(meta, ScalarMeta) and meta.pytype in (float, complex):
            target = node.target
            if getattr(target, "__module__", None) in ("math", "cmath") or target in (operator.pow, pow):
                return True
    return False


_DIVIDING = {
    operator.truediv,
    operator.itruediv,
    operator.floordiv,
    operator.ifloordiv,
    operator.mod,
    operator.imod,
    divmod,
    np.true_divide,
    np.floor_divide,
    np.remainder,
    np.fmod,
    np.divmod,
}


def _python_division(graph: Graph) -> bool:
    """Does the graph divide other than float arrays (or numpy float scalars)? Python
    numbers raise ZeroDivisionError and numpy integers give 0 with a warning no flag
    reports, so those keep numba's Python error model; numpy floats give inf or nan and
    set the flags ``fpstatus`` reads, as numba's numpy error model does."""
    for node in _walk(graph):
        if node.kind is not NodeKind.CALL:
            continue
        try:
            dividing = node.target in _DIVIDING
        except TypeError:
            continue
        if dividing:
            meta = node.meta.get("val")
            metas = meta if isinstance(meta, tuple) else (meta,)  # divmod: two values
            if not all(isinstance(m, ArrayMeta) and m.dtype.kind in "fc" for m in metas):
                return True
    return False


def _global_ok(name: str, value: Any) -> Tuple[Optional[str], str]:
    """(why numba cannot use this bound value, or None; a stable description for the cache key)."""
    if isinstance(value, np.ndarray):
        if value.dtype.kind not in "biufc":
            return f"a constant array of dtype {value.dtype}", ""
        digest = hashlib.sha256(np.ascontiguousarray(value).tobytes()).hexdigest()
        return None, f"array {value.dtype} {value.shape} {digest}"
    if isinstance(value, np.generic):
        return None, f"scalar {value.dtype} {value!r}"
    if isinstance(value, np.dtype) and value.char in _NUMBA_DTYPES and value.isnative and value.metadata is None:
        return None, f"dtype {value.str}"
    if isinstance(value, Extern):
        return None, value.key
    if isinstance(value, (int, float, complex, bool)):
        return None, repr(value)
    module = getattr(value, "__module__", None) or ""
    qualname = getattr(value, "__qualname__", None) or getattr(value, "__name__", None)
    if isinstance(value, np.ufunc):
        return None, f"ufunc {value.__name__}"
    if type(value).__name__ == "module" and getattr(value, "__name__", "").split(".")[0] in _SAFE_MODULES:
        return None, f"module {value.__name__}"
    if callable(value) and qualname and module.split(".")[0] in _SAFE_MODULES:
        return None, f"{module}.{qualname}"
    return f"the graph calls or reads {display_name(value)}, which numba does not compile", ""


@dataclass
class Lowered:
    """A graph written for numba: its source, the globals it reads, the cache key; or why not."""

    source: str
    scope: Dict[str, Any]
    key: str
    reason: Optional[str] = None
    #: variable -> the dtype numpy gives it (numba's promotion rules are not numpy 2's)
    dtypes: Optional[Dict[str, np.dtype]] = None
    #: positions of the inputs the graph may write (kept to undo a kernel run that must be redone eager)
    mutated: Sequence[int] = ()
    #: the graph does Python-float math, which raises on the errors numpy only warns about
    float_math: bool = False
    #: the graph has captured np.errstate blocks (their settings are not the caller's)
    errstate_blocks: bool = False
    #: compile with ``parallel=True`` (``PARALLEL`` when lowered; the key includes it)
    parallel: bool = False
    #: on a refusal, try the graph's loop nodes as kernels of their own (not when numba is missing)
    retry_loops: bool = True
    #: compile with bounds checks: off only when every index in the source is the loop
    #: lowering's, within the ranges it derived (``checks.user_index`` finds the user's)
    boundscheck: bool = True
    #: numba's ``error_model``: "numpy" (a float division by zero gives inf and sets the
    #: flags) unless the graph divides Python numbers or integers (``_python_division``)
    error_model: str = "python"
    #: the kernel calls scipy's BLAS or LAPACK (``@``, ``np.dot``, ``np.linalg``): it runs
    #: with scipy's thread pool on one thread (``blas_threads``)
    blas: bool = False


@functools.lru_cache(maxsize=None)
def _scipy_version() -> Optional[str]:
    """scipy's version without importing it, or None: a kernel numba refused for want of
    scipy (or written as loops, ``fusion.MATVEC_LOOPS``) is keyed apart from one with it."""
    try:
        return importlib.metadata.version("scipy")
    except importlib.metadata.PackageNotFoundError:
        return None


def _type_text(value: Any) -> str:
    if isinstance(value, np.ndarray):
        f = value.flags
        return f"ndarray[{value.dtype.str},{value.ndim},{'C' if f.c_contiguous else 'F' if f.f_contiguous else 'A'}]"
    return type(value).__qualname__


def input_types(values: Sequence[Any]) -> Tuple[str, ...]:
    """What of the example inputs the kernel's cache key depends on (``lower`` later needs
    only this, not the arrays themselves)."""
    return tuple(_type_text(v) for v in values)


#: a kernel's source past this many lines is not compiled (its loops are tried as kernels of
#: their own): numba's compile time grows faster than the source, from 0.2-3 s for the
#: 50-560-line kernels of the benchmark corpus to 41 s for a 1,875-line one; a compile that
#: long outlives the budget, and a process exiting meanwhile waits for it (``tiering``)
MAX_SOURCE_LINES = 1000


def _without_del(source: str) -> str:
    """numba's bytecode analysis refuses ``del`` of locals; it frees values itself."""
    lines = []
    for line in source.splitlines():
        body = line.lstrip()
        lines.append(line[: len(line) - len(body)] + "pass" if body.startswith("del ") else line)
    return "\n".join(lines) + "\n"


def lower(graph: Graph, example_inputs: Sequence[Any] = (), types: Optional[Sequence[str]] = None) -> Lowered:
    """The graph as the source numba compiles, or the reason it runs eager instead
    (``types``: ``input_types(example_inputs)``, taken earlier)."""
    why = integer_risk(graph)
    if why is not None:
        return Lowered("", {}, "", why)
    names = pysource._Names()
    work, checked = bounds.insert(graph)
    work, fused = fusion.rewrite(work) if FUSE else (work, [])
    try:
        source, _ = pysource._source(work, names, "forward", lambda node: None)
    except pysource.GraphCodegenError as e:
        return Lowered("", {}, "", str(e))
    source = bounds.expand(fusion.expand(source, fused, names, PARALLEL), checked, names)
    source = _without_del(source)
    lines = source.count("\n")
    if lines > MAX_SOURCE_LINES:
        return Lowered(
            source,
            {},
            "",
            f"the kernel would be {lines} lines, over {MAX_SOURCE_LINES}: numba compiles such a kernel for "
            "tens of seconds (a 1,875-line one took 41 s)",
        )
    scope = dict(names.globals)
    for name in [n for n, v in scope.items() if v is np.errstate]:
        # numba cannot enter a context manager: the block's statements run plain and the
        # floating-point flags tell when a call must be redone eager under the settings
        source = re.sub(rf"(?m)^(\s*)with {re.escape(name)}\(.*\):$", r"\1if True:", source)
        del scope[name]
    for name, value in list(scope.items()):
        if type(value) is slice and all(p is None or type(p) is int for p in (value.start, value.stop, value.step)):
            # numba cannot read a slice from the globals: spell it out where it is used
            source = re.sub(rf"(?<![\w.]){re.escape(name)}(?!\w)", repr(value), source)
            del scope[name]
    parts = [source]
    for name in sorted(scope):
        why, text = _global_ok(name, scope[name])
        if why is not None:
            return Lowered(source, {}, "", why)
        parts.append(f"{name} = {text}")
        if isinstance(scope[name], np.dtype):
            scope[name] = scope[name].type  # numba reads a dtype global as its scalar type
    version, missing = numba_version()  # numba itself is imported when the kernel compiles
    if version is None:
        return Lowered(source, {}, "", missing, retry_loops=False)
    if fusion.PRANGE in source:
        scope[fusion.PRANGE] = require_numba().prange
    externs.resolve(scope)
    parts += input_types(example_inputs) if types is None else types
    boundscheck = user_index(work) is not None
    error_model = "python" if _python_division(graph) else "numpy"
    parts += [sys.version, np.__version__, version, fusion.VERSION, f"parallel={PARALLEL}", f"bc={boundscheck}"]
    parts.append(f"scipy={_scipy_version()}")  # numba's `@` and np.linalg work only with it
    parts.append(f"errors={error_model}")
    key = hashlib.sha256("\n".join(parts).encode()).hexdigest()[:32]
    dtypes = {}
    for node, var in names._vars.items():
        meta = node.meta.get("val")
        if isinstance(meta, ArrayMeta) and var.isidentifier():
            dtypes[var] = meta.dtype
    return Lowered(
        source,
        scope,
        key,
        dtypes=dtypes,
        mutated=mutated_inputs(graph),
        float_math=_python_float_math(graph),
        errstate_blocks=any(n.meta.get("errstate") for n in _walk(graph)),
        parallel=PARALLEL,
        boundscheck=boundscheck,
        error_model=error_model,
        blas=blas_threads.reaches_blas(work.nodes),
    )
