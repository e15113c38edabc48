"""The ``numba`` backend: each graph, loop nodes included, compiled with ``numba.njit``.

    @optimize("numba")                    # pip install "framehook-translator[numba]"
    def f(a, b):
        for i in range(1, a.shape[0]):
            a[i] = a[i - 1] * 0.5 + b[i]
        return a

The graph is written as Python by the same code generator the ``eager`` backend uses (one
straight-line function; loop nodes become ``for``/``while`` loops), and that function is
compiled in nopython mode with bounds checks on (an index out of range raises IndexError as
in plain code). Before that, ``fusion`` rewrites sliced float64 stores, float64
elementwise trees over matrices and axis reductions of float64 matrices into explicit loop
nests (no temporary per operation); other elementwise chains are left to numba's array
expressions, whole-array reductions and matmuls to numba's numpy support.

Compilation starts on the graph's first call with each argument signature, in a background
thread while the first calls run eager (``tiering``; ``config.numba_background``,
``config.numba_compile_budget``), into numba's on-disk cache (``diskcache``: an unusable or
corrupt cache is ignored with one ``NumbaCacheWarning``): the generated source is written to a file whose name hashes the source, what
the names it uses are bound to, the example inputs' types and the Python, numpy and numba
versions, so a changed graph or environment never reuses a kernel (numba's own index keys
each kernel by signature too). ``cache_dir()`` says where (``FRAMEHOOK_NUMBA_CACHE_DIR``).

Each call behaves as plain Python's: the floating-point flags are cleared before the kernel
and read after it (``fpstatus``); where plain numpy would have warned or raised (under the
caller's ``np.errstate``, a captured errstate block, or Python-float math), or where the
kernel raised, the inputs the graph writes are restored from a copy taken before the call
and the call is redone by the eager code (plain's warnings, exception, message and writes).

A graph runs as the eager backend's code for good (a *fallback*, reported as FH016 by
``explain(fn, backend="numba")``) when:

* ``checks.integer_risk`` finds integer arithmetic whose numba semantics differ
  (Python integers that could outgrow int64, integer-array ``//``/``%``, Python scalars with
  narrow integer arrays), or a bound value numba would freeze or cannot call;
* numba cannot type or lower the graph (any error numba raises while compiling: it never
  reaches the user), or types a value with another dtype than numpy; each top-level loop
  node of a graph refused this way (or by the checks above) is then tried as a kernel of
  its own, with its own fallback;
* it returns a view of an input (numba's views are not ``.base``-linked to it), needed the
  eager redo on ``RERUN_LIMIT`` calls, or was not measured faster than eager over its
  first calls, or lost in steady state (``measure``; ``config.numba_measure_calls``);
* numba is missing, older than ``MIN_NUMBA_VERSION`` or fails to import (``availability``);
* its compile outlasted the budget (``tiering``).

The modules: ``kernel`` (``NumbaGraph``, the compiled graph's calls), ``measure``,
``tiering``, ``diskcache``, ``availability``, ``notes`` (``NumbaNote`` and its observers).

A single call runs eager when an argument is one numba would convert differently (an integer
beyond 31 bits, an object array, a list). ``config.numba_compile_after`` runs the first calls
eager before compiling.
"""

from __future__ import annotations

import hashlib
import operator
import re
import sys
import time
from dataclasses import dataclass
from typing import Any, Callable, Dict, Optional, Sequence, Tuple

import numpy as np

from ..registry import register_backend
from ...graph import ArrayMeta, Graph, NodeKind, ScalarMeta
from ...graph import pysource
from ...graph.ir import display_name
from . import fusion
from .availability import MIN_NUMBA_VERSION, NUMBA_EXTRA, numba_version, require_numba
from .checks import integer_risk, mutated_inputs
from .diskcache import NumbaCacheWarning, cache_dir
from .kernel import RERUN_LIMIT, NumbaGraph
from .measure import KEEP_BELOW
from .notes import FALLBACK_CODE, NumbaNote, add_note_observer, remove_note_observer
from .tiering import wait as wait_for_compiles

__all__ = [
    "numba_backend",
    "require_numba",
    "NUMBA_EXTRA",
    "NumbaGraph",
    "NumbaNote",
    "lower",
    "cache_dir",
    "add_note_observer",
    "remove_note_observer",
    "FALLBACK_CODE",
    "MIN_NUMBA_VERSION",
    "NumbaCacheWarning",
    "RERUN_LIMIT",
    "KEEP_BELOW",
    "wait_for_compiles",
]

#: write sliced elementwise stores and axis reductions as explicit loops (``fusion``)
FUSE = True
#: compile with ``parallel=True``, the lowered loops' independent rows under ``prange``:
#: off, as it was not measured faster on a 2-core machine (BENCHMARKS.md); for benchmarks
PARALLEL = False


# ---------------------------------------------------------------- lowering checks

_SAFE_MODULES = ("numpy", "math", "builtins", "cmath")


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


def _global_ok(name: str, value: Any) -> Tuple[Optional[str], str]:
    """(why numba cannot use this bound value, or None; a stable description for the cache key)."""
    if isinstance(value, np.ndarray):
        if value.dtype.kind not in "biufc":
            return f"a constant array of dtype {value.dtype}", ""
        digest = hashlib.sha256(np.ascontiguousarray(value).tobytes()).hexdigest()
        return None, f"array {value.dtype} {value.shape} {digest}"
    if isinstance(value, np.generic):
        return None, f"scalar {value.dtype} {value!r}"
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


def _type_text(value: Any) -> str:
    if isinstance(value, np.ndarray):
        f = value.flags
        return f"ndarray[{value.dtype.str},{value.ndim},{'C' if f.c_contiguous else 'F' if f.f_contiguous else 'A'}]"
    return type(value).__qualname__


def _without_del(source: str) -> str:
    """numba's bytecode analysis refuses ``del`` of locals; it frees values itself."""
    lines = []
    for line in source.splitlines():
        body = line.lstrip()
        lines.append(line[: len(line) - len(body)] + "pass" if body.startswith("del ") else line)
    return "\n".join(lines) + "\n"


def lower(graph: Graph, example_inputs: Sequence[Any] = ()) -> Lowered:
    """The graph as the source numba compiles, or the reason it runs eager instead."""
    why = integer_risk(graph)
    if why is not None:
        return Lowered("", {}, "", why)
    names = pysource._Names()
    work, fused = fusion.rewrite(graph) if FUSE else (graph, [])
    try:
        source, _ = pysource._source(work, names, "forward", lambda node: None)
    except pysource.GraphCodegenError as e:
        return Lowered("", {}, "", str(e))
    source = _without_del(fusion.expand(source, fused, names, PARALLEL))
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
    version, missing = numba_version()  # numba itself is imported when the kernel compiles
    if version is None:
        return Lowered(source, {}, "", missing, retry_loops=False)
    if fusion.PRANGE in source:
        scope[fusion.PRANGE] = require_numba().prange
    parts += [_type_text(v) for v in example_inputs]
    parts += [sys.version, np.__version__, version, fusion.VERSION, f"parallel={PARALLEL}"]
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
    )


def _numba_backend(graph: Any, example_inputs: Sequence[Any]) -> Callable[..., Any]:
    if not isinstance(graph, Graph):
        return graph.forward
    if not any(n.kind not in (NodeKind.PLACEHOLDER, NodeKind.OUTPUT) for n in graph.nodes):
        return graph.forward  # nothing to compile
    start = time.perf_counter()
    version, missing = numba_version()
    # numba missing, too old or broken: each graph runs eager with a one-line FH016 note
    # (no error at decoration time either: the issue asks for eager, never an exception)
    lowered = lower(graph, example_inputs) if version is not None else Lowered("", {}, "", missing, retry_loops=False)
    return NumbaGraph(graph, lowered, time.perf_counter() - start)


numba_backend = register_backend(_numba_backend, name="numba")
