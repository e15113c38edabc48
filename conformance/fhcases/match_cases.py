"""Structural pattern matching (3.10+)."""
import collections

from ._registry import case

MIN_VERSION = (3, 10)
Point = collections.namedtuple("Point", "x y")


class Color:
    RED = "red"
    BLUE = "blue"


@case(0)
@case(1)
@case(42)
def literal_patterns(v):
    match v:
        case 0:
            return "zero"
        case 1 | 2:
            return "small"
        case _:
            return "other"


@case([1, 2, 3])
@case([1])
@case([])
def sequence_patterns(seq):
    match seq:
        case []:
            return "empty"
        case [x]:
            return ("one", x)
        case [x, *rest]:
            return ("many", x, rest)


@case({"type": "move", "x": 1, "y": 2})
@case({"type": "stop"})
@case({"kind": 1})
def mapping_patterns(msg):
    match msg:
        case {"type": "move", "x": x, **rest}:
            return ("move", x, rest)
        case {"type": "stop"}:
            return "stop"
        case _:
            return "unknown"


@case(Point(0, 5))
@case(Point(3, 3))
@case(Point(1, 2))
def class_patterns(p):
    match p:
        case Point(x=0, y=y):
            return ("on y axis", y)
        case Point(x, y) if x == y:
            return ("diagonal", x)
        case Point():
            return "somewhere"


@case("red")
@case("green")
def value_patterns(c):
    match c:
        case Color.RED:
            return "is red"
        case Color.BLUE:
            return "is blue"
        case other:
            return ("capture", other)


@case((1, (2, 3)))
@case((1, 5))
def nested_as_patterns(v):
    match v:
        case (a, (b, c) as inner):
            return a, b, c, inner
        case (a, b):
            return a, b


@case(3.0)
@case("s")
@case(7)
def type_patterns(v):
    match v:
        case int(n):
            return ("int", n)
        case float() | complex():
            return "number"
        case str() as s:
            return ("str", s)


@case([1, 2, 3, 4])
def match_in_loop(xs):
    out = []
    for x in xs:
        match x % 3:
            case 0:
                out.append("fizz")
            case r if r == 1:
                out.append(("one", x))
            case _:
                out.append(x)
    return out


@case({"a": [1, {"b": 2}]})
def deep_pattern(d):
    match d:
        case {"a": [1, {"b": int(b)}]}:
            return b
    return None
