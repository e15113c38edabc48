"""Rebuilding the live state at a graph break: code that makes every value still on the
stack or in a local again at run time (graph outputs, constants, sources, containers and
functions made in the frame), each once so aliases stay aliases."""

from __future__ import annotations

import itertools
import types
from typing import Any, Dict, List, Optional

import numpy as np

from ..bytecode import Codegen
from ..graph.ir import NodeKind
from .breaks import CannotResume
from .values import (
    IMMUTABLE_TYPES,
    NULL,
    Const,
    DictV,
    FuncV,
    Lazy,
    ListV,
    MethodV,
    NewObjV,
    ObjV,
    SliceV,
    Tensor,
    TupleV,
)

__all__ = ["Rebuilder"]

_LOADABLE = IMMUTABLE_TYPES + (
    types.ModuleType,
    types.BuiltinFunctionType,
    type,
    np.ufunc,
    types.FunctionType,
    type(np.linalg.eigh),
)  # numpy >= 1.25 functions are dispatcher objects


def _loadable(value: Any) -> bool:
    """Can ``value`` be a constant of the generated code (immutable, or an object looked up by identity)?"""
    if type(value) in (tuple, frozenset):
        return all(_loadable(x) for x in value)
    return isinstance(value, _LOADABLE)


class Rebuilder:
    """Emits code that rebuilds symbolic values at run time (graph outputs, constants,
    sources, containers built in the frame: each of those once, so aliases stay aliases)."""

    def __init__(self, tracer: Any) -> None:
        self.tracer = tracer
        self.outputs: List[Any] = []  # graph nodes the graph must return
        self._out_index: Dict[Any, int] = {}
        self.memo: Dict[int, str] = {}  # id(container V) -> temporary holding it
        self._names = itertools.count()
        self.graph_out: Optional[str] = None  # local holding the graph's result tuple
        # id(Cell) -> name, for the cells of the frame the code runs in: a function made in
        # the frame (a closure over them) can be made again at run time
        self.cell_names: Dict[int, str] = {}
        self._collected: set = set()  # ids of the new objects collected

    def temp(self) -> str:
        return f"___tmp{next(self._names)}"

    # first pass: which graph values are needed; raises CannotResume for what cannot be rebuilt
    def collect(self, v: Any, null_ok: bool = False) -> None:
        if isinstance(v, Lazy):
            return
        if v is NULL:
            if not null_ok:
                raise CannotResume("a NULL on the stack that cannot be rebuilt")
            return
        if isinstance(v, Tensor):
            if v.node.kind is NodeKind.PLACEHOLDER:
                return
            if v.node not in self._out_index:
                self._out_index[v.node] = len(self.outputs)
                self.outputs.append(v.node)
            return
        if isinstance(v, Const):
            if v.source is None and not _loadable(v.value):
                raise CannotResume(f"the live value {v.describe()} cannot be rebuilt")
            return
        if isinstance(v, (TupleV, ListV)):
            if v.source is None:
                for item in v.items:
                    self.collect(item)
            return
        if isinstance(v, DictV):
            if v.source is None:
                for item in v.items.values():
                    self.collect(item)
            return
        if isinstance(v, NewObjV):
            if id(v) not in self._collected:  # once: objects may refer to each other
                self._collected.add(id(v))
                for item in v.attrs.values():
                    self.collect(item)
            return
        if isinstance(v, ObjV):
            return  # rebuilt from its source
        if isinstance(v, MethodV):
            self.collect(v.obj)
            return
        if isinstance(v, SliceV):
            for part in v.parts:
                self.collect(part)
            return
        if isinstance(v, FuncV) and v.fn is not None:
            return
        if isinstance(v, FuncV) and v.globals_base is None and not v.annotated:
            if any(id(c) not in self.cell_names for c in v.closure):
                raise CannotResume(f"the live {v.describe()} closes over a cell of an inlined call")
            for d in (*v.defaults, *v.kwdefaults.values()):
                self.collect(d)
            return
        raise CannotResume(f"the live value {v.describe()} cannot be rebuilt")

    # second pass: the code
    def emit(self, cg: Codegen, v: Any) -> None:
        if isinstance(v, Lazy):
            v.source.reconstruct(cg)
        elif v is NULL:
            cg.push_null()
        elif isinstance(v, Tensor):
            if v.node.kind is NodeKind.PLACEHOLDER:
                self.tracer.inputs[v.node].reconstruct(cg)
            else:
                cg.load_fast(self.graph_out)  # type: ignore[arg-type]
                cg.load_const(self._out_index[v.node])
                cg.subscr()
        elif isinstance(v, Const):
            if v.source is None or _loadable(v.value):
                cg.load_const(v.value)
            else:
                v.source.reconstruct(cg)
        elif isinstance(v, NewObjV):
            self._emit_object(cg, v)
        elif isinstance(v, (TupleV, ListV, DictV, ObjV)) and v.source is not None:
            v.source.reconstruct(cg)
        elif isinstance(v, TupleV):
            for item in v.items:
                self.emit(cg, item)
            cg.build_tuple(len(v.items))
        elif isinstance(v, (ListV, DictV)):
            name = self.memo.get(id(v))
            if name is None:
                if isinstance(v, ListV):
                    for item in v.items:
                        self.emit(cg, item)
                    cg.build_list(len(v.items))
                else:
                    for key, item in v.items.items():
                        cg.load_const(key)
                        self.emit(cg, item)
                    cg.build_map(len(v.items))
                name = self.memo[id(v)] = self.temp()
                cg.store_fast(name)
            cg.load_fast(name)
        elif isinstance(v, MethodV):
            self.emit(cg, v.obj)
            cg.load_attr(v.name)
        elif isinstance(v, SliceV):
            for part in v.parts:
                self.emit(cg, part)
            cg.build_slice(len(v.parts))
        elif isinstance(v, FuncV) and v.fn is not None:
            cg.load_const(v.fn)
        else:
            assert isinstance(v, FuncV)
            name = self.memo.get(id(v))
            if name is None:  # made once, so every alias is the same function
                self._emit_function(cg, v)
                name = self.memo[id(v)] = self.temp()
                cg.store_fast(name)
            cg.load_fast(name)

    def _emit_object(self, cg: Codegen, v: NewObjV) -> None:
        """An object the frame made (``objects.py``): made once, before its attributes are
        stored (so an attribute may refer back to it), in the order the frame made them."""
        name = self.memo.get(id(v))
        if name is None:
            cls = type(v.value)
            cg.call_builtin(object.__new__, lambda: cg.load_const(cls), nargs=1)
            name = self.memo[id(v)] = self.temp()
            cg.store_fast(name)
            for attr, item in v.attrs.items():
                self.emit(cg, item)
                cg.load_fast(name)
                cg.store_attr(attr)
        cg.load_fast(name)

    def _emit_function(self, cg: Codegen, v: FuncV) -> None:
        maker = _FunctionMaker(v.code, v.f_globals, v.name, v.qualname, sorted(v.kwdefaults))

        def load_args() -> None:
            for d in (*v.defaults, *(v.kwdefaults[k] for k in maker.kwnames)):
                self.emit(cg, d)
            for c in v.closure:
                cg.load_closure(self.cell_names[id(c)])

        maker.ndefaults = len(v.defaults)
        cg.call_builtin(maker, load_args, nargs=len(v.defaults) + len(v.kwdefaults) + len(v.closure))


class _FunctionMaker:
    """Makes again, at run time, a function the traced frame made (``MAKE_FUNCTION``): its
    defaults, keyword defaults and cells arrive as arguments, in that order."""

    __slots__ = ("code", "f_globals", "name", "qualname", "kwnames", "ndefaults")

    def __init__(
        self, code: types.CodeType, f_globals: Dict[str, Any], name: str, qualname: Optional[str], kwnames: List[str]
    ) -> None:
        self.code, self.f_globals, self.name, self.qualname = code, f_globals, name, qualname
        self.kwnames = kwnames
        self.ndefaults = 0

    def __call__(self, *args: Any) -> types.FunctionType:
        nd, nk = self.ndefaults, len(self.kwnames)
        fn = types.FunctionType(
            self.code, self.f_globals, self.name, tuple(args[:nd]) or None, tuple(args[nd + nk :]) or None
        )
        if nk:
            fn.__kwdefaults__ = dict(zip(self.kwnames, args[nd : nd + nk]))
        if self.qualname is not None:
            fn.__qualname__ = self.qualname
        return fn
