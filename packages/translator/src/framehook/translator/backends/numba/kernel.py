"""A graph's numba kernel wrapped to be called like ``graph.forward``: first calls eager
while the kernel compiles (``tiering``), measured against eager (``measure``), every call
as plain Python's (floating-point flags, exceptions, returned views), a fallback to eager
for good with an FH016 note when the kernel cannot be trusted or is not faster."""

from __future__ import annotations

import hashlib
import operator
import os
import sys
import threading
import time
import traceback
import types
import warnings
from typing import Any, Dict, List, Optional, Sequence, Tuple

import numpy as np

from ..._runtime import runtime
from ...config import config
from ...graph import Graph, Node, NodeKind
from ...graph.ir import map_arg
from ...graph.loop import is_loop
from . import blas_threads, diskcache, fpstatus, tiering
from .availability import numba_or_reason
from .callpath import VIEW, arg_key, args_ok, may_return_input_memory, relinked, restorer
from .lowering import lower
from .measure import Measurement
from .notes import NumbaNote, notify

__all__ = ["NumbaGraph", "RERUN_LIMIT"]

_call_with = runtime.call_with
_FE = fpstatus.FLAGS or {}
_FE_ALL = fpstatus.ALL
_fe_clear, _fe_test = fpstatus.clear_raw, fpstatus.test_raw
#: calls of one graph that had to be redone eager before the graph runs eager for good
RERUN_LIMIT = 3


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

    def __init__(
        self, graph: Graph, lowered: Any, lowering_seconds: float, input_types: Optional[Sequence[str]] = None
    ) -> None:
        self.graph = graph
        self.eager = graph.forward
        #: None until ``lower_now`` (the background compiler lowers it: not in a first call)
        self.lowered = lowered
        self._input_types = input_types
        self.lowering_seconds = lowering_seconds
        self.fallback_reason: Optional[str] = None
        self.dispatcher: Any = None
        self.notes: List[NumbaNote] = []
        self._ready: Dict[Tuple[Any, ...], Any] = {}  # argument types -> compiled entry point
        self._reruns = 0
        self._calls = 0
        #: kernel against eager: measuring, then sampled in steady state (off with 0 calls)
        self._measure = Measurement(config.numba_measure_calls)
        self._sampling = config.numba_measure_calls > 0
        #: argument types -> when their background compile started
        self._jobs: Dict[Tuple[Any, ...], Optional[float]] = {}  # queued (None) or started at
        self._cached = False
        self._lock = threading.Lock()
        # what each kernel call does to the result beyond numba's entry point: planned with
        # the lowering (``_judge``), which a loaded graph's first call does not wait for
        self._restore: Any = None
        self._relink = False
        self._mutated: Tuple[int, ...] = ()  # the inputs the graph writes (once lowered)
        self._warm = False  # the eager-first calls are done
        self.__name__ = "forward"
        self.__qualname__ = f"{graph.name}.numba"
        self.framehook_untraced = True
        if lowered is not None:
            self._judge(lowered)

    def _judge(self, lowered: Any) -> None:
        """Fall back if the lowering refused the graph or the fp flags cannot be read."""
        self._mutated = tuple(lowered.mutated)
        self._restore = restorer(self.graph)
        self._relink = may_return_input_memory(self.graph)
        self.lowered = lowered
        reason = lowered.reason
        if reason is None and not fpstatus.available():
            reason = "the CPU's floating-point flags cannot be read here (numpy's warnings would be lost)"
        if reason is not None and self.fallback_reason is None:
            self._fall_back(reason)
            if lowered.reason is not None and lowered.retry_loops:
                self._loops_alone()

    def lower_now(self) -> bool:
        """Lower the graph if that was left for the background compiler (``input_types``
        given instead of the lowering); False when the graph runs eager."""
        with self._lock:
            if self.lowered is None:
                start = time.perf_counter()
                lowered = lower(self.graph, types=self._input_types)
                self.lowering_seconds = time.perf_counter() - start
                self._judge(lowered)
        return self.fallback_reason is None

    def _note(self, note: NumbaNote) -> None:
        self.notes.append(note)
        notify(note)

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

    def _dispatcher(self, cache: bool) -> Any:
        """numba's dispatcher for the kernel: from a source file in the cache directory
        (``cache``; numba finds the module again by name when it loads the kernel from its
        cache), else from the source in memory, compiled without numba's cache."""
        if self.dispatcher is None or self._cached != cache:
            numba, _ = numba_or_reason()
            where = diskcache.usable_dir() if cache else None
            key = self.lowered.key
            path = os.path.join(where, f"fh_{key}.py") if where else f"<framehook numba kernel {key}>"
            if where:
                diskcache.write_once(path, self.lowered.source)
            # a module numba finds again by name when it loads the kernel from its cache (one
            # per cache directory: FRAMEHOOK_NUMBA_CACHE_DIR may change within a process)
            name = f"framehook_numba_{key}_{hashlib.sha256(path.encode()).hexdigest()[:8]}"
            module = sys.modules.get(name)
            if module is None:
                module = types.ModuleType(name)
                module.__file__ = path
                module.__dict__.update(self.lowered.scope)
                exec(compile(self.lowered.source, path, "exec"), module.__dict__)  # noqa: S102 - generated
                sys.modules[name] = module
            self.dispatcher = numba.njit(
                cache=bool(where),
                boundscheck=self.lowered.boundscheck,
                parallel=self.lowered.parallel,
                error_model=self.lowered.error_model,
            )(module.forward)
            self._cached = bool(where)
        return self.dispatcher

    def _prepare(self, key: Tuple[Any, ...], args: Sequence[Any]) -> bool:
        """Compile (or load from the cache) the kernel for these arguments' types; False
        (and the graph falls back for good) when numba refuses it. numba's own Python code
        runs with no frame callback: the translator must never trace it."""
        return bool(_call_with(None, self._prepare_untraced, key, args))

    def _compile(self, signature: Tuple[Any, ...]) -> Any:
        """Compile for ``signature`` with numba's cache, or, when the cache itself fails
        (a corrupt index: numba raises reading it), once more without it."""
        numba, _ = numba_or_reason()
        dispatcher = self._dispatcher(cache=True)
        with warnings.catch_warnings():  # numba's performance hints are not the user's warnings
            warnings.simplefilter("ignore", numba.NumbaWarning)
            try:
                dispatcher.compile(signature)
            except Exception as e:  # noqa: BLE001 - judged below
                frames = traceback.extract_tb(e.__traceback__)
                if not self._cached or not any("caching" in os.path.basename(f.filename) for f in frames):
                    raise
                diskcache.warn_once(f"numba cannot read its cache entry for {self.graph.name}: {type(e).__name__}")
                dispatcher = self._dispatcher(cache=False)
                dispatcher.compile(signature)
        return dispatcher

    def _prepare_untraced(self, key: Tuple[Any, ...], args: Sequence[Any]) -> bool:
        with self._lock:
            if self.fallback_reason is not None:
                return False
            if key in self._ready:
                return True
            start = time.perf_counter()
            signature: Any = None
            try:
                numba, why = numba_or_reason()
                if numba is None:
                    self._fall_back(why or "numba cannot be used")
                    return False
                signature = tuple(numba.typeof(a) for a in args)
                refused = diskcache.read_marker(self._marker(signature, "refused"))
                if refused is not None:  # numba refused it before: do not spend the time again
                    self._fall_back(refused)
                    self._loops_alone()
                    return False
                hits = 0
                if self.dispatcher is not None:
                    hits = sum(getattr(self.dispatcher.stats, "cache_hits", {}).values())
                self._compile(signature)
            except Exception as e:  # noqa: BLE001 - whatever numba raises, the user never sees it
                first = str(e).strip().splitlines()
                reason = f"numba cannot compile it: {type(e).__name__}: {first[0] if first else ''}"[:300]
                self._fall_back(reason)
                if signature is not None:  # refused for these types (not a failure to find numba)
                    if diskcache.usable_dir() is not None:
                        diskcache.write_marker(self._marker(signature, "refused"), reason)
                    self._loops_alone()
                return False
            seconds = time.perf_counter() - start
            differs = self._checked(signature)
            if differs is not None:
                self._fall_back(differs)
                return False
            if self.fallback_reason is not None:  # over its budget meanwhile: stays eager
                return False
            hit = self._cached and sum(getattr(self.dispatcher.stats, "cache_hits", {}).values()) > hits
            if self.lowered.blas:
                blas_threads.scipy_pool()  # found here, in the compiler's thread, not in a call
            self._ready[key] = self.dispatcher.overloads[signature].entry_point
            self._note(
                NumbaNote(
                    self.graph.name,
                    "compiled",
                    "",
                    self.lowering_seconds,
                    seconds,
                    ("hit" if hit else "miss") if self._cached else "",
                )
            )
            return True

    def _marker(self, signature: Any, kind: str) -> str:
        """A file beside the kernel's recording a verdict about one signature."""
        tag = hashlib.sha256(repr(signature).encode()).hexdigest()[:16]
        return os.path.join(diskcache.cache_dir(), f"fh_{self.lowered.key}.{tag}.{kind}")

    def _checked(self, signature: Tuple[Any, ...]) -> Optional[str]:
        """The type check's verdict: made after a fresh compile and kept beside the cached
        kernel (a kernel loaded from numba's cache has no type map to check: without a
        sound record of the check, it is compiled again without the cache)."""
        marker = self._marker(signature, "checked")
        overload = self.dispatcher.overloads.get(signature)
        if getattr(getattr(overload, "type_annotation", None), "typemap", None) is None:
            recorded = diskcache.read_marker(marker)
            if recorded is not None:
                return recorded or None
            self._dispatcher(cache=False).compile(signature)
        verdict = _type_mismatch(self.dispatcher, signature, self.lowered.dtypes or {})
        if diskcache.usable_dir() is not None:
            diskcache.write_marker(marker, verdict or "")
        return verdict

    def _run(self, entry: Any, args: Sequence[Any]) -> Tuple[Any, int]:
        _fe_clear(_FE_ALL)
        value = blas_threads.single_threaded(entry, *args) if self.lowered.blas else entry(*args)
        flags = _fe_test(_FE_ALL)
        restore = self._restore
        return (value if restore is None else restore(value, args)), flags

    def _must_redo(self, flags: int) -> bool:
        """Would plain code have warned or raised on these floating-point flags?"""
        if self.lowered.errstate_blocks or self.lowered.float_math and flags & ~_FE["under"]:
            return True
        return any(flags & _FE[kind] for kind, mode in np.geterr().items() if mode != "ignore")

    def _redo(self, saved: Sequence[Tuple[np.ndarray, np.ndarray]], args: Sequence[Any], why: str) -> Any:
        """Undo the kernel's writes to the inputs and run the eager code, which warns, raises
        and writes exactly as plain code does."""
        for array, copy in saved:
            array[...] = copy
        self._reruns += 1
        if self._reruns >= RERUN_LIMIT and self.fallback_reason is None:
            self._fall_back(f"{why} on {self._reruns} calls: runs eager, as plain code does")
        return self.eager(*args)

    def __call__(self, *args: Any) -> Any:
        if self.fallback_reason is None:
            key = arg_key(args)
            entry = self._ready.get(key)
            if entry is None:
                if not args_ok(args):  # an argument numba is not given: this call runs eager
                    return self.eager(*args)
                if not self._warm:  # eager-first: compile once it is called again
                    if self._calls < config.numba_compile_after:
                        self._calls += 1
                        return self.eager(*args)
                    self._warm = True
                # compiled now, or None while it compiles in the background
                entry = tiering.entry(self, key, args)
                if entry is None:
                    try:
                        return self.eager(*args)
                    finally:
                        tiering.release()
            if entry is not None:
                measure = self._measure
                if measure.verdict == "kernel":
                    if self._sampling and measure.sample_now():
                        return self._steady(entry, args)
                    return self._call_kernel(entry, args)
                return self._measured(entry, args)
        return self.eager(*args)

    def _measured(self, entry: Any, args: Sequence[Any]) -> Any:
        """Alternate timed kernel and eager calls until ``measure`` decides which is faster."""
        measure = self._measure
        if measure.next_is_eager():
            result = measure.timed(1, lambda: self.eager(*args))
        else:
            result = measure.timed(0, lambda: self._call_kernel(entry, args))
        if measure.decide() == "eager" and self.fallback_reason is None:
            self._fall_back(measure.reason)
        return result

    def _steady(self, entry: Any, args: Sequence[Any]) -> Any:
        """A sampled steady-state call; a kernel that now loses is demoted to eager."""
        measure = self._measure
        result = measure.steady(lambda: self._call_kernel(entry, args), lambda: self.eager(*args))
        if measure.verdict == "eager" and self.fallback_reason is None:
            self._fall_back(measure.reason)
        return result

    def _call_kernel(self, entry: Any, args: Sequence[Any]) -> Any:
        saved = (
            [(a, a.copy()) for a in (args[i] for i in self._mutated) if type(a) is np.ndarray] if self._mutated else ()
        )
        try:
            # the kernel compiled for exactly these argument types (the key says so): its
            # entry point, never numba's dispatch, which could compile again on this stack
            # (restoring may run numba's Python code too: a typed dict's methods compile lazily)
            value, flags = _call_with(None, self._run, entry, args)
        except Exception:  # noqa: BLE001 - plain code raises its own exception, or none
            return self._redo(saved, args, "raised an exception")
        if flags and self._must_redo(flags):
            return self._redo(saved, args, "needed numpy's floating-point error handling")
        if self._relink:
            value = relinked(value, args)
            if value is VIEW:
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
