"""Symbolic values: what the interpreter's stack and locals hold while tracing.

* ``Const``: a Python object known at trace time (numbers, strings, modules, functions,
  dtypes, ranges, slices, ...), guarded where it was read;
* ``Tensor``: a value computed by the graph (a numpy array, a numpy scalar, a Python
  number that is a graph input, or a named tuple of arrays returned by one operation, like
  ``np.linalg.eigh``'s ``EighResult``), carrying its node and its metadata;
* ``TupleV``, ``ListV``, ``DictV``: containers of symbolic values;
* ``IterV``: an iterator being unrolled; ``FuncV``: a user function to inline;
* ``MethodV``: a method bound to a symbolic value; ``NullV``: the NULL of the call protocol;
* ``Cell``/``CellV``: closure cells;
* ``SliceV``: a slice with a bound computed in the graph (a symbolic int, ``x[: n // 2]``);
* ``ObjV``: a plain Python object (``types.SimpleNamespace``, an instance of a user class
  without attribute hooks) read from a source; its attributes are read through sources and
  its attribute stores are recorded as side effects (``side_effects.py``);
* ``NewObjV``: an object of a user class created by the frame (``objects.py``): its
  attributes live in the trace, and it is made at run time only where it outlives the graph;
* ``BoundMethodV``: a method of a user class bound to its object (inlined when called).
"""

from __future__ import annotations

import itertools
import types
from typing import Any, Dict, List, Optional, Tuple

import numpy as np

from ..graph import ArrayMeta, Node, ScalarMeta, TupleMeta
from ..guards.sources import Source

__all__ = [
    "IMMUTABLE_TYPES",
    "V",
    "Const",
    "Tensor",
    "TupleV",
    "ListV",
    "DictV",
    "IterV",
    "FuncV",
    "MethodV",
    "NullV",
    "Cell",
    "CellV",
    "CellContents",
    "Lazy",
    "NULL",
    "next_serial",
    "ObjV",
    "NewObjV",
    "BoundMethodV",
    "SliceV",
    "unread",
    "flatten",
]


#: creation order of mutable symbolic values: a loop being captured refuses to mutate a
#: container made before its body started (each iteration would have to do it again)
#: values of these types cannot change under the graph: a constant of them needs no guard
#: on its contents, and generated code may load it as a constant
IMMUTABLE_TYPES: Tuple[type, ...] = (
    int,
    float,
    complex,
    bool,
    str,
    bytes,
    type(None),
    range,
    slice,
    np.dtype,
    np.generic,
    type(Ellipsis),
)

_serials = itertools.count()


def next_serial() -> int:
    return next(_serials)


class V:
    """Base of every symbolic value."""

    source: Optional[Source] = None

    def describe(self) -> str:
        return type(self).__name__


class Const(V):
    __slots__ = ("value", "source")

    def __init__(self, value: Any, source: Optional[Source] = None) -> None:
        self.value = value
        self.source = source

    def describe(self) -> str:
        return f"{type(self.value).__name__} {self.value!r:.60}"

    def __repr__(self) -> str:
        return f"Const({self.value!r:.60})"


class CellContents:
    """Lazy contents of a real closure cell: read (and guarded) on first use."""

    __slots__ = ("cell", "source")

    def __init__(self, cell: Any, source: Optional[Source]) -> None:
        self.cell = cell
        self.source = source


def unread(v: Any) -> bool:
    """True for a value the trace has not read yet (an argument or a cell's contents)."""
    return isinstance(v, (Lazy, CellContents))


class Tensor(V):
    """A graph value. ``meta`` is an ArrayMeta (arrays, numpy scalars), a ScalarMeta
    (a Python number that entered the graph as an input or was computed from one) or a
    TupleMeta (a named tuple of arrays: the node holds it whole, so returning it or keeping
    it across a break gives the very object; operations read its items, ``Tracer.items``)."""

    __slots__ = ("node", "meta", "source")

    def __init__(self, node: Node, meta: Any, source: Optional[Source] = None) -> None:
        self.node = node
        self.meta = meta
        self.source = source

    @property
    def is_array(self) -> bool:
        return isinstance(self.meta, ArrayMeta)

    @property
    def is_python_scalar(self) -> bool:
        return isinstance(self.meta, ScalarMeta)

    @property
    def is_named_tuple(self) -> bool:
        return isinstance(self.meta, TupleMeta)

    @property
    def pytype(self) -> type:
        return self.meta.pytype

    def describe(self) -> str:
        if isinstance(self.meta, TupleMeta):
            return f"named tuple {self.meta.pytype.__name__} of {len(self.meta.items)} computed in the graph"
        if isinstance(self.meta, ArrayMeta):
            return f"array {self.meta}" if self.meta.is_array else f"numpy scalar {self.meta.pytype.__name__}"
        return f"{self.meta.pytype.__name__} graph input"

    def __repr__(self) -> str:
        return f"Tensor({self.node.name}: {self.meta})"


class TupleV(V):
    """A tuple; ``fields``: the field names of a named tuple read from ``source``."""

    __slots__ = ("items", "source", "fields")

    def __init__(
        self, items: List[V], source: Optional[Source] = None, fields: Optional[Tuple[str, ...]] = None
    ) -> None:
        self.items = list(items)
        self.source = source
        self.fields = fields

    def describe(self) -> str:
        return f"tuple of {len(self.items)}"


class ListV(V):
    """A list. ``source`` set: it came from outside the frame and must not be mutated."""

    __slots__ = ("items", "source", "serial")

    def __init__(self, items: List[V], source: Optional[Source] = None) -> None:
        self.items = list(items)
        self.source = source
        self.serial = next(_serials)

    def describe(self) -> str:
        return f"list of {len(self.items)}"


class DictV(V):
    """A dict with keys known at trace time (``items`` maps the key to a symbolic value)."""

    __slots__ = ("items", "source", "serial")

    def __init__(self, items: Dict[Any, V], source: Optional[Source] = None) -> None:
        self.items = dict(items)
        self.source = source
        self.serial = next(_serials)

    def describe(self) -> str:
        return f"dict of {len(self.items)}"


class IterV(V):
    """An iterator being unrolled: over a fixed list of values, or live over a ListV."""

    __slots__ = ("items", "pos", "live", "serial", "range")

    def __init__(self, items: List[V], live: Optional[ListV] = None, range_: Optional[range] = None) -> None:
        self.items = items
        self.live = live
        self.range = range_  # iterating a range: its items are made one at a time
        self.pos = 0
        self.serial = next(_serials)

    def remaining(self) -> int:
        seq = self.range if self.range is not None else self.live.items if self.live is not None else self.items
        return max(len(seq) - self.pos, 0)

    def next(self) -> Optional[V]:
        if self.range is not None:
            if self.pos >= len(self.range):
                return None
            self.pos += 1
            return Const(self.range[self.pos - 1])
        seq = self.live.items if self.live is not None else self.items
        if self.pos >= len(seq):
            return None
        self.pos += 1
        return seq[self.pos - 1]

    def rest(self) -> List[V]:
        out = []
        while True:
            v = self.next()
            if v is None:
                return out
            out.append(v)


class Cell:
    """A closure cell. ``external``: it belongs to a frame outside the one traced (stores break)."""

    __slots__ = ("value", "external")

    def __init__(self, value: Any = None, external: bool = False) -> None:
        self.value = value
        self.external = external


class CellV(V):
    __slots__ = ("cell",)

    def __init__(self, cell: Cell) -> None:
        self.cell = cell


class FuncV(V):
    """A Python function to inline: a real one (``fn``) or one made by MAKE_FUNCTION."""

    __slots__ = (
        "code",
        "f_globals",
        "name",
        "defaults",
        "kwdefaults",
        "closure",
        "fn",
        "source",
        "globals_base",
        "qualname",
        "annotated",
    )

    def __init__(
        self,
        code: types.CodeType,
        f_globals: Dict[str, Any],
        name: str,
        *,
        defaults: Optional[List[V]] = None,
        kwdefaults: Optional[Dict[str, V]] = None,
        closure: Optional[List[Cell]] = None,
        fn: Any = None,
        source: Optional[Source] = None,
        globals_base: Optional[Source] = None,
    ) -> None:
        self.code = code
        self.f_globals = f_globals
        self.name = name
        self.defaults = list(defaults or [])
        self.kwdefaults = dict(kwdefaults or {})
        self.closure = list(closure or [])
        self.fn = fn
        self.source = source
        self.globals_base = globals_base  # None: the traced frame's own globals (G[...])
        self.qualname: Optional[str] = None  # MAKE_FUNCTION's, where it is not the code's (3.9/3.10)
        self.annotated = False  # made with annotations (not kept: such a function is not rebuilt)

    def describe(self) -> str:
        return f"function {self.name}"


class MethodV(V):
    __slots__ = ("obj", "name")

    def __init__(self, obj: V, name: str) -> None:
        self.obj = obj
        self.name = name

    def describe(self) -> str:
        return f"method {self.name} of {self.obj.describe()}"


class ObjV(V):
    """A plain object from outside the frame. ``attrs``: attributes stored while tracing
    (later reads in the frame see them; they are replayed after the graph runs)."""

    __slots__ = ("value", "source", "attrs")

    def __init__(self, value: Any, source: Source) -> None:
        self.value = value
        self.source = source
        self.attrs: Dict[str, V] = {}

    def describe(self) -> str:
        t = type(self.value)
        return f"object of type {t.__module__}.{t.__qualname__}"

    def __repr__(self) -> str:
        return f"ObjV({self.source.name() if self.source is not None else '?'})"


class NewObjV(ObjV):
    """An object of the user class ``type(value)`` created while tracing (``objects.py``).
    ``value`` is a blank instance (``object.__new__``, never seen by the user) standing for
    its type; every attribute the object has is in ``attrs``; ``cls_source`` is where the
    class was read (its methods and class attributes are guarded through it)."""

    __slots__ = ("cls_source",)

    def __init__(self, value: Any, cls_source: Source) -> None:
        self.value = value
        self.source = None  # type: ignore[assignment]
        self.attrs = {}
        self.cls_source = cls_source

    def describe(self) -> str:
        t = type(self.value)
        return f"new object of type {t.__module__}.{t.__qualname__}"

    def __repr__(self) -> str:
        return f"NewObjV({type(self.value).__qualname__})"


class BoundMethodV(MethodV):
    """``obj.name`` where the class defines ``name`` as a Python function (or a classmethod:
    then ``obj`` is the class): calling it inlines ``func`` with ``obj`` first."""

    __slots__ = ("func",)

    def __init__(self, obj: V, name: str, func: FuncV) -> None:
        super().__init__(obj, name)
        self.func = func

    def describe(self) -> str:
        return f"method {self.name} of {self.obj.describe()}"


class SliceV(V):
    """``slice(start, stop, step)`` where some part is a graph int (the others are Consts):
    only arrays can be indexed with it, and the result's length is symbolic."""

    __slots__ = ("parts",)

    def __init__(self, parts: List[V]) -> None:
        self.parts = list(parts)

    def describe(self) -> str:
        return "slice with a bound computed in the graph"


class NullV(V):
    def __repr__(self) -> str:
        return "NULL"


NULL = NullV()


class Lazy:
    """An argument not yet read: wrapped (and guarded) on first use."""

    __slots__ = ("value", "source")

    def __init__(self, value: Any, source: Source) -> None:
        self.value = value
        self.source = source


def flatten(vs: List[V]) -> List[V]:
    """The leaves of ``vs``: tuples, lists and dicts opened, recursively."""
    out: List[V] = []
    for v in vs:
        if isinstance(v, (TupleV, ListV)):
            out += flatten(v.items)
        elif isinstance(v, DictV):
            out += flatten(list(v.items.values()))
        else:
            out.append(v)
    return out
