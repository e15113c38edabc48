"""CallbackWrapper: call_with(callback, fn, ...) as a function object (binding, attributes, gc)."""

from __future__ import annotations

import copy
import functools
import gc
import inspect
import pickle
import subprocess
import sys
import traceback
import types
import weakref

import pytest

import framehook.runtime as rt
from runtime_helpers import targeting


def cb_a(frame, entry, state):
    return None


def cb_b(frame, entry, state):
    return None


def probe(*args, **kwargs):
    """Returns its arguments and the callback it ran under."""
    return args, kwargs, rt.get_eval_frame()


def test_calls_pass_arguments_and_set_the_callback_only_during_the_call():
    w = rt.CallbackWrapper(cb_a, probe)
    assert w() == ((), {}, cb_a)
    assert w(1, 2) == ((1, 2), {}, cb_a)
    assert w(1, y=2, z=[3]) == ((1,), {"y": 2, "z": [3]}, cb_a)
    assert w(*range(20), **{f"k{i}": i for i in range(10)}) == (tuple(range(20)), {f"k{i}": i for i in range(10)}, cb_a)
    assert rt.get_eval_frame() is None
    with rt.enable(cb_b):
        assert rt.CallbackWrapper(False, probe)(0) == ((0,), {}, False)
        assert rt.CallbackWrapper(None, probe)(0) == ((0,), {}, None)
        assert rt.get_eval_frame() is cb_b


def test_the_callback_intercepts_fn_frames():
    def target(x):
        return x + 1

    seen = []

    def record(frame, entry, state):
        seen.append(frame.f_code)
        return None

    w = rt.CallbackWrapper(targeting(target, record), target)
    assert w(1) == 2
    assert seen == [target.__code__]
    assert target(1) == 2 and seen == [target.__code__]  # unwrapped: no callback
    rt.reset_code(target.__code__)


def test_the_previous_callback_comes_back_when_fn_raises_and_wrappers_nest():
    inner = rt.CallbackWrapper(cb_b, lambda: 1 / 0)

    def outer_body():
        assert rt.get_eval_frame() is cb_a
        try:
            inner()
        finally:
            assert rt.get_eval_frame() is cb_a

    outer = rt.CallbackWrapper(cb_a, outer_body)
    with pytest.raises(ZeroDivisionError):
        outer()
    assert rt.get_eval_frame() is None
    nested = rt.CallbackWrapper(cb_a, rt.CallbackWrapper(cb_b, probe))
    assert nested(5) == ((5,), {}, cb_b)
    assert rt.get_eval_frame() is None


def test_a_traceback_has_no_frame_of_the_wrapper():
    def boom():
        raise ValueError("x")

    w = rt.CallbackWrapper(cb_a, boom)
    with pytest.raises(ValueError) as info:
        w()
    names = [entry.name for entry in traceback.extract_tb(info.value.__traceback__)]
    assert names == ["test_a_traceback_has_no_frame_of_the_wrapper", "boom"]


class Point:
    def __init__(self, x):
        self.x = x

    def _shift(self, dx, *, scale=1):
        return self.x + dx * scale, rt.get_eval_frame()

    shift = rt.CallbackWrapper(cb_a, _shift)

    def _describe(cls, tag):
        return cls.__name__, tag, rt.get_eval_frame()

    describe = classmethod(rt.CallbackWrapper(cb_b, _describe))
    scaled = staticmethod(rt.CallbackWrapper(cb_a, probe))


def test_binds_as_a_method_like_a_function():
    p = Point(10)
    assert p.shift(2) == (12, cb_a)
    assert p.shift(2, scale=3) == (16, cb_a)
    bound = p.shift
    assert isinstance(bound, types.MethodType) and bound.__self__ is p
    assert bound.__func__ is Point.__dict__["shift"]
    assert bound(1) == (11, cb_a)
    assert Point.shift is Point.__dict__["shift"]  # class access: the wrapper itself
    assert Point.shift(p, 5) == (15, cb_a)
    w = Point.__dict__["shift"]
    assert w.__get__(None, Point) is w
    assert w.__get__(p, Point)(0) == (10, cb_a)
    assert rt.get_eval_frame() is None


def test_classmethod_and_staticmethod_wrap_it_like_a_function():
    assert Point.describe("t") == ("Point", "t", cb_b)
    assert Point(0).describe("u") == ("Point", "u", cb_b)
    assert Point.scaled(1, k=2) == ((1,), {"k": 2}, cb_a)
    assert Point(0).scaled(3) == ((3,), {}, cb_a)


def test_attributes_and_update_wrapper():
    def add(a, b=1, *, c: int = 2) -> int:
        """Adds."""
        return a + b + c

    add.marker = "kept"
    w = functools.update_wrapper(rt.CallbackWrapper(cb_a, add), add)
    assert (w.__name__, w.__qualname__, w.__doc__, w.__module__) == (add.__name__, add.__qualname__, "Adds.", __name__)
    assert w.__wrapped__ is add and w.marker == "kept"
    assert w.callback is cb_a and w.fn is add
    assert inspect.signature(w) == inspect.signature(add)
    w.extra = 1
    assert w.__dict__["extra"] == 1
    w.__dict__ = {"replaced": True}
    assert w.replaced and not hasattr(w, "extra")
    with pytest.raises(AttributeError):
        w.fn = probe
    with pytest.raises(AttributeError):
        w.callback = cb_b
    with pytest.raises(TypeError):
        w.__dict__ = []
    assert w(1) == 4


def test_repr_names_callback_and_fn_and_survives_recursion():
    w = rt.CallbackWrapper(cb_a, probe)
    assert repr(w) == f"CallbackWrapper(callback={cb_a!r}, fn={probe!r})"

    class Loop:
        def __call__(self, *args):
            return None

        def __repr__(self):
            return repr(self.owner)

    loop = Loop()
    loop.owner = rt.CallbackWrapper(loop, probe)
    assert repr(loop.owner) == f"CallbackWrapper(callback=CallbackWrapper(...), fn={probe!r})"


def test_pickle_and_copy_by_reference():
    module = types.ModuleType("fh_callback_wrapper_probe")
    exec("def double(x):\n    return 2 * x\n", module.__dict__)
    w = functools.update_wrapper(rt.CallbackWrapper(cb_a, module.double), module.double)
    module.double = w
    sys.modules[module.__name__] = module
    try:
        assert pickle.loads(pickle.dumps(w)) is w
    finally:
        del sys.modules[module.__name__]
    assert copy.copy(w) is w and copy.deepcopy(w) is w
    with pytest.raises(TypeError, match="without a str __qualname__"):
        pickle.dumps(rt.CallbackWrapper(cb_a, probe))


def _collected(make):
    """Builds an object graph, drops it, and tells whether gc freed it."""
    ref = make()
    for _ in range(3):  # as test.support.gc_collect: garbage that runs finalizers is freed on a later pass
        gc.collect()
    return ref() is None


def test_cycles_through_the_wrapper_are_collected():
    def self_cycle():
        w = rt.CallbackWrapper(cb_a, probe)
        w.me = w
        return weakref.ref(w)

    def closure_cycle():
        def fn():
            return w

        w = rt.CallbackWrapper(None, fn)
        return weakref.ref(w)

    def callback_cycle():
        class Callback:
            def __call__(self, *args):
                return None

        cb = Callback()
        cb.w = rt.CallbackWrapper(cb, probe)
        return weakref.ref(cb.w)

    def method_in_its_class():
        class Base:
            def size(self):
                return 1

        class Sized(Base):
            def _size(self):
                return super().size() + 1  # the __class__ cell: fn -> Sized -> wrapper -> fn

            size = rt.CallbackWrapper(cb_a, _size)

        assert Sized().size() == 2
        return weakref.ref(Sized)

    gc.disable()
    try:
        for make in (self_cycle, closure_cycle, callback_cycle, method_in_its_class):
            assert _collected(make), make.__name__
    finally:
        gc.enable()


def test_bad_arguments_name_the_argument():
    with pytest.raises(
        TypeError,
        match=r"CallbackWrapper\(\) argument 'callback' must be None, False or a callable, "
        r"not int",
    ):
        rt.CallbackWrapper(1, probe)
    with pytest.raises(TypeError, match=r"CallbackWrapper\(\) argument 'callback' must be None, False or a callable"):
        rt.CallbackWrapper(True, probe)
    with pytest.raises(TypeError, match=r"CallbackWrapper\(\) argument 'fn' must be callable, not int"):
        rt.CallbackWrapper(cb_a, 42)
    with pytest.raises(TypeError, match=r"takes a callback and a function \(2 arguments\), got 1"):
        rt.CallbackWrapper(cb_a)
    with pytest.raises(TypeError, match=r"got 3"):
        rt.CallbackWrapper(cb_a, probe, probe)
    with pytest.raises(TypeError, match="takes no keyword arguments"):
        rt.CallbackWrapper(callback=cb_a, fn=probe)
    with pytest.raises(TypeError):

        class Sub(rt.CallbackWrapper):  # final, as function is
            pass

    assert rt.get_eval_frame() is None


def test_a_very_deep_chain_of_wrappers_raises_and_frees_without_crashing():
    # in a child process: before the recursion check and the deferred deallocation, a chain
    # this deep overflowed the C stack (a segfault) when called and when freed
    script = (
        "import framehook.runtime as rt\n"
        "w = abs\n"
        "for _ in range(200_000):\n"
        "    w = rt.CallbackWrapper(None, w)\n"
        "try:\n"
        "    w(-1)\n"
        "except RecursionError as e:\n"
        "    print('RecursionError', 'CallbackWrapper' in str(e))\n"
        "del w\n"
        "short = abs\n"
        "for _ in range(50):\n"
        "    short = rt.CallbackWrapper(None, short)\n"
        "print('freed', short(-3))\n"
    )
    out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, (out.returncode, out.stderr[-2000:])
    assert out.stdout.split() == ["RecursionError", "True", "freed", "3"], out.stdout
