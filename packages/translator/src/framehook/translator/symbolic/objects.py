"""Objects of user classes: attribute reads, methods and properties (inlined), and new
objects made by calling a class.

Reading ``obj.name`` follows Python's lookup, decided at trace time and guarded so the
cached code is only reused where the lookup would go the same way:

* an attribute the trace stored, or of a new object: its symbolic value;
* a data descriptor on the class: a ``property`` whose getter is a Python function is
  inlined (guarded: ``type(obj).name`` is a property with that very getter); a ``__slots__``
  member is read like an instance attribute; any other descriptor breaks (FH008);
* an instance attribute, or a class attribute that is no descriptor: read through the
  source ``obj.name`` and guarded on its value like any input;
* a Python function on the class (a method), a classmethod or a staticmethod: the bound
  method is inlined when called, guarded on ``obj.name`` being a method of that very
  function bound to that very object (so an instance attribute shadowing it, or a class
  changed afterwards, fails the guard);
* any other descriptor (``functools.cached_property``, one of the user's): a break (FH008)
  before anything reads it, since reading it would run the user's code at trace time.

``Cls.name`` on a user class read from a source (``class_attribute``) is read the same way:
classmethods bound to the class, functions and staticmethods inlined, plain class
attributes guarded as inputs.

Calling a class whose instances are plain (no metaclass, ``__new__``, ``__del__``, slots,
attribute hooks or builtin base; see ``constructible``) makes a ``NewObjV`` and inlines its
``__init__`` (a Python function, or ``object.__init__``): the object exists only in the
trace; where it outlives the graph (returned, stored in an object, a global or a container
from outside, live at a graph break) the output code makes it, with ``object.__new__`` and
one attribute store per attribute in the order ``__init__`` made them (``rebuild.py``).
Anything else keeps the break, with the reason naming what the class defines.
"""

from __future__ import annotations

import types
from typing import TYPE_CHECKING, Any, Dict, List, Optional

from ..guards import GuardKind
from ..guards.sources import AttrSource, Source, TypeSource
from .values import BoundMethodV, Const, FuncV, NewObjV, ObjV, V

if TYPE_CHECKING:  # pragma: no cover
    from .roles import Frame

__all__ = [
    "attribute",
    "class_attribute",
    "has_attribute",
    "constructible",
    "construct",
    "is_user_class",
    "HOOKS",
    "lookup",
]

#: methods that change how attributes are read or written
HOOKS = ("__getattr__", "__setattr__", "__delattr__", "__getattribute__")
_HEAP = 1 << 9  # Py_TPFLAGS_HEAPTYPE: a class made by a class statement


def lookup(t: type, name: str) -> Any:
    """``name`` in the dictionaries of ``t``'s MRO (as ``type.__getattribute__`` finds it), or
    a sentinel."""
    for klass in t.__mro__:
        if name in klass.__dict__:
            return klass.__dict__[name]
    return _MISSING


class _Missing:
    __slots__ = ()


_MISSING = _Missing()
#: what a class may define a method as (binding them runs no user code)
_METHOD_KINDS = (types.FunctionType, staticmethod, classmethod)


def _is_data_descriptor(attr: Any) -> bool:
    t = type(attr)
    return hasattr(t, "__set__") or hasattr(t, "__delete__")


def constructible(cls: type) -> Optional[str]:
    """None when calling ``cls`` can be traced (a new object, then ``__init__`` inlined),
    else why not."""
    if type(cls) is not type:
        return f"its metaclass is {type(cls).__qualname__}"
    for klass in cls.__mro__[:-1]:
        if not klass.__flags__ & _HEAP:
            return f"it derives from the builtin type {klass.__qualname__}"
        for name in HOOKS + ("__new__", "__del__", "__slots__"):
            if name in klass.__dict__:
                return f"{klass.__qualname__} defines {name}"
    if cls.__mro__[-1] is not object:  # pragma: no cover - every class ends with object
        return "its MRO does not end with object"
    init = lookup(cls, "__init__")
    if init is not object.__init__ and not isinstance(init, types.FunctionType):
        return f"its __init__ is a {type(init).__qualname__}, not a Python function"
    return None


def _class_source(fr: "Frame", obj: ObjV) -> Source:
    """Where the class of ``obj`` is read from, for guards on what it defines."""
    if isinstance(obj, NewObjV):
        return obj.cls_source
    return TypeSource(obj.source)  # type: ignore[arg-type]


def _wrap_function(fr: "Frame", fn: Any, source: Source) -> FuncV:
    v = fr.tracer.wrap(fn, source)
    if not isinstance(v, FuncV):  # pragma: no cover - wrap makes a FuncV of every Python function
        raise fr.brk("FH008", f"{source.name()} is not a function that can be inlined")
    return v


def _bound_method(fr: "Frame", obj: ObjV, name: str, value: Any, attr: Any) -> V:
    """``obj.name`` where the class defines ``name`` as a function, classmethod or
    staticmethod (``attr``); ``value`` is what reading it gives now."""
    tracer = fr.tracer
    if isinstance(obj, NewObjV):
        cls_src = AttrSource(obj.cls_source, name)
        if isinstance(attr, types.FunctionType):
            return BoundMethodV(obj, name, _wrap_function(fr, attr, cls_src))
        if isinstance(attr, staticmethod) and isinstance(value, types.FunctionType):
            return _wrap_function(fr, value, cls_src)
        if isinstance(attr, classmethod) and isinstance(getattr(value, "__func__", None), types.FunctionType):
            return BoundMethodV(
                Const(type(obj.value), obj.cls_source),
                name,
                _wrap_function(fr, value.__func__, AttrSource(cls_src, "__func__")),
            )
        raise fr.brk("FH008", f"attribute {name!r} of {obj.describe()}: a {type(attr).__qualname__}")
    src = AttrSource(obj.source, name)  # type: ignore[arg-type]
    if isinstance(value, types.FunctionType):  # a staticmethod (or a function stored on the instance)
        return _wrap_function(fr, value, src)
    if isinstance(value, types.MethodType) and isinstance(value.__func__, types.FunctionType):
        tracer.guard(src, GuardKind.TYPE_MATCH)
        func = _wrap_function(fr, value.__func__, AttrSource(src, "__func__"))
        if value.__self__ is obj.value:
            tracer.guard(AttrSource(src, "__self__"), GuardKind.DUPLICATE_INPUT, other=obj.source)
            return BoundMethodV(obj, name, func)
        owner = tracer.wrap(value.__self__, AttrSource(src, "__self__"))  # a classmethod: the class
        return BoundMethodV(owner, name, func)
    raise fr.brk(
        "FH008",
        f"attribute {name!r} of {obj.describe()}: a {type(value).__qualname__} "
        f"where its class defines a {type(attr).__qualname__}",
    )


def attribute(fr: "Frame", obj: ObjV, name: str) -> V:
    """``obj.name`` (see the module docstring)."""
    tracer = fr.tracer
    if name in obj.attrs:
        return obj.attrs[name]
    value = obj.value
    t = type(value)
    if name.startswith("__") and name.endswith("__"):
        raise fr.brk("FH008", f"the special attribute {name!r} of {obj.describe()}")
    attr = lookup(t, name) if t is not types.SimpleNamespace else _MISSING
    if attr is not _MISSING and _is_data_descriptor(attr):
        if isinstance(attr, property):
            if not isinstance(attr.fget, types.FunctionType):
                raise fr.brk(
                    "FH008",
                    f"the property {name!r} of {obj.describe()}, whose getter is "
                    f"{'missing' if attr.fget is None else 'not a Python function'}",
                )
            prop_src = AttrSource(_class_source(fr, obj), name)
            tracer.guard(prop_src, GuardKind.TYPE_MATCH)
            getter = _wrap_function(fr, attr.fget, AttrSource(prop_src, "fget"))
            return fr.inline(getter, [obj], {})
        if isinstance(attr, types.MemberDescriptorType) and not isinstance(obj, NewObjV):
            return _read(fr, obj, name)  # a __slots__ member: guarded like an instance attribute
        raise fr.brk(
            "FH008",
            f"attribute {name!r} of {obj.describe()}, which its class defines as a "
            f"{type(attr).__qualname__} (a descriptor the translator does not model)",
        )
    if attr is not _MISSING and hasattr(type(attr), "__get__") and not isinstance(attr, _METHOD_KINDS):
        # never run it at trace time: a ``functools.cached_property`` would compute and store
        raise fr.brk(
            "FH008",
            f"attribute {name!r} of {obj.describe()}, which its class defines as a "
            f"{type(attr).__qualname__} (a descriptor the translator does not model)",
        )
    if isinstance(obj, NewObjV):
        if attr is _MISSING:
            raise fr.brk("FH009", f"AttributeError: {t.__qualname__!r} object has no attribute {name!r}")
        if isinstance(attr, _METHOD_KINDS):
            return _bound_method(fr, obj, name, getattr(value, name), attr)
        return tracer.wrap(attr, AttrSource(obj.cls_source, name))
    in_instance = name in getattr(value, "__dict__", {})
    if isinstance(attr, _METHOD_KINDS) and not in_instance:
        return _bound_method(fr, obj, name, getattr(value, name), attr)
    return _read(fr, obj, name)


def has_attribute(obj: ObjV, name: str) -> bool:
    """Does ``obj`` have ``name`` as far as the trace can tell without running user code (an
    attribute stored, one in the instance dictionary, or one its class defines)?"""
    if name in obj.attrs:
        return True
    if not isinstance(obj, NewObjV) and name in getattr(obj.value, "__dict__", {}):
        return True
    return type(obj.value) is not types.SimpleNamespace and lookup(type(obj.value), name) is not _MISSING


def _read(fr: "Frame", obj: ObjV, name: str) -> V:
    """An attribute read through the source ``obj.name``, guarded on its value."""
    try:
        attr = getattr(obj.value, name)
    except AttributeError as e:
        raise fr.brk("FH009", str(e)) from None
    return fr.tracer.wrap(attr, AttrSource(obj.source, name))  # type: ignore[arg-type]


def construct(fr: "Frame", cls_v: Const, args: List[V], kwargs: Dict[str, V]) -> V:
    """``cls(*args, **kwargs)`` for a class ``constructible`` accepts: a new object, with
    ``__init__`` inlined."""
    cls = cls_v.value
    if cls_v.source is None:
        raise fr.brk(
            "FH003", f"a call to the class {cls.__qualname__}, which was not read from a place the guards can check"
        )
    obj = NewObjV(object.__new__(cls), cls_v.source)
    fr.tracer.side_effects.created.append(obj)
    fr.tracer.guard(AttrSource(cls_v.source, "__new__"), GuardKind.ID_MATCH)  # still object.__new__
    init = lookup(cls, "__init__")
    if init is object.__init__:
        fr.tracer.guard(AttrSource(cls_v.source, "__init__"), GuardKind.ID_MATCH)
        if args or kwargs:
            raise fr.brk("FH009", f"{cls.__qualname__}() takes no arguments (TypeError)")
        return obj
    func = _wrap_function(fr, init, AttrSource(cls_v.source, "__init__"))
    result = fr.inline(func, [obj] + list(args), kwargs)
    if not (isinstance(result, Const) and result.value is None):
        raise fr.brk("FH009", f"{cls.__qualname__}.__init__() should return None (TypeError)")
    return obj


def is_user_class(value: Any) -> bool:
    """A class made by a class statement (or ``make_dataclass``) with the plain metaclass."""
    return isinstance(value, type) and type(value) is type and bool(value.__flags__ & _HEAP)


def class_attribute(fr: "Frame", cls_v: Const, name: str) -> V:
    """``Cls.name`` on a user class read from a source: a classmethod bound to the class, a
    function or staticmethod (a function to inline), or a class attribute that is no
    descriptor, each guarded through ``Cls.name``; anything else breaks (FH008)."""
    cls = cls_v.value
    tracer = fr.tracer
    if name.startswith("__") and name.endswith("__"):
        raise fr.brk("FH008", f"the special attribute {name!r} of the class {cls.__qualname__}")
    attr = lookup(cls, name)
    if attr is _MISSING:
        raise fr.brk("FH009", f"AttributeError: type object {cls.__qualname__!r} has no attribute {name!r}")
    src = AttrSource(cls_v.source, name)  # type: ignore[arg-type]
    if hasattr(type(attr), "__get__") and not isinstance(attr, _METHOD_KINDS):
        raise fr.brk("FH008", f"attribute {name!r} of the class {cls.__qualname__}, a {type(attr).__qualname__}")
    value = getattr(cls, name)  # binds a method kind, else the attribute itself: no user code runs
    if isinstance(attr, (types.FunctionType, staticmethod)) and isinstance(value, types.FunctionType):
        return _wrap_function(fr, value, src)
    if (
        isinstance(attr, classmethod)
        and isinstance(value, types.MethodType)
        and isinstance(value.__func__, types.FunctionType)
        and value.__self__ is cls
    ):
        tracer.guard(src, GuardKind.TYPE_MATCH)
        tracer.guard(AttrSource(src, "__self__"), GuardKind.DUPLICATE_INPUT, other=cls_v.source)
        return BoundMethodV(cls_v, name, _wrap_function(fr, value.__func__, AttrSource(src, "__func__")))
    if isinstance(attr, _METHOD_KINDS):
        raise fr.brk(
            "FH008",
            f"attribute {name!r} of the class {cls.__qualname__}, a {type(attr).__qualname__} "
            "the translator does not inline",
        )
    return tracer.wrap(value, src)
