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
with rt.enable(lambda f, e, s: rt.GuardedCode(f.f_code.replace(), raising_guard) if f.f_code is refused.__code__ else None):
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
print("workload done")
