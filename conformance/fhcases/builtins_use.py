"""Builtins and standard library values crossing the frame boundary."""
from ._registry import case


@case([5, 2, 9, 1])
def sorting(xs):
    return sorted(xs), sorted(xs, reverse=True), sorted(xs, key=lambda x: -x), min(xs), max(xs)


@case([1, 2, 3])
def functional(xs):
    return list(map(str, xs)), list(filter(None, [0, *xs])), list(zip(xs, xs[1:])), list(reversed(xs))


@case("abc")
def iter_builtins(s):
    return list(enumerate(s, 1)), any(c == "b" for c in s), all(s), "".join(sorted(s, reverse=True))


@case(17, 5)
def numeric_builtins(a, b):
    return divmod(a, b), pow(a, b, 7), round(a / b, 3), abs(-a), int("ff", 16), float("1e3")


@case(3)
def isinstance_checks(n):
    return [isinstance(x, (int, str)) for x in (n, "s", 1.0, None)], issubclass(bool, int), callable(len)


@case(2)
def getattr_setattr(n):
    class O:
        pass
    o = O()
    setattr(o, "a", n)
    return getattr(o, "a"), getattr(o, "b", "default"), hasattr(o, "a")


@case(3)
def range_slice_objects(n):
    return range(n), slice(1, n), range(0, 10, n)[1:]


@case(1, 3)
def fractions_decimals(a, b):
    from decimal import Decimal
    from fractions import Fraction
    return Fraction(a, b) * 3, Fraction(a, b) + Fraction(1, 6), Decimal("0.1") + Decimal("0.2")


@case(4)
def collections_values(n):
    import collections
    d = collections.OrderedDict([("b", 1), ("a", 2)])
    q = collections.deque(range(n), maxlen=3)
    c = collections.defaultdict(list)
    c["x"].append(n)
    return d, q, c


@case(3)
def datetime_values(n):
    import datetime
    d = datetime.date(2024, 2, 28) + datetime.timedelta(days=n)
    return d, datetime.timedelta(hours=n), datetime.datetime(2020, 1, 1, n, 30)


@case(2)
def returns_builtin_objects(n):
    import math
    return len, math.sqrt, math, int, ValueError, n


@case(5)
def string_methods(n):
    s = "  Hello World  "
    return s.strip(), s.title(), s.count("l"), s.center(n + 20, "*"), s.split(), s.zfill(n)


@case([3, 3, 1, 2, 2, 2])
def counting(xs):
    import collections
    c = collections.Counter(xs)
    return c.most_common(2), sorted(c.elements()), dict(c)


@case(4)
def itertools_use(n):
    import itertools
    return (list(itertools.islice(itertools.count(n), 3)), list(itertools.chain([1], [2])),
            list(itertools.product("ab", repeat=2)), list(itertools.accumulate(range(n))))


@case(3)
def functools_use(n):
    import functools
    add = functools.partial(lambda a, b: a + b, n)
    return functools.reduce(lambda a, b: a * b, range(1, n + 2)), add(4)


@case(16)
def math_functions(n):
    import math
    return math.sqrt(n), math.gcd(n, 12), math.isqrt(n + 1), math.floor(-1.5), math.pi > 3


@case(2)
def simple_namespace_value(n):
    import types
    return types.SimpleNamespace(a=n, b=[n])


@case(3)
def bytes_and_bytearray_roundtrip(n):
    b = bytes(range(n))
    ba = bytearray(b)
    ba.append(255)
    return b, ba, memoryview(b).tolist()


@case(5)
def nan_and_inf(n):
    x = float("nan")
    return x, float("inf"), -float("inf"), n / 2, 1e308 * 10
