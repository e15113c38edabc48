"""Which code a replay runs: the one decision, made before any value is decoded.

``choose_code(record)`` takes a loaded record and returns the code object to run, where it
came from (``code_from``), why the recorded bytecode was not used when it was not
(``note``), and the record's compiled sources, where the functions its values hold are
found. Source first: the code that runs is compiled from the recorded source. On the
recording interpreter the recorded (marshalled) code is compared with that compilation;
the marshalled code itself runs only with ``trust_bytecode=True``, after bytecheck's
static checks, when it differs from the source or there is no source (FORMAT.md, "Which
code runs").
"""

from __future__ import annotations

import platform
import types
from dataclasses import dataclass

from . import bytecheck, codeloc, driver
from .errors import RecordFormatError, SourceUnavailableError, UntrustedBytecodeError
from .limits import DEFAULT, Limits
from .model import Record

# What ReplayResult.code_from says about the code that ran.
FROM_SOURCE = "source"
FROM_VERIFIED = "marshal (verified against source)"
FROM_TRUSTED = "marshal (trusted, validated)"
BYTECODE_DIFFERS = "the recorded bytecode differs from the compilation of its source and was not run"


class RecordSources:
    """A record's sources, each compiled alone (never executed) at its own line numbers
    when first needed: ``code.source`` (number None) and the numbered ``sources``."""

    def __init__(self, rec: Record, limits: Limits) -> None:
        self.rec = rec
        self.limits = limits
        self._compiled: dict[int | None, codeloc.CodeIndex] = {}

    def index(self, src: int | None = None) -> codeloc.CodeIndex:
        if src not in self._compiled:
            rec = self.rec
            if src is None:
                text, filename, line = rec.code["source"], rec.code["filename"], rec.code.get("source_line", 1)
            else:
                item = rec.sources[src]
                text, filename, line = item["text"], item["filename"], item["line"]
            if text is None:
                raise SourceUnavailableError("nested function needs the recorded source, which is absent", rec.path)
            self._compiled[src] = codeloc.compile_source(text, filename, rec.path, self.limits, first_line=line)
        return self._compiled[src]

    def compiled_code_ids(self) -> set[int]:
        """The ids of every code object compiled from the record so far (what the replayed
        code can make: functions and classes replay encodes by value without a file)."""
        return {id(code) for index in self._compiled.values() for codes in index.entries.values() for code in codes}

    def locate(self, tree: dict) -> types.CodeType:
        """The code of a ``function`` node, or SourceUnavailableError naming it."""
        return codeloc.locate(
            self.index(tree.get("src")), tree["qualname"], tree["firstlineno"], tree["name"], self.rec.path
        )

    def find(self, tree: dict) -> types.CodeType | None:
        """The code of a ``function`` node, or None (building it then names the problem)."""
        if tree.get("src") is None and self.rec.code["source"] is None:
            return None
        return self.index(tree.get("src")).find(tree["qualname"], tree["firstlineno"], tree["name"])


@dataclass
class CodeChoice:
    code: types.CodeType
    code_from: str  # FROM_SOURCE, FROM_VERIFIED or FROM_TRUSTED
    note: str | None  # why the recorded bytecode was not used, when it was not
    sources: RecordSources


def choose_code(
    rec: Record, *, prefer_source: bool = False, trust_bytecode: bool = False, limits: Limits = DEFAULT
) -> CodeChoice:
    """Decide which code object runs for ``rec`` on this interpreter (see the module doc).

    Raises SourceUnavailableError (or its UntrustedBytecodeError, InvalidBytecodeError,
    NewerPythonError, SourceLimitError) when no code may run, and RecordFormatError when
    the code's kind is not the one the record claims."""
    code = rec.code
    sources = RecordSources(rec, limits)
    same = codeloc.same_interpreter(rec.python)
    if not same:
        codeloc.refuse_newer(rec.python, code["source"] is not None, rec.path)
    marshalled = code["marshal"] if same and not prefer_source else None
    if code["source"] is None:
        choice = _without_source(rec, marshalled, same, trust_bytecode, sources)
    else:
        choice = _with_source(rec, marshalled, trust_bytecode, sources)
    kind = driver.code_kind(choice.code.co_flags)
    if kind != code["kind"]:
        raise RecordFormatError(
            f"code.kind: the record says {code['kind']!r}, but the code of {code['qualname']} is a {kind}",
            rec.path,
        )
    return choice


def _without_source(rec: Record, marshalled: str | None, same: bool, trust: bool, sources: RecordSources) -> CodeChoice:
    if marshalled is None:
        if same:
            raise SourceUnavailableError(
                "recorded without source; only its bytecode could be run, which --source (prefer_source) excludes",
                rec.path,
            )
        raise SourceUnavailableError(
            f"recorded on {rec.python.get('version')} without source; it can only be replayed "
            f"on that Python version (this is Python {platform.python_version()})",
            rec.path,
        )
    if not trust:
        raise UntrustedBytecodeError(
            "recorded without source, so its bytecode cannot be checked against it; replay with "
            "trust_bytecode=True (--trust-bytecode) to run it after static checks",
            rec.path,
        )
    return CodeChoice(_trusted(rec, marshalled), FROM_TRUSTED, None, sources)


def _with_source(rec: Record, marshalled: str | None, trust: bool, sources: RecordSources) -> CodeChoice:
    try:
        compiled = _compiled(rec, sources)
    except SourceUnavailableError as exc:
        if marshalled is None:
            raise
        if not trust:
            raise UntrustedBytecodeError(
                f"{exc.reason}; its recorded bytecode runs only with trust_bytecode=True (--trust-bytecode)",
                rec.path,
            ) from None
        return CodeChoice(_trusted(rec, marshalled), FROM_TRUSTED, None, sources)
    if marshalled is None:
        return CodeChoice(compiled, FROM_SOURCE, None, sources)
    try:
        recorded = codeloc.load_marshalled(marshalled, rec.code["name"], rec.path)
    except SourceUnavailableError as exc:
        if trust:
            raise
        return CodeChoice(compiled, FROM_SOURCE, f"{BYTECODE_DIFFERS} ({exc.reason})", sources)
    if codeloc.same_code(recorded, compiled):
        # Equal as code objects: run the fresh compilation, whose stack size and
        # file name (which == does not compare on every version) are this interpreter's.
        return CodeChoice(compiled, FROM_VERIFIED, None, sources)
    if trust:
        bytecheck.validate(recorded, rec.path)
        return CodeChoice(recorded, FROM_TRUSTED, None, sources)
    return CodeChoice(compiled, FROM_SOURCE, BYTECODE_DIFFERS, sources)


def _compiled(rec: Record, sources: RecordSources) -> types.CodeType:
    code = rec.code
    compiled = codeloc.locate(sources.index(), code["qualname"], code["firstlineno"], code["name"], rec.path)
    if code["flags"]:
        compiled = compiled.replace(co_flags=compiled.co_flags | code["flags"])
    return compiled


def _trusted(rec: Record, marshalled: str) -> types.CodeType:
    recorded = codeloc.load_marshalled(marshalled, rec.code["name"], rec.path)
    bytecheck.validate(recorded, rec.path)
    return recorded
