"""Format 2 values on real code: what is recorded by reference, what by value, and that
each replays as the call saw it (identity, iterators, random state, placeholders)."""

from __future__ import annotations

import collections
import datetime
import functools
import itertools
import operator
import random
import re
import sys
import textwrap
import uuid
from pathlib import Path, PurePosixPath

import pytest

from framehook.records import Missing, load, record, record_call, replay
from framehook.records.codec import Decoder, Encoder, Sources, Tap

LIBRARY = '''
import re

_MARKER = object()
PATTERN = re.compile(r"[0-9]+")
COUNTS = {"calls": 0}


class Point:
    def __init__(self, x, y):
        self.x, self.y = x, y

    def norm1(self):
        return abs(self.x) + abs(self.y)


class Slotted:
    __slots__ = ("a", "b")

    def __init__(self, a, b):
        self.a, self.b = a, b


class Broken:
    def __getstate__(self):
        raise RuntimeError("state is private")

    def value(self):
        return 42


def get(table, key, default=_MARKER):
    value = table.get(key, default)
    if value is _MARKER:
        return "no default given"
    return value


def numbers(text, pattern=PATTERN):
    return [int(m) for m in pattern.findall(text)]


def total(points):
    return sum(p.norm1() for p in points)


def slotted_sum(s):
    return s.a + s.b


def ask(obj):
    return obj.value()


def _scale(x, factor=3):
    return x * factor


def apply(fn, values, helper=_scale):
    return [helper(fn(v)) for v in values]
'''


@pytest.fixture
def library(tmp_path, monkeypatch):
    """An importable, non-test module (recorded by reference), fresh for each test."""
    root = tmp_path / "site"
    root.mkdir()
    name = f"fhlib_{abs(hash(str(tmp_path))) % 10**8}"
    (root / f"{name}.py").write_text(LIBRARY)
    monkeypatch.syspath_prepend(str(root))
    module = __import__(name)
    yield module
    sys.modules.pop(name, None)


def _replays(path, modes=("plain",)):
    result = replay(path, modes=modes)
    assert result.ok, result.report()
    return result


def test_a_sentinel_default_stays_identical_to_its_module_global(library, tmp_path):
    path = tmp_path / "get.fhrec"
    rec = record(library.get, {"a": 1}, "b", path=path)
    assert rec.outcome["value"] == "no default given"
    assert rec.missing == []
    # the default and the global are one importable object, recorded by reference
    assert rec.function["defaults"]["items"][0] == {"t": "global", "module": library.__name__, "qualname": "_MARKER"}
    _replays(path)


def test_a_sentinel_passed_explicitly_is_the_same_object(library, tmp_path):
    path = tmp_path / "get.fhrec"
    record(library.get, {"a": 1}, "b", library._MARKER, path=path)
    result = _replays(path)
    assert library.__name__ in result.imports


def test_module_level_pattern_is_recorded_by_reference(library, tmp_path):
    path = tmp_path / "numbers.fhrec"
    rec = record(library.numbers, "a1 b22 c333", path=path)
    assert rec.function["defaults"]["items"][0]["t"] == "global"
    _replays(path)


def test_test_file_lambda_and_its_globals_are_recorded_by_value(library, tmp_path):
    offset = 5
    path = tmp_path / "apply.fhrec"
    rec = record(library.apply, lambda v: v + offset + len(TEXT), [1, 2], path=path)
    assert rec.missing == []
    fn_node = rec.call["args"]["items"][0]
    assert fn_node["t"] == "function" and fn_node["module"] == __name__
    assert [name for name, _ in fn_node["globals"]] == ["TEXT"]
    assert "lambda v: v + offset" in rec.sources[fn_node["src"]]["text"]
    _replays(path)


TEXT = "abc"


def test_a_same_file_helper_reached_through_a_default_brings_its_globals(library, tmp_path):
    # apply's default `helper=_scale` is a function of the recorded module: its source and
    # the globals it reads come along (a NameError before format 2)
    path = tmp_path / "apply.fhrec"
    rec = record(library.apply, abs, [-1, 2], path=path)
    assert rec.function["defaults"]["items"][0]["t"] == "function"
    _replays(path)


def test_instances_of_importable_classes_by_state(library, tmp_path):
    path = tmp_path / "total.fhrec"
    rec = record(library.total, [library.Point(1, -2), library.Point(3, 4)], path=path)
    assert rec.missing == []
    assert rec.call["args"]["items"][0]["items"][0]["t"] == "object"
    _replays(path)
    path = tmp_path / "slotted.fhrec"
    assert record(library.slotted_sum, library.Slotted(2, 5), path=path).missing == []
    _replays(path)


def test_an_object_whose_state_cannot_be_read_is_a_named_placeholder(library, tmp_path):
    path = tmp_path / "ask.fhrec"
    obj = library.Broken()
    rec = record(library.ask, obj, path=path)
    assert rec.outcome["value"] == {"t": "int", "v": "2a"}  # the call itself was not disturbed
    assert "args[0]" in rec.missing
    tree = rec.call["args"]["items"][0]
    assert tree["t"] == "missing" and "state is private" in tree["why"]
    assert replay(path, modes=("plain",)).verdict == "MISMATCH"


def _head(iterable, n):
    return list(itertools.islice(iterable, n))


@pytest.mark.parametrize(
    "make",
    [
        lambda: (i * i for i in range(10)),
        lambda: iter([5, 6, 7, 8]),
        lambda: itertools.count(3),
        lambda: map(str, range(4)),
        lambda: zip("abc", range(3)),
    ],
    ids=["generator", "list_iterator", "infinite_count", "map", "zip"],
)
def test_iterator_arguments_replay_what_the_call_took(make, tmp_path):
    path = tmp_path / "head.fhrec"
    it = make()
    rec = record(_head, it, 2, path=path)
    node = rec.call["args"]["items"][0]
    assert node["t"] == "iterator" and len(node["items"]["items"]) == 2
    assert rec.missing == []
    _replays(path)


def test_an_iterator_the_call_does_not_finish_is_left_where_the_call_left_it():
    source = iter(range(10))
    assert _head(source, 3) == [0, 1, 2]
    source = iter(range(10))
    tapped = Tap(source, "list_iterator")
    assert _head(tapped, 3) == [0, 1, 2] and tapped.seen == [0, 1, 2]
    assert next(source) == 3  # the caller's iterator goes on where the call stopped


def test_iterators_wrapped_by_recorded_calls_nest_without_python_frames():
    # a remainder handed back to the next call, 5,000 times (more-itertools' before_and_after)
    it = iter(range(10_000))
    for _ in range(5_000):
        it = Tap(itertools.chain([next(it)], it), "itertools.chain")
    assert sum(1 for _ in it) == 10_000


def _draw(n):
    return [random.random() for _ in range(n)]


def test_calls_that_draw_random_numbers_replay_with_the_same_state(tmp_path):
    path = tmp_path / "draw.fhrec"
    rec = record(_draw, 3, path=path)
    assert rec.state is not None and "random" in rec.state
    random.seed(12345)  # a different state now: replay must restore the recorded one
    _replays(path)


def test_calls_that_do_not_draw_carry_no_state(tmp_path):
    rec = record(_head, [1, 2, 3], 2)
    assert rec.state is None


def _np_draw(n):
    import numpy as np

    return np.random.rand(n)


def test_numpy_global_random_state_is_restored(tmp_path):
    np = pytest.importorskip("numpy")
    pytest.importorskip("numpy.random")  # the state is read before the call: imported by then
    path = tmp_path / "np.fhrec"
    rec = record(_np_draw, 3, path=path)
    assert rec.state is not None and "numpy.random" in rec.state
    np.random.seed(1)
    _replays(path)


@pytest.mark.parametrize(
    "value",
    [
        functools.partial(operator.add, 1),
        operator.itemgetter(1, 0),
        operator.attrgetter("real"),
        re.compile(r"a+b", re.IGNORECASE),
        uuid.UUID(int=12345),
        Path("/tmp/x/y.txt"),
        PurePosixPath("a/b"),
        datetime.time(12, 30, 5),
        datetime.timezone(datetime.timedelta(hours=2), "EET"),
        collections.Counter("abracadabra"),
        collections.ChainMap({"a": 1}, {"b": 2}),
        [1, 2].append,
        {"k": 1}.get,
    ],
    ids=lambda v: type(v).__name__,
)
def test_standard_values_round_trip(value):
    enc = Encoder(sources=Sources(None, None))
    tree = enc.encode(value, "v")
    assert enc.missing == [], tree
    back = Decoder().decode(tree)
    assert type(back) is type(value)
    if callable(value) and not isinstance(value, (functools.partial, operator.itemgetter, operator.attrgetter)):
        assert back.__name__ == value.__name__ and back.__self__ == value.__self__
    elif isinstance(value, functools.partial):
        assert back(2) == value(2)
    elif isinstance(value, (operator.itemgetter, operator.attrgetter)):
        sample = (3, 4) if isinstance(value, operator.itemgetter) else 5
        assert back(sample) == value(sample)
    else:
        assert back == value


def test_placeholder_dict_keys_do_not_merge():
    import threading

    locks = {threading.Lock(): i for i in range(5)}
    enc = Encoder(sources=Sources(None, None))
    back = Decoder().decode(enc.encode(locks, "d"))
    assert len(back) == 5 and all(isinstance(k, Missing) for k in back)


def test_one_object_in_two_arguments_is_one_object_on_replay(tmp_path):
    shared = [1, 2]

    def same(a, b):
        return a is b

    path = tmp_path / "same.fhrec"
    rec = record(same, shared, shared, path=path)
    assert rec.outcome["value"] is True
    _replays(path)


NEWER = textwrap.dedent(
    """
    def outer(n):
        class Box:
            def __init__(self, v):
                self.v = v

            def get(self):
                return super().__repr__ and self.v

        return Box(n).get()


    class Holder:
        @staticmethod
        def twice(x):
            return [x, x]

        def method(self, x):
            return super().__class__ and x + 1
    """
)


def test_the_source_is_the_functions_own_at_its_lines(tmp_path, monkeypatch):
    module_path = tmp_path / "own_source_mod.py"
    module_path.write_text("# a comment\n" * 50 + NEWER + "\nVALUE = 1\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    import own_source_mod as mod

    try:
        rec = record_call(mod.Holder.method, (mod.Holder(), 1), path=tmp_path / "m.fhrec")
        assert rec.code["source_line"] > 50
        text = rec.code["source"]
        assert "class Holder:" in text and "def method" in text
        assert "def outer" not in text and "VALUE" not in text
        result = _replays(tmp_path / "m.fhrec")
        assert result.code_from.startswith("marshal (verified")  # same code object as the module's
        rec = record_call(mod.outer, (4,), path=tmp_path / "o.fhrec")
        assert "class Box" in rec.code["source"] and "Holder" not in rec.code["source"]
        _replays(tmp_path / "o.fhrec")
    finally:
        sys.modules.pop("own_source_mod", None)


def test_a_format_1_record_still_replays(monkeypatch):
    # a conformance golden record as format 1 wrote it (whole-file source, ids per tree)
    path = Path(__file__).resolve().parent / "records_data" / "format1_basics_augmented.fhrec"
    monkeypatch.syspath_prepend(str(Path(__file__).resolve().parents[3] / "conformance"))
    rec = load(path)
    assert rec.format == (1, 0) and rec.sources == [] and "source_line" not in rec.code
    _replays(path)


def _clock():
    import time

    return time.perf_counter_ns()


def test_an_outcome_the_record_does_not_decide_is_nondeterministic_not_a_mismatch(tmp_path):
    from framehook.records.cli import EXIT_NONDETERMINISTIC
    from framehook.records.cli import main as cli_main

    path = tmp_path / "clock.fhrec"
    record(_clock, path=path)
    result = replay(path, modes=("plain",))
    assert result.verdict == "NONDETERMINISTIC", result.report()
    assert "two replays here differ" in result.mode("plain").reason
    assert cli_main(["replay", str(path), "--mode", "plain"]) == EXIT_NONDETERMINISTIC


def _const():
    return 1


def test_a_real_mismatch_stays_a_mismatch(tmp_path):
    path = tmp_path / "const.fhrec"
    rec = record(_const)
    rec.outcome["value"] = {"t": "int", "v": "2"}
    from framehook.records import save

    save(rec, path)
    assert replay(path, modes=("plain",)).verdict == "MISMATCH"


class Table(collections.abc.Mapping):
    """A Mapping subclass defined in a test: recorded by value with its class statement."""

    def __init__(self, pairs):
        self._data = dict(pairs)

    def __getitem__(self, key):
        return self._data[key]

    def __iter__(self):
        return iter(self._data)

    def __len__(self):
        return len(self._data)


class Counts(collections.defaultdict):
    pass


@__import__("dataclasses").dataclass(frozen=True)
class Pair:
    left: int
    right: int = 0

    def total(self):
        return self.left + self.right


def _describe(table, counts, pair, kind):
    return sorted(table.items()), dict(counts), pair.total(), kind.__name__, isinstance(pair, kind)


def test_test_defined_classes_and_instances_are_rebuilt_from_their_class_statements(tmp_path):
    counts = Counts(int, {"a": 2})
    path = tmp_path / "classes.fhrec"
    rec = record(_describe, Table({"x": 1, "y": 2}), counts, Pair(3, 4), Pair, path=path)
    assert rec.missing == []
    table, counted, pair, kind = rec.call["args"]["items"]
    assert table["t"] == counted["t"] == pair["t"] == "object" and counted["call"] is True
    assert pair["type"]["t"] == "class" and kind == {"t": "ref", "id": pair["type"]["id"]}
    assert any("class Table(collections.abc.Mapping):" in item["text"] for item in rec.sources)
    result = _replays(path)
    assert any("made by running its recorded class statement" in b for b in result.bindings)


class _Ticking:
    """A repr with a side effect: recording must not call it."""

    def __init__(self):
        self.calls = 0

    def __repr__(self):
        self.calls += 1
        return f"<ticking {self.calls}>"

    def __reduce_ex__(self, protocol):
        raise TypeError("not this way")


def _touch(obj):
    return obj.calls


def test_recording_never_calls_the_repr_of_a_value_it_cannot_encode(tmp_path):
    obj = _Ticking()
    rec = record(_touch, obj)
    assert obj.calls == 0 and rec.outcome["value"] == {"t": "int", "v": "0"}
    assert rec.call["args"]["items"][0]["repr"].endswith("_Ticking object>")


def test_the_interpreter_stamp_ignores_patches_made_by_tests(monkeypatch, tmp_path):
    import platform

    monkeypatch.setattr(platform, "python_version", lambda: "3.10.0")
    monkeypatch.setattr(sys, "implementation", object())
    rec = record(_head, [1], 1, path=tmp_path / "p.fhrec")
    monkeypatch.undo()
    assert rec.python["version"] == platform.python_version()
    assert load(tmp_path / "p.fhrec").python["version"] == platform.python_version()


def _implementation():
    return sys.implementation.name, sys.implementation.cache_tag


def test_a_module_attribute_the_test_replaced_is_set_again_for_the_replay(monkeypatch, tmp_path):
    import types

    from framehook.records.recorder import remember_modules

    remember_modules()  # what record_calls and the plugin do when they start
    real = sys.implementation
    monkeypatch.setattr(sys, "implementation", types.SimpleNamespace(name="sillywalk", cache_tag=None))
    path = tmp_path / "impl.fhrec"
    rec = record(_implementation, path=path)
    monkeypatch.undo()
    assert [p[:2] for p in rec.patches] == [["sys", "implementation"]]
    result = _replays(path)
    assert "sys.implementation -> the recorded value, set for the call as the test had" in result.bindings
    assert sys.implementation is real  # put back after the call


def _short_name():
    return {"cpython": "cp", "pypy": "pp"}.get(sys.implementation.name)


def test_a_field_the_test_set_on_a_module_namespace_is_set_again(monkeypatch, tmp_path):
    from framehook.records.recorder import remember_modules

    remember_modules()
    monkeypatch.setattr(sys.implementation, "name", "pypy")  # as packaging's tests do
    path = tmp_path / "short.fhrec"
    rec = record(_short_name, path=path)
    monkeypatch.undo()
    assert rec.outcome["value"] == "pp" and [p[:2] for p in rec.patches] == [["sys", "implementation"]]
    _replays(path)
    assert sys.implementation.name == "cpython"


def test_the_classes_of_none_and_ellipsis_need_no_types_module():
    enc = Encoder(sources=Sources(None, None))
    trees = [enc.encode(tp, "t") for tp in (type(None), type(Ellipsis), type(NotImplemented))]
    assert all(tree["t"] == "ext" and tree["codec"] == "singleton_type" for tree in trees)
    assert [Decoder().decode(tree) for tree in trees] == [type(None), type(Ellipsis), type(NotImplemented)]


def _size_of(table):
    return len(table), table.missing_key, table["absent"]


def test_a_class_made_inside_a_test_is_rebuilt_from_its_body(tmp_path):
    fallback = "fallback"

    class DefaultTable(dict):  # as cachetools' tests make their caches
        missing_key = None

        def __missing__(self, key):
            self.missing_key = key
            return fallback

    path = tmp_path / "local.fhrec"
    rec = record(_size_of, DefaultTable(a=1), path=path)
    assert rec.missing == []
    node = rec.call["args"]["items"][0]["type"]
    assert node["t"] == "class" and [var for var, _ in node["cells"]] == ["fallback"]
    _replays(path)


def _make_wrapper(func):
    @functools.wraps(func)
    def wrapper(*args):
        return ("wrapped", func(*args))

    return wrapper


def _wrapped_target(x):
    return x * 2


def test_a_wrapper_that_took_its_wrapped_functions_name_replays(tmp_path):
    wrapper = _make_wrapper(_wrapped_target)
    assert wrapper.__qualname__ == "_wrapped_target"  # functools.wraps: not the code's name
    path = tmp_path / "wrapper.fhrec"
    record(wrapper, 4, path=path)
    result = _replays(path)
    assert result.label == "_wrapped_target"


def _makes_a_local_instance(n):
    class Box:
        def __init__(self, v):
            self.v = v

        def get(self):
            return self.v

    return Box(n)


def test_an_instance_of_a_class_made_by_the_recorded_function_itself(tmp_path):
    # the class's source is the recorded function's own: a class node still numbers it
    path = tmp_path / "box.fhrec"
    rec = record(_makes_a_local_instance, 3, path=path)
    assert rec.outcome["value"]["type"]["t"] == "class"
    assert isinstance(rec.outcome["value"]["type"]["src"], int)
    _replays(path)
