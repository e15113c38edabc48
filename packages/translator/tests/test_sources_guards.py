"""Sources (expressions, roots, emitted bytecode) and Guard / GuardsSet / GuardsContext."""

import collections
import traceback

import numpy as np
import pytest

from framehook.translator.bytecode import Codegen, build_function
from framehook.translator.guards.contexts import TracingContext, tracing
from framehook.translator.guards import (
    DuplicateInputs,
    GlobalStateSource,
    Guard,
    GuardKind,
    GuardsCheckpointState,
    GuardsContext,
    GuardsSet,
)
from framehook.translator.guards.sources import (
    AttrSource,
    ClosureCellSource,
    ConstantSource,
    GlobalSource,
    GuardSource,
    IndexSource,
    ItemSource,
    LengthSource,
    LocalSource,
    NdarrayPropertySource,
    SyntheticLocalSource,
    TypeSource,
    is_literal,
)

P = collections.namedtuple("P", "a b")


def _load(source, argnames=(), args=(), freevars=(), cells=(), globals_=None):
    """Run the bytecode the source emits inside a function and return the value it loads."""
    cg = Codegen()
    source.reconstruct(cg)
    cg.return_value()
    fn = build_function(
        cg.instructions, list(argnames), freevars=list(freevars), closure_values=list(cells), globals_=globals_ or {}
    )
    return fn(*args)


def _eval(source, L=None, G=None):
    return eval(source.name(), {"L": L or {}, "G": G or {}})


def _closure():
    z = [5]

    def inner():
        return z

    return inner


X = np.arange(12.0).reshape(3, 4)
CASES = [
    (LocalSource("x"), "L['x']", {"x": X}, {}, X),
    (GlobalSource("g"), "G['g']", {}, {"g": 7}, 7),
    (ConstantSource((1, "a")), "(1, 'a')", {}, {}, (1, "a")),
    (AttrSource(LocalSource("p"), "b"), "L['p'].b", {"p": P(1, 2)}, {}, 2),
    (AttrSource(LocalSource("p"), "a.real"), "L['p'].a.real", {"p": P(1, 2)}, {}, 1),
    (ItemSource(LocalSource("d"), "k"), "L['d']['k']", {"d": {"k": [1, 2, 3]}}, {}, [1, 2, 3]),
    (IndexSource(GlobalSource("g"), 1), "G['g'][1]", {}, {"g": [1, "s"]}, "s"),
    (TypeSource(IndexSource(LocalSource("t"), 0)), "type(L['t'][0])", {"t": ("s",)}, {}, str),
    (LengthSource(ItemSource(LocalSource("d"), "k")), "len(L['d']['k'])", {"d": {"k": [1, 2, 3]}}, {}, 3),
    (NdarrayPropertySource(LocalSource("x"), "shape", 1), "L['x'].shape[1]", {"x": X}, {}, 4),
    (NdarrayPropertySource(LocalSource("x"), "dtype"), "L['x'].dtype", {"x": X}, {}, X.dtype),
    (NdarrayPropertySource(LocalSource("x"), "flags.writeable"), "L['x'].flags.writeable", {"x": X}, {}, True),
    (ClosureCellSource(LocalSource("f"), 0), "L['f'].__closure__[0].cell_contents", {"f": _closure()}, {}, [5]),
]


@pytest.mark.parametrize("source,name,L,G,expected", CASES, ids=[c[1] for c in CASES])
def test_source_name_evaluates_and_bytecode_loads_same_value(source, name, L, G, expected):
    assert source.name() == name == str(source)
    value = _eval(source, L, G)
    assert value is expected or np.array_equal(value, expected)
    loaded = _load(source, list(L), list(L.values()), globals_=G)
    assert loaded is expected or np.array_equal(loaded, expected)


def test_cell_source_loads_with_deref():
    src = LocalSource("c", cell_or_freevar=True)
    assert _load(src, freevars=["c"], cells=[42]) == 42
    assert src.name() == "L['c']"


def test_guard_sources_and_roots():
    chain = LengthSource(AttrSource(GlobalSource("m"), "items"))
    assert chain.guard_source() is GuardSource.GLOBAL and not chain.is_local()
    assert chain.root() == GlobalSource("m")
    assert LocalSource("x").guard_source().is_local()
    assert SyntheticLocalSource("tmp").guard_source() is GuardSource.SYNTHETIC_LOCAL
    assert not SyntheticLocalSource("tmp").subguards_allowed()
    assert LocalSource("x").subguards_allowed()
    assert not LocalSource("x").is_ephemeral()
    assert ConstantSource(3).guard_source() is GuardSource.CONSTANT
    with pytest.raises(ValueError, match="constant"):
        ConstantSource(3).make_guard(GuardKind.EQUALS_MATCH)
    # equal chains are equal and hash alike
    assert AttrSource(LocalSource("x"), "a") == AttrSource(LocalSource("x"), "a")
    assert len({AttrSource(LocalSource("x"), "a"), AttrSource(LocalSource("x"), "a")}) == 1


def test_source_validation():
    with pytest.raises(TypeError, match="literal"):
        ConstantSource(object())
    with pytest.raises(ValueError, match="attribute name"):
        AttrSource(LocalSource("x"), "1bad")
    with pytest.raises(TypeError, match="literal"):
        ItemSource(LocalSource("x"), object())
    with pytest.raises(TypeError, match="int"):
        IndexSource(LocalSource("x"), True)
    with pytest.raises(ValueError, match="unknown property"):
        NdarrayPropertySource(LocalSource("x"), "data")
    with pytest.raises(ValueError, match="indexed"):
        NdarrayPropertySource(LocalSource("x"), "dtype", 0)
    assert is_literal((1, 2.5, "s", b"b", None, frozenset({1}), 1j))
    assert not is_literal(float("nan")) and not is_literal([1]) and not is_literal(float("inf"))


def test_guard_identity_sort_and_text():
    x = LocalSource("x")
    g1 = x.make_guard(GuardKind.TYPE_MATCH)
    g2 = Guard(LocalSource("x"), GuardKind.TYPE_MATCH)
    g1.user_stack = traceback.StackSummary()
    assert g1 == g2 and hash(g1) == hash(g2)
    assert g1 != x.make_guard(GuardKind.ID_MATCH) and g1 != "x"
    dup = DuplicateInputs(LocalSource("b"), LocalSource("a")).to_guard()
    glob = GlobalSource("g").make_guard(GuardKind.ID_MATCH)
    long_local = LocalSource("longer").make_guard(GuardKind.TYPE_MATCH)
    arr = x.make_guard(GuardKind.NDARRAY_MATCH)
    ordered = sorted([dup, glob, long_local, arr, g1])
    # locals before globals, shorter names first, kinds in declaration order, aliasing last
    assert ordered == [g1, arr, long_local, glob, dup]
    assert g1.name == "L['x']" and g1.source is GuardSource.LOCAL
    assert g1.create_fn.__name__ == "TYPE_MATCH"
    assert "TYPE_MATCH" in repr(g1) and "Name: \"L['x']\"" in str(g1)
    assert dup.describe() == "DUPLICATE_INPUT(L['b']) other=L['a']"
    assert dup.detail("missing", 5) == 5
    with pytest.raises(ValueError):
        DuplicateInputs(LocalSource("a"), LocalSource("a"))
    with pytest.raises(ValueError, match="other"):
        Guard(x, GuardKind.DUPLICATE_INPUT)
    with pytest.raises(TypeError):
        Guard("x", GuardKind.TYPE_MATCH)
    with pytest.raises(TypeError):
        Guard(x, "TYPE_MATCH")
    assert GlobalStateSource().make_guard(GuardKind.GLOBAL_STATE).name == "___global_state"


def test_weakref_to_str():
    import weakref

    class Obj:
        def __getattr__(self, name):
            raise KeyError(name)

    o = Obj()
    ref = weakref.ref(o)
    assert "to 'Obj'" in Guard.weakref_to_str(ref)
    del o
    assert "dead" in Guard.weakref_to_str(ref)
    assert Guard.weakref_to_str(None) == "None"


def test_guards_set_records_stacks_and_dedups():
    gs = GuardsSet()
    g = LocalSource("x").make_guard(GuardKind.TYPE_MATCH)
    with tracing(TracingContext()):
        TracingContext.set_current_loc("user.py", 12, "f")
        gs.add(g)
    gs.add(LocalSource("x").make_guard(GuardKind.TYPE_MATCH))
    assert len(gs) == 1 and g in gs and bool(gs)
    assert [f.lineno for f in g.user_stack] == [12]
    assert g.stack is not None and any("test_guards_set" in f.name for f in g.stack)
    # the same frames as traceback.extract_stack() in the caller, the source line read when asked
    assert g.stack[-1].name == "test_guards_set_records_stacks_and_dedups" and g.stack[-1].line == "gs.add(g)"
    assert [(f.filename, f.name) for f in g.stack[:-1]] == [
        (f.filename, f.name) for f in traceback.extract_stack()[:-1]
    ]
    g.stack = None  # assignable, as a plain attribute
    assert g.stack is None
    other = GuardsSet()
    other.update([LocalSource("y").make_guard(GuardKind.TYPE_MATCH)], gs)
    assert len(other) == 2 and len(other - gs) == 1
    other.remove_guards_with_source(LocalSource("y"))
    assert [x.name for x in other] == ["L['x']"]
    quiet = GuardsSet()
    h = LocalSource("z").make_guard(GuardKind.TYPE_MATCH)
    quiet.add(h, collect_debug_stack=False)
    assert h.stack is None and h.user_stack is None
    assert [x.name for x in GuardsSet({h, g}).sorted()] == ["L['x']", "L['z']"]
    assert not GuardsSet()


def test_guards_context_checkpoint_restore_diff():
    ctx = GuardsContext()
    a = LocalSource("a").make_guard(GuardKind.TYPE_MATCH)
    b = LocalSource("b").make_guard(GuardKind.TYPE_MATCH)
    ctx.guards.add(a)
    snap = ctx.copy_graphstate()
    ctx.guards.add(b)
    now = ctx.copy_graphstate()
    assert now.diff(snap) == {b}
    assert snap.diff(now) is None
    assert now != snap and snap == GuardsCheckpointState({a})
    assert (snap == 3) is False
    ctx.restore_graphstate(snap)
    assert set(ctx.guards) == {a}
    with pytest.raises(TypeError):
        ctx.restore_graphstate({a})
