"""The interpreter and stdlib work a first call does, timed alone, to compare CPython versions.

    python packages/translator/benchmarks/bench_stdlib_floor.py

Prints one JSON line: microseconds per operation (median of 15 timeit repeats) for a plain
Python loop, Python calls, ``dis.get_instructions`` (the translator's decoder reads it),
``compile()`` of a generated function (graph code generation) and numpy's ``as_strided``
(the tracer's fake arrays). Run it on several interpreters in turn, round after round
(BENCHMARKS.md, "3.14 and 3.15: first call").
"""

from __future__ import annotations

import dis
import json
import statistics
import sys
import timeit
from typing import Any, Callable, Dict

import numpy as np
from numpy.lib.stride_tricks import as_strided


def _kernel(x, w, b):
    y = x @ w + b
    m = y.max(axis=1, keepdims=True)
    e = np.exp(y - m)
    s = e.sum(axis=1, keepdims=True)
    out = e / s
    for _ in range(3):
        out = out * 0.5 + 0.25
    return out.mean(), out.std()


_SOURCE = "\n".join(["def graph(a, b, c):"] + [f"    t{i} = a * {i} + b - c" for i in range(40)] + ["    return t39"])


def _loop() -> int:
    total = 0
    for i in range(1000):
        total += i & 7
    return total


def _calls() -> None:
    def pair(a: Any, b: Any) -> Any:
        return a, b

    for i in range(300):
        pair(i, i)


def main() -> None:
    x = np.ones((4, 4))
    work: Dict[str, Callable[[], Any]] = {
        "pure-Python loop, 1000 iterations": _loop,
        "300 Python calls": _calls,
        "list(dis.get_instructions(fn)), 12-line numpy function": lambda: list(dis.get_instructions(_kernel)),
        "compile() of a 40-line function source": lambda: compile(_SOURCE, "<graph>", "exec"),
        "numpy as_strided (4x4)": lambda: as_strided(x, (4, 4), (32, 8)),
    }
    result: Dict[str, Any] = {"python": sys.version.split()[0]}
    for name, fn in work.items():
        timer = timeit.Timer(fn)
        number = max(1, int(0.02 / max(min(timer.repeat(3, 1)), 1e-9)))
        result[name] = round(statistics.median(timer.repeat(15, number)) / number * 1e6, 2)
    print(json.dumps(result))


if __name__ == "__main__":
    main()
