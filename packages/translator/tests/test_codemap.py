"""CodeIdentityMap: code objects that compare equal are still different keys."""

import gc

import pytest

from framehook.translator.translation.codemap import CodeIdentityMap


def _twins():
    src = "def f(x):\n    return x + 1\n"
    a = compile(src, "<twin>", "exec").co_consts[0]
    b = compile(src, "<twin>", "exec").co_consts[0]
    assert a == b and a is not b
    return a, b


def test_equal_code_objects_are_separate_keys():
    a, b = _twins()
    m = CodeIdentityMap()
    m[a] = 1
    assert a in m and b not in m and m.get(b) is None and m.get(b, 7) == 7
    m[b] = 2
    assert m[a] == 1 and m[b] == 2 and len(m) == 2
    with pytest.raises(KeyError):
        m[_twins()[0]]


def test_entries_go_with_their_code():
    a, b = _twins()
    m = CodeIdentityMap()
    m[a] = "a"
    m[b] = "b"
    del a
    gc.collect()
    assert m.keys() == [b] and m[b] == "b"
    m.clear()
    assert len(m) == 0 and b not in m
