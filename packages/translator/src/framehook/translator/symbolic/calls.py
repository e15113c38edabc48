"""Calls during tracing: numpy functions and ufuncs (graph nodes), array methods, the
builtins that have a trace-time meaning, container methods, and user functions (inlined)."""

from __future__ import annotations

import builtins
import operator
import types
from typing import TYPE_CHECKING, Any, Callable, Dict, List

import numpy as np

from ..graph import ArrayMeta
from . import errstate, objects
from . import numpy_support as nps
from .breaks import GraphBreak
from .loops import symbolic_range
from .values import BoundMethodV, Const, DictV, FuncV, IterV, ListV, MethodV, ObjV, Tensor, TupleV, V, flatten

if TYPE_CHECKING:  # pragma: no cover
    from .roles import Frame

__all__ = ["call_value"]

Handler = Callable[["Frame", List[V], Dict[str, V]], V]
_BUILTINS: Dict[Any, Handler] = {}


def _builtin(*fns: Any) -> Callable[[Handler], Handler]:
    def register(h: Handler) -> Handler:
        for fn in fns:
            _BUILTINS[fn] = h
        return h

    return register


def _no_kwargs(fr: "Frame", name: str, kwargs: Dict[str, V]) -> None:
    if kwargs:
        raise fr.brk("FH009", f"{name}() got unexpected keyword arguments {sorted(kwargs)}")


def _fold(fr: "Frame", fn: Callable[..., Any], args: List[V], kwargs: Dict[str, V]) -> V:
    """Call ``fn`` now on trace-time values."""
    why = f"{getattr(fn, '__name__', 'the call')}()"
    values = [fr.const_of(a, why) for a in args]
    kw = {k: fr.const_of(a, why) for k, a in kwargs.items()}
    try:
        with errstate.strict(fr):
            result = fn(*values, **kw)
    except Exception as e:
        raise fr.brk("FH009", f"{getattr(fn, '__name__', fn)}() raised {type(e).__name__}: {e}") from None
    return fr.tracer.wrap(result, None) if not isinstance(result, (list, dict)) else _wrap_container(fr, result)


def _wrap_container(fr: "Frame", value: Any) -> V:
    if isinstance(value, list):
        return ListV([fr.tracer.wrap(x, None) for x in value])
    return DictV({k: fr.tracer.wrap(x, None) for k, x in value.items()})


def _has_array(vs: List[V]) -> bool:
    """Any graph value that is an array or numpy scalar, or a named tuple of those (not a
    Python-number input)?"""
    return any(isinstance(v, Tensor) and (isinstance(v.meta, ArrayMeta) or v.is_named_tuple) for v in flatten(list(vs)))


def _has_tensor(vs: List[V]) -> bool:
    return any(isinstance(v, Tensor) for v in flatten(list(vs)))


@_builtin(len)
def _len(fr: "Frame", args: List[V], kwargs: Dict[str, V]) -> V:
    _no_kwargs(fr, "len", kwargs)
    if len(args) != 1:
        raise fr.brk("FH009", "len() takes exactly one argument")
    (v,) = args
    if isinstance(v, (TupleV, ListV, DictV)):
        return Const(len(v.items))
    if isinstance(v, Tensor) and v.is_named_tuple:
        return Const(len(v.meta.items))
    if isinstance(v, Tensor):
        if not v.is_array or v.meta.ndim == 0:
            raise fr.brk("FH009", f"len() of unsized {v.describe()}")
        return fr.tracer.read_dim(v, 0)
    return _fold(fr, len, args, kwargs)


@_builtin(isinstance)
def _isinstance(fr: "Frame", args: List[V], kwargs: Dict[str, V]) -> V:
    _no_kwargs(fr, "isinstance", kwargs)
    if len(args) != 2:
        raise fr.brk("FH009", "isinstance expected 2 arguments")
    obj, cls_v = args
    cls = fr.const_of(cls_v)
    pytype = _python_type(fr, obj)
    try:
        return Const(issubclass(pytype, cls))
    except TypeError as e:
        raise fr.brk("FH009", f"isinstance() raised TypeError: {e}") from None


def _python_type(fr: "Frame", v: V) -> type:
    if isinstance(v, Tensor):
        return v.pytype
    if isinstance(v, TupleV):
        return tuple
    if isinstance(v, ListV):
        return list
    if isinstance(v, DictV):
        return dict
    if isinstance(v, FuncV):
        return types.FunctionType
    if isinstance(v, (Const, ObjV)):
        return type(v.value)
    raise fr.brk("FH008", f"the type of {v.describe()}")


@_builtin(type)
def _type(fr: "Frame", args: List[V], kwargs: Dict[str, V]) -> V:
    if len(args) != 1 or kwargs:
        raise fr.brk("FH003", "type() with more than one argument")
    return Const(_python_type(fr, args[0]))


def _make_pure(fn: Any) -> Handler:
    def handler(fr: "Frame", args: List[V], kwargs: Dict[str, V]) -> V:
        if (
            fn is pow
            and len(args) == 2
            and fr.python_int(args[0])
            and isinstance(args[1], Tensor)
            and fr.python_int(args[1])
        ):
            args = [args[0], Const(fr.const_of(args[1], "the exponent of an int power"))]  # as in binary()
        if fn in (round, divmod, pow) and _has_tensor(args + list(kwargs.values())):
            return fr.tracer.record(fn, args, kwargs, name=fn.__name__)
        if fn in (any, all) and args and not isinstance(args[0], Const):
            items = fr.iterate(args[0])
            return Const(fn(fr.truth(i) for i in items))
        return _fold(fr, fn, args, kwargs)

    return handler


for _fn in (range, slice, str, repr, round, divmod, pow, hash, chr, ord, bin, hex, oct, callable, any, all, format):
    _BUILTINS[_fn] = _make_pure(_fn)


@_builtin(range)
def _range(fr: "Frame", args: List[V], kwargs: Dict[str, V]) -> V:
    sym = symbolic_range(fr, args, kwargs)  # bounds from a loop index: a loop node's bounds
    if sym is not None:
        return sym
    try:
        return _fold(fr, range, args, kwargs)
    except GraphBreak as e:
        if any(isinstance(a, Tensor) and fr.tracer.unspecialized_in(a.node) for a in args):
            # a loop over range(k) of an int that is not specialized: captured as a loop node
            # with a graph bound, or else the whole loop runs in Python, so that the code
            # after it does not receive a range guarded on its value
            e.whole_statement = True  # type: ignore[attr-defined]
            sym = symbolic_range(fr, args, kwargs, fallback=e)
            if sym is not None:
                return sym
        raise


def _make_convert(fn: type) -> Handler:
    def handler(fr: "Frame", args: List[V], kwargs: Dict[str, V]) -> V:
        if len(args) == 1 and not kwargs and isinstance(args[0], Tensor) and args[0].is_named_tuple:
            if fn is bool:
                return Const(bool(args[0].meta.items))
            raise fr.brk("FH009", f"{fn.__name__}() of a named tuple raises TypeError")
        if len(args) == 1 and not kwargs and isinstance(args[0], Tensor):
            v = args[0]
            if v.is_array:
                raise fr.brk("FH012", f"{fn.__name__}() of {v.describe()} computed in the graph")
            if type(v.meta.hint) is fn:
                return v
            if fn is not bool and fr.tracer.is_symbolic_number(v):
                return fr.tracer.record(fn, args, name=fn.__name__)  # float(len(x)): in the graph
        return _fold(fr, fn, args, kwargs)

    return handler


for _fn in (int, float, bool, complex):
    _BUILTINS[_fn] = _make_convert(_fn)


@_builtin(abs)
def _abs(fr: "Frame", args: List[V], kwargs: Dict[str, V]) -> V:
    _no_kwargs(fr, "abs", kwargs)
    if len(args) == 1 and isinstance(args[0], Tensor):
        return fr.tracer.record(abs, args, name="abs")
    return _fold(fr, abs, args, kwargs)


def _make_minmax(fn: Any) -> Handler:
    def handler(fr: "Frame", args: List[V], kwargs: Dict[str, V]) -> V:
        items = fr.iterate(args[0]) if len(args) == 1 else list(args)
        if any(isinstance(i, Tensor) and i.is_array for i in items):
            raise fr.brk("FH002", f"{fn.__name__}() compares array values")
        if not kwargs and len(items) > 1 and any(fr.tracer.is_symbolic_number(i) for i in items):
            return fr.tracer.record(fn, items, name=fn.__name__)  # min(n, 8) of a dynamic dimension
        values = [fr.const_of(i) for i in items]
        kw = {k: fr.const_of(v) for k, v in kwargs.items()}
        try:
            result = fn(values, **kw) if values or "default" in kw else fn(values)
        except Exception as e:
            raise fr.brk("FH009", f"{fn.__name__}() raised {type(e).__name__}: {e}") from None
        return fr.tracer.wrap(result, None)

    return handler


for _fn in (min, max):
    _BUILTINS[_fn] = _make_minmax(_fn)


@_builtin(sum)
def _sum(fr: "Frame", args: List[V], kwargs: Dict[str, V]) -> V:
    if not args or len(args) > 2:
        raise fr.brk("FH009", "sum() takes an iterable and an optional start")
    total = args[1] if len(args) == 2 else kwargs.get("start", Const(0))
    for item in fr.iterate(args[0]):
        total = fr.binary(operator.add, total, item)
    return total


def _make_sequence(fn: type) -> Handler:
    def handler(fr: "Frame", args: List[V], kwargs: Dict[str, V]) -> V:
        _no_kwargs(fr, fn.__name__, kwargs)
        items = fr.iterate(args[0]) if args else []
        return TupleV(items) if fn is tuple else ListV(items)

    return handler


for _fn in (tuple, list):
    _BUILTINS[_fn] = _make_sequence(_fn)


@_builtin(dict)
def _dict(fr: "Frame", args: List[V], kwargs: Dict[str, V]) -> V:
    items: Dict[Any, V] = {}
    if args:
        src = args[0]
        if isinstance(src, DictV):
            items.update(src.items)
        else:
            for pair in fr.iterate(src):
                k, v = fr.iterate(pair)
                items[fr.const_of(k)] = v
    items.update(kwargs)
    return DictV(items)


@_builtin(enumerate)
def _enumerate(fr: "Frame", args: List[V], kwargs: Dict[str, V]) -> V:
    start = fr.const_of(args[1]) if len(args) > 1 else fr.const_of(kwargs.get("start", Const(0)))
    items = fr.iterate(args[0])
    return IterV([TupleV([Const(start + i), v]) for i, v in enumerate(items)])


@_builtin(zip)
def _zip(fr: "Frame", args: List[V], kwargs: Dict[str, V]) -> V:
    strict = fr.const_of(kwargs.pop("strict", Const(False)))
    _no_kwargs(fr, "zip", kwargs)
    seqs = [fr.iterate(a) for a in args]
    if strict and len({len(s) for s in seqs}) > 1:
        raise fr.brk("FH009", "zip(strict=True) on sequences of different lengths")
    return IterV([TupleV(list(group)) for group in zip(*seqs)])


@_builtin(reversed)
def _reversed(fr: "Frame", args: List[V], kwargs: Dict[str, V]) -> V:
    return IterV(list(reversed(fr.iterate(args[0]))))


@_builtin(iter)
def _iter(fr: "Frame", args: List[V], kwargs: Dict[str, V]) -> V:
    return IterV(fr.iterate(args[0]))


@_builtin(next)
def _next(fr: "Frame", args: List[V], kwargs: Dict[str, V]) -> V:
    it = args[0]
    if not isinstance(it, IterV):
        raise fr.brk("FH008", f"next() of {it.describe()}")
    fr.check_mutable(it)
    v = it.next()
    if v is None:
        if len(args) > 1:
            return args[1]
        raise fr.brk("FH009", "StopIteration from next()")
    return v


@_builtin(getattr)
def _getattr(fr: "Frame", args: List[V], kwargs: Dict[str, V]) -> V:
    if len(args) == 3 and isinstance(args[0], ObjV):
        # an attribute the object has is read (and guarded: the cached code is not reused
        # once it is gone); the default of a missing one would need its absence guarded
        name = fr.const_of(args[1])
        if objects.has_attribute(args[0], name):
            return fr.getattr(args[0], name)
        raise fr.brk(
            "FH003",
            f"getattr() with a default of the attribute {name!r}, which "
            f"{args[0].describe()} lacks (its absence is not guarded)",
        )
    if len(args) != 2:
        raise fr.brk("FH003", "getattr() with a default")
    return fr.getattr(args[0], fr.const_of(args[1]))


@_builtin(hasattr)
def _hasattr(fr: "Frame", args: List[V], kwargs: Dict[str, V]) -> V:
    obj, name = args[0], fr.const_of(args[1])
    if isinstance(obj, Tensor):
        return Const(hasattr(obj.meta.proxy(), name))
    if isinstance(obj, Const):
        return Const(hasattr(obj.value, name))
    if isinstance(obj, ObjV) and objects.has_attribute(obj, name):
        fr.getattr(obj, name)  # read as for obj.name: guarded, so a later absence recompiles
        return Const(True)
    raise fr.brk(
        "FH008",
        f"hasattr() on {obj.describe()}"
        + (f" of the attribute {name!r}, which it lacks (its absence is not guarded)" if isinstance(obj, ObjV) else ""),
    )


def _numpy_call(fr: "Frame", fn: Any, args: List[V], kwargs: Dict[str, V]) -> V:
    name = nps.numpy_name(fn)
    tracer = fr.tracer
    if fn in nps.SHAPE_QUERIES:
        a = args[0] if args else kwargs.get("a")
        if isinstance(a, Tensor) and a.is_array and len(args) + len(kwargs) == 1:
            if fn is np.ndim:
                return Const(a.meta.ndim)
            return tracer.read_shape(a) if fn is np.shape else tracer.read_size(a)
        if fn is np.size and isinstance(a, Tensor) and a.is_array and len(args) + len(kwargs) == 2:
            axis = fr.const_of(args[1] if len(args) == 2 else kwargs.get("axis", Const(None)), "numpy.size's axis")
            if isinstance(axis, int) and -a.meta.ndim <= axis < a.meta.ndim:
                return tracer.read_dim(a, axis % a.meta.ndim)
        return _fold(fr, fn, args, kwargs)
    if fn in nps.META_ONLY:
        try:
            return Const(
                nps.run_on_proxies(
                    fn, [tracer.to_proxy(a) for a in args], {k: tracer.to_proxy(a) for k, a in kwargs.items()}
                )
            )
        except Exception as e:
            raise fr.brk("FH009", f"{name} raised {type(e).__name__}: {e}") from None
    nps.check_special_call(fr, fn, args, kwargs)
    if fn in nps.CREATION:
        positions, names = nps.CREATION_ARRAY_ARGS.get(fn, (set(), set()))
        for i, a in enumerate(args):
            if i not in positions and _has_array([a]):
                raise fr.brk("FH011", f"{name}: argument {i + 1} is computed from array values")
        for k, a in kwargs.items():
            if k not in names and _has_array([a]):
                raise fr.brk("FH011", f"{name}: argument {k}= is computed from array values")
    if fn is np.squeeze and len(args) == 1:
        _check_squeeze(fr, args[0], kwargs)
    if fn in nps.VALUE_DEPENDENT_DTYPE and _has_array(args + list(kwargs.values())):
        _check_complex_result(fr, fn, args, kwargs, name)
    if fn is np.where and len(args) + len(kwargs) == 1:
        raise fr.brk("FH011", "numpy.where with one argument (the indices of true elements)")
    if fn in (np.repeat, np.tile) and any(_has_array([a]) for a in args[1:]):
        raise fr.brk("FH011", f"{name}: the repeat counts are computed from array values")
    if "out" in kwargs:
        out = kwargs["out"]
        if not (isinstance(out, Tensor) or (isinstance(out, TupleV) and all(isinstance(i, Tensor) for i in out.items))):
            raise fr.brk("FH004", f"{name}: out= must be an array")
    # Python numbers stay graph inputs only where they are values (not axes, sizes, ...);
    # graph ints (dynamic dimensions) also where they are sizes
    sized = [False]
    if not isinstance(fn, np.ufunc):
        value_args = nps.VALUE_ARGS.get(fn, (set(), set()))
        size_args = nps.SIZE_ARGS.get(fn, (set(), set()))

        def arg(key: Any, a: V, kind: int) -> V:
            if key in value_args[kind]:
                return a
            why = f"argument {key + 1} of {name}" if kind == 0 else f"{key}= of {name}"
            return nps.specialize_numbers(fr, a, why, sized if key in size_args[kind] else None)

        args = [arg(i, a, 0) for i, a in enumerate(args)]
        kwargs = {k: arg(k, a, 1) for k, a in kwargs.items()}
    else:
        kwargs = {k: nps.specialize_numbers(fr, a, f"{k}= of {name}") for k, a in kwargs.items()}
    if not _has_tensor(args + list(kwargs.values())):
        result = _fold_numpy(fr, fn, args, kwargs, name)
        if result is not None:
            return result
    return tracer.record(fn, args, kwargs, name=name, linalg=fn in nps.LINALG, sized=sized[0])


def _check_complex_result(fr: "Frame", fn: Any, args: List[V], kwargs: Dict[str, V], name: str) -> None:
    """``eig``/``eigvals`` of a real matrix computed in the graph, on a numpy whose result is
    real when every eigenvalue is real and complex otherwise: the dtype depends on the values."""
    tracer = fr.tracer
    try:
        result = nps.run_on_proxies(
            fn,
            [tracer.to_proxy(tracer.as_plain(a, True)) for a in args],
            {k: tracer.to_proxy(tracer.as_plain(a, True)) for k, a in kwargs.items()},
            linalg=True,
        )
    except Exception:
        return  # raised again (FH009) when the call is recorded
    first = result[0] if isinstance(result, tuple) else result
    if np.asarray(first).dtype.kind != "c":
        raise fr.brk(
            "FH004",
            f"{name} of a real array computed in the graph: on numpy {np.__version__} its "
            f"result is real when every eigenvalue is real and complex otherwise (a dtype "
            f"that depends on the values); pass a complex array (a.astype(complex)) to "
            f"capture it",
        )


def _fold_numpy(fr: "Frame", fn: Any, args: List[V], kwargs: Dict[str, V], name: str) -> Any:
    """numpy on trace-time values: fold immutable results (scalars, dtypes); arrays are made in the graph."""
    if fn in nps.CREATION or fn in (
        np.array,
        np.asarray,
        np.asanyarray,
        np.ascontiguousarray,
        np.copy,
        np.meshgrid,
        np.diag,
        np.diagflat,
    ):
        return None
    values = [fr.const_of(a) for a in args]
    kw = {k: fr.const_of(a) for k, a in kwargs.items()}
    try:
        with errstate.strict(fr):  # an error the settings would report is not folded away
            fn(*values, **kw)
        result = nps.run_on_proxies(fn, values, kw)
    except Exception as e:
        raise fr.brk("FH009", f"{name} raised {type(e).__name__}: {e}") from None
    if isinstance(result, np.ndarray):
        return None
    if isinstance(result, (np.generic, np.dtype, int, float, bool, complex, str, type)):
        return Const(result)
    return None


def _check_squeeze(fr: "Frame", obj: V, kwargs: Dict[str, V]) -> None:
    """squeeze() without an axis drops the dimensions that are 1: which ones, and so the
    result's ndim, is not known for dynamic dimensions."""
    axis = kwargs.get("axis")
    if (
        (axis is None or isinstance(axis, Const) and axis.value is None)
        and isinstance(obj, Tensor)
        and obj.is_array
        and not obj.meta.is_static
    ):
        raise fr.brk(
            "FH011",
            "squeeze() without an axis on an array with dynamic dimensions (the result's "
            "ndim depends on which sizes are 1)",
        )


def _array_method(fr: "Frame", obj: Tensor, name: str, args: List[V], kwargs: Dict[str, V]) -> V:
    # Python numbers received as arguments are specialized (guarded) below; values computed
    # from arrays would make the result's shape data-dependent
    if name in ("reshape", "transpose", "repeat") and any(_has_array([a]) for a in args):
        raise fr.brk("FH011", f".{name}() with arguments computed from array values")
    if name == "squeeze" and not args:
        _check_squeeze(fr, obj, kwargs)
    sizes = nps.SIZE_METHOD_ARGS.get(name, set())
    sized = [False]
    args = [
        nps.specialize_numbers(fr, a, f"argument {i + 1} of .{name}()", sized if sizes is None or i in sizes else None)
        for i, a in enumerate(args)
    ]
    # keywords too: x.sum(axis=k) with k a graph number would give metadata for one k only
    kwargs = {k: nps.specialize_numbers(fr, a, f"{k}= of .{name}()") for k, a in kwargs.items()}
    return fr.tracer.record(None, [obj] + args, kwargs, method=name, sized=sized[0])


def _list_method(fr: "Frame", obj: ListV, name: str, args: List[V], kwargs: Dict[str, V]) -> V:
    _no_kwargs(fr, name, kwargs) if name != "sort" else None
    if name in ("index", "count", "copy"):
        if name == "copy":
            return ListV(list(obj.items))
        return _fold(fr, getattr(fr.const_of(obj), name), args, {})
    fr.check_mutable(obj)
    try:
        if name == "append":
            obj.items.append(args[0])
        elif name == "extend":
            obj.items.extend(fr.iterate(args[0]))
        elif name == "insert":
            obj.items.insert(fr.const_of(args[0]), args[1])
        elif name == "pop":
            return obj.items.pop(*(fr.const_of(a) for a in args))
        elif name == "clear":
            obj.items.clear()
        elif name == "reverse":
            obj.items.reverse()
        else:
            raise fr.brk("FH004", f"the list method .{name}()")
    except IndexError as e:
        raise fr.brk("FH009", f"list.{name} raised IndexError: {e}") from None
    return Const(None)


def _dict_method(fr: "Frame", obj: DictV, name: str, args: List[V], kwargs: Dict[str, V]) -> V:
    # views are iterated (returning one breaks the graph: FH008), never passed on as lists
    if name == "keys":
        return IterV([Const(k) for k in obj.items])
    if name == "values":
        return IterV(list(obj.items.values()))
    if name == "items":
        return IterV([TupleV([Const(k), v]) for k, v in obj.items.items()])
    if name == "get":
        key = fr.const_of(args[0])
        return obj.items.get(key, args[1] if len(args) > 1 else Const(None))
    if name == "copy":
        return DictV(dict(obj.items))
    fr.check_mutable(obj)
    if name == "update":
        other = _dict(fr, args, kwargs)
        obj.items.update(other.items)  # type: ignore[union-attr]
        return Const(None)
    if name == "pop":
        key = fr.const_of(args[0])
        if key in obj.items:
            return obj.items.pop(key)
        if len(args) > 1:
            return args[1]
        raise fr.brk("FH009", f"KeyError: {key!r}")
    if name == "setdefault":
        key = fr.const_of(args[0])
        return obj.items.setdefault(key, args[1] if len(args) > 1 else Const(None))
    raise fr.brk("FH004", f"the dict method .{name}()")


def call_value(fr: "Frame", fn: V, args: List[V], kwargs: Dict[str, V]) -> V:
    if isinstance(fn, errstate.ErrstateExitV):
        return errstate.exit_call(fr, fn, args, kwargs)
    if isinstance(fn, errstate.ErrstateEnterV) and not args and not kwargs:
        return Const(None)  # what numpy.errstate.__enter__ returns
    if isinstance(fn, FuncV):
        return fr.inline(fn, args, kwargs)
    if isinstance(fn, BoundMethodV):
        return fr.inline(fn.func, [fn.obj] + list(args), kwargs)  # a method of a user class
    if isinstance(fn, MethodV):
        obj = fn.obj
        if isinstance(obj, Tensor) and obj.is_named_tuple:  # ._asdict(): the fields and items
            _no_kwargs(fr, fn.name, kwargs)
            if args:
                raise fr.brk("FH009", f"{fn.name}() takes no arguments")
            return DictV(dict(zip(obj.meta.fields, fr.tracer.items(obj))))
        if isinstance(obj, Tensor):
            return _array_method(fr, obj, fn.name, args, kwargs)
        if isinstance(obj, ListV):
            return _list_method(fr, obj, fn.name, args, kwargs)
        if isinstance(obj, DictV):
            return _dict_method(fr, obj, fn.name, args, kwargs)
        if isinstance(obj, TupleV) and fn.name in ("index", "count"):
            return _fold(fr, getattr(fr.const_of(obj), fn.name), args, kwargs)
        raise fr.brk("FH004", f"the method .{fn.name}() of {obj.describe()}")
    if not isinstance(fn, Const):
        raise fr.brk("FH003", f"calling {fn.describe()}")
    value = fn.value
    try:
        handler = _BUILTINS.get(value)
    except TypeError:
        handler = None
    if handler is not None:
        return handler(fr, args, kwargs)
    if any(value is f for f in _IO):
        raise fr.brk("FH005", f"a call to {value.__name__}()")
    if isinstance(value, type) and issubclass(value, BaseException):
        raise fr.brk("FH009", f"constructs a {value.__name__} (the code raises)")
    if value is np.errstate:
        return errstate.make(fr, args, kwargs)
    if nps.is_numpy_callable(value):
        return _numpy_call(fr, value, args, kwargs)
    if isinstance(value, types.FunctionType):
        if value.__globals__ is not fr.tracer.f_globals:
            raise fr.brk("FH014", f"{value.__qualname__}: a function whose globals cannot be guarded")
        return fr.inline(
            FuncV(
                value.__code__,
                value.__globals__,
                value.__name__,
                defaults=[Const(d) for d in value.__defaults__ or ()],
                closure=[],
                fn=value,
            ),
            args,
            kwargs,
        )
    if isinstance(value, type) and issubclass(value, np.generic):
        if _has_tensor(args):
            return fr.tracer.record(value, args, kwargs, name=f"numpy.{value.__name__}")
        return _fold(fr, value, args, kwargs)
    if value is np.dtype or (
        isinstance(value, types.BuiltinFunctionType) and getattr(value, "__module__", "") == "math"
    ):
        if _has_tensor(args):
            return fr.tracer.record(value, args, kwargs, name=f"math.{value.__name__}")
        return _fold(fr, value, args, kwargs)
    if isinstance(value, (types.BuiltinFunctionType, types.BuiltinMethodType, types.MethodWrapperType)) and isinstance(
        getattr(value, "__self__", None), (str, bytes, tuple, int, float, complex, np.dtype)
    ):
        return _fold(fr, value, args, kwargs)  # a method of an immutable value
    module = getattr(value, "__module__", None)
    if isinstance(module, str) and (module == "numpy" or module.startswith("numpy.")):
        raise fr.brk("FH004", f"{nps.numpy_name(value)} is not in the supported set")
    if isinstance(value, type) and value.__flags__ & (1 << 9):  # a class made by a class statement
        why = objects.constructible(value)
        if why is None:
            return objects.construct(fr, fn, args, kwargs)
        raise fr.brk(
            "FH003", f"a call to the class {value.__qualname__}, whose objects the translator does not model: {why}"
        )
    raise fr.brk("FH003", f"a call to {getattr(value, '__qualname__', repr(value))}")


_IO = {print, open, input, breakpoint, builtins.exec, builtins.eval}
