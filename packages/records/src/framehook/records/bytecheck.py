"""Static checks on recorded bytecode before it is run with trust_bytecode=True.

Nothing here executes the code. The checks are a safety net against corrupt and crafted
records (an out-of-range operand makes the interpreter read or write outside its frame),
not a verifier that makes arbitrary bytecode safe; FORMAT.md lists exactly what is checked.
Every refusal is an InvalidBytecodeError with a one-line message.
"""

from __future__ import annotations

import dis
import opcode
import types
from typing import Iterator

from .errors import InvalidBytecodeError
from .marshalscan import MarshalShapeError

# --- What this interpreter's bytecode looks like (one place; named by behaviour) ---------
# Each fact is read from the running compiler and ``dis``, never from a version number or a
# list of one version's opcodes: the translator keeps the per-version knowledge of
# framehook, and this package installs without it.


def _compiled(source: str) -> types.CodeType:
    return compile(source, "<bytecheck probe>", "exec")


def _find_code(code: types.CodeType, name: str) -> types.CodeType:
    """The code object named ``name`` nested in ``code``'s constants (depth first)."""
    for const in code.co_consts:
        if isinstance(const, types.CodeType):
            if const.co_name == name:
                return const
            try:
                return _find_code(const, name)
            except LookupError:
                pass
    raise LookupError(name)


def _instructions(code: types.CodeType, name: str | None = None) -> list:
    if name is not None:
        code = _find_code(code, name)
    return [i for i in dis.get_instructions(code) if i.opname != "CACHE"]


def _flag_bits(source: str, opname: str, name: str, function: str | None = None) -> int:
    """How many low bits of ``opname``'s argument sit under its name index, as the
    compiler writes them for ``source`` (which loads another name first, so that the
    index is not 0, then ``name`` with ``opname``)."""
    code = _compiled(source)
    if function is not None:
        code = _find_code(code, function)
    index = code.co_names.index(name)
    for ins in _instructions(code):
        if ins.opname == opname and ins.argval == name:
            for bits in range(8):
                if ins.arg >> bits == index:  # the flags sit below the index
                    return bits
    return 0


def _name_flag_bits() -> dict:
    """Name operands whose low bits carry flags (a global load's push-NULL bit, an
    attribute load's method bit, a super-attribute load's two bits, import flags)."""
    method = "class C:\n def f(self):\n  return super().probe_attr\n"
    return {
        "LOAD_GLOBAL": _flag_bits("def f():\n  first\n  return probe()\n", "LOAD_GLOBAL", "probe", "f"),
        "LOAD_ATTR": _flag_bits("x.probe()\nx.probe\n", "LOAD_ATTR", "probe"),
        "LOAD_SUPER_ATTR": _flag_bits(method, "LOAD_SUPER_ATTR", "probe_attr", "f")
        if _defines("LOAD_SUPER_ATTR")
        else 0,
        "IMPORT_NAME": _flag_bits("import first\nimport probe\n", "IMPORT_NAME", "probe"),
    }


def _defines(opname: str) -> bool:
    return opname in dis.opmap


def _generator_start_depth() -> int:
    """Values on a generator frame's stack before its first instruction: the value it is
    first resumed with sits there where the prologue pops it before any push shows it."""
    code = _find_code(_compiled("def g():\n    yield\n"), "g")
    depth, lowest = 0, 0
    for ins in _instructions(code):
        if ins.opname == "YIELD_VALUE":
            break
        depth += dis.stack_effect(ins.opcode, ins.arg if ins.opcode >= dis.HAVE_ARGUMENT else None)
        lowest = min(lowest, depth)
    return -lowest


def _cells_share_local_slots() -> bool:
    """Locals, cells and free variables share one slot array ("localsplus"): a cell's
    operand counts the locals before it. Otherwise *_FAST ops index the locals and cell
    ops index cells followed by free variables."""
    outer = _find_code(_compiled("def f():\n    g = 1\n    c = 2\n    return lambda: c\n"), "f")
    for ins in _instructions(outer):
        if ins.opcode in dis.hasfree and ins.argval == "c":
            return ins.arg != outer.co_cellvars.index("c")
    return False  # pragma: no cover - every compiler stores the cell


_NAME_FLAG_BITS = _name_flag_bits()
_GENERATOR_START_DEPTH = _generator_start_depth()
_SHARED_SLOTS = _cells_share_local_slots()
# Opcodes that never appear in a code object's co_code as written by the compiler and
# marshal: inline-cache filler, instrumentation and executor hooks.
_NEVER_IN_CO_CODE = ("CACHE", "RESERVED", "ENTER_EXECUTOR", "INTERPRETER_EXIT")


def _no_fallthrough() -> frozenset:
    """Instructions after which control never falls through: returns, raises and the
    unconditional jumps (the jumps whose name says no condition)."""
    jumps = set(dis.hasjrel) | set(dis.hasjabs) | set(getattr(dis, "hasjump", ()))
    names = set()
    for name, op in dis.opmap.items():
        if name.startswith("RETURN_") and name != "RETURN_GENERATOR":
            names.add(name)
        elif name in ("RAISE_VARARGS", "RERAISE"):
            names.add(name)
        elif (op in jumps or op >= 256) and name.startswith("JUMP") and "_IF_" not in name:
            names.add(name)
    return frozenset(names)


_NO_FALLTHROUGH = _no_fallthrough()
# Instructions whose operand reaches down the stack: (minimum depth before it) = arg + extra.
_STACK_OPERAND = {
    "COPY": 0,
    "SWAP": 0,
    "ROT_N": 0,
    "LIST_APPEND": 1,
    "SET_ADD": 1,
    "LIST_EXTEND": 1,
    "SET_UPDATE": 1,
    "DICT_UPDATE": 1,
    "DICT_MERGE": 3,
    "MAP_ADD": 2,
}
# Minimum depth before instructions that read more than their net stack effect shows.
_MIN_INPUTS = {
    "ROT_TWO": 2,
    "ROT_THREE": 3,
    "ROT_FOUR": 4,
    "DUP_TOP": 1,
    "DUP_TOP_TWO": 2,
    "BINARY_OP": 2,
    "COMPARE_OP": 2,
    "IS_OP": 2,
    "CONTAINS_OP": 2,
    "BINARY_SUBSCR": 2,
    "STORE_SUBSCR": 3,
    "DELETE_SUBSCR": 2,
    "STORE_ATTR": 2,
    "BINARY_SLICE": 3,
    "STORE_SLICE": 4,
    "GET_ITER": 1,
    "FOR_ITER": 1,
    "UNARY_NOT": 1,
    "UNARY_NEGATIVE": 1,
    "UNARY_INVERT": 1,
    "TO_BOOL": 1,
    "LOAD_ATTR": 1,
    "FORMAT_VALUE": 1,
    "RETURN_VALUE": 1,
    "YIELD_VALUE": 1,
    "POP_TOP": 1,
}
# Yielding needs the frame to belong to a generator or coroutine object.
_YIELDING = {"YIELD_VALUE", "YIELD_FROM", "SEND", "RETURN_GENERATOR", "GET_YIELD_FROM_ITER"}
_GENERATOR_FLAGS = 0x20 | 0x80 | 0x100 | 0x200  # GENERATOR, COROUTINE, ITERABLE_COROUTINE, ASYNC_GENERATOR
_CO_VARARGS, _CO_VARKEYWORDS = 0x4, 0x8
# Far above what any compiled function needs; a larger co_stacksize is a crafted frame size.
MAX_STACKSIZE = 1 << 16
_MAX_NESTED_CODE = 100


def _cache_units(op: int) -> int:
    """Inline cache entries following ``op`` (none before 3.11; a table by opcode or name after)."""
    entries = getattr(opcode, "_inline_cache_entries", None)
    if entries is None:
        return 0
    if isinstance(entries, (list, tuple)):
        return entries[op] if op < len(entries) else 0
    return entries.get(dis.opname[op], 0)


def _allowed_opcodes() -> frozenset:
    return frozenset(
        op
        for name, op in dis.opmap.items()
        if op < 256 and name not in _NEVER_IN_CO_CODE and not name.startswith("INSTRUMENTED_")
    )


_ALLOWED = _allowed_opcodes()
_EXTENDED_ARG = dis.opmap["EXTENDED_ARG"]
# END_ASYNC_FOR's operand (where dis lists one) points back at its loop for monitoring only:
# execution falls through.
_JUMPS = (frozenset(dis.hasjrel) | frozenset(dis.hasjabs) | frozenset(getattr(dis, "hasjump", ()))) - {
    dis.opmap.get("END_ASYNC_FOR")
}


# --- The checks ----------------------------------------------------------------------------


class _Refuse(Exception):
    pass


def validate(code: types.CodeType, path: str | None = None) -> None:
    """Raise InvalidBytecodeError unless ``code`` and every code object nested in its
    constants pass the static checks (operand indices, jumps, stack depth)."""
    try:
        for where, each in _nested(code, code.co_name, 0):
            try:
                _check_one(each)
            except _Refuse as exc:
                raise InvalidBytecodeError(f"the recorded bytecode of {where} is invalid: {exc}", path) from None
    except RecursionError:  # constants nested deeper than Python's recursion limit
        raise InvalidBytecodeError("the recorded bytecode's constants nest too deeply", path) from None


def _nested(code: types.CodeType, where: str, depth: int) -> Iterator[tuple[str, types.CodeType]]:
    if depth > _MAX_NESTED_CODE:
        raise RecursionError
    yield where, code
    for const in _consts(code.co_consts):
        yield from _nested(const, f"{where}.{const.co_name}", depth + 1)


def _consts(values: tuple) -> Iterator[types.CodeType]:
    for value in values:
        if isinstance(value, types.CodeType):
            yield value
        elif isinstance(value, (tuple, frozenset)):
            yield from _consts(tuple(value))


def _slot_counts(code: types.CodeType) -> tuple[int, int]:
    """(locals addressable by *_FAST ops, slots addressable by cell/free ops)."""
    varnames = code.co_varnames
    if _SHARED_SLOTS:
        shared = set(varnames)
        total = len(varnames) + sum(1 for c in code.co_cellvars if c not in shared) + len(code.co_freevars)
        return total, total
    return min(code.co_nlocals, len(varnames)), len(code.co_cellvars) + len(code.co_freevars)


def _check_one(code: types.CodeType) -> None:
    raw = code.co_code
    if not 0 <= code.co_stacksize <= MAX_STACKSIZE:
        raise _Refuse(f"co_stacksize {code.co_stacksize} is outside 0-{MAX_STACKSIZE}")
    local_slots, cell_slots = _slot_counts(code)
    args = (
        code.co_argcount
        + code.co_kwonlyargcount
        + bool(code.co_flags & _CO_VARARGS)
        + bool(code.co_flags & _CO_VARKEYWORDS)
    )
    if args > local_slots:
        raise _Refuse(f"{args} arguments but only {local_slots} local variable slots")
    _check_operands(code, raw, local_slots, cell_slots)
    instructions = _decode(code)
    _check_flow(code, instructions)


def check_opcodes(raw: bytes) -> None:
    """Refuse raw bytecode holding an opcode the compiler never writes or non-zero inline
    caches; run on marshal data before it is unmarshalled (see marshalscan.check)."""
    try:
        for _ in _units(raw):
            pass
    except _Refuse as exc:
        raise MarshalShapeError(f"bytecode: {exc}") from None


def _units(raw: bytes) -> Iterator[tuple[int, int, int]]:
    """(offset, opcode, argument with EXTENDED_ARG folded in) per instruction, checking that
    every opcode is one the compiler writes and every inline cache unit is zero."""
    if not raw or len(raw) % 2:
        raise _Refuse(f"co_code has {len(raw)} bytes (expected a non-zero even number)")
    offset, ext = 0, 0
    while offset < len(raw):
        op, arg = raw[offset], raw[offset + 1] | ext
        if op not in _ALLOWED:
            raise _Refuse(f"opcode {op} ({dis.opname[op]}) at offset {offset} is not one the compiler writes")
        ext = arg << 8 if op == _EXTENDED_ARG else 0
        yield offset, op, arg
        offset += 2
        for _ in range(_cache_units(op)):
            if offset >= len(raw):
                raise _Refuse(f"{dis.opname[op]} at offset {offset - 2} is missing its inline cache")
            if raw[offset] or raw[offset + 1]:
                raise _Refuse(f"the inline cache at offset {offset} is not zeroed")
            offset += 2
    if ext:
        raise _Refuse("co_code ends with EXTENDED_ARG")


def _check_operands(code: types.CodeType, raw: bytes, local_slots: int, cell_slots: int) -> None:
    """Indices in range for every instruction's operand (walking co_code unit by unit)."""
    local_ops, free_ops = set(dis.haslocal), set(dis.hasfree)
    const_ops, name_ops = set(dis.hasconst), set(dis.hasname)
    yields = False
    for offset, op, arg in _units(raw):
        name = dis.opname[op]
        yields = yields or name in _YIELDING
        if op in local_ops and name.count("FAST") == 2:  # two 4-bit local indices
            _index(max(arg >> 4, arg & 15), local_slots, "local variable", name, offset)
        elif op in local_ops:
            _index(arg, local_slots if "FAST" in name else cell_slots, "local variable", name, offset)
        elif op in free_ops:
            _index(arg, cell_slots, "cell or free variable", name, offset)
        elif op in const_ops:
            _index(arg, len(code.co_consts), "constant", name, offset)
        elif op in name_ops:
            _index(arg >> _NAME_FLAG_BITS.get(name, 0), len(code.co_names), "name", name, offset)
        elif name == "COPY_FREE_VARS" and arg != len(code.co_freevars):
            raise _Refuse(
                f"COPY_FREE_VARS {arg} at offset {offset} but the code has {len(code.co_freevars)} free variables"
            )
    if yields and not code.co_flags & _GENERATOR_FLAGS:
        raise _Refuse("it yields but its flags do not make it a generator or coroutine")


def _index(value: int, size: int, what: str, name: str, offset: int) -> None:
    if value >= size:
        raise _Refuse(f"{name} {value} at offset {offset} refers to {what} {value}, but there are only {size}")


def _decode(code: types.CodeType) -> list:
    """The instructions as dis reads them (its operand lookups fail on anything out of range)."""
    try:
        return [i for i in dis.get_instructions(code) if i.opname != "CACHE"]
    except (IndexError, KeyError, ValueError, TypeError) as exc:
        raise _Refuse(f"an operand is out of range ({type(exc).__name__}: {exc})") from None


def _exception_entries(code: types.CodeType) -> list:
    parse = getattr(dis, "_parse_exception_table", None)
    if parse is None:  # no exception table: handlers are pushed by SETUP_* jumps
        return []
    try:
        return list(parse(code))
    except (IndexError, ValueError, TypeError) as exc:
        raise _Refuse(f"the exception table is corrupt ({type(exc).__name__})") from None


def _check_flow(code: types.CodeType, instructions: list) -> None:
    """Jumps land on instruction starts inside the code; the stack depth along every path
    stays within 0..co_stacksize and agrees where paths meet."""
    index = {ins.offset: n for n, ins in enumerate(instructions)}
    size = len(code.co_code)
    entries = []
    for entry in _exception_entries(code):
        if not (0 <= entry.start < entry.end <= size) or entry.target not in index:
            raise _Refuse(f"exception table entry {entry.start}-{entry.end} -> {entry.target} is out of range")
        entries.append((index[entry.target], entry.depth + int(entry.lasti) + 1))
    depth_at: dict[int, int] = {}
    start = _GENERATOR_START_DEPTH if code.co_flags & _GENERATOR_FLAGS else 0
    work = [(0, start)] + entries
    while work:
        n, depth = work.pop()
        while True:
            if n >= len(instructions):
                raise _Refuse("execution can run past the end of the code")
            seen = depth_at.get(n)
            if seen is not None:
                if seen != depth:
                    raise _Refuse(
                        f"stack depth at offset {instructions[n].offset} is {seen} on one path and {depth} on another"
                    )
                break
            depth_at[n] = depth
            ins = instructions[n]
            _check_depth(code, ins, depth)
            arg = ins.arg if ins.arg is not None else 0
            has_arg = ins.opcode >= dis.HAVE_ARGUMENT
            if ins.opcode in _JUMPS:
                target = ins.argval
                if not isinstance(target, int) or target not in index:
                    raise _Refuse(
                        f"{ins.opname} at offset {ins.offset} jumps to {target!r}, not the start of an instruction"
                    )
                if instructions[index[target]].opname == "END_FOR" and index[target] + 1 >= len(instructions):
                    raise _Refuse(f"FOR_ITER at offset {ins.offset} exits past the end of the code")
                work.append((index[target], depth + _effect(ins, arg if has_arg else None, True)))
            if ins.opname in _NO_FALLTHROUGH:
                break
            depth += _effect(ins, arg if has_arg else None, False)
            n += 1


def _effect(ins, arg: int | None, jump: bool) -> int:
    try:
        return dis.stack_effect(ins.opcode, arg, jump=jump)
    except ValueError as exc:
        raise _Refuse(f"{ins.opname} at offset {ins.offset}: {exc}") from None


def _check_depth(code: types.CodeType, ins, depth: int) -> None:
    arg = ins.arg or 0
    need = _MIN_INPUTS.get(ins.opname, 0)
    if ins.opname.startswith(("BINARY_", "INPLACE_")):  # two operands, one result
        need = max(need, 2)
    if ins.opname in _STACK_OPERAND:
        need = max(need, arg + _STACK_OPERAND[ins.opname])
    if depth < need:
        raise _Refuse(f"{ins.opname} at offset {ins.offset} needs {need} stack items, {depth} there")
    if depth > code.co_stacksize:
        raise _Refuse(f"stack depth {depth} at offset {ins.offset} exceeds co_stacksize {code.co_stacksize}")
    if ins.opname in _STACK_OPERAND and arg < 1:
        raise _Refuse(f"{ins.opname} {arg} at offset {ins.offset} is not a stack position")
