"""Replaying a record on the running interpreter and comparing every mode with it."""

from __future__ import annotations

import builtins
import contextlib
import importlib
import os
import platform
import types
from dataclasses import dataclass, field
from typing import Any, Callable, Iterable, Iterator

from . import codeloc, trust
from .codechoice import BYTECODE_DIFFERS as BYTECODE_DIFFERS  # what code_from and note say, re-exported
from .codechoice import FROM_SOURCE as FROM_SOURCE
from .codechoice import FROM_TRUSTED as FROM_TRUSTED
from .codechoice import FROM_VERIFIED as FROM_VERIFIED
from .codechoice import choose_code
from .codec import EMPTY_CELL, Decoder, Encoder, Sources
from .compare import diff_outcomes
from .errors import RecordError
from .limits import DEFAULT, Limits
from .model import Record
from .modes import known as modes_known
from .modes import registered, run_mode
from .reader import file_name, load
from .recorder import encode_outcome
from .text import printable
from .trust import ReplayPlan


@dataclass
class ModeResult:
    mode: str
    status: str  # "match" | "mismatch" | "nondeterministic" | "skip" | "error"
    reason: str = ""
    diffs: list = field(default_factory=list)
    notes: list = field(default_factory=list)
    intercepted: int | None = None
    decisions: dict | None = None


@dataclass
class ReplayResult:
    path: str | None
    label: str
    code_from: str  # FROM_SOURCE, FROM_VERIFIED or FROM_TRUSTED (see codechoice)
    recorded_on: str
    replayed_on: str
    modes: list = field(default_factory=list)
    missing: list = field(default_factory=list)
    bytecode_note: str | None = None  # why the recorded bytecode was not used, when it was not
    plan: ReplayPlan = field(default_factory=ReplayPlan)  # what the replay imported and bound

    @property
    def ok(self) -> bool:
        """At least one mode ran, and every mode that ran matched."""
        return self.verdict == "MATCH"

    @property
    def match(self) -> bool:
        return self.ok

    @property
    def verdict(self) -> str:
        """MATCH; MISMATCH (a mode differed or failed); NONDETERMINISTIC (a mode differed,
        and so did a second replay in that mode from the first: the code's outcome is not
        set by what the record holds); or NOT RUN (every mode was skipped)."""
        if any(m.status in ("mismatch", "error") for m in self.modes):
            return "MISMATCH"
        if any(m.status == "nondeterministic" for m in self.modes):
            return "NONDETERMINISTIC"
        if not any(m.status == "match" for m in self.modes):
            return "NOT RUN"
        return "MATCH"

    @property
    def imports(self) -> list[str]:
        """Modules the replay's values imported (see ReplayPlan)."""
        return self.plan.imports

    @property
    def bindings(self) -> list[str]:
        """Names bound to other modules' objects, as ``"name -> module.qualname"``."""
        return self.plan.bindings

    def mode(self, name: str) -> ModeResult | None:
        return next((m for m in self.modes if m.mode == name), None)

    def summary(self) -> str:
        """One line; every text that comes from the record is escaped (see text.printable)."""
        verdict = self.verdict
        parts = ", ".join(f"{printable(m.mode)} {m.status}" for m in self.modes)
        where = printable(self.path or self.label)
        line = (
            f"{verdict:8} {where} [{printable(self.label)}; recorded on {printable(self.recorded_on)}, "
            f"code from {self.code_from} on {self.replayed_on}] {parts}"
        )
        if self.bytecode_note:
            line += f"; {printable(self.bytecode_note)}"
        if self.plan.imports:
            line += f"; imports: {printable(', '.join(self.plan.imports))}"
        if self.missing:
            line += f"; missing values: {printable(', '.join(self.missing[:5]))}"
        return line

    def report(self, *, with_plan: bool = True) -> str:
        """The summary line, then what the replay imported and bound (unless ``with_plan``
        is False), then every difference and skip reason, one per line."""
        lines = [self.summary()]
        if with_plan:
            lines.extend(f"  {printable(text)}" for text in self.plan.lines())
        for m in self.modes:
            mode = printable(m.mode)
            if m.status in ("mismatch", "error", "nondeterministic"):
                lines.append(f"  {mode}: {printable(m.reason)}")
                lines.extend(f"    {printable(d)}" for d in m.diffs)
            elif m.status == "skip":
                lines.append(f"  {mode}: skipped: {printable(m.reason)}")
            lines.extend(f"    note: {printable(n)}" for n in m.notes)
        return "\n".join(lines)


class Rebuilder:
    """Turns a record back into a callable plus arguments, fresh for every mode; which
    code runs is codechoice's decision, made once."""

    def __init__(
        self,
        rec: Record,
        *,
        trusted: bool = False,
        prefer_source: bool = False,
        trust_bytecode: bool = False,
        limits: Limits = DEFAULT,
    ) -> None:
        self.rec = rec
        self.trusted = trusted
        self.shared_ids = rec.format[0] >= 2
        choice = choose_code(rec, prefer_source=prefer_source, trust_bytecode=trust_bytecode, limits=limits)
        self.code, self.code_from, self.note = choice.code, choice.code_from, choice.note
        self.sources = choice.sources
        self.codes: list[types.CodeType] = [self.code]
        self.classes: list[type] = []  # classes rebuilt from their recorded statements
        self.patch_values: list[tuple[str, str, Any]] = []  # of the latest build
        self.plan = trust.plan(rec, self.code, self.sources.find)
        limits.check("values", self.plan.values, rec.path)

    def build(self) -> tuple[types.FunctionType, tuple, dict, list]:
        """(function, args, kwargs, missing values) with every value decoded afresh."""
        rec = self.rec
        namespace: dict = {"__name__": rec.code["module"] or "__framehook_replay__", "__builtins__": builtins}
        code = self.code
        cells = tuple(types.CellType() for _ in code.co_freevars)
        fn = types.FunctionType(code, namespace, code.co_name, None, cells or None)
        fn.__qualname__ = rec.code["qualname"]
        namespaces: dict[str, dict] = {}
        decoders: list[Decoder] = []

        def decoder() -> Decoder:
            # format 2: one decoder, so that ids run on across the trees as they were encoded
            if self.shared_ids and decoders:
                return decoders[0]
            dec = Decoder(trusted=self.trusted, function_builder=self._nested(namespace, namespaces), target=fn)
            dec.class_builder = self._classes(namespace, namespaces)
            decoders.append(dec)
            return dec

        def decode_globals() -> None:
            for name in self.plan.globals_used:  # never a global the code does not name
                namespace[name] = decoder().decode(rec.globals[name])
            for name, tree in rec.builtins.items():
                value = decoder().decode(tree)
                if getattr(builtins, name, None) is not value:
                    namespace[name] = value  # a builtin shadowed or absent here: keep the recorded one

        if not self.shared_ids:
            decode_globals()
        fn.__defaults__ = decoder().decode(rec.function["defaults"])
        fn.__kwdefaults__ = decoder().decode(rec.function["kwdefaults"])
        self._fill_cells(code, cells, rec.function["closure"], decoder())
        args = decoder().decode(rec.call["args"])
        kwargs = decoder().decode(rec.call["kwargs"])
        if self.shared_ids:
            decode_globals()
        # module attributes the test had replaced when the call ran, each a tree of its own
        self.patch_values = [(module, attr, decoder().sub().decode(tree)) for module, attr, tree in rec.patches]
        missing: list[str] = []
        for dec in decoders:
            missing.extend(item for item in dec.missing if item not in missing)
        return fn, args, kwargs, missing

    def restore_state(self) -> None:
        """Put the global random states back to what they were before the recorded call."""
        state = self.rec.state
        if not state:
            return
        dec = Decoder()
        if "random" in state:
            import random

            random.setstate(dec.decode(state["random"]))
        if "numpy.random" in state:
            import numpy.random

            numpy.random.set_state(dec.decode(state["numpy.random"]))

    @staticmethod
    def _fill_cells(code: types.CodeType, cells: tuple, closure: list, dec: Decoder) -> None:
        by_name = dict(zip(code.co_freevars, cells))
        for var, tree in closure:
            value = dec.decode(tree)
            if var in by_name and value is not EMPTY_CELL:
                by_name[var].cell_contents = value

    def _module_namespace(self, module: str | None, namespace: dict, namespaces: dict[str, dict]) -> dict:
        """The recorded function's namespace for its own module, else one per module name."""
        if module is None or module == self.rec.code["module"]:
            return namespace
        return namespaces.setdefault(module, {"__name__": module, "__builtins__": builtins})

    def _classes(self, namespace: dict, namespaces: dict[str, dict]) -> Any:
        def build_class(tree: dict, dec: Decoder) -> Any:
            """Run the recorded class statement (it is in the record: the plan lists it)
            in its module's namespace, with the globals it names."""
            index = self.sources.index(tree["src"])
            ns = self._module_namespace(tree["module"], namespace, namespaces)
            local = "bases" in tree
            if local:  # a class made inside a function: its body alone, as that function ran it
                body = _class_body(index, tree["qualname"])
                bases = dec.decode(tree["bases"])
                cells = {var: dec.decode(value) for var, value in tree["cells"]}
                wanted = trust.names_of(body) if body is not None else set()
            else:
                wanted = trust.names_of(index.module_code)
            for name, value in tree["globals"]:
                if name in wanted:
                    ns[name] = dec.decode(value)
            try:
                if local:
                    if body is None or set(body.co_freevars) - set(cells):
                        raise LookupError("its class body is not in the recorded source")
                    closure = tuple(types.CellType(cells[var]) for var in body.co_freevars)
                    run_body = types.FunctionType(body, ns, tree["name"], None, closure or None)
                    cls: Any = builtins.__build_class__(run_body, tree["name"], *bases)
                else:
                    exec(index.module_code, ns)
                    cls = ns[tree["qualname"].split(".")[0]]
                    for part in tree["qualname"].split(".")[1:]:
                        cls = getattr(cls, part)
            except Exception as exc:  # the class statement raised: a named placeholder
                cls = dec._missing_from(
                    tree["qualname"], "class", f"its class statement raised {type(exc).__name__}: {exc}"
                )
            dec.memo[tree["id"]] = cls
            if isinstance(cls, type):
                self.classes.append(cls)
            return cls

        return build_class

    def _nested(self, namespace: dict, namespaces: dict[str, dict]) -> Any:
        def build_function(tree: dict, dec: Decoder) -> Any:
            code = self.sources.locate(tree)
            if tree["flags"] and not code.co_flags & tree["flags"]:
                code = code.replace(co_flags=code.co_flags | tree["flags"])
            self.codes.append(code)
            module = tree.get("module")
            ns = self._module_namespace(module, namespace, namespaces)
            cells = tuple(types.CellType() for _ in code.co_freevars)
            fn = types.FunctionType(code, ns, tree["name"], None, cells or None)
            fn.__qualname__ = tree["qualname"]
            if module is not None:
                fn.__module__ = module
            dec.memo[tree["id"]] = fn  # before the closure: it may refer to fn itself
            fn.__defaults__ = dec.decode(tree["defaults"])
            fn.__kwdefaults__ = dec.decode(tree["kwdefaults"])
            self._fill_cells(code, cells, tree["closure"], dec)
            wanted = trust.names_of(code)
            for name, value in tree.get("globals", ()):
                if name in wanted:  # like the recorded function's: only the names it uses
                    ns[name] = dec.decode(value)
            return fn

        return build_function


def _encode_outcome(builder: Rebuilder, fn: Any, outcome: Any, args: tuple, kwargs: dict, trusted: bool) -> dict:
    rec = builder.rec
    # the rules of the record's own format, so that both sides encode alike
    sources = Sources(None, None) if rec.format[0] >= 2 else None
    rebuilt = {id(code) for code in builder.codes} | {id(cls) for cls in builder.classes}
    rebuilt |= builder.sources.compiled_code_ids()

    def trees(obj: Any, name: str) -> Any:
        # Same source file name as at recording, so same-file functions encode alike.
        enc = Encoder(source_file=rec.code["filename"], target=fn, allow_pickle=trusted, sources=sources)
        enc.rebuilt = rebuilt
        return enc.encode(obj, name)

    return encode_outcome(outcome, args, kwargs, trees)


def _rebuild(rec: Record, trusted: bool, prefer_source: bool, trust_bytecode: bool, limits: Limits | None) -> Rebuilder:
    """The Rebuilder of ``rec``; an interpreter giving up while rebuilding is a RecordError."""
    try:
        return Rebuilder(
            rec,
            trusted=trusted,
            prefer_source=prefer_source,
            trust_bytecode=trust_bytecode,
            limits=DEFAULT if limits is None else limits,
        )
    except (RecursionError, MemoryError) as exc:
        raise RecordError(f"cannot rebuild the recorded code: {type(exc).__name__}: {exc}", rec.path) from None


def replay_record(
    rec: Record,
    *,
    modes: Iterable[str] | None = None,
    trusted: bool = False,
    prefer_source: bool = False,
    trust_bytecode: bool = False,
    limits: Limits | None = None,
    show: Callable[[ReplayPlan], None] | None = None,
) -> ReplayResult:
    """Replay an already loaded record through each mode; mismatches are reported, not raised.

    ``modes`` defaults to the standard ones (a mode whose package is absent is reported as
    skipped, naming the package) and every other mode an installed package registers; a
    name that is neither raises ValueError before anything runs. ``trusted`` allows
    pickle values. The code run is compiled from the recorded source;
    ``prefer_source`` skips even comparing the recorded bytecode with it, and
    ``trust_bytecode`` runs the recorded bytecode (after static checks) when it differs
    from the source or there is no source (see FORMAT.md, "Which code runs").
    ``limits`` bounds the source compiled and the values decoded (see Limits).
    ``show`` is called with the ReplayPlan (what will be imported and bound) after the
    code is compiled and before any value is decoded or any code runs; raising from it
    stops the replay.
    Raises SourceUnavailableError (UntrustedBytecodeError, InvalidBytecodeError,
    NewerPythonError, SourceLimitError) when the code cannot be rebuilt on this
    interpreter, and RecordError for any other reason the record cannot be replayed.
    """
    entry_points = registered()
    known = modes_known(entry_points)
    if modes is None:
        modes = known
    else:
        modes = [modes] if isinstance(modes, str) else list(modes)
        unknown = [m for m in modes if m not in known]
        if unknown:
            raise ValueError(f"modes: unknown mode {unknown[0]!r}; expected some of {', '.join(known)}")
    builder = _rebuild(rec, trusted, prefer_source, trust_bytecode, limits)
    if show is not None:
        show(builder.plan)
    result = ReplayResult(
        path=rec.path,
        label=rec.name,
        code_from=builder.code_from,
        recorded_on=str(rec.python.get("version")),
        replayed_on=platform.python_version(),
        bytecode_note=builder.note,
        plan=builder.plan,
    )
    cross = not codeloc.same_interpreter(rec.python)
    for mode in modes:
        try:
            first = _replay_once(builder, mode, entry_points, trusted)
        except _ModeFailed as failed:
            result.modes.append(failed.result)
            continue
        run, replayed, missing = first
        for item in missing:
            if item not in result.missing:
                result.missing.append(item)
        if run.skip is not None:
            result.modes.append(ModeResult(mode, "skip", run.skip))
            continue
        diffs, notes = diff_outcomes(rec.outcome, replayed, cross_version=cross)
        diffs = run.problems + diffs
        status = "mismatch" if diffs else "match"
        reason = ""
        if diffs and not missing and not run.problems:
            # the same replay again: when the two disagree, what the record holds does not
            # decide the outcome (time, addresses, a random source it does not restore)
            try:
                _, again, _ = _replay_once(builder, mode, entry_points, trusted)
                unstable, _ = diff_outcomes(replayed, again, cross_version=False)
            except _ModeFailed:
                unstable = []
            if unstable:
                status = "nondeterministic"
                reason = f"two replays here differ from each other ({unstable[0]})"
        if status == "mismatch":
            reason = f"{len(diffs)} difference(s) from the recorded outcome"
            if missing:
                reason += f" (values missing from the record: {', '.join(missing[:3])})"
        result.modes.append(ModeResult(mode, status, reason, diffs, notes, run.intercepted, run.decisions))
    return result


def _class_body(index: codeloc.CodeIndex, qualname: str) -> types.CodeType | None:
    key = codeloc.qualname_key(qualname)
    bodies = [code for (k, _), codes in index.entries.items() if k == key for code in codes]
    return bodies[0] if len(bodies) == 1 else None


@contextlib.contextmanager
def _patched(patches: list) -> Iterator[None]:
    """Set the module attributes the test had replaced, for the call only."""
    saved = []
    try:
        for module_name, attr, value in patches:
            module = importlib.import_module(module_name)
            saved.append((module, attr, module.__dict__.get(attr, _ABSENT)))
            setattr(module, attr, value)
        yield
    finally:
        for module, attr, old in reversed(saved):
            if old is _ABSENT:
                delattr(module, attr)
            else:
                setattr(module, attr, old)


_ABSENT = object()


class _ModeFailed(Exception):
    def __init__(self, result: ModeResult) -> None:
        self.result = result


def _replay_once(builder: Rebuilder, mode: str, entry_points: dict, trusted: bool) -> tuple[Any, dict, list]:
    """Decode afresh, restore the random states, run one mode: (run, its encoded outcome,
    values missing from the record)."""
    rec = builder.rec
    try:
        fn, args, kwargs, missing = builder.build()
    except RecordError as exc:
        raise _ModeFailed(ModeResult(mode, "error", exc.reason)) from None
    except (RecursionError, MemoryError) as exc:
        raise _ModeFailed(ModeResult(mode, "error", f"decoding failed: {type(exc).__name__}")) from None
    try:
        builder.restore_state()
        with _patched(builder.patch_values):
            run = run_mode(mode, fn, args, kwargs, rec.code["kind"], entry_points)
    except Exception as exc:  # a broken mode (not the replayed code) is an error
        raise _ModeFailed(ModeResult(mode, "error", f"{mode} mode failed: {type(exc).__name__}: {exc}")) from None
    if run.skip is not None:
        return run, {}, missing
    return run, _encode_outcome(builder, fn, run.outcome, args, kwargs, trusted), missing


def replay(
    filename: "str | os.PathLike",
    *,
    modes: Iterable[str] | None = None,
    trusted: bool = False,
    prefer_source: bool = False,
    trust_bytecode: bool = False,
    limits: Limits | None = None,
    show: Callable[[ReplayPlan], None] | None = None,
) -> ReplayResult:
    """Load ``filename`` strictly and replay it through every mode (see replay_record).

    ``limits`` raises or lowers the decoding limits (see Limits and FORMAT.md); ``show``
    sees the ReplayPlan before anything runs.

    Raises RecordError (with the file name) when the file cannot be read or its code
    cannot be rebuilt here; never raises because an outcome differs.
    """
    rec = load(file_name("replay(filename)", filename), trusted=trusted, limits=limits)
    return replay_record(
        rec,
        modes=modes,
        trusted=trusted,
        prefer_source=prefer_source,
        trust_bytecode=trust_bytecode,
        limits=limits,
        show=show,
    )


def plan(
    filename: "str | os.PathLike",
    *,
    trusted: bool = False,
    prefer_source: bool = False,
    trust_bytecode: bool = False,
    limits: Limits | None = None,
) -> ReplayPlan:
    """What replaying ``filename`` would import and bind, without decoding a value or
    running any of its code (the source is compiled, not executed)."""
    rec = load(file_name("plan(filename)", filename), trusted=trusted, limits=limits)
    return _rebuild(rec, trusted, prefer_source, trust_bytecode, limits).plan
