"""Arithmetic, literals and simple data operations."""
from ._registry import case

SCALE = 7
TABLE = {"a": 1, "b": 2}


@case(3, 4)
@case(-10, 3)
@case(2**70, 3)
def int_ops(a, b):
    return a + b, a - b, a * b, a // b, a % b, -a, abs(a), a ** 2, a << 3, a >> 1, a & b, a | b, a ^ b


@case(1.5, 0.25)
@case(-2.0, 8.0)
def float_ops(a, b):
    return a + b, a * b, a / b, a // b, a % b, round(a, 1), float("inf") > a, a == b


@case(1 + 2j, 3 - 1j)
def complex_ops(a, b):
    return a + b, a * b, a.conjugate(), a.real, b.imag


@case("hello", "World")
@case("", "x")
def str_ops(a, b):
    return a + b, a.upper(), b.lower(), (a * 2)[1:4], a.find("l"), b.startswith("W"), len(a + b)


@case(b"abc", bytearray(b"xy"))
def bytes_ops(a, b):
    b.extend(a)
    return a + bytes(b), a[1:], a.hex(), bytes(reversed(a)), len(b)


@case([3, 1, 2])
@case([])
def list_ops(xs):
    ys = sorted(xs)
    xs.append(9)
    ys.insert(0, -1)
    return ys, xs[::-1], xs.count(9), len(xs)


@case({"x": 1, "y": 2})
def dict_ops(d):
    d["z"] = 3
    e = dict(d)
    del e["x"]
    return sorted(d.items()), e, d.get("q", 0), d.pop("y"), list(d)


@case({1, 2, 3}, frozenset({3, 4}))
def set_ops(s, f):
    s.add(10)
    return s | f, s & f, s - f, s ^ f, 3 in s, frozenset(s) == s


@case((1, 2, 3))
def tuple_ops(t):
    a, b, c = t
    return (c, b, a), t + (4,), t.index(2), t * 2, (1, 2) < t


@case(5)
def uses_globals(n):
    return n * SCALE + TABLE["b"]


@case(10)
@case(0)
def truthiness(n):
    return bool(n), not n, n and "yes", n or "no", [] or {} or None


@case(12345678901234567890, 987654321)
def bigint(a, b):
    return a * b, a // b, pow(a, 3, 1000), divmod(a, b), str(a)[::-1]


@case(None)
def none_and_identity(x):
    y = x
    return x is None, y is x, x == None, type(x).__name__  # noqa: E711


@case(0.1, 0.2)
def float_repr(a, b):
    return repr(a + b), (a + b).hex(), float.fromhex("0x1.8p1"), float("nan") != float("nan")


@case(7)
@case(-3)
def chained_compare(x):
    return 0 < x < 10, -5 <= x <= 0, x == 7 != 8, x > 1 > -1


@case(255)
def formatting_builtins(n):
    return hex(n), oct(n), bin(n), format(n, "08b"), chr(65 + n % 26), ord("a")


@case("a,b,,c")
def string_split_join(s):
    parts = s.split(",")
    return parts, "-".join(parts), s.rsplit(",", 1), s.partition(","), s.replace(",", ";")


@case([5, 3, 8, 1])
def slicing(xs):
    ys = list(xs)
    ys[1:3] = [0, 0, 0]
    del ys[0]
    return xs[1:], xs[:-1], xs[::2], ys, xs[-1]


@case(3)
def augmented(n):
    x = [1, 2]
    x += [n]
    y = n
    y **= 3
    y //= 2
    s = "a"
    s *= n
    d = {"k": 1}
    d["k"] += n
    return x, y, s, d


@case("abc")
def unicode_text(s):
    t = s + "é€😀"
    return t, len(t), t.encode("utf-8"), t.casefold(), ascii(t)
