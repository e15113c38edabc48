"""Recording every call of chosen functions, or of every function of a package.

    with record_calls([mypkg.kernels.step, "otherpkg"], "recs", cap=20) as rec:
        run_the_workload()
    print(rec.records)                      # the files written

Two mechanisms (the README's "Recording calls" has the details):

* **hook**: when an installed package registers a call observer under the entry point
  group ``framehook.records.call_observers`` (framehook-runtime does), calls are caught by
  code object through its PEP 523 hook: however a function is reached, and its identity,
  attributes and ``__code__`` stay untouched. Frames the hook cannot see at their start
  (generator, coroutine and async-generator functions) are patched instead.
* **patch**: otherwise (or with ``through="patch"``) every module and class attribute bound
  to a target function is replaced by one wrapper (``functools.wraps`` attributes, the
  same kind of function: a generator function's wrapper is a generator function); every
  one is put back when recording ends.

Only the outermost call is recorded: a call made while another is being recorded on the
same thread (recursion, a target calling a target, code the encoder runs) runs unrecorded
and its effects are part of the outer record. The recorder runs the call itself
(``record_with_outcome``) and the caller gets its outcome. A generator, coroutine or
async generator is run to its end when the caller first resumes it (driven with ``None``,
without an event loop), and the caller then gets what it yielded and returned.
"""

from __future__ import annotations

import functools
import hashlib
import importlib
import os
import re
import sys
import threading
import types
from dataclasses import dataclass, field
from typing import Any, Callable, Generator, Iterable, Iterator

from . import driver
from .recorder import remember_modules

__all__ = ["CallRecording", "record_calls", "observer_factory", "GROUP"]

GROUP = "framehook.records.call_observers"
DEFAULT_CAP = 20
LOOK_FACTOR = 10  # a capped function is looked at for at most cap * LOOK_FACTOR calls
_SKIPPED_NAMES = frozenset({"__annotate__"})  # code CPython compiles for annotations (3.14+)


def observer_factory() -> Callable[..., Any] | None:
    """The call observer an installed package registers (framehook-runtime's
    ``CallObserver``), or None; records imports none of those packages itself."""
    from importlib import metadata

    found = metadata.entry_points()
    if hasattr(found, "select"):  # 3.10+
        eps = list(found.select(group=GROUP))
    else:  # pragma: no cover - Python 3.9's dict of groups
        eps = list(found.get(GROUP, ()))
    for ep in sorted(eps, key=lambda e: e.name):
        try:
            factory = ep.load()
        except Exception:  # a broken installation: fall back to patching
            continue
        if callable(factory):
            return factory
    return None


def _stem(text: str) -> str:
    return re.sub(r"[^A-Za-z0-9_.]+", "_", text)


@dataclass
class _Function:
    """What is known about one recorded function (one code object)."""

    stem: str  # file names: STEM.N.fhrec
    label: str  # the record's label, before "#N"
    cap: int | None  # distinct records to keep; None: every call
    seen: int = 0  # calls recorded (written or not)
    written: int = 0
    inputs: set = field(default_factory=set)  # keys of the inputs recorded

    def done(self) -> bool:
        return self.cap is not None and (self.written >= self.cap or self.seen >= self.cap * LOOK_FACTOR)


class _Depth(threading.local):
    def __init__(self) -> None:
        self.depth = 0


class _Reyield:
    """An awaitable that yields one recorded value to whatever drives the coroutine."""

    def __init__(self, value: Any) -> None:
        self.value = value

    def __await__(self) -> Generator[Any, Any, None]:
        yield self.value


def _kind(fn: types.FunctionType) -> str:
    return driver.code_kind(fn.__code__.co_flags)


def _unwrapped(obj: Any) -> Any:
    """A staticmethod's function, or the function framehook's optimize wrapped (a few
    levels at most: an object may answer every attribute, as mocks and proxies do)."""
    if isinstance(obj, staticmethod):
        obj = obj.__func__
    for _ in range(8):
        if isinstance(obj, (types.FunctionType, types.MethodType)):
            break
        try:
            inner = getattr(obj, "_framehook_orig_callable")
        except Exception:
            break
        if inner is obj:
            break
        obj = inner
    return obj


class CallRecording:
    """Records calls of the functions and packages added to it while it is entered.

    ``add_function(fn)`` and ``add_package(name_or_module)`` choose what is recorded;
    ``through`` is ``"auto"`` (the hook when a call observer is installed), ``"hook"``
    (ValueError without one) or ``"patch"``. Records are written to ``directory`` as
    ``STEM.N.fhrec`` (``STEM.WORKER.N.fhrec`` with ``worker``), N the first free index;
    ``records`` lists them, ``errors`` the calls whose recording failed (they ran
    unrecorded), ``counts()`` the calls recorded and written per function.
    """

    def __init__(self, directory: str | os.PathLike, *, through: str = "auto", worker: str | None = None) -> None:
        if through not in ("auto", "hook", "patch"):
            raise ValueError(f"through must be 'auto', 'hook' or 'patch', not {through!r}")
        self.directory = os.path.abspath(os.fspath(directory))
        self.worker = worker
        self.records: list[str] = []
        self.errors: list[str] = []
        factory = observer_factory() if through != "patch" else None
        if through == "hook" and factory is None:
            raise ValueError(f"no call observer is installed (entry point group {GROUP}; framehook-runtime has one)")
        self._observer: Any = factory(self._handle, self._choose) if factory is not None else None
        self._functions: dict[types.CodeType, _Function] = {}
        self._explicit: dict[types.CodeType, types.FunctionType] = {}
        self._packages: list[tuple[str, tuple[str, ...], int | None]] = []  # name, roots, cap
        self._patched: list[tuple[Any, str, Any, bool]] = []  # owner, name, original, had own
        self._wrappers: dict[types.CodeType, Any] = {}
        self._depth = _Depth()
        self._lock = threading.RLock()
        self._next_index: dict[str, int] = {}
        self._active = False
        self.hooked: set[str] = set()  # labels of functions caught through the hook
        self.patched: set[str] = set()  # labels of functions whose attributes were patched

    @property
    def mechanism(self) -> str:
        return "hook" if self._observer is not None else "patch"

    # -- choosing --------------------------------------------------------------------------
    def add_function(
        self, fn: Any, *, stem: str | None = None, label: str | None = None, cap: int | None = None
    ) -> None:
        """Record calls of ``fn`` (a Python function, a staticmethod's, or one that
        framehook's optimize wrapped); ``cap``: at most that many distinct records."""
        fn = _unwrapped(fn)
        if not isinstance(fn, types.FunctionType):
            raise TypeError(f"record_calls needs Python functions, modules or package names, got {type(fn).__name__}")
        if self._active:
            raise RuntimeError("add targets before entering the recording")
        name = f"{fn.__module__}.{fn.__qualname__}"
        label = label if label is not None else f"{fn.__module__}:{fn.__qualname__}"
        self._functions.setdefault(fn.__code__, _Function(_stem(stem or name), label, cap))
        self._explicit.setdefault(fn.__code__, fn)

    def add_package(self, package: str | types.ModuleType, *, cap: int | None = DEFAULT_CAP) -> None:
        """Record calls of every function and method defined in a module, or a package and
        its submodules (those loaded when recording starts, and through the hook also those
        loaded later, nested functions included), at most ``cap`` distinct records each."""
        if self._active:
            raise RuntimeError("add targets before entering the recording")
        module = importlib.import_module(package) if isinstance(package, str) else package
        roots: list[str] = []
        for folder in getattr(module, "__path__", None) or ():
            roots.append(os.path.join(os.path.abspath(folder), ""))
        filename = getattr(module, "__file__", None)
        if not roots and filename:
            roots.append(os.path.abspath(filename))
        self._packages.append((module.__name__, tuple(roots), cap))

    # -- the scope -------------------------------------------------------------------------
    def __enter__(self) -> "CallRecording":
        if self._active:
            raise RuntimeError("this recording is already entered")
        os.makedirs(self.directory, exist_ok=True)
        remember_modules()  # before any test patches a module: see recorder._patched
        self._active = True
        try:
            self._start()
        except BaseException:
            self._stop()
            raise
        return self

    def __exit__(self, *exc_info: object) -> None:
        self._stop()

    def _start(self) -> None:
        patch: dict[types.CodeType, types.FunctionType] = {}
        for code, fn in self._explicit.items():
            if self._observer is not None and self._observer.add(code):
                self.hooked.add(self._functions[code].label)
            else:
                patch[code] = fn
        if self._packages and self._observer is None:
            for fn in self._package_functions():
                if fn.__code__ not in self._functions:
                    self._functions[fn.__code__] = self._package_entry(fn)
                patch.setdefault(fn.__code__, fn)
        if patch:
            self._patch(patch)
        if self._observer is not None:
            self._observer.__enter__()

    def _stop(self) -> None:
        if not self._active:
            return
        self._active = False
        if self._observer is not None:
            self._observer.__exit__(None, None, None)
        for owner, name, original, had_own in reversed(self._patched):
            if had_own:
                setattr(owner, name, original)
            else:
                delattr(owner, name)
        self._patched.clear()
        self._wrappers.clear()

    # -- packages --------------------------------------------------------------------------
    def _package_of(self, code: types.CodeType) -> tuple[str, int | None] | None:
        filename = os.path.abspath(code.co_filename) if code.co_filename else ""
        for name, roots, cap in self._packages:
            for root in roots:
                if filename == root or (root.endswith(os.sep) and filename.startswith(root)):
                    return name, cap
        return None

    def _package_entry(self, fn: types.FunctionType) -> _Function:
        found = self._package_of(fn.__code__)
        cap = found[1] if found else DEFAULT_CAP
        module = fn.__module__ if isinstance(fn.__module__, str) else "?"
        return _Function(_stem(f"{module}.{fn.__qualname__}"), f"{module}:{fn.__qualname__}", cap)

    def _choose(self, code: types.CodeType) -> bool:
        """The hook's question about a code it sees for the first time: is it a function of a
        recorded package? (Comprehensions, lambdas and module bodies are not.)"""
        name = code.co_name
        if not self._packages or not name.isidentifier() or name in _SKIPPED_NAMES:
            return False
        return self._package_of(code) is not None

    def _package_functions(self) -> list[types.FunctionType]:
        """Plain functions and methods defined in the packages' loaded modules (for
        patching). Not generator or coroutine functions: recording runs those to their end
        when first resumed, which a package's own context managers and lazy iterators
        cannot take."""
        out: dict[types.CodeType, types.FunctionType] = {}
        for module in list(sys.modules.values()):
            if not isinstance(module, types.ModuleType):
                continue
            try:
                items = list(vars(module).items())
            except TypeError:  # pragma: no cover - a module without a __dict__
                continue
            for _, value in items:
                for fn in _functions_in(value, set()):
                    if fn.__code__ not in out and _kind(fn) == "function" and self._choose(fn.__code__):
                        out[fn.__code__] = fn
        return list(out.values())

    # -- patching --------------------------------------------------------------------------
    def _patch(self, targets: dict[types.CodeType, types.FunctionType]) -> None:
        """Replace every module and class attribute bound to a target by its wrapper."""
        by_id = {id(fn): fn for fn in targets.values()}
        for owner, name, raw in _bindings(by_id):
            fn = _unwrapped(raw)
            wrapper = self._wrappers.get(fn.__code__)
            if wrapper is None:
                wrapper = self._wrappers[fn.__code__] = self._wrapper(fn)
                self.patched.add(self._functions[fn.__code__].label)
            replacement = staticmethod(wrapper) if isinstance(raw, staticmethod) else wrapper
            own = getattr(owner, "__dict__", {})
            had_own = name in own
            try:
                setattr(owner, name, replacement)
            except (AttributeError, TypeError):
                continue  # a read-only owner: that binding is not recorded
            self._patched.append((owner, name, raw if had_own else None, had_own))

    def _wrapper(self, fn: types.FunctionType) -> Any:
        record = self._record
        depth = self._depth
        kind = _kind(fn)
        if kind == "generator":

            def wrapper(*args: Any, **kwargs: Any) -> Any:
                if depth.depth:
                    return (yield from fn(*args, **kwargs))
                outcome = record(fn, args, kwargs)
                if outcome is None:
                    return (yield from fn(*args, **kwargs))
                for _, value in outcome.events:
                    yield value
                return _result(outcome)

        elif kind == "coroutine":

            async def wrapper(*args: Any, **kwargs: Any) -> Any:  # type: ignore[misc]
                if depth.depth:
                    return await fn(*args, **kwargs)
                outcome = record(fn, args, kwargs)
                if outcome is None:
                    return await fn(*args, **kwargs)
                for _, value in outcome.events:
                    await _Reyield(value)
                return _result(outcome)

        elif kind == "async_generator":

            async def wrapper(*args: Any, **kwargs: Any) -> Any:
                if depth.depth:
                    async for item in fn(*args, **kwargs):
                        yield item
                    return
                outcome = record(fn, args, kwargs)
                if outcome is None:
                    async for item in fn(*args, **kwargs):
                        yield item
                    return
                for event, value in outcome.events:
                    if event == "yield":
                        yield value
                    else:
                        await _Reyield(value)
                _result(outcome)

        else:

            def wrapper(*args: Any, **kwargs: Any) -> Any:
                if depth.depth:
                    return fn(*args, **kwargs)
                outcome = record(fn, args, kwargs)
                return fn(*args, **kwargs) if outcome is None else _result(outcome)

        return functools.wraps(fn)(wrapper)

    # -- recording a call ------------------------------------------------------------------
    def _handle(self, fn: types.FunctionType, args: tuple, kwargs: dict) -> Any:
        """The hook's handler: runs in place of the call of a target (outermost calls only)."""
        if self._depth.depth:
            return fn(*args, **kwargs)
        outcome = self._record(fn, args, kwargs)
        return fn(*args, **kwargs) if outcome is None else _result(outcome)

    def _record(self, fn: types.FunctionType, args: tuple, kwargs: dict) -> driver.Outcome | None:
        """Record the call; its outcome, or None when it was not recorded and is still to be
        made (the function is done, or recording failed before the call)."""
        from .recorder import record_with_outcome

        with self._lock:
            entry = self._functions.get(fn.__code__)
            if entry is None:
                entry = self._functions[fn.__code__] = self._package_entry(fn)
                if self._observer is not None:
                    self.hooked.add(entry.label)
            if entry.done():
                self._release(fn.__code__)
                return None
            entry.seen += 1
        self._depth.depth += 1
        try:
            rec, outcome = record_with_outcome(fn, args, kwargs, label=entry.label)
        except Exception as exc:  # the recorder's failure, not the call's (that is the outcome)
            self.errors.append(f"{entry.label}: {type(exc).__name__}: {exc}")
            return None
        finally:
            self._depth.depth -= 1
        try:
            self._keep(entry, rec)
        except Exception as exc:  # e.g. the disk is full: the call's outcome stands
            self.errors.append(f"{entry.label}: writing: {type(exc).__name__}: {exc}")
        if entry.done():
            self._release(fn.__code__)
        return outcome

    def _release(self, code: types.CodeType) -> None:
        if self._observer is not None:
            self._observer.release(code)

    def _keep(self, entry: _Function, rec: Any) -> None:
        if entry.cap is not None:
            key = hashlib.blake2b(
                repr((rec.call, rec.function, rec.globals, rec.builtins)).encode("utf-8", "backslashreplace"),
                digest_size=16,
            ).digest()
            with self._lock:
                if key in entry.inputs or entry.written >= entry.cap:
                    return
                entry.inputs.add(key)
        self._write(entry, rec)

    def _write(self, entry: _Function, rec: Any) -> None:
        """Write ``rec`` under the first free index of its stem: each file is created
        exclusively, so no record replaces another (another worker's, an earlier run's)."""
        from .reader import dumps

        worker = f".{self.worker}" if self.worker else ""
        with self._lock:
            index = self._next_index.get(entry.stem, 0)
            while True:
                path = os.path.join(self.directory, f"{entry.stem}{worker}.{index}.fhrec")
                try:
                    fh = open(path, "xb")
                except FileExistsError:
                    index += 1
                    continue
                break
            self._next_index[entry.stem] = index + 1
            try:
                with fh:
                    rec.label = f"{entry.label}#{self.worker + '.' if self.worker else ''}{index}"
                    fh.write(dumps(rec))
            except BaseException:
                os.remove(path)  # never leave a partial record behind
                raise
            rec.path = path
            entry.written += 1
            self.records.append(path)

    def counts(self) -> dict[str, tuple[int, int]]:
        """label -> (calls recorded, records written)."""
        return {e.label: (e.seen, e.written) for e in self._functions.values() if e.seen}


def _result(outcome: driver.Outcome) -> Any:
    """The live call's result: its return value, or its exception raised again (without the
    recorder's own frame at the head of its traceback)."""
    if outcome.kind != "raise":
        return outcome.value
    exc = outcome.exception
    assert exc is not None
    tb = exc.__traceback__
    if tb is not None and tb.tb_frame.f_code is driver.run.__code__:
        exc = exc.with_traceback(tb.tb_next)
    raise exc


def _functions_in(value: Any, seen: set) -> Iterator[types.FunctionType]:
    """The function a module attribute is, or the methods of a class (nested classes
    included). Only what the module or class holds itself: no attribute of other objects
    is read (lazy objects and proxies answer any)."""
    # type(...) rather than isinstance: a proxy's __class__ may claim anything
    if type(value) is staticmethod:
        value = value.__func__
    if type(value) is types.FunctionType:
        yield value
    elif issubclass(type(value), type) and id(value) not in seen:
        seen.add(id(value))
        for raw in list(vars(value).values()):
            yield from _functions_in(raw, seen)


def _bindings(by_id: dict[int, types.FunctionType]) -> list[tuple[Any, str, Any]]:
    """Every (owner, name, raw value) of a loaded module or of a class found in one whose
    raw value is a target (or a staticmethod of one)."""
    out: list[tuple[Any, str, Any]] = []
    seen_owners: set[int] = set()

    def visit(owner: Any) -> None:
        if id(owner) in seen_owners:
            return
        seen_owners.add(id(owner))
        try:
            items = list(vars(owner).items())
        except TypeError:  # pragma: no cover - no __dict__
            return
        for name, raw in items:
            inner = raw.__func__ if type(raw) is staticmethod else raw
            if type(inner) is types.FunctionType and id(inner) in by_id:
                out.append((owner, name, raw))
            elif issubclass(type(raw), type):
                visit(raw)

    for module in list(sys.modules.values()):
        if isinstance(module, types.ModuleType):
            visit(module)
    return out


def record_calls(
    targets: Any,
    directory: str | os.PathLike = "framehook-records",
    *,
    cap: int | None = None,
    through: str = "auto",
) -> CallRecording:
    """Record calls of ``targets`` into ``directory`` while the returned context manager is
    entered.

    ``targets``: a function, a module, a module or package name (``"mypkg"``), or an
    iterable of those. A function is recorded at every call (at most ``cap`` distinct
    records when ``cap`` is given); a module or package records every function and method
    defined in it, at most ``cap`` (default 20) distinct records each. See the module
    docstring for ``through`` and what is recorded.
    """
    recording = CallRecording(directory, through=through)
    items: Iterable[Any] = [targets] if isinstance(targets, (str, types.ModuleType)) or callable(targets) else targets
    for item in items:
        if isinstance(item, (str, types.ModuleType)):
            recording.add_package(item, cap=DEFAULT_CAP if cap is None else cap)
        else:
            recording.add_function(item, cap=cap)
    return recording
