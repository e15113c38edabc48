"""Programs whose behaviour must not change when every frame runs through the hook.

Each case is a zero-argument function returning a plain value that captures what it
observed (results, exception types, messages and traceback lines, introspection).
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import inspect
import sys
import threading
import traceback

CASES = {}


def case(fn):
    CASES[fn.__name__] = fn
    return fn


def outcome(fn, *args, **kwargs):
    """Result of a call, or its exception with the traceback's (function, line) pairs."""
    try:
        return ("ok", fn(*args, **kwargs))
    except BaseException as exc:  # noqa: BLE001 - the point is to record it
        tb = [(f.name, f.lineno) for f in traceback.extract_tb(exc.__traceback__)]
        return ("raised", type(exc).__name__, str(exc), tb[1:])


# ---- closures, cells, nonlocal ---------------------------------------------------------
@case
def closures_and_argument_cells():
    def make(a, b=10):
        def add(x):
            return a + b + x

        a += 1  # an argument that is also a cell
        return add

    adders = [make(i) for i in range(3)]
    return [f(100) for f in adders]


@case
def nonlocal_counter():
    def counter():
        n = 0

        def bump(k=1):
            nonlocal n
            n += k
            return n

        return bump

    c = counter()
    return [c(), c(5), c()]


@case
def deep_closure_chain():
    def level1(x):
        def level2(y):
            def level3(z):
                return x * 100 + y * 10 + z

            return level3

        return level2

    return level1(1)(2)(3)


@case
def late_binding_and_default_capture():
    fs = [lambda i=i: i * i for i in range(4)]
    gs = [lambda: i for i in range(4)]  # noqa: B023 - late binding is the point
    return [f() for f in fs], [g() for g in gs]


# ---- argument kinds ---------------------------------------------------------------------
@case
def every_argument_kind():
    def f(a, b, /, c, d=4, *args, e, f=6, **kw):
        return a, b, c, d, args, e, f, sorted(kw.items())

    return [
        f(1, 2, 3, e=5),
        f(1, 2, c=3, e=5, z=9),
        f(1, 2, 3, 4, 5, 6, e=7, f=8, g=9),
        f(*range(6), **{"e": 1, "a": "posonly-name-in-kwargs"}),
        outcome(f, 1, e=2),
        outcome(f, 1, 2, 3, 4, b=5, e=1),
    ]


@case
def defaults_are_shared_and_mutable():
    def append(x, acc=[]):  # noqa: B006 - shared default is the point
        acc.append(x)
        return list(acc)

    return [append(1), append(2), append(3, [])]


@case
def keyword_only_and_varkw_only():
    def f(*, only):
        return only

    def g(**kw):
        return kw

    def h(*args):
        return args

    return f(only=1), g(a=1, b=2), h(), h(1, 2), outcome(f, 1)


# ---- classes, super, descriptors --------------------------------------------------------
@case
def super_and_class_cell():
    class Base:
        def hello(self):
            return "base"

        @classmethod
        def make(cls):
            return cls.__name__

    class Child(Base):
        def hello(self):
            return "child+" + super().hello()

        @classmethod
        def make(cls):
            return "c:" + super().make()

        def cls(self):
            return __class__.__name__

    return Child().hello(), Child.make(), Child().cls()


@case
def class_bodies_and_metaclasses():
    log = []

    class Meta(type):
        def __new__(mcls, name, bases, ns):
            log.append(("meta", name, sorted(k for k in ns if not k.startswith("__"))))
            return super().__new__(mcls, name, bases, ns)

    class A(metaclass=Meta):
        x = 1
        y = [i * 2 for i in range(3)]

        def method(self):
            return self.x

    class B(A):
        z = A.x + 1

    return log, A.y, B().method(), B.z


@case
def properties_slots_and_dunder_methods():
    class Vec:
        __slots__ = ("x", "y")

        def __init__(self, x, y):
            self.x, self.y = x, y

        @property
        def norm2(self):
            return self.x * self.x + self.y * self.y

        def __add__(self, other):
            return Vec(self.x + other.x, self.y + other.y)

        def __eq__(self, other):
            return (self.x, self.y) == (other.x, other.y)

        def __repr__(self):
            return f"Vec({self.x}, {self.y})"

    v = Vec(1, 2) + Vec(3, 4)
    return repr(v), v.norm2, v == Vec(4, 6)


@case
def dataclass_and_namedtuple():
    import collections
    import dataclasses

    @dataclasses.dataclass(frozen=True)
    class P:
        x: int
        y: int = 0

    Q = collections.namedtuple("Q", "a b")
    return repr(P(1)), P(1, 2) == P(1, 2), Q(1, 2)._replace(b=5), outcome(setattr, P(1), "x", 2)[1]


# ---- generators and coroutines ----------------------------------------------------------
@case
def generators_send_throw_close():
    def gen():
        total = 0
        try:
            while True:
                try:
                    x = yield total
                except ValueError as exc:
                    total = -len(str(exc))
                    continue
                total += x
        finally:
            log.append("closed")

    log = []
    g = gen()
    out = [next(g), g.send(3), g.send(4), g.throw(ValueError("boom")), g.send(10)]
    g.close()
    return out, log


@case
def yield_from_delegation():
    def inner():
        x = yield 1
        y = yield x * 2
        return x + y

    def outer():
        result = yield from inner()
        yield ("done", result)

    g = outer()
    return [next(g), g.send(5), g.send(7)]


@case
def generator_expressions_and_return_value():
    def g():
        yield from range(3)
        return "r"

    it = g()
    items = list(it)
    try:
        next(it)
    except StopIteration as exc:
        stop = exc.value
    gen = g()
    next(gen)
    try:
        while True:
            next(gen)
    except StopIteration as exc:
        ret = exc.value
    return items, stop, ret, sum(x * x for x in range(10))


@case
def coroutines_with_asyncio():
    async def leaf(x):
        await asyncio.sleep(0)
        return x * 2

    async def fail():
        await asyncio.sleep(0)
        raise KeyError("k")

    async def main():
        a = await leaf(1)
        b = await asyncio.gather(leaf(2), leaf(3))
        try:
            await fail()
        except KeyError as exc:
            c = repr(exc)
        return a, b, c

    return asyncio.run(main())


@case
def coroutine_driven_by_hand():
    class Awaitable:
        def __await__(self):
            value = yield "suspended"
            return value

    async def coro():
        v = await Awaitable()
        return v + 1

    c = coro()
    first = c.send(None)
    try:
        c.send(41)
    except StopIteration as exc:
        return first, exc.value


@case
def async_generators():
    async def agen(n):
        for i in range(n):
            await asyncio.sleep(0)
            yield i * i

    async def main():
        out = [x async for x in agen(4)]
        g = agen(3)
        first = await g.__anext__()
        await g.aclose()
        return out, first

    return asyncio.run(main())


# ---- control flow, exceptions ---------------------------------------------------------
@case
def with_try_finally_except():
    log = []

    class CM:
        def __init__(self, name, swallow=False):
            self.name, self.swallow = name, swallow

        def __enter__(self):
            log.append("enter " + self.name)
            return self

        def __exit__(self, *exc):
            log.append(("exit", self.name, exc[0].__name__ if exc[0] else None))
            return self.swallow

    def f():
        with CM("a"), CM("b", swallow=True):
            raise RuntimeError("x")

    def g():
        try:
            return "try"
        finally:
            log.append("finally")

    def h():
        try:
            return 1
        finally:
            return 2  # noqa: B012 - overriding return is the point

    def nested():
        try:
            try:
                raise ValueError("inner")
            except ValueError as exc:
                raise TypeError("outer") from exc
        except TypeError as exc:
            return repr(exc), repr(exc.__cause__), exc.__context__ is exc.__cause__

    f()
    return log, g(), h(), nested()


@case
def exception_tracebacks_keep_lines():
    def a(x):
        return b(x) + 1

    def b(x):
        return c(x) * 2

    def c(x):
        if x > 2:
            raise ValueError(f"too big: {x}")
        return x

    return outcome(a, 1), outcome(a, 5)


@case
def contextlib_helpers():
    @contextlib.contextmanager
    def tag(name, log):
        log.append("<" + name)
        try:
            yield name.upper()
        finally:
            log.append(name + ">")

    log = []
    with tag("x", log) as t, contextlib.suppress(KeyError):
        log.append(t)
        {}["missing"]
    with contextlib.ExitStack() as stack:
        for n in "ab":
            stack.enter_context(tag(n, log))
    return log


@case
def comprehensions_all_kinds():
    data = range(6)
    offset = 100
    return (
        [x + offset for x in data if x % 2],
        {x % 3 for x in data},
        {x: x * x for x in data},
        list(x * offset for x in data),
        [[i * j for j in range(i)] for i in range(4)],
        [y for x in data if (y := x * 2) > 4],
    )


@case
def comprehension_scoping():
    x = "outer"
    values = [x for x in range(3)]
    funcs = [lambda: x for x in range(3)]  # noqa: B023
    return x, values, [f() for f in funcs]


@case
def recursion_and_recursion_error():
    def fact(n):
        return 1 if n <= 1 else n * fact(n - 1)

    def forever(n):
        return forever(n + 1)

    old = sys.getrecursionlimit()
    sys.setrecursionlimit(300)
    try:
        err = outcome(forever, 0)[1]
    finally:
        sys.setrecursionlimit(old)
    return fact(30), err


@case
def frame_introspection():
    def who():
        f = sys._getframe()
        return f.f_code.co_name, f.f_back.f_code.co_name, sorted(f.f_locals)

    def caller(a, b=2):
        local = a + b  # noqa: F841 - visible in f_locals
        return who(), sorted(sys._getframe().f_locals), inspect.currentframe().f_code.co_name

    def sig(a, b=1, *c, d, **e):
        return str(inspect.signature(sig))

    return caller(1), sig(0, d=1)


@case
def threads_run_their_own_frames():
    results = {}

    def work(i):
        results[i] = sum(k * i for k in range(100))

    threads = [threading.Thread(target=work, args=(i,)) for i in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    return sorted(results.items())


@case
def functools_and_decorators():
    calls = []

    def logged(fn):
        @functools.wraps(fn)
        def wrapper(*args, **kwargs):
            calls.append(fn.__name__)
            return fn(*args, **kwargs)

        return wrapper

    @logged
    @functools.lru_cache(maxsize=None)
    def fib(n):
        return n if n < 2 else fib(n - 1) + fib(n - 2)

    part = functools.partial(lambda a, b, c: (a, b, c), 1, c=3)
    return fib(20), len(calls), part(2), functools.reduce(lambda a, b: a * b, range(1, 6))


@case
def fstrings_walrus_star_expressions():
    def f(*xs, sep="-"):
        first, *middle, last = xs
        return f"{first!r:>4}{sep}{middle}{sep}{last:.2f}", [*xs, *middle], {**{"a": 1}, "b": 2}

    if (n := len("abc")) > 2:
        res = f(1, 2, 3, 4.5)
    return n, res


@case
def globals_and_builtins_mutation():
    g = globals()
    g["_corpus_tmp"] = 1

    def read():
        return _corpus_tmp  # noqa: F821 - defined at runtime above

    def bump():
        global _corpus_tmp
        _corpus_tmp += 1

    bump()
    out = read()
    del g["_corpus_tmp"]
    return out, outcome(read)[1]


@case
def lambdas_map_filter_sorted():
    words = ["pear", "Apple", "fig", "banana"]
    return (
        sorted(words, key=lambda w: (len(w), w.lower())),
        list(map(lambda w: w[::-1], words)),
        list(filter(lambda w: "a" in w, words)),
        max(words, key=len),
    )


if sys.version_info >= (3, 10):
    exec(
        compile(
            '''
@case
def structural_pattern_matching():
    def classify(v):
        match v:
            case 0 | 1:
                return "small"
            case [x, y, *rest] if x < y:
                return ("asc", x, y, len(rest))
            case {"kind": "point", "x": px, **others}:
                return ("point", px, sorted(others))
            case str() as s if s.isdigit():
                return ("digits", s)
            case int(n) | float(n):
                return ("number", n)
            case _:
                return "other"

    return [classify(v) for v in (0, [1, 2, 3], [2, 1], {"kind": "point", "x": 3, "z": 1}, "42", 7.5, None)]
''',
            __file__,
            "exec",
        )
    )

if sys.version_info >= (3, 11):
    exec(
        compile(
            '''
@case
def exception_groups_except_star():
    def raiser():
        raise ExceptionGroup("eg", [ValueError("v"), TypeError("t"), ValueError("w")])

    caught = []
    try:
        raiser()
    except* ValueError as eg:
        caught.append(("value", sorted(str(e) for e in eg.exceptions)))
    except* TypeError as eg:
        caught.append(("type", [str(e) for e in eg.exceptions]))
    return caught
''',
            __file__,
            "exec",
        )
    )
