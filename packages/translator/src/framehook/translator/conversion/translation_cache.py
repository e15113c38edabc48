"""Translations kept on disk for later processes (``config.translation_cache_dir``).

Translating a frame (decoding its bytecode, tracing it symbolically, writing the graph's
code and the guards) is most of a first call: 5-20 ms, where a small kernel itself runs in
1 ms. With this cache a later process looks the frame's code up before translating it; an
entry whose guards hold on the new frame gives back the graph and the sources of its
inputs, and only the backend's compile (under numba, a load from numba's own disk cache)
and the guard build remain.

What is kept: translations with a portable form (``TranslationOutput.portable``: the graph
and its inputs' sources) and their output code, marshalled with the constants marshal cannot
write set apart (``portable_code.py``) and pickled: the compiled graph (compiled again from
the kept graph), resume functions (their code, registered again as a resume function's, and
the loading frame's globals), helpers by import name.

Keyed by the code object's fingerprint and everything else a translation depends on:
the interpreter, numpy, framehook (its version and its modules' size and mtime, so that
an edited checkout misses), the backend, the translator, strictness, ``dynamic`` and every
setting. An entry holds its guards, what they expected of the frame that was translated
(``guards/portable.py``: types, functions and modules by import name, a function with the
digest of its code, so an edited helper misses), the pickled graph and, when every guard
has a C form, the guard builder's parts and the runtime's C checker as data (its guard
list). A later process makes that checker straight from its guard list and asks it whether
the guards hold on its frame (where building the guards on the frame to compare
expectations takes 0.3 ms); the checker then guards the entry, and the guards and their
readable parts are restored only when something asks for them (a failing guard's reason,
``explain()``, ``last_decisions``).

``optimize`` reads the file of the function it wraps ahead of its first call
(``read_ahead``) and decodes what it can without importing a module (the user's module
may still be importing); the first call uses that unless the file changed in between.

The directory is read with pickle, as numba's cache and Python's ``__pycache__`` are
trusted: it must belong to the user and must not be writable by others, or it is refused
(one ``TranslationCacheWarning``). A corrupt or unreadable file is ignored with the same
warning, once per process; the frame is then translated as if there were no cache.
"""

from __future__ import annotations

import functools
import hashlib
import importlib
import io
import logging
import marshal
import os
import pickle
import platform
import stat
import sys
import threading
import types
import warnings
from typing import Any, Dict, List, NamedTuple, Optional, Set, Tuple

import numpy as np

from .. import logs as fh_logging
from ..backends.registry import backend_name, list_backends, lookup_backend
from ..config import config
from ..graph import Graph
from ..guards.model import Guard
from . import portable_code
from ..guards.portable import (
    NotPortable,
    checker_form,
    code_fingerprint,
    expectations_built,
    portable_guards,
    rebuild_guards,
    kept_checker,
    ref,
    resolve,
    restored_builder,
    restored_checker,
    versioned_module,
)
from ..guards import builder as guard_builder

__all__ = [
    "TranslationCacheWarning",
    "Loaded",
    "active",
    "prepare",
    "cache_key",
    "lookup",
    "read_ahead",
    "save",
    "counts",
    "output_code",
]

log = fh_logging.get_logger("translator")

#: the first bytes of every file the cache writes
MAGIC = b"framehook-translations 4\n"

#: what happened, for tests and debugging: hits, misses, saved, not_portable
counts: Dict[str, int] = {"hits": 0, "misses": 0, "saved": 0, "not_portable": 0}


#: what pickling a translation or its guard parts raises when they have no portable form
_NOT_KEPT = (NotPortable, pickle.PicklingError, TypeError, AttributeError, RecursionError, ValueError)


class TranslationCacheWarning(UserWarning):
    """The translation cache's directory or one of its files is not usable: ignored."""


_lock = threading.Lock()
_warned: Set[str] = set()
_checked: Dict[str, bool] = {}


def _warn_once(kind: str, why: str) -> None:
    with _lock:
        if kind in _warned:
            return
        _warned.add(kind)
    warnings.warn(
        f"framehook's translation cache: {why}; translating as without it", TranslationCacheWarning, stacklevel=3
    )


def _usable_dir() -> Optional[str]:
    path = config.translation_cache_dir
    if path is None:
        return None
    ok = _checked.get(path)
    if ok is None:
        ok = False
        try:
            os.makedirs(path, mode=0o700, exist_ok=True)
            st = os.stat(path)
            if not stat.S_ISDIR(st.st_mode):
                _warn_once("dir", f"{path} is not a directory")
            elif hasattr(os, "getuid") and st.st_uid != os.getuid():
                _warn_once("dir", f"{path} belongs to another user (uid {st.st_uid}); it is not trusted")
            elif os.name == "posix" and st.st_mode & (stat.S_IWGRP | stat.S_IWOTH):
                _warn_once(
                    "dir", f"{path} is writable by others (mode {stat.S_IMODE(st.st_mode):o}); it is not trusted"
                )
            elif not os.access(path, os.W_OK):
                _warn_once("dir", f"{path} cannot be written")
            else:
                ok = True
        except OSError as e:
            _warn_once("dir", f"{path} cannot be created: {type(e).__name__}: {e.strerror or e}")
        _checked[path] = ok
    return path if ok else None


def prepare() -> None:
    """Check the directory, compute the build fingerprint and write the settings now (once
    per process)."""
    if _usable_dir() is not None:
        _build_fingerprint()
        _settings_text()


def active() -> bool:
    """Is a usable cache directory set?"""
    return config.translation_cache_dir is not None and _usable_dir() is not None


@functools.lru_cache(maxsize=None)
def _build_fingerprint() -> str:
    """The interpreter, numpy and this very framehook (its modules' sizes and mtimes)."""
    from .._runtime import runtime

    parts: List[Any] = [
        sys.version,
        sys.implementation.cache_tag,
        platform.machine(),
        np.__version__,
        getattr(sys.modules.get(__name__.rsplit(".", 2)[0]), "__version__", None),  # the translator's
        getattr(runtime, "__version__", None),
        getattr(runtime, "__file__", None),
    ]
    # every module's size and mtime: an edited checkout with an unchanged version misses
    pending = [os.path.dirname(os.path.dirname(os.path.abspath(__file__)))]
    while pending:
        with os.scandir(pending.pop()) as it:
            for entry in sorted(it, key=lambda e: e.name):
                if entry.is_dir(follow_symlinks=False):
                    if entry.name != "__pycache__":
                        pending.append(entry.path)
                elif entry.name.endswith(".py"):
                    st = entry.stat()
                    parts.append((entry.name, st.st_mtime_ns, st.st_size))
    return hashlib.sha256(repr(parts).encode()).hexdigest()


#: (the settings' values, copied, and their text): the text is 25 us of a first call to write
_settings_seen: Tuple[Optional[Dict[str, Any]], str] = (None, "")


def _settings_text() -> str:
    """Every setting but the directory, as text; written again only when a value changed
    (compared with a copy, so that a list changed in place counts)."""
    global _settings_seen
    values = config.to_dict()
    del values["translation_cache_dir"]
    seen, text = _settings_seen
    if values != seen:
        text = repr(sorted(values.items()))
        copied = {k: (type(v)(v) if type(v) in (list, dict, set) else v) for k, v in values.items()}
        _settings_seen = (copied, text)
    return text


def cache_key(code: types.CodeType, compiler_fn: Any, translator: Any, strict: bool, dynamic: Any) -> Optional[str]:
    """The file name for ``code``'s translations with this callback, or None when the
    callback's backend is not a registered one (a user's function may change between runs)."""
    name = backend_name(compiler_fn)
    try:
        if name not in list_backends(include_unavailable=True) or lookup_backend(name) is not compiler_fn:
            return None
    except Exception:  # an unavailable backend: nothing to key on
        return None
    settings = _settings_text()
    if " at 0x" in settings:  # a setting holding an object whose repr is its address
        return None
    return _key(code, name, translator, strict, dynamic, settings)


@functools.lru_cache(maxsize=256)
def _key(code: types.CodeType, name: str, translator: Any, strict: bool, dynamic: Any, settings: str) -> str:
    """``cache_key``'s digest, kept: ``optimize`` computes it for the function it wraps, so
    that its first call does not (0.1 ms)."""
    who = f"{getattr(translator, '__module__', '?')}.{getattr(translator, '__qualname__', repr(translator))}"
    text = repr((code_fingerprint(code), _build_fingerprint(), name, who, strict, repr(dynamic), settings))
    return hashlib.sha256(text.encode()).hexdigest()[:40]


class _Pickler(pickle.Pickler):
    """Pickles graphs and an output code's constants: modules by name, functions outside
    versioned packages by reference with their code's digest (checked when loaded), resume
    functions by their code, the frame's globals as a reference to the loading frame's;
    refuses classes of other packages."""

    def __init__(self, file: Any, f_globals: Optional[Dict[str, Any]] = None) -> None:
        super().__init__(file, protocol=4)
        self._globals = f_globals

    def persistent_id(self, obj: Any) -> Any:
        return "globals" if obj is self._globals and self._globals is not None else None

    def reducer_override(self, obj: Any) -> Any:
        if type(obj) is Graph:
            state = obj.__getstate__()
            compiled = state.get("_forward_state")
            if compiled is not None:
                try:  # the compiled function is kept only when all it names has a portable form
                    _dumps(compiled)
                except (NotPortable, pickle.PicklingError, TypeError, AttributeError):
                    del state["_forward_state"]
            return object.__new__, (Graph,), state
        if isinstance(obj, types.ModuleType):
            return importlib.import_module, (ref(obj)[1],)
        if isinstance(obj, types.CodeType):
            return _code_reduction(obj)
        if isinstance(obj, types.FunctionType):
            try:
                reference = ref(obj)
            except NotPortable:
                if _resume_state(obj.__code__) is None or obj.__closure__ or obj.__defaults__:
                    raise
                # a resume function made for the frame: rebuilt around the loading frame's globals
                return _function, (obj.__code__, obj.__globals__, obj.__name__)
            return (resolve, (reference,)) if reference[0] == "function" else NotImplemented
        if isinstance(obj, type) and not versioned_module(getattr(obj, "__module__", "") or ""):
            raise NotPortable(f"class {obj.__qualname__} of {obj.__module__}")
        return NotImplemented


class _Unpickler(pickle.Unpickler):
    """``imports=False``: refuses (NotPortable) what would import a module not imported yet,
    for reading ahead while the user's modules are still being imported."""

    def __init__(self, file: Any, f_globals: Optional[Dict[str, Any]], imports: bool = True) -> None:
        super().__init__(file)
        self._globals = f_globals
        self._imports = imports

    def persistent_load(self, pid: Any) -> Any:
        if pid != "globals" or self._globals is None:
            raise pickle.UnpicklingError(f"unknown persistent id {pid!r}")
        return self._globals

    def find_class(self, module: str, name: str) -> Any:
        if not self._imports:
            if module not in sys.modules:
                raise NotPortable(f"module {module} is not imported yet")
            if (module, name) == ("importlib", "import_module"):
                return _imported_module
            if name == "resolve" and module == resolve.__module__:
                return _resolve_imported
        return super().find_class(module, name)


def _imported_module(name: str) -> Any:
    module = sys.modules.get(name)
    if module is None:
        raise NotPortable(f"module {name} is not imported yet")
    return module


def _resolve_imported(reference: Tuple[Any, ...]) -> Any:
    if reference[1] not in sys.modules:
        raise NotPortable(f"module {reference[1]} is not imported yet")
    return resolve(reference)


def _resume_state(code: types.CodeType) -> Optional[Tuple[int, Optional[int]]]:
    from ..symbolic.resume_code import resume_code_state

    return resume_code_state(code)


def _is_resume_code(value: Any) -> bool:
    return isinstance(value, types.CodeType) and _resume_state(value) is not None


def _code_reduction(code: types.CodeType) -> Any:
    state = _resume_state(code)
    if state is None:
        return marshal.loads, (marshal.dumps(code, 2),)
    from ..symbolic.resume_code import load_resume_code

    return load_resume_code, (marshal.dumps(code, 2),) + state


def _function(code: types.CodeType, f_globals: Dict[str, Any], name: str) -> types.FunctionType:
    return types.FunctionType(code, f_globals, name)


def _dumps(obj: Any, f_globals: Optional[Dict[str, Any]] = None) -> bytes:
    buf = io.BytesIO()
    _Pickler(buf, f_globals).dump(obj)
    return buf.getvalue()


def _loads(data: bytes, f_globals: Optional[Dict[str, Any]] = None, imports: bool = True) -> Any:
    return _Unpickler(io.BytesIO(data), f_globals, imports).load()  # noqa: S301 - the user's own directory (checked)


def _pickled_form(make: Any, builder: Any, f_globals: Dict[str, Any]) -> Optional[bytes]:
    """``make(builder)`` pickled, or None when it is None or has no kept form: the guard
    parts (``checker_form``, for ``_holding``; without them the entry is matched by its
    expectations) and the C checker (``kept_checker``, for ``_kept_check``; without it, by
    its parts)."""
    try:
        form = make(builder)
        return None if form is None else _dumps(form, f_globals)
    except _NOT_KEPT as e:
        if log.isEnabledFor(logging.DEBUG):
            log.debug("%s not kept: %s", make.__name__, e)
        return None


def _path(directory: str, key: str) -> str:
    return os.path.join(directory, key + ".fht")


def _read(path: str) -> Optional[List[Tuple[bytes, Any, bytes, Optional[bytes], Optional[bytes]]]]:
    try:
        with open(path, "rb") as f:
            data = f.read()
    except FileNotFoundError:
        return None
    except OSError as e:
        _warn_once("read", f"{path} cannot be read: {e.strerror or e}")
        return None
    try:
        if not data.startswith(MAGIC):
            raise ValueError("not a framehook translation file")
        entries = pickle.loads(data[len(MAGIC) :])  # noqa: S301 - the directory is the user's own (checked)
        if type(entries) is not list or not all(type(e) is tuple and len(e) == 5 for e in entries):
            raise ValueError("unexpected content")
    except Exception as e:  # anything in a corrupt file
        _warn_once("corrupt", f"{path} is corrupt ({type(e).__name__}: {e})")
        return None
    return entries


def output_code(template: bytes, compiled: Any, constants: List[Any]) -> types.CodeType:
    """A kept output code with its constants back, the compiled graph in its slot (a
    constant swap, where writing the code again takes 0.5 ms)."""
    return portable_code.fill(template, compiled, constants)


class Loaded(NamedTuple):
    """A kept translation whose guards hold on the loading frame."""

    graph: Any  # or None
    sources: List[Any]
    template: Optional[bytes]  # the output code's, or None: the original code runs
    constants: List[Any]
    #: the check function of its guards, with their readable parts made on first use, when
    #: its C checker was kept; else None, and the guards with the builder that checked them
    check_fn: Any
    guards: Optional[List[Guard]]
    builder: Any


class _Ahead(NamedTuple):
    """A key's file read before the first call that needs it (``read_ahead``)."""

    stat: Tuple[int, int, int]  # the file's, when read
    entries: List[Tuple[bytes, Any, bytes, Optional[bytes], Optional[bytes]]]
    f_globals: Dict[str, Any]  # what the decoded objects were made for
    kept: Dict[int, Any]  # entry index -> its kept C checker, made (``_kept_check``)
    payloads: Dict[int, Any]  # entry index -> (graph, sources, template, constants), decoded


#: key -> its file read ahead, taken by the key's first lookup
_ahead: Dict[str, _Ahead] = {}


def _stat_id(st: os.stat_result) -> Tuple[int, int, int]:
    return st.st_ino, st.st_size, st.st_mtime_ns


def read_ahead(key: str, f_globals: Dict[str, Any]) -> None:
    """Read ``key``'s file now and decode its entries' C checkers and payloads, where that
    imports no module (``optimize`` does it for the function it wraps, while its module may
    still be importing): the first call then checks the guards and makes the cache entry,
    unless the file changed meanwhile (its identity, size and mtime are compared), in which
    case it reads the file again. What cannot be decoded yet is decoded in the call."""
    directory = _usable_dir()
    if directory is None or key in _ahead:  # read ahead already, not taken yet
        return
    path = _path(directory, key)
    try:
        st = os.stat(path)  # before reading: a file replaced in between is read again later
    except OSError:
        return
    entries = _read(path)
    if not entries:
        return
    kept: Dict[int, Any] = {}
    payloads: Dict[int, Any] = {}
    for i, (rows, _, payload, parts, checker) in enumerate(entries):
        if checker is None or parts is None:
            continue
        try:
            check_fn = _kept_check(_loads(checker, f_globals, imports=False), rows, parts, f_globals)
            if check_fn is not None:  # else another global state now: compared again in the call
                payloads[i] = _loads(payload, f_globals, imports=False)
                kept[i] = check_fn
        except Exception:  # noqa: BLE001 - not yet (a module still importing), or corrupt: the call tells
            continue
    with _lock:
        _ahead[key] = _Ahead(_stat_id(st), entries, f_globals, kept, payloads)


def _taken_ahead(key: str, path: str, f_globals: Dict[str, Any]) -> Optional[_Ahead]:
    with _lock:
        ahead = _ahead.pop(key, None)
    if ahead is None or ahead.f_globals is not f_globals:
        return None
    try:
        if _stat_id(os.stat(path)) != ahead.stat:
            return None
    except OSError:
        return None
    return ahead


def lookup(key: str, f_locals: Dict[str, Any], f_globals: Dict[str, Any]) -> Optional[Loaded]:
    """The newest entry of ``key`` whose guards hold on this frame, or None."""
    directory = _usable_dir()
    if directory is None:
        return None
    path = _path(directory, key)
    ahead = _taken_ahead(key, path, f_globals) if _ahead else None
    entries = ahead.entries if ahead is not None else (_read(path) or [])
    for i in range(len(entries) - 1, -1, -1):  # the newest first
        rows, expected, payload, parts, kept = entries[i]
        guards: Optional[List[Guard]] = None
        check_fn: Any = None
        try:
            if kept is not None and parts is not None and guard_builder.USE_C_CHECKER:
                check_fn = ahead.kept.get(i) if ahead is not None else None
                if check_fn is None:
                    check_fn = _kept_check(_loads(kept, f_globals), rows, parts, f_globals)
                builder = None if check_fn is not None and _holds(check_fn, f_locals) else False
            else:
                guards = rebuild_guards(pickle.loads(rows))  # noqa: S301
                builder = _holding(parts, guards, f_locals, f_globals) if parts is not None else None
        except NotPortable:  # a function a guard names changed since
            continue
        except Exception as e:
            _warn_once("corrupt", f"an entry of {_path(directory, key)} is corrupt ({type(e).__name__}: {e})")
            continue
        if builder is False:
            continue
        if builder is None and guards is not None:  # compare what the guards expect, built on this frame
            try:
                found, builder = expectations_built(guards, f_locals, f_globals)
                if found != expected:
                    continue
            except Exception:  # a guard that cannot even be evaluated here does not hold
                continue
        try:
            decoded = ahead.payloads.get(i) if ahead is not None else None
            # resolves functions, checking their digest
            graph, sources, template, constants = decoded or _loads(payload, f_globals)
        except NotPortable:  # a function it calls changed since
            continue
        except Exception as e:
            _warn_once("corrupt", f"an entry of {_path(directory, key)} is corrupt ({type(e).__name__}: {e})")
            continue
        counts["hits"] += 1
        return Loaded(graph, list(sources), template, constants, check_fn, guards, builder)
    counts["misses"] += 1
    return None


def _kept_check(form: Any, rows: bytes, parts: bytes, f_globals: Dict[str, Any]) -> Any:
    """The check function of an entry's kept C checker (``form``, decoded), made straight
    from its kept guard list (the guards and their parts are restored only when something
    asks for them, see ``kept_check_fn``); None when the global state is not the one it
    was kept under."""
    held = restored_checker(form, f_globals)
    if held is None:
        return None

    def restore() -> Any:
        guards = rebuild_guards(pickle.loads(rows))  # noqa: S301
        # built on no frame's locals: a check function must not keep the first call's arrays alive
        builder = restored_builder(_loads(parts, f_globals), guards, {}, f_globals, held=held)
        if builder is None:  # pragma: no cover - the same global state was just compared
            raise NotPortable("the global state changed")
        return builder

    return guard_builder.kept_check_fn(held.checker, held.specs, held.source, restore)


def _holds(check_fn: Any, f_locals: Dict[str, Any]) -> bool:
    try:
        return bool(check_fn(f_locals))
    except Exception:  # a guard that cannot be evaluated here does not hold
        return False


def _holding(parts: bytes, guards: List[Guard], f_locals: Dict[str, Any], f_globals: Dict[str, Any]) -> Any:
    """The guard builder of an entry's kept parts when its guards hold on this frame (asked of
    the runtime's C checker: 10-20 us, where building the guards again takes 0.3 ms), False
    when they do not, None when there is no C checker to ask."""
    builder = restored_builder(_loads(parts, f_globals), guards, f_locals, f_globals)
    if builder is None:  # another global state
        return False
    form = builder.c_checker()
    if form is None:
        return None
    try:
        return builder if form[0](f_locals) else False
    except Exception:  # a guard that cannot be evaluated here does not hold
        return False


def save(key: str, guards: Set[Guard], out: Any, f_locals: Dict[str, Any], f_globals: Dict[str, Any]) -> bool:
    """Add the translation ``out`` (a ``TranslationOutput`` with ``portable`` set) to
    ``key``'s file (the oldest entries beyond ``config.cache_size_limit`` dropped); False
    when it has no portable form."""
    directory = _usable_dir()
    if directory is None:
        return False
    try:
        expected, builder = expectations_built(guards, f_locals, f_globals)
        rows = _dumps(portable_guards(builder.built_guards))  # in the order the parts refer to
        parts = _pickled_form(checker_form, builder, f_globals)
        kept = _pickled_form(kept_checker, builder, f_globals) if parts is not None else None
        graph, sources = out.portable
        template, constants = None, []
        if out.code is not None:
            compiled = out.compiled_fns[0] if graph is not None else None
            template, constants = portable_code.split(out.code, compiled, _is_resume_code)
        payload = _dumps((graph, list(sources), template, constants), f_globals)
    except _NOT_KEPT as e:
        counts["not_portable"] += 1
        if log.isEnabledFor(logging.DEBUG):
            log.debug("translation not cached: %s", e)
        return False
    path = _path(directory, key)
    entries = [e for e in (_read(path) or []) if e[1] != expected]
    entries.append((rows, expected, payload, parts, kept))
    entries = entries[-config.cache_size_limit :]
    tmp = f"{path}.{os.getpid()}.{threading.get_ident()}.tmp"
    try:
        with open(tmp, "wb") as f:
            f.write(MAGIC + pickle.dumps(entries, protocol=4))
        os.replace(tmp, path)  # readers see the old file or the new one, never half of one
    except OSError as e:
        _warn_once("write", f"{path} cannot be written: {e.strerror or e}")
        try:
            os.remove(tmp)
        except OSError:
            pass
        return False
    counts["saved"] += 1
    return True
