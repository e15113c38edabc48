"""Version knowledge lives in one place: the behaviours table and the argument decoders.

Every other module asks ``BEHAVIOUR`` for a named behaviour and reads an instruction's
decoded fields (``push_null``, ``to_bool``, ...) instead of its raw argument bits."""

import re
from pathlib import Path

import framehook.translator as ft
from framehook.translator.bytecode import behaviour

PACKAGE = Path(ft.__file__).resolve().parent
# the version table and the per-version decoders
VERSION_MODULES = {"bytecode/behaviour.py", "bytecode/arguments.py"}
# the concrete layer also splits arguments into bytes (EXTENDED_ARG prefixes)
BYTE_LEVEL = {"bytecode/decode.py", "bytecode/assemble.py"}

VERSION_CHECK = re.compile(r"version_info|\bPY3\d+\b|hexversion")
# an instruction argument's bits read or shifted: ``inst.arg & 1``, ``arg & 0x04``, ``n & 16``
# on an instruction's argument, ``inst.arg >> 8``
RAW_BITS = re.compile(r"\b(?:\w+\.)?arg\)?\s*(?:&|>>)\s*(?:0x[0-9a-fA-F]+|\d+)|\(\s*\w+\.arg or 0\s*\)\s*&")


def _sources():
    for path in sorted(PACKAGE.rglob("*.py")):
        yield path.relative_to(PACKAGE).as_posix(), path.read_text(encoding="utf-8")


def _hits(pattern, skip):
    out = []
    for rel, text in _sources():
        if rel in skip:
            continue
        for n, line in enumerate(text.splitlines(), 1):
            code = line.split("#", 1)[0]
            if pattern.search(code):
                out.append(f"{rel}:{n}: {line.strip()}")
    return out


def test_scan_finds_the_package_sources():
    names = {rel for rel, _ in _sources()}
    assert {"symbolic/interpreter.py", "symbolic/resume.py", "bytecode/behaviour.py"} <= names


def test_no_version_checks_outside_the_behaviours_and_decoders():
    assert _hits(VERSION_CHECK, VERSION_MODULES) == []


def test_no_raw_argument_bits_outside_the_decoders():
    assert _hits(RAW_BITS, VERSION_MODULES | BYTE_LEVEL) == []


def test_patterns_catch_what_they_are_for():
    assert VERSION_CHECK.search("if sys.version_info >= (3, 11):")
    assert VERSION_CHECK.search("null = PY311 and x")
    for text in ("null = inst.arg & 1", "spec = arg & 0x04", "before = inst.arg >> 8", "flags = (inst.arg or 0) & 3"):
        assert RAW_BITS.search(text), text
    assert not RAW_BITS.search("args = self.popn(inst.arg)")


def test_behaviours_differ_by_version_only_in_the_table():
    old, new = behaviour.behaviour_for((3, 9)), behaviour.behaviour_for((3, 13))
    assert not old.calls_push_null and new.calls_push_null
    assert new.null_after_callable and not behaviour.behaviour_for((3, 12)).null_after_callable
    assert behaviour.behaviour_for((3, 11)).precall_before_call
    assert not behaviour.behaviour_for((3, 12)).precall_before_call
    assert [behaviour.behaviour_for((3, m)).compare_op_shift for m in (9, 11, 12, 13)] == [0, 0, 4, 5]


def test_decoder_for_an_unknown_version_names_the_supported_ones():
    import pytest
    from framehook.translator.bytecode.arguments import decoder_for

    with pytest.raises(RuntimeError, match=r"no bytecode decoder for CPython 3\.8; supported: 3\.9, .*3\.13"):
        decoder_for((3, 8))
    assert repr(behaviour.behaviour_for((3, 10))) == "Behaviour(3.10)"


def test_decoded_fields_match_the_argument_bits():
    import dis
    from framehook.translator.bytecode import decode

    def f(a, b):
        return print(f"{a!r:>3}", a is not b, a not in b, a.x(), *b, **a)

    insts = decode(f.__code__)
    by_name = {}
    for inst in insts:
        by_name.setdefault(inst.opname, inst)
    raw = {i.offset: i for i in dis.get_instructions(f)}
    g = by_name["LOAD_GLOBAL"]
    assert g.argval == "print"
    assert g.push_null == (behaviour.BEHAVIOUR.global_loads_push_null and raw[g.offset].arg % 2 == 1)
    assert by_name["IS_OP"].invert and by_name["CONTAINS_OP"].invert
    assert by_name["CALL_FUNCTION_EX"].call_kwargs
    fmt = by_name.get("FORMAT_VALUE") or by_name["CONVERT_VALUE"]
    assert fmt.conversion == "repr"
    spec = by_name.get("FORMAT_VALUE") or by_name["FORMAT_WITH_SPEC"]
    assert spec.format_spec
    method = by_name.get("LOAD_METHOD") or by_name["LOAD_ATTR"]
    assert method.is_method and method.push_null


# -- opcode names: outside ``bytecode/``, code reads kinds (bytecode/kinds.py), and may spell
# only the names every supported CPython has
QUOTED_NAME = re.compile(r"""["']([A-Z][A-Z0-9_]+)["']|\bop_([A-Z][A-Z0-9_]+)\b""")
# a line whose string only looks like an opcode name says so in its comment
NOT_AN_OPCODE = "not an opcode:"


def _version_only_names(text):
    from framehook.translator.bytecode.kinds import VERSION_ONLY

    for n, line in enumerate(text.splitlines(), 1):
        code, _, comment = line.partition("#")
        if comment.strip().startswith(NOT_AN_OPCODE):
            continue
        for m in QUOTED_NAME.finditer(code):
            name = m.group(1) or m.group(2)
            if name in VERSION_ONLY or name.startswith("INSTRUMENTED_"):
                yield n, name


def test_no_version_only_opcode_names_outside_bytecode():
    found = []
    for rel, text in _sources():
        if rel.startswith("bytecode/"):
            continue
        found += [f"{rel}:{n}: {name}" for n, name in _version_only_names(text)]
    assert found == []


def test_opcode_name_scan_catches_what_it_is_for():
    text = 'if inst.opname == "CALL_METHOD":\n    x = "LOAD_CONST"\ndef op_JUMP_ABSOLUTE(self): pass\n# "PRECALL" in a comment\n'
    assert [name for _, name in _version_only_names(text)] == ["CALL_METHOD", "JUMP_ABSOLUTE"]
    assert list(_version_only_names("'INSTRUMENTED_LINE'")) == [(1, "INSTRUMENTED_LINE")]
    assert list(_version_only_names('op = ("CALL", fn)  # not an opcode: a checker instruction')) == []
    assert list(_version_only_names('op = ("CALL", fn)  # a CALL')) == [(1, "CALL")]


def test_every_version_names_exist_on_this_python():
    import opcode

    from framehook.translator.bytecode.kinds import EVERY_VERSION, VERSION_ONLY

    assert EVERY_VERSION <= set(opcode.opmap)
    assert not EVERY_VERSION & VERSION_ONLY
    # a name this Python has that the table calls version-only is absent on some other version
    assert {"LOAD_FAST", "CALL_FUNCTION_EX", "FOR_ITER"} <= EVERY_VERSION
    assert {"CALL_METHOD", "CALL", "PRECALL", "BINARY_OP", "LOAD_FAST_BORROW"} <= VERSION_ONLY
