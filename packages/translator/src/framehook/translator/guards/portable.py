"""What a set of guards expects of a frame, in a form another process can compare.

A check function holds the objects it compares against (a type, a function, numpy's
error state) and is only meaningful in the process that built it. The translation cache
(``conversion/translation_cache.py``) needs the same conditions across processes, so
``expectations(guards, f_locals, f_globals)`` evaluates each guard's source on a frame,
as the guard builder does, and writes what the guard would compare against as plain data:

* modules, classes and functions become references by import name (``ref``); a reference
  resolves only to the very object the name leads to, and a Python function's reference
  carries a fingerprint of its code and defaults, so an edited function is a different one;
* numbers, strings, dtypes and the other values equality guards take stay values.

Two frames satisfy the same guards exactly when their expectations are equal. A guard set
whose every part has a C form is also kept as the builder's parts (``checker_form``): another
process restores them (``restored_builder``) and asks the runtime's C checker whether they
hold on its frame, which is the check its cache entry then uses, without building the
guards again. Anything
that has no such form (an object reachable by no import name, a class defined outside a
versioned package) raises ``NotPortable``: the translation is simply not cached.
"""

from __future__ import annotations

import hashlib
import importlib
import marshal
import math
import os
import sys
import sysconfig
import types
from typing import Any, Dict, Iterable, List, NamedTuple, Optional, Tuple

import numpy as np

from .model import Guard, GuardKind

__all__ = [
    "NotPortable",
    "expectations",
    "expectations_built",
    "checker_form",
    "restored_builder",
    "kept_checker",
    "restored_checker",
    "RestoredChecker",
    "ref",
    "resolve",
    "code_fingerprint",
    "versioned_module",
]


class NotPortable(Exception):
    """A guard, value or object has no form another process could check."""


def code_fingerprint(code: types.CodeType) -> str:
    """A digest of a code object (bytecode, constants, names, file, lines), equal in every
    process that compiled the same source with the same interpreter."""
    # marshal format 2 writes no back-references: those depend on reference counts, which
    # differ between processes for the same code
    return hashlib.sha256(marshal.dumps(code, 2)).hexdigest()[:32]


def _stdlib_dirs() -> Tuple[str, ...]:
    paths = sysconfig.get_paths()
    return tuple(os.path.realpath(paths[k]) + os.sep for k in ("stdlib", "platstdlib") if k in paths)


_STDLIB = _stdlib_dirs()
#: packages whose objects are pinned by what the cache key already holds (their versions)
_VERSIONED_PACKAGES = ("numpy", "framehook")


def versioned_module(name: str) -> bool:
    """Is a module's content fixed by the interpreter or by a version in the cache key?
    (the standard library, builtin modules, numpy, framehook)."""
    if name.split(".", 1)[0] in _VERSIONED_PACKAGES or name in sys.builtin_module_names:
        return True
    module = sys.modules.get(name)
    path = getattr(module, "__file__", None)
    if module is None:
        return False
    if path is None:
        return True  # builtin or frozen
    return os.path.realpath(path).startswith(_STDLIB)


def _lookup(module_name: str, qualname: str) -> Any:
    obj: Any = importlib.import_module(module_name)
    for part in qualname.split("."):
        obj = getattr(obj, part)
    return obj


def _function_digest(fn: types.FunctionType) -> Tuple[Any, ...]:
    """What makes a Python function behave as it does besides its globals: its code and
    its defaults (whose expressions are evaluated outside its code)."""
    defaults = tuple(value(d) for d in (fn.__defaults__ or ()))
    kwdefaults = tuple(sorted((k, value(v)) for k, v in (fn.__kwdefaults__ or {}).items()))
    return (code_fingerprint(fn.__code__), defaults, kwdefaults)


def ref(obj: Any) -> Tuple[Any, ...]:
    """A reference to ``obj`` by import name, which ``resolve`` turns back into it."""
    if isinstance(obj, types.ModuleType):
        if sys.modules.get(obj.__name__) is not obj:
            raise NotPortable(f"module {obj.__name__!r} is not the one imported under that name")
        return ("module", obj.__name__)
    module_name = getattr(obj, "__module__", None)
    qualname = getattr(obj, "__qualname__", None) or getattr(obj, "__name__", None)
    if isinstance(obj, np.ufunc) and module_name is None:
        module_name = "numpy"
    if not isinstance(module_name, str) or not isinstance(qualname, str) or "<" in qualname:
        raise NotPortable(f"{type(obj).__name__} {qualname or obj!r:.60} has no import name")
    try:
        found = _lookup(module_name, qualname)
    except Exception:
        found = None
    if found is not obj:
        raise NotPortable(f"{module_name}.{qualname} does not lead to the object")
    if versioned_module(module_name):
        return ("object", module_name, qualname)
    if isinstance(obj, types.FunctionType):
        return ("function", module_name, qualname, _function_digest(obj))
    raise NotPortable(f"{module_name}.{qualname} is a {type(obj).__name__} outside a versioned package")


def resolve(reference: Tuple[Any, ...]) -> Any:
    """The object ``reference`` names in this process; NotPortable when it is gone or, for
    a function, when its code or defaults are not those recorded."""
    try:
        if reference[0] == "module":
            return importlib.import_module(reference[1])
        obj = _lookup(reference[1], reference[2])
    except Exception as e:
        raise NotPortable(f"cannot resolve {reference[1:3]}: {type(e).__name__}: {e}") from None
    if reference[0] == "function" and (
        not isinstance(obj, types.FunctionType) or _function_digest(obj) != reference[3]
    ):
        raise NotPortable(f"{reference[1]}.{reference[2]} changed since it was recorded")
    return obj


def value(v: Any, depth: int = 0) -> Any:
    """An equality guard's value as plain data (tagged with its exact type, since ``1 == 1.0 == True``)."""
    if depth > 8:
        raise NotPortable("a value nested too deeply")
    t = type(v)
    if v is None or v is Ellipsis or t in (bool, int, str, bytes):
        return v if t is not int else ("int", v)
    if t is float:
        return ("nan",) if math.isnan(v) else ("float", v)
    if t is complex:
        return ("complex", value(v.real), value(v.imag))
    if isinstance(v, np.dtype):
        if v.fields is not None or v.subdtype is not None:
            raise NotPortable(f"structured dtype {v}")
        return ("dtype", v.str)
    if isinstance(v, np.generic):
        return ("scalar", v.dtype.str, value(v.item(), depth + 1))
    if t is range:
        return ("range", v.start, v.stop, v.step)
    if t is slice:
        return ("slice", value(v.start, depth + 1), value(v.stop, depth + 1), value(v.step, depth + 1))
    if t in (tuple, list):
        return (t.__name__,) + tuple(value(x, depth + 1) for x in v)
    if t in (set, frozenset):
        items = [value(x, depth + 1) for x in v]
        return (t.__name__,) + tuple(sorted(items, key=repr))
    if t is dict:
        return ("dict",) + tuple((value(k, depth + 1), value(x, depth + 1)) for k, x in v.items())
    if isinstance(v, (type, types.FunctionType, types.BuiltinFunctionType, types.ModuleType, np.ufunc)):
        return ("ref",) + ref(v)
    raise NotPortable(f"a {t.__name__} value")


def _spec_data(kind: str, args: Iterable[Any]) -> Tuple[Any, ...]:
    out: List[Any] = [kind]
    for a in args:
        if isinstance(a, dict):  # NDARRAY_MATCH's spec
            out.append(tuple(sorted((k, _spec_item(x)) for k, x in a.items())))
        else:
            out.append(_spec_item(a))
    return tuple(out)


def _spec_item(x: Any) -> Any:
    if isinstance(x, type):
        return ("ref",) + ref(x)
    return value(x)


def expectations(guards: Iterable[Guard], f_locals: Dict[str, Any], f_globals: Dict[str, Any]) -> Tuple[Any, ...]:
    """What ``guards`` compare against on this frame, as plain data; NotPortable when some
    guard has no such form. Equal results: the same guards hold on both frames."""
    return expectations_built(guards, f_locals, f_globals)[0]


def expectations_built(
    guards: Iterable[Guard], f_locals: Dict[str, Any], f_globals: Dict[str, Any]
) -> Tuple[Tuple[Any, ...], Any]:
    """``expectations``, and the guard builder that produced them, holding every guard's
    parts in ``build_check_fn``'s order: a loaded entry's check function reuses it rather
    than building the same guards again (0.2-0.3 ms of a first call)."""
    from .builder import GuardBuilder, GuardBuildError

    builder = GuardBuilder(f_locals, f_globals)
    out: List[Any] = []
    for guard in sorted(guards, key=lambda g: g.sort_key()):
        start = len(builder.parts)
        try:
            builder.build(guard)
        except GuardBuildError as e:
            raise NotPortable(str(e)) from None
        if guard.kind is GuardKind.GLOBAL_STATE:
            out.append(("GLOBAL_STATE", _global_state()))
            continue
        for part in builder.parts[start:]:
            c = part.c_spec
            if c is None:
                raise NotPortable(f"{guard.describe()} has no declarative form")
            if c == ("covered",):
                continue
            if c[0] in ("SAME_AS", "NOT_SAME_AS"):
                out.append((guard.name, c[0], c[1]))
            elif c[0] == "ID_MATCH":
                out.append((guard.name, "ID_MATCH", _identity(c[1])))
            else:
                out.append((guard.name,) + _spec_data(c[0], c[1:]))
    return tuple(out), builder


def _identity(obj: Any) -> Any:
    # None, True, False, Ellipsis, NotImplemented are the same object in every process
    for singleton in (None, True, False, Ellipsis, NotImplemented):
        if obj is singleton:
            return ("singleton", repr(obj))
    return ("ref",) + ref(obj)


def _global_state(snapshot: Optional[Dict[str, Any]] = None) -> Any:
    if snapshot is None:
        from .contexts import GlobalStateContext

        snapshot = GlobalStateContext.guarded_snapshot()
    return tuple(sorted((name, value(state)) for name, state in snapshot.items()))


def portable_guards(guards: Iterable[Guard]) -> List[Tuple[Any, str, Tuple[Any, ...]]]:
    """The guards as (source, kind name, details): what rebuilds them in another process."""
    return [(g.originating_source, g.kind.name, g.details) for g in guards]


def rebuild_guards(rows: Iterable[Tuple[Any, str, Tuple[Any, ...]]]) -> List[Guard]:
    return [Guard(source, GuardKind[kind], details=tuple(details)) for source, kind, details in rows]


def checker_form(builder: Any) -> Optional[Tuple[Any, ...]]:
    """The parts ``builder`` built, as data another process restores with ``restored_builder``
    (pickled by the translation cache: their constants are types, dtypes, values and objects
    by import name); None when some part has no C form. The global-state guard's closure is
    left out: the snapshot it compares against is kept, and a new closure made on load."""
    index = {id(g): i for i, g in enumerate(builder.built_guards)}
    consts = dict(builder.consts)
    rows: List[Tuple[Any, ...]] = []
    global_state: Any = None
    for part in builder.parts:
        c = part.c_spec
        if c is None:
            return None
        if part.guard.kind is GuardKind.GLOBAL_STATE:
            name = next(n for n, v in consts.items() if v is c[-1])
            consts[name] = None
            global_state = (name, _global_state(c[-1].snapshot))  # what the closure compares against
            c = ("GLOBAL_STATE",)
        rows.append((index[id(part.guard)], part.template, part.expected, part.actual, c))
    return tuple(rows), consts, global_state, builder.python_source()


def restored_builder(
    form: Tuple[Any, ...],
    guards: List[Guard],
    f_locals: Dict[str, Any],
    f_globals: Dict[str, Any],
    held: Optional["RestoredChecker"] = None,
) -> Any:
    """A guard builder holding ``checker_form``'s parts for ``guards`` (in the order they were
    built), or None when the global state differs from the one they were built under.
    ``held``: the C checker ``restored_checker`` made of the same guards, which the builder
    takes as its own (with its global-state check) rather than making another."""
    from .builder import CodePart, GuardBuilder, global_state_c_spec, make_global_state_check, same_object
    from .c_form import COVERED

    rows, consts, global_state, source = form
    consts = dict(consts)
    state_spec: Any = None
    if global_state is not None:
        name, snapshot = global_state
        check = held.global_state if held is not None else make_global_state_check()
        if check is None or _global_state(check.snapshot) != snapshot:  # type: ignore[attr-defined]
            return None
        consts[name] = check
        state_spec = global_state_c_spec(check)
    parts = []
    for i, template, expected, actual, c in rows:
        guard = guards[i]
        if c == COVERED:
            c = COVERED  # compared by identity
        elif c == ("GLOBAL_STATE",):
            c = state_spec
        elif guard.kind is GuardKind.ID_MATCH:
            expected = same_object(c[1])  # the address in this process
        parts.append(CodePart(guard, template, expected, actual, c))
    builder = GuardBuilder.restored(f_locals, f_globals, guards, parts, consts, source)
    if held is not None:
        builder.take_c_checker(held.checker, held.specs, held.starts)
    return builder


class RestoredChecker(NamedTuple):
    """The runtime's C checker made in this process from a ``kept_checker`` form."""

    checker: Any
    specs: List[Tuple[Any, ...]]  # its guard list
    starts: List[int]  # per C guard, the index of its first code part
    global_state: Any  # the global-state check it calls, or None
    source: str  # the Python form's source


#: the global-state op in a kept guard list (its closure is made again on load)
_GLOBAL_STATE_OP = ("GLOBAL_STATE",)


def kept_checker(builder: Any) -> Optional[Tuple[Any, ...]]:
    """The C checker of ``builder``'s parts as data another process makes it again from
    (``restored_checker``), without the guards or their parts: its guard list (constants
    pickled as ``checker_form``'s are), the first part of each C guard, the global-state
    snapshot and the Python form's source; None when there is no C checker."""
    form = builder.c_checker()
    if form is None:
        return None
    _, specs, starts = form
    kept: List[Tuple[Any, ...]] = []
    snapshot: Any = None
    for spec in specs:
        if spec[1] in ("CALL", "CONTEXTVAR_IS"):  # not an opcode: the global-state guard's checker ops
            snapshot = _global_state(spec[-1].snapshot)
            spec = (spec[0],) + _GLOBAL_STATE_OP
        kept.append(spec)
    return tuple(kept), tuple(starts), snapshot, builder.python_source()


def restored_checker(form: Tuple[Any, ...], f_globals: Dict[str, Any]) -> Optional[RestoredChecker]:
    """The C checker ``kept_checker`` describes, for a frame with these globals; None when
    the global state differs from the one it was kept under, or no C checker can be made."""
    from .builder import c_checker_of, global_state_c_spec, make_global_state_check

    kept, starts, snapshot, source = form
    specs = list(kept)
    check: Any = None
    if snapshot is not None:
        check = make_global_state_check()
        if _global_state(check.snapshot) != snapshot:  # type: ignore[attr-defined]
            return None
        op = global_state_c_spec(check)
        specs = [(s[0],) + op if s[1:] == _GLOBAL_STATE_OP else s for s in specs]
    checker = c_checker_of(specs, f_globals)
    if checker is None:
        return None
    return RestoredChecker(checker, specs, list(starts), check, source)
