"""Functions recorded on one CPython and replayed on another (test_records_crossversion.py).

Syntax and behaviour shared by 3.9-3.15; imported by every interpreter of the matrix.
"""

import math

OFFSET = 7


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
    ]
