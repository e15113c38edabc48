"""Comparing a recorded outcome with a replayed one, as readable differences."""

from __future__ import annotations

import base64
import io
from typing import Any

MAX_DIFFS = 20


def describe(tree: Any) -> str:
    """A short human description of a value tree."""
    if tree is None or isinstance(tree, bool):
        return repr(tree)
    if isinstance(tree, str):
        text = repr(tree)
        return "str " + (text if len(text) <= 60 else text[:57] + "...")
    tag = tree.get("t")
    if tag == "int":
        return _describe_int(tree["v"])
    if tag == "float":
        return f"float {float.fromhex(tree['v'])!r}"
    if tag == "complex":
        return f"complex {complex(float.fromhex(tree['re']), float.fromhex(tree['im']))!r}"
    if tag == "namedtuple":
        return f"{tree['type']['qualname']} of {len(tree['items'])}"
    if tag in ("tuple", "list", "set", "frozenset", "dict"):
        return f"{tag} of {len(tree['items'])}"
    if tag == "global":
        return f"{tree['module']}.{tree['qualname']}"
    if tag == "module":
        return f"module {tree['name']}"
    if tag == "function":
        return f"function {tree['qualname']}"
    if tag == "missing":
        return f"missing {tree['type']}"
    if tag == "exception":
        return f"exception {describe(tree['type'])}: {tree['message'][:80]}"
    if tag == "ext":
        return f"{tree['codec']} {describe(tree['v'])}"
    if tag == "class":
        return f"class {tree['module']}.{tree['qualname']}"
    if tag == "object":
        return f"{describe(tree['type']).removeprefix('class ')} object"
    if tag == "iterator":
        return f"iterator ({tree['type']})"
    return tag or "?"


# Hex digits up to which an int is shown in decimal: far below the interpreter's limit on
# int-to-decimal conversion (4300 digits by default from 3.11 on), which larger ints raise at.
_DECIMAL_UP_TO = 256


def _describe_int(hex_text: str) -> str:
    digits = hex_text.lstrip("-")
    if len(digits) <= _DECIMAL_UP_TO:
        return f"int {int(hex_text, 16)}"
    sign = "-" if hex_text.startswith("-") else ""
    bits = int(digits, 16).bit_length()
    return f"int of {bits} bits {sign}0x{digits[:12]}...{digits[-12:]}"


def _array(text: str) -> Any:
    import numpy

    return numpy.load(io.BytesIO(base64.b64decode(text)), allow_pickle=False)


class Differ:
    def __init__(self, *, cross_version: bool = False) -> None:
        self.cross_version = cross_version
        self.diffs: list[str] = []
        self.notes: list[str] = []

    def add(self, where: str, a: Any, b: Any, what: str = "") -> None:
        if len(self.diffs) < MAX_DIFFS:
            self.diffs.append(f"{where}: {what or 'recorded'} {describe(a)}, replayed {describe(b)}")

    def same(self, a: Any, b: Any, where: str) -> None:
        if a is None or b is None or isinstance(a, (bool, str)) or isinstance(b, (bool, str)):
            if type(a) is not type(b) or a != b:
                self.add(where, a, b)
            return
        ta, tb = a.get("t"), b.get("t")
        if ta != tb:
            self.add(where, a, b)
            return
        if ta in ("ndarray", "npscalar"):
            x, y = _array(a["npy"]), _array(b["npy"])
            if x.dtype.str != y.dtype.str or x.shape != y.shape or x.tobytes() != y.tobytes():
                self.diffs.append(
                    f"{where}: recorded array {x.dtype}{list(x.shape)}, replayed "
                    f"{y.dtype}{list(y.shape)} with different contents"
                    if x.shape == y.shape and x.dtype == y.dtype
                    else f"{where}: recorded array {x.dtype}{list(x.shape)}, replayed {y.dtype}{list(y.shape)}"
                )
            return
        if ta == "missing":
            if a["type"] != b["type"]:
                self.add(where, a, b)
            return
        if ta == "exception":
            self._exception(a, b, where)
            return
        if ta == "namedtuple" and a["type"] != b["type"]:
            self.add(where, a, b)
            return
        if ta in ("tuple", "list", "set", "frozenset", "namedtuple"):
            if len(a["items"]) != len(b["items"]):
                self.add(where, a, b)
                return
            for i, (x, y) in enumerate(zip(a["items"], b["items"])):
                self.same(x, y, f"{where}[{i}]")
            return
        if ta == "dict":
            if len(a["items"]) != len(b["items"]):
                self.add(where, a, b)
                return
            for i, (x, y) in enumerate(zip(a["items"], b["items"])):
                self.same(x[0], y[0], f"{where}.key{i}")
                self.same(x[1], y[1], f"{where}[{describe(x[0])}]")
            return
        if ta == "function":
            for key in ("qualname", "firstlineno"):
                if a[key] != b[key]:
                    self.add(where, a, b)
                    return
            for key in ("defaults", "kwdefaults"):
                self.same(a[key], b[key], f"{where}.{key}")
            ca, cb = dict(map(tuple, a["closure"])), dict(map(tuple, b["closure"]))
            for var in sorted(set(ca) | set(cb)):
                self.same(ca.get(var), cb.get(var), f"{where}.<closure {var}>")
            return
        if ta == "class":
            if (a["module"], a["qualname"]) != (b["module"], b["qualname"]):
                self.add(where, a, b)
            return
        if ta == "object":
            self.same(a["type"], b["type"], f"{where}.__class__")
            for key in ("args", "state", "listitems", "dictitems"):
                self.same(a[key], b[key], f"{where}.{key}")
            return
        if ta == "method":
            if a["name"] != b["name"]:
                self.add(where, a, b)
                return
            self.same(a["self"], b["self"], f"{where}.__self__")
            return
        if ta == "ext":
            if a["codec"] != b["codec"]:
                self.add(where, a, b)
                return
            self.same(a["v"], b["v"], f"{where}.{a['codec']}")
            return
        if ta == "ref":
            if a["id"] != b["id"]:
                self.diffs.append(f"{where}: aliasing differs (shared reference {a['id']} vs {b['id']})")
            return
        keys = set(a) | set(b)
        for key in sorted(keys - {"t", "id"}):
            if a.get(key) != b.get(key):
                self.add(where, a, b)
                return

    def _exception(self, a: dict, b: dict, where: str) -> None:
        if a["type"] != b["type"]:
            self.add(where, a, b, "recorded")
            return
        sub = Differ(cross_version=self.cross_version)
        sub.same(a["args"], b["args"], f"{where}.args")
        if not sub.diffs:
            return
        builtin = a["type"].get("t") == "global" and a["type"].get("module") == "builtins"
        if self.cross_version and builtin:
            # CPython rewords its own error messages between versions; same type is a match.
            self.notes.append(
                f"{where}: message differs across versions: {a['message'][:80]!r} vs {b['message'][:80]!r}"
            )
            return
        self.diffs.extend(sub.diffs)


def diff_outcomes(recorded: dict, replayed: dict, *, cross_version: bool = False) -> tuple[list[str], list[str]]:
    """(differences, notes) between two outcome sections; no differences means a match."""
    d = Differ(cross_version=cross_version)
    if recorded["kind"] != replayed["kind"]:
        if recorded["kind"] == "return":
            d.diffs.append(
                f"outcome: recorded a return of {describe(recorded['value'])}, replay raised "
                f"{describe(replayed['exception'])}"
            )
        else:
            d.diffs.append(
                f"outcome: recorded {describe(recorded['exception'])}, replay returned {describe(replayed['value'])}"
            )
        return d.diffs, d.notes
    if recorded["kind"] == "return":
        d.same(recorded["value"], replayed["value"], "return value")
    else:
        d.same(recorded["exception"], replayed["exception"], "exception")
    ea, eb = recorded["events"], replayed["events"]
    if len(ea) != len(eb):
        d.diffs.append(f"events: recorded {len(ea)} yields/awaits, replayed {len(eb)}")
    for i, (x, y) in enumerate(zip(ea, eb)):
        if x[0] != y[0]:
            d.diffs.append(f"events[{i}]: recorded {x[0]}, replayed {y[0]}")
        else:
            d.same(x[1], y[1], f"{x[0]}[{i}]")
    d.same(recorded["args_after"], replayed["args_after"], "arguments after the call")
    d.same(recorded["kwargs_after"], replayed["kwargs_after"], "keyword arguments after the call")
    return d.diffs, d.notes
