"""Which code a replay runs: the recorded source by default, the recorded bytecode only when
it is that source's compilation or the caller trusts it, and then only after static checks."""

from __future__ import annotations

import base64
import builtins
import dis
import importlib
import inspect
import json
import marshal
import sys
import types
from pathlib import Path

import pytest

from framehook.records import (
    InvalidBytecodeError,
    SourceUnavailableError,
    UntrustedBytecodeError,
    dumps,
    loads,
    record_call,
    replay_record,
    save,
)
from framehook.records import bytecheck, marshalscan
from framehook.records.cli import main as cli_main
from framehook.records.replay import BYTECODE_DIFFERS, FROM_SOURCE, FROM_TRUSTED, FROM_VERIFIED

MODES = ("plain",)
SHARED_SLOTS = sys.version_info >= (3, 11)


def _code(source: str, name: str, filename: str = "crafted.py") -> types.CodeType:
    module = compile(source, filename, "exec", dont_inherit=True)
    return next(c for c in module.co_consts if isinstance(c, types.CodeType) and c.co_name == name)


def _record(source: str, name: str, args: tuple, bytecode: types.CodeType | None = None):
    """A record of ``name`` from ``source`` whose marshalled code is ``bytecode`` (default: its own)."""
    code = _code(source, name)
    fn = types.FunctionType(code, {"__builtins__": builtins, "__name__": "crafted"})
    rec = record_call(fn, args)
    rec.code.update(source=source, filename="crafted.py")
    if bytecode is not None:
        rec.code["marshal"] = base64.b64encode(marshal.dumps(bytecode)).decode("ascii")
    return loads(dumps(rec))


GOOD = "def add(a, b):\n    return a + b\n"
HIDDEN = "def add(a, b):\n    __import__('sys').framehook_hidden_ran = True\n    return a + b\n"


def test_hidden_bytecode_never_runs_by_default_and_is_reported(tmp_path, capsys):
    rec = _record(GOOD, "add", (2, 3), bytecode=_code(HIDDEN, "add"))
    assert not hasattr(sys, "framehook_hidden_ran")
    result = replay_record(rec, modes=MODES)
    assert not hasattr(sys, "framehook_hidden_ran")  # the code the source does not show did not run
    assert result.ok and result.code_from == FROM_SOURCE, result.report()
    assert result.bytecode_note == BYTECODE_DIFFERS
    assert "recorded bytecode differs" in result.summary()
    path = tmp_path / "hidden.fhrec"
    save(rec, path)
    assert cli_main(["replay", "--mode", "plain", str(path)]) == 0
    line = capsys.readouterr().out.strip()
    assert "\n" not in line and "code from source" in line and "not run" in line
    assert not hasattr(sys, "framehook_hidden_ran")
    try:  # trusting the bytecode runs it: the attribute above is a real witness
        trusted = replay_record(rec, modes=MODES, trust_bytecode=True)
        assert trusted.code_from == FROM_TRUSTED and trusted.ok
        assert sys.framehook_hidden_ran is True
    finally:
        if hasattr(sys, "framehook_hidden_ran"):
            del sys.framehook_hidden_ran


def test_prefer_source_does_not_even_compare():
    rec = _record(GOOD, "add", (2, 3), bytecode=_code(HIDDEN, "add"))
    result = replay_record(rec, modes=MODES, prefer_source=True)
    assert result.code_from == FROM_SOURCE and result.bytecode_note is None and result.ok


def test_matching_bytecode_is_verified():
    rec = _record(GOOD, "add", (2, 3))
    result = replay_record(rec, modes=MODES)
    assert result.code_from == FROM_VERIFIED and result.bytecode_note is None and result.ok
    assert "code from marshal (verified against source)" in result.summary()
    assert replay_record(rec, modes=MODES, trust_bytecode=True).code_from == FROM_VERIFIED


def test_other_interpreter_ignores_the_bytecode():
    rec = _record(GOOD, "add", (2, 3), bytecode=_code(HIDDEN, "add"))
    rec.python = dict(rec.python, magic="00000000")
    for trust in (False, True):
        result = replay_record(rec, modes=MODES, trust_bytecode=trust)
        assert result.code_from == FROM_SOURCE and result.bytecode_note is None and result.ok
    assert not hasattr(sys, "framehook_hidden_ran")


def test_function_missing_from_source_needs_trust():
    rec = _record(GOOD, "add", (2, 3))
    rec.code["source"] = "def other():\n    pass\n"
    with pytest.raises(UntrustedBytecodeError, match="not found in the recorded source.*--trust-bytecode"):
        replay_record(rec, modes=MODES)
    assert replay_record(rec, modes=MODES, trust_bytecode=True).code_from == FROM_TRUSTED


# --- crafted bytecode, refused under trust_bytecode -----------------------------------------

BASE = '''
def target(a, b):
    x = a + b
    if x > 1:
        x = max(x, len("k"))
    return x
'''
CLOSURE = '''
def target(a, b):
    def inner(c):
        return a + c
    return inner(b)
'''
TRY = '''
def target(a, b):
    try:
        return a // b
    except ZeroDivisionError:
        return None
'''
GENERATOR = '''
def target(a, b):
    yield a
    yield b
'''


def _first(code: types.CodeType, wanted) -> dis.Instruction:
    for ins in dis.get_instructions(code):
        if wanted(ins):
            return ins
    pytest.skip(f"no such instruction on Python {sys.version_info[0]}.{sys.version_info[1]}")


def _patch(code: types.CodeType, offset: int, *, op: int | None = None, arg: int | None = None) -> types.CodeType:
    raw = bytearray(code.co_code)
    if op is not None:
        raw[offset] = op
    if arg is not None:
        raw[offset + 1] = arg
    return code.replace(co_code=bytes(raw))


def _local_load(ins) -> bool:  # one local (not a pair packed into one operand, as 3.13+ also has)
    return ins.opname.startswith("LOAD_FAST") and ins.opname.count("FAST") == 1


def _starts(code: types.CodeType) -> set:
    return {i.offset for i in dis.get_instructions(code) if i.opname != "CACHE"}


def crafted_local_200(base):
    return _patch(base, _first(base, _local_load).offset, arg=200)


def crafted_const(base):
    return _patch(base, _first(base, lambda i: i.opname == "LOAD_CONST").offset, arg=250)


def crafted_name(base):
    return _patch(base, _first(base, lambda i: i.opname == "LOAD_GLOBAL").offset, arg=250)


def crafted_jump_out(base):
    jump = _first(base, lambda i: i.opcode in bytecheck._JUMPS and "BACKWARD" not in i.opname)
    return _patch(base, jump.offset, arg=250)


def crafted_jump_mid_instruction(base):
    jump = _first(base, lambda i: i.opcode in bytecheck._JUMPS and "BACKWARD" not in i.opname)
    starts = _starts(base)
    for arg in range(256):
        crafted = _patch(base, jump.offset, arg=arg)
        target = next(i for i in dis.get_instructions(crafted) if i.offset == jump.offset).argval
        if 0 <= target < len(base.co_code) and target not in starts:
            return crafted
    pytest.skip(
        "every code unit starts an instruction here (jump operands count whole instructions "
        "and there are no inline caches)"
    )


def crafted_huge_stacksize(base):
    return base.replace(co_stacksize=1 << 20)


def crafted_small_stacksize(base):
    return base.replace(co_stacksize=1)


def crafted_underflow(base):
    return _patch(base, _first(base, _local_load).offset, op=dis.opmap["POP_TOP"], arg=0)


def crafted_nested(base):
    outer = _code(CLOSURE, "target")
    inner = next(c for c in outer.co_consts if isinstance(c, types.CodeType))
    bad = _patch(inner, _first(inner, _local_load).offset, arg=200)
    return outer.replace(co_consts=tuple(bad if c is inner else c for c in outer.co_consts))


def crafted_exception_table(base):
    if not hasattr(base, "co_exceptiontable"):
        pytest.skip("handlers are pushed by SETUP_* instructions before 3.11 (no exception table)")
    code = _code(TRY, "target")
    # one entry: offsets 0-2 handled at unit 63 (byte 126), past the end of this code
    assert len(code.co_code) < 126
    return code.replace(co_exceptiontable=b"\x80\x01\x3f\x00")


def crafted_yield_without_generator(base):
    code = _code(GENERATOR, "target")
    return code.replace(co_flags=code.co_flags & ~inspect.CO_GENERATOR)


def crafted_copy_free_vars(base):
    if not SHARED_SLOTS:
        pytest.skip("COPY_FREE_VARS exists from 3.11 (free variables were copied by the frame before)")
    outer = _code(CLOSURE, "target")
    inner = next(c for c in outer.co_consts if isinstance(c, types.CodeType))
    ins = _first(inner, lambda i: i.opname == "COPY_FREE_VARS")
    bad = _patch(inner, ins.offset, arg=9)
    return outer.replace(co_consts=tuple(bad if c is inner else c for c in outer.co_consts))


CRAFTED = {
    "load_fast_200": (crafted_local_200, BASE, "refers to local variable 200"),
    "const_index": (crafted_const, BASE, "refers to constant 250"),
    "name_index": (crafted_name, BASE, "refers to name"),
    "jump_out_of_range": (crafted_jump_out, BASE, "not the start of an instruction"),
    "jump_mid_instruction": (crafted_jump_mid_instruction, BASE, "not the start of an instruction"),
    "absurd_stacksize": (crafted_huge_stacksize, BASE, "co_stacksize 1048576 is outside"),
    "stacksize_too_small": (crafted_small_stacksize, BASE, "exceeds co_stacksize 1"),
    "stack_underflow": (crafted_underflow, BASE, "stack items"),
    "nested_code": (crafted_nested, CLOSURE, "bytecode of target.inner is invalid"),
    "exception_table": (crafted_exception_table, TRY, "exception table entry"),
    "yield_in_function": (crafted_yield_without_generator, GENERATOR, "yields but its flags"),
    "copy_free_vars": (crafted_copy_free_vars, CLOSURE, "free variables"),
}


def _marshalled_with_opcode(code: types.CodeType, offset: int, op: int) -> str:
    """Marshal data of ``code`` with one opcode byte changed: some opcodes crash the
    interpreter when a code object holding them is merely created, so no such object
    can be made here; the bytes are patched instead."""
    data = bytearray(marshal.dumps(code))
    at = data.find(code.co_code)
    assert at > 0 and data.find(code.co_code, at + 1) == -1
    data[at + offset] = op
    return base64.b64encode(bytes(data)).decode("ascii")


@pytest.mark.parametrize("case", sorted(CRAFTED))
def test_crafted_bytecode_is_refused_not_run(case, tmp_path, capsys):
    make, source, fragment = CRAFTED[case]
    crafted = make(_code(BASE, "target"))
    rec = _record(source, "target", (3, 4), bytecode=crafted)
    # Without trust the source runs (a crash here would mean the crafted code ran).
    result = replay_record(rec, modes=MODES)
    assert result.code_from in (FROM_SOURCE, FROM_VERIFIED) and result.ok, result.report()
    if crafted == _code(source, "target"):  # differs only where == does not look (co_stacksize)
        assert result.code_from == FROM_VERIFIED and result.bytecode_note is None
        rec.code["source"] = None  # then only the no-source path can reach it
    else:
        assert result.code_from == FROM_SOURCE and result.bytecode_note == BYTECODE_DIFFERS
    with pytest.raises(InvalidBytecodeError) as info:
        replay_record(rec, modes=MODES, trust_bytecode=True)
    message = str(info.value)
    assert fragment in message and "\n" not in message
    assert isinstance(info.value, SourceUnavailableError)
    path = tmp_path / f"{case}.fhrec"
    save(rec, path)
    assert cli_main(["replay", "--trust-bytecode", "--mode", "plain", str(path)]) == 2
    out = capsys.readouterr().out.strip().splitlines()
    assert len(out) == 1 and out[0].startswith("ERROR") and fragment in out[0]


def _opcodes_never_written() -> list:
    names = ("INSTRUMENTED_LINE", "INSTRUMENTED_INSTRUCTION", "ENTER_EXECUTOR", "CACHE")
    unused = next(n for n in range(1, 256) if n not in dis.opmap.values())
    return [pytest.param(dis.opmap[n], id=n) for n in names if n in dis.opmap] + [pytest.param(unused, id="unused")]


@pytest.mark.parametrize("op", _opcodes_never_written())
def test_opcodes_the_compiler_never_writes_are_refused_before_unmarshalling(op):
    base = _code(BASE, "target")
    rec = _record(BASE, "target", (3, 4))
    rec.code["marshal"] = _marshalled_with_opcode(base, _first(base, _local_load).offset, op)
    with pytest.raises(SourceUnavailableError, match="is not one the compiler writes"):
        replay_record(rec, modes=MODES, trust_bytecode=True)
    result = replay_record(rec, modes=MODES)
    assert result.ok and result.code_from == FROM_SOURCE
    assert "is not one the compiler writes" in result.bytecode_note


def test_crafted_bytecode_without_source_is_refused_before_trust_is_asked():
    rec = _record(BASE, "target", (3, 4), bytecode=crafted_local_200(_code(BASE, "target")))
    rec.code["source"] = None
    with pytest.raises(UntrustedBytecodeError, match="without source"):
        replay_record(rec, modes=MODES)
    with pytest.raises(InvalidBytecodeError, match="local variable 200"):
        replay_record(rec, modes=MODES, trust_bytecode=True)


# --- clean bytecode passes the checks --------------------------------------------------------


def _gen(n):
    for i in range(n):
        yield i * 2
    return "done"


async def _coro(n):
    return n + 1


async def _agen(n):
    for i in range(n):
        yield i


def _closure(a):
    def inner(c):
        return [a + x for x in range(c)]

    return inner


def _handlers(xs):
    total = 0
    for x in xs:
        try:
            total += 10 // x
        except ZeroDivisionError:
            total -= 1
        finally:
            total += 1
    with open(__file__) as fh:
        total += len(fh.readline()) > 0
    return total, {k: v for k, v in enumerate(xs) if v}, {x for x in xs}


@pytest.mark.parametrize(
    "fn,args", [(_gen, (3,)), (_coro, (1,)), (_agen, (2,)), (_closure(2), (3,)), (_handlers, ([0, 1, 2],))]
)
def test_clean_bytecode_replays_when_trusted(fn, args):
    rec = loads(dumps(record_call(fn, args)))
    rec.code["source"] = None  # nothing to verify against: only trust runs it
    result = replay_record(rec, modes=MODES, trust_bytecode=True)
    assert result.code_from == FROM_TRUSTED and result.ok, result.report()


@pytest.mark.parametrize("module", ["asyncio.tasks", "contextlib", "dataclasses", "json.decoder", "typing"])
def test_checks_accept_every_function_of_stdlib_modules(module):
    path = inspect.getsourcefile(importlib.import_module(module))
    with open(path, encoding="utf-8") as fh:
        code = compile(fh.read(), path, "exec", dont_inherit=True)
    checked = 0
    for const in bytecheck._consts(code.co_consts):
        bytecheck.validate(const)
        marshalscan.check(marshal.dumps(const))
        checked += 1
    assert checked >= 5


# --- marshal data is scanned before it is unmarshalled --------------------------------------

BOMBS = {
    "list_2g": b"[" + (2**31 - 1).to_bytes(4, "little"),
    "tuple_2g": b"(" + (2**31 - 1).to_bytes(4, "little"),
    "long_2g_digits": b"l" + (2**31 - 1).to_bytes(4, "little"),
    "bytes_2g": b"s" + (2**31 - 1).to_bytes(4, "little"),
    "list_one_short": b"[" + (1000).to_bytes(4, "little") + b"N" * 999,
    "unknown_type": b"\x01",
    "trailing": b"NN",
    "empty": b"",
}


@pytest.mark.parametrize("name", sorted(BOMBS))
def test_marshal_bombs_refused_before_unmarshalling(name):
    with pytest.raises(marshalscan.MarshalShapeError):
        marshalscan.check(BOMBS[name])
    rec = _record(GOOD, "add", (2, 3))
    rec.code["marshal"] = base64.b64encode(BOMBS[name]).decode("ascii")
    with pytest.raises(SourceUnavailableError, match="marshalled code is corrupt"):
        replay_record(rec, modes=MODES, trust_bytecode=True)
    result = replay_record(rec, modes=MODES)
    assert result.ok and "marshalled code is corrupt" in result.bytecode_note


def test_marshal_scan_accepts_every_constant_kind():
    value = (
        1,
        2.5,
        3j,
        10**100,
        -(10**50),
        b"x",
        "y",
        "\xe9",
        frozenset({1}),
        {1: (2, [None])},
        {3},
        True,
        False,
        ...,
        "a" * 300,
    )
    marshalscan.check(marshal.dumps(value))
    marshalscan.check(marshal.dumps(_code(CLOSURE, "target")))


def test_deeply_nested_constants_are_refused_not_a_crash():
    base = _code(GOOD, "add")
    deep: tuple = (1,)
    for _ in range(1500):
        deep = (deep,)
    crafted = base.replace(co_consts=base.co_consts + (deep,))
    rec = _record(GOOD, "add", (2, 3), bytecode=crafted)
    rec.code["source"] = None
    with pytest.raises(InvalidBytecodeError, match="nest too deeply"):
        replay_record(rec, modes=MODES, trust_bytecode=True)


def test_bytecode_facts_come_from_the_running_compiler_not_version_numbers():
    source = Path(bytecheck.__file__).read_text(encoding="utf-8")
    code_lines = [line.split("#", 1)[0] for line in source.splitlines()]
    assert not [line for line in code_lines if "version_info" in line or "hexversion" in line]
    # what the probes read agrees with the compiler on real code: every name operand,
    # shifted by the flag bits read for its opcode, indexes co_names
    for const in compile(Path(json.__file__).read_text(encoding="utf-8"), json.__file__, "exec").co_consts:
        if isinstance(const, types.CodeType):
            for ins in dis.get_instructions(const):
                if ins.opcode in dis.hasname:
                    index = ins.arg >> bytecheck._NAME_FLAG_BITS.get(ins.opname, 0)
                    assert const.co_names[index] == ins.argval, ins


def test_flag_bits_probe_refuses_nothing_it_cannot_read():
    # a probe whose opcode never appears reads no flag bits
    assert bytecheck._flag_bits("x = 1\nfirst\nprobe\n", "NO_SUCH_OPCODE", "probe") == 0
