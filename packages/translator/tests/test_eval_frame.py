"""optimize / optimize_assert / disable / run, innermost_fn, remove_from_cache, reset,
the backend registry, FRAMEHOOK_DISABLE and bad input."""

import gc
import inspect
import os
import subprocess
import sys
import traceback
import weakref

import numpy as np
import pytest

import framehook.runtime as rt
import framehook.translator as ft
from framehook.translator import config
from framehook.translator.exc import InvalidBackendError


@pytest.fixture(autouse=True)
def clean():
    ft.reset()
    yield
    ft.reset()
    assert rt.get_eval_frame() is None


def add(x, y):
    return x + y


def test_decorator_and_context_manager():
    f = ft.optimize()(add)
    assert f(np.ones(2), 1).tolist() == [2.0, 2.0]
    assert ft.innermost_fn(f) is add and f.__name__ == "add"
    assert rt.cache_entries(add.__code__)
    ft.reset()
    with ft.optimize("eager") as ctx:
        assert rt.get_eval_frame() is ctx.callback
        add(np.ones(1), 1)
    assert rt.cache_entries(add.__code__)
    with config.patch(raise_on_ctx_manager_usage=True):
        with pytest.raises(RuntimeError, match="context manager"):
            with ft.optimize():
                pass


def test_methods_callable_objects_and_classes():
    class Model:
        def __init__(self, w):
            self.w = w

        def forward(self, x):
            return x * self.w

        def __call__(self, x):
            return self.forward(x) + 1

    m = Model(np.float64(2.0))
    bound = ft.optimize()(m.forward)
    assert bound(np.ones(1)).tolist() == [2.0]
    assert rt.cache_entries(Model.forward.__code__)
    obj = ft.optimize()(m)
    assert obj(np.ones(1)).tolist() == [3.0]
    call_code = Model.__call__.__code__  # before the class is wrapped in place
    assert rt.cache_entries(call_code)
    Wrapped = ft.optimize()(Model)
    assert Wrapped is Model
    inst = Model(np.ones(1))
    assert inst(np.ones(1)).tolist() == [2.0]
    assert ft.innermost_fn(Model.__call__).__name__ == "__call__"
    ft.remove_from_cache(m.forward)
    assert not rt.cache_entries(Model.forward.__code__)
    assert rt.cache_entries(call_code)
    ft.remove_from_cache(obj)  # a callable object: its class's __call__, found under the class's wrapper
    assert not rt.cache_entries(call_code)
    assert inst(np.ones(1)).tolist() == [2.0] and rt.cache_entries(call_code)
    ft.remove_from_cache(Model.__call__)  # the wrapper the class got
    assert not rt.cache_entries(call_code)


def scale(x, k: float = 2.0) -> np.ndarray:
    """Scales x."""
    return x * k


def test_the_wrapper_is_the_runtimes_c_wrapper_and_looks_like_the_function():
    ctx = ft.optimize()
    f = ctx(scale)
    assert type(f) is rt.CallbackWrapper and f.fn is scale and f.callback is ctx.callback
    assert (f.__name__, f.__qualname__, f.__doc__, f.__module__) == ("scale", "scale", "Scales x.", __name__)
    assert f.__wrapped__ is scale and f._framehook_orig_callable is scale and f._framehook_context is ctx
    assert inspect.signature(f) == inspect.signature(scale)
    again = ft.disable(f)  # rewrapping wraps the innermost function, not the wrapper
    assert again.fn is scale and again.callback is None
    assert f(np.ones(2)).tolist() == [2.0, 2.0]
    assert rt.cache_entries(scale.__code__)


def test_a_traceback_through_a_decorated_function_has_no_wrapper_frame():
    def fails(x):
        raise ValueError(x)

    for decorate in (ft.optimize(), ft.disable, ft.run):
        with pytest.raises(ValueError) as info:
            decorate(fails)(1)
        names = [e.name for e in traceback.extract_tb(info.value.__traceback__)]
        assert names == ["test_a_traceback_through_a_decorated_function_has_no_wrapper_frame", "fails"]


def test_decorated_methods_bind_and_their_class_is_collected():
    def make():
        class Base:
            def step(self, x):
                return x + 1

        class Scaled(Base):
            def __init__(self, k):
                self.k = k

            @ft.optimize()
            def step(self, x):
                return super().step(x) * self.k  # __class__ cell: a cycle through the wrapper

            @classmethod
            @ft.disable
            def name(cls):
                return cls.__name__, rt.get_eval_frame()

        s = Scaled(3.0)
        assert s.step(np.ones(2)).tolist() == [6.0, 6.0]
        assert Scaled.step(s, np.zeros(1)).tolist() == [3.0]
        assert s.name() == ("Scaled", None) and Scaled.name() == ("Scaled", None)
        assert rt.cache_entries(ft.innermost_fn(Scaled.step).__code__)
        ft.reset()  # the cache entries hold the code, not the class; dropped for a clean check
        return weakref.ref(Scaled)

    ref = make()
    for _ in range(3):  # as test.support.gc_collect: garbage that runs finalizers is freed on a later pass
        gc.collect()
    assert ref() is None


def test_remove_from_cache_unknown_resets(caplog):
    f = ft.optimize()(add)
    f(np.ones(1), 1)
    ft.remove_from_cache(42)
    assert "could not find the code object" in caplog.text
    assert not rt.cache_entries(add.__code__)


def test_disable_and_run():
    f = ft.optimize()(add)

    @ft.disable
    def quiet(x):
        return add(x, 1)

    with ft.optimize():
        quiet(np.ones(1))
    assert not rt.cache_entries(add.__code__)
    f(np.ones(1), 1)
    assert len(rt.cache_entries(add.__code__)) == 1
    # run(): cached code is used, nothing new compiles
    with ft.run():
        add(np.ones(1), 1)
        add(np.ones(1), 1.5)
    (entry,) = rt.cache_entries(add.__code__)
    assert entry.hits >= 1
    r = ft.run(add)
    assert r(np.ones(1), 2).tolist() == [3.0]
    with ft.disable():
        assert rt.get_eval_frame() is None
    nested = ft.optimize()(ft.disable(add))
    assert ft.innermost_fn(nested) is add


def test_optimize_assert_is_strict():
    def failing(graph, inputs):
        raise ValueError("nope")

    f = ft.optimize_assert(failing)(add)
    from framehook.translator.exc import BackendCompilerFailed

    with pytest.raises(BackendCompilerFailed, match="nope"):
        f(np.ones(1), 1)


def test_bad_input_is_reported_at_the_call():
    with pytest.raises(TypeError, match="expects a function, method, class or callable object, got int"):
        ft.optimize()(3)
    with pytest.raises(InvalidBackendError, match="unknown backend 'inductor'; registered backends: .*eager"):
        ft.optimize("inductor")
    with pytest.raises(InvalidBackendError, match="registered name or a callable"):
        ft.optimize(3.5)
    with pytest.raises(TypeError, match="nopython must be True or False"):
        ft.optimize(nopython="yes")
    with pytest.raises(TypeError, match="dynamic must be None, True or False"):
        ft.optimize(dynamic=1)
    with pytest.raises(TypeError, match="guard_fail_fn must be callable"):
        ft.optimize(guard_fail_fn=5)
    from framehook.translator.config import ConfigError

    with pytest.raises(ConfigError, match="cache_size_limit"):
        config.cache_size_limit = "many"


def test_disabled_optimize_is_a_no_op():
    assert ft.optimize(disable=True)(add) is add
    with ft.optimize(disable=True):
        add(np.ones(1), 1)
    assert not rt.cache_entries(add.__code__)
    with config.patch(disable=True):
        assert ft.optimize()(add) is add
    with pytest.raises(TypeError):
        ft.optimize(disable=True)(3)


def test_framehook_disable_env():
    code = (
        "import numpy as np, framehook.translator as ft, framehook.runtime as rt\n"
        "def f(x): return x + 1\n"
        "g = ft.optimize()(f); g(np.ones(1))\n"
        "print(g is f, len(rt.cache_entries(f.__code__)))\n"
    )
    env = dict(os.environ, FRAMEHOOK_DISABLE="1")
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, check=True)
    assert out.stdout.split() == ["True", "0"]


def test_backend_registry():
    def mine(graph, inputs):
        return graph.forward

    assert ft.register_backend(mine) is mine
    assert "mine" in ft.list_backends() and ft.lookup_backend("mine") is mine
    assert ft.lookup_backend(mine) is mine
    assert mine.compiler_name == "mine"
    ft.register_backend(mine)  # the same function again is fine
    with pytest.raises(InvalidBackendError, match="already registered"):
        ft.register_backend(lambda g, i: g.forward, "mine")
    ft.register_backend(lambda g, i: g.forward, "mine", replace=True)

    @ft.register_backend(name="decorated")
    def other(graph, inputs):
        return graph

    assert ft.lookup_backend("decorated") is other
    with pytest.raises(InvalidBackendError, match="must be callable"):
        ft.register_backend(3, "x")
    with pytest.raises(InvalidBackendError, match="give the backend a name"):
        ft.register_backend(type("Anon", (), {"__call__": lambda s, g, i: g})())
    f = ft.optimize("decorated")(add)
    assert f(np.ones(1), 1).tolist() == [2.0]


def test_list_backends_leaves_out_those_whose_package_is_missing(monkeypatch):
    import importlib.util

    from framehook.translator.backends import registry

    monkeypatch.setattr(registry, "_registry", dict(registry._registry))  # registrations end with the test

    def needs_pkg(graph, inputs):
        return graph.forward

    def broken_probe(graph, inputs):
        return graph.forward

    needs_pkg.unavailable = lambda: "the pkg package is not installed"
    broken_probe.unavailable = lambda: 1 / 0
    ft.register_backend(needs_pkg)
    ft.register_backend(broken_probe)
    listed, every = ft.list_backends(), ft.list_backends(include_unavailable=True)
    assert "needs_pkg" not in listed and "broken_probe" not in listed and "eager" in listed
    assert {"needs_pkg", "broken_probe", "eager", "numba", "numexpr"} <= set(every)
    assert registry.unavailable_reason(needs_pkg) == "the pkg package is not installed"
    assert registry.unavailable_reason(broken_probe) == "ZeroDivisionError: division by zero"
    # the plugins: listed exactly where their package is installed
    for name in ("numexpr", "numba"):
        assert (name in listed) == (importlib.util.find_spec(name) is not None), name
    with pytest.raises(InvalidBackendError, match=r"unknown backend 'nope'; registered backends: .*needs_pkg"):
        ft.lookup_backend("nope")


def test_lazy_package_attributes():
    assert "optimize" in dir(ft) and ft.__version__ == "0.1.0"
    with pytest.raises(AttributeError):
        ft.does_not_exist
    from framehook.translator.translation.base import FrameGraph

    g = FrameGraph(["a"])
    assert g(1) == () and "placeholders=['a']" in repr(g)
    with pytest.raises(TypeError, match="takes 1 inputs"):
        g.forward()


def test_every_public_name_resolves_and_all_lists_exactly_them():
    """``__all__`` is written out for linters and type checkers: it must name exactly the
    lazily imported names, the submodules and the eager ones, and each must resolve."""
    lazy = set(ft._LAZY) | set(ft._SUBMODULES)
    assert set(ft.__all__) == lazy | {"__version__", "config"}
    assert len(ft.__all__) == len(set(ft.__all__))
    for name in ft.__all__:
        assert getattr(ft, name) is not None, name
