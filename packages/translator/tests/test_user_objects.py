"""Objects of user classes: attribute reads (guarded), methods, properties, classmethods and
staticmethods (inlined), attribute stores (replayed after the graph) and objects the frame
creates by calling a class (made after the graph where they outlive it). Every function
agrees with the plain one -- result, exceptions, and the state of every object it was given
or returns (attributes, recursively) -- on the first call, on cache hits, and after the
objects or classes change (the guards send the call to a new compilation)."""

from __future__ import annotations

import copy
import dataclasses
import functools
import sys
import types

import numpy as np
import pytest

import framehook.translator as ft
from framehook.translator.symbolic import add_observer, remove_observer
from symbolic_helpers import assert_same, entries

X = np.arange(-2.0, 4.0)
W = np.arange(36.0).reshape(6, 6) / 10


pytestmark = pytest.mark.usefixtures("fresh_translator")


# ----------------------------------------------------------------- comparing objects
def state(v, seen=None):
    """A structure of plain values standing for ``v`` and every object reachable from it."""
    seen = {} if seen is None else seen
    if isinstance(v, (list, tuple)):
        return type(v)(state(i, seen) for i in v)
    if isinstance(v, dict):
        return {k: state(i, seen) for k, i in v.items()}
    if hasattr(v, "__dict__") or hasattr(type(v), "__slots__") and not isinstance(v, (np.ndarray, np.generic)):
        if id(v) in seen:
            return ("<seen>", seen[id(v)])
        seen[id(v)] = len(seen)
        attrs = dict(vars(v)) if hasattr(v, "__dict__") else {}
        for name in getattr(type(v), "__slots__", ()):
            if hasattr(v, name):
                attrs[name] = getattr(v, name)
        return (type(v), {k: state(i, seen) for k, i in attrs.items()})
    return v


def outcome(fn, args):
    args = copy.deepcopy(args)
    try:
        value = fn(*args)
    except Exception as e:  # the exception is part of the behaviour compared
        return "raise", (type(e), str(e)), state(args)
    return "return", state(value), state(args)


def agree(fn, *calls, opt=None):
    """Each call (a tuple of arguments) gives the same outcome plainly and optimized."""
    opt = opt or ft.optimize("eager")(fn)
    for args in calls:
        want, got = outcome(fn, args), outcome(opt, args)
        assert want[0] == got[0], f"plain {want[0]}s {want[1]!r:.300}, optimized {got[0]}s {got[1]!r:.300}"
        assert_same(got[1], want[1])
        assert_same(got[2], want[2], "arguments after the call")
    return opt


def captured(fn, *args, graphs=1):
    out = ft.explain(fn)(*copy.deepcopy(args))
    assert out.graph_count == graphs and out.graph_break_count == 0, str(out)
    return out


def break_codes(fn, *args):
    """The (codes, reasons) of the breaks of one optimized call, which may raise."""
    reports = []
    ft.reset()
    add_observer(reports.append)
    try:
        ft.optimize("eager")(fn)(*copy.deepcopy(args))
    except Exception:  # compared with the plain function by agree()
        pass
    finally:
        remove_observer(reports.append)
    found = [r.graph_break for r in reports if r.graph_break is not None]
    return [b.code for b in found], [b.reason for b in found]


def has_guard(out, text):
    return any(g.startswith(text) for g in out.guards)


# ----------------------------------------------------------------- classes
class Linear:
    def __init__(self, w, b=0.0):
        self.w = w
        self.b = b
        self.calls = 0

    def forward(self, x):
        self.calls += 1
        return self.act(x @ self.w + self.b)

    @staticmethod
    def act(y):
        return np.maximum(y, 0.0)

    @classmethod
    def identity(cls, n):
        return cls(np.eye(n))

    @property
    def wt(self):
        return self.w.T

    def twice(self, x):
        return self.forward(self.forward(x))


class Scaled(Linear):
    def forward(self, x, k=2.0):
        return (x @ self.w) * k


@dataclasses.dataclass
class Config:
    scale: float
    shift: float = 0.0
    tag: str = "c"


@dataclasses.dataclass(frozen=True)
class Frozen:
    scale: float


class Slotted:
    __slots__ = ("a", "b")

    def __init__(self, a, b):
        self.a = a
        self.b = b


class Hooked:
    def __init__(self):
        self.v = 2.0

    def __getattr__(self, name):
        if name.startswith("__"):
            raise AttributeError(name)
        return 3.0


class Point:
    def __init__(self, x, y):
        self.x = x
        self.y = y

    def norm(self):
        return np.sqrt(self.x * self.x + self.y * self.y)


class Empty:
    pass


class Node:
    def __init__(self, value, child=None):
        self.value = value
        self.child = child
        self.parent = None
        if child is not None:
            child.parent = self


class WithNew:
    def __new__(cls, *a):
        return super().__new__(cls)

    def __init__(self, v):
        self.v = v


class WithDel:
    def __init__(self, v):
        self.v = v

    def __del__(self):
        pass


class ListLike(list):
    pass


# ----------------------------------------------------------------- reads, methods, properties
def uses_methods(x, m):
    return m.forward(x) + m.act(x @ m.wt) + m.twice(x)


def uses_classmethod(x, m):
    other = m.identity(6)
    return other.forward(x), other


def reads_config(x, c):
    return x * c.scale + c.shift, c.tag


def reads_frozen_and_slots(x, f, s):
    return x * f.scale + s.a * s.b


def test_methods_properties_and_static_methods_are_inlined():
    agree(uses_methods, (X, Linear(W, 0.5)), (X, Linear(W, 0.5)), (X, Linear(W * 2, 1)))
    out = captured(uses_methods, X, Linear(W, 0.5))
    for guard in (
        "ID_MATCH(L['m'].forward.__func__)",
        "DUPLICATE_INPUT(L['m'].forward.__self__)",
        "TYPE_MATCH(L['m'].forward)",
        "ID_MATCH(type(L['m']).wt.fget)",
        "ID_MATCH(L['m'].act)",
    ):
        assert has_guard(out, guard), (guard, out.guards)


def test_classmethod_makes_a_new_object():
    agree(uses_classmethod, (X, Linear(W)), (X, Linear(W)))
    captured(uses_classmethod, X, Linear(W))


def test_dataclasses_frozen_dataclasses_and_slots_are_read():
    agree(reads_config, (X, Config(2.0)), (X, Config(2.0, 1.0, "d")), (X, Config(np.float32(3.0))))
    captured(reads_config, X, Config(2.0))
    agree(reads_frozen_and_slots, (X, Frozen(2.0), Slotted(1.0, 3.0)), (X, Frozen(0.5), Slotted(2, 3)))
    captured(reads_frozen_and_slots, X, Frozen(2.0), Slotted(1.0, 3.0))


def test_attribute_hooks_still_break():
    def f(x, h):
        return x * h.v + h.missing

    agree(f, (X, Hooked()), (X, Hooked()))
    codes, reasons = break_codes(f, X, Hooked())
    assert codes and codes[0] == "FH008" and "Hooked" in reasons[0]


# ----------------------------------------------------------------- guards
def test_method_replaced_on_the_class_recompiles():
    opt = agree(uses_methods, (X, Linear(W, 0.5)), (X, Linear(W, 0.5)))
    assert entries(uses_methods) == 1
    saved = Linear.forward
    try:
        Linear.forward = lambda self, x: x * 10.0  # the guard on forward.__func__ fails
        agree(uses_methods, (X, Linear(W, 0.5)), opt=opt)
        assert entries(uses_methods) == 2
    finally:
        Linear.forward = saved


def test_method_shadowed_by_an_instance_attribute():
    m = Linear(W, 0.5)
    opt = agree(uses_methods, (X, m))
    shadow = Linear(W, 0.5)
    shadow.forward = lambda x: x - 100.0  # an instance attribute hides the method
    agree(uses_methods, (X, shadow), opt=opt)
    other = Linear(W, 0.5)
    other.forward = Linear(W * 3, 0.0).forward  # a method bound to another object
    agree(uses_methods, (X, other), opt=opt)


def test_attribute_type_and_class_changes_recompile():
    opt = agree(reads_config, (X, Config(2.0)), (X, Config(5.0)))
    assert entries(reads_config) == 1  # a float attribute is a graph input
    agree(reads_config, (X, Config(2)), opt=opt)  # an int: TYPE_MATCH fails
    assert entries(reads_config) == 2
    sub = type("SubConfig", (Config,), {"shift": 4.0})
    agree(reads_config, (X, sub(1.0)), opt=opt)  # another class: TYPE_MATCH on the object fails
    assert entries(reads_config) == 3


def test_subclass_method_overrides():
    agree(uses_methods, (X, Scaled(W)), (X, Linear(W)), (X, Scaled(W)))


# ----------------------------------------------------------------- stores replayed
def counts_calls(x, m):
    y = m.forward(x)
    m.last = y
    m.b = m.b + 1
    return y.sum(), m.calls


def test_attribute_stores_in_methods_are_replayed():
    agree(counts_calls, (X, Linear(W, 0.5)), (X, Linear(W, 0.5)), (X, Linear(W, 2)))
    captured(counts_calls, X, Linear(W, 0.5))


def test_store_on_frozen_dataclass_or_property_breaks():
    def f(x, c):
        c.scale = x.sum()
        return x

    agree(f, (X, Frozen(1.0)))
    codes, reasons = break_codes(f, X, Frozen(1.0))
    assert codes[0] == "FH006" and "__setattr__" in reasons[0], reasons

    def g(x, m):
        m.wt = x
        return x

    agree(g, (X, Linear(W)))
    assert break_codes(g, X, Linear(W))[0][0] == "FH006"


# ----------------------------------------------------------------- objects created by the frame
def makes_points(x):
    p = Point(x, x * 2)
    q = Point(p.y, 1.0)
    return p.norm() + q.norm(), q


def makes_and_discards(x):
    p = Point(x.sum(), x.max())
    c = Config(2.0, shift=p.y)
    return x * c.scale + c.shift


def stores_new_object(x, holder):
    holder.child = Node(x * 2, Node(x))
    holder.count = holder.count + 1
    return holder.child.child.parent is holder.child


def cycle(x):
    a = Node(x)
    b = Node(x + 1, a)
    a.parent = b
    e = Empty()
    e.ref = e
    return b, e


def created_then_break(x):
    p = Point(x * 2, x.sum())
    print("shape", x.shape)  # FH005: p is live across the break
    p.x = p.x + 1
    return p, p.norm()


def test_new_objects_are_made_after_the_graph():
    agree(makes_points, (X,), (X,), (X[:3],))
    out = captured(makes_points, X)
    assert has_guard(out, "ID_MATCH(G['Point'].__init__)") and has_guard(out, "ID_MATCH(G['Point'].__new__)")
    agree(makes_and_discards, (X,), (X,))
    captured(makes_and_discards, X)
    agree(stores_new_object, (X, types.SimpleNamespace(count=0)), (X, types.SimpleNamespace(count=1)))
    captured(stores_new_object, X, types.SimpleNamespace(count=0))
    agree(cycle, (X,), (X,))
    captured(cycle, X)


def test_new_object_live_across_a_graph_break():
    agree(created_then_break, (X,), (X,))
    codes, _ = break_codes(created_then_break, X)
    assert codes == ["FH005"]


def test_class_rebound_recompiles():
    global Point
    opt = agree(makes_points, (X,))
    saved = Point

    class Point2(saved):
        def norm(self):
            return self.x - self.y

    try:
        Point = Point2  # ID_MATCH(G['Point']) fails
        agree(makes_points, (X,), opt=opt)
        assert entries(makes_points) == 2
    finally:
        Point = saved


def test_init_errors_agree():
    def f(x):
        return Point(x)  # TypeError: missing argument

    def g(x):
        return Empty(x)  # TypeError: takes no arguments

    agree(f, (X,))
    agree(g, (X,))


@pytest.mark.parametrize(
    "cls,why",
    [
        (WithNew, "__new__"),
        (WithDel, "__del__"),
        (Slotted, "__slots__"),
        (ListLike, "builtin type list"),
        (Frozen, "__setattr__"),
    ],
)
def test_classes_not_modelled_keep_the_break(cls, why):
    def f(x):
        obj = cls(x, x) if cls is Slotted else cls([x]) if cls is ListLike else cls(x)
        return obj, x + 1

    agree(f, (X,), (X,))
    codes, reasons = break_codes(f, X)
    assert codes[0] == "FH003" and why in reasons[0], reasons


class _Descriptor:
    """A data descriptor carrying the property's getter as ``fget`` but reading otherwise."""

    def __init__(self, fget):
        self.fget = fget

    def __get__(self, obj, owner=None):
        return obj.w * 0.0 if obj is not None else self

    def __set__(self, obj, value):
        raise AttributeError("read-only")


def test_property_replaced_on_the_class_recompiles():
    opt = agree(uses_methods, (X, Linear(W, 0.5)))
    saved = Linear.__dict__["wt"]
    try:
        Linear.wt = _Descriptor(saved.fget)  # same fget, not a property: TYPE_MATCH fails
        agree(uses_methods, (X, Linear(W, 0.5)), opt=opt)
        Linear.wt = property(lambda self: self.w * 2)  # another getter: ID_MATCH fails
        agree(uses_methods, (X, Linear(W, 0.5)), opt=opt)
    finally:
        Linear.wt = saved


# ----------------------------------------------------------------- attributes of the class itself
class Table:
    SCALE = 3.0

    @staticmethod
    def act(y):
        return y * Table.SCALE

    @classmethod
    def build(cls, x):
        obj = cls()
        obj.data = x + cls.SCALE
        return obj


def uses_class_attributes(x):
    t = Table.build(x)
    return Table.act(t.data), t, Table.SCALE


def test_class_attributes_classmethods_and_static_methods():
    opt = agree(uses_class_attributes, (X,), (X,))
    out = captured(uses_class_attributes, X)
    assert has_guard(out, "DUPLICATE_INPUT(G['Table'].build.__self__)") and has_guard(out, "ID_MATCH(G['Table'].act)")
    saved = Table.SCALE
    try:
        Table.SCALE = 5.0  # a float class attribute: a graph input, no recompilation
        agree(uses_class_attributes, (X,), opt=opt)
        Table.SCALE = 2  # its type changed: recompiles
        agree(uses_class_attributes, (X,), opt=opt)
        assert entries(uses_class_attributes) == 2
    finally:
        Table.SCALE = saved


class Lazy:
    callers = []  # the file of the code that read the property, each time it was computed

    def __init__(self, v):
        self.v = v

    @functools.cached_property
    def doubled(self):
        frame = sys._getframe(1)
        while frame.f_code.co_filename == functools.__file__:
            frame = frame.f_back
        Lazy.callers.append(frame.f_code.co_filename)
        return self.v * 2


def reads_cached_property(x, lz):
    return x + lz.doubled


def test_other_descriptors_break_without_running_at_trace_time():
    agree(reads_cached_property, (X, Lazy(X)), (X, Lazy(X)))
    Lazy.callers.clear()
    lz = Lazy(X)
    ft.reset()
    ft.optimize("eager")(reads_cached_property)(X, lz)
    assert Lazy.callers == [__file__] and "doubled" in vars(lz)  # computed once, by the user's code
    codes, reasons = break_codes(reads_cached_property, X, Lazy(X))
    assert codes[0] == "FH008" and "cached_property" in reasons[0], reasons


class Box:
    def __init__(self, lo, hi):
        self.lo = lo
        self.hi = hi

    @property
    def width(self):
        return self.hi - self.lo

    def clip(self, x):
        return np.clip(x, self.lo, self.hi)


def uses_new_box(x):
    box = Box(x.min() / 2, x.max() / 2)
    return box.clip(x) * box.width


def test_properties_and_methods_of_new_objects_and_a_replaced_init():
    out = captured(uses_new_box, X)
    assert has_guard(out, "ID_MATCH(G['Box'].width.fget)") and has_guard(out, "ID_MATCH(G['Box'].clip)"), out.guards
    ft.reset()
    opt = agree(uses_new_box, (X,), (X,))
    assert entries(uses_new_box) == 1
    saved = Box.__init__

    def wider(self, lo, hi):
        self.lo = lo * 2
        self.hi = hi * 2

    try:
        Box.__init__ = wider  # ID_MATCH(G['Box'].__init__) fails: traced again
        agree(uses_new_box, (X,), opt=opt)
        assert entries(uses_new_box) == 2
    finally:
        Box.__init__ = saved


def steps_with_methods(x, box):
    for i in range(20):
        x = box.clip(x * 1.5) + box.width * 0.01
    return x


def test_methods_and_properties_inside_a_captured_loop():
    agree(steps_with_methods, (X, Box(-1.0, 2.0)), (X, Box(-1.0, 2.0)), (X, Box(0, 1)))
    out = captured(steps_with_methods, X, Box(-1.0, 2.0))
    assert len(out.loops) == 1 and "captured as one loop" in str(out.loops[0]), out.loops
    # a method that stores an attribute stores it at every iteration: that loop is unrolled
    agree(counts_in_loop, (X, Linear(W)), (X, Linear(W)))
    out = captured(counts_in_loop, X, Linear(W))
    assert "unrolled" in str(out.loops[0]) and "'calls'" in str(out.loops[0]), out.loops


def counts_in_loop(x, m):
    for i in range(6):
        x = m.forward(x) * 0.1
    return x


def optional_bias(x, m):
    y = x @ m.w
    if hasattr(m, "b"):
        y = y + getattr(m, "b", 0.0)
    return y * getattr(m, "gain", 1.0)


def test_getattr_with_a_default_and_hasattr():
    with_gain = Linear(W, 0.5)
    with_gain.gain = 3.0
    opt = agree(optional_bias, (X, with_gain), (X, with_gain))
    assert entries(optional_bias) == 1
    out = captured(optional_bias, X, with_gain)
    assert has_guard(out, "TYPE_MATCH(L['m'].gain)"), out.guards
    ft.reset()
    opt = agree(optional_bias, (X, with_gain))
    no_gain = Linear(W, 0.5)  # gain missing: the guard fails, the default is Python's
    agree(optional_bias, (X, no_gain), (X, with_gain), opt=opt)
    codes, reasons = break_codes(optional_bias, X, no_gain)
    assert codes[0] == "FH003" and "'gain'" in reasons[0], reasons
    no_bias = types.SimpleNamespace(w=W, gain=2.0)
    agree(optional_bias, (X, no_bias), opt=opt)  # hasattr False: runs in Python
