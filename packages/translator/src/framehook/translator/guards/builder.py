"""Compiles a set of guards into one check function for the runtime.

    check_fn = build_check_fn(guards, f_locals, f_globals)
    check_fn(f_locals)          # True when every guard holds (the runtime's hot path)
    check_fn.fail_reason(L)     # None, or a readable line naming the first failing guard
    check_fn.fail_reasons(L)    # every failing guard, one line each

When every condition of the set can be expressed declaratively (every guard kind here,
on sources rooted in a local or a global; DISTINCT_INPUT only with a runtime whose checker
knows ``NOT_SAME_AS``, see ``c_checker_kinds``), the check function is the runtime's C
``GuardChecker``: the guards are compiled once into a list of (path, kind, *args) tuples
and evaluated in C with no Python-level call (except the GLOBAL_STATE guard's fallback,
taken only when numpy's error state object changed, or when global state is registered).
Otherwise it is generated Python source: one straight-line function, each guarded source
read once into a local, each condition one ``if not (...): return False``, with the
guarded objects bound as closure variables. Both behave alike: anything that raises an
``Exception`` while a guard is evaluated counts as a failed guard (a missing key, an
attribute that vanished), never as an error of the call; ``fail_reason`` gives the same
text for both (with the C checker it starts from the index ``first_failure`` reports).
With the C checker the Python source is still written (``source``, debug dumps) but only
compiled when something first needs it (``fail_reason``, ``fail_reasons``,
``python_check_fn``): most frames never fail a guard, and compiling is most of the cost.
"""

from __future__ import annotations

import builtins
import itertools
import logging
import math
import threading
import weakref
from typing import Any, Callable, Dict, Iterable, List, Optional, Tuple

import numpy as np

from .._runtime import runtime
from .contexts import GlobalStateContext, registered_global_states, states_equal
from .c_form import COVERED as _COVERED
from .c_form import c_guards as _c_guards
from .c_form import source_path
from .model import GlobalStateSource, Guard, GuardKind
from .readable import Deferred, ReadableParts, second_name, short_repr, type_name
from .sources import (
    ChainedSource,
    Source,
    is_literal,
    read_value,
)

__all__ = [
    "GuardBuilder",
    "CodePart",
    "build_check_fn",
    "CheckFn",
    "GuardBuildError",
    "type_name",
    "make_global_state_check",
    "c_checker_kinds",
    "c_checker_of",
    "kept_check_fn",
    "source_path",
]

guards_log = logging.getLogger("framehook.translator.guards")

_CHECK_FN_FILENAME = "<framehook guards>"
_counter = itertools.count()

#: the runtime's C guard evaluator (API 2 guarantees it and its KINDS)
_GuardChecker = runtime.GuardChecker
#: build C checkers when every guard of a set is supported (set False to always generate Python)
USE_C_CHECKER = True

#: the guard kinds the installed runtime's C checker knows (a kind missing here is checked
#: in generated Python)
_C_KINDS = frozenset(_GuardChecker.KINDS)


def c_checker_kinds() -> frozenset:
    """The C checker's guard kinds with the installed runtime."""
    return _C_KINDS


class GuardBuildError(ValueError):
    """A guard cannot be built for the value its source holds."""


def _equality_guardable(value: Any, depth: int = 0) -> bool:
    """Values whose ``==`` is reliable and cheap enough to guard on."""
    if depth > 8:
        return False
    if value is None or value is Ellipsis or isinstance(value, (bool, int, float, complex, str, bytes)):
        return True
    if isinstance(value, (range, slice, np.dtype, np.generic)):
        return True
    if type(value) in (tuple, list, set, frozenset):
        return all(_equality_guardable(v, depth + 1) for v in value)
    if type(value) is dict:
        return all(_equality_guardable(k, depth + 1) and _equality_guardable(v, depth + 1) for k, v in value.items())
    return False


def _inlinable(value: Any) -> bool:
    """Numbers, None, booleans and tuples of them: written into the check function's source."""
    if value is None or isinstance(value, (bool, int)):
        return True
    if isinstance(value, float):
        return is_literal(value)
    if type(value) is tuple:
        return all(_inlinable(v) for v in value)
    return False


def _frozen_copy(value: Any) -> Any:
    """A private copy of a mutable container, so later mutation by the user cannot move the guard."""
    if type(value) is list:
        return [_frozen_copy(v) for v in value]
    if type(value) is dict:
        return {k: _frozen_copy(v) for k, v in value.items()}
    if type(value) is set:
        return set(value)
    return value


def _errstate_var() -> Any:
    """numpy's error-state context variable (numpy >= 2), or None."""
    try:
        from numpy._core import _ufunc_config

        return getattr(_ufunc_config, "_extobj_contextvar", None)
    except ImportError:  # pragma: no cover - numpy 1.x
        return None


def make_global_state_check() -> Callable[[], bool]:
    """A closure that is True while numpy's error state and guarded registered state
    equal their values now."""
    errvar = _errstate_var()
    token = errvar.get() if errvar is not None else None
    snapshot = GlobalStateContext.guarded_snapshot()
    errs = snapshot.pop("numpy.errstate", None)
    entries = registered_global_states()
    others = [(entries[name].getter, value) for name, value in snapshot.items()]
    geterr = np.geterr

    def check_global_state() -> bool:
        # the context variable keeps its object until the state changes: identity is the fast path
        if errvar is None or errvar.get() is not token:
            if geterr() != errs:
                return False
        for getter, value in others:
            if not states_equal(getter(), value):
                return False
        return True

    check_global_state.snapshot = dict(snapshot, **{"numpy.errstate": errs})  # type: ignore[attr-defined]
    # for the C checker: with nothing but numpy's error state to compare, the identity of the
    # context variable's value decides without calling Python
    check_global_state.fast_path = (errvar, token) if errvar is not None and not others else None  # type: ignore[attr-defined]
    return check_global_state


def c_checker_of(specs: List[Tuple[Any, ...]], f_globals: Any) -> Any:
    """The runtime's ``GuardChecker`` of a guard list, or None when it refuses it (globals
    that are not a dict, say: the Python form copes)."""
    try:
        return _GuardChecker(specs, f_globals if isinstance(f_globals, dict) else None, ndarray_type=np.ndarray)
    except (TypeError, ValueError) as e:
        guards_log.debug("guards compiled to Python, not the C checker: %s", e)
        return None


def global_state_c_spec(check: Callable[[], bool]) -> Tuple[Any, ...]:
    """The C checker's op for a ``make_global_state_check`` closure (an op, not an opcode)."""
    fast = check.fast_path  # type: ignore[attr-defined]
    return ("CONTEXTVAR_IS", fast[0], fast[1], check) if fast else ("CALL", check)  # not an opcode: a checker op


def same_object(value: Any) -> str:
    """An ID_MATCH's expected value, as its failure message words it."""
    return f"the same object ({type_name(type(value))} at {hex(id(value))})"


class CodePart:
    """One condition of the check function."""

    __slots__ = ("guard", "template", "expected", "actual", "c_spec")

    def __init__(
        self, guard: Guard, template: str, expected: str, actual: str, c_spec: Optional[Tuple[Any, ...]] = None
    ) -> None:
        self.guard = guard
        self.template = template  # condition with {v} (and {w}) for the source values
        self.expected = expected  # readable expected value
        self.actual = actual  # expression template for what was found instead
        self.c_spec = c_spec  # (kind, *args) of the C checker, _COVERED, or None: Python only

    def render(self, v: str, w: str = "") -> str:
        # plain replacement: only numbers are inlined, so no other braces can occur
        return self.template.replace("{v}", v).replace("{w}", w)


class GuardBuilder:
    """Turns guards into code parts; evaluates sources on the example frame for expected values."""

    def __init__(self, f_locals: Dict[str, Any], f_globals: Dict[str, Any]) -> None:
        self.f_locals = f_locals
        self.f_globals = f_globals
        self.scope: Dict[str, Any] = {"L": f_locals, "G": f_globals, "__builtins__": builtins}
        self.parts: List[CodePart] = []
        self.consts: Dict[str, Any] = {}
        self._const_names: Dict[int, str] = {}
        self.built_guards: List[Guard] = []  # in the order ``build`` was given them
        self._source: Optional[str] = None
        self._c_form: Any = None

    @classmethod
    def restored(
        cls,
        f_locals: Dict[str, Any],
        f_globals: Dict[str, Any],
        guards: List[Guard],
        parts: List["CodePart"],
        consts: Dict[str, Any],
        source: str,
    ) -> "GuardBuilder":
        """A builder holding parts built in another process (``guards/portable.py``), for the
        frame whose guards they are: ``build_check_fn`` takes it as built on this frame."""
        builder = cls(f_locals, f_globals)
        builder.built_guards = list(guards)
        builder.parts = parts
        builder.consts = consts
        builder._source = source
        return builder

    def python_source(self) -> str:
        """The Python form's source for the parts built so far (``___make_check_fn``)."""
        if self._source is None:
            self._source = _python_source(self.parts, list(self.consts))
        return self._source

    def c_checker(self) -> Optional[Tuple[Any, List[Tuple[Any, ...]], List[int]]]:
        """(the runtime's ``GuardChecker`` of the parts, its guard list, the first part of each
        C guard), or None when some part has no C form."""
        if self._c_form is None:
            found = _c_guards(self.parts) if _GuardChecker is not None else None
            form: Any = False
            if found is not None:
                checker = c_checker_of(found[0], self.f_globals)
                if checker is not None:
                    form = (checker, found[0], found[1])
            self._c_form = form
        return self._c_form or None

    def take_c_checker(self, checker: Any, specs: List[Tuple[Any, ...]], starts: List[int]) -> None:
        """Use ``checker``, made of these very parts already (a kept translation's), as ``c_checker``."""
        self._c_form = (checker, specs, starts)

    def build(self, guard: Guard) -> None:
        """Add the code parts of ``guard``."""
        guard.create(self)
        self.built_guards.append(guard)

    # ---- helpers
    def get(self, source: Source) -> Any:
        try:
            return read_value(source, self.f_locals, self.f_globals, self.scope)
        except Exception as e:
            raise GuardBuildError(f"cannot evaluate guard source {source.name()}: {type(e).__name__}: {e}") from e

    def const(self, obj: Any, inline: bool = True) -> str:
        """A closure name bound to ``obj`` (or, when ``inline``, a literal written out)."""
        if inline and _inlinable(obj):
            return repr(obj)
        key = id(obj)
        name = self._const_names.get(key)
        if name is None:
            name = f"___c{len(self._const_names)}"
            self._const_names[key] = name
            self.consts[name] = obj
        return name

    def _add(
        self, guard: Guard, template: str, expected: str, actual: str = "{v}", c: Optional[Tuple[Any, ...]] = None
    ) -> None:
        self.parts.append(CodePart(guard, template, expected, actual, c))

    def _export(self, guard: Guard, value: Any, kind: str) -> None:
        try:
            obj_ref: Any = weakref.ref(value)
        except TypeError:
            obj_ref = None
        cls_ref = weakref.ref(type(value))
        code = [p.render(guard.name, second_name(guard)) for p in self.parts if p.guard is guard]
        guard.code_list = None
        guard.set_export_info(kind, cls_ref, code, obj_ref)

    def _type_part(self, guard: Guard, t: type, c: Optional[Tuple[Any, ...]] = None) -> None:
        self._add(guard, f"type({{v}}) is {self.const(t)}", f"type {type_name(t)}", "type({v})", c or ("TYPE_MATCH", t))

    # ---- one method per guard kind (Guard.create_fn looks them up by kind name)
    def TYPE_MATCH(self, guard: Guard) -> None:
        value = self.get(guard.originating_source)
        self._type_part(guard, type(value))
        self._export(guard, value, "TYPE_MATCH")

    def ID_MATCH(self, guard: Guard) -> None:
        value = self.get(guard.originating_source)
        # a strong reference: the id of a dead object could be reused by a different one
        # never inline: an equal literal in the check function may be a different object
        self._add(guard, f"{{v}} is {self.const(value, inline=False)}", same_object(value), "{v}", ("ID_MATCH", value))
        self._export(guard, value, "ID_MATCH")

    def CONSTANT_MATCH(self, guard: Guard) -> None:
        value = self.get(guard.originating_source)
        if value is None or value is Ellipsis or value is NotImplemented or isinstance(value, bool):
            self._add(guard, f"{{v}} is {self.const(value)}", short_repr(value), c=("ID_MATCH", value))
            self._export(guard, value, "CONSTANT_MATCH")
        else:
            self.EQUALS_MATCH(guard)

    def EQUALS_MATCH(self, guard: Guard) -> None:
        value = self.get(guard.originating_source)
        if not _equality_guardable(value):
            raise GuardBuildError(
                f"EQUALS_MATCH on {guard.name}: values of type {type_name(type(value))} cannot be "
                "guarded by equality; use ID_MATCH or TYPE_MATCH"
            )
        self._type_part(guard, type(value))
        if isinstance(value, float) and math.isnan(value):
            self._add(guard, "{v} != {v}", "nan", c=("EQUALS_MATCH", math.nan))  # any float NaN
        else:
            frozen = _frozen_copy(value)
            self._add(guard, f"{{v}} == {self.const(frozen)}", short_repr(value), c=("EQUALS_MATCH", frozen))
        self._export(guard, value, "EQUALS_MATCH")

    def LENGTH_CHECK(self, guard: Guard) -> None:
        value = self.get(guard.originating_source)
        self._type_part(guard, type(value))
        n = len(value)
        self._add(guard, f"len({{v}}) == {n}", f"length {n}", "len({v})", ("LENGTH_CHECK", n))
        self._export(guard, value, "LENGTH_CHECK")

    def DICT_KEYS(self, guard: Guard) -> None:
        value = self.get(guard.originating_source)
        if not hasattr(value, "keys"):
            raise GuardBuildError(f"DICT_KEYS on {guard.name}: a {type_name(type(value))} has no keys()")
        keys = list(value.keys())
        self._type_part(guard, type(value))
        self._add(
            guard,
            f"list({{v}}.keys()) == {self.const(keys)}",
            f"keys {short_repr(keys)}",
            "list({v}.keys())",
            ("DICT_KEYS", tuple(keys)),
        )
        self._export(guard, value, "DICT_KEYS")

    def NDARRAY_MATCH(self, guard: Guard) -> None:
        value = self.get(guard.originating_source)
        if not isinstance(value, np.ndarray):
            raise GuardBuildError(
                f"NDARRAY_MATCH on {guard.name}: expected a numpy.ndarray, got {type_name(type(value))}"
            )
        dynamic = frozenset(guard.detail("dynamic_dims", ()) or ())
        bad = [d for d in dynamic if not (isinstance(d, int) and 0 <= d < value.ndim)]
        if bad:
            raise GuardBuildError(
                f"NDARRAY_MATCH on {guard.name}: dynamic dims {sorted(bad)} out of range for ndim {value.ndim}"
            )
        writeable = bool(value.flags.writeable)
        if not dynamic:
            contiguity = None
        elif value.flags.c_contiguous:
            contiguity = "C"
        elif value.flags.f_contiguous:
            contiguity = "F"
        else:
            contiguity = "neither"
        # one C guard checks all the parts below, reading numpy's array struct
        spec = {
            "type": type(value),
            "dtype": value.dtype,
            "shape": tuple(None if i in dynamic else n for i, n in enumerate(value.shape)),
            "strides": None if dynamic else tuple(value.strides),
            "contiguity": contiguity,
            "writeable": writeable,
        }
        self._type_part(guard, type(value), c=("NDARRAY_MATCH", spec))
        d = self.const(value.dtype)
        self._add(guard, f"({{v}}.dtype is {d} or {{v}}.dtype == {d})", f"dtype {value.dtype}", "{v}.dtype", _COVERED)
        if not dynamic:
            self._add(guard, f"{{v}}.shape == {value.shape!r}", f"shape {value.shape}", "{v}.shape", _COVERED)
            self._add(guard, f"{{v}}.strides == {value.strides!r}", f"strides {value.strides}", "{v}.strides", _COVERED)
        else:
            self._add(guard, f"{{v}}.ndim == {value.ndim}", f"ndim {value.ndim}", "{v}.ndim", _COVERED)
            for i, n in enumerate(value.shape):
                if i not in dynamic:
                    self._add(
                        guard, f"{{v}}.shape[{i}] == {n}", f"size {n} in dimension {i}", f"{{v}}.shape[{i}]", _COVERED
                    )
            if contiguity == "C":
                self._add(guard, "{v}.flags.c_contiguous", "a C-contiguous array", "{v}.flags.c_contiguous", _COVERED)
            elif contiguity == "F":
                self._add(
                    guard, "{v}.flags.f_contiguous", "a Fortran-contiguous array", "{v}.flags.f_contiguous", _COVERED
                )
            else:
                self._add(
                    guard,
                    "not ({v}.flags.c_contiguous or {v}.flags.f_contiguous)",
                    "a non-contiguous array",
                    "{v}.strides",
                    _COVERED,
                )
        self._add(
            guard,
            "{v}.flags.writeable" if writeable else "not {v}.flags.writeable",
            "writeable" if writeable else "read-only",
            "{v}.flags.writeable",
            _COVERED,
        )
        self._export(guard, value, "NDARRAY_MATCH")

    def GLOBAL_STATE(self, guard: Guard) -> None:
        check = make_global_state_check()
        self._add(
            guard,
            f"{self.const(check)}()",
            "numpy's error state and registered global state unchanged",
            "___global_state_now()",
            global_state_c_spec(check),
        )
        guard.code_list = None
        guard.set_export_info("GLOBAL_STATE", None, [f"{self.const(check)}()"], None)

    def DUPLICATE_INPUT(self, guard: Guard) -> None:
        value = self.get(guard.originating_source)
        other = self.get(guard.detail("other"))
        if value is not other:
            raise GuardBuildError(
                f"DUPLICATE_INPUT: {guard.name} and {guard.detail('other').name()} are not the same object"
            )
        other_path = source_path(guard.detail("other"))
        self._add(
            guard,
            "{v} is {w}",
            f"the same object as {guard.detail('other').name()}",
            "{v}",
            ("SAME_AS", other_path) if other_path is not None else None,
        )
        self._export(guard, value, "DUPLICATE_INPUT")

    def DISTINCT_INPUT(self, guard: Guard) -> None:
        value = self.get(guard.originating_source)
        other = self.get(guard.detail("other"))
        if value is other:
            raise GuardBuildError(
                f"DISTINCT_INPUT: {guard.name} and {guard.detail('other').name()} are the same object"
            )
        # a runtime whose checker lacks NOT_SAME_AS leaves the whole entry to the Python function
        other_path = source_path(guard.detail("other")) if "NOT_SAME_AS" in _C_KINDS else None
        self._add(
            guard,
            "{v} is not {w}",
            f"a different object from {guard.detail('other').name()}",
            "{v}",
            ("NOT_SAME_AS", other_path) if other_path is not None else None,
        )
        self._export(guard, value, "DISTINCT_INPUT")


# ------------------------------------------------------------------ compilation

CheckFn = Callable[[Dict[str, Any]], bool]


def _global_state_now() -> Dict[str, Any]:
    return GlobalStateContext.guarded_snapshot()


class _Emitter:
    """Writes the body of the fast check function, reading each guarded source once."""

    def __init__(self, uses: Dict[Source, int]) -> None:
        self.lines: List[str] = []
        self.var_of: Dict[Source, str] = {}
        self.uses = uses

    def expr(self, source: Source) -> str:
        var = self.var_of.get(source)
        if var is not None:
            return var
        if isinstance(source, ChainedSource):
            return source.format_with(self.expr(source.base))
        return source.name()

    def value(self, source: Source) -> str:
        if isinstance(source, GlobalStateSource):
            return ""
        var = self.var_of.get(source)
        if var is None:
            if self.uses.get(source, 0) <= 1:
                return self.expr(source)  # read once: a local would only add a store and a load
            var = f"v{len(self.var_of)}"
            self.lines.append(f"        {var} = {self.expr(source)}")
            self.var_of[source] = var
        return var


class _PythonForm:
    """The guard set as generated Python source, compiled on first use: the runtime calls the
    C checker when there is one, so the Python form is then needed only to word failures
    (``fail_reason``), not on the first call of every translated frame."""

    __slots__ = ("source", "filename", "f_globals", "consts", "_compiled")

    def __init__(self, source: str, filename: str, f_globals: Dict[str, Any], consts: List[Any]) -> None:
        self.source = source
        self.filename = filename
        self.f_globals = f_globals
        self.consts = consts
        self._compiled: Optional[Tuple[CheckFn, List[Callable[[Dict[str, Any]], Any]]]] = None

    def compiled(self) -> Tuple[CheckFn, List[Callable[[Dict[str, Any]], Any]]]:
        """The fast check function and one readable condition per code part."""
        if self._compiled is None:
            namespace: Dict[str, Any] = {"__builtins__": builtins}
            exec(compile(self.source, self.filename, "exec"), namespace)  # noqa: S102
            check, verbose_factory = namespace["___make_check_fn"](self.f_globals, *self.consts)
            self._compiled = (check, verbose_factory())
        return self._compiled

    def check(self, f_locals: Dict[str, Any]) -> bool:
        return self.compiled()[0](f_locals)


def _python_source(parts: List[CodePart], const_names: List[str]) -> str:
    """``___make_check_fn(G, *consts)`` returning the check function and ``___verbose``."""
    uses: Dict[Source, int] = {}
    for part in parts:
        sources = [part.guard.originating_source, part.guard.detail("other")]
        for src in sources:
            while isinstance(src, Source):
                uses[src] = uses.get(src, 0) + (2 if src is not sources[0] and src is not sources[1] else 1)
                src = src.base if isinstance(src, ChainedSource) else None
    emitter = _Emitter(uses)
    for part in parts:
        v = emitter.value(part.guard.originating_source)
        other = part.guard.detail("other")
        w = emitter.value(other) if isinstance(other, Source) else ""
        emitter.lines.append(f"        if not ({part.render(v, w)}): return False")
    params = ", ".join(["G"] + const_names)
    body = "\n".join(emitter.lines) or "        pass"
    verbose = ",\n".join(f"        lambda L: ({p.render(p.guard.name, second_name(p.guard))})" for p in parts)
    return (
        f"def ___make_check_fn({params}):\n"
        f"    def ___check_fn(L):\n"
        f"      try:\n"
        f"{body}\n"
        f"      except Exception:\n"
        f"        return False\n"
        f"      return True\n"
        f"    def ___verbose():\n"
        f"      return [\n{verbose}\n      ]\n"
        f"    return ___check_fn, ___verbose\n"
    )


def build_check_fn(
    guards: Iterable[Guard],
    f_locals: Dict[str, Any],
    f_globals: Dict[str, Any],
    *,
    guard_export_fn: Optional[Callable[[List[Guard]], Any]] = None,
    use_c: Optional[bool] = None,
    built: Optional["GuardBuilder"] = None,
) -> CheckFn:
    """Compile ``guards`` into one check function of ``f_locals`` (see the module docstring).

    ``use_c``: True/None (default: ``USE_C_CHECKER``) builds the runtime's C ``GuardChecker``
    when every guard has a C form, False always the generated Python function. Either has
    ``fail_reason``, ``fail_reasons``, ``guards``, ``code_parts`` (readable conditions; the
    guard of each in ``code_part_guards``), ``source`` (the Python
    source, also for the C checker), ``python_check_fn`` and ``c_guards`` (the C guard list,
    or None). With the C checker the Python source is compiled only when something needs it
    (``fail_reason``, ``fail_reasons``, ``python_check_fn``)."""
    ordered = sorted(set(guards), key=Guard.sort_key)
    if built is not None and built.built_guards == ordered:  # built on this very frame already
        builder = built
    else:
        builder = GuardBuilder(f_locals, f_globals)
        for guard in ordered:
            builder.build(guard)

    parts = builder.parts
    consts = dict(builder.consts)
    source = builder.python_source()
    form = _PythonForm(source, f"{_CHECK_FN_FILENAME[:-1]} #{next(_counter)}>", f_globals, list(consts.values()))

    c_form = builder.c_checker() if (use_c if use_c is not None else USE_C_CHECKER) else None
    checker: Any = c_form[0] if c_form is not None else None
    starts = c_form[2] if c_form is not None else []

    def scan_all(f_locals_now: Dict[str, Any], start: int, first_only: bool) -> List[str]:
        verbose = form.compiled()[1]
        found: List[str] = []
        for part, fn in zip(parts[start:], verbose[start:]):
            try:
                ok = bool(fn(f_locals_now))
            except Exception as e:
                found.append(
                    f"{part.guard.kind.name}: {part.guard.name} -- expected {part.expected}, "
                    f"but checking raised {type(e).__name__}: {e}"
                )
            else:
                if ok:
                    continue
                found.append(
                    f"{part.guard.kind.name}: {part.guard.name} -- expected {part.expected}, "
                    f"got {_describe_actual(part, f_locals_now, f_globals, consts)}"
                )
            if first_only:
                break
        return found

    def scan(f_locals_now: Dict[str, Any], start: int) -> Optional[str]:
        found = scan_all(f_locals_now, start, True)
        return found[0] if found else None

    def fail_reasons(f_locals_now: Dict[str, Any]) -> List[str]:
        """Every failing guard (not only the first), each as ``fail_reason`` words it."""
        return scan_all(f_locals_now, 0, False)

    def fail_reason(f_locals_now: Dict[str, Any]) -> Optional[str]:
        """The first failing guard as ``KIND: expr -- expected X, got Y``; None if all pass."""
        if checker is None:
            return scan(f_locals_now, 0)
        index = checker.first_failure(f_locals_now)
        if index is None:
            return None
        # the C guard covers parts starts[index]...; the earlier ones held
        reason = scan(f_locals_now, starts[index])
        if reason is None:  # pragma: no cover - the two paths disagree (state changed in between)
            part = parts[starts[index]]
            reason = (
                f"{part.guard.kind.name}: {part.guard.name} -- expected {part.expected}, "
                "rejected by the C guard checker"
            )
        return reason

    if checker is not None:
        check_fn: Any = checker
        check_fn.python_check_fn = form.check  # compiles on its first call
    else:
        check_fn = form.compiled()[0]  # the runtime calls it: compile now
        check_fn.python_check_fn = check_fn
    check_fn.fail_reason = fail_reason
    check_fn.fail_reasons = fail_reasons
    check_fn.c_guards = c_form[1] if c_form is not None else None
    check_fn.guards = ordered  # type: ignore[attr-defined]
    check_fn.code_parts = ReadableParts(parts, consts)  # type: ignore[attr-defined]
    # which guard each code part checks (explain() lists the parts guard by guard)
    check_fn.code_part_guards = [p.guard for p in parts]  # type: ignore[attr-defined]
    check_fn.source = source  # type: ignore[attr-defined]
    if guards_log.isEnabledFor(logging.DEBUG):
        guards_log.debug("check function:\n%s", source)
    elif guards_log.isEnabledFor(logging.INFO):
        guards_log.info("guards:\n%s", "\n".join(f"  {c}" for c in check_fn.code_parts))  # type: ignore[attr-defined]
    if guard_export_fn is not None:
        guard_export_fn(ordered)
    return check_fn


def kept_check_fn(
    checker: Any, specs: List[Tuple[Any, ...]], source: str, restore: Callable[[], "GuardBuilder"]
) -> CheckFn:
    """A kept translation's C ``checker`` as its entry's check function, with what
    ``build_check_fn`` gives a check function made on first use from ``restore()`` (the
    builder of its guards, whose ``c_checker`` is ``checker``): a loaded entry's first call
    needs its guards checked, not their readable parts, and most entries never fail a guard.
    A builder that cannot be restored (a function its guards name was edited since) leaves
    failures described as the C checker's alone."""
    done: List[Any] = []
    lock = threading.Lock()  # another thread asking meanwhile waits for the attributes

    def full() -> Any:
        with lock:
            if not done:
                done.append(True)
                try:
                    builder = restore()
                except Exception as e:  # noqa: BLE001 - the guards still check; only their words are lost
                    _without_parts(checker, f"its guards could not be restored: {type(e).__name__}: {e}")
                else:  # sets every attribute on ``checker`` (the builder's C checker) anew
                    build_check_fn(builder.built_guards, builder.f_locals, builder.f_globals, use_c=True, built=builder)
        return checker

    checker.fail_reason = lambda f_locals: full().fail_reason(f_locals)
    checker.fail_reasons = lambda f_locals: full().fail_reasons(f_locals)
    checker.python_check_fn = lambda f_locals: full().python_check_fn(f_locals)
    checker.c_guards = specs
    checker.guards = Deferred(lambda: full().guards)
    checker.code_parts = Deferred(lambda: full().code_parts)
    checker.code_part_guards = Deferred(lambda: full().code_part_guards)
    checker.source = source
    return checker  # type: ignore[no-any-return]


def _without_parts(checker: Any, why: str) -> None:
    def fail_reasons(f_locals: Dict[str, Any]) -> List[str]:
        return [] if checker(f_locals) else [f"a guard of a translation loaded from the cache failed ({why})"]

    checker.fail_reasons = fail_reasons
    checker.fail_reason = lambda f_locals: next(iter(fail_reasons(f_locals)), None)
    checker.python_check_fn = checker
    checker.guards = checker.code_parts = checker.code_part_guards = []


def _describe_actual(
    part: CodePart, f_locals: Dict[str, Any], f_globals: Dict[str, Any], consts: Dict[str, Any]
) -> str:
    if part.guard.kind is GuardKind.GLOBAL_STATE:
        now = _global_state_now()
        check = next(v for v in consts.values() if callable(v) and hasattr(v, "snapshot"))
        changed = sorted(n for n in now if not states_equal(now[n], check.snapshot.get(n)))
        return "changed: " + ", ".join(f"{n}={short_repr(now[n])}" for n in changed)
    scope = {"L": f_locals, "G": f_globals, "__builtins__": builtins, **consts}
    try:
        actual = eval(part.actual.replace("{v}", part.guard.name), scope)  # noqa: S307
    except Exception as e:
        return f"<{type(e).__name__}: {e}>"
    if isinstance(actual, type):
        return f"type {type_name(actual)}"
    if isinstance(actual, np.dtype):
        return f"dtype {actual}"
    return short_repr(actual)
