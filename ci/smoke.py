"""Smoke test of installed framehook wheels: each package imports and does its main job once.

Run with the interpreter of a venv that holds the wheels (and numpy), from a directory
outside the repository so that nothing is imported from the source trees:

    /path/to/venv/bin/python ci/smoke.py

Prints one line per package and exits non-zero on the first failure.
"""

from __future__ import annotations

import os
import sys
import tempfile


def runtime() -> str:
    import framehook.runtime as rt

    def area(w, h):
        return w * h

    def callback(frame, cache_entry, frame_state):
        if frame.f_code is not area.__code__:
            return None
        return rt.GuardedCode(frame.f_code, lambda f_locals: True)

    with rt.enable(callback):
        got = [area(2, 3), area(4, 5)]
    assert got == [6, 20], got
    return f"framehook-runtime {rt.__version__}: hook installed, guarded code ran"


def translator() -> str:
    import numpy as np
    import framehook.translator as ft

    def kernel(x, y):
        return (x * 2 + y).sum()

    x, y = np.arange(5.0), np.ones(5)
    out = ft.explain(kernel)(x, y)
    assert out.graph_count == 1 and out.graph_break_count == 0, str(out)
    fast = ft.optimize("eager")(kernel)
    assert fast(x, y) == kernel(x, y)
    return f"framehook-translator {ft.__version__}: 1 graph, same result as plain"


def profiler() -> str:
    import framehook.profiler as fp

    def fib(n):
        return n if n < 2 else fib(n - 1) + fib(n - 2)

    with fp.Profiler() as prof:
        fib(10)
    # named by qualified name where the code object has one (3.11+), else by its name
    calls = max(len(prof.profile.find(name)) for name in ("profiler.<locals>.fib", "fib"))
    assert calls == 177, calls  # fib(10) makes 177 calls of fib
    return f"framehook-profiler {fp.__version__}: fib(10) counted {calls} calls"


def records() -> str:
    from importlib.metadata import version
    import framehook.records as fr

    def halve(values):
        return [v / 2 for v in values]

    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "halve.fhrec")
        fr.record(halve, [1, 2, 3], path=path)
        result = fr.replay(path)
    assert result.ok, result.summary()
    modes = ", ".join(f"{m.mode} {m.status}" for m in result.modes)
    return f"framehook-records {version('framehook-records')}: record replayed ({modes})"


CHECKS = {"runtime": runtime, "translator": translator, "profiler": profiler, "records": records}


def main(argv: list[str]) -> int:
    names = argv or list(CHECKS)
    for name in names:
        try:
            print(f"[smoke] {CHECKS[name]()}", flush=True)
        except Exception as exc:  # report which package failed and how
            print(f"[smoke] {name}: FAILED: {type(exc).__name__}: {exc}", flush=True)
            return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
