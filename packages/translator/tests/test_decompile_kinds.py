"""The decompiler on real code, and its independence of concrete opcode names.

A sample of the standard library's code objects is decompiled: every result must compile,
and the simple pure functions among them (and the ones below) must return what the
original returns on the same inputs, both computed here. The decompiler's modules must
name no opcode that exists on only some CPython versions: they read kinds and operands.
"""

import ast
import builtins
import importlib
import io
import math
import re
import tokenize
import types
from pathlib import Path

import pytest

from framehook.translator.bytecode import decode, kinds, prefix_length
from framehook.translator.bytecode.kinds import Kind
from framehook.translator.decompiler import decompile as decompile_module
from framehook.translator.decompiler.decompile import decompile
from framehook.translator.decompiler.render import signature_text
from code_samples import nested_codes

_MODULES = ("textwrap", "json.decoder", "json.encoder", "argparse", "collections")
_CO_GENERATOR_LIKE = 0x20 | 0x80 | 0x100 | 0x200  # generator, coroutine, iterable coroutine, async generator
_INPUTS = (0, 1, -3, 2.5, "ab", None, (1, 2), [3, 1])


# ---------------------------------------------------------------- pure functions of our own
def p_arith(a, b):
    return (a + b) * 2 - a % 7 // 3, -(a**2), ~int(a) & 5 | 2 ^ 1


def p_compare(a, b):
    return a < b <= 10, a is None, b is not None, a in (1, 2), b not in [3]


def p_branches(a, b):
    if a is None:
        return "none"
    if a > b and b:
        return a - b
    return (a or b) and not b


def p_calls(a, b):
    return max(a, b, key=abs), sorted([a, b], reverse=True), divmod(a, b or 1), "{}-{}".format(a, b)


def p_displays(a, b):
    x, y = b, a
    first, *rest = [a, b, x]
    return {"a": a, b: y}, {a, 1}, (x, *rest), [first, *rest][1:], (a, b)[::-1]


def p_strings(a, b):
    return f"{a!r:>6}|{b:.2f}|{a}", str(a).upper().strip("-"), "".join([str(a), str(b)])


def p_subscripts(a, b):
    d = {a: b}
    d[b] = a
    items = list(range(4))
    items[1:3] = [a]
    return d, items, items[-1], d.get(a, 0)


def p_conditional(a, b):
    return a if a > b else b, (a > 0) + (b < 0), bool(a and b)


_OURS = (p_arith, p_compare, p_branches, p_calls, p_displays, p_strings, p_subscripts, p_conditional)


# ---------------------------------------------------------------- helpers
def _sample():
    """(module globals, code object) of every code object of the sample modules."""
    for name in _MODULES:
        module = importlib.import_module(name)
        with open(module.__file__, encoding="utf-8") as f:
            top = compile(f.read(), module.__file__, "exec")
        for code in nested_codes(top):
            if all(n.isidentifier() for n in code.co_varnames):  # not a comprehension's ``.0``
                yield vars(module), code


def _decompiled(code):
    """The code's decompilation and the constants it named."""
    names = {}

    def const_name(value):
        for name, v in names.items():
            if v is value:
                return name
        name = f"___k{len(names)}"
        names[name] = value
        return name

    insts = decode(code)
    return decompile(insts, prefix_length(insts), const_name=const_name, consts=code.co_consts), names


def _name(code):
    return code.co_name if code.co_name.isidentifier() else "_anonymous"  # <lambda>, <module>, ...


def _function_text(code, d):
    body = d.text() if d.complete else d.text() + "    pass\n"
    return f"def {_name(code)}({signature_text(code)}):\n{body}"


def _outcome(fn, args, kwargs):
    try:
        return ("ok", fn(*args, **kwargs))
    except Exception as e:  # noqa: BLE001 - the same failure is the same outcome
        return ("raise", type(e))


def _same(a, b):
    if a[0] != b[0] or type(a[1]) is not type(b[1]):
        return False
    if a[0] == "raise" or a[1] == b[1]:
        return True
    if isinstance(a[1], float) and math.isnan(a[1]) and math.isnan(b[1]):
        return True
    strip = re.compile(r" at 0x[0-9a-f]+")
    return strip.sub("", repr(a[1])) == strip.sub("", repr(b[1]))


def _calls(code):
    """The argument sets to try: every input in every position, and a mixed one."""
    n = code.co_argcount + code.co_kwonlyargcount
    rows = [[v] * n for v in _INPUTS]
    rows.append([_INPUTS[i % len(_INPUTS)] for i in range(n)])
    for row in rows:
        kwonly = code.co_varnames[code.co_argcount : n]
        yield row[: code.co_argcount], dict(zip(kwonly, row[code.co_argcount :]))


def _check_same_results(code, d, names, namespace):
    text = _function_text(code, d)
    scope = dict(namespace, **names)
    exec(compile(text, "<decompiled>", "exec"), scope)
    mine = scope[_name(code)]
    original = types.FunctionType(code, dict(namespace))
    for args, kwargs in _calls(code):
        a = _outcome(original, *_fresh(args, kwargs))
        b = _outcome(mine, *_fresh(args, kwargs))
        assert _same(a, b), f"{code.co_name}{tuple(args)}: {a} != {b}\n{text}"


def _fresh(args, kwargs):
    copy = lambda v: list(v) if isinstance(v, list) else v  # noqa: E731
    return [copy(v) for v in args], {k: copy(v) for k, v in kwargs.items()}


def _simple_pure(code, d):
    """A plain function that reads only builtins and stores no global."""
    return (
        d.complete
        and not code.co_name.startswith("<")
        and not code.co_flags & _CO_GENERATOR_LIKE
        and not code.co_cellvars
        and not code.co_freevars
        and d.globals <= set(dir(builtins)) - {"print", "open", "input", "exit", "quit", "breakpoint"}
        and not d.global_stores
    )


# ---------------------------------------------------------------- tests
def test_the_sample_decompiles_to_python_that_compiles():
    complete = 0
    for _, code in _sample():
        d, _ = _decompiled(code)
        text = _function_text(code, d)
        compile(text, "<decompiled>", "exec")  # raises on bad output
        complete += d.complete
    assert complete >= 100  # the sample exercises the decompiler, not only its stops


def test_simple_pure_functions_of_the_sample_return_what_the_originals_return():
    checked = 0
    for namespace, code in _sample():
        d, names = _decompiled(code)
        if _simple_pure(code, d):
            _check_same_results(code, d, names, namespace)
            checked += 1
    assert checked >= 50


@pytest.mark.parametrize("fn", _OURS, ids=lambda f: f.__name__)
def test_our_pure_functions_return_what_the_originals_return(fn):
    d, names = _decompiled(fn.__code__)
    assert d.complete, d.reason
    _check_same_results(fn.__code__, d, names, vars(builtins))


def test_every_handler_is_for_a_kind():
    known = {v for k, v in vars(Kind).items() if k.isupper()}
    handled = set(decompile_module._HANDLERS)
    assert handled <= known
    # what straight-line code needs is there
    assert {Kind.CALL, Kind.BRANCH, Kind.JUMP, Kind.LOAD_LOCAL, Kind.RETURN, Kind.FORMAT, Kind.COPY} <= handled


# ---------------------------------------------------------------- no version-only names
#: the opcode names dis.opmap has on every CPython 3.9-3.15 (any other is version-only)
_ON_EVERY_VERSION = frozenset(
    """
    BUILD_LIST BUILD_MAP BUILD_SET BUILD_SLICE BUILD_STRING BUILD_TUPLE CALL_FUNCTION_EX COMPARE_OP
    CONTAINS_OP DELETE_ATTR DELETE_DEREF DELETE_FAST DELETE_GLOBAL DELETE_NAME DELETE_SUBSCR DICT_MERGE
    DICT_UPDATE END_ASYNC_FOR EXTENDED_ARG FOR_ITER GET_AITER GET_ANEXT GET_AWAITABLE GET_ITER IMPORT_FROM
    IMPORT_NAME IS_OP JUMP_FORWARD LIST_APPEND LIST_EXTEND LOAD_ATTR LOAD_BUILD_CLASS LOAD_CLOSURE
    LOAD_CONST LOAD_DEREF LOAD_FAST LOAD_GLOBAL LOAD_NAME MAKE_FUNCTION MAP_ADD NOP POP_EXCEPT POP_TOP
    RAISE_VARARGS RERAISE RETURN_VALUE SETUP_ANNOTATIONS SET_ADD SET_UPDATE STORE_ATTR STORE_DEREF
    STORE_FAST STORE_GLOBAL STORE_NAME STORE_SUBSCR UNARY_INVERT UNARY_NEGATIVE UNARY_NOT UNPACK_EX
    UNPACK_SEQUENCE WITH_EXCEPT_START YIELD_VALUE
    """.split()
)
_SPELLINGS = frozenset(name for name, _ in kinds._ROWS)
_VERSION_CHECK = re.compile(r"^(version_info|hexversion|PY3\d+)$")


def _version_only(name):
    if name.startswith("INSTRUMENTED_"):
        return True
    return name in _SPELLINGS and name not in _ON_EVERY_VERSION


def _offences(path):
    found = []
    with open(path, encoding="utf-8") as f:
        tokens = list(tokenize.generate_tokens(io.StringIO(f.read()).readline))
    for tok in tokens:
        where = f"{path.name}:{tok.start[0]}"
        if tok.type == tokenize.STRING:
            try:
                value = ast.literal_eval(tok.string)
            except (ValueError, SyntaxError):
                continue
            if isinstance(value, str) and _version_only(value):
                found.append(f"{where}: {tok.string}")
        elif tok.type == tokenize.NAME:
            if tok.string.startswith("op_") and _version_only(tok.string[3:]):
                found.append(f"{where}: {tok.string}")
            elif _VERSION_CHECK.match(tok.string):
                found.append(f"{where}: {tok.string}")
    return found


def test_the_scan_knows_version_only_names():
    assert _version_only("CALL_METHOD") and _version_only("LOAD_FAST_BORROW") and _version_only("RESUME")
    assert not _version_only("LOAD_FAST") and not _version_only("POP_TOP") and not _version_only("Kind")
    assert len(_ON_EVERY_VERSION) == 62


def test_the_decompiler_names_no_version_only_opcode():
    folder = Path(decompile_module.__file__).parent
    paths = sorted(folder.glob("*.py"))
    assert len(paths) >= 8
    offences = [o for p in paths for o in _offences(p)]
    assert offences == []


def test_the_decompiler_modules_stay_small():
    folder = Path(decompile_module.__file__).parent
    sizes = {p.name: len(p.read_text(encoding="utf-8").splitlines()) for p in folder.glob("*.py")}
    assert max(sizes.values()) <= 800, sizes
