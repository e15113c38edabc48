"""Classes of the real-code tier's replays, and the named CPython differences.

Every record is replayed through every mode; its outcome is MATCH or one class:

``not-recordable``
    the record holds placeholders (``missing`` is not empty): a value the recorder could
    not store, so the replay cannot be the recorded call;
``cpython-difference``
    the difference is a named entry of KNOWN_DIFFERENCES: a behaviour of the replaying
    CPython that differs from the recording one, explained there;
``library-version``
    the record was made with another version of its library than the pinned one replayed;
``framehook-defect``
    everything else: the record could not be loaded or replayed, an outcome differed
    with no placeholder and no named cause, or the modes disagree (one matched, another
    did not: the same values gave two outcomes).

The last is what is left after the named classes: nothing is classified by hiding it.
``cause`` groups records for the report: the placeholder types and reasons, the named
difference, or the first difference with addresses and paths taken out.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from fnmatch import fnmatchcase
from typing import Any, Callable

MATCH = "match"
NOT_RECORDABLE = "not-recordable"
CPYTHON_DIFFERENCE = "cpython-difference"
LIBRARY_VERSION = "library-version"
DEFECT = "framehook-defect"
CLASSES = (NOT_RECORDABLE, CPYTHON_DIFFERENCE, LIBRARY_VERSION, DEFECT)


def version_forms(version: str) -> dict:
    """The ways a call may spell the CPython it runs on, by name: "3.11.7" -> full
    "3.11.7", minor "3.11", nodot "311", tag "cp311"."""
    parts = version.split(".")
    minor = ".".join(parts[:2])
    return {"full": version, "minor": minor, "nodot": "".join(parts[:2]), "tag": "cp" + "".join(parts[:2])}


@dataclass(frozen=True)
class KnownDifference:
    """A named CPython behaviour difference. It explains one difference line (the
    ``recorded X, replayed Y`` lines of framehook.records' comparison) when ``pattern``
    matches it and ``check`` accepts the two values it captures (groups ``recorded`` and
    ``replayed``) given the recording and the replaying CPython's versions."""

    name: str
    why: str
    pattern: str
    check: Callable[[str, str, str, str], bool]
    cases: str = "*"

    def explains(self, case: str, line: str, recorded_on: str, replayed_on: str) -> bool:
        if not fnmatchcase(case, self.cases):
            return False
        match = re.search(self.pattern, line)
        if match is None:
            return False
        return self.check(match.group("recorded"), match.group("replayed"), recorded_on, replayed_on)


def _is_running_version(recorded: str, replayed: str, recorded_on: str, replayed_on: str) -> bool:
    """The recorded value spells the recording CPython's version and the replayed one the
    replaying CPython's, the same way (and the two versions differ)."""
    if recorded_on == replayed_on:
        return False
    before, after = version_forms(recorded_on), version_forms(replayed_on)
    return any(before[form] == recorded and after[form] == replayed for form in before)


def _is_another_minor_version(recorded: str, replayed: str, recorded_on: str, replayed_on: str) -> bool:
    return recorded != replayed and recorded_on.split(".")[:2] != replayed_on.split(".")[:2]


def _is_str_hash_across_siphash(recorded: str, replayed: str, recorded_on: str, replayed_on: str) -> bool:
    """A cached hash() differs, recorded and replayed on either side of 3.11 (PEP 456's
    default string hash went from SipHash-2-4 to SipHash-1-3 there), both under the tier's
    fixed PYTHONHASHSEED."""

    def era(version: str) -> bool:
        major, minor = (int(x) for x in version.split(".")[:2])
        return (major, minor) >= (3, 11)

    return era(recorded_on) != era(replayed_on) and recorded != replayed


# Each entry names a behaviour of CPython itself that differs between the recording and
# the replaying version, checked value by value: a difference is explained only when both
# sides are exactly what the entry says they must be.
KNOWN_DIFFERENCES: tuple = (
    KnownDifference(
        name="running-interpreter-version",
        why="the call returns the version of the CPython it runs on (sys.version_info, "
        "platform.python_version()): replayed on another CPython it returns that one's",
        pattern=r"recorded str '(?P<recorded>[^']*)', replayed str '(?P<replayed>[^']*)'$",
        check=_is_running_version,
    ),
    KnownDifference(
        name="marker-on-interpreter-version",
        why="a PEP 508 marker such as python_full_version < '3.12' is evaluated against the "
        "running interpreter: replayed on another CPython minor version it can flip",
        pattern=r"^return value: recorded (?P<recorded>True|False), replayed (?P<replayed>True|False)$",
        check=_is_another_minor_version,
        cases="packaging.markers:Marker.evaluate",
    ),
    KnownDifference(
        name="str-hash-function",
        why="a value caches hash() of strings (a _hash attribute): CPython 3.11 changed the "
        "string hash function, so even under one PYTHONHASHSEED 3.9/3.10 and 3.11+ differ",
        pattern=r"\[str '_hash'\]: recorded int (?P<recorded>-?\d+), replayed int (?P<replayed>-?\d+)$",
        check=_is_str_hash_across_siphash,
    ),
)


@dataclass(frozen=True)
class Verdict:
    cls: str  # MATCH or one of CLASSES
    cause: str  # what groups it in the report ("" for a match)


_ADDRESS = re.compile(r"0x[0-9a-fA-F]+")
_PATH = re.compile(r"(/[^\s'\"():,]+)+\.(py|fhrec)")
_LINE = re.compile(r"\bline \d+")


def normalize(text: str, limit: int = 160) -> str:
    """A difference text with what varies per record (addresses, paths, line numbers) taken out."""
    text = _ADDRESS.sub("0x…", text)
    text = _PATH.sub(lambda m: "…/" + m.group(0).rsplit("/", 1)[-1], text)
    text = _LINE.sub("line N", text)
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 1] + "…"


def placeholders(tree: Any) -> list:
    """The (type, why) of every placeholder in a record document (its "missing" values,
    FORMAT.md), each once, in the order first met."""
    found: list = []

    def walk(node: Any) -> None:
        if isinstance(node, dict):
            if node.get("t") == "missing":
                item = (str(node.get("type")), str(node.get("why")))
                if item not in found:
                    found.append(item)
            for value in node.values():
                walk(value)
        elif isinstance(node, list):
            for value in node:
                walk(value)

    walk(tree)
    return found


def _placeholder_cause(items: list) -> str:
    """One cause for a record's placeholders: the kind of the first one (test-defined
    classes, whose names vary per test, are grouped as one)."""
    if not items:
        return "placeholder"
    kind, why = items[0]
    if kind.startswith("tests.") or kind.startswith("test_") or ".<locals>." in kind:
        kind = "a class defined in the tests"
    return f"{kind}: {why}"


def named_difference(case: str, diffs: list, recorded_on: str, replayed_on: str) -> str | None:
    """The names of the known differences that explain every one of ``diffs`` (None when
    there are none, or one is left unexplained)."""
    if not diffs:
        return None
    names: list = []
    for line in diffs:
        known = next((k for k in KNOWN_DIFFERENCES if k.explains(case, line, recorded_on, replayed_on)), None)
        if known is None:
            return None
        if known.name not in names:
            names.append(known.name)
    return ", ".join(names)


def classify(
    case: str,
    *,
    verdict: str,
    diffs: list,
    errors: list,
    missing: list,
    placeholder_kinds: list | None = None,
    recorded_on: str,
    replayed_on: str,
    recorded_library: str | None = None,
    replayed_library: str | None = None,
    modes: dict | None = None,
) -> Verdict:
    """The class of one record's replay.

    ``verdict`` is the replay's (MATCH, MISMATCH, NOT RUN, or ERROR when the record could
    not be loaded or replayed); ``diffs`` the differences from the recorded outcome that
    the modes reported (one line each, without the mode's name) and ``errors`` every
    other failure text (a mode's error, a load or rebuild error); ``missing`` the
    record's placeholders (their paths) and ``placeholder_kinds`` their (type, why);
    ``recorded_on``/``replayed_on`` the two CPython versions; ``recorded_library`` and
    ``replayed_library`` the library's version in the record and here; ``modes`` each
    mode's status. Modes that disagree (one matched, another did not) are a defect of the
    package behind the one that differs, placeholders or not: they replayed the same values."""
    if verdict == "MATCH":
        return Verdict(MATCH, "")
    statuses = modes or {}
    if "match" in statuses.values() and any(v in ("mismatch", "error") for v in statuses.values()):
        split = ", ".join(f"{mode} {status}" for mode, status in statuses.items() if status != "skip")
        return Verdict(DEFECT, f"modes disagree: {split}")
    if missing:
        return Verdict(NOT_RECORDABLE, _placeholder_cause(placeholder_kinds or []))
    if not errors and verdict == "MISMATCH":
        known = named_difference(case, diffs, recorded_on, replayed_on)
        if known is not None:
            return Verdict(CPYTHON_DIFFERENCE, known)
    if recorded_library and replayed_library and recorded_library != replayed_library:
        return Verdict(LIBRARY_VERSION, f"recorded with {recorded_library}, replayed with {replayed_library}")
    if verdict == "NOT RUN":
        return Verdict(DEFECT, "no mode ran")
    # the cause is the first text no known difference explains
    unexplained = [
        d for d in diffs if not any(k.explains(case, d, recorded_on, replayed_on) for k in KNOWN_DIFFERENCES)
    ]
    texts = errors + unexplained + diffs
    return Verdict(DEFECT, normalize(texts[0]) if texts else f"{verdict} without a reason")
