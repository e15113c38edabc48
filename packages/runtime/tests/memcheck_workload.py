"""A workload for valgrind memcheck: every path of the runtime's C code, briefly."""

import sys
import threading

sys.path.insert(0, sys.argv[1])

import framehook.runtime as rt  # noqa: E402
from corpus import CASES  # noqa: E402
from passthrough import PassThrough  # noqa: E402
from framehook.runtime import _C  # noqa: E402

# every corpus case, first through callbacks (misses) then cached (hits)
with rt.enable(PassThrough()):
    for name in sorted(CASES):
        if name not in ("coroutines_with_asyncio", "async_generators", "threads_run_their_own_frames"):
            CASES[name]()
            CASES[name]()


def leaf(n, *rest, key=0, **kw):
    return n


def down(k):
    return leaf(k, 1, key=2, z=3) if k == 0 else down(k - 1)


# a replacement that needs a larger frame: in place where it fits, as a call where it does not
src = "def leaf(n, *rest, key=0, **kw):\n" + "".join(f"    v{i} = n\n" for i in range(300)) + "    return v0\n"
ns = {}
exec(src, ns)
big = ns["leaf"].__code__
with rt.enable(lambda f, e, s: rt.GuardedCode(big, bool) if f.f_code is leaf.__code__ else None):
    for depth in range(0, 300, 11):
        down(depth)


# failing callbacks and guards release the refused frame
def refused(x):
    return x


def failing_cb(frame, entry, state):
    if frame.f_code is refused.__code__:
        raise RuntimeError("no")
    return None


with rt.enable(failing_cb):
    for _ in range(200):
        try:
            refused(object())
        except RuntimeError:
            pass


def raising_guard(f_locals):
    raise KeyError("guard")


rt.set_guard_error_hook(lambda *a: None)
with rt.enable(
    lambda f, e, s: rt.GuardedCode(f.f_code.replace(), raising_guard) if f.f_code is refused.__code__ else None
):
    refused(1)
    for _ in range(50):
        try:
            refused(2)
        except KeyError:
            pass
rt.set_guard_error_hook(None)
rt.reset_code(refused.__code__)
rt.reset_code(leaf.__code__)

# events, views, threads that exit with a callback set
_C._start_event_log()
with rt.enable(PassThrough()):
    down(3)
_C._stop_event_log()
t = threading.Thread(target=lambda: rt.set_eval_frame(lambda *a: None))
t.start()
t.join()
assert not rt.eval_frame_installed()
# the C guard checker: each kind (NDARRAY_MATCH aside: no numpy here) holding, failing,
# with a value missing on either side of (NOT_)SAME_AS, and specs it refuses half built
import contextvars  # noqa: E402

var = contextvars.ContextVar("memcheck_var", default="t")
shared, G = [1], {"g": {"k": [1]}}
checker = rt.GuardChecker(
    [
        ((("local", "n"),), "TYPE_MATCH", int),
        ((("local", "n"),), "EQUALS_MATCH", 3),
        ((("local", "xs"),), "LENGTH_CHECK", 1),
        ((("local", "d"),), "DICT_KEYS", ["a"]),
        ((("local", "d"), ("item", "a")), "IS_NONE"),
        ((("local", "xs"), ("index", -1)), "TRUTH", True),
        ((("global", "g"), ("item", "k"), ("len",)), "CONSTANT_MATCH", 1),
        ((("local", "xs"),), "SAME_AS", (("local", "ys"),)),
        ((("local", "xs"),), "NOT_SAME_AS", (("global", "g"), ("item", "k"))),
        ((("local", "d"),), "NOT_SAME_AS", (("local", "e"), ("attr", "real"))),
        ((), "CONTEXTVAR_IS", var, var.get(), lambda: False),
        ((), "CALL", lambda: True),
    ],
    G,
)
good = {"n": 3, "xs": shared, "ys": shared, "d": {"a": None}, "e": 1}
assert checker(good) and checker.first_failure(dict(good, xs=G["g"]["k"], ys=G["g"]["k"])) == 8
for f_locals in (
    good,
    dict(good, n=4),
    dict(good, ys=[1]),
    dict(good, xs=G["g"]["k"], ys=G["g"]["k"]),
    dict(good, e=object()),
    {k: v for k, v in good.items() if k != "e"},
    {},
):
    for _ in range(20):
        checker(f_locals)
        checker.first_failure(f_locals)
for bad in (
    [((("local", "v"),), "NOT_SAME_AS", (("local", "v"),))],
    [((("local", "v"),), "NOT_SAME_AS", ())],
    [((("local", "v"),), "SAME_AS", (("global", "g"),))],
):
    try:
        rt.GuardChecker([((("local", "w"), ("item", "k")), "EQUALS_MATCH", [1])] + bad)
    except ValueError:
        pass
    else:
        raise AssertionError("a bad spec was accepted")
del checker


# the same checker kinds read from the fresh frame on hits: arguments, a cell argument, a
# free variable, an unbound local, and a guard error reported with a locals dict built late
def framed(z):
    def g(a, *rest, c=1, **kw):
        tmp = z
        return lambda: a + tmp

    return g


g = framed(5)


def interrupt():
    raise KeyboardInterrupt


on_frame = rt.GuardChecker(
    [((("local", n),), "NOT_NONE") for n in ("a", "rest", "c", "kw", "z")] + [((("local", "a"),), "TYPE_MATCH", int)]
)
rt.set_guard_error_hook(lambda *a: None)
for checker in (
    on_frame,
    rt.GuardChecker([((("local", "tmp"),), "IS_NONE")]),
    rt.GuardChecker([((("local", "a"),), "EQUALS_MATCH", 9), ((), "CALL", interrupt)]),
):
    with rt.enable(lambda f, e, s: rt.GuardedCode(f.f_code.replace(), checker) if f.f_code is g.__code__ else None):  # noqa: F821 - the loop variable, deleted after the loop
        for a in (1, 2.0, 9, 1, 9):
            try:
                g(a, 3, c=4, k=5)
            except KeyboardInterrupt:
                pass
    rt.reset_code(g.__code__)
rt.set_guard_error_hook(None)
del on_frame, checker

# CallbackWrapper: calls (positional, keyword, bound, raising), attributes, a freed cycle
import functools  # noqa: E402
import gc  # noqa: E402
import weakref  # noqa: E402


def raising(x):
    raise ValueError(x)


class Holder:
    method = rt.CallbackWrapper(False, lambda self, k, *, by=1: k * by)


w = functools.update_wrapper(rt.CallbackWrapper(PassThrough(), leaf), leaf)
for i in range(50):
    w(i, 1, key=2, z=3)
    Holder().method(i, by=2)
    try:
        rt.CallbackWrapper(None, raising)(i)
    except ValueError:
        pass
    repr(w)
for bad in ((1, leaf), (None, 1), (None,)):
    try:
        rt.CallbackWrapper(*bad)
    except TypeError:
        pass
w.me = w
ref = weakref.ref(w)
del w
gc.collect()
assert ref() is None
rt.reset_code(leaf.__code__)


# scopes entered and exited in C: nested, re-entered, under a raising callback, exited
# without an entry, and left pending by a thread that ends inside one
def raising_cb(frame, entry, state):
    raise RuntimeError("cb")


outer, inner, again = rt.enable(raising_cb), rt.disable(), rt.run_only()
for _ in range(50):
    with outer:
        with inner:
            with again:
                with again:
                    pass
    try:
        with rt.enable(PassThrough()):
            raise KeyError("body")
    except KeyError:
        pass
try:
    inner.__exit__(None, None, None)
except RuntimeError:
    pass


def pending_scope():
    def gen():
        with rt.enable(PassThrough()):
            yield 1

    g = gen()
    next(g)
    parked.append(g)


parked = []
t = threading.Thread(target=pending_scope)
t.start()
t.join()
try:
    parked.pop().close()  # exits on a thread without the entry: an error, nothing changes
except RuntimeError:
    pass
assert rt.get_eval_frame() is None and not rt.eval_frame_installed()
del outer, inner, again


# frames refused near the end of a small thread's C stack (3.9-3.13: the runtime's own check)
def delegating(n):
    yield from delegating(n + 1)


def plain(n):
    return plain(n + 1)


def deep():
    with rt.enable(PassThrough()):
        for start in (lambda: list(delegating(0)), lambda: plain(0)):
            try:
                start()
            except RecursionError:
                pass


limit = sys.getrecursionlimit()
sys.setrecursionlimit(100_000)
threading.stack_size(512 * 1024)
t = threading.Thread(target=deep)
t.start()
t.join()
threading.stack_size(0)
sys.setrecursionlimit(limit)
for code in (delegating.__code__, plain.__code__):
    rt.reset_code(code)

print("workload done")
