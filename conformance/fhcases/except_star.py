"""Exception groups and except* (3.11+)."""
from ._registry import case

MIN_VERSION = (3, 11)


@case(2)
def except_star_split(n):
    caught = []
    try:
        raise ExceptionGroup("g", [ValueError(n), KeyError(n), ValueError(n + 1)])
    except* ValueError as eg:
        caught.append(("value", [e.args for e in eg.exceptions]))
    except* KeyError as eg:
        caught.append(("key", len(eg.exceptions)))
    return caught


@case(1)
def except_star_unhandled(n):
    try:
        try:
            raise ExceptionGroup("outer", [TypeError(n), IndexError(n)])
        except* TypeError:
            pass
    except ExceptionGroup as rest:
        return [type(e).__name__ for e in rest.exceptions]


@case(3)
def exception_group_nesting(n):
    inner = ExceptionGroup("inner", [ValueError(i) for i in range(n)])
    outer = ExceptionGroup("outer", [inner, KeyError("k")])
    match_, rest = outer.split(ValueError)
    return len(match_.exceptions[0].exceptions), type(rest.exceptions[0]).__name__


@case(2)
def add_note(n):
    try:
        e = ValueError(n)
        e.add_note("context")
        raise e
    except ValueError as err:
        return err.__notes__, err.args
