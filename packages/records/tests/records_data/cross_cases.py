"""Functions recorded on one CPython and replayed on another (test_records_crossversion.py).

Syntax and behaviour shared by 3.9-3.15; imported by every interpreter of the matrix.
"""

import functools
import itertools
import math
import operator
import random
import re

OFFSET = 7
_MISSING = object()  # a sentinel: its identity must survive the record
WORD = re.compile(r"[a-z]+")


def scaled(xs, k=2, *, extra=0):
    xs.append(k)
    return [x * OFFSET for x in xs], sum(xs) + extra


def fact(n):
    return 1 if n <= 1 else n * fact(n - 1)


def make_counter(start):
    seen = [start]

    def bump(step):
        seen.append(step)
        return seen[0] + step + len(seen)

    return bump


def countdown(n):
    while n > 0:
        yield n
        n -= 1
    return "liftoff"


def lookup(table, key):
    try:
        return table[key]
    except KeyError:
        raise LookupError(f"no {key!r} among {sorted(table)}")
    finally:
        table["looked"] = key


def geometry(r):
    words = {f"{name}:{value:.3f}" for name, value in (("area", math.pi * r * r), ("side", math.sqrt(r)))}
    return sorted(words), {i: i**2 for i in range(r)}


def pick(table, key, default=_MISSING):
    value = table.get(key, default)
    return "absent" if value is _MISSING else value


def apply_all(items, fn, key):
    return sorted((fn(x) for x in items), key=key)


def first_words(lines, n):
    return [m.group(0) for m in itertools.islice((WORD.search(line) for line in lines), n) if m]


def noisy(n):
    return [random.randint(0, 1000) for _ in range(n)]


def cases():
    """(name, function, args, kwargs), fresh arguments on every call."""
    return [
        ("scaled", scaled, ([1, 2],), {"extra": 5}),
        ("fact", fact, (7,), {}),
        ("counter", make_counter(3), (4,), {}),
        ("countdown", countdown, (3,), {}),
        ("lookup_miss", lookup, ({"a": 1}, "b"), {}),
        ("lookup_hit", lookup, ({"a": 1}, "a"), {}),
        ("geometry", geometry, (4,), {}),
        ("sentinel", pick, ({"a": 1}, "b"), {}),
        ("sentinel_given", pick, ({"a": 1}, "b", _MISSING), {}),
        (
            "lambda_and_getter",
            apply_all,
            ([{"v": 3}, {"v": 1}], lambda d: {"w": d["v"] * OFFSET}),
            {"key": operator.itemgetter("w")},
        ),
        ("partial", apply_all, ([3, 1, 2], functools.partial(operator.mul, 10), abs), {}),
        ("generator_argument", first_words, ((s for s in ["ab 1", "2 cd", "ef"]), 2), {}),
        ("random", noisy, (4,), {}),
    ]
