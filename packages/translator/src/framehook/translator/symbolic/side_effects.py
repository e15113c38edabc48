"""Side effects of a traced frame: mutations of state outside the frame, replayed after the graph runs.

What is traced (later reads in the frame see the new value) and replayed:

* stores to the frame's module globals (``STORE_GLOBAL``, also from inlined functions of
  the same module);
* attribute stores on plain objects the frame received or read (``ObjV``: a
  ``types.SimpleNamespace`` or an instance of a user class without attribute hooks) and on
  modules other than numpy's; objects of user classes the frame creates (``NewObjV``,
  ``objects.py``) keep their attributes in the trace and are made by the output code where
  they outlive it (``created``: their presence alone sends the output through this code);
* mutations of lists and dicts the frame received or read (``append``, item assignment,
  ``update``, ...): at replay the real container is given its final contents
  (``lst[:] = [...]``; ``d.clear(); d.update({...})``), so its identity is kept.

The output code runs the graph, then reads every value and every object the effects need
into temporaries (before anything is stored: a value may be read through a location an
effect overwrites), then applies the effects in program order (the order of each target's
last store), then returns. After a graph break that resumes (``resume.py``) the same
replay runs right before the instruction that broke.

Guards: the objects mutated are guarded like any input (type, list length, dict keys,
attribute types, ...); an object mutated must not be reachable through two sources when
tracing (that breaks: FH006), and ``DISTINCT_INPUT`` guards make the code invalid when an
object mutated becomes the same object as another one of its type read by the frame.

What still breaks with FH006: deleting globals or attributes, stores to the globals of an
inlined function from another module, attribute stores on functions, classes, numpy
modules and objects with attribute hooks or descriptors for that name, stores to closure
variables of enclosing functions, and mutation of an object reachable through two sources.
"""

from __future__ import annotations

import types
from typing import TYPE_CHECKING, Any, Callable, Dict, List, Optional, Tuple

from ..bytecode import Codegen
from ..guards import GuardKind
from ..guards.sources import GlobalSource
from . import numpy_support as nps
from .values import Const, DictV, ListV, NewObjV, ObjV, Tensor, V

if TYPE_CHECKING:  # pragma: no cover
    from .roles import Frame, TraceState
    from .rebuild import Rebuilder

__all__ = ["SideEffects", "is_plain_object", "plain_attribute"]

_READ_HOOKS = ("__getattr__", "__getattribute__")
_WRITE_HOOKS = ("__setattr__", "__delattr__")


def is_plain_object(value: Any) -> bool:
    """An object of a Python class whose attribute reads go to its ``__dict__``, its slots or
    its class with no hook in between (``__setattr__``, as frozen dataclasses have, only
    matters for stores: ``write_hook``)."""
    t = type(value)
    if t is types.SimpleNamespace:
        return True
    if not isinstance(t, type) or type(t) is not type or not (t.__flags__ & (1 << 9)):  # a heap (Python) class
        return False
    if not isinstance(getattr(value, "__dict__", None), dict) and "__slots__" not in t.__dict__:
        return False
    for klass in t.__mro__:
        if klass is object:
            continue
        if klass.__module__ in ("builtins",) or not (klass.__flags__ & (1 << 9)):
            return False  # a subclass of a builtin or C type (list, ndarray, ...)
        if any(h in klass.__dict__ for h in _READ_HOOKS):
            return False
    return True


def write_hook(value: Any) -> Optional[str]:
    """The class (and hook) that intercepts attribute stores on ``value``, or None."""
    if type(value) is types.SimpleNamespace:
        return None  # its C slots store to the instance dict
    for klass in type(value).__mro__[:-1]:
        for h in _WRITE_HOOKS:
            if h in klass.__dict__:
                return f"{klass.__qualname__}.{h}"
    return None


def plain_attribute(value: Any, name: str) -> bool:
    """Is ``name`` an instance attribute of the plain object ``value`` (or absent), with no
    descriptor on its class?"""
    if name.startswith("__") and name.endswith("__"):
        return False
    for klass in type(value).__mro__:
        if name in klass.__dict__:
            return not hasattr(type(klass.__dict__[name]), "__get__")
    return True


def _replace_list(target: list, items: list) -> None:
    target[:] = items


def _replace_dict(target: dict, items: dict) -> None:
    target.clear()
    target.update(items)


class SideEffects:
    """The side-effect log of one translation (``Tracer.side_effects``)."""

    def __init__(self, tracer: "TraceState") -> None:
        self.tracer = tracer
        # target key -> effect, in the order of each target's last store
        self.log: Dict[Tuple[Any, ...], Tuple[Any, ...]] = {}
        self.globals: Dict[str, V] = {}
        self.module_attrs: Dict[Tuple[int, str], V] = {}
        # objects that can be mutated (lists, dicts, plain objects) read from sources
        self.by_id: Dict[int, List[V]] = {}
        self.ident: Dict[int, Tuple[int, Any]] = {}  # id(symbolic value) -> (id(object), object)
        self.mutated: Dict[int, V] = {}  # id(object) -> its symbolic value
        self.created: List[NewObjV] = []  # objects of user classes the frame made

    def __bool__(self) -> bool:
        # objects made in the frame go through the same output code (made where they outlive it)
        return bool(self.log) or bool(self.created)

    # ------------------------------------------------------------ reading
    def on_wrap(self, value: Any, v: V) -> None:
        """``value`` was just read from a source as ``v``."""
        if not isinstance(v, (ListV, DictV, ObjV)) or v.source is None:
            return
        oid = id(value)
        if oid in self.mutated:
            raise self.tracer.brk(
                "FH006",
                f"{v.source.name()} is an object the function mutated through {self.mutated[oid].source.name()}",
            )  # type: ignore[union-attr]
        self.by_id.setdefault(oid, []).append(v)
        self.ident[id(v)] = (oid, value)

    def load_global(self, name: str) -> Optional[V]:
        return self.globals.get(name)

    def load_module_attr(self, module: Any, name: str) -> Optional[V]:
        return self.module_attrs.get((id(module), name))

    # ------------------------------------------------------------ mutating
    def _claim(self, fr: "Frame", v: V) -> None:
        """``v`` (from a source) is about to be mutated."""
        found = self.ident.get(id(v))
        if found is None:
            raise fr.brk("FH006", f"mutation of {v.describe()}, which cannot be tracked")
        oid, _ = found
        others = [o for o in self.by_id.get(oid, []) if o is not v]
        if others:
            raise fr.brk(
                "FH006",
                f"mutation of {v.source.name()}, which is also "  # type: ignore[union-attr]
                f"{others[0].source.name()}",
            )  # type: ignore[union-attr]
        self.mutated[oid] = v

    def _not_in_loop_body(self, what: str) -> None:
        """A loop being captured as one loop node (``loops.py``) would do the effect once:
        such a loop is unrolled instead."""
        if self.tracer.mutation_floor is not None:
            from .loops import LoopAbort

            raise LoopAbort(f"the loop body {what}")

    def _record(self, key: Tuple[Any, ...], effect: Tuple[Any, ...]) -> None:
        self.log.pop(key, None)
        self.log[key] = effect

    def mutate_container(self, fr: "Frame", v: V) -> None:
        """``v`` (a ListV or DictV) is about to be mutated in place."""
        if v.source is None:
            return  # built in the frame (or a trusted copy): nothing to replay
        self._not_in_loop_body(f"mutates {v.source.name()}")
        self._claim(fr, v)
        self._record(("container", id(v)), ("container", v))

    def store_global(self, fr: "Frame", name: str, value: V) -> None:
        if fr.globals_base is not None:
            raise fr.brk("FH006", f"assignment to the global {name!r} of another module")
        self._not_in_loop_body(f"assigns the global {name!r}")
        self.globals[name] = value
        self.tracer.by_source[GlobalSource(name)] = value
        self._record(("global", name), ("global", name, value))

    def store_attr(self, fr: "Frame", obj: V, name: str, value: V) -> None:
        self._not_in_loop_body(f"assigns the attribute {name!r}")
        if isinstance(obj, ObjV):
            if not plain_attribute(obj.value, name):
                raise fr.brk(
                    "FH006", f"assignment to the attribute {name!r} of {obj.describe()}, which its class defines"
                )
            hook = write_hook(obj.value)
            if hook is not None:
                raise fr.brk(
                    "FH006", f"assignment to the attribute {name!r} of {obj.describe()}, whose stores go through {hook}"
                )
            if isinstance(obj, NewObjV):
                obj.attrs[name] = value  # made by the frame: its attributes are made with it
                return
            if id(obj.value) not in self.mutated:
                self._claim(fr, obj)
            obj.attrs[name] = value
            self._record(("attr", id(obj), name), ("attr", obj, name, value))
            return
        if isinstance(obj, Tensor) and name == "shape":
            nps.store_shape(fr, obj, value)  # an in-place reshape, in the graph
            return
        if isinstance(obj, Const) and isinstance(obj.value, types.ModuleType) and not nps.is_numpy_module(obj.value):
            self.module_attrs[(id(obj.value), name)] = value
            self.tracer.keepalive.append(obj.value)
            self._record(("attr", id(obj.value), name), ("attr", obj, name, value))
            return
        raise fr.brk("FH006", f"assignment to the attribute {name!r} of {obj.describe()}")

    # ------------------------------------------------------------ guards
    def install_guards(self) -> None:
        """The objects mutated must stay distinct from the other objects of their type read."""
        for oid, v in self.mutated.items():
            value = self.ident[id(v)][1]
            for other_id, others in self.by_id.items():
                if other_id == oid or type(self.ident[id(others[0])][1]) is not type(value):
                    continue
                for o in others:
                    self.tracer.guard(v.source, GuardKind.DISTINCT_INPUT, other=o.source)

    # ------------------------------------------------------------ replay
    def _parts(self) -> List[Tuple[str, Any, List[V]]]:
        """(kind, detail, values to rebuild) per effect."""
        parts: List[Tuple[str, Any, List[V]]] = []
        for effect in self.log.values():
            kind = effect[0]
            if kind == "global":
                parts.append(("global", effect[1], [effect[2]]))
            elif kind == "attr":
                parts.append(("attr", effect[2], [effect[1], effect[3]]))
            else:
                v = effect[1]
                if isinstance(v, ListV):
                    parts.append(("list", None, [v, ListV(list(v.items))]))
                else:
                    parts.append(("dict", None, [v, DictV(dict(v.items))]))
        return parts

    def collect(self, rebuilder: "Rebuilder") -> None:
        """Ask ``rebuilder`` for the graph outputs the replay needs (CannotResume when a value
        cannot be rebuilt)."""
        for _, _, values in self._parts():
            for v in values:
                rebuilder.collect(v)

    def emit(self, cg: Codegen, rebuilder: "Rebuilder") -> None:
        """The replay: every target and value into temporaries, then the stores in order."""
        parts = self._parts()
        temps: List[List[str]] = []
        for _, _, values in parts:
            names = []
            for v in values:
                rebuilder.emit(cg, v)
                t = rebuilder.temp()
                cg.emit("STORE_FAST", argval=t)
                names.append(t)
            temps.append(names)
        for (kind, detail, _), names in zip(parts, temps):
            if kind == "global":
                cg.load_fast(names[0])
                cg.emit("STORE_GLOBAL", argval=detail)
                continue
            if kind == "attr":
                cg.load_fast(names[1])
                cg.load_fast(names[0])
                cg.emit("STORE_ATTR", argval=detail)
                continue
            fn: Callable[..., None] = _replace_list if kind == "list" else _replace_dict

            def load(names: List[str] = names) -> None:
                for t in names:
                    cg.load_fast(t)

            cg.call_builtin(fn, load, nargs=2)
            cg.emit("POP_TOP")
