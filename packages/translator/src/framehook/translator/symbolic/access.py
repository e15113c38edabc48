"""The symbolic interpreter's attribute and item access: loads, stores and deletions of
attributes and subscripts (a ``FrameTracer`` mixin)."""

from __future__ import annotations

import operator
import types
from typing import Any

import numpy as np

from ..bytecode.behaviour import BEHAVIOUR
from ..guards.sources import AttrSource
from . import numpy_support as nps
from . import objects
from .values import IMMUTABLE_TYPES, NULL, Const, DictV, ListV, MethodV, ObjV, SliceV, Tensor, TupleV, V, flatten

__all__ = ["AccessHandlers"]


class AccessHandlers:
    """Attributes of arrays, modules, constants, containers and user objects; indexing."""

    # ------------------------------------------------------------ attributes
    def k_load_attr(self, inst: Any) -> None:
        # a method load (3.9-3.11's own opcode, a flag after) pushes the call's slot with it
        obj = self.pop()
        self.push_with_null(self.getattr(obj, inst.argval), inst.is_method)

    def push_with_null(self, v: V, null: bool) -> None:
        """``v`` and, when ``null``, the call's NULL slot on the side this Python puts it."""
        if null and not BEHAVIOUR.null_after_callable:
            self.push(NULL)
        self.push(v)
        if null and BEHAVIOUR.null_after_callable:
            self.push(NULL)

    def k_store_attr(self, inst: Any) -> None:
        obj = self.pop()
        self.tracer.side_effects.store_attr(self, obj, inst.argval, self.pop())

    def k_delete_attr(self, inst: Any) -> None:
        raise self.brk("FH006", f"deletion of the attribute {inst.argval!r}")

    def getattr(self, obj: V, name: str) -> V:
        tracer = self.tracer
        if isinstance(obj, Tensor) and obj.is_named_tuple:
            return self.named_tuple_attr(obj, name)
        if isinstance(obj, Tensor):
            if obj.is_array:
                meta = obj.meta
                if name in nps.ARRAY_VALUE_ATTRS:
                    if name == "shape":
                        return tracer.read_shape(obj)
                    if name in ("size", "nbytes"):
                        return tracer.read_size(obj, name)
                    return Const(getattr(meta.proxy(), name))
                if name in nps.ARRAY_NODE_ATTRS:
                    return self.record_getattr(obj, name)
                if name in nps.ARRAY_METHODS:
                    return MethodV(obj, name)
                if callable(getattr(np.ndarray, name, None)):
                    raise self.brk("FH004", f"the array method .{name}()")
                raise self.brk("FH013", f"the array attribute .{name}")
            if name in ("real", "imag"):
                return self.record_getattr(obj, name)
            raise self.brk("FH004", f"the attribute .{name} of a {obj.pytype.__name__} graph value")
        if isinstance(obj, Const):
            value = obj.value
            if isinstance(value, types.ModuleType):
                stored = tracer.side_effects.load_module_attr(value, name)
                if stored is not None:
                    return stored
                try:
                    attr = getattr(value, name)
                except AttributeError as e:
                    raise self.brk("FH009", str(e)) from None
                if nps.is_numpy_module(value):
                    if isinstance(attr, np.ndarray):
                        raise self.brk("FH008", f"the module-level array numpy.{name}")
                    return tracer.wrap(attr, None)  # numpy is trusted: its attributes are not guarded
                return tracer.wrap(attr, AttrSource(obj.source, name) if obj.source is not None else None)
            if isinstance(value, IMMUTABLE_TYPES) or (isinstance(value, type) and name in ("__name__", "__qualname__")):
                try:
                    attr = getattr(value, name)
                except AttributeError as e:
                    raise self.brk("FH009", str(e)) from None
                if callable(attr) and not isinstance(attr, type):
                    return Const(attr)  # a bound method of an immutable value
                return tracer.wrap(attr, None)
            if obj.source is not None and objects.is_user_class(value):
                return objects.class_attribute(self, obj, name)  # Cls.method, Cls.CONST (objects.py)
            if isinstance(value, np.ufunc) and name in nps.UFUNC_METHODS:
                return Const(getattr(value, name))
            if value is np.mgrid or value is np.ogrid:
                raise self.brk("FH004", f"numpy.{'mgrid' if value is np.mgrid else 'ogrid'}.{name}")
            raise self.brk("FH008", f"attribute {name!r} of {obj.describe()}")
        if isinstance(obj, TupleV) and obj.fields and name in obj.fields:
            return obj.items[obj.fields.index(name)]
        if isinstance(obj, (ListV, DictV, TupleV)):
            return MethodV(obj, name)
        if isinstance(obj, ObjV):
            return objects.attribute(self, obj, name)  # data, methods, properties (objects.py)
        raise self.brk("FH008", f"attribute {name!r} of {obj.describe()}")

    def named_tuple_attr(self, obj: Tensor, name: str) -> V:
        """An attribute of a named tuple computed in the graph: a field is its item."""
        meta = obj.meta
        fields = meta.fields
        if name in fields:
            return self.tracer.item(obj, fields.index(name))
        if name in ("_fields", "_field_defaults"):
            return self.tracer.wrap(getattr(meta.pytype, name), None)
        if name == "_asdict":
            return MethodV(obj, name)
        if name in ("count", "index"):
            return MethodV(TupleV(self.tracer.items(obj)), name)
        if not hasattr(meta.pytype, name):
            raise self.brk("FH009", f"AttributeError: {meta.pytype.__name__!r} object has no attribute {name!r}")
        raise self.brk("FH004", f"the attribute .{name} of {obj.describe()}")

    def record_getattr(self, obj: Tensor, name: str) -> V:
        try:
            result = getattr(obj.meta.proxy(), name)
        except Exception as e:  # pragma: no cover - every modelled attribute exists
            raise self.brk("FH009", f".{name} raised {type(e).__name__}: {e}") from None
        node = self.tracer.graph.getattr(self.tracer.to_arg(obj), name, stack=self.tracer.stack_location())
        return self.tracer.wrap_result(node, result, obj.is_array, f".{name}", obj.is_array and not obj.meta.is_static)

    # ------------------------------------------------------------ subscripts
    def subscr(self, obj: V, idx: V) -> V:
        if isinstance(obj, Tensor) and obj.is_named_tuple:
            key = self.const_of(idx, f"indexing a {obj.describe()}")
            n = len(obj.meta.items)
            if type(key) is int and -n <= key < n:
                return self.tracer.item(obj, key % n)
            obj = self.tracer.as_plain(obj)  # a slice gives a plain tuple; the rest raises as for one
        if isinstance(obj, Tensor):
            if not obj.is_array:
                raise self.brk("FH008", f"indexing a {obj.pytype.__name__}")
            idx = self.tracer.as_plain(idx)
            if nps.is_mask(idx) and idx.meta.ndim > 0:
                return nps.mask_getitem(self, obj, idx)
            self.check_masks(idx)
            if nps.is_mask(idx) or isinstance(idx, TupleV) and any(nps.is_mask(i) for i in idx.items):
                return nps.mask_index_getitem(self, obj, self.index_value(idx))
            for part in flatten([idx]):
                if isinstance(part, Tensor) and not part.is_array:
                    self.index_value(part)
            idx = self.index_value(idx)
            # a slice bound computed in the graph makes the length symbolic; an int index does not
            sized = any(isinstance(p, SliceV) for p in flatten([idx]))
            return self.tracer.record(operator.getitem, [obj, idx], name="operator.getitem", sized=sized)
        if isinstance(obj, (TupleV, ListV)):
            key = self.const_of(idx, f"indexing a {obj.describe()}")
            try:
                if isinstance(key, slice):
                    return type(obj)(obj.items[key]) if isinstance(obj, TupleV) else ListV(obj.items[key])
                return obj.items[key]
            except Exception as e:
                raise self.brk("FH009", f"indexing raised {type(e).__name__}: {e}") from None
        if isinstance(obj, DictV):
            key = self.const_of(idx)
            if key not in obj.items:
                raise self.brk("FH009", f"KeyError: {key!r}")
            return obj.items[key]
        if isinstance(obj, Const):
            if isinstance(idx, Tensor) and idx.is_array:
                raise self.brk("FH004", f"indexing {obj.describe()} with an array")
            key = self.const_of(idx)
            if obj.value is np.mgrid or obj.value is np.ogrid or obj.value is np.index_exp or obj.value is np.s_:
                if obj.value is np.index_exp or obj.value is np.s_:
                    return Const(obj.value[key])
                return self.tracer.record(operator.getitem, [obj, Const(key)], name="numpy.mgrid[]")
            try:
                result = obj.value[key]
            except Exception as e:
                raise self.brk("FH009", f"indexing raised {type(e).__name__}: {e}") from None
            return self.tracer.wrap(result, None)
        raise self.brk("FH008", f"indexing {obj.describe()}")

    def check_masks(self, idx: V) -> None:
        """Masks (boolean graph arrays) are indices on their own or items of a tuple index;
        anywhere deeper (a list index, a tuple inside the tuple) numpy first makes one array
        of the sequence, whose shape and meaning depend on the masks' values."""
        parts = idx.items if isinstance(idx, TupleV) else [idx]
        for part in parts:
            if not nps.is_mask(part) and any(nps.is_mask(p) for p in flatten([self.tracer.as_plain(part, True)])):
                raise self.brk(
                    "FH011",
                    "a boolean mask inside a list or a nested sequence of an index (numpy "
                    "makes one array of the sequence; index with the mask itself, or with "
                    "a tuple of masks, ints, slices and integer arrays)",
                )

    def index_value(self, idx: V) -> V:
        """An index for an array: constants, slices, tuples, arrays of integers, and graph
        ints (a dynamic dimension, a loop index); other graph numbers are specialized."""
        idx = self.tracer.as_plain(idx)
        if isinstance(idx, Tensor) and not idx.is_array:
            if self.tracer.is_symint(idx):
                return idx
            return Const(self.const_of(idx, "an index"))
        if isinstance(idx, TupleV):
            return TupleV([self.index_value(i) for i in idx.items])
        return idx

    def k_subscr(self, inst: Any) -> None:
        # also BINARY_OP [] (3.14+): subscripts are binary operators there
        idx = self.pop()
        obj = self.pop()
        self.push(self.subscr(obj, idx))

    def k_subscr_slice(self, inst: Any) -> None:
        stop = self.pop()
        start = self.pop()
        obj = self.pop()
        self.push(self.subscr(obj, self.make_slice([start, stop])))

    def store_subscr(self, obj: V, idx: V, value: V) -> None:
        if isinstance(obj, Tensor) and obj.is_array:
            idx = self.tracer.as_plain(idx)
            value = self.tracer.as_plain(value, True)
            if nps.is_mask(idx) and idx.meta.ndim > 0:
                nps.mask_setitem(self, obj, idx, value)
                return
            self.check_masks(idx)
            if nps.is_mask(idx) or isinstance(idx, TupleV) and any(nps.is_mask(i) for i in idx.items):
                nps.mask_index_setitem(self, obj, self.index_value(idx), value)
                return
            idx = self.index_value(idx)
            self.tracer.record(operator.setitem, [obj, idx, value], name="operator.setitem")
            return
        if isinstance(obj, ListV):
            self.check_mutable(obj)
            key = self.const_of(idx)
            try:
                if isinstance(key, slice):
                    obj.items[key] = self.iterate(value)
                else:
                    obj.items[key] = value
            except Exception as e:
                raise self.brk("FH009", f"list assignment raised {type(e).__name__}: {e}") from None
            return
        if isinstance(obj, DictV):
            self.check_mutable(obj)
            obj.items[self.const_of(idx)] = value
            return
        raise self.brk("FH006", f"item assignment on {obj.describe()}")

    def k_store_subscr(self, inst: Any) -> None:
        idx = self.pop()
        obj = self.pop()
        value = self.pop()
        self.store_subscr(obj, idx, value)

    def k_store_slice(self, inst: Any) -> None:
        stop = self.pop()
        start = self.pop()
        obj = self.pop()
        value = self.pop()
        self.store_subscr(obj, self.make_slice([start, stop]), value)

    def k_delete_subscr(self, inst: Any) -> None:
        idx = self.pop()
        obj = self.pop()
        if isinstance(obj, (ListV, DictV)):
            self.check_mutable(obj)
            key = self.const_of(idx)
            try:
                del obj.items[key]
            except Exception as e:
                raise self.brk("FH009", f"del raised {type(e).__name__}: {e}") from None
            return
        raise self.brk("FH006", f"item deletion on {obj.describe()}")
