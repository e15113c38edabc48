"""Hypothesis strategies for whole programs from a typed grammar of Python statements.

A program is a module defining ``f(a, b, x, s, arr, y)`` (``a``, ``b`` ints, ``x`` a float,
``s`` a str, ``arr`` a real numeric array with at least one dimension, ``y`` anything) and
the helpers it needs. Every program terminates quickly (loops run at most a few constant
times, recursion is capped, nothing in a loop grows faster than linearly), is deterministic
(sets hold ints only and are sorted before iteration) and idempotent (globals, classes and
generators are made afresh by each call of ``f``). Coroutines and asynchronous generators run
inside ``f`` on a small driver that sends ``None`` until they finish (no event loop).

Every choice is a Hypothesis draw whose smallest value is the simplest form, so shrinking
moves toward fewer statements and plainer expressions. Syntax newer than the running
interpreter (``match``, ``except*``) is never drawn.
"""

from __future__ import annotations

import dataclasses
import sys
from typing import Any, Callable, Dict, List, Sequence, Tuple

from hypothesis import strategies as st

#: the annotation an annotated assignment gives a value of each kind
_ANNOTATIONS = {"int": "int", "float": "float", "str": "str", "list": "list"}

#: f's parameters and the kind of value each holds
PARAMETERS: Tuple[Tuple[str, str], ...] = (
    ("a", "int"),
    ("b", "int"),
    ("x", "float"),
    ("s", "str"),
    ("arr", "arr"),
    ("y", "any"),
)

# syntax the running interpreter has
HAS_MATCH = sys.version_info >= (3, 10)
HAS_EXCEPT_STAR = sys.version_info >= (3, 11)

DRIVER = '''\
class _Tick:
    """An awaitable that suspends its coroutine once."""

    def __await__(self):
        yield


def _drive(coro):
    """Run a coroutine to its end without an event loop."""
    for _ in range(1000):
        try:
            coro.send(None)
        except StopIteration as stop:
            return stop.value
    raise RuntimeError("coroutine did not finish")
'''

BIG_INTS = (2**64 + 3, -(2**70) + 1, 123456789012345678901234567890, 2**100)
ERRSTATE_VALUES = ("ignore", "warn", "raise")

Env = Dict[str, str]
# one strategy object per range: making them anew on every draw costs more than the draw
_INTS: Dict[Tuple[int, int], st.SearchStrategy[int]] = {}
Lines = List[str]


@dataclasses.dataclass(frozen=True)
class Context:
    """Where a statement goes: in a loop (break/continue allowed), where jumps are forbidden
    (finally and except* bodies), how deep in blocks."""

    loop: bool = False
    jumps_ok: bool = True
    depth: int = 0

    def inner(self, **changes: Any) -> "Context":
        return dataclasses.replace(self, depth=self.depth + 1, **changes)


def indent(lines: Lines) -> Lines:
    return ["    " + line for line in lines]


class Builder:
    """Draws one program; ``draw`` is Hypothesis's."""

    def __init__(self, draw: Callable[[st.SearchStrategy[Any]], Any]) -> None:
        self.draw = draw
        self.counter = 0
        self.module: Lines = []
        self.uses_driver = False
        # loop counters: nothing but the loop itself may rebind them
        self.protected: set = set()
        # names a statement binds, visible to the statements after it only
        self.pending: Env = {}

    # choices ---------------------------------------------------------------------------
    def pick(self, n: int) -> int:
        return self.small(0, n - 1) if n > 1 else 0

    def choice(self, options: Sequence[Any]) -> Any:
        return options[self.pick(len(options))]

    def small(self, low: int = 0, high: int = 5) -> int:
        strategy = _INTS.get((low, high))
        if strategy is None:
            strategy = _INTS[(low, high)] = st.integers(low, high)
        return self.draw(strategy)

    def fresh(self, prefix: str) -> str:
        self.counter += 1
        return f"{prefix}{self.counter}"

    def names(self, env: Env, kind: str) -> List[str]:
        return [n for n, k in env.items() if k == kind]

    # expressions -----------------------------------------------------------------------
    def int_expr(self, env: Env, ctx: Context, depth: int = 0) -> str:
        ints = self.names(env, "int")
        leaves: List[Callable[[], str]] = [
            lambda: str(self.small(0, 9)),
            lambda: self.choice(ints) if ints else "a",
            lambda: "len(s)",
            lambda: self.choice(("arr.ndim", "arr.size", "int(np.count_nonzero(arr))")),
            lambda: str(self.choice(BIG_INTS)),
        ]
        lists = self.names(env, "list")
        if lists:
            leaves.append(lambda: self.choice((f"len({self.choice(lists)})", f"sum({self.choice(lists)})")))
        if depth >= 2 or self.pick(2) == 0:
            return self.choice(leaves)()
        sub = lambda: self.int_expr(env, ctx, depth + 1)  # noqa: E731
        forms: List[Callable[[], str]] = [
            lambda: f"({sub()} {self.choice(('+', '-'))} {sub()})",
            lambda: f"({sub()} * {self.small(-3, 7) if ctx.loop else sub()})",
            lambda: f"({sub()} {self.choice(('//', '%'))} {sub()})",
            lambda: f"({sub()} {self.choice(('&', '|', '^'))} {sub()})",
            lambda: f"({sub()} {self.choice(('<<', '>>'))} {sub()} % 8)",
            lambda: f"{self.choice(('-', '~', '+'))}{sub()}",
            lambda: f"abs({sub()})",
            lambda: f"({sub()} if {self.cond(env, ctx, depth + 1)} else {sub()})",
            lambda: f"min({sub()}, {sub()})",
            lambda: f"int({self.cond(env, ctx, depth + 1)})",
        ]
        if not ctx.loop:
            forms.append(lambda: f"({sub()}) ** {self.small(0, 3)}")
        return self.choice(forms)()

    def float_expr(self, env: Env, ctx: Context) -> str:
        floats = self.names(env, "float")
        return self.choice(
            (
                lambda: self.choice(floats) if floats else "x",
                lambda: self.choice(("0.5", "-0.0", "1e300", "2.5")),
                lambda: f"(x * {self.choice(('0.5', '2.0', '-1.0'))})",
                lambda: f"float({self.int_expr(env, ctx, 1)} % 1000)",
                lambda: f"(x + {self.choice(floats) if floats else 'x'})",
                lambda: "float(np.sum(arr.astype(np.float64)))",
                lambda: f"(x / {self.int_expr(env, ctx, 1)})",
            )
        )()

    def str_expr(self, env: Env, ctx: Context) -> str:
        strs = self.names(env, "str")
        return self.choice(
            (
                lambda: self.choice(strs) if strs else "s",
                lambda: repr(self.choice(("", "a", "xy", "q-z"))),
                lambda: f"str({self.int_expr(env, ctx, 1)})",
                lambda: self.choice(("s[::-1]", "s.upper()", "s[:3]", "s.replace('a', 'b')")),
                # double quotes outside: before 3.12 the expressions may not reuse them
                lambda: 'f"{' + self.int_expr(env, ctx, 1) + '}-{s}"',
                lambda: f"(s + {self.choice(strs) if strs else repr('!')})",
                lambda: "type(y).__name__",
                lambda: "','.join(sorted(s))",
            )
        )()

    def list_expr(self, env: Env, ctx: Context) -> str:
        lists = self.names(env, "list")
        e = lambda: self.int_expr(env, ctx, 1)  # noqa: E731
        forms: List[Callable[[], str]] = [lambda: f"[{e()}, {e()}]", lambda: "[]"]
        if lists:
            forms += [
                lambda: f"sorted({self.choice(lists)})",
                lambda: f"{self.choice(lists)}[::-1]",
                lambda: f"{self.choice(lists)}[1:]",
            ]
            if not ctx.loop:
                forms.append(lambda: f"({self.choice(lists)} + [{e()}])")
        return self.choice(forms)()

    def arr_expr(self, env: Env, ctx: Context) -> str:
        arrs = self.names(env, "arr")
        return self.choice(
            (
                lambda: self.choice(arrs) if arrs else "arr",
                lambda: "(arr * 2)",
                lambda: "(arr + 1)",
                lambda: "np.abs(arr)",
                lambda: "arr[::-1]",
                lambda: "(arr.astype(np.float64) / 2)",
                lambda: "np.sort(arr, axis=None)",
                lambda: "np.cumsum(arr)",
                lambda: "arr.ravel()[:3]",
                lambda: "np.where(arr > 0, arr, 0)",
                # Python ints into array code: reduced, so no dtype overflows on conversion
                lambda: f"(arr.astype(np.float64) * ({self.int_expr(env, ctx, 1)} % 97))",
                lambda: f"(np.asarray(arr, dtype=np.int64) + ({self.int_expr(env, ctx, 1)} % 97))",
            )
        )()

    def cond(self, env: Env, ctx: Context, depth: int = 0) -> str:
        e = lambda: self.int_expr(env, ctx, 2)  # noqa: E731
        forms: List[Callable[[], str]] = [
            lambda: f"{e()} {self.choice(('<', '<=', '==', '!=', '>', '>='))} {e()}",
            lambda: f"{self.small(-2, 2)} <= {e()} < {self.small(3, 9)}",
            lambda: f"{e()} {self.choice(('in', 'not in'))} {{{self.small()}, {self.small()}, {self.small(6, 9)}}}",
            lambda: f"y is {self.choice(('None', 'not None'))}",
            lambda: f"{repr(self.choice(('a', 'b')))} {self.choice(('in', 'not in'))} s",
            lambda: "x != x",
            lambda: "arr.size > 2",
        ]
        if depth < 2:
            forms += [
                lambda: f"not {self.cond(env, ctx, depth + 1)}",
                lambda: (
                    f"({self.cond(env, ctx, depth + 1)} {self.choice(('and', 'or'))} {self.cond(env, ctx, depth + 1)})"
                ),
            ]
        return self.choice(forms)()

    def expr_of(self, kind: str, env: Env, ctx: Context) -> str:
        return {
            "int": lambda: self.int_expr(env, ctx),
            "float": lambda: self.float_expr(env, ctx),
            "str": lambda: self.str_expr(env, ctx),
            "list": lambda: self.list_expr(env, ctx),
            "arr": lambda: self.arr_expr(env, ctx),
        }[kind]()

    # statements ------------------------------------------------------------------------
    def block(self, env: Env, ctx: Context) -> Lines:
        """At least one statement, in a copy of ``env`` (names bound here stay here)."""
        inner = dict(env)
        lines: Lines = []
        for _ in range(self.small(1, 3)):
            lines += self.statement(inner, ctx)
        return indent(lines)

    def statement(self, env: Env, ctx: Context) -> Lines:
        simple: List[Callable[[Env, Context], Lines]] = [
            self.s_assign,
            self.s_rebind,
            self.s_pass,
            self.s_unpack,
            self.s_assert,
            self.s_walrus,
            self.s_comprehension,
            self.s_import,
            self.s_global,
            self.s_delete,
            self.s_numpy,
            self.s_lambda,
        ]
        simple.append(self.s_dict_unpack)
        compound: List[Callable[[Env, Context], Lines]] = [
            self.s_if,
            self.s_for_range,
            self.s_for_other,
            self.s_while,
            self.s_try,
            self.s_with,
            self.s_closure,
            self.s_class,
            self.s_generator,
            self.s_async,
        ]
        if HAS_MATCH:
            compound.append(self.s_match)
        if HAS_EXCEPT_STAR:
            compound.append(self.s_try_star)
        options = simple + (compound if ctx.depth < 2 else [])
        if ctx.loop and ctx.jumps_ok:
            options.insert(2, self.s_jump)
        saved, self.pending = self.pending, {}
        lines = self.choice(options)(env, ctx)
        env.update(self.pending)
        self.pending = saved
        return lines

    def s_assign(self, env: Env, ctx: Context) -> Lines:
        kind = self.choice(("int", "float", "str", "list"))
        name = self.fresh("v")
        # one in four annotated (a local's annotation is never evaluated)
        annotation = f": {_ANNOTATIONS[kind]}" if self.pick(4) == 3 else ""
        line = f"{name}{annotation} = {self.expr_of(kind, env, ctx)}"
        self.pending[name] = kind
        return [line]

    def s_dict_unpack(self, env: Env, ctx: Context) -> Lines:
        d, name = self.fresh("d"), self.fresh("v")
        self.pending[name] = "int"
        inner = f"{{'q': {self.int_expr(env, ctx, 1)}, 'r': {self.small()}}}"
        # a later key wins over the unpacked one: the order of a display is part of its meaning
        return [
            f"{d} = {{'p': {self.int_expr(env, ctx, 1)}, **{inner}, 'r': {self.small(1, 4)}}}",
            f"{name} = {d}['p'] + {d}['q'] * {d}['r'] + len({{**{d}, 'z': 0}})",
        ]

    def s_rebind(self, env: Env, ctx: Context) -> Lines:
        ints = [n for n in self.names(env, "int") if n not in dict(PARAMETERS) and n not in self.protected]
        lists = self.names(env, "list")
        if not ints:
            return self.s_assign(env, ctx)
        name = self.choice(ints)
        form = self.pick(3 if lists else 2)
        if form == 0:
            return [f"{name} = {self.int_expr(env, ctx)}"]
        if form == 1:
            op = self.choice(("+=", "-=", "^=", "|=", "&=", "<<=", "*="))
            value = str(self.small(0, 3)) if op in ("<<=", "*=") else self.int_expr(env, ctx, 1)
            return [f"{name} {op} {value}"]
        return [f"{self.choice(lists)}.append({name})"]

    def s_pass(self, env: Env, ctx: Context) -> Lines:
        return ["pass"]

    def s_jump(self, env: Env, ctx: Context) -> Lines:
        return [f"if {self.cond(env, ctx)}:", "    " + self.choice(("break", "continue"))]

    def s_unpack(self, env: Env, ctx: Context) -> Lines:
        p, q = self.fresh("v"), self.fresh("v")
        form = self.pick(3)
        if form == 0:
            line = f"{p}, {q} = {self.int_expr(env, ctx)}, {self.str_expr(env, ctx)}"
            self.pending[p], self.pending[q] = "int", "str"
        elif form == 1:
            line = f"{p}, *{q} = [{self.int_expr(env, ctx, 1)}, {self.int_expr(env, ctx, 1)}, {self.small()}]"
            self.pending[p], self.pending[q] = "int", "list"
        else:
            line = f"({p}, {q}) = divmod({self.int_expr(env, ctx, 1)}, {self.small(1, 7)})"
            self.pending[p], self.pending[q] = "int", "int"
        return [line]

    def s_assert(self, env: Env, ctx: Context) -> Lines:
        test = self.choice(
            (
                lambda: "isinstance(a, int)",
                lambda: "len(s) >= 0",
                lambda: self.cond(env, ctx),
            )
        )()
        return [f"assert {test}, {self.str_expr(env, ctx)!s}"]

    def s_walrus(self, env: Env, ctx: Context) -> Lines:
        name = self.fresh("w")
        if self.pick(2) == 0:
            line = f"{self.fresh('v')} = ({name} := {self.int_expr(env, ctx)}) + {name}"
            self.pending[line.split(" ")[0]] = "int"  # the v name
            self.pending[name] = "int"
            return [line]
        head = f"if ({name} := {self.int_expr(env, ctx)}) > {self.small()}:"
        env[name] = "int"
        return [head] + self.block(env, ctx.inner())

    def s_comprehension(self, env: Env, ctx: Context) -> Lines:
        i = self.fresh("i")
        inner = dict(env, **{i: "int"})
        source = self.choice((f"range({self.small(0, 6)})", f"range({self.int_expr(env, ctx, 1)} % 6)"))
        value = self.int_expr(inner, ctx, 1)
        guard = f" if {self.cond(inner, ctx, 1)}" if self.pick(2) else ""
        name = self.fresh("v")
        form = self.pick(5)
        if form == 0:
            self.pending[name] = "list"
            return [f"{name} = [{value} for {i} in {source}{guard}]"]
        self.pending[name] = "int"
        if form == 1:
            return [f"{name} = sum({value} for {i} in {source}{guard})"]
        if form == 2:
            self.pending[name] = "list"
            return [f"{name} = sorted({{{value} % 7 for {i} in {source}{guard}}})"]
        if form == 3:
            return [f"{name} = sum({{{i}: {value} for {i} in {source}{guard}}}.values())"]
        j = self.fresh("i")
        self.pending[name] = "list"
        return [f"{name} = [{i} * {j} for {i} in {source} for {j} in range({i}){guard}]"]

    def s_import(self, env: Env, ctx: Context) -> Lines:
        name = self.fresh("v")
        e = lambda: self.int_expr(env, ctx, 1)  # noqa: E731
        self.pending[name] = "int"
        return self.choice(
            (
                lambda: ["import math", f"{name} = math.gcd({e()}, {e()})"],
                lambda: ["import operator as op", f"{name} = op.{self.choice(('add', 'xor', 'mul'))}({e()}, {e()})"],
                lambda: ["from functools import reduce", f"{name} = reduce(lambda p, q: p + q, [{e()}, {e()}], 0)"],
                lambda: ["import itertools", f"{name} = sum(itertools.islice(itertools.count({e()}), 3))"],
                lambda: ["from math import isfinite", f"{name} = int(isfinite(x))"],
            )
        )()

    def s_global(self, env: Env, ctx: Context) -> Lines:
        g = self.fresh("G")
        self.module.append(f"{g} = 0")
        name = self.fresh("v")
        self.pending[name] = "int"
        # set before use, so every call of f sees the same value
        return [f"global {g}", f"{g} = {self.int_expr(env, ctx)}", f"{g} += {self.small()}", f"{name} = {g}"]

    def s_delete(self, env: Env, ctx: Context) -> Lines:
        t = self.fresh("t")
        return [f"{t} = {self.int_expr(env, ctx)}", f"del {t}"]

    def s_numpy(self, env: Env, ctx: Context) -> Lines:
        name = self.fresh("n")
        form = self.pick(4)
        if form == 3:  # a matrix product: the flattened array with itself
            m = self.fresh("m")
            self.pending[name] = "float"
            return [f"{m} = np.ravel({self.arr_expr(env, ctx)}).astype(np.float64)", f"{name} = float({m} @ {m})"]
        if form == 0:
            self.pending[name] = "arr"
            return [f"{name} = {self.arr_expr(env, ctx)}"]
        if form == 2:
            # in place, on a copy: the argument itself stays as the caller made it
            self.pending[name] = "arr"
            return [f"{name} = np.array(arr, dtype=np.float64)", f"{name}[...] += {self.float_expr(env, ctx)}"]
        self.pending[name] = "float"
        return [f"{name} = float(np.{self.choice(('sum', 'max', 'mean'))}({self.arr_expr(env, ctx)}))"]

    def s_lambda(self, env: Env, ctx: Context) -> Lines:
        fn, name = self.fresh("fn"), self.fresh("v")
        self.pending[name] = "int"
        if self.pick(2) == 0:
            return [
                f"{fn} = lambda q, r={self.small()}: q * r + {self.int_expr(env, ctx, 1)}",
                f"{name} = {fn}({self.int_expr(env, ctx, 1)})",
            ]
        self.pending[name] = "list"
        return [f"{name} = sorted([{self.int_expr(env, ctx, 1)}, {self.small()}, a], key=lambda q: -q)"]

    def s_if(self, env: Env, ctx: Context) -> Lines:
        lines = [f"if {self.cond(env, ctx)}:"] + self.block(env, ctx.inner())
        for _ in range(self.pick(2)):
            lines += [f"elif {self.cond(env, ctx)}:"] + self.block(env, ctx.inner())
        if self.pick(2):
            lines += ["else:"] + self.block(env, ctx.inner())
        return lines

    def loop_else(self, env: Env, ctx: Context) -> Lines:
        return ["else:"] + self.block(env, ctx.inner()) if self.pick(3) == 2 else []

    def s_for_range(self, env: Env, ctx: Context) -> Lines:
        i = self.fresh("i")
        bound = self.choice(
            (
                lambda: str(self.small(0, 5)),
                lambda: f"min(abs({self.int_expr(env, ctx, 1)}), 5)",
                lambda: f"{self.small(-2, 2)}, {self.small(0, 6)}, {self.small(1, 3)}",
            )
        )()
        inner = dict(env, **{i: "int"})
        return [f"for {i} in range({bound}):"] + self.block(inner, ctx.inner(loop=True)) + self.loop_else(env, ctx)

    def s_for_other(self, env: Env, ctx: Context) -> Lines:
        i, j = self.fresh("i"), self.fresh("i")
        lists = self.names(env, "list")
        inner = dict(env)
        form = self.pick(8)
        if form == 0 and lists:
            # a capped copy: the body may append to the list it iterates
            head, inner[i] = f"for {i} in {self.choice(lists)}[:4]:", "int"
        elif form == 1:
            head, inner[i] = f"for {i} in s[:4]:", "str"
        elif form == 2:
            head, inner[i], inner[j] = f"for {i}, {j} in enumerate(s[:4]):", "int", "str"
        elif form == 3:
            head, inner[i], inner[j] = (
                f"for {i}, {j} in zip(range(3), [{self.int_expr(env, ctx, 1)}, 5]):",
                "int",
                "int",
            )
        elif form == 4:
            head, inner[i] = f"for {i} in sorted({{{self.int_expr(env, ctx, 1)}, {self.small()}, 7}}):", "int"
        elif form == 5:
            head = f"for {i}, {j} in {{'p': {self.int_expr(env, ctx, 1)}, 'q': 2}}.items():"
            inner[i], inner[j] = "str", "int"
        elif form == 6:
            head, inner[i] = f"for {i} in reversed(range({self.small(0, 4)})):", "int"
        else:
            head, inner[i] = f"for {i} in arr.ravel()[:4].tolist():", "any"
        return [head] + self.block(inner, ctx.inner(loop=True)) + self.loop_else(env, ctx)

    def s_while(self, env: Env, ctx: Context) -> Lines:
        k = self.fresh("k")
        env[k] = "int"
        self.protected.add(k)
        # the counter moves first, so continue cannot skip it
        return (
            [f"{k} = 0", f"while {k} < {self.small(0, 5)}:", f"    {k} += 1"]
            + self.block(env, ctx.inner(loop=True))
            + self.loop_else(env, ctx)
        )

    def s_try(self, env: Env, ctx: Context) -> Lines:
        err = self.fresh("err")
        body = self.block(env, ctx.inner())
        if self.pick(2):
            body += [
                f"    if {self.cond(env, ctx)}:",
                f"        raise {self.choice(('ValueError', 'KeyError'))}({self.str_expr(env, ctx)})",
            ]
        lines = ["try:"] + body
        lines += [f"except (ValueError, ZeroDivisionError, OverflowError) as {err}:"]
        handler_env = dict(env, **{err: "any"})
        handler = self.block(handler_env, ctx.inner())
        lines += handler + [f"    {self.fresh('msg')} = str({err})"]
        if self.pick(2):
            lines += ["except KeyError:", "    pass"]
        if self.pick(2):
            lines += ["else:"] + self.block(env, ctx.inner())
        if self.pick(2):
            lines += ["finally:"] + self.block(env, ctx.inner(jumps_ok=False))
        if self.pick(4) == 3:
            # a handled exception raised again from an inner handler
            lines = [
                "try:",
                "    try:",
                f"        raise KeyError({self.int_expr(env, ctx, 1)})",
                "    except KeyError:",
                "        raise",
                "except KeyError:",
                "    pass",
            ] + lines
        return lines

    def s_try_star(self, env: Env, ctx: Context) -> Lines:
        eg = self.fresh("eg")
        members = self.choice(("ValueError(1)", "KeyError('k'), ValueError(2)", "TypeError('t')", "KeyError('k')"))
        lines = ["try:"] + self.block(env, ctx.inner())
        lines += [f"    if {self.cond(env, ctx)}:", f"        raise ExceptionGroup('g', [{members}])"]
        lines += [f"except* ValueError as {eg}:", f"    {self.fresh('v')} = len({eg}.exceptions)"]
        lines += self.block(env, ctx.inner(jumps_ok=False, loop=False))
        lines += ["except* (KeyError, TypeError):", "    pass"]
        return lines

    def s_with(self, env: Env, ctx: Context) -> Lines:
        if self.pick(2) == 0:
            settings = ", ".join(
                f"{kind}={self.choice(ERRSTATE_VALUES)!r}"
                for kind in ("divide", "invalid", "over", "all")[: self.small(1, 3)]
            )
            name = self.fresh("n")
            env[name] = "arr"
            return [
                f"with np.errstate({settings}):",
                f"    {name} = arr.astype(np.float64) / (arr.astype(np.float64) - {self.small(0, 2)})",
            ] + self.block(env, ctx.inner())
        cm, w = self.fresh("CM"), self.fresh("w")
        inner = dict(env, **{w: "int"})
        return [
            f"class {cm}:",
            "    def __enter__(self):",
            f"        return {self.small()}",
            "    def __exit__(self, *exc):",
            f"        return {self.choice(('False', 'True'))}",
            f"with {cm}() as {w}:",
        ] + self.block(inner, ctx.inner())

    def s_closure(self, env: Env, ctx: Context) -> Lines:
        fn, name = self.fresh("g"), self.fresh("v")
        ints = [n for n in self.names(env, "int") if n not in self.protected]
        form = self.pick(5)
        if form == 3:  # a decorator (its own closure) over a function
            deco = self.fresh("deco")
            self.pending[name] = "int"
            return [
                f"def {deco}(fn):",
                "    def wrapper(*args, **kwargs):",
                f"        return fn(*args, **kwargs) + {self.small()}",
                "    return wrapper",
                f"@{deco}",
                f"def {fn}(q, r=2):",
                f"    return q * r + {self.int_expr(env, ctx, 1)}",
                f"{name} = {fn}({self.int_expr(env, ctx, 1)}) + {fn}({self.small()}, r={self.small()})",
            ]
        if form == 4:  # positional-only and keyword-only parameters
            self.pending[name] = "int"
            return [
                f"def {fn}(q, /, r={self.small()}, *, t={self.small(1, 4)}):",
                f"    return q + r * t + {self.int_expr(env, ctx, 1)}",
                f"{name} = {fn}({self.int_expr(env, ctx, 1)}) + {fn}({self.small()}, {self.small()}, t={self.small()})",
            ]
        if form == 0 and ints:
            target = self.choice(ints)
            self.pending[name] = "int"
            return [
                f"def {fn}(d=1):",
                f"    nonlocal {target}",
                f"    {target} += d",
                f"    return {target}",
                f"{name} = {fn}() + {fn}({self.small()})",
            ]
        if form == 1:
            self.pending[name] = "int"
            return [
                f"def {fn}(n):",
                f"    return 0 if n <= 0 else n + {fn}(n - 1)",
                f"{name} = {fn}(min(abs({self.int_expr(env, ctx, 1)}), 12))",
            ]
        self.pending[name] = "int"
        return [
            f"def {fn}(q, r={self.small()}, *rest, **kw):",
            f"    return q + r + len(rest) + len(kw) + {self.int_expr(env, ctx, 1)}",
            f"{name} = {fn}({self.int_expr(env, ctx, 1)}) + {fn}(*[1, 2, 3], z=4)",
        ]

    def s_class(self, env: Env, ctx: Context) -> Lines:
        k, name = self.fresh("K"), self.fresh("v")
        self.pending[name] = "int"
        return [
            f"class {k}:",
            "    count = 0",
            "    def __init__(self, v):",
            "        self.v = v",
            f"        {k}.count += 1",
            "    def get(self, d=1):",
            f"        return self.v * d + {k}.count",
            f"{name} = {k}({self.int_expr(env, ctx, 1)}).get() + {k}({self.small()}).get({self.small()})",
        ]

    def s_generator(self, env: Env, ctx: Context) -> Lines:
        gen, g, name = self.fresh("gen"), self.fresh("it"), self.fresh("v")
        lines = [
            f"def {gen}(n):",
            "    got = None",
            "    for t in range(n):",
            "        try:",
            "            got = yield (t if got is None else t + got)",
            "        except KeyError:",
            "            got = -100",
            "    return -1",
        ]
        form = self.pick(5)
        n = self.small(3, 6)
        if form == 0:
            self.pending[name] = "list"
            return lines + [f"{name} = list({gen}({self.small(0, 4)}))"]
        self.pending[name] = "list"
        if form == 4:
            wrap = self.fresh("gen")
            return lines + [
                f"def {wrap}(n):",
                f"    r = yield from {gen}(n)",
                "    yield r",
                "    yield from range(2)",
                f"{name} = list({wrap}({self.small(0, 4)}))",
            ]
        steps = [f"{g} = {gen}({n})", f"{name} = [next({g})]"]
        if form in (1, 3):
            steps.append(f"{name}.append({g}.send({self.int_expr(env, ctx, 1)}))")
        if form in (2, 3):
            steps.append(f"{name}.append({g}.throw(KeyError('k')))")
        if form == 3 or self.pick(2):
            steps.append(f"{g}.close()")
        return lines + steps

    def s_async(self, env: Env, ctx: Context) -> Lines:
        self.uses_driver = True
        co, ag, name = self.fresh("co"), self.fresh("ag"), self.fresh("v")
        e = self.int_expr(env, ctx, 1)
        agen = [
            f"async def {ag}(n):",
            "    for t in range(n):",
            "        await _Tick()",
            "        yield t * 2",
        ]
        form = self.pick(5)
        if form == 0:
            self.pending[name] = "int"
            return [
                f"async def {co}(n):",
                "    total = 0",
                "    for t in range(n):",
                "        await _Tick()",
                f"        total += t + {e}",
                "    return total",
                f"{name} = _drive({co}({self.small(0, 4)}))",
            ]
        if form == 1:
            self.pending[name] = "int"
            return agen + [
                f"async def {co}():",
                "    total = 0",
                f"    async for t in {ag}({self.small(0, 4)}):",
                f"        total += t * {e}",
                "    return total",
                f"{name} = _drive({co}())",
            ]
        if form == 2:
            cm = self.fresh("ACM")
            self.pending[name] = "int"
            return [
                f"class {cm}:",
                "    async def __aenter__(self):",
                "        await _Tick()",
                f"        return {self.small()}",
                "    async def __aexit__(self, *exc):",
                "        return False",
                f"async def {co}():",
                f"    async with {cm}() as w:",
                f"        return w + {e}",
                f"{name} = _drive({co}())",
            ]
        self.pending[name] = "list"
        if form == 3:
            return agen + [
                f"async def {co}():",
                f"    return [t + {e} async for t in {ag}({self.small(0, 4)})]",
                f"{name} = _drive({co}())",
            ]
        return agen + [
            f"{co} = {ag}({self.small(2, 4)})",
            f"{name} = [_drive({co}.__anext__())]",
            f"{name}.append(_drive({co}.__anext__()) if {self.cond(env, ctx, 1)} else -1)",
        ]

    def s_match(self, env: Env, ctx: Context) -> Lines:
        form = self.pick(3)
        inner = ctx.inner()
        if form == 0:
            m = self.fresh("m")
            return (
                [f"match {self.int_expr(env, ctx)}:", f"    case 0 | {self.small(1, 5)}:"]
                + indent(self.block(env, inner))
                + [f"    case int({m}) if {m} > {self.small()}:"]
                + indent(self.block(dict(env, **{m: "int"}), inner))
                + ["    case _:"]
                + indent(self.block(env, inner))
            )
        if form == 1:
            p, q = self.fresh("m"), self.fresh("m")
            return (
                [f"match {self.list_expr(env, ctx)}:", f"    case [{p}, {q}]:"]
                + indent(self.block(dict(env, **{p: "int", q: "int"}), inner))
                + [f"    case [{p}, *{q}]:"]
                + indent(self.block(dict(env, **{p: "int", q: "list"}), inner))
                + ["    case []:", "        pass"]
            )
        w = self.fresh("m")
        return (
            [f"match {{'k': {self.int_expr(env, ctx, 1)}, 's': s}}:", f"    case {{'k': int({w}), 's': 'ab'}}:"]
            + indent(self.block(dict(env, **{w: "int"}), inner))
            + [f"    case {{'k': {w}}}:"]
            + indent(self.block(dict(env, **{w: "int"}), inner))
        )

    # program ---------------------------------------------------------------------------
    def program(self) -> str:
        env: Env = dict(PARAMETERS)
        body: Lines = []
        for _ in range(self.small(0, 5)):
            body += self.statement(env, Context())
        results = [n for n, k in env.items() if k != "any" and n not in dict(PARAMETERS)]
        body.append(f"return ({''.join(n + ', ' for n in results)})")
        signature = ", ".join(name for name, _ in PARAMETERS)
        head = ([DRIVER] if self.uses_driver else []) + self.module
        return "\n".join(head + [f"def f({signature}):"] + indent(body)) + "\n"


@st.composite
def grammar_sources(draw: Callable[[st.SearchStrategy[Any]], Any]) -> str:
    """The source of one program (see the module's docstring)."""
    return Builder(draw).program()
