"""Recording a call of a function into a Record (and optionally a file)."""

from __future__ import annotations

import base64
import builtins
import datetime
import inspect
import linecache
import marshal
import os
import types
from typing import Any, Callable, Iterable

from . import driver
from .codec import CO_SET_AFTER_COMPILE, Encoder
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


def package_versions() -> dict:
    """Versions of the installed framehook packages (None when absent), read from their
    metadata: recording imports none of them."""
    from importlib import metadata

    out: dict = {}
    for name, dist in _PACKAGES.items():
        try:
            out[name] = metadata.version(dist)
        except metadata.PackageNotFoundError:
            out[name] = None
    return out


def _module_source(fn: types.FunctionType) -> str | None:
    filename = fn.__code__.co_filename
    lines = linecache.getlines(filename, fn.__globals__)
    if not lines:
        return None
    return "".join(lines)


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
    """One Encoder per independent value tree, remembering what could not be encoded."""

    def __init__(self, fn: types.FunctionType, allow_pickle: bool) -> None:
        self.fn = fn
        self.allow_pickle = allow_pickle
        self.missing: list[str] = []
        self.source_functions: list[types.FunctionType] = []

    def __call__(self, obj: Any, name: str) -> Any:
        enc = Encoder(source_file=self.fn.__code__.co_filename, target=self.fn, allow_pickle=self.allow_pickle)
        tree = enc.encode(obj, name)
        self.missing.extend(enc.missing)
        self.source_functions.extend(enc.source_functions)
        return tree


def _closure(fn: types.FunctionType, trees: _Trees) -> list:
    out = []
    for var, cell in zip(fn.__code__.co_freevars, fn.__closure__ or ()):
        try:
            content = cell.cell_contents
        except ValueError:
            out.append([var, {"t": "empty_cell"}])
            continue
        out.append([var, trees(content, f"closure[{var!r}]")])
    return out


def _globals(fn: types.FunctionType, trees: _Trees) -> tuple[dict, dict]:
    """Encode the globals and builtins the function (and same-file helpers it reaches) read."""
    ns = fn.__globals__
    builtin_ns = ns.get("__builtins__", builtins)
    if isinstance(builtin_ns, types.ModuleType):
        builtin_ns = vars(builtin_ns)
    pending: list[types.CodeType] = [fn.__code__]
    seen_codes: set[int] = set()
    glob: dict = {}
    bltn: dict = {}
    while pending:
        code = pending.pop()
        if id(code) in seen_codes:
            continue
        seen_codes.add(id(code))
        for name in sorted(names_of(code)):
            if name in glob or name in bltn or name == "__builtins__":
                continue
            if name in ns:
                before = len(trees.source_functions)
                glob[name] = trees(ns[name], f"globals[{name!r}]")
                pending.extend(f.__code__ for f in trees.source_functions[before:])
            elif name in builtin_ns:
                value = builtin_ns[name]
                if value is getattr(builtins, name, None):
                    # the builtin itself: always by its builtins name (open is io.open),
                    # the only form replay accepts for another module's object
                    bltn[name] = {"t": "global", "module": "builtins", "qualname": name}
                else:
                    bltn[name] = trees(value, f"builtins[{name!r}]")
    return glob, bltn


def _bound_locals(fn: types.FunctionType, args: tuple, kwargs: dict, trees: _Trees) -> dict:
    try:
        bound = inspect.signature(fn).bind(*args, **kwargs)
    except (TypeError, ValueError):
        return {}
    bound.apply_defaults()
    return {name: trees(value, f"locals[{name!r}]") for name, value in bound.arguments.items()}


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
    trees = _Trees(fn, allow_pickle)
    call = {"args": trees(args, "args"), "kwargs": trees(kwargs, "kwargs")}
    local_trees = _bound_locals(fn, args, kwargs, trees)
    function = {
        "defaults": trees(fn.__defaults__, "__defaults__"),
        "kwdefaults": trees(fn.__kwdefaults__, "__kwdefaults__"),
        "closure": _closure(fn, trees),
    }
    glob, bltn = _globals(fn, trees)
    outcome = driver.run(fn, args, kwargs, kind)
    outcome_doc = encode_outcome(outcome, args, kwargs, trees)
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
            "source": _module_source(fn),
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
    )
    if path is not None:
        from .reader import save

        save(rec, path)
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
