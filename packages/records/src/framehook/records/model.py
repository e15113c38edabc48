"""The record document: its fields, and strict checking of a parsed body against them."""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import AbstractSet, Any

from . import codeloc, trust
from .codec import CO_SET_AFTER_COMPILE, Validator
from .errors import RecordFormatError
from .limits import DEFAULT, Limits

KIND = "framehook-record"
FORMAT = (2, 0)  # what record() writes; format 1 records are still read
CODE_KINDS = ("function", "generator", "coroutine", "async_generator")
OUTCOME_KINDS = ("return", "raise")


@dataclass
class Record:
    """One recorded frame. Values are kept as validated value trees (see codec.py)."""

    python: dict  # version, implementation, magic (bytecode magic, hex), cache_tag
    packages: dict  # distribution/module name -> version or None
    code: dict  # name, qualname, module, filename, firstlineno, kind, source, marshal
    function: dict  # defaults, kwdefaults, closure [[name, tree], ...]
    globals: dict  # name -> tree (globals the code reads)
    builtins: dict  # name -> tree (builtins the code reads)
    call: dict  # args (tuple tree), kwargs (dict tree)
    locals: dict  # name -> tree: the frame's arguments at entry
    outcome: dict  # kind, value, exception, events, args_after, kwargs_after
    translator: dict | None = None  # guards, graphs, graph_breaks when the translator ran
    label: str = ""
    created: str = ""
    missing: list = field(default_factory=list)
    notes: list = field(default_factory=list)
    sources: list = field(default_factory=list)  # [{filename, line, text}]: other functions' source
    state: dict | None = None  # global random states before the call, when it moved them
    patches: list = field(default_factory=list)  # [[module, attribute, value]]: what tests replaced
    format: tuple = FORMAT
    path: str | None = None  # the file it was read from, if any

    def to_document(self) -> dict:
        if self.format[0] >= 2:
            # ids run on across these trees in this order; JSON objects are written with
            # sorted keys, so the globals are a list of pairs in the order they were encoded
            return {
                **self._common(),
                "globals": [[name, tree] for name, tree in self.globals.items()],
                "sources": self.sources,
                "state": self.state,
                **({"patches": self.patches} if self.patches else {}),
            }
        return {**self._common(), "globals": self.globals}

    def _common(self) -> dict:
        return {
            "kind": KIND,
            "format": list(self.format),
            "python": self.python,
            "packages": self.packages,
            "code": self.code,
            "function": self.function,
            "builtins": self.builtins,
            "call": self.call,
            "locals": self.locals,
            "outcome": self.outcome,
            "translator": self.translator,
            "label": self.label,
            "created": self.created,
            "missing": self.missing,
            "notes": self.notes,
        }

    @property
    def name(self) -> str:
        return self.label or self.code.get("qualname", "?")


_TOP = {
    "kind",
    "format",
    "python",
    "packages",
    "code",
    "function",
    "globals",
    "builtins",
    "call",
    "locals",
    "outcome",
    "translator",
    "label",
    "created",
    "missing",
    "notes",
}
_TOP_2 = _TOP | {"sources", "state", "patches"}
_MAX_SOURCE = 8 * 1024 * 1024

_MAX_NAMES = 100_000


def _need(cond: bool, path: str | None, where: str, message: str) -> None:
    if not cond:
        raise RecordFormatError(f"{where}: {message}", path)


def _obj(
    doc: dict, key: str, keys: AbstractSet[str], path: str | None, where: str, optional: AbstractSet[str] = frozenset()
) -> dict:
    value: Any = doc.get(key)  # untrusted JSON: checked below
    _need(isinstance(value, dict), path, where, "must be a JSON object")
    present = set(value)
    _need(
        present <= keys and (keys - optional) <= present,
        path,
        where,
        f"unexpected fields {sorted(present - keys)} / missing fields {sorted(keys - optional - present)}",
    )
    return value


def _str(value: Any, path: str | None, where: str, limit: int = 4096, *, nullable: bool = False) -> None:
    if nullable and value is None:
        return
    _need(isinstance(value, str) and len(value) <= limit, path, where, "must be a string of sane length")


def _int(value: Any, path: str | None, where: str) -> None:
    _need(type(value) is int and 0 <= value < 2**31, path, where, "must be a non-negative integer")


def from_document(doc: dict, *, path: str | None = None, trusted: bool = False, limits: Limits = DEFAULT) -> Record:
    """Check every field of a parsed body; raise RecordFormatError naming the first problem."""
    fmt: Any = doc.get("format")
    _need(
        isinstance(fmt, list) and len(fmt) == 2 and all(type(x) is int for x in fmt),
        path,
        "format",
        "must be [major, minor]",
    )
    v2 = fmt[0] >= 2
    extra = set(doc) - top_fields(fmt[0])
    _need(not extra, path, "record", f"unknown fields {sorted(extra)}")
    _need(doc.get("kind") == KIND, path, "record", "kind is not framehook-record")
    absent = top_fields(fmt[0]) - set(doc) - {"translator", "patches"}
    _need(not absent, path, "record", f"missing fields {sorted(absent)}")
    python = _obj(doc, "python", {"version", "implementation", "magic", "cache_tag"}, path, "python")
    for key in python:
        _str(python[key], path, f"python.{key}", 100, nullable=key == "cache_tag")
    codeloc.check_consistent(python, path)
    packages: Any = doc.get("packages")
    _need(isinstance(packages, dict) and len(packages) < 100, path, "packages", "must be an object")
    for key, version in packages.items():
        _str(version, path, f"packages[{key!r}]", 100, nullable=True)
    code_fields = {"name", "qualname", "module", "filename", "firstlineno", "kind", "flags", "source", "marshal"}
    code = _obj(doc, "code", code_fields | {"source_line"} if v2 else code_fields, path, "code")
    if v2:
        _need(
            type(code["source_line"]) is int and 1 <= code["source_line"] < 2**31,
            path,
            "code.source_line",
            "must be a line number",
        )
    sources: Any = doc.get("sources", [])
    _need(isinstance(sources, list) and len(sources) <= 10_000, path, "sources", "must be a list")
    for i, item in enumerate(sources):
        _need(
            isinstance(item, dict) and set(item) == {"filename", "line", "text"},
            path,
            f"sources[{i}]",
            "must be an object of filename, line and text",
        )
        _str(item["filename"], path, f"sources[{i}].filename", 4096)
        _int(item["line"], path, f"sources[{i}].line")
        _need(item["line"] >= 1, path, f"sources[{i}].line", "must be a line number")
        _str(item["text"], path, f"sources[{i}].text", _MAX_SOURCE)
    _need(code["flags"] in (0, CO_SET_AFTER_COMPILE), path, "code.flags", "only CO_ITERABLE_COROUTINE may be set")
    _str(code["name"], path, "code.name", 300)
    _str(code["qualname"], path, "code.qualname", 1000)
    _str(code["module"], path, "code.module", 300, nullable=True)
    _str(code["filename"], path, "code.filename", 4096)
    _int(code["firstlineno"], path, "code.firstlineno")
    _need(code["kind"] in CODE_KINDS, path, "code.kind", f"must be one of {CODE_KINDS}")
    _str(code["source"], path, "code.source", _MAX_SOURCE, nullable=True)
    _str(code["marshal"], path, "code.marshal", _MAX_SOURCE, nullable=True)

    # Format 1: ids restart at 0 in every value tree. Format 2: the inputs (defaults,
    # cells, arguments, globals, builtins, in that order) share one id space; the locals,
    # the outcome's trees and the states are trees of their own.
    validator = Validator(path=path, trusted=trusted, limits=limits, sources=len(sources))

    def tree(value: Any, where: Any, *, allow_empty_cell: bool = False) -> None:
        validator.check_tree(value, where, allow_empty_cell=allow_empty_cell)

    def shared(value: Any, where: Any, *, allow_empty_cell: bool = False) -> None:
        validator.check_tree(value, where, allow_empty_cell=allow_empty_cell, shared=v2)

    validator.next_id = 0
    function = _obj(doc, "function", {"defaults", "kwdefaults", "closure"}, path, "function")
    shared(function["defaults"], "function.defaults")
    shared(function["kwdefaults"], "function.kwdefaults")
    closure = function["closure"]
    _need(isinstance(closure, list) and len(closure) < 10_000, path, "function.closure", "must be a list")
    for i, pair in enumerate(closure):
        _need(
            isinstance(pair, list) and len(pair) == 2 and isinstance(pair[0], str),
            path,
            f"function.closure[{i}]",
            "must be a [name, value] pair",
        )
        shared(pair[1], f"function.closure[{pair[0]!r}]", allow_empty_cell=True)
    call = _obj(doc, "call", {"args", "kwargs"}, path, "call")
    shared(call["args"], "call.args")
    _need(isinstance(call["args"], dict) and call["args"].get("t") == "tuple", path, "call.args", "must be a tuple")
    shared(call["kwargs"], "call.kwargs")
    _need(isinstance(call["kwargs"], dict) and call["kwargs"].get("t") == "dict", path, "call.kwargs", "must be a dict")
    globals_ = _named_trees(doc.get("globals"), path, "globals", pairs=v2)
    sections = {"globals": globals_}
    for section in ("builtins", "locals"):
        sections[section] = _named_trees(doc.get(section), path, section, pairs=False)
    for section in ("globals", "builtins", "locals"):
        check = shared  # format 2: the locals come last in the inputs' id space
        for name, sub in sections[section].items():
            check(sub, (section, [name]))
    trust.check_builtins(doc["builtins"], path)
    patches: Any = doc.get("patches", [])
    _need(isinstance(patches, list) and len(patches) <= 1000, path, "patches", "must be a list")
    for i, item in enumerate(patches):
        _need(
            isinstance(item, list)
            and len(item) == 3
            and isinstance(item[0], str)
            and re.match(r"^[A-Za-z_][A-Za-z0-9_]*(\.[A-Za-z_][A-Za-z0-9_]*)*$", item[0]) is not None
            and isinstance(item[1], str)
            and item[1].isidentifier(),
            path,
            f"patches[{i}]",
            "must be [module name, attribute name, value]",
        )
        tree(item[2], f"patches[{i}]")
    state: Any = doc.get("state")
    if state is not None:
        _need(
            isinstance(state, dict) and set(state) <= {"random", "numpy.random"},
            path,
            "state",
            "must be null or an object of random states",
        )
        for key, sub in state.items():
            tree(sub, f"state[{key!r}]")
    outcome = _obj(
        doc, "outcome", {"kind", "value", "exception", "events", "args_after", "kwargs_after"}, path, "outcome"
    )
    _need(outcome["kind"] in OUTCOME_KINDS, path, "outcome.kind", f"must be one of {OUTCOME_KINDS}")
    tree(outcome["value"], "outcome.value")
    tree(outcome["exception"], "outcome.exception")
    if outcome["exception"] is not None:
        _need(
            isinstance(outcome["exception"], dict) and outcome["exception"].get("t") == "exception",
            path,
            "outcome.exception",
            "must be an exception value",
        )
    events = outcome["events"]
    _need(isinstance(events, list) and len(events) <= 100_000, path, "outcome.events", "must be a list")
    for i, event in enumerate(events):
        _need(
            isinstance(event, list) and len(event) == 2 and event[0] in ("yield", "await"),
            path,
            f"outcome.events[{i}]",
            "must be [\"yield\"|\"await\", value]",
        )
        tree(event[1], f"outcome.events[{i}]")
    tree(outcome["args_after"], "outcome.args_after")
    tree(outcome["kwargs_after"], "outcome.kwargs_after")
    translator: Any = doc.get("translator")
    if translator is not None:
        _need(isinstance(translator, dict), path, "translator", "must be an object or null")
        _check_plain_json(translator, path, "translator", 0)
    _str(doc.get("label"), path, "label", 1000)
    _str(doc.get("created"), path, "created", 100)
    for key in ("missing", "notes"):
        items: Any = doc.get(key)
        _need(isinstance(items, list) and len(items) <= 10_000, path, key, "must be a list")
        for item in items:
            _str(item, path, key, 10_000)
    return Record(
        python=python,
        packages=packages,
        code=code,
        function=function,
        globals=globals_,
        builtins=doc["builtins"],
        call=call,
        locals=doc["locals"],
        outcome=outcome,
        translator=translator,
        label=doc["label"],
        created=doc["created"],
        missing=doc["missing"],
        notes=doc["notes"],
        sources=sources,
        state=state,
        patches=patches,
        format=tuple(fmt),
        path=path,
    )


def top_fields(major: int) -> set:
    return _TOP_2 if major >= 2 else _TOP


def _named_trees(value: Any, path: str | None, section: str, *, pairs: bool) -> dict:
    """A section of named trees: an object, or (format 2 globals) a list of pairs whose
    order is the order the trees were encoded in."""
    if pairs:
        _need(isinstance(value, list) and len(value) <= _MAX_NAMES, path, section, "must be a list of pairs")
        out: dict = {}
        for i, pair in enumerate(value):
            _need(
                isinstance(pair, list) and len(pair) == 2 and isinstance(pair[0], str) and pair[0] not in out,
                path,
                f"{section}[{i}]",
                "must be a [name, value] pair with a name not given before",
            )
            out[pair[0]] = pair[1]
        value = out
    _need(isinstance(value, dict) and len(value) <= _MAX_NAMES, path, section, "must be an object")
    for name in value:
        _need(len(name) <= 300, path, section, "name too long")
    return value


def _check_plain_json(value: Any, path: str | None, where: str, depth: int) -> None:
    """The translator section is free-form text data (guards, graphs): bound its depth only."""
    _need(depth <= 50, path, where, "nests too deeply")
    if isinstance(value, dict):
        for key, sub in value.items():
            _check_plain_json(sub, path, f"{where}.{key}", depth + 1)
    elif isinstance(value, list):
        for i, sub in enumerate(value):
            _check_plain_json(sub, path, f"{where}[{i}]", depth + 1)
    else:
        _need(value is None or isinstance(value, (str, int, float, bool)), path, where, "must be JSON data")
