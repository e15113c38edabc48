"""Value trees: encoding live objects to JSON-safe tagged trees, validating and decoding them.

A value tree is ``null``/``true``/``false``, a JSON string (a ``str``), or an object with a
tag ``"t"`` (see FORMAT.md for every tag). Three separate steps keep loading safe:

* ``Encoder.encode`` (recording) turns objects into trees; what it cannot encode becomes a
  ``missing`` placeholder naming the value.
* ``validate`` (loading) checks a tree's shape, sizes and references. It imports nothing,
  unpickles nothing and calls no code named by the tree.
* ``Decoder.decode`` (replaying) rebuilds objects: imports modules named by import path,
  loads numpy data with ``allow_pickle=False``, and unpickles only when ``trusted``.
"""

from __future__ import annotations

import base64
import binascii
import enum
import importlib
import io
import itertools
import operator
import re
import sys
import types
import warnings
from typing import Any, Callable

from . import registry
from .errors import RecordFormatError, UntrustedRecordError
from .limits import DEFAULT, Limits

MAX_DEPTH = 100  # encoder and validator both stop here
# Values one record's inputs (or one outcome tree) may hold: what is past it becomes
# placeholders, so that recording a call whose arguments reach a whole object graph (a
# test case's self) costs little, and the record stays under replay's `values` limit.
MAX_VALUES = 20_000
MAX_INT_HEX_DIGITS = 100_000
MAX_REPR = 200
_MUTABLE_TAGS = {"list", "dict", "set", "bytearray", "ndarray", "function", "iterator", "object", "class"}
_IDENT_PATH = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*(\.[A-Za-z_][A-Za-z0-9_]*)*$")
_QUALNAME = re.compile(r"^[A-Za-z_<][A-Za-z0-9_<>.]*$")
_HEX_INT = re.compile(r"^-?[0-9a-f]+$")
_NPY_MAGIC = b"\x93NUMPY"
# The .npy header is a Python dict literal; these read it without evaluating anything.
_NPY_DESCR = re.compile(r"'descr'\s*:\s*(?:'([^']*)'|(\[.*\]))\s*,")
_NPY_SHAPE = re.compile(r"'shape'\s*:\s*\(([0-9,\s]*)\)")
_NPY_SIMPLE = re.compile(r"^[<>|=]?([a-zA-Z])([0-9]+)?(?:\[[A-Za-z0-9]+\])?$")
_NPY_OBJECT_FIELD = re.compile(r"'[<>|=]?O'")
# Code flags that decorators set after compilation (types.coroutine sets this one).
CO_SET_AFTER_COMPILE = 0x100  # CO_ITERABLE_COROUTINE


class MissingValueError(RuntimeError):
    """Raised when replayed code touches a value that could not be recorded."""


class Missing:
    """Stands in for a value the recorder could not encode; any use of it raises."""

    __slots__ = ("name", "type_name", "text", "why")

    def __init__(self, name: str, type_name: str, text: str, why: str) -> None:
        object.__setattr__(self, "name", name)
        object.__setattr__(self, "type_name", type_name)
        object.__setattr__(self, "text", text)
        object.__setattr__(self, "why", why)

    def __repr__(self) -> str:
        return f"<missing {self.name}: {self.type_name} ({self.why})>"

    def _fail(self, *args: Any, **kwargs: Any) -> Any:
        raise MissingValueError(f"the recorded value {self.name} ({self.type_name}) is missing: {self.why}")

    def __getattr__(self, item: str) -> Any:
        self._fail()

    __call__ = __iter__ = __len__ = __getitem__ = __setitem__ = __bool__ = _fail
    __add__ = __radd__ = __sub__ = __mul__ = __rmul__ = __index__ = __int__ = __float__ = _fail

    # Equality and hashing stay object identity: two placeholders are two values (as dict
    # keys they must not merge); one placeholder in two places decodes to one object.
    __eq__ = object.__eq__
    __hash__ = object.__hash__


EMPTY_CELL = object()  # decoded form of an empty closure cell


def _qualname_path(obj: Any) -> tuple[str, str] | None:
    """(module, qualname) if the object is reachable by that import path, else None."""
    module = getattr(obj, "__module__", None)
    qualname = getattr(obj, "__qualname__", None)
    if not isinstance(module, str) or not isinstance(qualname, str) or "<" in qualname:
        return None
    mod = sys.modules.get(module)
    if mod is None or module == "__main__":
        return None
    target: Any = mod
    for part in qualname.split("."):
        target = getattr(target, part, None)
        if target is None:
            return None
    return (module, qualname) if target is obj else None


_SINGLETON_TYPES = {type(None): "None", type(Ellipsis): "Ellipsis", type(NotImplemented): "NotImplemented"}


def _importable_path(obj: Any) -> tuple[str, str] | None:
    """Like _qualname_path, but never a test module's: where records replay, tests are
    not installed, and importing one would run a test file."""
    path = _qualname_path(obj)
    if path is None or _is_test_module(path[0], sys.modules.get(path[0])):
        return None
    return path


# Types whose repr runs no user code: any other object is shown as <module.Type object>,
# since calling a repr can change what the call sees (a cache's repr expiring entries).
_SAFE_REPR = frozenset(
    {int, float, complex, str, bytes, bool, type(None), range, slice, type, types.ModuleType}
    | {types.FunctionType, types.BuiltinFunctionType, types.CodeType}
)


def _short_repr(obj: Any) -> str:
    tp = type(obj)
    if tp not in _SAFE_REPR and tp.__repr__ is not object.__repr__:
        if isinstance(obj, (tuple, list, dict, set, frozenset)):
            return f"<{tp.__qualname__} of {len(obj)}>"
        return f"<{tp.__module__}.{tp.__qualname__} object>"
    try:
        text = repr(obj)
    except Exception as exc:  # a broken __repr__ must not stop recording
        text = f"<repr failed: {type(exc).__name__}>"
    text = re.sub(r" at 0x[0-9a-fA-F]+", "", text)  # addresses differ on every run
    return text if len(text) <= MAX_REPR else text[: MAX_REPR - 3] + "..."


def _b64(data: bytes) -> str:
    return base64.b64encode(data).decode("ascii")


class Encoder:
    """Encodes objects into value trees; one instance per independent value.

    ``source_file``: functions whose code lives in this file are stored by qualified
    name and line so replay can rebuild them from the recorded source.
    ``target``: the recorded function itself, stored as ``{"t": "target"}``.
    """

    def __init__(
        self,
        *,
        source_file: str | None = None,
        target: Any = None,
        allow_pickle: bool = False,
        sources: "Sources | None" = None,
        module: str | None = None,
    ) -> None:
        self.source_file = source_file
        self.target = target
        self.allow_pickle = allow_pickle
        self.sources = sources  # None: same-file functions by the record's one source (format 1)
        self.module = module  # the recorded function's module: its functions share its globals
        self.memo: dict[int, int] = {}
        self._alive: list[Any] = []  # keep ids stable while encoding
        self.missing: list[str] = []
        self.source_functions: list[types.FunctionType] = []
        self._tuple_stack: set[int] = set()
        self.budget = [MAX_VALUES]  # shared with sub-encoders of the same record
        # replay: functions and classes it rebuilt from the record, encoded by value as at
        # recording although their source files (and modules) need not exist here
        self.rebuilt: set[int] = set()
        self.not_by_reference: set[int] = set()  # values that must not be read back by path

    def sub(self) -> "Encoder":
        """An encoder for an independent tree (its ids restart) sharing this one's tables."""
        enc = Encoder(
            source_file=self.source_file,
            target=self.target,
            allow_pickle=self.allow_pickle,
            sources=self.sources,
            module=self.module,
        )
        enc.missing = self.missing
        enc.source_functions = self.source_functions
        enc.budget = [MAX_VALUES]  # a tree of its own gets a budget of its own
        enc.rebuilt = self.rebuilt
        return enc

    # -- helpers ---------------------------------------------------------------------
    def _new_id(self, obj: Any) -> int:
        ident = len(self.memo)
        self.memo[id(obj)] = ident
        self._alive.append(obj)
        return ident

    def placeholder(self, obj: Any, name: Any, why: str) -> dict:
        name = name_text(name)
        self.missing.append(name)
        tp = type(obj)
        return {
            "t": "missing",
            "name": name,
            "type": f"{tp.__module__}.{tp.__qualname__}",
            "repr": _short_repr(obj),
            "why": why,
        }

    def encode(self, obj: Any, name: Any = "value", depth: int = 0) -> Any:
        """The value tree of ``obj``; ``name`` says where it sits, as text or as a chain of
        (parent, part) pairs that is only spelled out when a placeholder needs it."""
        if depth >= MAX_DEPTH:
            return self.placeholder(obj, name, f"nested deeper than {MAX_DEPTH} levels")
        if obj is None or obj is True or obj is False:
            return obj
        tp = type(obj)
        if tp is str:
            return obj
        if tp is int:
            return {"t": "int", "v": format(obj, "x")}
        if tp is float:
            return {"t": "float", "v": obj.hex()}
        if tp is complex:
            return {"t": "complex", "re": obj.real.hex(), "im": obj.imag.hex()}
        if tp is bytes:
            return {"t": "bytes", "v": _b64(obj)}
        if id(obj) in self.memo:
            return {"t": "ref", "id": self.memo[id(obj)]}
        budget = self.budget
        if tp is tuple or tp is list or tp is dict or tp is set or tp is frozenset:
            size = len(obj) + 1
        elif isinstance(obj, str):
            size = 1
        else:
            size = 1 if tp is not Missing else 0
        if size > budget[0] and depth > 0:  # a section's own container is always written
            return self.placeholder(obj, name, f"past the record's budget of {MAX_VALUES} values")
        budget[0] -= min(size, budget[0])
        if tp is tuple:
            if id(obj) in self._tuple_stack:  # only reachable through a mutable container
                return self.placeholder(obj, name, "tuple that contains itself")
            self._tuple_stack.add(id(obj))
            try:
                items = [self.encode(x, (name, i), depth + 1) for i, x in enumerate(obj)]
            finally:
                self._tuple_stack.discard(id(obj))
            return {"t": "tuple", "items": items}
        if tp is list:
            node = {"t": "list", "id": self._new_id(obj), "items": []}
            node["items"] = [self.encode(x, (name, i), depth + 1) for i, x in enumerate(obj)]
            return node
        if tp is dict:
            node = {"t": "dict", "id": self._new_id(obj), "items": []}
            node["items"] = [
                [self.encode(k, (name, f".key{i}"), depth + 1), self.encode(v, (name, _Key(k)), depth + 1)]
                for i, (k, v) in enumerate(obj.items())
            ]
            return node
        if tp is set or tp is frozenset:
            tag = "set" if tp is set else "frozenset"
            node = {"t": tag, "items": []}
            if tp is set:
                node["id"] = self._new_id(obj)
            try:
                ordered = sorted(obj, key=_sort_key)
            except TypeError:
                ordered = list(obj)
            node["items"] = [self.encode(x, (name, "{}"), depth + 1) for x in ordered]
            return node
        if tp is Missing:  # a placeholder replayed back into a record stays the same placeholder
            self.missing.append(obj.name)
            return {"t": "missing", "name": obj.name, "type": obj.type_name, "repr": obj.text, "why": obj.why}
        if tp is bytearray:
            return {"t": "bytearray", "id": self._new_id(obj), "v": _b64(bytes(obj))}
        if obj is self.target and self.target is not None:
            return {"t": "target"}
        if tp is types.ModuleType:
            mod_name = getattr(obj, "__name__", None)
            if isinstance(mod_name, str) and sys.modules.get(mod_name) is obj and mod_name != "__main__":
                return {"t": "module", "name": mod_name}
            return self.placeholder(obj, name, "module not importable by name")
        if tp is types.FunctionType:
            return self._function(obj, name, depth)
        if isinstance(obj, tuple) and isinstance(getattr(tp, "_fields", None), tuple):
            path = self._path(tp)
            if path is not None:  # a namedtuple class reachable by import path
                return {
                    "t": "namedtuple",
                    "type": {"t": "global", "module": path[0], "qualname": path[1]},
                    "items": [self.encode(x, f"{name_text(name)}.{f}", depth + 1) for f, x in zip(tp._fields, obj)],
                }
        numpy = sys.modules.get("numpy")
        if numpy is not None and isinstance(obj, (numpy.ndarray, numpy.generic)):
            return self._numpy(numpy, obj, name)
        if isinstance(obj, BaseException):
            return self._exception(obj, name, depth)
        if self.sources is not None and not isinstance(obj, (type, types.BuiltinFunctionType, enum.Enum)):
            where = MODULE_OBJECTS.find(obj) if id(obj) not in self.not_by_reference else None
            if where is not None:  # a module-level object: by reference, so identity holds
                return {"t": "global", "module": where[0], "qualname": where[1]}
        codec = registry.codec_for_object(obj)
        if codec is not None:
            try:
                inner = codec.encode(obj)
            except Exception as exc:
                return self.placeholder(obj, name, f"codec {codec.name} failed: {type(exc).__name__}: {exc}")
            return {"t": "ext", "codec": codec.name, "v": self.encode(inner, name, depth + 1)}
        if (
            isinstance(obj, enum.Enum)
            or isinstance(obj, (type, types.BuiltinFunctionType))
            or obj is Ellipsis
            or obj is NotImplemented
        ):
            singleton = _SINGLETON_TYPES.get(obj) if isinstance(obj, type) else None
            if singleton is not None:  # types.NoneType is 3.10+: named by its instance instead
                return {"t": "ext", "codec": "singleton_type", "v": singleton}
            path = _enum_path(obj) if isinstance(obj, enum.Enum) else self._path(obj)
            if obj is Ellipsis:
                path = ("builtins", "Ellipsis")
            elif obj is NotImplemented:
                path = ("builtins", "NotImplemented")
            if path is not None:
                return {"t": "global", "module": path[0], "qualname": path[1]}
            if self.sources is not None and isinstance(obj, type):
                by_value = self._class(obj, name, depth)
                if by_value is not None:
                    return by_value
            if isinstance(obj, types.BuiltinFunctionType) and not isinstance(obj.__self__, types.ModuleType):
                return self._method(obj, obj.__self__, obj.__name__, name, depth)
            where = MODULE_OBJECTS.find(obj) if id(obj) not in self.not_by_reference else None
            if where is not None:
                return {"t": "global", "module": where[0], "qualname": where[1]}
            return self.placeholder(obj, name, "not importable by module and qualified name")
        if tp is Tap:
            return self._tap(obj, name)
        if self.sources is not None:
            if tp is types.MethodType:
                return self._method(obj, obj.__self__, obj.__func__.__name__, name, depth)
            if isinstance(obj, _ITERATOR_TYPES):
                return self.placeholder(obj, name, "an iterator not passed as an argument itself (items unknown)")
            state = _object_state(obj, id(tp) in self.rebuilt)
            if isinstance(state, tuple):
                return self._object(obj, state, name, depth)
            if state is not None and not self.allow_pickle:
                return self.placeholder(obj, name, state)
        if self.allow_pickle:
            import pickle

            try:
                return {"t": "pickle", "v": _b64(pickle.dumps(obj, protocol=4))}
            except Exception as exc:
                return self.placeholder(obj, name, f"pickle failed: {type(exc).__name__}")
        return self.placeholder(obj, name, "no codec registered for this type")

    def _path(self, obj: Any) -> tuple[str, str] | None:
        """Import path of a class or function; format 2 never names a test module."""
        return _qualname_path(obj) if self.sources is None else _importable_path(obj)

    def _method(self, obj: Any, owner: Any, attr: str, name: Any, depth: int) -> dict:
        """A bound method, as its object and the attribute that gives it back."""
        return {"t": "method", "self": self.encode(owner, (name, ".__self__"), depth + 1), "name": attr}

    def _class(self, cls: type, name: Any, depth: int) -> dict | None:
        """A class that cannot be imported (a test's), by value: its class statement's
        source and the globals that statement names; None when that source is not found."""
        from .snippets import class_snippet

        assert self.sources is not None
        methods = [f for f in vars(cls).values() if isinstance(f, types.FunctionType)]
        if id(cls) in self.rebuilt or any(id(f.__code__) in self.rebuilt for f in methods):
            # replay's own rebuild, or a class the replayed code made: what comparing needs
            return self._class_node(cls, 0)
        module = sys.modules.get(cls.__module__)
        namespace = getattr(module, "__dict__", None)
        if not isinstance(namespace, dict):
            return None
        if "<locals>" in cls.__qualname__:
            return self._local_class(cls, namespace, name, depth)
        snippet = class_snippet(cls, namespace)
        statement = _compiled(snippet) if snippet is not None else None
        if snippet is None or statement is None:
            return None
        from .trust import names_of

        node = self._class_node(cls, self.sources.numbered(snippet))
        top = cls.__qualname__.split(".")[0]
        node["globals"] = [
            [key, self.encode(namespace[key], f"{cls.__module__}.{key}", depth + 1)]
            for key in sorted(names_of(statement))
            if key in namespace and key != top and key != "__builtins__"
        ]
        return node

    def _class_node(self, cls: type, src: int | None) -> dict:
        return {
            "t": "class",
            "id": self._new_id(cls),
            "name": cls.__name__,
            "qualname": cls.__qualname__,
            "src": src,
            "module": cls.__module__,
            "globals": [],
        }

    def _local_class(self, cls: type, namespace: dict, name: Any, depth: int) -> dict | None:
        """A class made inside a function (a test's): the class body's code is found in the
        enclosing function's own source (through one of its methods), and the node holds
        what running the class statement took from that function: its bases and the cells
        of the enclosing variables it reads (taken from its methods' closures)."""
        assert self.sources is not None
        from .codeloc import CodeIndex, qualname_key
        from .trust import names_of

        methods = [f for f in vars(cls).values() if isinstance(f, types.FunctionType)]
        if not methods or type(cls) not in {type} | {type(base) for base in cls.__bases__}:
            return None  # no method to find its source through, or a metaclass of its own
        snippet = self._snippet_of_code(methods[0].__code__, namespace)
        compiled = _compiled(snippet) if snippet is not None else None
        if snippet is None or compiled is None:
            return None
        key = qualname_key(cls.__qualname__)
        bodies = [code for (k, _), codes in CodeIndex(compiled).entries.items() if k == key for code in codes]
        if len(bodies) != 1:
            return None
        body = bodies[0]
        cells: dict[str, Any] = {}
        for method in methods:
            for var, cell in zip(method.__code__.co_freevars, method.__closure__ or ()):
                if var in body.co_freevars and var != "__class__":
                    try:
                        cells[var] = cell.cell_contents
                    except ValueError:
                        return None
        if set(body.co_freevars) - set(cells):
            return None  # the class body reads an enclosing variable no method keeps
        node = self._class_node(cls, self.sources.numbered(snippet))
        node["bases"] = self.encode(cls.__bases__, (name, ".__bases__"), depth + 1)
        node["cells"] = [
            [var, self.encode(cells[var], (name, f".<cell {var}>"), depth + 1)] for var in body.co_freevars
        ]
        node["globals"] = [
            [k, self.encode(namespace[k], f"{cls.__module__}.{k}", depth + 1)]
            for k in sorted(names_of(body))
            if k in namespace and k != "__builtins__"
        ]
        return node

    def _snippet_of_code(self, code: types.CodeType, namespace: dict) -> Any:
        from .snippets import snippet_of

        return snippet_of(code, namespace)

    def _tap(self, tap: "Tap", name: Any) -> dict:
        node = {"t": "iterator", "id": self._new_id(tap), "type": tap.type_name, "items": None}
        if tap.fill is None:
            tap.fill = (node, name)  # the first encoding of a call argument gets its items
        return node

    def fill_taps(self, taps: "list[Tap]") -> None:
        """After the call: each argument iterator's node gets the items the call took, as
        a tree of its own (ids restart), since they were met after the rest was encoded."""
        for tap in taps:
            if tap.fill is not None:
                node, name = tap.fill
                node["items"] = self.sub().encode(tuple(tap.seen or ()), (name, " (items)"))

    def _object(self, obj: Any, state: tuple, name: Any, depth: int) -> dict:
        cls, newargs, inner, listitems, dictitems, call = state
        node: dict = {"t": "object", "id": self._new_id(obj)}
        if call:
            node["call"] = True
        node["type"] = self.encode(cls, (name, ".__class__"), depth + 1)
        node["args"] = self.encode(newargs, (name, ".__getnewargs__()"), depth + 1)
        node["state"] = self.encode(inner, (name, ".__dict__"), depth + 1)
        node["listitems"] = self.encode(listitems, (name, "[]"), depth + 1)
        node["dictitems"] = self.encode(dictitems, (name, "{}"), depth + 1)
        return node

    def _function(self, fn: types.FunctionType, name: Any, depth: int) -> Any:
        code = fn.__code__
        if self.sources is not None:
            return self._function_v2(fn, name, depth)
        if self.source_file is not None and code.co_filename == self.source_file:
            ident = self._new_id(fn)
            self.source_functions.append(fn)
            freevars = code.co_freevars
            cells = fn.__closure__ or ()
            closure = []
            for var, cell in zip(freevars, cells):
                try:
                    content = cell.cell_contents
                except ValueError:
                    closure.append([var, {"t": "empty_cell"}])
                    continue
                closure.append([var, self.encode(content, f"{name_text(name)}.<closure {var}>", depth + 1)])
            return {
                "t": "function",
                "id": ident,
                "name": fn.__name__,
                "qualname": fn.__qualname__,
                "firstlineno": code.co_firstlineno,
                "flags": code.co_flags & CO_SET_AFTER_COMPILE,
                "defaults": self.encode(fn.__defaults__, (name, ".__defaults__"), depth + 1),
                "kwdefaults": self.encode(fn.__kwdefaults__, (name, ".__kwdefaults__"), depth + 1),
                "closure": closure,
            }
        path = _qualname_path(fn)
        if path is not None:
            return {"t": "global", "module": path[0], "qualname": path[1]}
        return self.placeholder(fn, name, "function neither in the recorded source nor importable")

    def _function_v2(self, fn: types.FunctionType, name: Any, depth: int) -> Any:
        """By value when it shares the recorded function's module or cannot be imported
        (a test file's function or lambda, a closure a factory made); else by reference."""
        assert self.sources is not None
        code = fn.__code__
        target_globals = getattr(self.target, "__globals__", None)
        own_module = fn.__globals__ is target_globals
        rebuilt = id(code) in self.rebuilt
        if not own_module and not rebuilt:
            path = _importable_path(fn) or MODULE_OBJECTS.find(fn)
            if path is not None:
                return {"t": "global", "module": path[0], "qualname": path[1]}
        src = None if rebuilt else self.sources.index_of(code, fn.__globals__)
        if src is False:
            return self.placeholder(fn, name, "function whose source is not available and that is not importable")
        ident = self._new_id(fn)
        node: dict = {
            "t": "function",
            "id": ident,
            "name": fn.__name__,
            "qualname": fn.__qualname__,
            "firstlineno": code.co_firstlineno,
            "flags": code.co_flags & CO_SET_AFTER_COMPILE,
            "src": src,
            "module": None,
            "globals": [],
        }
        node["defaults"] = self.encode(fn.__defaults__, (name, ".__defaults__"), depth + 1)
        node["kwdefaults"] = self.encode(fn.__kwdefaults__, (name, ".__kwdefaults__"), depth + 1)
        node["closure"] = self._cells(fn, name, depth)
        if own_module:
            self.source_functions.append(fn)  # its globals join the recorded function's
        else:
            module = fn.__module__ if isinstance(fn.__module__, str) else "__main__"
            node["module"] = module
            ns = fn.__globals__
            from .trust import names_of

            node["globals"] = [
                [key, self.encode(ns[key], f"{module}.{key}", depth + 1)]
                for key in sorted(names_of(code))
                if key in ns and key != "__builtins__"
            ]
        return node

    def _cells(self, fn: types.FunctionType, name: Any, depth: int) -> list:
        closure = []
        for var, cell in zip(fn.__code__.co_freevars, fn.__closure__ or ()):
            try:
                content = cell.cell_contents
            except ValueError:
                closure.append([var, {"t": "empty_cell"}])
                continue
            closure.append([var, self.encode(content, f"{name_text(name)}.<closure {var}>", depth + 1)])
        return closure

    def _numpy(self, numpy: Any, obj: Any, name: Any) -> Any:
        arr = numpy.asarray(obj)
        if arr.dtype.hasobject:
            return self.placeholder(obj, name, "numpy array of Python objects (needs pickle)")
        buf = io.BytesIO()
        numpy.save(buf, arr, allow_pickle=False)
        if isinstance(obj, numpy.ndarray):
            return {"t": "ndarray", "id": self._new_id(obj), "npy": _b64(buf.getvalue())}
        return {"t": "npscalar", "npy": _b64(buf.getvalue())}

    def _exception(self, exc: BaseException, name: Any, depth: int) -> dict:
        tp = type(exc)
        path = self._path(tp)
        if path is not None:
            type_tree: Any = {"t": "global", "module": path[0], "qualname": path[1]}
        else:
            type_tree = self.placeholder(tp, (name, ".type"), "exception class not importable")
            type_tree["repr"] = f"{tp.__module__}.{tp.__qualname__}"
        try:
            message = str(exc)
        except Exception:
            message = "<str failed>"
        return {
            "t": "exception",
            "type": type_tree,
            "args": self.encode(tuple(exc.args), (name, ".args"), depth + 1),
            "message": message[:2000],
        }


def _enum_path(member: enum.Enum) -> tuple[str, str] | None:
    owner = _qualname_path(type(member))
    if owner is None:
        return None
    return owner[0], f"{owner[1]}.{member.name}"


def _sort_key(value: Any) -> tuple:
    # Stable order for sets of mixed scalars, so records are reproducible byte for byte.
    return (type(value).__name__, repr(value))


class _Key:
    """A dict key in a value's name, shown by its repr only when the name is spelled out."""

    __slots__ = ("key",)

    def __init__(self, key: Any) -> None:
        self.key = key


def name_text(name: Any) -> str:
    """Spell out a lazy name: ``("args", 0)`` is ``args[0]`` (the validator's where_text)."""
    return where_text(name)


class Tap(map):
    """An iterator passed to the recorded call, forwarding what it yields and keeping it.

    The recorder hands the call a Tap in place of the iterator; the record then holds the
    items the call took, and replay hands the code a Tap over those items. Iterating runs
    no Python code (a map over a zip of a tee and a counter, all C), so a chain of
    iterators each wrapped by another recorded call does not deepen the Python stack."""

    _kept: Any
    _counter: Any
    _taken: "list | None"
    type_name: str
    fill: Any

    def __new__(cls, source: Any, type_name: str, keep: bool = True) -> "Tap":
        if keep:
            forward, kept = itertools.tee(source)
            counter = itertools.count()
            self = super().__new__(cls, _FIRST, zip(forward, counter))
            self._kept = kept
            self._counter = counter
        else:
            self = super().__new__(cls, _FIRST, zip(source))
            self._kept = self._counter = None
        self.type_name = type_name
        self.fill = None
        self._taken = None
        return self

    @property
    def seen(self) -> list | None:
        """The items the call took (read once, after it), or None for a replay's Tap."""
        if self._counter is None:
            return None
        if self._taken is None:
            taken = int(repr(self._counter)[len("count(") : -1])
            self._taken = list(itertools.islice(self._kept, taken))
        return self._taken

    def __repr__(self) -> str:
        return f"<recorded {self.type_name}>"


_FIRST = operator.itemgetter(0)


def is_iterator(obj: Any) -> bool:
    """An iterator a Tap can stand in for: not a file (whose reads the Tap would hide)."""
    import io as _io

    return isinstance(obj, _ITERATOR_TYPES) and not isinstance(obj, (_io.IOBase, Tap, Missing))


def _iterator_types() -> tuple:
    import collections.abc

    return (collections.abc.Iterator,)


_ITERATOR_TYPES = _iterator_types()


_COMPILED: dict[tuple, types.CodeType | None] = {}


def _compiled(snippet: Any) -> types.CodeType | None:
    """A class snippet's compilation (for its names and its class body), once per text."""
    key = (snippet.filename, snippet.line, snippet.text)
    if key not in _COMPILED:
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", SyntaxWarning)
                code: types.CodeType | None = compile(snippet.padded(), snippet.filename, "exec", dont_inherit=True)
        except (SyntaxError, ValueError, RecursionError, MemoryError):
            code = None
        if len(_COMPILED) > 1024:
            _COMPILED.clear()
        _COMPILED[key] = code
    return _COMPILED[key]


_TEST_MODULES: dict[tuple[str, int], bool] = {}


def _is_test_module(name: str, module: Any) -> bool:
    """Test code is recorded by value: it is not installed where records replay."""
    key = (name, id(module))
    found = _TEST_MODULES.get(key)
    if found is None:
        found = _TEST_MODULES[key] = _looks_like_tests(name, module)
    return found


def _looks_like_tests(name: str, module: Any) -> bool:
    if name == "__main__" or getattr(module, "__spec__", None) is None:
        return True
    filename = getattr(module, "__file__", None)
    if not isinstance(filename, str):
        return False
    base = filename.replace("\\", "/").rsplit("/", 1)[-1]
    if base.startswith("test_") or base.endswith("_test.py") or base == "conftest.py":
        return True
    parts = filename.replace("\\", "/").split("/")[:-1]
    return "tests" in parts or "test" in parts


_VALUE_TYPES = (int, float, complex, str, bytes, bool, tuple, frozenset, type(None), types.ModuleType)


class _ModuleObjects:
    """Module-level objects of importable (non-test) modules, by identity.

    Indexed once per module, and for the modules imported since whenever sys.modules
    grows; every hit is checked against the module's current binding."""

    def __init__(self) -> None:
        self.by_id: dict[int, tuple[str, str]] = {}
        self.seen: dict[int, int] = {}  # id of a module's namespace -> its size when indexed
        self.size: tuple = ()

    @staticmethod
    def _fingerprint() -> tuple:
        # O(1): imports append to sys.modules, so a new module changes its size or last key
        last = next(reversed(sys.modules)) if sys.modules else None
        return (len(sys.modules), last, id(sys.modules.get(last)) if last else 0)

    def _index(self) -> None:
        for name, module in list(sys.modules.items()):
            namespace = getattr(module, "__dict__", None)
            if not isinstance(namespace, dict) or self.seen.get(id(namespace)) == len(namespace):
                continue
            self.seen[id(namespace)] = len(namespace)
            if not isinstance(module, types.ModuleType) or _is_test_module(name, module):
                continue
            classes = []
            for key, value in list(namespace.items()):
                if key.startswith("__") or isinstance(value, _VALUE_TYPES):
                    continue
                self.by_id[id(value)] = (name, key)  # the latest binding: ids get reused
                if isinstance(value, type) and getattr(value, "__module__", None) == name:
                    classes.append((key, value))
            # class-level sentinels (a default `=__marker` of a method) by Class.attr, where
            # no module-level binding names them
            for key, cls in classes:
                for attr, value in list(vars(cls).items()):
                    if attr.startswith("__") or isinstance(value, _VALUE_TYPES + _CALLABLE_TYPES):
                        continue
                    self.by_id.setdefault(id(value), (name, f"{key}.{attr}"))
        self.size = self._fingerprint()

    def find(self, obj: Any) -> tuple[str, str] | None:
        if self._fingerprint() != self.size:
            self._index()
        hit = self.by_id.get(id(obj))
        if hit is None:
            return None
        if _bound_at(hit) is obj:
            return hit
        self.by_id.pop(id(obj), None)  # rebound since: look again once
        self._index_one(obj)
        return self.by_id.get(id(obj))

    def _index_one(self, obj: Any) -> None:
        """Look for ``obj`` in every module (rare: its indexed binding went stale)."""
        for name, module in list(sys.modules.items()):
            namespace = getattr(module, "__dict__", None)
            if not isinstance(namespace, dict) or not isinstance(module, types.ModuleType):
                continue
            for key, value in list(namespace.items()):
                if value is obj and not key.startswith("__") and not _is_test_module(name, module):
                    self.by_id[id(obj)] = (name, key)
                    return


_CALLABLE_TYPES = (types.FunctionType, staticmethod, classmethod, property)


def _bound_at(path: tuple[str, str]) -> Any:
    """What ``module.qualname`` holds now, read through ``__dict__`` (runs no code)."""
    target: Any = sys.modules.get(path[0])
    for part in path[1].split("."):
        namespace = getattr(target, "__dict__", None)
        if not isinstance(namespace, (dict, types.MappingProxyType)) or part not in namespace:
            return _NOTHING
        target = namespace[part]
    return target


_NOTHING = object()
MODULE_OBJECTS = _ModuleObjects()


def _object_state(obj: Any, rebuilt: bool = False) -> "tuple | str | None":
    """(class, new args, state, list items, dict items) of an instance of an importable
    class that pickles the default way, read without running the class's own code where
    it keeps the default; a reason string when its state cannot be read; None when the
    object is not such an instance."""
    tp = type(obj)
    unittest = sys.modules.get("unittest")
    if unittest is not None and isinstance(obj, unittest.TestCase):
        return "a test case (the test's own self, with its runner's state)"
    if _importable_path(tp) is None and tp.__module__ not in sys.modules and not rebuilt:
        return f"instance of {tp.__module__}.{tp.__qualname__}, a class made inside a function"
    default = tp.__reduce_ex__ is object.__reduce_ex__ and tp.__reduce__ is object.__reduce__
    # a subclass of a collections type, which reduces to the class itself (a defaultdict
    # subclass): what copy and pickle would do, with no other callable named
    inherited = not default and any(base.__module__ == "collections" for base in tp.__mro__[1:-1])
    if not default and not inherited:
        return None
    try:
        reduced = obj.__reduce_ex__(2)
    except Exception as exc:
        return f"its state cannot be read: {type(exc).__name__}: {str(exc)[:100]}"
    import copyreg

    if not isinstance(reduced, tuple) or len(reduced) < 2:
        return None
    call = reduced[0] is tp and isinstance(reduced[1], tuple)
    if call:
        newargs: tuple = reduced[1]
    elif reduced[0] is getattr(copyreg, "__newobj__", None) and isinstance(reduced[1], tuple):
        newargs = tuple(reduced[1][1:])
    else:
        return None
    state = reduced[2] if len(reduced) > 2 else None
    try:
        listitems = list(reduced[3]) if len(reduced) > 3 and reduced[3] is not None else None
        dictitems = dict(reduced[4]) if len(reduced) > 4 and reduced[4] is not None else None
    except Exception as exc:
        return f"its items cannot be read: {type(exc).__name__}"
    return (tp, newargs, state, listitems, dictitems, call)


class Sources:
    """The source snippets of a record's functions (snippets.py): the recorded
    function's is ``code.source``, the others are numbered in ``sources``."""

    def __init__(self, target_code: types.CodeType | None, target_globals: dict | None) -> None:
        from .snippets import snippet_of

        self._snippet_of = snippet_of
        self.items: list[dict] = []
        self._index: dict[tuple[str, int, str], int | None] = {}
        self.target = snippet_of(target_code, target_globals) if target_code is not None else None
        if self.target is not None:
            self._index[(self.target.filename, self.target.line, self.target.text)] = None

    def index_of(self, code: types.CodeType, module_globals: dict) -> "int | None | bool":
        """The snippet number for ``code`` (None: the recorded function's own), or False
        when its source is not available."""
        snippet = self._snippet_of(code, module_globals)
        if snippet is None:
            return False
        return self.add(snippet)

    def numbered(self, snippet: Any) -> int:
        """The number of ``snippet`` in ``sources``, even when it is the recorded function's
        own (a class node always names its source by number)."""
        found = self.add(snippet)
        if found is not None:
            return found
        key = ("numbered", snippet.filename, snippet.line, snippet.text)
        if key not in self._index:
            self._index[key] = len(self.items)  # type: ignore[index]
            self.items.append({"filename": snippet.filename, "line": snippet.line, "text": snippet.text})
        return self._index[key]  # type: ignore[index, return-value]

    def add(self, snippet: Any) -> int | None:
        key = (snippet.filename, snippet.line, snippet.text)
        if key not in self._index:
            self._index[key] = len(self.items)
            self.items.append({"filename": snippet.filename, "line": snippet.line, "text": snippet.text})
        return self._index[key]


# -- validation ----------------------------------------------------------------------------

_FIELDS: dict[str, dict[str, Any]] = {
    "int": {"v": str},
    "float": {"v": str},
    "complex": {"re": str, "im": str},
    "bytes": {"v": str},
    "bytearray": {"v": str, "id": int},
    "tuple": {"items": list},
    "list": {"items": list, "id": int},
    "set": {"items": list, "id": int},
    "frozenset": {"items": list},
    "dict": {"items": list, "id": int},
    "ndarray": {"npy": str, "id": int},
    "npscalar": {"npy": str},
    "module": {"name": str},
    "global": {"module": str, "qualname": str},
    "function": {
        "id": int,
        "name": str,
        "qualname": str,
        "firstlineno": int,
        "flags": int,
        "defaults": "tree",
        "kwdefaults": "tree",
        "closure": list,
    },
    "target": {},
    "ref": {"id": int},
    "empty_cell": {},
    "missing": {"name": str, "type": str, "repr": str, "why": str},
    "exception": {"type": "tree", "args": "tree", "message": str},
    "ext": {"codec": str, "v": "tree"},
    "pickle": {"v": str},
    "namedtuple": {"type": "tree", "items": list},
    "method": {"self": "tree", "name": str},
    "iterator": {"id": int, "type": str, "items": "tree"},
    "object": {"id": int, "type": "tree", "args": "tree", "state": "tree", "listitems": "tree", "dictitems": "tree"},
    "class": {"id": int, "name": str, "qualname": str, "src": int, "module": str, "globals": list},
}
# Fields a node may lack: the function node's of format 2 (absent in format 1 records).
_OPTIONAL: dict[str, frozenset] = {
    "function": frozenset({"src", "module", "globals"}),
    "object": frozenset({"call"}),
    "class": frozenset({"bases", "cells"}),
}
_FIELDS["function"].update({"src": "opt", "module": "opt", "globals": "opt"})
_FIELDS["object"]["call"] = "opt"
_FIELDS["class"].update({"bases": "opt", "cells": "opt"})
_HASHABLE = {
    "int",
    "float",
    "complex",
    "bytes",
    "tuple",
    "frozenset",
    "module",
    "global",
    "missing",
    "ext",
    "npscalar",
    "ref",
    "function",
    "target",
    "pickle",
    "exception",
    "namedtuple",
    "method",
    "iterator",
    "object",
    "class",
}


# Where a node sits, for error messages: a name, or (parent, index or suffix), formatted
# only when a message needs it.
Where = Any


def where_text(where: Where) -> str:
    parts = []
    while isinstance(where, tuple):
        where, part = where
        if isinstance(part, int):
            parts.append(f"[{part}]")
        elif isinstance(part, str):
            parts.append(part)
        elif isinstance(part, _Key):  # a dict key, shown by its repr only now
            parts.append(f"[{_short_repr(part.key)}]")
        else:  # a name, shown quoted: ("globals", ["x"]) -> globals['x']
            parts.append(f"[{part[0]!r}]")
    return str(where) + "".join(reversed(parts))


class Validator:
    """Checks value trees without running anything they name."""

    def __init__(
        self, *, path: str | None = None, trusted: bool = False, limits: Limits = DEFAULT, sources: int = 0
    ) -> None:
        self.path = path
        self.trusted = trusted
        self.limits = limits
        self.next_id = 0
        self.sources = sources  # how many numbered source snippets the record holds

    def fail(self, where: Where, message: str) -> RecordFormatError:
        return RecordFormatError(f"{where_text(where)}: {message}", self.path)

    def check_tree(self, tree: Any, where: Where, *, allow_empty_cell: bool = False, shared: bool = False) -> None:
        """Check one value tree: an independent one's ids start again at 0, a ``shared``
        one's continue those of the trees checked before it."""
        if not shared:
            self.next_id = 0
        self.check(tree, where, allow_empty_cell=allow_empty_cell)

    def check(self, tree: Any, where: Where, depth: int = 0, *, allow_empty_cell: bool = False) -> None:
        if depth > MAX_DEPTH:
            raise self.fail(where, f"value nests deeper than {MAX_DEPTH} levels")
        if tree is None or tree is True or tree is False or type(tree) is str:
            return
        if type(tree) is not dict:
            raise self.fail(where, f"expected a tagged value, got JSON {type(tree).__name__}")
        tag = tree.get("t")
        shape = _SHAPES.get(tag) if type(tag) is str else None
        if shape is None:
            raise self.fail(where, f"unknown value tag {tag!r}")
        keys, typed, counted, extra_check = shape
        if tree.keys() != keys and not (tag in _OPTIONAL and keys - _OPTIONAL[tag] <= tree.keys() <= keys):
            fields = _FIELDS[str(tag)]
            extra = sorted(set(tree) - set(fields) - {"t"})
            absent = sorted(set(fields) - set(tree))
            raise self.fail(where, f"{tag} value has unexpected fields {extra} / lacks {absent}")
        if tag == "empty_cell" and not allow_empty_cell:
            raise self.fail(where, "empty_cell outside a closure")
        for key, kind in typed:
            value = tree[key]
            if kind is int:
                if type(value) is not int or value < 0 or value > 10**9:
                    raise self.fail(where, f"{tag}.{key} must be a small non-negative integer")
            elif not isinstance(value, kind):
                raise self.fail(where, f"{tag}.{key} must be a JSON {kind.__name__}")
        if counted:
            if tree["id"] != self.next_id:
                raise self.fail(where, f"{tag} id {tree['id']} out of sequence (expected {self.next_id})")
            self.next_id += 1
        if extra_check is not None:
            extra_check(self, tree, where, depth)

    def _check_int(self, tree: dict, where: Where, depth: int) -> None:
        v = tree["v"]
        if len(v) > MAX_INT_HEX_DIGITS or not _HEX_INT.match(v):
            raise self.fail(where, "malformed integer")

    def _float_text(self, text: str, where: Where) -> None:
        if len(text) > 64:
            raise self.fail(where, "malformed float")
        try:
            float.fromhex(text)
        except (ValueError, OverflowError):
            raise self.fail(where, f"malformed float {text[:30]!r}") from None

    def _check_float(self, tree: dict, where: Where, depth: int) -> None:
        self._float_text(tree["v"], where)

    def _check_complex(self, tree: dict, where: Where, depth: int) -> None:
        self._float_text(tree["re"], where)
        self._float_text(tree["im"], where)

    def _b64(self, text: str, where: Where) -> bytes:
        try:
            return base64.b64decode(text.encode("ascii"), validate=True)
        except (binascii.Error, UnicodeEncodeError, ValueError):
            raise self.fail(where, "malformed base64 data") from None

    def _check_bytes(self, tree: dict, where: Where, depth: int) -> None:
        self._b64(tree["v"], where)

    _check_bytearray = _check_bytes

    def _items(self, tree: dict, where: Where, depth: int, *, hashable: bool = False) -> None:
        check = self.check
        for i, item in enumerate(tree["items"]):
            if hashable:
                self._hashable(item, (where, f"{{{i}}}"))
            if item is None or type(item) is str or item is True or item is False:
                continue  # the common leaves, without a call
            check(item, (where, i), depth + 1)

    def _hashable(self, item: Any, where: Where) -> None:
        if item is None or isinstance(item, (bool, str)):
            return
        if not isinstance(item, dict) or item.get("t") not in _HASHABLE:
            raise self.fail(where, "unhashable value used as a dict key or set element")
        if item.get("t") == "tuple" and isinstance(item.get("items"), list):
            for sub in item["items"]:
                self._hashable(sub, where)

    def _check_tuple(self, tree: dict, where: Where, depth: int) -> None:
        self._items(tree, where, depth)

    _check_list = _check_tuple

    def _check_set(self, tree: dict, where: Where, depth: int) -> None:
        self._items(tree, where, depth, hashable=True)

    _check_frozenset = _check_set

    def _check_dict(self, tree: dict, where: Where, depth: int) -> None:
        for i, pair in enumerate(tree["items"]):
            if not isinstance(pair, list) or len(pair) != 2:
                raise self.fail((where, i), "dict item is not a [key, value] pair")
            self._hashable(pair[0], (where, f".key{i}"))
            self.check(pair[0], (where, f".key{i}"), depth + 1)
            self.check(pair[1], (where, i), depth + 1)

    def _check_npy(self, tree: dict, where: Where, depth: int) -> None:
        data = self._b64(tree["npy"], where)
        if not data.startswith(_NPY_MAGIC) or len(data) < 10:
            raise self.fail(where, "numpy data is not in .npy format")
        # numpy.load allocates from the header's shape: check it against the limits and the
        # data actually present before replay ever calls numpy.
        major = data[6]
        if major == 1:
            start, size = 10, int.from_bytes(data[8:10], "little")
        elif major in (2, 3) and len(data) >= 12:
            start, size = 12, int.from_bytes(data[8:12], "little")
        else:
            raise self.fail(where, f"unsupported .npy version {major}")
        header = data[start : start + size].decode("latin-1")
        if len(header) != size:
            raise self.fail(where, "truncated .npy header")
        descr = _NPY_DESCR.search(header)
        shape = _NPY_SHAPE.search(header)
        if descr is None or shape is None:
            raise self.fail(where, "malformed .npy header")
        try:
            dims = [int(d) for d in shape.group(1).split(",") if d.strip()]
        except ValueError:
            raise self.fail(where, "malformed .npy shape") from None
        elements = 1
        for d in dims:
            elements *= d
        self.limits.check("array_elements", elements, self.path)
        payload = len(data) - start - size
        if descr.group(1) is not None:
            simple = _NPY_SIMPLE.match(descr.group(1))
            if simple is None:
                raise self.fail(where, f"unsupported numpy dtype {descr.group(1)[:30]!r}")
            kind, digits = simple.group(1), simple.group(2)
            if kind == "O":
                raise self.fail(where, "numpy object dtype refused (loading it needs pickle)")
            if digits is None:
                raise self.fail(where, f"unsupported numpy dtype {descr.group(1)[:30]!r}")
            itemsize = int(digits) * (4 if kind == "U" else 1)
        else:
            if _NPY_OBJECT_FIELD.search(descr.group(2)):
                raise self.fail(where, "numpy object dtype refused (loading it needs pickle)")
            itemsize = payload // elements if elements else 0
        self.limits.check("array_bytes", elements * itemsize, self.path)
        if payload != elements * itemsize:
            raise self.fail(
                where, f"numpy data of {payload} bytes disagrees with its header ({elements} x {itemsize} bytes)"
            )

    _check_ndarray = _check_npscalar = _check_npy

    def _check_module(self, tree: dict, where: Where, depth: int) -> None:
        if len(tree["name"]) > 300 or not _IDENT_PATH.match(tree["name"]):
            raise self.fail(where, f"invalid module name {tree['name'][:60]!r}")

    def _check_global(self, tree: dict, where: Where, depth: int) -> None:
        if len(tree["module"]) > 300 or not _IDENT_PATH.match(tree["module"]):
            raise self.fail(where, f"invalid module name {tree['module'][:60]!r}")
        if len(tree["qualname"]) > 300 or not _IDENT_PATH.match(tree["qualname"]):
            raise self.fail(where, f"invalid qualified name {tree['qualname'][:60]!r}")

    def _check_function(self, tree: dict, where: Where, depth: int) -> None:
        if len(tree["qualname"]) > 500 or not _QUALNAME.match(tree["qualname"]):
            raise self.fail(where, "invalid function qualified name")
        if tree["flags"] & ~CO_SET_AFTER_COMPILE:
            raise self.fail(where, "function flags outside the allowed set")
        self.check(tree["defaults"], (where, ".defaults"), depth + 1)
        self.check(tree["kwdefaults"], (where, ".kwdefaults"), depth + 1)
        for i, pair in enumerate(tree["closure"]):
            if not isinstance(pair, list) or len(pair) != 2 or not isinstance(pair[0], str):
                raise self.fail((where, f".closure[{i}]"), "closure entry is not a [name, value] pair")
            self.check(pair[1], (where, f".closure[{i}]"), depth + 1, allow_empty_cell=True)
        if "src" in tree:
            self._check_function_v2(tree, where, depth)

    def _check_function_v2(self, tree: dict, where: Where, depth: int) -> None:
        src, module, names = tree.get("src"), tree.get("module"), tree.get("globals", [])
        if src is not None and (type(src) is not int or not 0 <= src < self.sources):
            raise self.fail(where, f"function.src must be null or a source number below {self.sources}")
        if module is not None and (not isinstance(module, str) or len(module) > 300 or not _IDENT_PATH.match(module)):
            raise self.fail(where, "function.module must be null or a module name")
        if not isinstance(names, list) or (names and module is None):
            raise self.fail(where, "function.globals must be a list, empty unless function.module is set")
        seen = set()
        for i, pair in enumerate(names):
            if (
                not isinstance(pair, list)
                or len(pair) != 2
                or not isinstance(pair[0], str)
                or not pair[0].isidentifier()
                or pair[0] in seen
            ):
                raise self.fail((where, f".globals[{i}]"), "must be a [name, value] pair with a new identifier")
            seen.add(pair[0])
            self.check(pair[1], (where, f".globals[{pair[0]!r}]"), depth + 1)

    def _check_method(self, tree: dict, where: Where, depth: int) -> None:
        if not tree["name"].isidentifier():
            raise self.fail(where, "method.name must be an identifier")
        self.check(tree["self"], (where, ".self"), depth + 1)

    def _check_iterator(self, tree: dict, where: Where, depth: int) -> None:
        items = tree["items"]
        if items is None:
            return
        if not isinstance(items, dict) or items.get("t") != "tuple":
            raise self.fail(where, "iterator.items must be null or a tuple")
        saved, self.next_id = self.next_id, 0  # the items are a tree of their own
        try:
            self.check(items, (where, ".items"), depth + 1)
        finally:
            self.next_id = saved

    def _check_class(self, tree: dict, where: Where, depth: int) -> None:
        if len(tree["qualname"]) > 500 or not _QUALNAME.match(tree["qualname"]):
            raise self.fail(where, "invalid class qualified name")
        if tree["name"] != tree["qualname"].rsplit(".", 1)[-1]:
            raise self.fail(where, "class.name must end its qualified name")
        if ("bases" in tree) != ("cells" in tree):
            raise self.fail(where, "class.bases and class.cells come together")
        if "bases" in tree:
            if not isinstance(tree["bases"], dict) or tree["bases"].get("t") != "tuple":
                raise self.fail(where, "class.bases must be a tuple")
            self.check(tree["bases"], (where, ".bases"), depth + 1)
            if not isinstance(tree["cells"], list):
                raise self.fail(where, "class.cells must be a list")
            for i, pair in enumerate(tree["cells"]):
                if not isinstance(pair, list) or len(pair) != 2 or not isinstance(pair[0], str):
                    raise self.fail((where, f".cells[{i}]"), "must be a [name, value] pair")
                self.check(pair[1], (where, f".cells[{i}]"), depth + 1)
        if not tree["src"] < self.sources:
            raise self.fail(where, f"class.src must be a source number below {self.sources}")
        if len(tree["module"]) > 300 or not _IDENT_PATH.match(tree["module"]):
            raise self.fail(where, "class.module must be a module name")
        seen = set()
        for i, pair in enumerate(tree["globals"]):
            if not isinstance(pair, list) or len(pair) != 2 or not isinstance(pair[0], str):
                raise self.fail((where, f".globals[{i}]"), "must be a [name, value] pair")
            if not pair[0].isidentifier() or pair[0] in seen:
                raise self.fail((where, f".globals[{i}]"), "must name a new identifier")
            seen.add(pair[0])
            self.check(pair[1], (where, f".globals[{pair[0]!r}]"), depth + 1)

    def _check_object(self, tree: dict, where: Where, depth: int) -> None:
        if tree.get("call", True) is not True:
            raise self.fail(where, "object.call must be true when present")
        if not isinstance(tree["type"], dict) or tree["type"].get("t") not in ("global", "missing", "class", "ref"):
            raise self.fail(where, "object.type must be an import path or a recorded class")
        for key in ("type", "args", "state", "listitems", "dictitems"):
            self.check(tree[key], (where, f".{key}"), depth + 1)

    def _check_ref(self, tree: dict, where: Where, depth: int) -> None:
        if tree["id"] >= self.next_id:
            raise self.fail(where, f"reference to undefined id {tree['id']}")

    def _check_exception(self, tree: dict, where: Where, depth: int) -> None:
        self.check(tree["type"], (where, ".type"), depth + 1)
        self.check(tree["args"], (where, ".args"), depth + 1)

    def _check_namedtuple(self, tree: dict, where: Where, depth: int) -> None:
        if not isinstance(tree["type"], dict) or tree["type"].get("t") != "global":
            raise self.fail(where, "namedtuple type must be an import path")
        self.check(tree["type"], (where, ".type"), depth + 1)
        self._items(tree, where, depth)

    def _check_ext(self, tree: dict, where: Where, depth: int) -> None:
        self.check(tree["v"], (where, ".v"), depth + 1)

    def _check_pickle(self, tree: dict, where: Where, depth: int) -> None:
        self._b64(tree["v"], where)
        if not self.trusted:
            raise UntrustedRecordError(
                f"{where_text(where)}: holds a pickle payload; refusing to load it without trusted=True", self.path
            )


# tag -> (the node's exact keys, its typed non-tree fields, whether it takes an id, the
# tag's own check): worked out once, so checking a node allocates nothing.
_SHAPES = {
    tag: (
        frozenset(fields) | {"t"},
        tuple((key, kind) for key, kind in fields.items() if kind not in ("tree", "opt")),
        "id" in fields and tag in _MUTABLE_TAGS,
        getattr(Validator, "_check_" + tag, None),
    )
    for tag, fields in _FIELDS.items()
}


def validate(
    tree: Any,
    where: str,
    *,
    path: str | None = None,
    trusted: bool = False,
    allow_empty_cell: bool = False,
    limits: Limits = DEFAULT,
) -> None:
    """Validate one independent value tree (ids start at 0)."""
    Validator(path=path, trusted=trusted, limits=limits).check(tree, where, allow_empty_cell=allow_empty_cell)


# -- decoding ------------------------------------------------------------------------------

FunctionBuilder = Callable[[dict, "Decoder"], Any]


class Decoder:
    """Rebuilds objects from a validated tree. Runs only at replay time."""

    def __init__(
        self, *, trusted: bool = False, function_builder: FunctionBuilder | None = None, target: Any = None
    ) -> None:
        self.trusted = trusted
        self.function_builder = function_builder
        self.target = target
        self.memo: dict[int, Any] = {}
        self.missing: list[str] = []
        self.class_builder: FunctionBuilder | None = None

    def sub(self) -> "Decoder":
        """A decoder for an independent tree (its own ids), sharing everything else."""
        dec = Decoder(trusted=self.trusted, function_builder=self.function_builder, target=self.target)
        dec.class_builder = self.class_builder
        dec.missing = self.missing
        return dec

    def _class(self, t: dict) -> Any:
        if self.class_builder is None:
            obj: Any = self._missing_from(t["qualname"], "class", "no source to rebuild it from")
            self.memo[t["id"]] = obj
            return obj
        return self.class_builder(t, self)

    def decode(self, tree: Any) -> Any:
        if tree is None or isinstance(tree, (bool, str)):
            return tree
        tag = tree["t"]
        return getattr(self, "_" + tag)(tree)

    def _int(self, t: dict) -> int:
        return int(t["v"], 16)

    def _float(self, t: dict) -> float:
        return float.fromhex(t["v"])

    def _complex(self, t: dict) -> complex:
        return complex(float.fromhex(t["re"]), float.fromhex(t["im"]))

    def _bytes(self, t: dict) -> bytes:
        return base64.b64decode(t["v"])

    def _bytearray(self, t: dict) -> bytearray:
        obj = bytearray(base64.b64decode(t["v"]))
        self.memo[t["id"]] = obj
        return obj

    def _tuple(self, t: dict) -> tuple:
        return tuple(self.decode(x) for x in t["items"])

    def _list(self, t: dict) -> list:
        obj: list = []
        self.memo[t["id"]] = obj
        obj.extend(self.decode(x) for x in t["items"])
        return obj

    def _dict(self, t: dict) -> dict:
        obj: dict = {}
        self.memo[t["id"]] = obj
        for key, value in t["items"]:
            k = self.decode(key)
            obj[k] = self.decode(value)
        return obj

    def _set(self, t: dict) -> set:
        obj: set = set()
        self.memo[t["id"]] = obj
        obj.update(self.decode(x) for x in t["items"])
        return obj

    def _frozenset(self, t: dict) -> frozenset:
        return frozenset(self.decode(x) for x in t["items"])

    def _load_npy(self, text: str, what: str) -> Any:
        try:
            import numpy
        except ImportError:  # a record made where numpy was, replayed where it is not
            return self._missing_from(f"numpy.{what}", what, "numpy is not installed here: pip install numpy")
        return numpy.load(io.BytesIO(base64.b64decode(text)), allow_pickle=False)

    def _ndarray(self, t: dict) -> Any:
        obj = self._load_npy(t["npy"], "ndarray")
        self.memo[t["id"]] = obj
        return obj

    def _npscalar(self, t: dict) -> Any:
        value = self._load_npy(t["npy"], "generic")
        return value if isinstance(value, Missing) else value[()]

    def _module(self, t: dict) -> Any:
        try:
            return importlib.import_module(t["name"])
        except Exception as exc:
            return self._missing_from(t["name"], "module", f"import failed: {type(exc).__name__}: {exc}")

    def _global(self, t: dict) -> Any:
        try:
            obj: Any = importlib.import_module(t["module"])
            for part in t["qualname"].split("."):
                obj = getattr(obj, part)
            return obj
        except Exception as exc:
            return self._missing_from(
                f"{t['module']}.{t['qualname']}", "global", f"cannot resolve: {type(exc).__name__}: {exc}"
            )

    def _missing_from(self, name: str, type_name: str, why: str) -> Missing:
        self.missing.append(f"{name_text(name)} ({why})")
        return Missing(name, type_name, "", why)

    def _function(self, t: dict) -> Any:
        if self.function_builder is None:
            obj: Any = self._missing_from(t["qualname"], "function", "no source to rebuild it from")
            self.memo[t["id"]] = obj
            return obj
        return self.function_builder(t, self)

    def _target(self, t: dict) -> Any:
        if self.target is None:
            return self._missing_from("<recorded function>", "function", "not available here")
        return self.target

    def _ref(self, t: dict) -> Any:
        try:
            return self.memo[t["id"]]
        except KeyError:
            # validation saw the id; replay left its tree alone (a global the code never names)
            raise RecordFormatError(
                f"a value refers to id {t['id']}, inside a recorded global the code does not use"
            ) from None

    def _method(self, t: dict) -> Any:
        owner = self.decode(t["self"])
        if isinstance(owner, Missing):
            return owner
        try:
            return getattr(owner, t["name"])
        except Exception as exc:
            return self._missing_from(f"method {t['name']}", "method", f"{type(exc).__name__}: {exc}")

    def _iterator(self, t: dict) -> Any:
        items = () if t["items"] is None else self.sub().decode(t["items"])
        tap = Tap(iter(items), t["type"], keep=False)
        self.memo[t["id"]] = tap
        return tap

    def _object(self, t: dict) -> Any:
        cls = self.decode(t["type"])
        try:
            if not isinstance(cls, type):
                raise TypeError(f"{cls!r} is not a class here")
            args = self.decode(t["args"])
            # what the class's own reduction calls (defaultdict subclasses), else __new__
            obj = cls(*args) if t.get("call") else cls.__new__(cls, *args)
        except Exception as exc:
            missing = self._missing_from(describe_global(t["type"]), "object", f"{type(exc).__name__}: {exc}")
            self.memo[t["id"]] = missing
            return missing
        self.memo[t["id"]] = obj
        state = self.decode(t["state"])
        try:
            _set_state(obj, state)
            for item in self.decode(t["listitems"]) or ():
                obj.append(item)
            for key, value in (self.decode(t["dictitems"]) or {}).items():
                obj[key] = value
        except Exception as exc:
            self.missing.append(f"{describe_global(t['type'])} (state not restored: {type(exc).__name__}: {exc})")
        return obj

    def _empty_cell(self, t: dict) -> Any:
        return EMPTY_CELL

    def _missing(self, t: dict) -> Missing:
        self.missing.append(f"{t['name']} ({t['type']}: {t['why']})")
        return Missing(t["name"], t["type"], t["repr"], t["why"])

    def _exception(self, t: dict) -> BaseException:
        tp = self.decode(t["type"])
        args = self.decode(t["args"])
        if isinstance(tp, type) and issubclass(tp, BaseException):
            try:
                return tp(*args)
            except Exception:
                pass
        return RuntimeError(t["message"])

    def _namedtuple(self, t: dict) -> Any:
        tp = self.decode(t["type"])
        items = [self.decode(x) for x in t["items"]]
        make = getattr(tp, "_make", None)
        if isinstance(tp, type) and issubclass(tp, tuple) and callable(make):
            return make(items)
        return self._missing_from(
            f"{t['type']['module']}.{t['type']['qualname']}", "namedtuple", "not a namedtuple class here"
        )

    def _ext(self, t: dict) -> Any:
        codec = registry.codec_named(t["codec"])
        if codec is None:
            return self._missing_from(t["codec"], "ext", "no codec registered under this name")
        inner = self.decode(t["v"])
        try:
            return codec.decode(inner)
        except Exception as exc:
            return self._missing_from(t["codec"], "ext", f"codec failed: {type(exc).__name__}: {exc}")

    def _pickle(self, t: dict) -> Any:
        if not self.trusted:  # validation already refused; this is a second lock
            raise UntrustedRecordError("pickle payload without trusted=True")
        import pickle

        return pickle.loads(base64.b64decode(t["v"]))


def describe_global(tree: Any) -> str:
    if isinstance(tree, dict) and tree.get("t") == "global":
        return f"{tree['module']}.{tree['qualname']}"
    if isinstance(tree, dict) and tree.get("t") == "missing":
        return str(tree.get("repr") or tree.get("type"))
    if isinstance(tree, dict) and tree.get("t") == "class":
        return f"{tree['module']}.{tree['qualname']}"
    return "?"


def _set_state(obj: Any, state: Any) -> None:
    """What unpickling does with an object's state, for the default reduction."""
    if state is None:
        return
    setstate = getattr(type(obj), "__setstate__", None)
    if setstate is not None and setstate is not getattr(object, "__setstate__", None):
        obj.__setstate__(state)
        return
    slots = None
    if isinstance(state, tuple) and len(state) == 2:
        state, slots = state
    if state:
        vars(obj).update(state)
    for key, value in (slots or {}).items():
        object.__setattr__(obj, key, value)
