"""GuardChecker: a declarative guard set evaluated in C. It accepts exactly the inputs whose
guarded properties are unchanged (hypothesis), reports the first failing guard, rejects bad
specs with errors naming the argument and the guard index, and owns its references."""

from __future__ import annotations

import collections
import contextvars
import gc
import math
import weakref

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import framehook.runtime as rt
from runtime_helpers import targeting

GC = rt.GuardChecker
SETTINGS = settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.too_slow])


def local(name, *steps):
    return (("local", name),) + tuple(steps)


def check(kind, *args, path=None, L=None, **kw):
    """One guard on L['v']: its verdict."""
    c = GC([(path or local("v"), kind) + args], **kw)
    return c(L)


# ---- kinds ------------------------------------------------------------------------

scalars = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(-3, 3),
    st.floats(allow_nan=True, width=32),
    st.text(max_size=2),
    st.binary(max_size=2),
)
values = st.one_of(
    scalars,
    st.lists(st.integers(0, 2), max_size=3),
    st.tuples(st.integers(0, 2)),
    st.dictionaries(st.sampled_from("abc"), st.integers(0, 2), max_size=3),
)


def same_value(a, b):
    if type(a) is not type(b):
        return False
    if isinstance(a, float) and math.isnan(a):
        return math.isnan(b)
    return a == b


@SETTINGS
@given(values, values)
def test_type_id_equals_match(a, b):
    L = {"v": b}
    assert check("TYPE_MATCH", type(a), L=L) == (type(a) is type(b))
    assert check("ID_MATCH", a, L=L) == (a is b)
    eq = check("EQUALS_MATCH", a, L=L)
    if isinstance(a, float) and math.isnan(a):
        assert eq == (isinstance(b, float) and math.isnan(b))
    else:
        assert eq == (a is b or a == b)
    assert check("CONSTANT_MATCH", a, L={"v": a})


@SETTINGS
@given(values, st.integers(0, 3))
def test_length_and_truth(v, n):
    L = {"v": v}
    has_len = hasattr(v, "__len__")
    assert check("LENGTH_CHECK", n, L=L) == (has_len and len(v) == n)
    assert check("TRUTH", True, L=L) == bool(v)
    assert check("TRUTH", False, L=L) == (not v)
    assert check("IS_NONE", L=L) == (v is None)
    assert check("NOT_NONE", L=L) == (v is not None)
    assert check("IS_TRUE", L=L) == (v is True)
    assert check("IS_FALSE", L=L) == (v is False)


@SETTINGS
@given(
    st.dictionaries(st.sampled_from("abcd"), st.integers(), max_size=4),
    st.dictionaries(st.sampled_from("abcd"), st.integers(), max_size=4),
)
def test_dict_keys_in_order(a, b):
    assert check("DICT_KEYS", list(a), L={"v": b}) == (list(a) == list(b))
    od = collections.OrderedDict(b)
    assert check("DICT_KEYS", tuple(a), L={"v": od}) == (list(a) == list(od))
    if len(od) > 1:
        od.move_to_end(next(iter(od)))  # the dict's own order and OrderedDict's now differ
        assert check("DICT_KEYS", list(od), L={"v": od})


def test_dict_keys_misc():
    keys = ["a", "b"]
    c = GC([(local("v"), "DICT_KEYS", keys)])
    keys.append("c")  # the checker keeps its own copy
    assert c({"v": {"a": 1, "b": 2}})
    assert not c({"v": {"a": 1}}) and not c({"v": {"b": 1, "a": 2}}) and not c({"v": 3})
    assert not c({"v": {1.0: 1, "b": 2}})


def test_nan_and_identity_first():
    nan = float("nan")
    assert check("EQUALS_MATCH", nan, L={"v": float("nan")})
    assert not check("EQUALS_MATCH", nan, L={"v": 1.0})
    assert not check("EQUALS_MATCH", nan, L={"v": "nan"})

    class NeverEqual:
        def __eq__(self, other):
            return False

        __hash__ = object.__hash__

    x = NeverEqual()
    assert check("EQUALS_MATCH", x, L={"v": x})  # identity first
    assert not check("EQUALS_MATCH", x, L={"v": NeverEqual()})


def test_same_as():
    a, b = [1], [1]
    c = GC([(local("x"), "SAME_AS", local("y"))])
    assert c({"x": a, "y": a}) and not c({"x": a, "y": b}) and not c({"x": a})
    assert repr(c) == "<framehook.runtime.GuardChecker with 1 guards on 2 values>"


def test_not_same_as():
    a, b = [1], [1]
    c = GC([(local("x"), "NOT_SAME_AS", local("y"))])
    assert c({"x": a, "y": b}) and c({"x": 1, "y": 1.0})
    assert not c({"x": a, "y": a}) and not c({"x": None, "y": None})
    # a value missing on either side fails the guard, as `L['x'] is not L['y']` raising does
    assert not c({"x": a}) and not c({"y": b}) and not c({})
    assert c.first_failure({"x": a, "y": a}) == 0 and c.first_failure({"x": a, "y": b}) is None


@SETTINGS
@given(st.lists(st.sampled_from([0, 1, 2, None]), min_size=3, max_size=3))
def test_same_as_and_not_same_as_are_opposites(picks):
    # three names bound to objects drawn from a pool (None: missing), compared pairwise
    pool = [[0], [0], object()]
    L = {name: pool[k] for name, k in zip("xyz", picks) if k is not None}
    for left, right in [("x", "y"), ("y", "z"), ("x", "z")]:
        same = GC([(local(left), "SAME_AS", local(right))])(L)
        not_same = GC([(local(left), "NOT_SAME_AS", local(right))])(L)
        if left in L and right in L:
            assert same == (L[left] is L[right]) and not_same == (L[left] is not L[right])
        else:
            assert not same and not not_same


def test_not_same_as_on_chained_and_shared_paths():
    G = {"cfg": Obj(buf=[0])}
    c = GC(
        [
            (local("o", ("attr", "buf")), "TYPE_MATCH", list),
            (local("o", ("attr", "buf")), "NOT_SAME_AS", (("global", "cfg"), ("attr", "buf"))),
            (local("o", ("attr", "buf")), "NOT_SAME_AS", local("items", ("index", -1))),
            (local("o", ("attr", "buf")), "SAME_AS", local("alias")),
        ],
        G,
    )
    assert "on 7 values" in repr(c)  # o.buf is read once for its four guards
    mine = [0]
    o = Obj(buf=mine)
    L = {"o": o, "items": [[0], [0]], "alias": mine}
    assert c(L) and c.first_failure(L) is None
    assert c.first_failure(dict(L, o=Obj(buf=G["cfg"].buf))) == 1  # aliases the global's buffer
    assert c.first_failure(dict(L, items=[mine])) == 2  # aliases the list's last item
    assert c.first_failure(dict(L, items=[])) == 2  # index out of range: fails
    assert c.first_failure(dict(L, alias=[0])) == 3
    del G["cfg"]
    assert c.first_failure(L) == 1  # the other side is missing


def test_not_same_as_propagates_base_exceptions():
    class Boom(BaseException):
        pass

    class Bad:
        @property
        def boom(self):
            raise Boom()

        @property
        def gone(self):
            raise AttributeError("gone")

    bad = Bad()
    assert not GC([(local("x"), "NOT_SAME_AS", local("b", ("attr", "gone")))])({"x": 1, "b": bad})
    assert not GC([(local("b", ("attr", "gone")), "NOT_SAME_AS", local("x"))])({"x": 1, "b": bad})
    with pytest.raises(Boom):
        GC([(local("x"), "NOT_SAME_AS", local("b", ("attr", "boom")))])({"x": 1, "b": bad})
    with pytest.raises(Boom):
        GC([(local("b", ("attr", "boom")), "NOT_SAME_AS", local("x"))]).first_failure({"x": 1, "b": bad})


def test_kinds_lists_exactly_the_kinds_the_constructor_knows():
    kinds = GC.KINDS
    assert isinstance(kinds, frozenset) and {"SAME_AS", "NOT_SAME_AS", "TYPE_MATCH", "CALL"} <= kinds
    # a kind named there is known (a wrong argument count is reported, not an unknown kind) ...
    for kind in kinds:
        with pytest.raises(ValueError, match=rf"guard 0: {kind} takes \d argument\(s\), got 7"):
            GC([(local("v"), kind) + (None,) * 7])
    # ... and one that is not is unknown
    for kind in ("not_same_as", "NOT_SAME", "IS_NOT", "KINDS"):
        with pytest.raises(ValueError, match="unknown kind"):
            GC([(local("v"), kind, local("w"))])
    with pytest.raises((TypeError, AttributeError)):
        GC.KINDS = frozenset()
    assert GC.KINDS is kinds and GC([]).KINDS is kinds


def test_contextvar_and_call():
    var = contextvars.ContextVar("fh_test_var", default="token")
    token = var.get()
    calls = []

    def fallback():
        calls.append(1)
        return var.get() == "token"

    c = GC([((), "CONTEXTVAR_IS", var, token, fallback)])
    assert c({}) and calls == []  # identity: no call
    ctx_token = var.set("tok" + "en"[:0] + "en")  # an equal but (usually) different object
    try:
        assert c({}) == (var.get() == "token")
    finally:
        var.reset(ctx_token)
    t2 = var.set("other")
    try:
        assert not c({}) and calls
    finally:
        var.reset(t2)
    unset = contextvars.ContextVar("fh_test_unset")
    assert not GC([(None, "CONTEXTVAR_IS", unset, token, lambda: False)])({})
    assert GC([((), "CALL", lambda: 1)])({}) and not GC([((), "CALL", lambda: 0)])({})
    assert not GC([((), "CALL", lambda: 1 / 0)])({})  # an Exception fails the guard


# ---- paths -------------------------------------------------------------------------


class Obj:
    def __init__(self, **kw):
        self.__dict__.update(kw)


def test_paths():
    G = {"g": Obj(items=[10, (20, 30)], d={"k": "v", (1, 2): "t"})}
    c = GC(
        [
            ((("global", "g"), ("attr", "items"), ("index", 0)), "EQUALS_MATCH", 10),
            ((("global", "g"), ("attr", "items"), ("index", -1), ("index", 1)), "EQUALS_MATCH", 30),
            ((("global", "g"), ("attr", "d"), ("item", "k")), "EQUALS_MATCH", "v"),
            ((("global", "g"), ("attr", "d"), ("item", (1, 2))), "EQUALS_MATCH", "t"),
            ((("global", "g"), ("attr", "d"), ("len",)), "EQUALS_MATCH", 2),
            ((("global", "g"), ("type",)), "ID_MATCH", Obj),
            (local("s", ("index", 1)), "EQUALS_MATCH", "b"),  # str: not a list or tuple
            (local("m", ("item", "z")), "EQUALS_MATCH", 1),  # mapping that is not a dict
        ],
        G,
    )
    L = {"s": "abc", "m": collections.OrderedDict(z=1)}
    assert c(L) and c.first_failure(L) is None
    assert len(c) == 8
    G["g"].items[0] = 11
    assert c.first_failure(L) == 0
    G["g"].items[0] = 10
    G["g"].items[1] = (20,)
    assert c.first_failure(L) == 1  # index out of range: fails, does not raise
    G["g"].items = [10]
    assert c.first_failure(L) == 1
    del G["g"]
    assert c.first_failure(L) == 0  # the globals dict is read live
    assert c.first_failure({}) == 0


def test_shared_prefixes_are_read_once():
    reads = []

    class Counting:
        def __getattr__(self, name):
            reads.append(name)
            return 5

    c = GC(
        [
            (local("o", ("attr", "x")), "TYPE_MATCH", int),
            (local("o", ("attr", "x")), "EQUALS_MATCH", 5),
            (local("o", ("attr", "y")), "EQUALS_MATCH", 5),
        ]
    )
    assert c({"o": Counting()})
    assert reads == ["x", "y"]
    assert "on 3 values" in repr(c)


def test_many_values_use_the_heap():
    n = 300
    c = GC([(local(f"a{i}"), "TYPE_MATCH", int) for i in range(n)])
    L = {f"a{i}": i for i in range(n)}
    assert c(L) and c.first_failure(dict(L, a299="x")) == 299


def test_locals_mapping_that_is_not_a_dict():
    c = GC([(local("v"), "EQUALS_MATCH", 1)])
    assert c(collections.ChainMap({"v": 1})) and not c(collections.ChainMap({}))


def test_exceptions_fail_base_exceptions_propagate():
    class Boom(BaseException):
        pass

    class Bad:
        def __eq__(self, other):
            raise Boom()

        __hash__ = object.__hash__

        def __len__(self):
            raise ValueError("no length")

        @property
        def attr(self):
            raise AttributeError("gone")

    assert not check("LENGTH_CHECK", 1, L={"v": Bad()})
    assert not GC([(local("v", ("attr", "attr")), "IS_NONE")])({"v": Bad()})
    assert not GC([(local("v", ("len",)), "IS_NONE")])({"v": Bad()})
    with pytest.raises(Boom):
        check("EQUALS_MATCH", 1, L={"v": Bad()})
    with pytest.raises(Boom):
        GC([(local("v"), "EQUALS_MATCH", 1)]).first_failure({"v": Bad()})


def test_call_signature():
    c = GC([])
    assert c({}) and c.first_failure({}) is None and len(c) == 0
    with pytest.raises(TypeError, match="exactly one positional argument"):
        c()
    with pytest.raises(TypeError, match="exactly one positional argument"):
        c({}, {})
    with pytest.raises(TypeError, match="exactly one positional argument"):
        c(f_locals={})


# ---- bad specs -----------------------------------------------------------------------


@pytest.mark.parametrize(
    "guards,kwargs,exc,match",
    [
        (3, {}, TypeError, "argument 'guards' must be a sequence"),
        ([3], {}, TypeError, "guard 0 must be a tuple"),
        ([(local("v"),)], {}, TypeError, "guard 0 must be a tuple"),
        ([(local("v"), "NOPE")], {}, ValueError, "guard 0: unknown kind 'NOPE'"),
        ([(local("v"), 5)], {}, ValueError, "guard 0: unknown kind 5"),
        ([(local("v"), "IS_NONE"), (local("v"), "TYPE_MATCH")], {}, ValueError, "guard 1: TYPE_MATCH takes 1"),
        ([(local("v"), "TYPE_MATCH", 3)], {}, TypeError, "guard 0: TYPE_MATCH needs a type"),
        ([("v", "IS_NONE")], {}, TypeError, "guard 0: path must be a tuple of steps"),
        ([((), "IS_NONE")], {}, ValueError, "guard 0: path is empty"),
        ([(("local",), "IS_NONE")], {}, TypeError, "guard 0: path step 0 must be a tuple"),
        ([((("loc", "v"),), "IS_NONE")], {}, ValueError, "step 0: unknown op 'loc'"),
        ([((("attr", "v"),), "IS_NONE")], {}, ValueError, "the first step must be 'local' or 'global'"),
        ([(local("v", ("local", "w")), "IS_NONE")], {}, ValueError, "a root op inside a path"),
        ([(local("v", ("len", 1)), "IS_NONE")], {}, ValueError, "'len' takes 0 operand"),
        ([((("local", 1),), "IS_NONE")], {}, TypeError, "'local' needs a str name"),
        ([((("global", "g"),), "IS_NONE")], {}, ValueError, "reads a global but no 'globals' dict"),
        ([(local("v", ("index", "0")), "IS_NONE")], {}, TypeError, "'index' needs an int"),
        ([(local("v", ("index", True)), "IS_NONE")], {}, TypeError, "'index' needs an int"),
        ([(local("v", ("index", 2**80)), "IS_NONE")], {}, OverflowError, None),
        ([(local("v", ("item", [])), "IS_NONE")], {}, TypeError, "'item' key must be hashable"),
        ([(local("v"), "LENGTH_CHECK", -1)], {}, ValueError, "LENGTH_CHECK needs an int >= 0"),
        ([(local("v"), "LENGTH_CHECK", 2**80)], {}, OverflowError, None),
        ([(local("v"), "DICT_KEYS", "ab")], {}, TypeError, "DICT_KEYS needs a tuple or list"),
        ([(local("v"), "TRUTH", 1)], {}, TypeError, "TRUTH needs a bool"),
        ([(local("v"), "SAME_AS", ())], {}, ValueError, "SAME_AS other path is empty"),
        ([(local("v"), "NOT_SAME_AS", ())], {}, ValueError, "guard 0: NOT_SAME_AS other path is empty"),
        ([(local("v"), "NOT_SAME_AS")], {}, ValueError, "guard 0: NOT_SAME_AS takes 1 argument"),
        ([(local("v"), "NOT_SAME_AS", "w")], {}, TypeError, "guard 0: NOT_SAME_AS other path must be a tuple"),
        ([(local("v"), "NOT_SAME_AS", ("w",))], {}, TypeError, "NOT_SAME_AS other path step 0 must be a tuple"),
        ([(local("v"), "NOT_SAME_AS", (("attr", "w"),))], {}, ValueError, "NOT_SAME_AS other path step 0: the first"),
        (
            [(local("v"), "NOT_SAME_AS", (("global", "w"),))],
            {},
            ValueError,
            "NOT_SAME_AS other path reads a global but no 'globals' dict",
        ),
        (
            [(local("v", ("attr", "a")), "NOT_SAME_AS", local("v", ("attr", "a")))],
            {},
            ValueError,
            "guard 0: NOT_SAME_AS other path is the guard's own path",
        ),
        ([(local("v"), "CALL", len)], {}, ValueError, "CALL takes an empty path"),
        ([((), "CALL", 3)], {}, TypeError, "CALL needs a callable"),
        ([((), "CONTEXTVAR_IS", 1, 2, len)], {}, TypeError, "CONTEXTVAR_IS needs"),
        ([(local("v"), "NDARRAY_MATCH", {})], {}, ValueError, "needs the 'ndarray_type' argument"),
        ([], {"globals": []}, TypeError, "argument 'globals' must be a dict or None"),
        ([], {"ndarray_type": int}, TypeError, "argument 'ndarray_type' must be numpy.ndarray"),
    ],
)
def test_bad_specs(guards, kwargs, exc, match):
    with pytest.raises(exc, match=match):
        GC(guards, **kwargs)


def test_unhashable_key_error_other_than_type_error_propagates():
    class Weird:
        def __hash__(self):
            raise RuntimeError("no hash")

    with pytest.raises(RuntimeError, match="no hash"):
        GC([(local("v", ("item", Weird())), "IS_NONE")])


def test_node_sharing_compares_keys():
    class Key:
        def __eq__(self, other):
            raise RuntimeError("cannot compare")

        __hash__ = object.__hash__

    k1, k2 = Key(), Key()
    GC([(local("v", ("item", k1)), "IS_NONE"), (local("v", ("item", k1)), "IS_NONE")])  # identical: shared
    with pytest.raises(RuntimeError, match="cannot compare"):
        GC([(local("v", ("item", k1)), "IS_NONE"), (local("v", ("item", k2)), "IS_NONE")])
    c = GC(
        [
            (local("v", ("item", 1)), "IS_NONE"),
            (local("v", ("item", 1.0)), "IS_NONE"),
            (local("v", ("item", 2)), "IS_NONE"),
        ]
    )
    assert "on 4 values" in repr(c)  # 1 and 1.0 are different types: not shared


# ---- numpy arrays --------------------------------------------------------------------


def _np():
    return pytest.importorskip("numpy")


def nd_spec(a, dynamic=(), **over):
    np = _np()
    if a.flags.c_contiguous:
        contig = "C"
    elif a.flags.f_contiguous:
        contig = "F"
    else:
        contig = "neither"
    spec = {
        "type": type(a),
        "dtype": a.dtype,
        "shape": tuple(None if i in dynamic else n for i, n in enumerate(a.shape)),
        "strides": None if dynamic else a.strides,
        "contiguity": contig if dynamic else None,
        "writeable": bool(a.flags.writeable),
    }
    spec.update(over)
    return GC([(local("v"), "NDARRAY_MATCH", spec)], ndarray_type=np.ndarray)


@st.composite
def arrays(draw):
    np = _np()
    dtype = draw(st.sampled_from(["f8", "f4", "i8", "i4", "?", "c16", ">f8"]))
    shape = tuple(draw(st.lists(st.integers(0, 4), max_size=3)))
    a = np.zeros(shape, dtype=dtype)
    layout = draw(st.sampled_from(["c", "f", "slice", "ro", "broadcast", "rev"]))
    if layout == "f":
        a = np.asfortranarray(a)
    elif layout == "slice" and a.ndim and a.shape[0] > 1:
        a = np.zeros((a.shape[0] * 2,) + a.shape[1:], dtype=dtype)[::2]
    elif layout == "ro":
        a.flags.writeable = False
    elif layout == "broadcast" and a.ndim:
        a = np.broadcast_to(np.zeros(a.shape[-1:], dtype=dtype), a.shape)
    elif layout == "rev" and a.ndim:
        a = a[::-1]
    return a


def layout_kind(a):
    return "C" if a.flags.c_contiguous else "F" if a.flags.f_contiguous else "neither"


@SETTINGS
@given(arrays(), arrays(), st.sets(st.integers(0, 2), max_size=2))
def test_ndarray_match_accepts_exactly_unchanged(a, b, dyn):
    dyn = {d for d in dyn if d < a.ndim}
    c = nd_spec(a, dyn)
    expected = (
        type(b) is type(a)
        and b.dtype == a.dtype
        and b.ndim == a.ndim
        and bool(b.flags.writeable) == bool(a.flags.writeable)
        and all(b.shape[i] == a.shape[i] for i in range(a.ndim) if i not in dyn)
    )
    if dyn:  # a's first of C / F / neither, which b must have (an empty array is both C and F)
        kind = layout_kind(a)
        expected = expected and (
            b.flags.c_contiguous
            if kind == "C"
            else b.flags.f_contiguous
            if kind == "F"
            else not (b.flags.c_contiguous or b.flags.f_contiguous)
        )
    else:
        expected = expected and b.strides == a.strides
    assert c({"v": b}) == expected
    assert c({"v": a})
    assert not c({"v": a.tolist()})


def test_ndarray_details():
    np = _np()
    a = np.zeros((2, 3), np.float32)
    assert nd_spec(a, dtype=np.dtype("<f4"))({"v": a})  # equal dtype, other object
    assert nd_spec(a, strides=None, contiguity="C")({"v": a})
    assert not nd_spec(a, strides=None, contiguity="F")({"v": a})
    assert nd_spec(a, writeable=None)({"v": a})

    class Sub(np.ndarray):
        pass

    s = a.view(Sub)
    assert not nd_spec(a)({"v": s}) and nd_spec(s)({"v": s}) and not nd_spec(s)({"v": a})
    assert not nd_spec(a)({"v": np.zeros((2, 3), np.float64)})


@pytest.mark.parametrize(
    "spec,exc,match",
    [
        ([], TypeError, "needs a dict spec"),
        ({"dtype": None, "shape": (), "bogus": 1}, ValueError, "unknown spec key 'bogus'"),
        ({"dtype": None, "shape": (), 1: 1}, ValueError, "unknown spec key 1"),
        ({"shape": ()}, ValueError, "needs 'dtype' and 'shape'"),
        ({"type": int, "dtype": None, "shape": ()}, TypeError, "'type' must be ndarray_type or a subclass"),
        ({"dtype": None, "shape": 3}, TypeError, "'shape' must be a tuple"),
        ({"dtype": None, "shape": (-1,)}, ValueError, r"'shape'\[0\] must be a size >= 0 or None"),
        ({"dtype": None, "shape": ("a",)}, ValueError, r"'shape'\[0\] must be"),
        ({"dtype": None, "shape": (2**80,)}, OverflowError, None),
        ({"dtype": None, "shape": (1,), "strides": (1, 2)}, ValueError, "'strides' has 2 entries for 1 dimensions"),
        ({"dtype": None, "shape": (1,), "strides": (None,)}, ValueError, r"'strides'\[0\] must be an int"),
        ({"dtype": None, "shape": (1,), "contiguity": "X"}, ValueError, "'contiguity' must be None, 'C', 'F'"),
        ({"dtype": None, "shape": (1,), "writeable": 1}, TypeError, "'writeable' must be a bool or None"),
    ],
)
def test_ndarray_bad_specs(spec, exc, match):
    np = _np()
    with pytest.raises(exc, match=match):
        GC([(local("a"), "IS_NONE"), (local("v"), "NDARRAY_MATCH", spec)], ndarray_type=np.ndarray)
    if match and (match.startswith("'") or "spec" in match):
        with pytest.raises(exc, match="guard 1: NDARRAY_MATCH"):
            GC([(local("a"), "IS_NONE"), (local("v"), "NDARRAY_MATCH", spec)], ndarray_type=np.ndarray)


def test_ndarray_type_is_checked():
    np = _np()

    class Fake:
        pass

    Fake.__name__ = Fake.__qualname__ = "ndarray"
    with pytest.raises(TypeError, match="'ndarray_type' must be numpy.ndarray"):
        GC([], ndarray_type=Fake)
    with pytest.raises(TypeError, match="'ndarray_type' must be numpy.ndarray"):
        GC([], ndarray_type=np.zeros(1))
    spec = {"dtype": np.dtype("f8"), "shape": (1,)}
    assert GC([(local("v"), "NDARRAY_MATCH", spec)], ndarray_type=np.ndarray)({"v": np.zeros(1)})


# ---- ownership, GC, runtime integration ---------------------------------------------


def test_attributes_weakrefs_and_cycles():
    c = GC([(local("v"), "IS_NONE")])
    c.note = "x"
    assert c.__dict__ == {"note": "x"}
    c.self = c  # a cycle through the instance dict
    holder = []
    c2 = GC([(local("v"), "ID_MATCH", holder)])
    holder.append(c2)  # a cycle through a guard's object
    r, r2 = weakref.ref(c), weakref.ref(c2)
    del c, c2, holder
    gc.collect()
    assert r() is None and r2() is None


def test_called_after_gc_clear():
    # a finalizer inside a cycle may see the checker after tp_clear: it raises, never crashes
    seen = []

    class Probe:
        def __del__(self):
            try:
                seen.append(self.c({"v": None}))
            except RuntimeError as e:
                seen.append(str(e))

    p = Probe()
    c = GC([(local("v"), "ID_MATCH", p)])
    p.c = c
    del p, c
    gc.collect()
    assert len(seen) == 1 and (isinstance(seen[0], bool) or "cleared" in seen[0])


def test_used_as_the_runtime_check_fn():
    def f(x, n):
        return x * n

    c = GC([(local("x"), "TYPE_MATCH", int), (local("n"), "EQUALS_MATCH", 2)])
    replacement = f.__code__.replace()
    calls = []

    def cb(frame, entry, state):
        calls.append(1)
        return rt.GuardedCode(replacement, c)

    with rt.enable(targeting(f, cb)):
        assert f(3, 2) == 6 and f(4, 2) == 8 and f(4, 3) == 12 and f("a", 2) == "aa"
    assert len(calls) == 3
    assert rt.cache_entries(f.__code__)[0].check_fn is c
    rt.reset_code(f.__code__)


_FRAME_SRC = """
def factory(z):
    def f(a, b=2, *rest, c, d=4, **kw):
        tmp = z - 7
        inner = lambda: a   # a is a cell as well as an argument
        return {result}
    return f
"""


def _frame_variant(result):
    ns = {}
    exec(_FRAME_SRC.format(result=result), ns)
    return ns["factory"]


def test_reads_the_fresh_frame_like_its_entry_locals():
    """On a hit the runtime reads ("local", name) from the frame instead of a locals
    dict: arguments of every kind, an argument that is also a cell, a free variable, and
    a plain local (unbound at entry, so its guard fails) decide as the dict would."""
    f = _frame_variant("'plain'")(z=7)
    replacement = _frame_variant("'replaced'")(z=7).__code__
    names = ["a", "b", "rest", "c", "d", "kw", "z"]
    expected = {"a": 1, "b": 2, "rest": (), "c": 3, "d": 4, "kw": {}, "z": 7}
    checker = GC([(local(n), "EQUALS_MATCH", expected[n]) for n in names])
    misses = []

    def cb(frame, entry, state):
        misses.append(dict(frame.f_locals))
        return rt.GuardedCode(replacement, checker) if not rt.cache_entries(f.__code__) else None

    calls = [
        ((1,), {"c": 3}),
        ((1, 2), {"c": 3, "d": 4}),
        ((5,), {"c": 3}),
        ((1, 9), {"c": 3}),
        ((1, 2, 0), {"c": 3}),
        ((1,), {"c": 0}),
        ((1,), {"c": 3, "d": 0}),
        ((1,), {"c": 3, "e": 0}),
    ]
    try:
        with rt.enable(targeting(f, cb)):
            f(1, c=3)  # the miss that adds the entry
            got = [f(*args, **kwargs) for args, kwargs in calls]
    finally:
        rt.reset_code(f.__code__)
    seen = dict(misses[0])
    assert set(seen) == set(names)
    verdicts = []
    for args, kwargs in calls:
        bound = {"b": 2, "d": 4, "rest": (), "kw": {}, "z": 7, "a": args[0]}
        if len(args) > 1:
            bound["b"] = args[1]
        bound["rest"] = tuple(args[2:])
        bound.update({k: v for k, v in kwargs.items() if k in ("c", "d")})
        bound["kw"] = {k: v for k, v in kwargs.items() if k not in ("c", "d")}
        verdicts.append(checker(bound))
    assert verdicts == [True, True, False, False, False, False, False, False]
    assert got == ["replaced" if v else "plain" for v in verdicts]

    # a guard on a local that is not bound at entry never holds, on the frame as in a dict
    unbound = GC([(local("a"), "EQUALS_MATCH", 1), (local("tmp"), "EQUALS_MATCH", 0)])
    assert unbound(dict(seen, tmp=0))  # it would hold if tmp were bound
    entries = []

    def cb2(frame, entry, state):
        entries.append(1)
        return rt.GuardedCode(replacement, unbound)

    try:
        with rt.enable(targeting(f, cb2)):
            # each call misses, so the callback's code runs it: no entry ever hits
            assert [f(1, c=3) for _ in range(3)] == ["replaced"] * 3
    finally:
        rt.reset_code(f.__code__)
    assert len(entries) == 3  # every call missed: the frame has no 'tmp' yet


def test_frame_read_guard_error_reaches_the_hook_with_the_entry_locals():
    def f(x, y):
        return x + y

    def interrupt():
        raise KeyboardInterrupt

    checker = GC([(local("x"), "EQUALS_MATCH", 1), ((), "CALL", interrupt)])
    hooked = []
    added = []

    def cb(frame, entry, state):
        added.append(1)
        return rt.GuardedCode(f.__code__.replace(), checker)

    previous = rt.set_guard_error_hook(lambda fn, code, L, index, last: hooked.append((fn, dict(L), index)))
    try:
        with rt.enable(targeting(f, cb)):
            assert f(2, 3) == 5  # miss: the entry is added
            with pytest.raises(KeyboardInterrupt):
                f(1, 3)
    finally:
        rt.set_guard_error_hook(previous)
        rt.reset_code(f.__code__)
    assert hooked == [(checker, {"x": 1, "y": 3}, 0)]


# ---- leaks (in the style of test_leaks.py) -------------------------------------------


def _traced_growth(fn):
    import tracemalloc

    fn()  # warm up caches and freelists
    gc.collect()
    tracemalloc.start()
    before = tracemalloc.take_snapshot()
    fn()
    gc.collect()
    after = tracemalloc.take_snapshot()
    tracemalloc.stop()
    return sum(s.size_diff for s in after.compare_to(before, "filename"))


def test_calls_keep_memory_and_refcounts_flat():
    import sys

    np = pytest.importorskip("numpy")
    a = np.zeros((3, 4))
    key, obj = "k", object()
    G = {"g": {"k": [1, 2]}}
    c = GC(
        [
            (local("a"), "NDARRAY_MATCH", {"dtype": a.dtype, "shape": (3, None), "contiguity": "C"}),
            ((("global", "g"), ("item", key), ("len",)), "EQUALS_MATCH", 2),
            ((("global", "g"), ("item", key), ("index", 1)), "EQUALS_MATCH", 2),
            (local("o"), "ID_MATCH", obj),
            (local("o", ("type",)), "ID_MATCH", object),
            (local("d"), "DICT_KEYS", ["x", "y"]),
            (local("o"), "NOT_SAME_AS", (("global", "g"), ("item", key))),
            (local("d"), "NOT_SAME_AS", local("e")),
            (local("missing"), "IS_NONE"),
        ],
        G,
        ndarray_type=np.ndarray,
    )
    L = {"a": a, "o": obj, "d": {"x": 1, "y": 2}, "e": []}
    aliased = dict(L, e=L["d"])
    counts = [sys.getrefcount(x) for x in (a, obj, key, G, L["d"], L["e"])]

    def run():
        for _ in range(200_000):
            c(L)  # fails at the last guard (KeyError swallowed)
            c.first_failure(L)
            c({"a": 1})  # fails at the first
            c.first_failure(aliased)  # fails at NOT_SAME_AS, both values read
        for _ in range(50_000):
            c.first_failure({"a": a, "o": obj, "d": L["d"]})  # NOT_SAME_AS's other value missing

    growth = _traced_growth(run)
    assert c.first_failure(L) == 8 and c.first_failure(aliased) == 7
    assert c.first_failure({"a": a, "o": obj, "d": L["d"]}) == 7
    assert [sys.getrefcount(x) for x in (a, obj, key, G, L["d"], L["e"])] == counts
    assert growth < 64 * 1024, f"traced memory grew by {growth} bytes"


def test_building_and_failing_to_build_keep_memory_flat():
    np = pytest.importorskip("numpy")
    spec = {"dtype": np.dtype("f4"), "shape": (2, None), "strides": None, "contiguity": "F"}
    good = [(local(f"v{i}", ("attr", "x"), ("item", i)), "EQUALS_MATCH", [i]) for i in range(40)]
    good.append((local("v"), "NDARRAY_MATCH", spec))
    good.append((local("v0", ("attr", "x")), "NOT_SAME_AS", (("global", "g"), ("item", ("k", 1)))))
    bad = good[:20] + [(local("v"), "NDARRAY_MATCH", dict(spec, strides=(1, 2, 3)))]
    bad_other = good[:20] + [(local("w", ("item", "k")), "NOT_SAME_AS", local("w", ("item", "k")))]

    def run():
        for _ in range(2000):
            GC(good, {}, ndarray_type=np.ndarray)
            with pytest.raises(ValueError):
                GC(bad, {}, ndarray_type=np.ndarray)
            with pytest.raises(ValueError, match="own path"):
                GC(bad_other, {}, ndarray_type=np.ndarray)

    growth = _traced_growth(run)
    assert growth < 64 * 1024, f"traced memory grew by {growth} bytes"
