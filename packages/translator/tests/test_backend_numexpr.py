"""The numexpr backend: fusion planning (no numexpr needed) and results that agree with
plain numpy within float tolerance (numexpr needed)."""

from __future__ import annotations

import operator

import numpy as np
import pytest

import framehook.translator as ft
from framehook.translator.backends import numexpr as bn
from framehook.translator.exc import InvalidBackendError
from framehook.translator.graph import ArrayMeta, Graph, ScalarMeta


def arr(shape=(4,), dtype="float64"):
    return ArrayMeta(tuple(shape), np.dtype(dtype))


def chain_graph():
    g = Graph("chain")
    x = g.placeholder("x", arr())
    y = g.placeholder("y", arr())
    a = g.call(operator.mul, (x, 2.0), meta=arr())
    b = g.call(operator.add, (a, y), meta=arr())
    c = g.call(np.exp, (b,), meta=arr())
    d = g.call(operator.sub, (c, -1), meta=arr())
    s = g.call_method("sum", (d,), meta=ArrayMeta((), np.dtype("float64"), np.float64))
    e = g.call(operator.truediv, (d, s), meta=arr())
    g.output((e, d))
    return g


def numpy_eval(kernel, *inputs):
    scope = {
        "exp": np.exp,
        "log": np.log,
        "sin": np.sin,
        "cos": np.cos,
        "sqrt": np.sqrt,
        "abs": np.abs,
        "where": np.where,
        "tanh": np.tanh,
        "arctan2": np.arctan2,
        "True": True,
        "False": False,
    }
    scope.update(zip(kernel.names, inputs))
    text = kernel.expression.replace("~", "np.logical_not ")
    scope["np"] = np
    return np.asarray(eval(text, scope)).astype(kernel.dtype)  # noqa: S307


class TestPlan:
    def test_arith_only_keeps_exp_out(self):
        p = bn.plan(chain_graph(), ("arith",))
        kernels = p.meta["fused_kernels"]
        # x*2+y fused; exp left to numpy; (exp - -1) and d/s are runs of one operation: numpy
        assert [k.expression for k in kernels] == ["(i0 * 2.0) + i1"]
        assert "numpy.exp" in p.op_counts() and "operator.truediv" in p.op_counts()
        assert p.op_counts()["numexpr.kernel"] == 1

    def test_all_categories_fuse_across_exp(self):
        p = bn.plan(chain_graph(), bn.CATEGORIES)
        assert [k.expression for k in p.meta["fused_kernels"]] == ["(exp(((i0 * 2.0) + i1))) - (-1)"]
        assert "numpy.exp" not in p.op_counts()
        # the fused graph computes what the original does
        x, y = np.arange(4.0), np.ones(4)
        want = chain_graph().forward(x, y)
        kernels = p.meta["fused_kernels"]
        d = numpy_eval(kernels[0], x, y)
        np.testing.assert_allclose(d / d.sum(), want[0])
        np.testing.assert_allclose(d, want[1])

    def test_unknown_category(self):
        with pytest.raises(ValueError, match="unknown fusion categories"):
            bn.plan(chain_graph(), ("fast",))
        with pytest.raises(ValueError, match="unknown fusion categories"):
            bn.make_numexpr_backend(("fast",))

    def test_what_is_not_fused(self):
        g = Graph("mixed")
        x = g.placeholder("x", arr())
        i = g.placeholder("i", arr(dtype="int64"))
        k = g.placeholder("k", ScalarMeta(int, 3))
        h = g.placeholder("h", arr(dtype="float16"))
        n1 = g.call(operator.add, (i, 1), meta=arr(dtype="int64"))  # integer result
        n2 = g.call(operator.pow, (x, k), meta=arr())  # float power: fused
        n3 = g.call(np.add, (x, 1.0), {"dtype": np.float32}, meta=arr(dtype="float32"))  # kwargs
        n4 = g.call(operator.mul, (x, 1e400), meta=arr())  # inf constant
        n5 = g.call(operator.mul, (x, 2**40), meta=arr())  # large int constant
        n6 = g.call(np.exp, (x,), meta=ArrayMeta((), np.dtype("float64"), np.float64))  # numpy scalar
        n7 = g.call(operator.neg, (h,), meta=arr(dtype="float16"))  # float16
        n8 = g.call(np.sin, (x, x), meta=arr())  # wrong arity
        n9 = g.call(np.matmul, (x, x), meta=arr())  # not elementwise
        n10 = g.call(operator.and_, (i, i), meta=arr(dtype="int64"))  # bitwise on ints
        n11 = g.call(operator.neg, (i,), meta=arr(dtype="int64"))
        n12 = g.call(operator.invert, (i,), meta=arr(dtype="int64"))
        n13 = g.call(np.where, (x, x, x), meta=arr())  # float condition
        n14 = g.call(np.square, (i,), meta=arr(dtype="int64"))
        n15 = g.call(np.absolute, (i,), meta=arr(dtype="int64"))
        n16 = g.call(np.exp, (i,), meta=arr(dtype="int64"))
        n17 = g.call(operator.mul, (x, "s"), meta=arr())  # not a number
        m = g.call_method("copy", (x,), meta=arr())
        nodes = [n1, n3, n4, n5, n6, n7, n8, n9, n10, n11, n12, n13, n14, n15, n16, n17, m]
        g.output(tuple(nodes) + (n2,))
        for node in nodes:
            assert not bn.fusable(node), node.format()
        assert bn.fusable(n2)

    def test_logic_category(self):
        g = Graph("logic")
        x = g.placeholder("x", arr())
        flag = g.placeholder("flag", ScalarMeta(bool, True))
        c1 = g.call(operator.gt, (x, 0.5), meta=arr(dtype="bool"))
        c2 = g.call(np.logical_not, (c1,), meta=arr(dtype="bool"))
        c3 = g.call(operator.or_, (c2, flag), meta=arr(dtype="bool"))
        c4 = g.call(operator.and_, (c3, True), meta=arr(dtype="bool"))
        w = g.call(np.where, (c4, x, 0.0), meta=arr())
        q = g.call(np.square, (w,), meta=arr())
        r = g.call(np.absolute, (q,), meta=arr())
        t = g.call(np.arctan2, (r, x), meta=arr())
        g.output(t)
        p = bn.plan(g, bn.CATEGORIES)
        (kernel,) = p.meta["fused_kernels"]
        assert kernel.expression.startswith("arctan2((abs(((where(")
        x_val = np.linspace(-1, 1, 4)
        np.testing.assert_allclose(numpy_eval(kernel, x_val, True), g.forward(x_val, True))
        assert bn.plan(g, ("arith",)).meta["fused_kernels"][0].expression == "abs((i0 ** 2))"

    def test_impure_and_getattr_nodes_are_copied(self):
        g = Graph("copying")
        x = g.placeholder("x", arr())
        t = g.getattr(x, "T", meta=arr())
        s = g.call(operator.setitem, (t, 0, 1.0))
        s.meta["impure"] = True
        y = g.call(operator.add, (t, 1.0), meta=arr())
        g.output(y)
        p = bn.plan(g, ("arith",))
        assert [n.kind.value for n in p.nodes] == ["placeholder", "getattr", "call", "call", "output"]
        assert p.nodes[2].meta["impure"]

    def test_default_categories(self):
        cats = bn.default_categories()
        assert cats[0] == "arith" and set(cats) <= set(bn.CATEGORIES)

    def test_frame_graph_passes_through(self):
        ne = pytest.importorskip("numexpr", reason="numexpr is not installed")
        del ne
        from framehook.translator.translation.base import FrameGraph

        fg = FrameGraph(["x"])
        assert bn.numexpr_backend(fg, [np.ones(1)]) == fg.forward


def test_missing_numexpr_names_the_extra(monkeypatch):
    import sys

    monkeypatch.setitem(sys.modules, "numexpr", None)  # import numexpr now raises ImportError
    with pytest.raises(InvalidBackendError, match=r"framehook-translator\[numexpr\]"):
        ft.optimize("numexpr")
    kernel = bn.FusedKernel("i0 + 1", ["i0"], np.dtype("float64"), 1)
    with pytest.raises(InvalidBackendError, match="pip install"):
        kernel(np.ones(2))
    assert bn.default_categories() == ("arith",)
    assert "i0 + 1" in repr(kernel)


# ---------------------------------------------------------------- with numexpr


def polynomial(x):
    return 0.25 * x**3 + 0.75 * x**2 - 1.5 * x - 2.0


def black_scholes(s, k, t, r, v):
    d1 = (np.log(s / k) + (r + 0.5 * v * v) * t) / (v * np.sqrt(t))
    d2 = d1 - v * np.sqrt(t)
    return s / (1.0 + np.exp(-1.702 * d1)) - k * np.exp(-r * t) / (1.0 + np.exp(-1.702 * d2))


def masked(x, y):
    keep = (x > 0.5) & ~(y < 0.25)
    return np.where(keep, x * y, x + y * 2.0), keep


def mixed(x, w):
    h = np.tanh(x @ w)  # matmul is not fused
    z = h * 2.0 - 1.0
    return z / z.sum(axis=-1, keepdims=True), np.abs(z), np.square(h)


def single_precision(x):
    return x * 0.5 + np.float32(1.25) * x * x


CASES = [
    (polynomial, lambda rng: (rng.standard_normal(1000),)),
    (
        black_scholes,
        lambda rng: (
            rng.random(500) + 50,
            rng.random(500) + 49,
            rng.random(500) + 0.5,
            0.03,
            rng.random(500) * 0.2 + 0.1,
        ),
    ),
    (masked, lambda rng: (rng.random((20, 30)), rng.random((20, 30)))),
    (mixed, lambda rng: (rng.standard_normal((8, 5)), rng.standard_normal((5, 6)))),
    (single_precision, lambda rng: (rng.random(257).astype(np.float32),)),
]


def assert_close(got, want):
    if isinstance(want, tuple):
        assert isinstance(got, tuple) and len(got) == len(want)
        for g, w in zip(got, want):
            assert_close(g, w)
        return
    assert type(got) is type(want)
    assert got.dtype == want.dtype and got.shape == want.shape
    if want.dtype.kind == "b":
        np.testing.assert_array_equal(got, want)
    else:
        tol = 1e-5 if want.dtype == np.float32 else 1e-10
        np.testing.assert_allclose(got, want, rtol=tol, atol=tol)


@pytest.mark.parametrize("categories", [None, bn.CATEGORIES], ids=["default", "all"])
@pytest.mark.parametrize("fn,make", CASES, ids=[c[0].__name__ for c in CASES])
def test_agrees_with_numpy(fn, make, categories):
    pytest.importorskip("numexpr", reason="numexpr is not installed (pip install 'framehook-translator[numexpr]')")
    backend = "numexpr" if categories is None else bn.make_numexpr_backend(categories)
    opt = ft.optimize(backend)(fn)
    rng = np.random.default_rng(1)
    for _ in range(2):  # first call, then a cache hit
        args = make(rng)
        assert_close(opt(*args), fn(*args))
    # a recompilation on a new shape
    args = make(np.random.default_rng(2))
    args = tuple(a[: max(1, len(a) // 2)] if isinstance(a, np.ndarray) and a.ndim == 1 else a for a in args)
    assert_close(opt(*args), fn(*args))


def test_fused_graph_is_attached():
    pytest.importorskip("numexpr", reason="numexpr is not installed")
    out = bn.numexpr_backend(ft.explain(polynomial)(np.ones(3)).graphs[0], [np.ones(3)])
    assert out.fused_graph.meta["fused_kernels"]
    np.testing.assert_allclose(out(np.full(3, 2.0)), polynomial(np.full(3, 2.0)))
    assert "numexpr" in ft.list_backends()


def test_numexpr_frames_are_not_translated():
    ne = pytest.importorskip("numexpr", reason="numexpr is not installed")
    import framehook.runtime as rt

    ft.reset()
    opt = ft.optimize("numexpr")(polynomial)
    for n in (5, 6, 7):
        opt(np.ones(n))
    assert rt.cache_entries(ne.evaluate.__code__) == []
