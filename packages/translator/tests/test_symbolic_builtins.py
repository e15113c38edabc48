"""Builtins, container methods and trace-time Python under the symbolic interpreter:
each function agrees with the plain one; captured ones give one graph, the others break
with the expected identifier."""

from __future__ import annotations

import math

import numpy as np
import pytest

import framehook.translator as ft
from symbolic_helpers import check_agrees

A = np.arange(6.0).reshape(2, 3)
NAMES = ("a", "b")


pytestmark = pytest.mark.usefixtures("fresh_translator")


def list_methods(x):
    lst = [1, 2, 3]
    lst.insert(0, 5)
    last = lst.pop()
    lst.reverse()
    n = lst.index(2) + lst.count(1)
    other = lst.copy()
    other.clear()
    lst[1:2] = [7, 8]
    del lst[0]
    return lst, last, n, other, x


def dict_methods(x):
    d = {"a": x}
    d.update(b=2)
    d.update({"c": 3})
    v = d.pop("c") + d.pop("zz", 10)
    d.setdefault("e", 5)
    keys = [k for k in d.keys()]
    vals = [w for w in d.values() if not isinstance(w, np.ndarray)]
    items = [k for k, _ in d.items()]
    e = d.copy()
    del e["a"]
    return keys, vals, items, v, e, dict([("p", 1)], q=2), d["a"] * 2


def iterators(x):
    it = iter((1, 2, 3))
    first = next(it)
    rest = list(it)
    none = next(iter(()), None)
    rev = list(reversed([1, 2]))
    return first, rest, none, rev, [r * 2 for r in reversed(x)]


def attrs_builtins(x, n):
    return (
        getattr(x, "shape"),
        hasattr(x, "T"),
        hasattr(np, "nothing"),
        getattr(math, "pi"),
        callable(len),
        hash("a") == hash("a"),
        chr(65),
        ord("A"),
        bin(n),
        hex(n),
        oct(n),
        repr("s"),
        pow(n, 2),
        divmod(7, n),
        round(2.25, 1),
        divmod(x, 4.0),
        pow(x, 2),
        n.bit_length() if False else 0,
        math.floor(2.5),
        math.exp(n),
        "-".join(NAMES),
        NAMES.index("b"),
        "AbC".lower(),
        isinstance(x, (list, tuple)),
    )


def scalar_math(x, t):
    return math.exp(t) * x, np.float32(t) * x, np.float32(x), abs(t) + x, round(t) * x, max(t, 0.5), -t


def tuple_ops(x):
    t = (1, 2) + (3,)
    u = (x,) * 2
    v = [0] * 3 + [x]
    w = (1, 2) < (1, 3)
    a, *b, c = range(5)
    return t, u, v, w, a, b, c, (x, 1) + (2,), (1,) + (x,), 3 in (1, 2, 3), 4 not in [1, 2]


def numpy_misc(x):
    out = np.empty_like(x)
    np.multiply(x, 2, out=out)
    y = x.copy()
    y.fill(3.0)
    y.sort(axis=1)
    return (
        out,
        y,
        np.shape(x),
        np.ndim(x),
        np.size(x),
        np.promote_types(np.float32, np.int64),
        np.can_cast(np.int8, np.int64),
        np.float64(x[0, 0]),
        x.astype(np.int32).dtype,
        np.where(x > 2, 1.0, x),
        np.clip(x, 1, None),
        np.full(3, x[0, 0]),
        np.linspace(x[0, 0], x[1, 2], 4),
        np.s_[1:2],
        np.index_exp[0],
        np.add(x, 1, dtype=np.float32),
        np.round(x, 0),
        np.sum(x, axis=(0, 1)),
    )


def closures_defaults(x, k=2, *, scale=1.5):
    def inner(y, *args, z=1, **kw):
        return y * z + sum(args) + len(kw) + k

    return inner(x, 1, 2, z=scale, q=1), inner(x)


def fstring_and_format(x, n):
    return f"{n}", f"{n:>4}", f"{n!s}", "%d" % n, format(3.5, ".1f"), x.shape


CAPTURED = [
    (list_methods, [(A,), (A[0],)]),
    (dict_methods, [(A,), (A[0],)]),
    (iterators, [(A,), (A[:1],)]),
    (attrs_builtins, [(A, 3), (A, 5)]),
    (scalar_math, [(A, 0.5), (A, 2.5)]),
    (tuple_ops, [(A,), (A[0],)]),
    (numpy_misc, [(A,), (A + 1,)]),
    (closures_defaults, [(A,), ((A, 3), {"scale": 2.0})]),
    (fstring_and_format, [(A, 3), (A, 42)]),
]


@pytest.mark.parametrize("fn,calls", CAPTURED, ids=[f.__name__ for f, _ in CAPTURED])
def test_captured(fn, calls):
    check_agrees(fn, calls[0], calls[0], *calls[1:])
    args = calls[0]
    out = ft.explain(fn)(*args)
    assert out.graph_break_count == 0, str(out)


def br_next_exhausted(x):
    return next(iter(())), x


def br_list_pop_empty(x):
    return [].pop(), x


def br_missing_key(x):
    return {"a": 1}["b"], x


def br_unpack(x):
    a, b = (1, 2, 3)  # noqa: F841 - raises ValueError before b is used
    return a, x


def br_bad_call(x):
    return len(1, 2), x


def br_name_error(x):
    return undefined_name + x  # noqa: F821


def br_isinstance_bad(x):
    return isinstance(x, 3)


def br_shape_from_data(x):
    return np.zeros(int(x[0, 0]))


def br_keys_returned(x):
    return {"a": x}.keys()


def br_minmax_arrays(x):
    return max(x[0], x[1])


def br_in_array(x):
    return 1.0 in x


def br_dict_bad_method(x):
    d = {"a": 1}
    return d.popitem(), x


def br_iterate_number(x):
    for v in 3:
        x = x + v
    return x


def br_call_array(x):
    return x(1)


def br_where_one_arg(x):
    return np.where(x > 1)


def br_repeat_data(x):
    return np.repeat(x, x.astype(int).ravel())


def br_bool_index(x):
    return list(range(len(x[x[:, 0] > 0])))  # the mask is captured; range() needs its data-dependent length


BREAKING = [
    (br_next_exhausted, (A,), "FH009"),
    (br_list_pop_empty, (A,), "FH009"),
    (br_missing_key, (A,), "FH009"),
    (br_unpack, (A,), "FH009"),
    (br_bad_call, (A,), "FH009"),
    (br_name_error, (A,), "FH009"),
    (br_isinstance_bad, (A,), "FH009"),
    (br_shape_from_data, (A,), "FH012"),
    (br_keys_returned, (A,), "FH008"),
    (br_minmax_arrays, (A,), "FH002"),
    (br_in_array, (A,), "FH002"),
    (br_dict_bad_method, (A,), "FH004"),
    (br_iterate_number, (A,), "FH008"),
    (br_call_array, (A,), "FH003"),
    (br_where_one_arg, (A,), "FH011"),
    (br_repeat_data, (A,), "FH011"),
    (br_bool_index, (A,), "FH011"),
]


@pytest.mark.parametrize("fn,args,code", BREAKING, ids=[f.__name__ for f, _, _ in BREAKING])
def test_breaks(fn, args, code):
    try:
        out = ft.explain(fn)(*args)
    except Exception as e:
        out = e.explain_output
    assert [b.code for b in out.break_reasons][:1] == [code], str(out)
    if fn is not br_keys_returned:
        check_agrees(fn, args, args)
