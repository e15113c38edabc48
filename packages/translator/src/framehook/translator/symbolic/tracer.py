"""The graph-building side of the symbolic interpreter.

``Tracer`` owns one translation: the graph operations are recorded into, the inputs read
so far (placeholders and their sources), the guards, symbolic dimensions and the side
effects. ``FrameTracer`` (``interpreter.py``) executes instructions and asks the tracer
to wrap the values it reads and to record the operations it cannot compute on the spot.
"""

from __future__ import annotations

import operator
import sys
import time
import types
from typing import TYPE_CHECKING, Any, Callable, Dict, List, Optional, Tuple

import numpy as np

from ..config import config
from ..graph import ArrayMeta, Graph, ScalarMeta, SymDim, TupleMeta
from ..guards import GuardKind
from ..guards.sources import AttrSource, ClosureCellSource, IndexSource, ItemSource, Source
from . import numpy_support as nps
from .breaks import GraphBreak
from .loops import lift
from .side_effects import SideEffects, is_plain_object
from .small_proxies import shrunk_result
from .values import Cell, CellContents, Const, DictV, FuncV, ListV, ObjV, SliceV, Tensor, TupleV, V, flatten

if TYPE_CHECKING:  # pragma: no cover
    from .roles import Frame

__all__ = ["Tracer"]

_NUMPY_INDEXERS = (np.mgrid, np.ogrid, np.s_, np.index_exp)


class Tracer:
    """One translation: the graph, the inputs read so far and the guards."""

    def __init__(
        self,
        code: types.CodeType,
        f_globals: Dict[str, Any],
        f_builtins: Dict[str, Any],
        add_guard: Callable[[Any], None],
        name: str = "graph",
    ) -> None:
        self.code = code
        self.f_globals = f_globals
        self.f_builtins = f_builtins
        self.add_guard = add_guard
        self.graph = Graph(name)  # where operations are recorded (a loop body while capturing one)
        # so the compiled graph reports the user's file, lines and module (graph/codegen.py)
        self.graph.meta.update(filename=code.co_filename, firstlineno=code.co_firstlineno, globals=f_globals)
        self.root_graph = self.graph  # where inputs are read
        self.loop_scopes: List[Any] = []  # loops being captured, innermost last (``loops.py``)
        self.lifted_from: Dict[Any, Any] = {}  # loop-body placeholder -> the outer node it stands for
        self.mutation_floor: Optional[int] = None  # containers older than this are not mutated
        self.loop_notes: List[Any] = []  # one ``loops.LoopNote`` per loop captured or unrolled
        self.by_source: Dict[Source, V] = {}
        self.inputs: Dict[Any, Source] = {}  # placeholder node -> source
        self.first_source_of: Dict[int, Tuple[Source, V]] = {}
        # the trace budget (config.max_traced_*, max_trace_seconds), read once per trace
        self.instructions = 0
        self.ops = 0
        self.max_instructions = config.max_traced_instructions
        self.max_ops = config.max_traced_ops
        self.max_seconds = config.max_trace_seconds
        self.deadline = None if self.max_seconds is None else time.perf_counter() + self.max_seconds
        self.current: Optional[Frame] = None
        self.keepalive: List[Any] = []
        self.dynamic_dims: Callable[[Source, np.ndarray], Tuple[int, ...]] = lambda source, value: ()
        self.dynamic_int: Callable[[Source, int], bool] = lambda source, value: False
        self.unspecialized_int: Callable[[Source], bool] = lambda source: False
        self._syms = 0
        self._dims: Dict[Tuple[Any, Any, int], Tensor] = {}  # (graph, array node, axis) -> its size read
        self._items: Dict[Tuple[Any, Any, int], Tensor] = {}  # (graph, named-tuple node, i) -> its item read
        self.stop_at: Optional[int] = None  # root-frame instruction index to stop before
        self.errstate_blocks: List[Any] = []  # open ``with np.errstate(...)`` blocks (``errstate.py``)
        self.side_effects = SideEffects(self)

    def next_sym(self) -> int:
        self._syms += 1
        return self._syms - 1

    # ------------------------------------------------------------ reading inputs
    def guard(self, source: Optional[Source], kind: GuardKind, **details: Any) -> None:
        if source is not None:
            self.add_guard(source.make_guard(kind, **details))

    def placeholder_for(self, source: Source, meta: Any) -> Any:
        base = source.name()
        name = "".join(c if c.isalnum() else "_" for c in base.replace("L[", "").replace("G[", "g_")).strip("_")
        node = self.root_graph.placeholder(name or "input", meta)
        self.inputs[node] = source
        return node

    def wrap(self, value: Any, source: Optional[Source]) -> V:
        """A symbolic value for ``value`` read from ``source`` (None: trusted, unguarded)."""
        if source is not None:
            known = self.by_source.get(source)
            if known is not None:
                return known
        v = self._wrap(value, source)
        if source is not None:
            self.by_source[source] = v
            self.side_effects.on_wrap(value, v)
        return v

    def _wrap(self, value: Any, source: Optional[Source]) -> V:
        t = type(value)
        if isinstance(value, (np.ndarray, np.generic)) or t in (int, float, complex):
            if source is None:
                if t in (int, float, complex) or isinstance(value, np.generic):
                    return Const(value)
                raise self.brk("FH008", "an array that is not reachable from the frame's inputs")
            if isinstance(value, np.ndarray) and t is not np.ndarray:
                raise self.brk("FH008", f"an array subclass ({t.__module__}.{t.__qualname__}) at {source.name()}")
            if isinstance(value, np.ndarray) and value.dtype.hasobject:
                raise self.brk("FH008", f"an object array at {source.name()}")
            seen = self.first_source_of.get(id(value))
            if seen is not None and isinstance(value, np.ndarray):
                self.guard(source, GuardKind.DUPLICATE_INPUT, other=seen[0])
                return seen[1]
            if isinstance(value, np.ndarray):
                dims = self.dynamic_dims(source, value)
                self.guard(source, GuardKind.NDARRAY_MATCH, **({"dynamic_dims": dims} if dims else {}))
                meta: Any = ArrayMeta.of(value)
                if dims:
                    meta = ArrayMeta(
                        tuple(SymDim(f"s{self.next_sym()}", d) if i in dims else d for i, d in enumerate(value.shape)),
                        value.dtype,
                    )
            else:
                self.guard(source, GuardKind.TYPE_MATCH)
                meta = ArrayMeta.of(value) if isinstance(value, np.generic) else ScalarMeta(t, value)
            v = Tensor(self.placeholder_for(source, meta), meta, source)
            if t is int and self.dynamic_int(source, value):
                v.node.meta["dynamic"] = True  # a graph int where it is a size (see number_sources)
                if self.unspecialized_int(source):
                    v.node.meta["unspecialized"] = True  # never guarded on its value (automatic dynamic ints)
            if isinstance(value, np.ndarray):
                self.first_source_of[id(value)] = (source, v)
                self.keepalive.append(value)
            return v
        if value is None or t is bool or value is Ellipsis or value is NotImplemented:
            self.guard(source, GuardKind.CONSTANT_MATCH)
            return Const(value, source)
        if t in (str, bytes, range, slice):
            self.guard(source, GuardKind.EQUALS_MATCH)
            return Const(value, source)
        if t is tuple or t is list:
            self.guard(source, GuardKind.LENGTH_CHECK)
            items = [self.wrap(x, IndexSource(source, i) if source is not None else None) for i, x in enumerate(value)]
            return TupleV(items, source) if t is tuple else ListV(items, source)
        if isinstance(value, tuple) and isinstance(getattr(t, "_fields", None), tuple) and source is not None:
            # a named tuple (numpy's eigh/svd/slogdet results...): its type fixes its fields
            self.guard(source, GuardKind.TYPE_MATCH)
            return TupleV([self.wrap(x, IndexSource(source, i)) for i, x in enumerate(value)], source, fields=t._fields)
        if t is dict:
            if not all(isinstance(k, (str, int)) and type(k) in (str, int) for k in value):
                raise self.brk("FH008", "a dict whose keys are not all strings or ints")
            self.guard(source, GuardKind.DICT_KEYS)
            return DictV(
                {k: self.wrap(x, ItemSource(source, k) if source is not None else None) for k, x in value.items()},
                source,
            )
        if isinstance(value, types.FunctionType):
            self.guard(source, GuardKind.ID_MATCH)
            same_globals = value.__globals__ is self.f_globals
            base = None if same_globals else (AttrSource(source, "__globals__") if source is not None else None)
            if not same_globals and source is None:
                return Const(value)
            cells = []
            for i, cell in enumerate(value.__closure__ or ()):
                cells.append(
                    Cell(
                        CellContents(cell, ClosureCellSource(source, i) if source is not None else None), external=True
                    )
                )
            defaults = [
                self.wrap(d, IndexSource(AttrSource(source, "__defaults__"), i) if source is not None else None)
                for i, d in enumerate(value.__defaults__ or ())
            ]
            kwdefaults = {
                k: self.wrap(d, ItemSource(AttrSource(source, "__kwdefaults__"), k) if source is not None else None)
                for k, d in (value.__kwdefaults__ or {}).items()
            }
            return FuncV(
                value.__code__,
                value.__globals__,
                value.__name__,
                defaults=defaults,
                kwdefaults=kwdefaults,
                closure=cells,
                fn=value,
                source=source,
                globals_base=base,
            )
        if any(value is special for special in _NUMPY_INDEXERS):
            return Const(value, source)
        if (
            isinstance(value, (types.ModuleType, types.BuiltinFunctionType, type, np.ufunc, np.dtype))
            or nps.is_numpy_callable(value)
            or callable(value)
            and nps.is_numpy_module(sys.modules.get(getattr(value, "__module__", None) or "", None))
        ):
            self.guard(source, GuardKind.ID_MATCH)
            return Const(value, source)
        if source is not None and is_plain_object(value):
            self.guard(source, GuardKind.TYPE_MATCH)
            return ObjV(value, source)
        raise self.brk(
            "FH008",
            f"a value of type {t.__module__}.{t.__qualname__}" + (f" at {source.name()}" if source is not None else ""),
        )

    # ------------------------------------------------------------ symbolic ints
    # A dynamic dimension read in the code (``x.shape[0]``, ``len(x)``, ``x.size``) is a graph
    # int: a node reading it from the array when the graph runs, with the size seen while
    # tracing as its hint. Arithmetic on it is recorded like that on any graph number; it may
    # be a size argument, an index or a slice bound (the result then gets fresh symbolic
    # dimensions). Its value is never used at trace time: where Python needs the number
    # (``range(n)``, a branch), the trace breaks (FH011), and the code after the break gets
    # the number computed by the graph.
    def read_dim(self, v: Tensor, axis: int) -> V:
        """``v.shape[axis]``: a constant for a static dimension, else a graph int."""
        d = v.meta.shape[axis]
        if isinstance(d, int):
            return Const(d)
        key = (self.graph, v.node, axis)
        known = self._dims.get(key)
        if known is None:
            stack = self.stack_location()
            shape = self.graph.getattr(self.to_arg(v), "shape", stack=stack)
            meta = ScalarMeta(int, d.hint if d.hint is not None else 2)  # 2: as ArrayMeta's proxies
            node = self.graph.call(operator.getitem, (shape, axis), meta=meta, stack=stack)
            node.meta["cannot_raise"] = True  # axis < ndim, which the guards fix
            node.meta["dim"] = f"{self.describe_node(v.node)}.shape[{axis}]"
            known = self._dims[key] = Tensor(node, meta)
        return known

    def read_shape(self, v: Tensor) -> V:
        meta = v.meta
        if meta.is_static:
            return Const(meta.shape)
        return TupleV([self.read_dim(v, i) for i in range(meta.ndim)])

    def read_size(self, v: Tensor, name: str = "size") -> V:
        """``v.size`` or ``v.nbytes``: a constant when every dimension is static."""
        meta = v.meta
        if meta.is_static:
            return Const(getattr(meta.proxy(), name))
        hint = 1
        for d in meta.concrete_shape():
            hint *= d
        if name == "nbytes":
            hint *= meta.dtype.itemsize
        node = self.graph.getattr(self.to_arg(v), name, meta=ScalarMeta(int, hint), stack=self.stack_location())
        node.meta["dim"] = f"{self.describe_node(v.node)}.{name}"
        return Tensor(node, node.meta["val"])

    # ------------------------------------------------------------ named tuples
    # A named tuple returned by one operation (``np.linalg.eigh(a)``: an ``EighResult``) is one
    # Tensor whose node holds the whole tuple (TupleMeta): returned, stored or kept across a
    # break, it is that very object. Reading it (indexing, a field, unpacking, iteration,
    # passing it to an operation) reads its items: one ``getitem`` node each, made once per graph.
    def item(self, v: Tensor, i: int) -> Tensor:
        """Item ``i`` (in range) of the named tuple ``v``."""
        key = (self.graph, v.node, i)
        known = self._items.get(key)
        if known is None:
            meta = v.meta.items[i]
            node = self.graph.call(operator.getitem, (self.to_arg(v), i), meta=meta, stack=self.stack_location())
            node.meta["cannot_raise"] = True  # the index is in range: dead-code elimination may drop it
            known = self._items[key] = Tensor(node, meta)
        return known

    def items(self, v: Tensor) -> List[Tensor]:
        return [self.item(v, i) for i in range(len(v.meta.items))]

    def as_plain(self, v: V, deep: bool = False) -> V:
        """``v``, a named tuple computed in the graph, as the plain tuple of its items: what
        operators see (a named tuple is a tuple). ``deep``: also inside tuples, lists and
        dicts, in new containers (the arguments of a graph operation: numpy reads a named
        tuple as the sequence of its items)."""
        if isinstance(v, Tensor) and isinstance(v.meta, TupleMeta):
            return TupleV(list(self.items(v)))
        if not deep:
            return v
        if isinstance(v, (TupleV, ListV)):
            items = [self.as_plain(i, True) for i in v.items]
            if any(a is not b for a, b in zip(items, v.items)):
                return TupleV(items) if isinstance(v, TupleV) else ListV(items)
        if isinstance(v, DictV):
            d = {k: self.as_plain(i, True) for k, i in v.items.items()}
            if any(d[k] is not v.items[k] for k in d):
                return DictV(d)
        return v

    def describe_node(self, node: Any) -> str:
        """``L['x']`` for an input, else the node's name."""
        while node in self.lifted_from:
            node = self.lifted_from[node]
        source = self.inputs.get(node)
        return source.name() if source is not None else node.name

    def number_sources(self, node: Any, dynamic_ok: bool = False) -> Optional[List[Source]]:
        """The Python-number inputs the graph number ``node`` is computed from; None when
        an array (a dynamic dimension), a loop index or a carried value takes part, or (unless
        ``dynamic_ok``: the value is needed, so it is specialized after all) a dynamic int."""
        seen = set()
        todo = [node]
        sources = []
        while todo:
            n = todo.pop()
            if n in seen:
                continue
            seen.add(n)
            if not isinstance(n.meta.get("val"), ScalarMeta):
                return None
            if n.kind.value == "placeholder":
                if n in self.inputs and (dynamic_ok and not n.meta.get("unspecialized") or not n.meta.get("dynamic")):
                    sources.append(self.inputs[n])
                elif n in self.inputs:
                    return None
                elif n in self.lifted_from:
                    todo.append(self.lifted_from[n])  # a loop invariant: the outer value
                else:
                    return None  # a loop index or carried value: different every iteration
            todo.extend(n.inputs())
        return sources

    def _upstream(self, node: Any, stop: Any = None) -> Any:
        """``node`` and every node it is computed from, each once, looking through loop
        invariants to their outer values; a node for which ``stop`` holds is yielded but
        not looked through."""
        seen = set()
        todo = [node]
        while todo:
            n = todo.pop()
            if n in seen:
                continue
            seen.add(n)
            yield n
            if stop is not None and stop(n):
                continue
            if n in self.lifted_from:
                todo.append(self.lifted_from[n])
            todo.extend(n.inputs())

    def unspecialized_in(self, node: Any) -> List[str]:
        """The inputs never to be specialized (automatic dynamic ints) ``node`` is computed from."""
        return sorted(
            self.inputs[n].name() for n in self._upstream(node) if n.meta.get("unspecialized") and n in self.inputs
        )

    def is_symbolic_number(self, v: Any) -> bool:
        """A Python number the graph computes that cannot be specialized (it depends on a
        dynamic dimension or a loop index)."""
        return isinstance(v, Tensor) and isinstance(v.meta, ScalarMeta) and self.number_sources(v.node) is None

    def is_symint(self, v: Any) -> bool:
        return self.is_symbolic_number(v) and v.meta.pytype is int

    def dims_in(self, node: Any) -> List[str]:
        """The dynamic dimensions (as ``L['x'].shape[0]``) a graph number is computed from."""
        labelled = lambda n: n.meta.get("dim") is not None  # noqa: E731
        return sorted({n.meta["dim"] for n in self._upstream(node, labelled) if labelled(n)})

    # ------------------------------------------------------------ the budget
    # A trace that cannot finish (a loop nest that unrolls until a limit, say) should cost
    # little: past any budget it stops with FH015, whose reason names the setting. Counts are
    # never reset within a trace, so a budget break swallowed by a loop-capture attempt
    # recurs at the next instruction.
    def count_instruction(self) -> None:
        self.instructions += 1
        if self.instructions > self.max_instructions:
            raise self.brk(
                "FH015",
                f"config.max_traced_instructions exhausted: more than {self.max_instructions} instructions traced",
            )
        if not self.instructions & 63:  # the clock costs more than an instruction count
            self.check_deadline()

    def count_op(self) -> None:
        self.ops += 1
        if self.ops > self.max_ops:
            raise self.brk(
                "FH015", f"config.max_traced_ops exhausted: more than {self.max_ops} graph operations traced"
            )
        self.check_deadline()

    def check_deadline(self) -> None:
        if self.deadline is not None and time.perf_counter() > self.deadline:
            raise self.brk("FH015", f"config.max_trace_seconds exhausted: tracing took more than {self.max_seconds} s")

    # ------------------------------------------------------------ errors
    def brk(self, code: str, reason: str) -> GraphBreak:
        e = GraphBreak(code, reason)
        if self.current is not None:
            self.current.locate(e)
        return e

    # ------------------------------------------------------------ recording
    def stack_location(self) -> Any:
        fr = self.current
        if fr is None:
            return None
        return fr.location()

    def to_arg(self, v: V) -> Any:
        """The graph argument for a symbolic value (nodes, constants, containers of them)."""
        if isinstance(v, Tensor):
            node = v.node
            return node if node.graph is self.graph else self.lift(node)
        if isinstance(v, Const):
            return v.value
        if isinstance(v, TupleV):
            return tuple(self.to_arg(i) for i in v.items)
        if isinstance(v, ListV):
            return [self.to_arg(i) for i in v.items]
        if isinstance(v, DictV):
            return {k: self.to_arg(i) for k, i in v.items.items()}
        if isinstance(v, SliceV):
            return slice(*(self.to_arg(p) for p in v.parts))
        raise self.brk("FH008", f"cannot pass {v.describe()} to a graph operation")

    def lift(self, node: Any) -> Any:
        """``node`` (from an enclosing graph) as an input of the loop body being recorded."""
        return lift(self, node, len(self.loop_scopes) - 1)

    def to_proxy(self, v: V) -> Any:
        if isinstance(v, Tensor):
            return v.meta.proxy()
        if isinstance(v, Const):
            return v.value
        if isinstance(v, TupleV):
            return tuple(self.to_proxy(i) for i in v.items)
        if isinstance(v, ListV):
            return [self.to_proxy(i) for i in v.items]
        if isinstance(v, DictV):
            return {k: self.to_proxy(i) for k, i in v.items.items()}
        if isinstance(v, SliceV):
            return slice(*(self.to_proxy(p) for p in v.parts))
        raise self.brk("FH008", f"cannot pass {v.describe()} to a graph operation")

    def record(
        self,
        target: Any,
        args: List[V],
        kwargs: Optional[Dict[str, V]] = None,
        *,
        method: Optional[str] = None,
        name: Optional[str] = None,
        linalg: bool = False,
        sized: bool = False,
    ) -> V:
        """Add a call (or method call) node; its metadata comes from running it on proxies.
        ``sized``: a graph int decides the result's shape (a size argument, a slice bound),
        so its dimensions are symbolic."""
        self.count_op()
        kwargs = {k: self.as_plain(a, True) for k, a in (kwargs or {}).items()}
        args = [self.as_plain(a, True) for a in args]
        label = name or (f".{method}" if method else nps.numpy_name(target))
        gargs = tuple(self.to_arg(a) for a in args)
        gkwargs = {k: self.to_arg(a) for k, a in kwargs.items()}
        pargs = tuple(self.to_proxy(a) for a in args)
        pkwargs = {k: self.to_proxy(a) for k, a in kwargs.items()}
        try:
            # only the result's metadata is read: most operations need no full-size run
            result = None if linalg else shrunk_result(nps.run_on_proxies, target, pargs, pkwargs, method)
            if result is not None:
                pass
            elif method is not None:
                receiver = nps.view_proxy(pargs[0]) if method == "view" else pargs[0]
                result = nps.run_on_proxies(getattr(receiver, method), pargs[1:], pkwargs)
            else:
                result = nps.run_on_proxies(target, pargs, pkwargs, linalg=linalg)
        except Exception as e:
            raise self.brk("FH009", f"{label} raised {type(e).__name__}: {e}") from None
        stack = self.stack_location()
        if method is not None:
            node = self.graph.call_method(method, gargs, gkwargs, stack=stack)
        else:
            node = self.graph.call(target, gargs, gkwargs, stack=stack)
        tensors = [a for a in flatten(args + list(kwargs.values())) if isinstance(a, Tensor) and a.is_array]
        symbolic = sized or any(not a.meta.is_static for a in tensors)
        return self.wrap_result(node, result, bool(tensors), label, symbolic)

    def wrap_result(self, node: Any, result: Any, from_arrays: bool, label: str, symbolic: bool = False) -> V:
        if isinstance(result, (np.ndarray, np.generic)):
            if isinstance(result, np.ndarray) and (type(result) is not np.ndarray or result.dtype.hasobject):
                raise self.brk("FH004", f"{label} returned {type(result).__name__} of dtype {result.dtype}")
            meta = ArrayMeta.of(result)
            if symbolic and meta.is_array:
                # computed from arrays with symbolic dimensions: no dimension is known for sure
                meta = ArrayMeta(tuple(SymDim(f"s{self.next_sym()}", d) for d in meta.shape), meta.dtype)
            node.meta["val"] = meta
            return Tensor(node, meta)
        if type(result) in (int, float, complex, bool):
            if from_arrays:
                raise self.brk("FH012", f"{label} turns an array into a Python {type(result).__name__}")
            meta = ScalarMeta(type(result), result)
            node.meta["val"] = meta
            return Tensor(node, meta)
        if result is None and node.impure:
            return Const(None)
        if (
            isinstance(result, tuple)
            and type(result) is not tuple
            and isinstance(getattr(type(result), "_fields", None), tuple)
        ):
            # a named tuple (numpy 2's EighResult, SVDResult, ...): the node holds it whole
            metas = []
            for r in result:
                if not isinstance(r, (np.ndarray, np.generic)):
                    raise self.brk(
                        "FH004",
                        f"{label} returned a named tuple ({type(result).__name__}) holding a {type(r).__name__}",
                    )
                if isinstance(r, np.ndarray) and (type(r) is not np.ndarray or r.dtype.hasobject):
                    raise self.brk("FH004", f"{label} returned {type(r).__name__} of dtype {r.dtype}")
                m = ArrayMeta.of(r)
                if symbolic and m.is_array:
                    m = ArrayMeta(tuple(SymDim(f"s{self.next_sym()}", d) for d in m.shape), m.dtype)
                metas.append(m)
            tmeta = TupleMeta(tuple(metas), type(result))
            node.meta["val"] = tmeta
            return Tensor(node, tmeta)
        if type(result) in (tuple, list):
            items = []
            for i, r in enumerate(result):
                sub = self.graph.call(operator.getitem, (node, i), stack=node.meta.get("stack"))
                items.append(self.wrap_result(sub, r, from_arrays, label, symbolic))
            return TupleV(items) if type(result) is tuple else ListV(items)
        raise self.brk("FH004", f"{label} returned {type(result).__name__}, which the graph cannot hold")
