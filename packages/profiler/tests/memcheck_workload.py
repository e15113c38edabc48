"""A workload for valgrind memcheck: the profiler's C paths, briefly, on every backend.

Recording (Python and C calls, generators, coroutines, exceptions, threads started while
recording, annotations, tagged calls, asyncio tasks on tracks of their own), then every
output format; then the SIGTERM guard."""

import asyncio
import os
import signal
import sys
import threading
import time

from framehook.profiler import Profiler, record_function, tag_calls, untag_calls
from framehook.profiler import _tracer

out_dir = sys.argv[1]


def fib(n):
    return n if n < 2 else fib(n - 1) + fib(n - 2)


def gen(n):
    for i in range(n):
        yield abs(-i)


async def coro(n):
    await asyncio.sleep(0)
    return sum(range(n))


async def tasks(n):
    # tasks that end, one still waiting at stop, and one whose address a new task reuses
    pending = asyncio.get_running_loop().create_future()
    waiting = asyncio.ensure_future(pending)
    for _ in range(2):
        await asyncio.gather(*(asyncio.create_task(coro(n), name=f"t{i}") for i in range(3)))
    return waiting


def fails(n):
    raise ValueError(n)


class Tagged:
    def __call__(self, x):
        return len(str(x))


def work():
    fib(12)
    list(gen(50))
    asyncio.run(coro(20))
    for k in range(20):
        try:
            fails(k)
        except ValueError:
            pass
    with record_function("block"):
        sorted(range(100), key=lambda v: -v)
    Tagged()(3)


backends = ["profile"] + (["monitoring"] if _tracer.HAVE_MONITORING else [])
tag_calls(Tagged)
for backend in backends:
    loop = asyncio.new_event_loop()
    with Profiler(backend=backend, async_tasks=True) as prof:
        waiting = loop.run_until_complete(tasks(10))
        work()
        threads = [threading.Thread(target=work, name=f"worker-{i}") for i in range(2)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
    waiting.cancel()
    loop.close()
    profile = prof.profile
    assert profile.find("fib"), backend
    assert [t for t in profile.threads if t.task], backend
    for fmt, ext in (
        ("chrome", "json"),
        ("speedscope", "speedscope.json"),
        ("gecko", "gecko.json"),
        ("pstats", "prof"),
        ("text", "txt"),
        ("svg", "svg"),
        ("collapsed", "folded"),
        ("html", "html"),
    ):
        profile.export(os.path.join(out_dir, f"{backend}.{ext}"), format=fmt)
    try:  # its errors leave nothing behind either
        profile._tracer.write_gecko_samples(print, len(profile.threads))
    except IndexError:
        pass
    else:
        raise AssertionError("write_gecko_samples took an index past the threads")

    def refuse(chunk):
        raise OSError("disk full")

    try:
        profile._tracer.write_gecko_samples(refuse, 0)
    except OSError:
        pass
    else:
        raise AssertionError("write_gecko_samples hid its writer's error")
    # the merged paths' writer: its bad arguments and its writer's error leave nothing either
    threads = [(0, 0, b"", b"")] * len(profile.threads)
    for args in ((refuse, 2, threads, [b"x"], 0), (print, 0, threads[1:], [b"x"], 0), (print, 0, threads, [1], 0)):
        try:
            profile._tracer.write_folded(*args)
        except (OSError, ValueError, TypeError):
            pass
        else:
            raise AssertionError(f"write_folded took {args[1:]}")
    del prof, profile
untag_calls(Tagged)

# a profiler refused while another records, and one dropped without stop()
with Profiler() as outer:
    inner = Profiler()
    try:
        import warnings

        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            inner.start()
    finally:
        inner.stop() if inner.recording else None
    fib(5)
left = Profiler().start()
fib(5)
left.stop()

# the SIGTERM guard of followed children (csrc/sigterm.c): chained to CPython's handler,
# re-delivered by its timer until the Python handler says it began, then taken off
terms = []


def on_term(signum, frame):
    terms.append(signum)
    if len(terms) == 2:
        _tracer.sigterm_seen()


signal.signal(signal.SIGTERM, on_term)
guarded = _tracer.sigterm_guard(True)
assert guarded or not sys.platform.startswith("linux"), "the guard is Linux's"
if guarded:
    os.kill(os.getpid(), signal.SIGTERM)
    deadline = time.monotonic() + 60
    while len(terms) < 2 and time.monotonic() < deadline:
        time.sleep(0.01)
    assert terms == [signal.SIGTERM] * 2, terms
    assert _tracer.sigterm_guard(False) is False
signal.signal(signal.SIGTERM, signal.SIG_DFL)
print("workload done")
