"""Deep recursion through shadow frames ends in RecursionError, never a crash.

Each case runs in a child process: a crash there is a signal exit code, not a dead test
run. The recursion limit is raised far past what the C stack holds (as recursive user
code and some test suites do), so the stack, not the limit, is what runs out."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

HERE = Path(__file__).resolve().parent

CHILD = """
import sys, threading
sys.path.insert(0, {here!r})
import framehook.runtime as rt
from passthrough import PassThrough

limit, stack, big = {limit}, {stack}, {big}
deepest = 0

def down(n, *rest, key=0, **kw):
    global deepest
    deepest = n
    return down(n + 1, *rest, key=key, **kw)

def callback(frame, cache_entry, frame_state):
    if big and frame.f_code is down.__code__:
        # a replacement needing a much larger frame: at data-stack chunk ends it cannot
        # grow in place and runs as a call (3.11+), the deeper C path
        body = "".join(f"    v{{i}} = {{i}}\\n" for i in range(300))
        ns = {{}}
        exec(f"def down(n, *rest, key=0, **kw):\\n{{body}}    global deepest\\n    deepest = n\\n"
             f"    return down(n + 1, *rest, key=key, **kw)\\n", globals(), ns)
        return rt.GuardedCode(ns["down"].__code__, lambda f_locals: True)
    return PassThrough()(frame, cache_entry, frame_state)

def run():
    with rt.enable(callback):
        try:
            down(1, 2, key=3, extra=4)
        except RecursionError:
            print("RecursionError", deepest > 100)
    # the thread carries on normally afterwards
    with rt.enable(PassThrough()):
        print("after", sum(map(abs, [-1, -2])))

sys.setrecursionlimit(limit)
if stack:
    threading.stack_size(stack)
    t = threading.Thread(target=run)
    t.start()
    t.join()
else:
    run()
print("exit", rt.get_eval_frame())
"""


@pytest.mark.parametrize("limit", [15_000, 100_000])
@pytest.mark.parametrize("stack", [0, 1024 * 1024], ids=["main-thread", "1MiB-thread"])
@pytest.mark.parametrize("big", [False, True], ids=["same-size", "larger-replacement"])
def test_deep_recursion_in_shadow_frames_raises_recursion_error(limit, stack, big):
    script = CHILD.format(here=str(HERE), limit=limit, stack=stack, big=big)
    out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, (out.returncode, out.stderr[-2000:])
    assert out.stdout.split() == ["RecursionError", "True", "after", "3", "exit", "None"], out.stdout


# Deep recursion of every kind of frame with the hook installed: generators (resumed by a for
# loop), `yield from` chains, coroutines driven with .send(None) and plain functions. Frames of
# generators and coroutines are never intercepted, but with the hook installed each of them is
# still evaluated through it (3.11+ stop inlining such calls), a C frame of the evaluator per
# level. With the recursion limit far above what the stack holds, the C stack runs out first:
# that must be a RecursionError on every version, in the main thread and in threads down to
# 256 KiB of stack -- also on 3.9 and 3.11, where plain CPython crashes there.
KINDS_CHILD = """
import sys, threading
sys.path.insert(0, {here!r})
import framehook.runtime as rt
from passthrough import PassThrough

kind, stack = {kind!r}, {stack}
deepest = 0

def generator(n):
    global deepest
    deepest = n
    for item in generator(n + 1):
        yield item

def delegating(n):
    global deepest
    deepest = n
    yield from delegating(n + 1)

async def coroutine(n):
    global deepest
    deepest = n
    await coroutine(n + 1)

def plain(n):
    global deepest
    deepest = n
    return plain(n + 1)

def start(kind):
    if kind == "generator":
        return list(generator(0))
    if kind == "yield-from":
        return list(delegating(0))
    if kind == "coroutine":
        return coroutine(0).send(None)
    return plain(0)

def run():
    global deepest
    with rt.enable(PassThrough()):
        try:
            start(kind)
        except RecursionError:
            print("RecursionError", deepest > 100)
        else:
            print("no error")
    # the thread carries on normally afterwards, also deep again
    deepest = 0
    with rt.enable(PassThrough()):
        print("after", sum(map(abs, [-1, -2])), list(delegating.__code__.co_varnames))
        try:
            start(kind)
        except RecursionError:
            print("again", deepest > 100)
    sys.stdout.flush()

sys.setrecursionlimit(100_000)
if stack:
    threading.stack_size(stack)
    t = threading.Thread(target=run)
    t.start()
    t.join()
else:
    run()
print("exit", rt.get_eval_frame(), rt.eval_frame_installed())
"""
KINDS = ["generator", "yield-from", "coroutine", "plain"]
EXPECTED = ["RecursionError", "True", "after", "3", "['n']", "again", "True", "exit", "None", "False"]


def run_child(script, preexec_fn=None):
    return subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, timeout=300, preexec_fn=preexec_fn
    )


def assert_raised_recursion_error(out):
    # a crash is a signal exit (negative return code), a failed child a traceback on stderr
    assert out.returncode == 0, (out.returncode, out.stdout[-500:], out.stderr[-2000:])
    assert out.stdout.split() == EXPECTED, (out.stdout, out.stderr[-2000:])


@pytest.mark.parametrize(
    "stack",
    [0, 256 * 1024, 1024 * 1024, 2 * 1024 * 1024],
    ids=["main-thread", "256KiB-thread", "1MiB-thread", "2MiB-thread"],
)
@pytest.mark.parametrize("kind", KINDS)
def test_deep_recursion_of_every_kind_raises_recursion_error(kind, stack):
    assert_raised_recursion_error(run_child(KINDS_CHILD.format(here=str(HERE), kind=kind, stack=stack)))


def _limit_main_thread_stack():
    import resource

    # as `ulimit -s 2048` in a shell: the main thread's stack may grow to 2 MiB
    resource.setrlimit(resource.RLIMIT_STACK, (2 * 1024 * 1024, resource.getrlimit(resource.RLIMIT_STACK)[1]))


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="RLIMIT_STACK sizes the main thread's stack on Linux")
@pytest.mark.parametrize("kind", KINDS)
def test_deep_recursion_with_a_2MiB_main_thread_stack_raises_recursion_error(kind):
    script = KINDS_CHILD.format(here=str(HERE), kind=kind, stack=0)
    assert_raised_recursion_error(run_child(script, preexec_fn=_limit_main_thread_stack))


# Frames refused at the end of the stack may be generator frames being resumed or thrown
# into: the evaluator unwinds them (3.11+: popped, cleared, marked finished), so the thread
# goes on normally. The refusal point moves with the stack already in use (pre(k) adds C
# frames), so across the runs some refusals fall on next() and throw() of a generator.
THROW_CHILD = """
import sys, threading
sys.path.insert(0, {here!r})
import framehook.runtime as rt
from passthrough import PassThrough

refused = {{"next": 0, "throw": 0, "plain": 0}}

def gen():
    try:
        yield 1
    except KeyError:
        yield 2

def step(what, fn):
    try:
        return fn()
    except RecursionError:
        refused[what] += 1
        raise

def f(n):
    g = gen()
    step("next", lambda: next(g))
    step("throw", lambda: g.throw(KeyError))
    h = gen()
    next(h)
    h.close()
    return step("plain", lambda: f(n + 1))

def once():
    with rt.enable(PassThrough()):
        try:
            f(0)
        except RecursionError:
            pass
    g = gen()  # generators work normally afterwards
    assert (next(g), g.throw(KeyError)) == (1, 2)
    g.close()

def pre(k):
    return once() if k == 0 else list(map(pre, [k - 1]))

def run():
    for k in range(60):
        pre(k)
    print("runs", sum(refused.values()) >= 60)

sys.setrecursionlimit(100_000)
threading.stack_size(256 * 1024)
t = threading.Thread(target=run)
t.start()
t.join()
print("exit", rt.get_eval_frame(), rt.eval_frame_installed())
"""


def test_refused_generator_resumes_and_throws_leave_the_thread_usable():
    out = run_child(THROW_CHILD.format(here=str(HERE)))
    assert out.returncode == 0, (out.returncode, out.stdout[-500:], out.stderr[-2000:])
    assert out.stdout.split() == ["runs", "True", "exit", "None", "False"], (out.stdout, out.stderr[-2000:])
