"""Round trips of every value kind through encode -> JSON -> validate -> decode."""

from __future__ import annotations

import collections
import datetime
import decimal
import enum
import fractions
import json
import math
import os
import threading
import types

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from framehook.records import (
    Missing,
    MissingValueError,
    RecordFormatError,
    register_codec,
    registered_codecs,
    unregister_codec,
)
from framehook.records.codec import MAX_DEPTH, Decoder, Encoder, validate


class Shade(enum.Enum):
    DARK = 1
    LIGHT = 2


Pair = collections.namedtuple("Pair", "left right")


def roundtrip(value, **enc):
    tree = Encoder(**enc).encode(value)
    tree = json.loads(json.dumps(tree, allow_nan=False))  # what the file holds
    validate(tree, "value")
    return tree, Decoder().decode(tree)


def same_tree(value):
    tree, back = roundtrip(value)
    assert Encoder().encode(back) == tree
    return back


SCALARS = [
    None,
    True,
    False,
    0,
    -1,
    2**200,
    -(2**65),
    1.5,
    -0.0,
    float("inf"),
    float("-inf"),
    1 + 2j,
    complex(0, -0.0),
    "",
    "text",
    "surrogate \ud800 é 😀",
    b"",
    b"\x00\xff",
    bytearray(b"ab"),
]


@pytest.mark.parametrize("value", SCALARS, ids=[repr(v)[:20] for v in SCALARS])
def test_scalars(value):
    back = same_tree(value)
    assert type(back) is type(value)
    assert back == value or (isinstance(value, float) and math.isnan(value))
    if isinstance(value, float):
        assert math.copysign(1, back) == math.copysign(1, value)


def test_nan():
    back = same_tree(float("nan"))
    assert math.isnan(back)


def test_containers():
    value = ([1, (2, 3)], {"a": {1: frozenset({1, 2})}, (1, "k"): {3, 4}}, (), [], {}, set())
    back = same_tree(value)
    assert back == value
    assert type(back[1]["a"][1]) is frozenset


def test_shared_and_cyclic_references():
    shared = [1, 2]
    cyc: list = [0]
    cyc.append(cyc)
    d: dict = {}
    d["self"] = d
    back = same_tree(([shared, shared], cyc, d))
    assert back[0][0] is back[0][1]
    assert back[1][1] is back[1]
    assert back[2]["self"] is back[2]


def test_numpy_arrays_and_scalars():
    values = [
        np.arange(6, dtype=np.int32).reshape(2, 3),
        np.array([1.5, np.nan]),
        np.zeros((0, 3)),
        np.array([True, False]),
        np.float32(2.5),
        np.int64(-3),
        np.complex128(1 + 1j),
        np.array(["ab", "c"]),
        np.asfortranarray(np.arange(4.0).reshape(2, 2)),
    ]
    for value in values:
        tree, back = roundtrip(value)
        assert type(back) is type(value)
        assert np.asarray(back).dtype == np.asarray(value).dtype
        np.testing.assert_array_equal(back, value)


def test_numpy_object_array_is_missing_without_pickle():
    arr = np.array([object()], dtype=object)
    enc = Encoder()
    tree = enc.encode(arr, "arr")
    assert tree["t"] == "missing" and "pickle" in tree["why"]
    assert enc.missing == ["arr"]


def test_import_paths():
    values = [
        os,
        os.path,
        len,
        math.sqrt,
        json.dumps,
        int,
        ValueError,
        Shade,
        Shade.DARK,
        Ellipsis,
        NotImplemented,
        collections.OrderedDict,
    ]
    for value in values:
        tree, back = roundtrip(value)
        assert back is value, tree


def test_namedtuple_and_exception():
    back = same_tree(Pair(1, [2]))
    assert isinstance(back, Pair) and back.right == [2]
    tree, exc = roundtrip(KeyError("k", 1))
    assert type(exc) is KeyError and exc.args == ("k", 1)
    assert tree["message"] == str(KeyError("k", 1))


def test_default_codecs():
    values = [
        range(1, 10, 2),
        slice(1, None, 2),
        fractions.Fraction(3, 7),
        decimal.Decimal("1.10"),
        datetime.date(2020, 2, 29),
        datetime.datetime(2021, 1, 2, 3, 4, 5),
        datetime.timedelta(days=2, seconds=5),
        collections.OrderedDict(a=1),
        collections.deque([1, 2], maxlen=5),
        collections.defaultdict(list, {"x": [1]}),
        types.SimpleNamespace(a=1, b="c"),
    ]
    for value in values:
        back = same_tree(value)
        assert type(back) is type(value)
        assert back == value
    assert "fraction" in registered_codecs()


class Point3:
    def __init__(self, x, y, z):
        self.x, self.y, self.z = x, y, z


def test_user_codec_registry():
    point = Point3(1, 2, 3)
    tree = Encoder().encode(point, "p")
    assert tree["t"] == "missing" and tree["name"] == "p"
    register_codec(Point3, "test.point3", lambda p: (p.x, p.y, p.z), lambda v: Point3(*v))
    try:
        with pytest.raises(ValueError, match="already registered"):
            register_codec(Point3, "test.point3", repr, repr)
        tree, back = roundtrip(point)
        assert tree["t"] == "ext" and (back.x, back.y, back.z) == (1, 2, 3)
    finally:
        unregister_codec("test.point3")
    # With the codec gone, the same tree decodes to a named placeholder instead of running anything.
    dec = Decoder()
    value = dec.decode(tree)
    assert isinstance(value, Missing) and "no codec registered" in dec.missing[0]
    with pytest.raises(ValueError, match="invalid codec name"):
        register_codec(Point3, "bad name!", repr, repr)


def test_failing_codec_becomes_placeholder():
    class Odd:
        pass

    register_codec(Odd, "test.odd", lambda o: 1 / 0, lambda v: v)
    try:
        tree = Encoder().encode(Odd(), "o")
        assert tree["t"] == "missing" and "ZeroDivisionError" in tree["why"]
    finally:
        unregister_codec("test.odd")


def test_placeholders_raise_on_use():
    tree = Encoder().encode(threading.Lock(), "globals['lock']")
    assert tree["t"] == "missing"
    lock = Decoder().decode(tree)
    assert "globals['lock']" in repr(lock)
    for use in (lambda: lock.acquire(), lambda: lock(), lambda: len(lock), lambda: lock + 1):
        with pytest.raises(MissingValueError, match="lock"):
            use()
    # two placeholders are two values: as dict keys they must not merge
    other = Decoder().decode(tree)
    assert lock == lock and lock != other
    assert len({lock: 1, other: 2}) == 2


def test_unimportable_things_are_placeholders():
    def local():
        pass

    class Local:
        pass

    mod = types.ModuleType("not_in_sys_modules")
    enc = Encoder()
    for value in (local, Local, mod, Local(), (lambda: 0).__code__, print.__self__.__dict__["len"].__call__):
        assert enc.encode(value, "v")["t"] == "missing"


def test_depth_limit():
    deep: list = []
    node = deep
    for _ in range(MAX_DEPTH + 5):
        node.append([])
        node = node[0]
    enc = Encoder()
    tree = enc.encode(deep, "deep")
    validate(tree, "deep")
    assert any("nested deeper" in m or m for m in enc.missing)


def test_unresolvable_global_and_module_decode_to_missing():
    dec = Decoder()
    gone = dec.decode({"t": "global", "module": "no_such_module_xyz", "qualname": "f"})
    mod = dec.decode({"t": "module", "name": "no_such_module_xyz"})
    assert isinstance(gone, Missing) and isinstance(mod, Missing)
    assert len(dec.missing) == 2


def test_validator_rejects_wrong_field_types():
    for tree in (
        {"t": "int", "v": 3},
        {"t": "list", "id": -1, "items": []},
        {"t": "dict", "id": 0, "items": [[1]]},
        {
            "t": "function",
            "id": 0,
            "name": "f",
            "qualname": "f;",
            "firstlineno": 1,
            "flags": 0,
            "defaults": None,
            "kwdefaults": None,
            "closure": [],
        },
        {"t": "namedtuple", "type": "x", "items": []},
        [1, 2],
        3.5,
    ):
        with pytest.raises(RecordFormatError):
            validate(tree, "v")


json_like = st.recursive(
    st.none()
    | st.booleans()
    | st.integers()
    | st.floats(allow_nan=False)
    | st.text()
    | st.binary()
    | st.complex_numbers(allow_nan=False),
    lambda children: (
        st.lists(children, max_size=4)
        | st.tuples(children, children)
        | st.dictionaries(st.text(max_size=5) | st.integers(), children, max_size=4)
        | st.frozensets(st.integers(), max_size=4)
    ),
    max_leaves=20,
)


@settings(max_examples=150, deadline=None)
@given(json_like)
def test_property_roundtrip(value):
    tree, back = roundtrip(value)
    assert back == value
    assert Encoder().encode(back) == tree
