"""The compiled check function: accepts exactly the inputs whose guarded properties are
unchanged (checked against hypothesis-generated inputs), and explains its failures."""

import collections
import math

import array_strategies
import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from framehook.translator.guards.contexts import register_global_state, unregister_global_state
from framehook.translator.guards.builder import GuardBuildError, build_check_fn, type_name
from framehook.translator.guards import GlobalStateSource, Guard, GuardKind
from framehook.translator.guards.sources import (
    AttrSource,
    GlobalSource,
    ItemSource,
    LengthSource,
    LocalSource,
    NdarrayPropertySource,
)

SETTINGS = settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])

scalars = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(-5, 5),
    st.floats(allow_nan=True, width=32),
    st.text(max_size=3),
    st.binary(max_size=2),
)
containers = st.one_of(
    st.lists(st.integers(0, 3), max_size=3),
    st.tuples(st.integers(0, 2)),
    st.dictionaries(st.sampled_from("abc"), st.integers(0, 2), max_size=3),
)
values = st.one_of(scalars, containers)


def same_value(a, b):
    if type(a) is not type(b):
        return False
    if isinstance(a, float) and math.isnan(a):
        return math.isnan(b)
    return a == b


def one(kind, value, **details):
    guard = LocalSource("v").make_guard(kind, **details)
    return build_check_fn([guard], {"v": value}, {})


@SETTINGS
@given(values, values)
def test_type_match(a, b):
    assert one(GuardKind.TYPE_MATCH, a)({"v": b}) == (type(a) is type(b))


@SETTINGS
@given(values, values)
def test_equals_match(a, b):
    fn = one(GuardKind.EQUALS_MATCH, a)
    assert fn({"v": b}) == same_value(a, b)
    assert fn({"v": a})


@SETTINGS
@given(values, values)
def test_constant_match(a, b):
    fn = one(GuardKind.CONSTANT_MATCH, a)
    if a is None or isinstance(a, bool):
        assert fn({"v": b}) == (a is b)
    else:
        assert fn({"v": b}) == same_value(a, b)


@SETTINGS
@given(containers, containers)
def test_length_check(a, b):
    fn = one(GuardKind.LENGTH_CHECK, a)
    assert fn({"v": b}) == (type(a) is type(b) and len(a) == len(b))


@SETTINGS
@given(
    st.dictionaries(st.sampled_from("abcd"), st.integers(), max_size=4),
    st.dictionaries(st.sampled_from("abcd"), st.integers(), max_size=4),
)
def test_dict_keys(a, b):
    fn = one(GuardKind.DICT_KEYS, a)
    assert fn({"v": b}) == (list(a) == list(b))
    assert not fn({"v": collections.OrderedDict(a)})


@SETTINGS
@given(st.one_of(st.integers(), st.text(max_size=2)), st.integers(0, 2))
def test_id_match(a, pick):
    objs = [a, [a], object()]
    fn = one(GuardKind.ID_MATCH, objs[0])
    assert fn({"v": objs[pick]}) == (objs[pick] is objs[0])


dtypes = st.sampled_from([np.float64, np.float32, np.int64, np.int32, np.bool_, np.complex128])
shapes = st.lists(st.integers(0, 4), min_size=0, max_size=3).map(tuple)


def arrays():
    return array_strategies.arrays(dtypes, shapes)


def same_layout_kind(a, b):
    """The layout property the guard keeps when dims are dynamic: a's first of C/F/neither."""
    if a.flags.c_contiguous:
        return b.flags.c_contiguous
    if a.flags.f_contiguous:
        return b.flags.f_contiguous
    return not (b.flags.c_contiguous or b.flags.f_contiguous)


@SETTINGS
@given(arrays(), arrays(), st.sets(st.integers(0, 2), max_size=2))
def test_ndarray_match(a, b, dyn):
    dyn = tuple(sorted(d for d in dyn if d < a.ndim))
    fn = one(GuardKind.NDARRAY_MATCH, a, **({"dynamic_dims": dyn} if dyn else {}))
    expected = type(b) is type(a) and b.dtype == a.dtype and b.flags.writeable == a.flags.writeable
    if not dyn:
        expected = expected and b.shape == a.shape and b.strides == a.strides
    else:
        expected = (
            expected
            and b.ndim == a.ndim
            and same_layout_kind(a, b)
            and all(b.shape[i] == a.shape[i] for i in range(a.ndim) if i not in dyn)
        )
    assert fn({"v": b}) == expected
    assert fn({"v": a})
    assert not fn({"v": a.tolist()})


def test_ndarray_match_rejects_bad_input():
    with pytest.raises(GuardBuildError, match="expected a numpy.ndarray"):
        one(GuardKind.NDARRAY_MATCH, [1])
    with pytest.raises(GuardBuildError, match="out of range"):
        one(GuardKind.NDARRAY_MATCH, np.zeros(3), dynamic_dims=(1,))
    with pytest.raises(GuardBuildError, match="cannot be guarded by equality"):
        one(GuardKind.EQUALS_MATCH, object())
    with pytest.raises(GuardBuildError, match="has no keys"):
        one(GuardKind.DICT_KEYS, 3)
    with pytest.raises(GuardBuildError, match="cannot evaluate"):
        build_check_fn([LocalSource("missing").make_guard(GuardKind.TYPE_MATCH)], {}, {})


@SETTINGS
@given(
    st.lists(st.tuples(st.sampled_from("abcd"), values), min_size=1, max_size=4, unique_by=lambda t: t[0]), st.data()
)
def test_guard_set_accepts_exactly_unchanged_inputs(items, data):
    """Several guards in one function: the result is the conjunction of each property."""
    ref = dict(items)
    guards = []
    for name, value in items:
        guards.append(LocalSource(name).make_guard(GuardKind.TYPE_MATCH))
        guards.append(LocalSource(name).make_guard(GuardKind.EQUALS_MATCH))
    fn = build_check_fn(guards, ref, {})
    new = {name: data.draw(st.one_of(st.just(v), values)) for name, v in items}
    expected = all(same_value(ref[n], new[n]) for n in ref)
    assert fn(new) == expected
    reason = fn.fail_reason(new)
    assert (reason is None) == expected
    if not expected:
        first_bad = sorted(n for n in ref if not same_value(ref[n], new[n]))[0]
        assert f"L['{first_bad}']" in reason


def test_fail_reason_is_readable():
    L = {"x": np.zeros((3, 4)), "n": 3, "d": {"a": 1}}
    guards = [
        LocalSource("x").make_guard(GuardKind.NDARRAY_MATCH),
        LocalSource("n").make_guard(GuardKind.TYPE_MATCH),
        ItemSource(LocalSource("d"), "a").make_guard(GuardKind.CONSTANT_MATCH),
        LocalSource("d").make_guard(GuardKind.DICT_KEYS),
    ]
    fn = build_check_fn(guards, L, {})
    assert fn(L) and fn.fail_reason(L) is None
    assert fn.fail_reason(dict(L, n="3")) == "TYPE_MATCH: L['n'] -- expected type int, got type str"
    assert fn.fail_reason(dict(L, x=np.zeros((3, 5)))) == "NDARRAY_MATCH: L['x'] -- expected shape (3, 4), got (3, 5)"
    assert (
        fn.fail_reason(dict(L, x=np.zeros((3, 4), np.float32)))
        == "NDARRAY_MATCH: L['x'] -- expected dtype float64, got dtype float32"
    )
    assert fn.fail_reason(dict(L, d={"a": 2})) == "CONSTANT_MATCH: L['d']['a'] -- expected 1, got 2"
    assert fn.fail_reason({"n": 3}).startswith("DICT_KEYS: L['d'] -- expected type dict, but checking raised KeyError")
    assert "type(L['n']) is int" in fn.code_parts
    assert any("dtype('float64')" in p for p in fn.code_parts)
    assert not fn({"x": 1})  # a missing key is a failed guard, not an error
    assert [g.name for g in fn.guards] == ["L['d']", "L['n']", "L['x']", "L['d']['a']"]
    assert "def ___make_check_fn" in fn.source
    assert type_name(np.ndarray) == "numpy.ndarray" and type_name(int) == "int"


def test_global_sources_and_chains():
    G = {"scale": 2.5, "cfg": collections.namedtuple("C", "n")(4)}
    guards = [
        GlobalSource("scale").make_guard(GuardKind.EQUALS_MATCH),
        AttrSource(GlobalSource("cfg"), "n").make_guard(GuardKind.EQUALS_MATCH),
        LengthSource(LocalSource("xs")).make_guard(GuardKind.EQUALS_MATCH),
        NdarrayPropertySource(LocalSource("a"), "shape", 0).make_guard(GuardKind.EQUALS_MATCH),
    ]
    L = {"xs": [1, 2], "a": np.zeros(5)}
    fn = build_check_fn(guards, L, G)
    assert fn(L)
    assert not fn({"xs": [1], "a": np.zeros(5)})
    assert not fn({"xs": [1, 2], "a": np.zeros(6)})
    G["scale"] = 3.0  # the check function reads the live globals dict
    assert not fn(L)
    assert fn.fail_reason(L) == "EQUALS_MATCH: G['scale'] -- expected 2.5, got 3.0"


def test_duplicate_input_guard():
    a = np.zeros(3)
    L = {"x": a, "y": a}
    g = LocalSource("y").make_guard(GuardKind.DUPLICATE_INPUT, other=LocalSource("x"))
    fn = build_check_fn([g], L, {})
    assert fn(L) and not fn({"x": a, "y": a.copy()})
    assert "expected the same object as L['x']" in fn.fail_reason({"x": a, "y": a.copy()})
    with pytest.raises(GuardBuildError, match="not the same object"):
        build_check_fn([g], {"x": a, "y": a.copy()}, {})


def test_global_state_guard():
    fn = build_check_fn([GlobalStateSource().make_guard(GuardKind.GLOBAL_STATE)], {}, {})
    assert fn({})
    with np.errstate(divide="ignore", invalid="ignore", over="ignore", under="ignore"):
        assert not fn({})
        assert "numpy.errstate" in fn.fail_reason({})
    assert fn({})
    # setting the same state again makes a new numpy object: still accepted (slow path)
    old = np.seterr(**np.geterr())
    try:
        assert fn({})
    finally:
        np.seterr(**old)
    box = {"v": 0}
    register_global_state("test.flag", lambda: box["v"])
    try:
        fn2 = build_check_fn([GlobalStateSource().make_guard(GuardKind.GLOBAL_STATE)], {}, {})
        assert fn2({})
        box["v"] = 1
        assert not fn2({})
        assert fn2.fail_reason({}).endswith("changed: test.flag=1")
    finally:
        unregister_global_state("test.flag")


def test_export_info_and_export_fn():
    seen = []
    x = np.ones(2)
    g = LocalSource("x").make_guard(GuardKind.NDARRAY_MATCH)
    fn = build_check_fn([g], {"x": x}, {}, guard_export_fn=seen.append)
    assert seen == [[g]]
    assert g.guard_types == ["NDARRAY_MATCH"]
    assert g.obj_weakref() is x and g.guarded_class_weakref() is np.ndarray
    assert g.code_list[0].startswith("type(L['x']) is ")
    h = LocalSource("n").make_guard(GuardKind.TYPE_MATCH)
    build_check_fn([h], {"n": 3}, {})
    assert h.obj_weakref is None  # ints cannot be weakly referenced
    assert fn({"x": np.ones(2)})


def test_guard_create_logs_and_reraises(caplog):
    g = Guard(LocalSource("x"), GuardKind.LENGTH_CHECK)
    from framehook.translator.guards.contexts import TracingContext, tracing

    gs_stack = None
    with tracing(TracingContext()):
        TracingContext.set_current_loc("user.py", 4, "f")
        from framehook.translator.guards import GuardsSet

        s = GuardsSet()
        s.add(g)
        gs_stack = g.user_stack
    assert gs_stack
    with pytest.raises(TypeError):
        build_check_fn([g], {"x": 3}, {})
    assert "error while building guard LENGTH_CHECK(L['x'])" in caplog.text
    assert "user.py" in caplog.text


def test_nan_and_mutable_values():
    fn = one(GuardKind.EQUALS_MATCH, float("nan"))
    assert fn({"v": float("nan")}) and not fn({"v": 1.0})
    lst = [1, 2]
    fn = one(GuardKind.EQUALS_MATCH, lst)
    lst.append(3)  # the guard keeps its own copy
    assert fn({"v": [1, 2]}) and not fn({"v": lst})
    fn = one(GuardKind.EQUALS_MATCH, {"a": [1]})
    assert fn({"v": {"a": [1]}})
    assert one(GuardKind.EQUALS_MATCH, {1, 2})({"v": {2, 1}})
    assert one(GuardKind.EQUALS_MATCH, np.float32(2))({"v": np.float32(2)})
    assert one(GuardKind.CONSTANT_MATCH, Ellipsis)({"v": Ellipsis})
    fn = one(GuardKind.EQUALS_MATCH, float("inf"))
    assert fn({"v": float("inf")}) and "inf" in fn.fail_reason({"v": 1.0})


def test_sources_read_without_eval_give_what_their_expression_gives():
    """GuardBuilder reads common sources directly (no compile of the expression); the value,
    and the error of a source that cannot be read, are those of evaluating its name."""
    from framehook.translator.guards.builder import GuardBuilder
    from framehook.translator.guards.sources import ClosureCellSource, IndexSource, TypeSource

    Point = collections.namedtuple("Point", "x y")
    arr = np.arange(12.0).reshape(3, 4)
    f_locals = {"a": arr, "d": {"k": [1, 2, 3]}, "p": Point(arr, 2.5)}
    f_globals = {"g": math, "fn": (lambda: arr)}
    builder = GuardBuilder(f_locals, f_globals)
    scope = {"L": f_locals, "G": f_globals, "__builtins__": __builtins__}
    sources = [
        LocalSource("a"),
        GlobalSource("g"),
        AttrSource(GlobalSource("g"), "pi"),
        AttrSource(LocalSource("p"), "x.T"),
        ItemSource(LocalSource("d"), "k"),
        IndexSource(ItemSource(LocalSource("d"), "k"), 2),
        LengthSource(ItemSource(LocalSource("d"), "k")),
        TypeSource(LocalSource("p")),
        NdarrayPropertySource(LocalSource("a"), "shape", 1),
        NdarrayPropertySource(AttrSource(LocalSource("p"), "x"), "flags.writeable"),
        ClosureCellSource(GlobalSource("fn"), 0),  # not read directly: evaluated
    ]
    for source in sources:
        expected = eval(source.name(), scope)  # noqa: S307
        got = builder.get(source)
        assert got is expected or (isinstance(got, np.ndarray) and np.shares_memory(got, expected)) or got == expected
    for missing in (LocalSource("nope"), GlobalSource("nope"), AttrSource(GlobalSource("g"), "nope")):
        with pytest.raises(GuardBuildError) as found:
            builder.get(missing)
        try:
            eval(missing.name(), scope)  # noqa: S307
        except Exception as e:  # noqa: BLE001 - the same error, named the same way
            assert f"{type(e).__name__}: {e}" in str(found.value)


def test_code_parts_read_as_a_list_of_text():
    a = np.ones(3)
    guards = [LocalSource("a").make_guard(GuardKind.NDARRAY_MATCH), LocalSource("n").make_guard(GuardKind.EQUALS_MATCH)]
    fn = build_check_fn(guards, {"a": a, "n": 3}, {})
    parts = fn.code_parts
    texts = list(parts)
    assert texts and all(isinstance(t, str) for t in texts)
    assert len(parts) == len(texts) and parts[0] == texts[0] and parts[-2:] == texts[-2:]
    assert parts == texts and parts != texts[:-1] and parts != "text"
    assert "L['n'] == 3" in parts and repr(parts) == repr(texts)
    with pytest.raises(TypeError):
        hash(parts)


def test_read_value_reads_each_source_as_its_expression_does():
    from framehook.translator.guards.sources import (
        AttrSource,
        ClosureCellSource,
        GlobalSource,
        IndexSource,
        ItemSource,
        LengthSource,
        NdarrayPropertySource,
        TypeSource,
        read_value,
    )

    def outer():
        k = 5

        def inner():
            return k

        return inner

    a = np.ones((2, 3))
    f_locals = {"a": a, "d": {"key": [7, 8]}, "fn": outer()}
    f_globals = {"g": np}
    sources = [
        LocalSource("a"),
        GlobalSource("g"),
        AttrSource(LocalSource("a"), "T.shape"),
        IndexSource(ItemSource(LocalSource("d"), "key"), 1),
        TypeSource(LocalSource("a")),
        LengthSource(ItemSource(LocalSource("d"), "key")),
        NdarrayPropertySource(LocalSource("a"), "strides", 0),
        NdarrayPropertySource(LocalSource("a"), "flags.writeable"),
        ClosureCellSource(LocalSource("fn"), 0),  # evaluated: no direct read
    ]
    scope = {"L": f_locals, "G": f_globals}
    for source in sources:
        got, expected = read_value(source, f_locals, f_globals), eval(source.name(), scope)
        assert got is expected or (type(got) is type(expected) and got == expected), source.name()
    with pytest.raises(KeyError):
        read_value(LocalSource("missing"), f_locals, f_globals)
