"""Side effects replayed after the graph (globals, attributes of plain objects and modules,
argument containers) and boolean-mask indexing in the graph. Every function agrees exactly
with the plain one on the first call, on cache hits and after the objects it mutates change
(the guards make the cached code invalid), including the state it leaves behind."""

from __future__ import annotations

import copy
import types

import numpy as np
import pytest

import framehook.translator as ft
from framehook.translator import config
from symbolic_helpers import assert_same, check_agrees, entries

X = np.arange(-3.0, 6.0)


pytestmark = pytest.mark.usefixtures("fresh_translator")


# ----------------------------------------------------------------- globals
COUNTER = 0
LAST = None
STATE = {}


def bumps_counter(x):
    global COUNTER
    COUNTER += 1
    return x * COUNTER


def stores_array(x):
    global LAST
    LAST = x * 2
    return LAST.sum() + 1  # the read after the store sees the new value


def creates_global(x):
    global CREATED
    CREATED = x + 1
    return CREATED * 2


def _helper_store(v):
    global LAST
    LAST = v


def stores_in_inlined_call(x):
    _helper_store(x - 1)
    return LAST + x


def swaps_globals(x):
    global COUNTER, LAST
    COUNTER, LAST = LAST, COUNTER
    return x


def snapshot_globals():
    return {k: copy.deepcopy(globals().get(k)) for k in ("COUNTER", "LAST", "CREATED")}


def run_with_globals(fn, args, start):
    """(result, globals after) of ``fn(*args)`` with the module globals set to ``start``."""
    g = globals()
    g.pop("CREATED", None)
    g.update(copy.deepcopy(start))
    out = fn(*copy.deepcopy(args))
    return out, snapshot_globals()


@pytest.mark.parametrize(
    "fn,starts",
    [
        (bumps_counter, [{"COUNTER": 0}, {"COUNTER": 0}, {"COUNTER": 5}, {"COUNTER": 2.5}, {"COUNTER": 0}]),
        (stores_array, [{"LAST": None}, {"LAST": None}, {"LAST": 3}]),
        (creates_global, [{}, {}]),
        (stores_in_inlined_call, [{"LAST": None}, {"LAST": 1.0}]),
        (swaps_globals, [{"COUNTER": 1, "LAST": 2.0}, {"COUNTER": 1, "LAST": 2.0}, {"COUNTER": X, "LAST": None}]),
    ],
    ids=lambda v: getattr(v, "__name__", "starts"),
)
def test_global_stores_are_replayed(fn, starts):
    saved = snapshot_globals()
    try:
        opt = ft.optimize("eager")(fn)
        for start in starts:  # first call, cache hits, changed global values (recompiles)
            want = run_with_globals(fn, (X,), start)
            got = run_with_globals(opt, (X,), start)
            assert_same(got[0], want[0])
            assert_same(got[1], want[1], "globals after the call")
        out = ft.explain(fn)(X)
        assert out.graph_break_count == 0 and out.graph_count == 1, str(out)
    finally:
        globals().pop("CREATED", None)
        globals().update(saved)


def test_counter_type_change_invalidates():
    saved = COUNTER
    try:
        opt = ft.optimize("eager")(bumps_counter)
        globals()["COUNTER"] = 0
        opt(X)
        opt(X)
        assert entries(bumps_counter) == 1 and COUNTER == 2
        globals()["COUNTER"] = 0.5  # TYPE_MATCH(G['COUNTER']) fails: a new entry
        assert_same(opt(X), X * 1.5)
        assert COUNTER == 1.5 and entries(bumps_counter) == 2
    finally:
        globals()["COUNTER"] = saved


# ----------------------------------------------------------------- attributes
class Params:
    def __init__(self, scale, cache=None):
        self.scale = scale
        self.cache = cache


SCRATCH = types.ModuleType("scratch")
SCRATCH.value = 1.0


def updates_namespace(x, ns):
    ns.total = ns.total + x.sum()
    ns.last = x * ns.total
    ns.flag = None
    return ns.last - 1


def updates_object(x, p):
    p.cache = x * p.scale
    p.scale = p.scale + 1
    return p.cache + p.scale


def updates_module_attribute(x):
    SCRATCH.value = SCRATCH.value * 2
    SCRATCH.array = x + SCRATCH.value
    return SCRATCH.array


def nested_attribute(x, outer):
    outer.inner.v = x.max()
    return outer.inner.v + x


def state_of(obj):
    if isinstance(obj, (types.SimpleNamespace, Params, types.ModuleType)):
        return {k: v for k, v in vars(obj).items() if not k.startswith("__")}
    return obj


def compare_objects(fn, make_args, rounds=3):
    """Plain and optimized agree on the result and on the state of every argument, on each
    call of fresh arguments made by ``make_args(round)``."""
    opt = ft.optimize("eager")(fn)
    for r in range(rounds):
        a1, a2 = make_args(r), make_args(r)
        want = fn(*a1)
        got = opt(*a2)
        assert_same(got, want)
        for i, (p, q) in enumerate(zip(a1, a2)):
            if isinstance(p, types.SimpleNamespace) and hasattr(p, "inner"):
                p, q = p.inner, q.inner
            assert_same(state_of(q), state_of(p), f"argument {i} after the call")
    return opt


def test_namespace_attributes():
    opt = compare_objects(updates_namespace, lambda r: (X + r, types.SimpleNamespace(total=1.0 if r < 2 else 2)))
    assert entries(updates_namespace) == 2  # the attribute's type changed on the third call
    out = ft.explain(updates_namespace)(X, types.SimpleNamespace(total=1.0))
    assert out.graph_break_count == 0 and "TYPE_MATCH(L['ns'].total): type(L['ns'].total) is float" in out.guards, str(
        out
    )
    del opt


def test_user_object_attributes():
    compare_objects(updates_object, lambda r: (X, Params(2.0 if r != 1 else np.float32(3.0))))
    out = ft.explain(updates_object)(X, Params(2.0))
    assert out.graph_break_count == 0 and out.graph_count == 1, str(out)


def test_nested_plain_objects():
    compare_objects(nested_attribute, lambda r: (X[: r + 3], types.SimpleNamespace(inner=types.SimpleNamespace(v=0))))


def test_module_attributes():
    saved = dict(vars(SCRATCH))
    try:
        opt = ft.optimize("eager")(updates_module_attribute)
        for _ in range(3):
            SCRATCH.value = 1.0
            SCRATCH.__dict__.pop("array", None)
            want = updates_module_attribute(X)
            state = state_of(SCRATCH)
            SCRATCH.value = 1.0
            SCRATCH.__dict__.pop("array", None)
            assert_same(opt(X), want)
            assert_same(state_of(SCRATCH), state)
        assert ft.explain(updates_module_attribute)(X).graph_break_count == 0
    finally:
        vars(SCRATCH).clear()
        vars(SCRATCH).update(saved)


def test_attribute_store_on_object_with_property_breaks():
    class Guarded:
        @property
        def v(self):
            return 1

        @v.setter
        def v(self, value):
            self.seen = value

    def f(x, g):
        g.v = x.sum()
        return x

    out = ft.explain(f)(X, Guarded())
    assert out.break_reasons and out.break_reasons[0].code == "FH006", str(out)
    g1, g2 = Guarded(), Guarded()
    f(X, g1)
    ft.optimize("eager")(f)(X, g2)
    assert g1.seen == g2.seen


# ----------------------------------------------------------------- containers
def appends(x, lst):
    lst.append(x * 2)
    lst[0] = x.sum()
    return len(lst)


def updates_dict(x, d):
    d["y"] = x + d["k"]
    d["k"] = 0
    return d["y"] * 2


def extends_and_pops(x, lst, d):
    lst.extend([x, 1])
    first = lst.pop(0)
    d.update(first=first)
    del d["drop"]
    return first, lst, d


def container_in_attribute(x, ns):
    ns.items.append(x + 1)
    return ns.items


@pytest.mark.parametrize(
    "fn,calls",
    [
        (appends, [(X, [1.0]), (X, [1.0]), (X, [1.0, 2.0]), (X, [np.ones(2)])]),
        (updates_dict, [(X, {"k": 1.0}), (X, {"k": 1.0}), (X, {"k": 1.0, "z": 2}), (X, {"k": X})]),
        (extends_and_pops, [(X, [7.0], {"drop": 1}), (X, [7.0], {"drop": 1}), (X, [7, 8], {"drop": 1, "a": 2})]),
    ],
    ids=lambda v: getattr(v, "__name__", "calls"),
)
def test_argument_containers_are_replayed(fn, calls):
    check_agrees(fn, *calls)  # results and the arguments' contents after the call
    out = ft.explain(fn)(*copy.deepcopy(calls[0]))
    assert out.graph_break_count == 0 and out.graph_count == 1, str(out)


def test_container_length_change_invalidates():
    opt = ft.optimize("eager")(appends)
    a, b = [1.0], [1.0, 2.0]
    opt(X, a)
    opt(X, [1.0])
    assert entries(appends) == 1
    assert opt(X, b) == 3 and len(b) == 3 and entries(appends) == 2
    assert_same(a[1], X * 2)


def test_container_identity_is_kept():
    def f(x, lst):
        lst.append(x)
        return lst

    lst = []
    out = ft.optimize("eager")(f)(X, lst)
    assert out is lst and len(lst) == 1 and lst[0] is X


def test_container_in_attribute():
    def make():
        return (X, types.SimpleNamespace(items=[1]))

    a, b = make(), make()
    want = container_in_attribute(*a)
    got = ft.optimize("eager")(container_in_attribute)(*b)
    assert_same(got, want)
    assert got is b[1].items


def mutates_one_returns_other(x, a, b):
    a.append(x)
    return len(b) + x


def test_aliasing_after_trace_invalidates():
    opt = ft.optimize("eager")(mutates_one_returns_other)
    for args in [(X, [1], [2]), (X, [1], [2])]:
        check_agrees(mutates_one_returns_other, args, optimized=opt)
    shared = [1]
    plain_shared = [1]
    want = mutates_one_returns_other(X, plain_shared, plain_shared)
    got = opt(X, shared, shared)  # DISTINCT_INPUT fails: not the cached code
    assert_same(got, want)
    assert len(shared) == len(plain_shared)
    out = ft.explain(mutates_one_returns_other)(X, [1], [2])
    assert any(g.startswith("DISTINCT_INPUT") for g in out.guards), out.guards


def test_aliased_mutation_breaks_cleanly():
    shared = [1]
    out = ft.explain(mutates_one_returns_other)(X, shared, shared)
    assert [b.code for b in out.break_reasons][:1] == ["FH006"], str(out)
    check_agrees(mutates_one_returns_other, (lambda s: (X, s, s))([1]))


def test_nested_alias_breaks_cleanly():
    def f(x, outer):
        outer[0].append(x)
        return len(outer[1]) + x

    inner = [1]
    check_agrees(f, (X, [inner, inner]), (X, [[1], [2]]))
    out = ft.explain(f)(X, (lambda i: [i, i])([1]))
    assert [b.code for b in out.break_reasons][:1] == ["FH006"], str(out)


# ----------------------------------------------------------------- a break after a mutation
def mutates_then_breaks(x, lst, ns):
    global COUNTER
    COUNTER = 7
    lst.append(x.sum())
    ns.v = x * 2
    print("state", COUNTER, len(lst), ns.v.sum())  # runs after the replay
    return ns.v + COUNTER


def test_side_effects_replayed_before_the_break(capsys):
    saved = COUNTER
    try:
        opt = ft.optimize("eager")(mutates_then_breaks)
        for _ in range(3):
            a = ([1.0], types.SimpleNamespace(v=0))
            b = ([1.0], types.SimpleNamespace(v=0))
            globals()["COUNTER"] = 0
            want = mutates_then_breaks(X, *a)
            plain_out = capsys.readouterr().out
            globals()["COUNTER"] = 0
            got = opt(X, *b)
            assert capsys.readouterr().out == plain_out
            assert_same(got, want)
            assert_same(b[0], a[0])
            assert_same(b[1].v, a[1].v)
        out = ft.explain(mutates_then_breaks)(X, [1.0], types.SimpleNamespace(v=0))
        assert [b.code for b in out.break_reasons] == ["FH005"] and out.graph_count == 2, str(out)
        assert all(r.resume_failure is None for r in out.frames)
    finally:
        globals()["COUNTER"] = saved


# ----------------------------------------------------------------- boolean masks
def mask_sum(x):
    return x[x > 0].sum()


def mask_mean(x, m):
    return np.mean(x[m]), np.std(x[m] * 2 + 1)


def mask_rows(a):
    rows = a[a[:, 0] > 0]
    return rows.sum(axis=0), (rows**2).mean(axis=1).max(initial=-1.0)


def mask_returned(x):
    return x[(x > 1) & (x < 4)] * 3


def mask_assign(x, m):
    x[m] = 0
    x[x > 2] = x[x > 2] * 10 + 1
    return x


def mask_assign_array_values(z, c):
    mask = np.abs(z) <= 2
    z[mask] = z[mask] ** 2 + c[mask]
    return z


def mask_then_elementwise(x, y):
    m = x > y
    return np.maximum(x[m], y[m]).sum() + np.exp(x[~m]).sum()


M = np.array([True, False, True, True, False, False, True, False, True])
A2 = np.arange(-6.0, 6.0).reshape(4, 3)
Z = (np.arange(12.0).reshape(3, 4) - 5) / 3 + 0.5j


@pytest.mark.parametrize(
    "fn,calls",
    [
        (mask_sum, [(X,), (X,), (-X,), (X.astype(np.float32),)]),
        (mask_mean, [(X, M), (X, M), (X, ~M)]),
        (mask_rows, [(A2,), (A2,), (-A2,)]),
        (mask_returned, [(X,), (X,), (X * 10,)]),
        (mask_assign, [(X.copy(), M), (X.copy(), M), (X.copy(), ~M)]),
        (mask_assign_array_values, [(Z.copy(), Z * 0.1), (Z.copy(), Z * 0.1), (Z.copy() * 3, Z)]),
        (mask_then_elementwise, [(X, X[::-1].copy()), (X, X[::-1].copy()), (X, X)]),
    ],
    ids=lambda v: getattr(v, "__name__", "calls"),
)
def test_boolean_masks_stay_in_the_graph(fn, calls):
    check_agrees(fn, *calls)
    out = ft.explain(fn)(*copy.deepcopy(calls[0]))
    assert out.graph_count == 1 and out.graph_break_count == 0, str(out)
    graph_src = str(out)
    assert "getitem" in graph_src or "setitem" in graph_src


def test_masked_values_do_not_recompile_on_new_contents():
    opt = ft.optimize("eager")(mask_sum)
    for k in range(5):
        check_agrees(mask_sum, (X - k,), optimized=opt)
    assert entries(mask_sum) == 1


def test_mask_length_read_in_the_graph():
    def shape_of(x):
        return x[x > 0].shape

    def length_then_use(x):
        y = x[x > 0]
        return y * len(y)

    def length_in_range(x):
        return list(range(len(x[x > 0])))

    # the length of a mask result is read by the graph when it runs
    for fn in (shape_of, length_then_use):
        out = ft.explain(fn)(X)
        assert out.graph_break_count == 0, str(out)
        check_agrees(fn, (X,), (X,), (-X,))
    # range() needs it as a Python number: a break
    out = ft.explain(length_in_range)(X)
    assert [b.code for b in out.break_reasons][:1] == ["FH011"], str(out)
    assert "(a dynamic dimension)" in out.break_reasons[0].reason
    check_agrees(length_in_range, (X,), (X,), (-X,))


def test_mask_with_wrong_shape_raises_like_numpy():
    def f(x, m):
        return x[m].sum()

    check_agrees(f, (X, M[:4]), (X, M[:4]))


def test_masks_with_numexpr_backend():
    pytest.importorskip("numexpr")

    def f(x):
        y = x[x > 0]
        return y * 2 + 1

    got = ft.optimize("numexpr")(f)(X)
    np.testing.assert_allclose(got, f(X))


def test_masks_under_dynamic_shapes():
    with config.patch(assume_static_by_default=False):
        opt = ft.optimize("eager")(mask_sum)
        for n in (5, 7, 9):
            check_agrees(mask_sum, (np.arange(float(n)) - 3,), optimized=opt)


# ----------------------------------------------------------------- loops
def appends_in_loop(x, lst):
    for i in range(12):
        lst.append(x[i % 3] * i)
        x = x + 1
    return x


def global_in_loop(x):
    global COUNTER
    for i in range(12):
        COUNTER = COUNTER + 1
        x = x * 0.5 + COUNTER
    return x


def masks_in_loop(x):
    acc = x * 0
    for i in range(12):
        acc = acc + x[x > i % 4].sum()
    return acc


def test_effects_and_masks_inside_loops():
    # a loop whose body mutates outside state is unrolled (captured as one loop node it would
    # do the effect once); results and state agree either way
    check_agrees(appends_in_loop, (X, [0.0]), (X, [0.0]), (X[:4], [1.0, 2.0]))
    out = ft.explain(appends_in_loop)(X, [0.0])
    assert out.graph_break_count == 0, str(out)
    check_agrees(masks_in_loop, (X,), (X,), (-X,))
    assert ft.explain(masks_in_loop)(X).graph_break_count == 0
    saved = COUNTER
    try:
        opt = ft.optimize("eager")(global_in_loop)
        for _ in range(2):
            globals()["COUNTER"] = 1
            want = global_in_loop(X)
            globals()["COUNTER"] = 1
            assert_same(opt(X), want)
            assert COUNTER == 13
    finally:
        globals()["COUNTER"] = saved
