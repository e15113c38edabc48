"""The ``numba`` backend: each graph, loop nodes included, compiled with ``numba.njit``.

    @optimize("numba")                    # pip install "framehook-translator[numba]"
    def f(a, b):
        for i in range(1, a.shape[0]):
            a[i] = a[i - 1] * 0.5 + b[i]
        return a

The graph is written as Python by the same code generator the ``eager`` backend uses (one
straight-line function; loop nodes become ``for``/``while`` loops), and that function is
compiled in nopython mode. Bounds checks are off: the user's integer indices are checked by
statements of their own (``bounds``; an index out of range raises IndexError as in plain
code), and only a kernel indexing with the user's arrays, ``None`` or ``...`` keeps numba's
checks (``checks.user_index``). Before that, ``fusion`` rewrites sliced stores, in-place
operators, elementwise trees and axis reductions into explicit loop nests (no temporary per
operation; their large new arrays ask for huge pages as numpy's do: ``allocation``); other
elementwise chains are left to numba's array expressions, whole-array reductions and
matmuls to numba's numpy support. Transcendental ufuncs on large float arrays (``exp``,
``log``, ``tanh``, ...) are left out of the loops and run by numpy's own SIMD loops, called
from the kernel through a C callback (``numpy_ufuncs``): several times faster than numba's
scalar calls.

Lowering and compilation start once the graph's first call with each argument signature has
run, in a background thread while the first calls run eager (``tiering``; ``config.numba_background``,
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
  (Python integers that could outgrow int64, integer-array ``//``/``%`` by anything but a
  positive constant, Python scalars with narrow integer arrays), or a bound value numba
  would freeze or cannot call;
* numba cannot type or lower the graph (any error numba raises while compiling: it never
  reaches the user), or types a value with another dtype than numpy; each top-level loop
  node of a graph refused this way (or by the checks above) is then tried as a kernel of
  its own, with its own fallback;
* it returns a view of an input (numba's views are not ``.base``-linked to it), needed the
  eager redo on ``RERUN_LIMIT`` calls, or was not measured faster than eager over its
  first calls, or lost in steady state (``measure``; ``config.numba_measure_calls``);
* numba is missing, older than ``MIN_NUMBA_VERSION`` or fails to import (``availability``);
* its compile outlasted the budget (``tiering``).

The modules: ``lowering`` (the kernel's source; ``fusion``, ``numpy_ufuncs``, ``bounds``,
``allocation`` write parts of it; ``externs`` binds the C functions it calls), ``kernel`` (``NumbaGraph``, the compiled graph's calls), ``callpath`` (what a
kernel call does beyond numba's entry point, planned once per graph), ``measure``,
``tiering``, ``diskcache``, ``availability``, ``notes`` (``NumbaNote`` and its observers).

A single call runs eager when an argument is one numba would convert differently (an integer
beyond 31 bits, an object array, a list). ``config.numba_compile_after`` runs the first calls
eager before compiling.
"""

from __future__ import annotations

import time
from typing import Any, Callable, Optional, Sequence

from ..registry import register_backend
from ...config import Config, config
from ...graph import Graph, NodeKind
from .availability import MIN_NUMBA_VERSION, NUMBA_EXTRA, numba_version, require_numba
from .diskcache import NumbaCacheWarning, cache_dir
from .kernel import RERUN_LIMIT, NumbaGraph
from .lowering import Lowered, input_types, lower
from .measure import KEEP_BELOW
from .notes import FALLBACK_CODE, NumbaNote, add_note_observer, remove_note_observer
from . import tiering
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


def _numba_backend(graph: Any, example_inputs: Sequence[Any]) -> Callable[..., Any]:
    if not isinstance(graph, Graph):
        return graph.forward
    if not any(n.kind not in (NodeKind.PLACEHOLDER, NodeKind.OUTPUT) for n in graph.nodes):
        return graph.forward  # nothing to compile
    start = time.perf_counter()
    version, missing = numba_version()
    if version is None:
        # numba missing, too old or broken: each graph runs eager with a one-line FH016 note
        # (no error at decoration time either: the issue asks for eager, never an exception)
        return NumbaGraph(graph, Lowered("", {}, "", missing, retry_loops=False), time.perf_counter() - start)
    if config.numba_background:
        # lowered by the background compiler (1-15 ms, more for big graphs): not in a first call
        return NumbaGraph(graph, None, 0.0, input_types(example_inputs))
    lowered = lower(graph, example_inputs)
    return NumbaGraph(graph, lowered, time.perf_counter() - start)


def _prepare() -> None:
    """What ``optimize("numba")`` does once, so that no first call does it: the compiler
    thread started, and the modules a kernel call runs through never intercepted."""
    import sys

    from ..._runtime import never_intercept
    from . import callpath, fpstatus, kernel, measure, notes, numpy_ufuncs

    never_intercept(kernel, callpath, fpstatus, measure, notes, numpy_ufuncs, tiering, sys.modules[Config.__module__])
    if numba_version()[0] is not None:
        tiering.start()


def _numba_missing() -> Optional[str]:
    """Why ``list_backends()`` leaves numba out (every graph would run eager), or None."""
    version, missing = numba_version()
    return missing if version is None else None


_numba_backend.prepare = _prepare  # type: ignore[attr-defined]
_numba_backend.unavailable = _numba_missing  # type: ignore[attr-defined]
numba_backend = register_backend(_numba_backend, name="numba")
