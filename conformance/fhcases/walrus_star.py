"""Assignment expressions and starred unpacking."""
from ._registry import case


@case([1, 5, 10, 2])
def walrus_while(xs):
    it = iter(xs)
    out = []
    while (x := next(it, None)) is not None:
        out.append(x)
    return out


@case("12345")
def walrus_if(s):
    if (n := len(s)) > 3:
        return n, "long"
    return n, "short"


@case([1, 2, 3, 4])
def walrus_in_comprehension_filter(xs):
    return [y for x in xs if (y := x * x) > 4]


@case(5)
def walrus_nested_function(n):
    def f():
        return (m := n * 2), m
    return f()


@case([1, 2, 3, 4, 5])
def star_assign(xs):
    a, *b, c = xs
    *d, e = xs
    f, *g = xs[:1]
    return a, b, c, d, e, f, g


@case((1, 2), (3, 4))
def star_build(a, b):
    return [*a, *b], (*a, 0, *b), {*a, *b}, {**{"x": 1}, **{"y": 2}, "z": 3}


@case([3, 1, 2])
def star_call(xs):
    return max(*xs), print.__name__, "".join([*map(str, xs)])


@case([[1, 2], [3, 4]])
def nested_unpack(pairs):
    (a, b), (c, d) = pairs
    for i, (x, y) in enumerate(pairs):
        a += i * x * y
    return a, b, c, d


@case(3)
def star_in_for(n):
    out = []
    for first, *rest in [(1, 2, 3), (4,), (5, 6)]:
        out.append((first, rest))
    return out, n


@case({"a": 1, "b": 2})
def double_star_merge(d):
    merged = {**d, "c": 3, **{"a": 0}}
    return merged, dict(d, extra=True)


@case(4)
def walrus_in_lambda_default(n):
    f = lambda x=(y := n + 1): x * 2  # noqa: E731
    return f(), y


@case([0, 1, 2])
def swap_and_rotate(xs):
    a, b, c = xs
    a, b, c = c, a, b
    xs[0], xs[2] = xs[2], xs[0]
    return a, b, c, xs


@case(2)
def star_return(n):
    rest = [n, n + 1]
    return 0, *rest
