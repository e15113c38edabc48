"""The recorded tree of a program equals the one sys.setprofile sees, node for node, over
the constructs whose bytecode changes from version to version (with statements, loops
over iterators, generators and coroutines, special methods called from C, calls through
C callables, exceptions from Python and from C, comprehensions, string formatting and
3.14's template strings)."""

from __future__ import annotations

import contextlib
import functools
import io
import sys
import threading
from typing import Any, Callable, List, Tuple

import pytest

from framehook.profiler import Event, Profiler
from fhprof_helpers import no_collections

# Each test runs against every backend this interpreter has.
pytestmark = pytest.mark.usefixtures("backend")

Node = Tuple[str, str, tuple]  # (kind, name, children)


def qualname(code) -> str:
    return getattr(code, "co_qualname", code.co_name)


def reference_tree(program: Callable[[], Any]) -> Node:
    """The tree sys.setprofile reports for one call of `program`."""
    root: List[Any] = ["python", qualname(program.__code__), []]
    stack: List[Any] = []
    done = []

    def hook(frame, event, arg):
        if done:
            return
        if not stack:  # waiting for the program's own call
            if event == "call" and frame.f_code is program.__code__:
                stack.append(root)
            return
        if event == "call":
            node = ["python", qualname(frame.f_code), []]
        elif event == "c_call":
            node = ["c", arg.__name__, []]
        else:  # return, c_return, c_exception
            stack.pop()
            if not stack:
                done.append(True)
            return
        stack[-1][2].append(node)
        stack.append(node)

    sys.setprofile(hook)
    try:
        program()
    finally:
        sys.setprofile(None)
    assert done, "the reference hook did not see the program return"

    def freeze(node) -> Node:
        return (node[0], node[1], tuple(freeze(c) for c in node[2]))

    return freeze(root)


def recorded_tree(event: Event) -> Node:
    """The same shape from the profiler's tree (C functions by their bare name, as
    sys.setprofile's argument gives it)."""
    name = event.name.rpartition(".")[2] if event.kind == "c" else event.name
    return (event.kind, name, tuple(recorded_tree(c) for c in event.children if c.kind in ("python", "c")))


def assert_same_tree(program: Callable[[], Any]) -> Node:
    with no_collections():
        reference = reference_tree(program)
        with Profiler() as prof:
            program()
    found = [
        e
        for e in prof.profile.events
        if e.kind == "python"
        and e.function.path == program.__code__.co_filename
        and e.function.lineno == program.__code__.co_firstlineno
    ]
    assert len(found) == 1, found
    assert recorded_tree(found[0]) == reference
    return reference


def count(node: Node, kind: str, name: str) -> int:
    return (node[0] == kind and node[1] == name) + sum(count(c, kind, name) for c in node[2])


# --- the constructs -------------------------------------------------------------------


class Managed:
    def __enter__(self):
        return self

    def __exit__(self, *exc):
        return exc[0] is KeyError  # swallows KeyError only


@contextlib.contextmanager
def managed_by_generator():
    yield 1


class Countdown:
    def __init__(self, n):
        self.n = n

    def __iter__(self):
        return self

    def __next__(self):
        if self.n == 0:
            raise StopIteration
        self.n -= 1
        return self.n


class Number:
    def __init__(self, value):
        self.value = value

    def __add__(self, other):
        return Number(self.value + other.value)

    def __eq__(self, other):
        return self.value == other.value

    def __hash__(self):
        return hash(self.value)

    def __len__(self):
        return self.value

    def __format__(self, spec):
        return format(self.value, spec)

    @property
    def doubled(self):
        return self.value * 2

    def __getattr__(self, name):
        return name

    def __call__(self, x):
        return x + self.value

    @staticmethod
    def make(value):
        return Number(value)

    @classmethod
    def zero(cls):
        return cls(0)


class Child(Number):
    def __init__(self, value):
        super().__init__(value + 1)


def inner(n):
    yield n
    received = yield n + 1
    return received


def delegating(n):
    result = yield from inner(n)
    yield result


class Ready:
    def __await__(self):
        return (yield 7)


async def coroutine():
    value = await Ready()
    return value


def fail():
    raise ValueError("fail")


def deep_fail(n):
    if n == 0:
        fail()
    deep_fail(n - 1)


def add(a, b):
    return a + b


def with_statements():
    lock = threading.Lock()
    with lock:
        add(1, 2)
    with Managed() as m:
        add(3, 4)
    with Managed():
        {}["missing"]
    with managed_by_generator() as one:
        add(one, 1)
    with contextlib.suppress(ZeroDivisionError):
        add(1, 0) / 0
    return m


def loops_over_iterators():
    total = 0
    for i in Countdown(3):
        total = add(total, i)
    for key, value in {"a": 1, "b": 2}.items():
        total = add(total, value)
    total += sum(add(i, 1) for i in range(3))
    squares = [add(i, i) for i in range(3)]
    table = {i: add(i, 1) for i in range(2)}
    return total, squares, table, list(map(add, [1, 2], [3, 4]))


def generators_and_coroutines():
    it = delegating(1)
    values = [next(it), it.send(None), it.send("back")]
    with contextlib.suppress(StopIteration):
        next(it)
    gen = delegating(5)
    next(gen)
    with contextlib.suppress(KeyError):
        gen.throw(KeyError("k"))
    gen = delegating(6)
    next(gen)
    gen.close()
    coro = coroutine()
    values.append(coro.send(None))
    with contextlib.suppress(StopIteration):
        coro.send(8)
    return values


def special_methods():
    a, b = Number(1), Number.make(2)
    c = a + b
    same = c == Number(3)
    seen = {a: 1, b: 2}
    sizes = len(b)
    text = f"{a:>4}" + "{:<3}".format(b) + format(c, "x")
    attrs = (a.doubled, a.missing, getattr(b, "other"))
    calls = (a(10), Number.zero(), Child(4).value)
    ordered = sorted([3, 1, 2], key=lambda v: -v)
    partial = functools.partial(add, 1)(2)
    return same, seen, sizes, text, attrs, calls, ordered, partial


def exceptions():
    try:
        deep_fail(3)
    except ValueError:
        pass
    try:
        int("not a number")
    except ValueError:
        pass
    try:
        try:
            fail()
        finally:
            add(1, 1)
    except ValueError:
        pass
    out = io.StringIO()
    print("x", add(1, 2), file=out, sep=",")
    return out.getvalue()


TEMPLATE_STRINGS = "def template_strings():\n    return t'{add(1, 2)} and {add(3, 4)!r}'\n"


@pytest.mark.parametrize(
    "program, callee",
    [
        (with_statements, "add"),
        (loops_over_iterators, "add"),
        (generators_and_coroutines, "inner"),
        (special_methods, "add"),
        (exceptions, "fail"),
    ],
)
def test_trees_equal_the_setprofile_reference(program, callee):
    reference = assert_same_tree(program)
    assert count(reference, "python", callee) > 0  # the program's calls were seen at all


def test_template_strings_equal_the_setprofile_reference():
    if sys.version_info < (3, 14):
        pytest.skip("template strings (t'...') are new in CPython 3.14")
    namespace = {"add": add}
    exec(compile(TEMPLATE_STRINGS, __file__, "exec"), namespace)
    reference = assert_same_tree(namespace["template_strings"])
    assert count(reference, "python", "add") == 2
