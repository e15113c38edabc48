"""The C guard checker and the generated Python check function agree: same verdict and the
same fail_reason on hypothesis-generated guard sets and inputs."""

import collections

import array_strategies
import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import framehook.runtime as rt
from framehook.translator.guards import builder as guard_builder
from framehook.translator.guards.contexts import register_global_state, unregister_global_state
from framehook.translator.guards.builder import build_check_fn, c_checker_kinds, source_path
from framehook.translator.guards import GlobalStateSource, Guard, GuardKind
from framehook.translator.guards.sources import (
    AttrSource,
    ChainedSource,
    ClosureCellSource,
    GlobalSource,
    IndexSource,
    ItemSource,
    LengthSource,
    LocalSource,
    NdarrayPropertySource,
    TypeSource,
)

needs_not_same_as = pytest.mark.skipif(
    "NOT_SAME_AS" not in c_checker_kinds(), reason="runtime whose GuardChecker predates NOT_SAME_AS"
)
SETTINGS = settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])

scalars = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(-3, 3),
    st.floats(allow_nan=True, width=32),
    st.text(max_size=2),
    st.binary(max_size=1),
)
containers = st.one_of(
    st.lists(st.integers(0, 2), max_size=3),
    st.tuples(st.integers(0, 2)),
    st.dictionaries(st.sampled_from("abc"), st.integers(0, 2), max_size=3),
)
values = st.one_of(scalars, containers)


def arrays():
    return array_strategies.arrays(
        st.sampled_from([np.float64, np.float32, np.int64, np.bool_]),
        st.lists(st.integers(0, 3), max_size=3).map(tuple),
    )


KINDS_FOR = {
    "value": [GuardKind.TYPE_MATCH, GuardKind.EQUALS_MATCH, GuardKind.CONSTANT_MATCH, GuardKind.ID_MATCH],
    "container": [GuardKind.TYPE_MATCH, GuardKind.EQUALS_MATCH, GuardKind.LENGTH_CHECK, GuardKind.ID_MATCH],
    "dict": [GuardKind.DICT_KEYS, GuardKind.LENGTH_CHECK, GuardKind.EQUALS_MATCH],
    "array": [GuardKind.NDARRAY_MATCH, GuardKind.TYPE_MATCH],
}


def kind_of(v):
    if isinstance(v, np.ndarray):
        return "array"
    if isinstance(v, dict):
        return "dict"
    if isinstance(v, (list, tuple)):
        return "container"
    return "value"


def both(guards, L, G):
    c = build_check_fn(guards, L, G, use_c=True)
    p = build_check_fn(guards, L, G, use_c=False)
    assert isinstance(c, rt.GuardChecker) and c.c_guards is not None
    assert not isinstance(p, rt.GuardChecker) and p.c_guards is None
    assert c.code_parts == p.code_parts
    return c, p


def agree(c, p, L):
    verdict = p(L)
    assert c(L) == verdict
    reason = p.fail_reason(L)
    assert c.fail_reason(L) == reason
    assert (reason is None) == verdict
    return verdict


@SETTINGS
@given(
    st.lists(
        st.tuples(st.sampled_from("abcd"), st.one_of(values, arrays())),
        min_size=1,
        max_size=4,
        unique_by=lambda t: t[0],
    ),
    st.data(),
)
def test_c_and_python_agree(items, data):
    ref = dict(items)
    guards = []
    for name, v in items:
        for kind in data.draw(st.sets(st.sampled_from(KINDS_FOR[kind_of(v)]), min_size=1)):
            details = {}
            if kind is GuardKind.NDARRAY_MATCH and v.ndim:
                dyn = data.draw(st.sets(st.integers(0, v.ndim - 1), max_size=2))
                if dyn:
                    details["dynamic_dims"] = tuple(sorted(dyn))
            guards.append(LocalSource(name).make_guard(kind, **details))
    c, p = both(guards, ref, {})
    assert agree(c, p, ref)
    for _ in range(4):
        new = {n: data.draw(st.one_of(st.just(v), values, arrays())) for n, v in ref.items()}
        if data.draw(st.booleans()):
            new.pop(data.draw(st.sampled_from(sorted(new))))
        agree(c, p, new)


class Box:
    def __init__(self, **kw):
        self.__dict__.update(kw)


def test_chained_sources_agree():
    def make_closure(v):
        def inner():
            return v

        return inner

    G = {"cfg": Box(n=4, items=[1, (2, 3)], d={"k": "v"}), "scale": 2.5}
    L = {"a": np.zeros((2, 3)), "fn": make_closure(7), "xs": [1, 2, 3], "t": (np.ones(2), 5)}
    sources_kinds = [
        (GlobalSource("scale"), GuardKind.EQUALS_MATCH),
        (AttrSource(GlobalSource("cfg"), "n"), GuardKind.EQUALS_MATCH),
        (IndexSource(IndexSource(AttrSource(GlobalSource("cfg"), "items"), 1), 0), GuardKind.EQUALS_MATCH),
        (ItemSource(AttrSource(GlobalSource("cfg"), "d"), "k"), GuardKind.CONSTANT_MATCH),
        (LengthSource(LocalSource("xs")), GuardKind.EQUALS_MATCH),
        (TypeSource(LocalSource("xs")), GuardKind.ID_MATCH),
        (NdarrayPropertySource(LocalSource("a"), "shape", 1), GuardKind.EQUALS_MATCH),
        (NdarrayPropertySource(LocalSource("a"), "flags.writeable"), GuardKind.CONSTANT_MATCH),
        (ClosureCellSource(LocalSource("fn"), 0), GuardKind.EQUALS_MATCH),
        (IndexSource(LocalSource("t"), 0), GuardKind.NDARRAY_MATCH),
        (IndexSource(LocalSource("t"), -1), GuardKind.EQUALS_MATCH),
    ]
    guards = [s.make_guard(k) for s, k in sources_kinds]
    c, p = both(guards, L, G)
    assert agree(c, p, L)
    ro = np.zeros((2, 3))
    ro.flags.writeable = False
    variants = [
        dict(L, a=np.zeros((2, 4))),
        dict(L, a=ro),
        dict(L, fn=make_closure(8)),
        dict(L, xs=(1, 2, 3)),
        dict(L, xs=[1]),
        dict(L, t=(np.ones(3), 5)),
        dict(L, t=(np.ones(2),)),
        dict(L, fn=len),
        {},
    ]
    for new in variants:
        assert not agree(c, p, new)
    G["cfg"] = Box(n=4, items=[1, (9, 3)], d={"k": "v"})
    assert not agree(c, p, L)
    G["cfg"] = Box(n=4, items=[1, (2, 3)], d={})
    assert not agree(c, p, L)
    del G["scale"]
    assert not agree(c, p, L)


def test_duplicate_input_and_global_state_agree():
    a = np.zeros(3)
    L = {"x": a, "y": a}
    guards = [
        LocalSource("x").make_guard(GuardKind.NDARRAY_MATCH),
        LocalSource("y").make_guard(GuardKind.DUPLICATE_INPUT, other=LocalSource("x")),
        GlobalStateSource().make_guard(GuardKind.GLOBAL_STATE),
    ]
    c, p = both(guards, L, {})
    kinds = [g[1] for g in c.c_guards]
    assert "SAME_AS" in kinds and ("CONTEXTVAR_IS" in kinds or "CALL" in kinds)
    assert agree(c, p, L)
    assert not agree(c, p, {"x": a, "y": a.copy()})
    with np.errstate(divide="ignore"):
        assert not agree(c, p, L)
    old = np.seterr(**np.geterr())  # same state, new object: the fallback accepts it
    try:
        assert agree(c, p, L)
    finally:
        np.seterr(**old)
    box = {"v": 0}
    register_global_state("test.c_flag", lambda: box["v"])
    try:
        c2, p2 = both([GlobalStateSource().make_guard(GuardKind.GLOBAL_STATE)], {}, {})
        assert c2.c_guards[0][1] == "CALL"
        assert agree(c2, p2, {})
        box["v"] = 1
        assert not agree(c2, p2, {})
    finally:
        unregister_global_state("test.c_flag")


@needs_not_same_as
def test_distinct_input_agrees():
    G = {"cache": [0]}
    a, b = [1], [1]
    L = {"x": a, "y": b, "box": Box(buf=[2])}
    guards = [
        LocalSource("x").make_guard(GuardKind.LENGTH_CHECK),
        LocalSource("y").make_guard(GuardKind.DISTINCT_INPUT, other=LocalSource("x")),
        AttrSource(LocalSource("box"), "buf").make_guard(GuardKind.DISTINCT_INPUT, other=GlobalSource("cache")),
        AttrSource(LocalSource("box"), "buf").make_guard(GuardKind.DISTINCT_INPUT, other=LocalSource("y")),
    ]
    c, p = both(guards, L, G)
    assert sorted(g[1:] for g in c.c_guards if g[1] == "NOT_SAME_AS") == [
        ("NOT_SAME_AS", (("global", "cache"),)),
        ("NOT_SAME_AS", (("local", "x"),)),
        ("NOT_SAME_AS", (("local", "y"),)),
    ]
    assert agree(c, p, L)
    aliased = [dict(L, y=a), dict(L, box=Box(buf=G["cache"])), dict(L, box=Box(buf=b))]
    missing = [{"x": a, "box": L["box"]}, {"y": b, "box": L["box"]}, dict(L, box=Box()), {}]
    for new in aliased + missing:
        assert not agree(c, p, new)
    reason = c.fail_reason(dict(L, y=a))
    assert reason.startswith("DISTINCT_INPUT: L['y'] -- expected a different object from L['x'], got [1]")
    assert c.fail_reasons(dict(L, y=a)) == p.fail_reasons(dict(L, y=a))
    del G["cache"]  # the other side is missing: both forms fail the guard alike
    assert not agree(c, p, L)


def test_nan_and_missing_values_agree():
    L = {"f": float("nan"), "d": {"a": 1}}
    guards = [
        LocalSource("f").make_guard(GuardKind.EQUALS_MATCH),
        ItemSource(LocalSource("d"), "a").make_guard(GuardKind.EQUALS_MATCH),
        LocalSource("d").make_guard(GuardKind.DICT_KEYS),
    ]
    c, p = both(guards, L, {})
    for new in (
        L,
        dict(L, f=float("nan")),
        dict(L, f=1.0),
        dict(L, d={"b": 1}),
        dict(L, d={"a": 2}),
        dict(L, d=collections.OrderedDict(a=1)),
        {"f": L["f"]},
        {},
    ):
        agree(c, p, new)
    assert c.fail_reason({"f": L["f"]}).startswith("DICT_KEYS: L['d'] -- expected type dict, but checking raised")


class OddSource(ChainedSource):
    def format_with(self, base):
        return f"{base}.real"


def test_fallback_to_python():
    L = {"x": 3}
    g = OddSource(LocalSource("x")).make_guard(GuardKind.EQUALS_MATCH)
    fn = build_check_fn([g, LocalSource("x").make_guard(GuardKind.TYPE_MATCH)], L, {})
    assert not isinstance(fn, rt.GuardChecker) and fn.c_guards is None
    assert fn(L) and not fn({"x": 4})
    assert source_path(OddSource(LocalSource("x"))) is None
    assert source_path(GlobalStateSource()) is None
    # globals that are not a dict: the C checker refuses them, the Python function copes
    G = collections.ChainMap({"g": 1})
    fn = build_check_fn([GlobalSource("g").make_guard(GuardKind.EQUALS_MATCH)], {}, G)
    assert fn.c_guards is None and fn({})
    # switched off
    old = guard_builder.USE_C_CHECKER
    guard_builder.USE_C_CHECKER = False
    try:
        assert build_check_fn([LocalSource("x").make_guard(GuardKind.TYPE_MATCH)], L, {}).c_guards is None
    finally:
        guard_builder.USE_C_CHECKER = old
    assert isinstance(build_check_fn([LocalSource("x").make_guard(GuardKind.TYPE_MATCH)], L, {}), rt.GuardChecker)


def test_default_is_c_and_exports_work():
    x = np.ones(2)
    seen = []
    g = LocalSource("x").make_guard(GuardKind.NDARRAY_MATCH)
    fn = build_check_fn([g], {"x": x}, {}, guard_export_fn=seen.append)
    assert isinstance(fn, rt.GuardChecker) and seen == [[g]]
    assert fn.guards == [g] and "def ___make_check_fn" in fn.source
    assert fn.python_check_fn({"x": x}) and fn({"x": x})
    assert isinstance(Guard(LocalSource("x"), GuardKind.TYPE_MATCH), Guard)


def _guard_compiles(monkeypatch):
    """The check-function sources guard_builder compiles from now on (their filenames)."""
    seen = []
    real = compile

    def counting(source, filename, *args, **kwargs):
        if str(filename).startswith("<framehook guards"):
            seen.append(filename)
        return real(source, filename, *args, **kwargs)

    monkeypatch.setattr(guard_builder, "compile", counting, raising=False)
    return seen


def test_python_form_is_compiled_only_when_asked_for(monkeypatch):
    compiled = _guard_compiles(monkeypatch)
    L = {"x": np.zeros((3, 4)), "n": 3}
    guards = [LocalSource("x").make_guard(GuardKind.NDARRAY_MATCH), LocalSource("n").make_guard(GuardKind.TYPE_MATCH)]
    fn = build_check_fn(guards, L, {})
    bad = {"x": np.zeros((3, 4), np.int64), "n": 3.0}
    assert isinstance(fn, rt.GuardChecker)
    assert fn(L) and not fn(bad) and fn.code_parts and "def ___make_check_fn" in fn.source
    assert compiled == []  # the C checker decides; nothing asked for the Python form yet
    assert fn.fail_reason(L) is None and compiled == []  # the C checker says every guard holds
    assert fn.fail_reason(bad) == "TYPE_MATCH: L['n'] -- expected type int, got type float"
    assert len(compiled) == 1
    assert fn.fail_reasons(bad) == [
        "TYPE_MATCH: L['n'] -- expected type int, got type float",
        "NDARRAY_MATCH: L['x'] -- expected dtype float64, got dtype int64",
    ]
    assert fn.python_check_fn(L) and not fn.python_check_fn(bad)
    assert len(compiled) == 1  # compiled once, then reused


def test_python_form_is_compiled_at_once_without_the_c_checker(monkeypatch):
    compiled = _guard_compiles(monkeypatch)
    L = {"x": np.zeros(3)}
    fn = build_check_fn([LocalSource("x").make_guard(GuardKind.NDARRAY_MATCH)], L, {}, use_c=False)
    assert len(compiled) == 1 and fn.python_check_fn is fn  # the runtime calls it: it must exist


@needs_not_same_as
def test_distinct_input_is_checked_by_c(monkeypatch):
    compiled = _guard_compiles(monkeypatch)
    a, b = np.zeros(2), np.zeros(2)
    distinct = LocalSource("y").make_guard(GuardKind.DISTINCT_INPUT, other=LocalSource("x"))
    fn = build_check_fn([LocalSource("x").make_guard(GuardKind.NDARRAY_MATCH), distinct], {"x": a, "y": b}, {})
    assert isinstance(fn, rt.GuardChecker)
    assert fn.c_guards[-1] == ((("local", "y"),), "NOT_SAME_AS", (("local", "x"),))
    assert fn({"x": a, "y": b}) and not fn({"x": a, "y": a}) and not fn({"x": a})
    assert compiled == []  # the C checker decides; the Python form is not even compiled
    reason = fn.fail_reason({"x": a, "y": a})
    assert reason == f"DISTINCT_INPUT: L['y'] -- expected a different object from L['x'], got {a!r}"
    assert len(compiled) == 1
    python = build_check_fn(
        [LocalSource("x").make_guard(GuardKind.NDARRAY_MATCH), distinct], {"x": a, "y": b}, {}, use_c=False
    )
    assert python.fail_reason({"x": a, "y": a}) == reason


def _mutates_one_reads_other(x, a, b):
    a[0] = x
    return len(b) + x


@needs_not_same_as
def test_translated_entry_with_distinct_input_is_checked_by_c():
    import framehook.translator as ft

    fn = _mutates_one_reads_other
    ft.reset()
    try:
        opt = ft.optimize("eager")(fn)
        x = np.arange(3.0)
        assert np.array_equal(opt(x, [0.0], [1.0]), x + 1)
        (entry,) = rt.cache_entries(fn.__code__)
        check = entry.check_fn
        assert any(g.kind is GuardKind.DISTINCT_INPUT for g in check.guards)
        assert isinstance(check, rt.GuardChecker) and ("NOT_SAME_AS" in [g[1] for g in check.c_guards])
        assert np.array_equal(opt(x, [0.0], [1.0]), x + 1)
        assert rt.cache_entries(fn.__code__)[0].hits == 1
        shared = [0.0]
        assert not check({"x": x, "a": shared, "b": shared})
        assert check.fail_reason({"x": x, "a": shared, "b": shared}) == (
            "DISTINCT_INPUT: L['a'] -- expected a different object from L['b'], got [0.0]"
        )
        assert np.array_equal(opt(x, shared, shared), x + 1) and shared[0] is x  # not the cached code
    finally:
        ft.reset()


def test_distinct_input_without_not_same_as_stays_python(monkeypatch):
    # a runtime whose checker predates NOT_SAME_AS: the whole entry is the Python function
    monkeypatch.setattr(guard_builder, "_C_KINDS", c_checker_kinds() - {"NOT_SAME_AS"})
    compiled = _guard_compiles(monkeypatch)
    a, b = np.zeros(2), np.zeros(2)
    distinct = LocalSource("y").make_guard(GuardKind.DISTINCT_INPUT, other=LocalSource("x"))
    fn = build_check_fn([LocalSource("x").make_guard(GuardKind.NDARRAY_MATCH), distinct], {"x": a, "y": b}, {})
    assert not isinstance(fn, rt.GuardChecker) and fn.c_guards is None
    assert len(compiled) == 1 and fn.python_check_fn is fn  # compiled at once: the runtime calls it
    assert fn({"x": a, "y": b}) and not fn({"x": a, "y": a}) and not fn({"x": a})
    assert fn.fail_reason({"x": a, "y": a}) == (
        f"DISTINCT_INPUT: L['y'] -- expected a different object from L['x'], got {a!r}"
    )
    assert len(compiled) == 1
    # the same guards without DISTINCT_INPUT still go to C
    assert isinstance(
        build_check_fn([LocalSource("x").make_guard(GuardKind.NDARRAY_MATCH)], {"x": a}, {}), rt.GuardChecker
    )


def test_runtime_kinds_are_detected():
    kinds = c_checker_kinds()
    assert kinds == frozenset(rt.GuardChecker.KINDS)
    assert {"TYPE_MATCH", "NDARRAY_MATCH", "NOT_SAME_AS"} <= kinds  # API 2's runtime knows these
