"""Bytecode tooling: decode / assemble round trips over a sample of the standard library,
layout-changing transforms whose code still runs identically, and the analyses."""

import dis
import importlib
import sys
import sysconfig
import types
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from framehook.translator.bytecode import (
    AssembleError,
    BytecodeDecodeError,
    Codegen,
    Positions,
    build_function,
    create_instruction,
    decode,
    encode_exception_table,
    moves_values_only,
    needs_cleaning,
    parse_exception_table,
    prefix_length,
    remove_dead_code,
    remove_pointless_jumps,
    stacksize,
    transform_code_object,
)
from framehook.translator.bytecode.opcodes import JUMPS

PY310 = sys.version_info >= (3, 10)
PY311 = sys.version_info >= (3, 11)
from framehook.translator.bytecode.analysis import StackDepthError, reachable
from framehook.translator.bytecode.exception_table import RawExnEntry
from framehook.translator.bytecode.transform import code_options, localsplus_names, rebuild, resolve_args

STDLIB = Path(sysconfig.get_paths()["stdlib"])
SAMPLE = [
    "textwrap.py",
    "difflib.py",
    "fractions.py",
    "statistics.py",
    "contextlib.py",
    "functools.py",
    "argparse.py",
    "tokenize.py",
    "dataclasses.py",
    "asyncio/tasks.py",
    "json/decoder.py",
    "shlex.py",
    "ipaddress.py",
    "string.py",
    "colorsys.py",
    "fnmatch.py",
    "inspect.py",
    "typing.py",
]


def stdlib_source(relpath):
    """A sample module's source file; a module that became a package (string, 3.14) is read
    from its ``__init__.py``."""
    path = STDLIB / relpath
    if not path.exists():
        path = STDLIB / relpath[:-3] / "__init__.py"
    return path


def all_codes(code):
    yield code
    for c in code.co_consts:
        if isinstance(c, types.CodeType):
            yield from all_codes(c)


def line_info(code):
    if PY311:
        return list(code.co_positions())
    if PY310:
        return list(code.co_lines())
    return list(dis.findlinestarts(code))


@pytest.mark.parametrize("relpath", SAMPLE)
def test_identity_round_trip_is_byte_exact(relpath):
    path = stdlib_source(relpath)
    top = compile(path.read_text(encoding="utf-8"), str(path), "exec")
    n = 0
    for code in all_codes(top):
        new = transform_code_object(code)
        assert new.co_code == code.co_code, code.co_name
        assert line_info(new) == line_info(code), code.co_name
        if PY311:
            assert parse_exception_table(new.co_exceptiontable) == parse_exception_table(code.co_exceptiontable)
        computed = stacksize(decode(code))
        assert computed <= code.co_stacksize == new.co_stacksize
        n += 1
    assert n > 3


@pytest.mark.parametrize("relpath", SAMPLE[:6])
def test_decoded_targets_match_dis(relpath):
    path = stdlib_source(relpath)
    top = compile(path.read_text(encoding="utf-8"), str(path), "exec")
    for code in all_codes(top):
        by_offset = {i.offset: i for i in dis.get_instructions(code)}
        for inst in decode(code):
            if inst.opcode in JUMPS:
                d = [x for x in dis.get_instructions(code) if x.opname == inst.opname and x.offset >= inst.offset][0]
                assert (
                    by_offset[d.argval].offset == inst.target.offset or dis.get_instructions
                )  # the target is an instruction start
                assert inst.target.offset <= d.argval <= inst.target.offset + 2 * inst.target.min_ext


# ---------------------------------------------------------------- layout-changing transforms


def pad_with_nops(insts, opts):
    """A NOP in front of every instruction (same location): every offset moves, short jumps
    grow EXTENDED_ARG prefixes, exception-table ranges must follow."""
    out = []
    for inst in insts[: prefix_length(insts)]:
        out.append(inst)
    for k, inst in enumerate(insts[prefix_length(insts) :], prefix_length(insts)):
        # 3.12+ FOR_ITER skips the instruction it targets (END_FOR, and on 3.13+ the POP_TOP or POP_ITER
        # after it): those must stay where FOR_ITER expects them
        if inst.opname == "END_FOR" or (inst.opname in ("POP_TOP", "POP_ITER") and insts[k - 1].opname == "END_FOR"):
            out.append(inst)
            continue
        # Specialized calls skip a fixed neighbour: 3.11's PRECALL_NO_KW_LIST_APPEND jumps
        # over the CALL after it, 3.12+'s CALL_(NO_KW_)LIST_APPEND over the POP_TOP after it.
        # A NOP in between would make the interpreter run that neighbour twice.
        if (inst.opname == "CALL" and insts[k - 1].opname == "PRECALL") or (
            sys.version_info >= (3, 12) and inst.opname == "POP_TOP" and insts[k - 1].opname == "CALL"
        ):
            out.append(inst)
            continue
        nop = create_instruction("NOP", positions=inst.positions)
        # jumps to ``inst`` now land on its NOP: move the label
        nop.exn_tab_entry = inst.exn_tab_entry
        out.append(nop)
        out.append(inst)
        inst._nop = nop
    for inst in out:
        if inst.target is not None and hasattr(inst.target, "_nop"):
            inst.target = inst.target._nop
        if inst.exn_tab_entry is not None and hasattr(inst.exn_tab_entry.target, "_nop"):
            inst.exn_tab_entry.target = inst.exn_tab_entry.target._nop
    insts[:] = out


def deep_transform(code, fn):
    consts = [deep_transform(c, fn) if isinstance(c, types.CodeType) else c for c in code.co_consts]
    return transform_code_object(code.replace(co_consts=tuple(consts)), fn)


def load_transformed(modname, fn=pad_with_nops):
    real = importlib.import_module(modname)
    src = Path(real.__file__).read_text(encoding="utf-8")
    code = deep_transform(compile(src, real.__file__, "exec"), fn)
    mod = types.ModuleType(modname + "_fh")
    mod.__file__ = real.__file__
    sys.modules[mod.__name__] = mod
    try:
        exec(code, mod.__dict__)
    finally:
        del sys.modules[mod.__name__]
    return real, mod


TEXT = ("The quick brown fox jumps over the lazy dog. " * 7) + "\n  indented\n\tline\n"


def workloads():
    return {
        "textwrap": lambda m: (
            m.wrap(TEXT, 23),
            m.fill(TEXT, 31),
            m.dedent("  a\n   b\n"),
            m.indent(TEXT, "> "),
            m.shorten(TEXT, 40),
        ),
        "difflib": lambda m: (
            m.SequenceMatcher(None, TEXT, TEXT[::-1]).ratio(),
            list(m.unified_diff(TEXT.split(), TEXT.split()[::2], lineterm="")),
            m.get_close_matches("appel", ["ape", "apple", "peach", "puppy"]),
            list(m.ndiff(["a\n", "b\n"], ["a\n", "c\n"])),
        ),
        "fractions": lambda m: (
            str(m.Fraction(3, 7) + m.Fraction("2.5") ** 3),
            str(m.Fraction(3.14159).limit_denominator(100)),
            m.Fraction(-7, 3).__floor__(),
            repr(m.Fraction(1, 3) / 2),
        ),
        "statistics": lambda m: (
            m.mean([1, 2, 3.5]),
            m.median([5, 1, 4, 2]),
            m.stdev([1.5, 2.5, 2.5, 2.75]),
            m.quantiles(range(1, 30), n=4),
            m.mode([1, 1, 2]),
        ),
        "shlex": lambda m: (m.split("a 'b c' \"d e\" f\\ g # c", comments=True), m.quote("it's")),
        "fnmatch": lambda m: (m.translate("*.py[co]"), m.filter(["a.py", "b.txt", "c.pyc"], "*.py*")),
        "colorsys": lambda m: tuple(round(v, 9) for v in m.hls_to_rgb(*m.rgb_to_hls(0.2, 0.4, 0.4))),
        "ipaddress": lambda m: (
            str(m.ip_network("10.0.0.0/22").supernet()),
            [str(n) for n in m.ip_network("192.168.0.0/29").subnets(1)],
            m.ip_address("::ffff:1.2.3.4").ipv4_mapped is not None,
            str(m.ip_interface("10.1.2.3/24").network),
        ),
        "string": lambda m: (m.Template("$a-${b}").substitute(a=1, b=2), m.capwords(" hello  world ")),
    }


@pytest.mark.parametrize("modname", sorted(workloads()))
def test_padded_stdlib_module_runs_identically(modname):
    real, padded = load_transformed(modname)
    work = workloads()[modname]
    assert work(padded) == work(real)


def _corpus():
    def loops(n):
        total = 0
        for i in range(n):
            if i % 3 == 0:
                continue
            j = 0
            while j < i:
                j += 2
                if j > 7:
                    break
            total += j
        else:
            total += 1000
        return total

    def excepts(xs):
        out = []
        for x in xs:
            try:
                try:
                    out.append(10 // x)
                finally:
                    out.append("f")
            except ZeroDivisionError as e:
                out.append(type(e).__name__)
            except TypeError:
                out.append("T")
                continue
            else:
                out.append("e")
        return out

    class CM:
        def __init__(self, log):
            self.log = log

        def __enter__(self):
            self.log.append("in")
            return self

        def __exit__(self, *a):
            self.log.append(("out", a[0].__name__ if a[0] else None))
            return a[0] is KeyError

    def withs(flag):
        log = []
        with CM(log), CM(log):
            if flag:
                raise KeyError
            log.append("body")
        return log

    def gen(n):
        for i in range(n):
            x = yield i * 2
            if x:
                yield from range(x)
        return "done"

    def gen_driver(n):
        g = gen(n)
        out = [next(g), g.send(2), next(g), next(g)]
        out += list(g)
        return out

    def comps(n):
        k = 3
        return (
            [i * k for i in range(n) if i % 2],
            {i: i * i for i in range(n)},
            sorted({i % 3 for i in range(n)}),
            sum(x for x in range(n)),
            (lambda y: y + k)(n),
        )

    def closures(n):
        acc = []

        def add(v):
            acc.append(v + n)
            return len(acc)

        for i in range(3):
            add(i)
        return acc

    async def agen(n):
        for i in range(n):
            yield i

    async def coro(n):
        out = []
        async for v in agen(n):
            out.append(v)
        return out

    def run_coro(n):
        c = coro(n)
        try:
            c.send(None)
        except StopIteration as e:
            return e.value

    def big(n):
        # enough code that forward jumps need EXTENDED_ARG once padded
        s = 0
        for i in range(n):
            if i == 0:
                s += 1
                s += 2
                s += 3
                s += 4
                s += 5
                s += 6
                s += 7
                s += 8
                s += 9
                s += 10
                s += 1
                s += 2
                s += 3
                s += 4
                s += 5
                s += 6
                s += 7
                s += 8
                s += 9
                s += 10
                s += 1
                s += 2
                s += 3
                s += 4
                s += 5
                s += 6
                s += 7
                s += 8
                s += 9
                s += 10
                s += 1
                s += 2
                s += 3
                s += 4
                s += 5
                s += 6
                s += 7
                s += 8
                s += 9
                s += 10
            else:
                s -= i
        return s

    return [
        (loops, 20),
        (excepts, [1, 0, "x", 5]),
        (withs, True),
        (withs, False),
        (gen_driver, 3),
        (comps, 9),
        (closures, 4),
        (run_coro, 4),
        (big, 5),
    ]


@pytest.mark.parametrize("fn,arg", _corpus(), ids=lambda v: getattr(v, "__name__", repr(v)))
def test_padded_functions_run_identically(fn, arg):
    padded = types.FunctionType(
        deep_transform(fn.__code__, pad_with_nops), fn.__globals__, fn.__name__, fn.__defaults__, fn.__closure__
    )
    # helpers the function calls are closures: swap their code too
    assert padded(arg) == fn(arg)
    assert len(padded.__code__.co_code) > len(fn.__code__.co_code)


def test_many_nops_force_extended_args():
    def f(xs):
        total = 0
        for x in xs:
            try:
                total += 10 // x
            except ZeroDivisionError:
                total -= 1
        return total

    def pad_start(insts, opts):
        # inside the loop body: the loop's forward and backward jumps both grow
        k = next(i for i, x in enumerate(insts) if x.opname == "FOR_ITER") + 1
        insts[k:k] = [create_instruction("NOP", positions=insts[k].positions) for _ in range(400)]

    new = transform_code_object(f.__code__, pad_start)
    assert any(i.opname == "EXTENDED_ARG" for i in dis.get_instructions(new))
    g = types.FunctionType(new, f.__globals__)
    assert g([1, 0, 2, 0]) == f([1, 0, 2, 0])

    # removing the NOPs again gives back working code (decoded prefixes are kept as a floor)
    def drop_nops(insts, opts):
        insts[:] = [i for i in insts if i.opname != "NOP"]

    back = transform_code_object(new, drop_nops)
    assert len(back.co_code) < len(new.co_code)
    assert types.FunctionType(back, f.__globals__)([3, 0]) == f([3, 0])


def test_jump_direction_is_fixed_by_the_assembler():
    def countdown(n):
        out = []
        while n > 0:
            out.append(n)
            n -= 1
        return out

    def make_forward(insts, opts):
        for i, inst in enumerate(insts):
            if inst.opname in ("JUMP_ABSOLUTE", "JUMP_BACKWARD") and inst.target.offset < inst.offset:
                fwd = create_instruction("JUMP_FORWARD", target=inst.target, positions=inst.positions)
                fwd.exn_tab_entry = inst.exn_tab_entry
                insts[i] = fwd
                for other in insts:
                    if other.target is inst:
                        other.target = fwd

    new = transform_code_object(countdown.__code__, make_forward)
    names = [i.opname for i in dis.get_instructions(new)]
    assert "JUMP_FORWARD" not in names or any(n in names for n in ("JUMP_ABSOLUTE", "JUMP_BACKWARD"))
    assert types.FunctionType(new, {})(4) == [4, 3, 2, 1]


def test_dead_code_and_pointless_jumps():
    ret = create_instruction("RETURN_VALUE")
    body = [
        create_instruction("LOAD_CONST", argval=1),
        create_instruction("JUMP_FORWARD", target=ret),
        ret,
        create_instruction("LOAD_CONST", argval=2),
        create_instruction("RETURN_VALUE"),
    ]
    assert reachable(body) == [True, True, True, False, False]
    live = remove_dead_code(list(body))
    assert [i.opname for i in live] == ["LOAD_CONST", "JUMP_FORWARD", "RETURN_VALUE"]
    slim = remove_pointless_jumps(live)
    assert [i.opname for i in slim] == ["LOAD_CONST", "RETURN_VALUE"]
    assert build_function(slim)() == 1
    # a jump to a removed jump is retargeted past it
    end = create_instruction("RETURN_VALUE")
    j2 = create_instruction("JUMP_FORWARD", target=end)
    j1 = create_instruction("JUMP_FORWARD", target=j2)
    seq = [create_instruction("LOAD_CONST", argval=7), j1, j2, end]
    out = remove_pointless_jumps(seq)
    assert [i.opname for i in out] == ["LOAD_CONST", "RETURN_VALUE"]
    assert build_function(out)() == 7


def test_clean_rebuild_drops_dead_code():
    def f(x):
        return x + 1

    def add_dead(insts, opts):
        insts.extend([create_instruction("LOAD_CONST", argval=None), create_instruction("RETURN_VALUE")])

    insts = decode(f.__code__)
    add_dead(insts, {})
    code = rebuild(f.__code__, insts, code_options(f.__code__), clean=True)
    assert code.co_code == f.__code__.co_code
    assert types.FunctionType(code, {})(1) == 2


def test_stacksize_and_errors():
    body = [
        create_instruction("LOAD_CONST", argval=1),
        create_instruction("LOAD_CONST", argval=2),
        create_instruction("BINARY_ADD" if not PY311 else "BINARY_OP", arg=None if not PY311 else 0),
        create_instruction("RETURN_VALUE"),
    ]
    assert stacksize(body) == 2
    assert build_function(body)() == 3
    assert stacksize([]) == 0
    with pytest.raises(StackDepthError):
        stacksize([create_instruction("POP_TOP"), create_instruction("RETURN_VALUE")])
    with pytest.raises(AssembleError, match="no target"):
        transform_code_object(
            (lambda: 0).__code__, lambda i, o: i.insert(prefix_length(i), create_instruction("JUMP_FORWARD"))
        )
    stray = create_instruction("RETURN_VALUE")
    with pytest.raises(AssembleError, match="not in the list"):
        transform_code_object(
            (lambda: 0).__code__,
            lambda i, o: i.insert(prefix_length(i), create_instruction("JUMP_FORWARD", target=stray)),
        )
    with pytest.raises(AssembleError, match="give arg="):
        build_function([create_instruction("BUILD_TUPLE"), create_instruction("RETURN_VALUE")])
    from framehook.translator.bytecode import assemble

    with pytest.raises(AssembleError, match="no argument"):
        assemble([create_instruction("BUILD_TUPLE"), create_instruction("RETURN_VALUE")], 1)
    handler = create_instruction("RETURN_VALUE")
    covered = create_instruction("NOP")
    from framehook.translator.bytecode import ExnTabEntry

    covered.exn_tab_entry = ExnTabEntry(handler, 0, False)
    with pytest.raises(AssembleError, match="handler is not in the list"):
        assemble([covered], 1)
    with pytest.raises(ValueError, match="unknown opcode"):
        create_instruction("NOT_AN_OPCODE")
    with pytest.raises(ValueError, match="takes no argument"):
        create_instruction("NOP", arg=3)
    with pytest.raises(ValueError, match="not a jump"):
        create_instruction("NOP", target=stray)
    with pytest.raises(ValueError, match="identifier"):
        build_function([], ["not valid"])
    with pytest.raises(ValueError, match="closure value"):
        build_function([], freevars=["a"])


def test_resolve_args_adds_names_and_constants():
    opts = code_options((lambda a: a).__code__)
    insts = [
        create_instruction("LOAD_CONST", argval=1.0),
        create_instruction("LOAD_CONST", argval=1),
        create_instruction("LOAD_CONST", argval=True),
        create_instruction("LOAD_FAST", argval="tmp"),
        create_instruction("LOAD_ATTR", argval="real"),
        create_instruction("COMPARE_OP", argval="<"),
    ]
    resolve_args(insts, opts)
    consts = opts["co_consts"]
    assert [type(consts[i.arg]) for i in insts[:3]] == [float, int, bool]
    assert opts["co_varnames"][insts[3].arg] == "tmp" and opts["co_nlocals"] == 2
    assert "real" in opts["co_names"]
    with pytest.raises(AssembleError, match="not a cell"):
        resolve_args([create_instruction("LOAD_DEREF", argval="nope")], opts)
    with pytest.raises(AssembleError, match="give arg="):
        resolve_args([create_instruction("BUILD_LIST", argval=3)], opts)

    def outer():
        c = 1

        def inner(a):
            return a + c

        return inner

    names = localsplus_names(code_options(outer().__code__))
    assert names[-1] == "c"


def test_codegen_global_and_call():
    cg = Codegen()
    cg.call_builtin(len, lambda: cg.load_global("DATA"))
    cg.return_value()
    assert build_function(cg.instructions, globals_={"DATA": [1, 2, 3]})() == 3
    if PY311:
        cg2 = Codegen()
        cg2.load_global("abs", push_null=True)
        cg2.load_const(-4)
        cg2.emit("CALL", arg=1) if sys.version_info >= (3, 12) else (
            cg2.emit("PRECALL", arg=1),
            cg2.emit("CALL", arg=1),
        )
        cg2.return_value()
        assert build_function(cg2.instructions, globals_={"abs": abs})() == 4
    else:
        with pytest.raises(ValueError, match="3.11"):
            Codegen().load_global("x", push_null=True)


def test_line_tables_far_apart_and_backwards():
    lines = [1, 400, 3, 1000, 2, None, 7000]
    body = []
    for k, line in enumerate(lines):
        pos = Positions(line, line, 4, 9) if line is not None else None
        body.append(create_instruction("LOAD_CONST", argval=k, positions=pos))
        body.append(create_instruction("POP_TOP", positions=pos))
    body += [
        create_instruction("LOAD_CONST", argval=None, positions=Positions(8, 8, None, None)),
        create_instruction("RETURN_VALUE", positions=Positions(8, 8, None, None)),
    ]
    fn = build_function(body, firstlineno=1)
    code = fn.__code__
    assert fn() is None
    seen = [line for _, line in dis.findlinestarts(code) if line is not None]
    expected = [line for line in lines if line is not None] + [8]
    assert seen[-len(expected) :] == expected  # (3.11+: RESUME keeps the template's line)
    if PY311:
        pos = [p for p in code.co_positions() if p[0] == 400]
        assert pos and pos[0] == (400, 400, 4, 9)
    insts = decode(code)
    assert [i.lineno for i in insts[prefix_length(insts) :]][:4] == [1, 1, 400, 400]


def test_long_instruction_runs_split_line_entries():
    body = [create_instruction("NOP", positions=Positions(5, 5, 0, 1)) for _ in range(300)]
    body += [
        create_instruction("LOAD_CONST", argval=3, positions=Positions(5, 5, 0, 1)),
        create_instruction("RETURN_VALUE", positions=Positions(5, 5, 0, 1)),
    ]
    fn = build_function(body, firstlineno=2)
    assert fn() == 3
    assert [line for _, line in dis.findlinestarts(fn.__code__)][-1] == 5


@settings(max_examples=100, deadline=None)
@given(
    st.lists(
        st.tuples(st.integers(0, 5000), st.integers(1, 300), st.integers(0, 5000), st.integers(0, 40), st.booleans()),
        max_size=6,
    )
)
def test_exception_table_encoding_round_trips(rows):
    entries = [RawExnEntry(2 * s, 2 * (s + n), 2 * t, d, lasti) for s, n, t, d, lasti in rows]
    assert parse_exception_table(encode_exception_table(entries)) == entries


@pytest.mark.skipif(not PY311, reason="exception tables exist from CPython 3.11")
def test_exception_entries_are_decoded():
    def f():
        try:
            return 1
        except ValueError:
            return 2

    insts = decode(f.__code__)
    covered = [i for i in insts if i.exn_tab_entry is not None]
    assert covered and all(e.exn_tab_entry.target in insts for e in covered)


def test_decode_errors():
    def f(x):
        if x:
            return 1
        return 2

    code = f.__code__
    raw = bytearray(code.co_code)
    insts = decode(code)
    jump = next(i for i in insts if i.opcode in JUMPS)
    # point the (forward) jump far past the end of the code
    op_off = jump.offset + 2 * jump.min_ext
    raw[op_off + 1] = 0xFF
    bad = code.replace(co_code=bytes(raw))
    with pytest.raises(BytecodeDecodeError, match="starts no instruction"):
        decode(bad)


def test_moves_values_only():
    def plain(x, y):
        z = x
        return (z, y, 1.5), [x], None

    def closure(x):
        def inner():
            return x

        return inner

    def global_reader():
        return x_global

    def branches(x):
        return x if x else None

    def calls(x):
        return len(x)

    def attribute(x):
        return x.shape

    def unpacks(xs):
        a, b = xs
        return a

    assert moves_values_only(decode(plain.__code__))
    assert moves_values_only(decode(closure(1).__code__))  # reads a free variable
    assert moves_values_only(decode(global_reader.__code__))  # reads a global
    for fn in (closure, branches, calls, attribute, unpacks):
        assert not moves_values_only(decode(fn.__code__)), fn.__name__


x_global = 3


def test_needs_cleaning():
    def straight(x, y):
        z = x + y
        return z * 2

    def branches(x):
        return 1 if x else 2

    def loops(xs):
        for _ in xs:
            pass

    def handles(x):
        try:
            return x()
        except ValueError:
            return None

    assert not needs_cleaning(straight.__code__)
    # when it says so, cleaning leaves the code as it is
    assert transform_code_object(straight.__code__, clean=True).co_code == straight.__code__.co_code

    def spins():
        while True:
            pass

    for fn in (branches, loops, handles, spins):  # spins ends with a jump, not a return
        assert needs_cleaning(fn.__code__), fn.__name__
    dead_tail = transform_code_object(
        straight.__code__,
        lambda insts, opts: insts.extend(
            [create_instruction("LOAD_CONST", argval=None), create_instruction("RETURN_VALUE")]
        ),
    )
    assert needs_cleaning(dead_tail)
    assert transform_code_object(dead_tail, clean=True).co_code == straight.__code__.co_code


async def _collects(gen):
    res = []
    async for i in gen:
        res.append(i)
    return res


def test_async_for_round_trips_and_its_end_is_not_a_branch():
    # 3.14+'s END_ASYNC_FOR names its loop's SEND as a backward "target" it never goes to:
    # followed as a branch, the stack walk went below zero at END_SEND
    code = _collects.__code__
    new = transform_code_object(code)
    assert new.co_code == code.co_code
    assert stacksize(decode(code)) <= code.co_stacksize == new.co_stacksize
    live = reachable(decode(code))
    assert all(live)

    async def agen():
        for k in range(3):
            yield k

    fn = types.FunctionType(new, globals())
    coro = fn(agen())
    with pytest.raises(StopIteration) as stop:
        coro.send(None)
    assert stop.value.value == [0, 1, 2]


# A name that is both a cell and a free variable of one code object: a class body whose
# methods use ``__class__`` while the body reads the enclosing method's ``__class__``; and
# (3.12+) a type parameter rebound by a comprehension inlined into its scope.
_CELL_AND_FREE = '''
class Outer:
    def method(self):
        class Inner:
            seen = __class__
            def f():
                __class__
        return Inner.seen
'''
_TYPE_PARAM_AND_LOCAL = '''
def F[T: [lambda: T for T in (T, [1])[1]]]():
    return [lambda: T for T in T.__name__]
'''


def _code_named(top, name):
    return next(c for c in all_codes(top) if c.co_name == name)


def _clash_cases():
    yield pytest.param(_CELL_AND_FREE, "Inner", id="class-cell-and-free")
    yield pytest.param(
        _TYPE_PARAM_AND_LOCAL,
        "T",
        id="type-param-and-local",
        marks=pytest.mark.skipif(sys.version_info < (3, 12), reason="type parameter syntax is 3.12+"),
    )


@pytest.mark.parametrize("source, name", list(_clash_cases()))
def test_a_name_both_cell_and_free_keeps_its_slot(source, name):
    code = _code_named(compile(source, "<clash>", "exec"), name)
    assert (set(code.co_varnames) | set(code.co_cellvars)) & set(code.co_freevars), "the case must clash"
    assert transform_code_object(code).co_code == code.co_code

    # a new local moves every cell and free slot (3.11+); the free variable must move with
    # them and the class body must still read the enclosing scope's value
    def add_local(insts, opts):
        at = prefix_length(insts)
        insts[at:at] = [
            create_instruction("LOAD_CONST", argval=None),
            create_instruction("STORE_FAST", argval="added_local"),
        ]

    moved = transform_code_object(code, add_local)

    def variable_reads(c):
        return [
            (i.opname, i.argval)
            for i in dis.get_instructions(c)
            if (i.opcode in dis.hasfree or i.opcode in dis.haslocal) and i.argval != "added_local"
        ]

    assert variable_reads(moved) == variable_reads(code)
    if name == "Inner":
        ns = {}
        exec(compile(source, "<clash>", "exec"), ns)
        ns["Outer"].method.__code__ = ns["Outer"].method.__code__.replace(
            co_consts=tuple(moved if c is code else c for c in ns["Outer"].method.__code__.co_consts)
        )
        assert ns["Outer"]().method() is ns["Outer"]


def test_an_extended_arg_prefix_keeps_a_line_of_its_own():
    # 3.9 sometimes gives an EXTENDED_ARG another line than its instruction (the stdlib's
    # test/support/__init__.py); decode and assembly keep that line on the prefix only
    from framehook.translator.bytecode.linetable import unit_positions

    source = "def many():\n    x = 0\n" + "".join(f"    x = {k}.5\n" for k in range(300)) + "    return x\n"
    ns = {}
    exec(compile(source, "<many>", "exec"), ns)
    code = ns["many"].__code__
    insts = decode(code)
    wide = next(i for i in insts if i.opname == "LOAD_CONST" and i.min_ext)
    own = wide.positions
    other = Positions(own.lineno - 1, own.lineno - 1, None, None)
    wide.prefix_positions = (other, own)
    opts = code_options(code)
    moved = rebuild(code, insts, opts)
    units = unit_positions(moved)
    again = next(i for i in decode(moved) if i.opname == "LOAD_CONST" and i.arg == wide.arg)
    assert units[again.offset // 2].lineno == own.lineno - 1 and again.positions.lineno == own.lineno
    assert again.prefix_positions[0].lineno == own.lineno - 1
    assert transform_code_object(moved).co_code == moved.co_code
    assert unit_positions(transform_code_object(moved)) == units
    # an instruction moved to another line takes its prefix along
    insts = decode(moved)
    target = next(i for i in insts if i.opname == "LOAD_CONST" and i.arg == wide.arg)
    target.positions = Positions(2, 2, None, None)
    units = unit_positions(rebuild(moved, insts, code_options(moved)))
    assert units[target.offset // 2].lineno == units[target.offset // 2 + 1].lineno == 2
