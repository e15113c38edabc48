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
