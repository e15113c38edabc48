"""A module with syntax newer than 3.9 (``match``) around a function without any: the
function's record must replay on 3.9 too (test_records_crossversion.py)."""

from itertools import islice


def describe(value):
    match value:
        case [first, *_]:
            return f"starts with {first}"
        case _:
            return "other"


def take(iterable, n):
    return list(islice(iterable, n))
