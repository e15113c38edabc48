"""Recording a call of a function into a Record (and optionally a file)."""

from __future__ import annotations

import base64
import builtins
import datetime
import inspect
import marshal
import os
import sys
import types
import weakref
from typing import Any, Callable, Iterable

from . import driver
from .codec import CO_SET_AFTER_COMPILE, Encoder, Sources, Tap, is_iterator
from .codeloc import current_python
from .model import Record
from .trust import names_of


# the framehook packages whose versions a record notes: import name -> distribution
_PACKAGES = {
    "framehook.records": "framehook-records",
    "framehook.runtime": "framehook-runtime",
    "framehook.translator": "framehook-translator",
    "framehook.profiler": "framehook-profiler",
}


_VERSIONS: dict | None = None


def package_versions() -> dict:
    """Versions of the installed framehook packages (None when absent), read from their
    metadata once per process: recording imports none of them."""
    global _VERSIONS
    if _VERSIONS is None:
        from importlib import metadata

        found: dict = {}
        for name, dist in _PACKAGES.items():
            try:
                found[name] = metadata.version(dist)
            except metadata.PackageNotFoundError:
                found[name] = None
        _VERSIONS = found
    return dict(_VERSIONS)


def _undecorated(fn: Any) -> Any:
    """What optimize/disable/run wrappers wrap: that is the function to record."""
    while not isinstance(fn, types.MethodType) and hasattr(fn, "_framehook_orig_callable"):
        fn = fn._framehook_orig_callable
    return fn


def _unwrap(fn: Any, args: tuple) -> tuple[types.FunctionType, tuple]:
    fn = _undecorated(fn)
    # a bound method forwards attribute reads to its function: unwrap that, keep the binding
    if isinstance(fn, types.MethodType) and isinstance(_undecorated(fn.__func__), types.FunctionType):
        return _undecorated(fn.__func__), (fn.__self__,) + tuple(args)
    if not isinstance(fn, types.FunctionType):
        raise TypeError(f"record() needs a Python function, got {type(fn).__name__}")
    return fn, tuple(args)


class _Trees:
    """The record's encoders: one for the inputs (the function's defaults and cells, the
    arguments, globals and builtins), whose ids are one space so that one object in two
    places stays one object, and independent ones for the locals and the outcome."""

    def __init__(self, fn: types.FunctionType, allow_pickle: bool) -> None:
        self.fn = fn
        self.sources = Sources(fn.__code__, fn.__globals__)
        self.inputs = Encoder(
            source_file=fn.__code__.co_filename,
            target=fn,
            allow_pickle=allow_pickle,
            sources=self.sources,
            module=fn.__module__ if isinstance(fn.__module__, str) else None,
        )

        self.names: set[str] = set()  # every name the recorded code (and its helpers) reads
        self.modules: dict[str, types.ModuleType] = {}  # the modules among its globals

    @property
    def missing(self) -> list[str]:
        return self.inputs.missing

    def shared(self, obj: Any, name: str) -> Any:
        return self.inputs.encode(obj, name)

    def __call__(self, obj: Any, name: str) -> Any:
        return self.inputs.sub().encode(obj, name)

    def by_value(self, obj: Any, name: str) -> Any:
        """An independent tree of ``obj`` that never names ``obj`` itself by its module
        path (a patched attribute's value: that path leads to what replay must replace)."""
        enc = self.inputs.sub()
        enc.not_by_reference = {id(obj)}
        return enc.encode(obj, name)


def _closure(fn: types.FunctionType, trees: _Trees) -> list:
    out = []
    for var, cell in zip(fn.__code__.co_freevars, fn.__closure__ or ()):
        try:
            content = cell.cell_contents
        except ValueError:
            out.append([var, {"t": "empty_cell"}])
            continue
        out.append([var, trees.shared(content, f"closure[{var!r}]")])
    return out


# What the modules held before any test could patch them: module name -> its namespace
# as first seen (remember_modules), so that a module attribute a test replaced (a stubbed
# sys.implementation, a monkeypatched platform.python_version) is recorded and put back
# for the replay, as the call saw it.
_PRISTINE: dict[str, dict] = {}


_REMEMBERED_AT: list = [None]  # sys.modules' size and last entry when last looked at


def remember_modules() -> None:
    """Take note of every imported module's attributes (once per module). Recording calls
    this when it starts (record_calls, the pytest plugin) and before each record; it looks
    again only when a module was imported since."""
    last = next(reversed(sys.modules)) if sys.modules else None
    if _REMEMBERED_AT[0] == (len(sys.modules), last):
        return
    _REMEMBERED_AT[0] = (len(sys.modules), last)
    for name, module in list(sys.modules.items()):
        if name not in _PRISTINE and isinstance(module, types.ModuleType):
            namespace = getattr(module, "__dict__", None)
            if isinstance(namespace, dict):
                _PRISTINE[name] = dict(namespace)
                for value in namespace.values():  # sys.implementation: patched attribute by attribute
                    if type(value) is types.SimpleNamespace and id(value) not in _PRISTINE_FIELDS:
                        _PRISTINE_FIELDS[id(value)] = (value, dict(vars(value)))


_PRISTINE_FIELDS: dict[int, tuple[Any, dict]] = {}


_ABSENT = object()


def _patched(modules: dict[str, types.ModuleType], names: set[str]) -> list[tuple[str, str, Any]]:
    """(module, attribute, value) for each attribute of the given modules that the code
    names and that differs from what the module held when first seen."""
    out = []
    for module_name, module in sorted(modules.items()):
        before = _PRISTINE.get(module_name)
        namespace = getattr(module, "__dict__", None)
        if before is None or not isinstance(namespace, dict):
            continue
        for attr in sorted(names):
            now = namespace.get(attr, _ABSENT)
            if now is not _ABSENT and now is not before.get(attr, _ABSENT):
                out.append((module_name, attr, now))
                continue
            fields = _PRISTINE_FIELDS.get(id(now))
            if fields is not None and fields[0] is now and vars(now) != fields[1]:
                # the same namespace object, with a field the test set: record a copy
                out.append((module_name, attr, types.SimpleNamespace(**vars(now))))
    return out


def _globals(fn: types.FunctionType, trees: _Trees) -> tuple[dict, dict]:
    """Encode the globals and builtins read by the function and by every function of its
    module that the values hold (defaults, arguments, cells and globals, to a fixed point)."""
    ns = fn.__globals__
    builtin_ns = ns.get("__builtins__", builtins)
    if isinstance(builtin_ns, types.ModuleType):
        builtin_ns = vars(builtin_ns)
    found = trees.inputs.source_functions
    pending: list[types.CodeType] = [fn.__code__] + [f.__code__ for f in found]
    done = len(found)
    seen_codes: set[int] = set()
    glob: dict = {}
    bltn: dict = {}
    trees.names = set()
    while pending:
        code = pending.pop()
        if id(code) in seen_codes:
            continue
        seen_codes.add(id(code))
        names = names_of(code)
        trees.names |= names
        for name in sorted(names):
            if name in glob or name in bltn or name == "__builtins__":
                continue
            if name in ns:
                glob[name] = trees.shared(ns[name], f"globals[{name!r}]")
                if isinstance(ns[name], types.ModuleType):
                    trees.modules[ns[name].__name__] = ns[name]
                pending.extend(f.__code__ for f in found[done:])
                done = len(found)
            elif name in builtin_ns:
                value = builtin_ns[name]
                if value is getattr(builtins, name, None):
                    # the builtin itself: always by its builtins name (open is io.open),
                    # the only form replay accepts for another module's object
                    bltn[name] = {"t": "global", "module": "builtins", "qualname": name}
                else:
                    bltn[name] = trees.shared(value, f"builtins[{name!r}]")
    return glob, bltn


def _tap_iterators(args: tuple, kwargs: dict) -> tuple[tuple, dict, list[Tap]]:
    """The arguments with every iterator replaced by a Tap that keeps what the call takes."""
    taps: list[Tap] = []

    def tap(value: Any) -> Any:
        if is_iterator(value):
            tp = type(value)
            taps.append(Tap(value, f"{tp.__module__}.{tp.__qualname__}"))
            return taps[-1]
        return value

    new_args = tuple(tap(a) for a in args)
    new_kwargs = {k: tap(v) for k, v in kwargs.items()}
    return new_args, new_kwargs, taps


class _RandomState:
    """The global random states the call moved (random's, numpy's legacy one), as they
    were before it: replay restores them, so that the call draws the same numbers."""

    def __init__(self) -> None:
        self.before: dict = {}
        rnd = sys.modules.get("random")
        if rnd is not None:
            self.before["random"] = rnd.getstate()
        nprandom = sys.modules.get("numpy.random")
        if nprandom is not None:
            try:
                self.before["numpy.random"] = nprandom.get_state(legacy=True)
            except Exception:  # numpy too old or too new for the legacy state
                pass

    def moved(self) -> dict:
        out = {}
        if "random" in self.before and sys.modules["random"].getstate() != self.before["random"]:
            out["random"] = self.before["random"]
        if "numpy.random" in self.before:
            after = sys.modules["numpy.random"].get_state(legacy=True)
            old = self.before["numpy.random"]
            if after[2] != old[2] or not (after[1] == old[1]).all():
                name, keys, pos, has_gauss, gauss = old
                out["numpy.random"] = (name, keys, pos, has_gauss, gauss)
        return out


_SIGNATURES: "weakref.WeakKeyDictionary[types.FunctionType, inspect.Signature]" = weakref.WeakKeyDictionary()


def _bound_locals(fn: types.FunctionType, args: tuple, kwargs: dict, trees: _Trees) -> dict:
    try:
        signature = _SIGNATURES.get(fn)
        if signature is None:
            signature = _SIGNATURES[fn] = inspect.signature(fn)
        bound = signature.bind(*args, **kwargs)
    except (TypeError, ValueError):
        return {}
    bound.apply_defaults()
    # last of the shared trees: what the arguments already hold becomes references
    return {name: trees.shared(value, f"locals[{name!r}]") for name, value in bound.arguments.items()}


def record_call(
    fn: Callable[..., Any],
    args: Iterable[Any] = (),
    kwargs: dict | None = None,
    *,
    path: str | os.PathLike | None = None,
    label: str = "",
    allow_pickle: bool = False,
    translator: dict | None = None,
    notes: Iterable[str] = (),
) -> Record:
    """Call ``fn(*args, **kwargs)`` once, capturing its frame's inputs and outcome.

    Returns the Record; writes it to ``path`` too when given. ``allow_pickle`` lets values
    with no codec fall back to pickle (such records then load only with trusted=True).
    """
    return record_with_outcome(
        fn, args, kwargs, path=path, label=label, allow_pickle=allow_pickle, translator=translator, notes=notes
    )[0]


def record_with_outcome(
    fn: Callable[..., Any],
    args: Iterable[Any] = (),
    kwargs: dict | None = None,
    *,
    path: str | os.PathLike | None = None,
    label: str = "",
    allow_pickle: bool = False,
    translator: dict | None = None,
    notes: Iterable[str] = (),
) -> tuple[Record, driver.Outcome]:
    """Like record_call, also returning the live outcome (for wrappers that must return it)."""
    fn, args = _unwrap(fn, tuple(args))
    kwargs = dict(kwargs or {})
    code = fn.__code__
    kind = driver.code_kind(code.co_flags)
    args, kwargs, taps = _tap_iterators(args, kwargs)
    trees = _Trees(fn, allow_pickle)
    # the order of the shared trees is the order replay decodes them (model.SHARED_ORDER)
    function = {
        "defaults": trees.shared(fn.__defaults__, "__defaults__"),
        "kwdefaults": trees.shared(fn.__kwdefaults__, "__kwdefaults__"),
        "closure": _closure(fn, trees),
    }
    call = {"args": trees.shared(args, "args"), "kwargs": trees.shared(kwargs, "kwargs")}
    remember_modules()
    glob, bltn = _globals(fn, trees)
    patches = [
        [module, attr, trees.by_value(value, f"{module}.{attr} (as the test set it)")]
        for module, attr, value in _patched(trees.modules, trees.names)
    ]
    local_trees = _bound_locals(fn, args, kwargs, trees)
    random_state = _RandomState()
    outcome = driver.run(fn, args, kwargs, kind)
    moved = random_state.moved()
    trees.inputs.fill_taps(taps)
    outcome_doc = encode_outcome(outcome, args, kwargs, trees)
    snippet = trees.sources.target
    rec = Record(
        python=current_python(),
        packages=package_versions(),
        code={
            "name": code.co_name,
            "qualname": fn.__qualname__,
            "module": fn.__module__ if isinstance(fn.__module__, str) else None,
            "filename": code.co_filename,
            "firstlineno": code.co_firstlineno,
            "kind": kind,
            "flags": code.co_flags & CO_SET_AFTER_COMPILE,
            "source": snippet.text if snippet is not None else None,
            "source_line": snippet.line if snippet is not None else 1,
            "marshal": base64.b64encode(marshal.dumps(code)).decode("ascii"),
        },
        function=function,
        globals=glob,
        builtins=bltn,
        call=call,
        locals=local_trees,
        outcome=outcome_doc,
        translator=translator,
        label=label or fn.__qualname__,
        created=datetime.datetime.now(datetime.timezone.utc).replace(microsecond=0).isoformat(),
        missing=sorted(set(trees.missing)),
        notes=list(notes),
        sources=trees.sources.items,
        state={key: trees(value, f"{key} state") for key, value in moved.items()} or None,
        patches=patches,
    )
    if path is not None:
        from .reader import save

        save(rec, path, durable=False)  # atomic; fsync would cost more than recording
    return rec, outcome


def encode_outcome(outcome: driver.Outcome, args: tuple, kwargs: dict, trees: Callable[[Any, str], Any]) -> dict:
    return {
        "kind": outcome.kind,
        "value": trees(outcome.value, "return value") if outcome.kind == "return" else None,
        "exception": trees(outcome.exception, "exception") if outcome.exception is not None else None,
        "events": [[k, trees(v, f"{k}[{i}]")] for i, (k, v) in enumerate(outcome.events)],
        "args_after": trees(args, "args after the call"),
        "kwargs_after": trees(kwargs, "kwargs after the call"),
    }


def record(fn: Callable[..., Any], *args: Any, path: str | os.PathLike | None = None, **kwargs: Any) -> Record:
    """Record one call ``fn(*args, **kwargs)``; write it to ``path`` when given."""
    return record_call(fn, args, kwargs, path=path)
