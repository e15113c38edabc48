"""The numba backend's loop lowering (``numba_fusion``): sliced elementwise stores become
index loops and axis reductions become loops, and the results, warnings, exceptions and
argument writes stay plain numpy's, including where the stored array is read (behind or
ahead of the loop), where two arguments share memory, and where a slice broadcasts.

Each function here compiles one small kernel (a second or two each, more under a tracer).
"""

from __future__ import annotations

import operator
from typing import Any, List

import numpy as np
import pytest

numba = pytest.importorskip("numba", reason="numba is not installed for this interpreter")
from framehook.translator.backends import numba as bnb  # noqa: E402
from framehook.translator.backends.numba import fusion as numba_fusion  # noqa: E402
from framehook.translator.graph import Graph  # noqa: E402
from test_backend_numba import assert_as_plain, captured_graph, numba_cache  # noqa: E402,F401 - the cache fixture


def _stores(graph: Graph) -> int:
    count = 0
    for node in graph.nodes:
        count += node.target is operator.setitem
        body = getattr(node.target, "body", None)
        count += _stores(body) if isinstance(body, Graph) else 0
    return count


def _fused(graph: Graph) -> List[Any]:
    return numba_fusion.rewrite(graph)[1]


def _stencil(a, b, steps):
    for _ in range(steps):
        b[1:-1, 1:-1] = 0.25 * (a[1:-1, :-2] + a[1:-1, 2:] + a[:-2, 1:-1] + a[2:, 1:-1])
        a[1:-1, 1:-1] = 0.25 * (b[1:-1, :-2] + b[1:-1, 2:] + b[:-2, 1:-1] + b[2:, 1:-1])
    return a


def test_a_stencil_store_is_one_loop_nest_and_agrees():
    args = (np.arange(30.0).reshape(5, 6) ** 1.5, np.zeros((5, 6)), 3)
    graph = captured_graph(_stencil, *args)
    fused = _fused(graph)
    # every store (those of the loop's first iterations and the two in its body)
    assert len(fused) == _stores(graph) >= 4 and all(not f.through_temp for f in fused)
    source = bnb.lower(captured_graph(_stencil, *args), args).source
    assert "operator" not in source and "for _fh0_i1 in range(1, 1 + " in source, source
    notes = assert_as_plain(_stencil, args, (np.ones((3, 3)), np.zeros((3, 3)), 2))
    assert {n.status for n in notes} == {"compiled"}, [str(n) for n in notes]


def _own_reads(x, y):
    x[1:] = x[:-1] * 2.0 + x[1:]  # reads elements the loop wrote: through a temporary
    y[:-1] = y[1:] * 0.5 - y[:-1]  # reads only elements not written yet: straight
    return x, y


def test_a_store_reading_its_own_array_keeps_numpys_meaning():
    args = (np.arange(1.0, 9.0), np.arange(1.0, 9.0) ** 2)
    assert [f.through_temp for f in _fused(captured_graph(_own_reads, *args))] == [True, False]
    notes = assert_as_plain(_own_reads, args, (np.ones(1), np.ones(1)))
    assert {n.status for n in notes} == {"compiled"}, [str(n) for n in notes]


def _smooth(a, b):
    b[1:-1] = (a[:-2] + a[2:]) * 0.5
    return b


def test_arguments_sharing_memory_run_eager_as_plain():
    x = np.arange(10.0) ** 2
    notes = assert_as_plain(_smooth, (x, x), (x[1:], x[:-1]), (x.copy(), np.zeros(10)))
    assert "compiled" in [n.status for n in notes], [str(n) for n in notes]


def _relax(p):
    for k in range(p.shape[0]):
        p[:, :] = np.minimum(p, p[:, k : k + 1] + p[k : k + 1, :])
    return p


def test_a_broadcast_slice_of_the_stored_array_goes_through_a_temporary():
    rng = np.random.default_rng(3)
    dist = rng.uniform(-1.0, 5.0, (6, 6))  # negative entries: an in-place update would differ
    fused = _fused(captured_graph(_relax, dist.copy()))
    assert fused and all(f.through_temp for f in fused)
    notes = assert_as_plain(_relax, (dist,), (rng.uniform(0.0, 1.0, (3, 3)),))
    assert "compiled" in [n.status for n in notes], [str(n) for n in notes]


def _moved(a, b):
    t = a[1:] * 2.0
    a[0] = 7.0  # a write between the read and the store: the read cannot move
    b[1:] = t + a[:-1]
    return b


def test_a_read_is_never_moved_past_a_write():
    args = (np.arange(5.0), np.zeros(5))
    graph = captured_graph(_moved, *args)
    assert len([n for n in graph.nodes if n.target is operator.setitem]) == 2
    # t alone is a new array computed where it stands; no store took t's tree past the write
    fused = _fused(graph)
    assert [f.dst for f in fused] == [None] and len(fused[0].reads) == 1
    assert_as_plain(_moved, args)


def _stats(x):
    mean = x.mean(axis=0)
    top = np.max(x, axis=1, keepdims=True)
    low = x.min(axis=-1)
    e = np.exp(x - top)
    return mean, x.sum(axis=1), top, low, np.sqrt(((x - mean) ** 2).mean(axis=0)), e / e.sum(axis=1, keepdims=True)


def test_axis_reductions_compile_as_loops_and_agree():
    x = np.random.default_rng(1).standard_normal((7, 5))
    fused = _fused(captured_graph(_stats, x))
    kinds = [(f.kind, f.axis, f.keepdims) for f in fused if isinstance(f, numba_fusion.FusedReduce)]
    # exp(x - top) and e / e.sum(...), broadcast along rows, are each one loop nest into a
    # new array, and so is the sqrt of a 1-D mean; ((x - mean) ** 2).mean(axis=0) computes
    # each element where it adds it
    assert sorted(len(f.reads) for f in fused if isinstance(f, numba_fusion.FusedStore)) == [1, 2, 2]
    trees = [f.tree for f in fused if isinstance(f, numba_fusion.FusedReduce) and f.tree is not None]
    assert len(trees) == 1 and trees[0].expr[1] is operator.pow
    assert sorted(kinds) == [
        ("max", 1, True),
        ("mean", 0, False),
        ("mean", 0, False),
        ("min", 1, False),
        ("sum", 1, False),
        ("sum", 1, True),
    ]
    nan = x.copy()
    nan[2, 3] = np.nan
    notes = assert_as_plain(_stats, (x,), (nan,), (np.ones((0, 3)),))
    assert "compiled" in [n.status for n in notes], [str(n) for n in notes]


def _typed_then_loop(x, n):
    y = x.view(np.dtype([("v", "f8")]))["v"].copy()  # a structured dtype: numba cannot take the graph
    s = 0.0
    for i in range(n):
        s = s * 0.5 + y[i]
        y[i] = s
    return y, s


def test_a_graph_numba_refuses_still_compiles_its_loop_alone():
    notes = assert_as_plain(_typed_then_loop, (np.arange(6.0), 5), (np.arange(3.0), 3))
    outer = [n for n in notes if n.status == "fallback"]
    loops = [n for n in notes if n.status == "compiled"]
    assert outer and "numba does not compile" in outer[0].reason and outer[0].code == "FH016"
    assert loops and all(n.graph.endswith("_loop") for n in loops), [str(n) for n in notes]


# ---------------------------------------------------------------- integer // and % by a constant


def _int_residues(x):
    return (x % 7 + x // 3) * 2 - x % 1000, (x % 2 == 0).sum(axis=0)


@pytest.mark.parametrize("dtype", [np.int32, np.int64])
def test_integer_division_by_a_positive_constant_is_fused_and_floors_as_numpy(dtype):
    from hypothesis import given, settings
    from hypothesis import strategies as st
    from hypothesis.extra import numpy as hnp

    info = np.iinfo(dtype)
    ex = (np.arange(-12, 12, dtype=dtype).reshape(4, 6),)
    lowered = bnb.lower(captured_graph(_int_residues, *ex), ex)
    assert lowered.reason is None, lowered.reason
    assert " % " in lowered.source and " // " in lowered.source  # in the loops, not numba's array code
    scope = dict(lowered.scope)
    exec(compile(lowered.source, "<kernel>", "exec"), scope)  # noqa: S102 - the generated kernel
    kernel = numba.njit(scope["forward"])

    @settings(max_examples=40, deadline=None)
    @given(
        hnp.arrays(
            dtype, hnp.array_shapes(min_dims=2, max_dims=2, max_side=6), elements=st.integers(info.min, info.max)
        )
    )
    def prop(x):
        got, want = kernel(x), _int_residues(x)
        for g, w in zip(got, want):
            assert g.dtype == w.dtype and np.array_equal(g, w), (x, g, w)

    prop()


def _by(x, k):
    return x // k + x % 3


@pytest.mark.parametrize("divisor", [0, -1, -3])
def test_a_divisor_that_could_be_zero_or_minus_one_keeps_the_graph_eager(divisor):
    def fixed(x):
        return x // divisor + 1

    ex = (np.arange(-3, 4, dtype=np.int32),)
    with np.errstate(all="ignore"):
        graph = captured_graph(fixed, *ex)
    assert "integer-array // or %" in (bnb.lower(graph, ex).reason or "")


def test_a_divisor_known_only_when_called_or_beyond_the_dtype_is_never_trusted():
    from framehook.translator.backends.numba.fusion_ops import constant_divisor

    ex = (np.arange(-3, 4), 3)
    assert "integer-array // or %" in (bnb.lower(captured_graph(_by, *ex), ex).reason or "")

    def big(x):
        return x // 2**40

    graph = captured_graph(big, np.arange(4))
    (node,) = [n for n in graph.nodes if n.target is operator.floordiv]
    assert constant_divisor(node, np.dtype(np.int64)) and not constant_divisor(node, np.dtype(np.int32))
    assert not constant_divisor(node, np.dtype(np.float64))
