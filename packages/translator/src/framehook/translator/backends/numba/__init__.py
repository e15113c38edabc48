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

Compilation happens on the graph's first call with each argument signature, in numba's
on-disk cache: the generated source is written to a file whose name hashes the source, what
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
  eager redo on ``RERUN_LIMIT`` calls, or was not measured faster than eager (by
  ``KEEP_BELOW``) over its first calls
  (``config.numba_measure_calls``).

A single call runs eager when an argument is one numba would convert differently (an integer
beyond 31 bits, an object array, a list). ``config.numba_compile_after`` runs the first calls
eager before compiling.
"""

from __future__ import annotations

import hashlib
import operator
import os
import re
import sys
import threading
import time
import types
import warnings
from dataclasses import dataclass
from typing import Any, Callable, Dict, List, Optional, Sequence, Tuple

import numpy as np

from ..._runtime import runtime
from ...config import config
from ..registry import register_backend
from ...exc import InvalidBackendError
from ...graph import ArrayMeta, Graph, Node, NodeKind, ScalarMeta
from ...graph import pysource
from ...graph.ir import display_name, map_arg
from ...graph.loop import is_loop
from . import fpstatus, fusion
from .checks import ARG_INT_BITS, integer_risk, mutated_inputs

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
]

NUMBA_EXTRA = "framehook-translator[numba]"
FALLBACK_CODE = "FH016"
_call_with = runtime.call_with
_FE = fpstatus.FLAGS or {}
_VIEW = object()  # a returned array that is part of an input
_ARG_INT = 2**ARG_INT_BITS
#: calls of one graph that had to be redone eager before the graph runs eager for good
RERUN_LIMIT = 3
#: a measured kernel is kept when its fastest call took at most this share of eager's fastest
KEEP_BELOW = 0.9
#: write sliced elementwise stores and axis reductions as explicit loops (``fusion``)
FUSE = True
#: compile with ``parallel=True``, the lowered loops' independent rows under ``prange``:
#: off, as it was not measured faster on a 2-core machine (BENCHMARKS.md); for benchmarks
PARALLEL = False


def require_numba() -> Any:
    """The numba module, or an error naming the extra that installs it."""
    try:
        import numba
    except ImportError as e:
        raise InvalidBackendError(
            f"the 'numba' backend needs the numba package, which is not installed; "
            f"install it with: pip install \"{NUMBA_EXTRA}\""
        ) from e
    return numba


def cache_dir() -> str:
    """Where generated kernel sources and numba's cached machine code live."""
    given = os.environ.get("FRAMEHOOK_NUMBA_CACHE_DIR")
    if given:
        return given
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return os.path.join(base, "framehook", "numba")


@dataclass
class NumbaNote:
    """What the backend did with one graph: ``status`` is ``"compiled"`` or ``"fallback"``
    (then ``reason`` says why); times in seconds (``numba_seconds``: compiling or loading
    from the cache, ``cache``: ``"hit"``, ``"miss"`` or ``""``)."""

    graph: str
    status: str
    reason: str = ""
    lowering_seconds: float = 0.0
    numba_seconds: float = 0.0
    cache: str = ""

    @property
    def code(self) -> str:
        return FALLBACK_CODE if self.status == "fallback" else ""

    def __str__(self) -> str:
        if self.status == "fallback":
            return f"{FALLBACK_CODE} {self.graph}: runs eager: {self.reason}"
        return (
            f"{self.graph}: numba, lowering {self.lowering_seconds * 1e3:.1f} ms, "
            f"numba {self.numba_seconds * 1e3:.1f} ms (cache {self.cache or 'off'})"
        )


_observers: List[Callable[[NumbaNote], None]] = []


def add_note_observer(fn: Callable[[NumbaNote], None]) -> None:
    _observers.append(fn)


def remove_note_observer(fn: Callable[[NumbaNote], None]) -> None:
    if fn in _observers:
        _observers.remove(fn)


def _notify(note: NumbaNote) -> None:
    for fn in list(_observers):
        fn(note)


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
    numba = require_numba()
    if fusion.PRANGE in source:
        scope[fusion.PRANGE] = numba.prange
    parts += [_type_text(v) for v in example_inputs]
    parts += [sys.version, np.__version__, numba.__version__, fusion.VERSION, f"parallel={PARALLEL}"]
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
    )


# ---------------------------------------------------------------- the compiled graph


def _arg_ok(value: Any) -> bool:
    t = type(value)
    if t is np.ndarray:
        return value.dtype.kind in "biufc" and not value.dtype.byteorder == ">"
    if t is bool or t is float or t is complex:
        return True
    if t is int:
        return -_ARG_INT <= value <= _ARG_INT
    if isinstance(value, np.integer):
        return -_ARG_INT <= int(value) <= _ARG_INT
    return isinstance(value, np.generic) and value.dtype.kind in "bfc"


def _arg_key(value: Any) -> Any:
    if type(value) is np.ndarray:
        f = value.flags
        return (value.dtype.num, value.ndim, f.c_contiguous, f.f_contiguous, f.writeable, f.aligned)
    return type(value)


def _write_source(path: str, source: str) -> None:
    """Write the kernel's file once (numba's cache stamps its mtime: never touch it again)."""
    if os.path.exists(path):
        return
    os.makedirs(os.path.dirname(path), exist_ok=True)
    tmp = f"{path}.{os.getpid()}.{threading.get_ident()}.tmp"
    with open(tmp, "w") as f:
        f.write(source)
    os.replace(tmp, path)


def _type_mismatch(dispatcher: Any, signature: Tuple[Any, ...], dtypes: Dict[str, np.dtype]) -> Optional[str]:
    """Where numba typed a graph value with another dtype than numpy gives it (numba
    promotes ``float32 * 2.0`` to float64, numpy 2 keeps float32), or None."""
    from numba.np.numpy_support import as_dtype

    try:
        typemap = dispatcher.overloads[signature].type_annotation.typemap
    except (KeyError, AttributeError):  # pragma: no cover - numba without type annotations
        return "numba's types could not be checked against numpy's"
    for var, typ in typemap.items():
        want = dtypes.get(var.split(".")[0])
        if want is None:
            continue
        try:
            got = as_dtype(getattr(typ, "dtype", typ))
        except Exception:  # noqa: BLE001 - a type with no numpy equivalent: not the one numpy gives
            return f"numba types {var.split('.')[0]} as {typ}, numpy gives {want}"
        if got != want:
            return f"numba's type promotion differs: {var.split('.')[0]} is {got} in numba, {want} in numpy"
    return None


class NumbaGraph:
    """A graph's numba kernel, with the eager code for fallbacks; called like ``graph.forward``."""

    def __init__(self, graph: Graph, lowered: Lowered, lowering_seconds: float) -> None:
        self.graph = graph
        self.eager = graph.forward
        self.lowered = lowered
        self.lowering_seconds = lowering_seconds
        self.fallback_reason: Optional[str] = lowered.reason
        if self.fallback_reason is None and not fpstatus.available():
            self.fallback_reason = "the CPU's floating-point flags cannot be read here (numpy's warnings would be lost)"
        self.dispatcher: Any = None
        self.notes: List[NumbaNote] = []
        self._ready: Dict[Tuple[Any, ...], Any] = {}  # argument types -> compiled entry point
        self._reruns = 0
        self._calls = 0
        #: (kernel, eager) call times while measuring which is faster; None once decided
        self._timings: Optional[Tuple[List[float], List[float]]] = ([], []) if config.numba_measure_calls else None
        self._lock = threading.Lock()
        self._restore = self._output_restorer(graph)
        self.__name__ = "forward"
        self.__qualname__ = f"{graph.name}.numba"
        self.framehook_untraced = True
        if self.fallback_reason is not None:
            self._note(NumbaNote(graph.name, "fallback", self.fallback_reason, lowering_seconds))
            if lowered.reason is not None:
                self._loops_alone()

    def _note(self, note: NumbaNote) -> None:
        self.notes.append(note)
        _notify(note)

    @staticmethod
    def _output_restorer(graph: Graph) -> Callable[[Any, Sequence[Any]], Any]:
        """Give results the types plain code gives (numba returns Python floats for numpy
        scalars, and new array objects for the arguments returned as they are)."""
        out = graph.output_node.args[0] if graph.output_node is not None else None
        placeholders = {n: i for i, n in enumerate(graph.placeholders)}

        def one(spec: Any, value: Any, args: Sequence[Any], seen: Dict[Node, Any]) -> Any:
            if isinstance(spec, Node):
                if spec in seen:
                    return seen[spec]
                if spec in placeholders:
                    result = args[placeholders[spec]]
                else:
                    meta = spec.meta.get("val")
                    result = value
                    if isinstance(meta, ArrayMeta) and not meta.is_array and type(value) is not meta.pytype:
                        result = meta.pytype(value)
                    elif (
                        isinstance(meta, ScalarMeta)
                        and meta.pytype in (int, float, bool, complex)
                        and type(value) is not meta.pytype
                    ):
                        result = meta.pytype(value)
                seen[spec] = result
                return result
            if type(spec) in (tuple, list):
                return type(spec)(one(s, v, args, seen) for s, v in zip(spec, value))
            if type(spec) is dict:  # numba gives its typed dict: give a dict, in the same order
                return {k: one(s, value[k], args, seen) for k, s in spec.items()}
            return value

        return lambda value, args: one(out, value, args, {})

    def _fall_back(self, reason: str) -> None:
        self.fallback_reason = reason
        self._note(NumbaNote(self.graph.name, "fallback", reason, self.lowering_seconds))

    def _loops_alone(self) -> None:
        """The graph runs eager, but each of its loop nodes is tried as a kernel of its own
        (with its own fallback): a statement numba cannot type outside a loop then no
        longer keeps the loop from compiling."""
        graph = self.graph
        loops = [n for n in graph.nodes if n.kind is NodeKind.CALL and is_loop(n.target)]
        if not loops or graph.meta.get("one_loop"):
            return
        new = Graph(graph.name, names_from=graph)
        new.meta = dict(graph.meta)
        mapping: Dict[Node, Node] = {}
        for node in graph.nodes:
            args = map_arg(node.args, lambda n: mapping[n])
            kwargs = map_arg(node.kwargs, lambda n: mapping[n])
            if node in loops:
                inner = _loop_graph(node)
                start = time.perf_counter()
                kernel = NumbaGraph(inner, lower(inner), time.perf_counter() - start)
                made = new._add(NodeKind.CALL, kernel, tuple(mapping[n] for n in node.inputs()), {}, node.name)
            elif node.kind is NodeKind.PLACEHOLDER:
                made = new.placeholder(node.target, node.meta.get("val"))
            else:
                made = new._add(node.kind, node.target, args, kwargs, node.name)
            made.meta = dict(node.meta)
            if node in loops:
                made.meta["impure"] = True  # a statement of its own, in order
            mapping[node] = made
        self.eager = new.forward

    def _dispatcher(self) -> Any:
        if self.dispatcher is None:
            numba = require_numba()
            path = os.path.join(cache_dir(), f"fh_{self.lowered.key}.py")
            _write_source(path, self.lowered.source)
            # a module numba can find again by name when it loads the kernel from its cache
            name = f"framehook_numba_{self.lowered.key}"
            module = sys.modules.get(name)
            if module is None:
                module = types.ModuleType(name)
                module.__file__ = path
                module.__dict__.update(self.lowered.scope)
                exec(compile(self.lowered.source, path, "exec"), module.__dict__)  # noqa: S102 - generated
                sys.modules[name] = module
            self.dispatcher = numba.njit(cache=True, boundscheck=True, parallel=PARALLEL)(module.forward)
        return self.dispatcher

    def _prepare(self, key: Tuple[Any, ...], args: Sequence[Any]) -> bool:
        """Compile (or load from the cache) the kernel for these arguments' types; False
        (and the graph falls back for good) when numba refuses it. numba's own Python code
        runs with no frame callback: the translator must never trace it."""
        return bool(_call_with(None, self._prepare_untraced, key, args))

    def _prepare_untraced(self, key: Tuple[Any, ...], args: Sequence[Any]) -> bool:
        with self._lock:
            if self.fallback_reason is not None:
                return False
            if key in self._ready:
                return True
            start = time.perf_counter()
            signature: Any = None
            try:
                dispatcher = self._dispatcher()
                numba = require_numba()
                signature = tuple(numba.typeof(a) for a in args)
                refused = self._marker(signature, "refused")
                if os.path.exists(refused):  # numba refused it before: do not spend the time again
                    with open(refused) as f:
                        self._fall_back(f.read())
                    self._loops_alone()
                    return False
                stats = dispatcher.stats
                hits = stats.cache_hits.copy() if hasattr(stats, "cache_hits") else {}
                with warnings.catch_warnings():  # numba's performance hints are not the user's warnings
                    warnings.simplefilter("ignore", numba.NumbaWarning)
                    dispatcher.compile(signature)
            except Exception as e:  # noqa: BLE001 - whatever numba raises, the user never sees it
                first = str(e).strip().splitlines()
                reason = f"numba cannot compile it: {type(e).__name__}: {first[0] if first else ''}"[:300]
                self._fall_back(reason)
                if signature is not None:  # refused for these types (not a failure to find numba)
                    try:
                        _write_source(self._marker(signature, "refused"), reason)
                    except OSError:  # a read-only cache: numba is asked again next time
                        pass
                    self._loops_alone()
                return False
            seconds = time.perf_counter() - start
            differs = self._checked(dispatcher, signature)
            if differs is not None:
                self._fall_back(differs)
                return False
            now = getattr(dispatcher.stats, "cache_hits", {})
            cache = "hit" if sum(now.values()) > sum(hits.values()) else "miss"
            self._ready[key] = dispatcher.overloads[signature].entry_point
            self._note(NumbaNote(self.graph.name, "compiled", "", self.lowering_seconds, seconds, cache))
            return True

    def _marker(self, signature: Tuple[Any, ...], kind: str) -> str:
        """A file beside the kernel's recording a verdict about one signature."""
        tag = hashlib.sha256(repr(signature).encode()).hexdigest()[:16]
        return os.path.join(cache_dir(), f"fh_{self.lowered.key}.{tag}.{kind}")

    def _checked(self, dispatcher: Any, signature: Tuple[Any, ...]) -> Optional[str]:
        """The type check's verdict: made after a fresh compile and kept beside the cached
        kernel (a kernel loaded from numba's cache has no type map to check)."""
        marker = self._marker(signature, "checked")
        overload = dispatcher.overloads.get(signature)
        if getattr(getattr(overload, "type_annotation", None), "typemap", None) is None:
            try:
                with open(marker) as f:
                    recorded = f.read()
            except OSError:
                return "a cached kernel without the record of its type check"
            return recorded or None
        verdict = _type_mismatch(dispatcher, signature, self.lowered.dtypes or {})
        try:
            _write_source(marker, verdict or "")
        except OSError:  # a read-only cache: the check is made again next time
            pass
        return verdict

    def _run(self, entry: Any, args: Sequence[Any]) -> Tuple[Any, int]:
        fpstatus.clear()
        value = entry(*args)
        flags = fpstatus.raised()
        return self._restore(value, args), flags

    def _must_redo(self, flags: int) -> bool:
        """Would plain code have warned or raised on these floating-point flags?"""
        if self.lowered.errstate_blocks or self.lowered.float_math and flags & ~_FE["under"]:
            return True
        return any(flags & _FE[kind] for kind, mode in np.geterr().items() if mode != "ignore")

    def _redo(self, saved: List[Tuple[np.ndarray, np.ndarray]], args: Sequence[Any], why: str) -> Any:
        """Undo the kernel's writes to the inputs and run the eager code, which warns, raises
        and writes exactly as plain code does."""
        for array, copy in saved:
            array[...] = copy
        self._reruns += 1
        if self._reruns >= RERUN_LIMIT and self.fallback_reason is None:
            self._fall_back(f"{why} on {self._reruns} calls: runs eager, as plain code does")
        return self.eager(*args)

    def _relinked(self, value: Any, args: Sequence[Any]) -> Any:
        """The result with every returned array that is a whole input (numba gives a new
        array object over the same memory) replaced by that input, as plain code returns
        it; ``_VIEW`` when a returned array is part of an input (plain's is a view linked
        to it by ``.base``, numba's is not)."""
        t = type(value)
        if t is np.ndarray:
            for a in args:
                if type(a) is np.ndarray and a is not value and np.may_share_memory(a, value):
                    if (
                        a.__array_interface__["data"][0] == value.__array_interface__["data"][0]
                        and a.shape == value.shape
                        and a.strides == value.strides
                        and a.dtype == value.dtype
                    ):
                        return a
                    return _VIEW
            return value
        if t is tuple or t is list:
            items = [self._relinked(v, args) for v in value]
            return _VIEW if any(v is _VIEW for v in items) else t(items)
        if t is dict:
            entries = {k: self._relinked(v, args) for k, v in value.items()}
            return _VIEW if any(v is _VIEW for v in entries.values()) else entries
        return value

    def __call__(self, *args: Any) -> Any:
        if self.fallback_reason is None and all(_arg_ok(a) for a in args):
            if self._calls < config.numba_compile_after:  # eager-first: compile once it is called again
                self._calls += 1
                return self.eager(*args)
            key = tuple(_arg_key(a) for a in args)
            entry = self._ready.get(key)
            if entry is None and self._prepare(key, args):
                entry = self._ready[key]
            if entry is not None:
                if self._timings is not None:
                    return self._measured(entry, args)
                return self._call_kernel(entry, args)
        return self.eager(*args)

    def _measured(self, entry: Any, args: Sequence[Any]) -> Any:
        """Alternate kernel and eager calls, timing each, until enough of both are timed;
        then keep the kernel only if its fastest call beat eager's fastest by a clear margin
        (a tie is noise on a loaded machine, and the eager code has no compile cost)."""
        timings = self._timings
        assert timings is not None
        which = len(timings[0]) > len(timings[1])
        start = time.perf_counter()
        result = self.eager(*args) if which else self._call_kernel(entry, args)
        timings[which].append(time.perf_counter() - start)
        if len(timings[1]) >= config.numba_measure_calls and self.fallback_reason is None:
            self._timings = None
            kernel, eager = min(timings[0]), min(timings[1])
            if kernel > eager * KEEP_BELOW:
                self._fall_back(
                    f"not measured faster than eager ({kernel * 1e6:.1f} us against {eager * 1e6:.1f} us a call)"
                )
        return result

    def _call_kernel(self, entry: Any, args: Sequence[Any]) -> Any:
        saved = [(a, a.copy()) for a in (args[i] for i in self.lowered.mutated) if type(a) is np.ndarray]
        try:
            # the kernel compiled for exactly these argument types (the key says so): its
            # entry point, never numba's dispatch, which could compile again on this stack
            # (restoring may run numba's Python code too: a typed dict's methods compile lazily)
            value, flags = _call_with(None, self._run, entry, args)
        except Exception:  # noqa: BLE001 - plain code raises its own exception, or none
            return self._redo(saved, args, "raised an exception")
        if flags and self._must_redo(flags):
            return self._redo(saved, args, "needed numpy's floating-point error handling")
        value = self._relinked(value, args)
        if value is _VIEW:
            self._fall_back("it returns a view of an input (numba's views are not linked to it by .base)")
            for array, copy in saved:
                array[...] = copy
            return self.eager(*args)
        return value


def _loop_graph(node: Node) -> Graph:
    """A graph of one loop node: its inputs as placeholders, the loop's value as output."""
    graph = Graph(f"{node.graph.name}_{node.name}", names_from=node.graph)
    graph.meta = dict(node.graph.meta, one_loop=True)
    inputs = {n: graph.placeholder(n.name, n.meta.get("val")) for n in node.inputs()}
    for n, ph in inputs.items():
        ph.meta = dict(n.meta)
    loop = graph._add(
        NodeKind.CALL,
        node.target,
        map_arg(node.args, lambda n: inputs[n]),
        map_arg(node.kwargs, lambda n: inputs[n]),
        node.name,
    )
    loop.meta = dict(node.meta)
    # the carried values one by one, each with its type (given back as plain code has them)
    items = tuple(
        graph._add(NodeKind.CALL, operator.getitem, (loop, i), {}, "carried", ph.meta.get("val"))
        for i, ph in enumerate(node.target.carried)
    )
    graph.output(items)
    return graph


def _numba_backend(graph: Any, example_inputs: Sequence[Any]) -> Callable[..., Any]:
    require_numba()
    if not isinstance(graph, Graph):
        return graph.forward
    if not any(n.kind not in (NodeKind.PLACEHOLDER, NodeKind.OUTPUT) for n in graph.nodes):
        return graph.forward  # nothing to compile
    start = time.perf_counter()
    lowered = lower(graph, example_inputs)
    return NumbaGraph(graph, lowered, time.perf_counter() - start)


_numba_backend.check_available = require_numba  # type: ignore[attr-defined]
numba_backend = register_backend(_numba_backend, name="numba")
