"""Argument passing: defaults, keyword-only, positional-only, star-args, recursion."""
from ._registry import case


def _helper(a, b=10, *rest, c=5, **kw):
    return a, b, rest, c, sorted(kw.items())


@case(1)
@case(1, 2, 3, 4, c=9, z=0)
def star_args(a, *args, **kwargs):
    return a, args, sorted(kwargs.items())


@case(1, 2)
@case(1, 2, c=3)
def keyword_only(a, b, *, c=0, d=1):
    return a + b + c + d


@case(1, 2)
@case(1, b=2)
def positional_only(a, /, b):
    return a - b


@case(5)
def defaults_evaluated_once(n, acc=[]):
    acc.append(n)
    return list(acc)


@case()
def calling_helper():
    return _helper(1), _helper(1, 2, 3, c=4, x=5), _helper(*[7, 8], **{"c": 0, "q": 1})


@case(10)
@case(0)
def recursion(n):
    return 1 if n <= 1 else n * recursion(n - 1)


@case(20)
def mutual_recursion(n):
    def even(k):
        return True if k == 0 else odd(k - 1)

    def odd(k):
        return False if k == 0 else even(k - 1)
    return even(n), odd(n)


@case([1, 2, 3], {"sep": "-"})
def unpack_into_call(items, opts):
    return "".join(map(str, items)), _helper(*items, **opts)


@case(3)
def lambda_defaults(n):
    fs = [lambda x, i=i: x + i for i in range(n)]
    return [f(10) for f in fs]


@case(1, 2, 3)
def many_locals(a, b, c):
    d = a + b
    e = d * c
    f = e - a
    g = f // 2
    h = g ** 2
    i = h % 7
    return a, b, c, d, e, f, g, h, i


@case(4)
def kwargs_nonidentifier(n):
    return _helper(n, **{"not an identifier": 1, "ok": 2})


@case(2)
def call_errors(n):
    out = []
    for args in [(), (1, 2, 3, 4)]:
        try:
            keyword_only(*args)
        except TypeError:
            out.append("TypeError")
    return out, n


@case("x")
def default_none(value, cache=None):
    if cache is None:
        cache = {}
    cache[value] = len(cache)
    return cache


@case(3, 4)
def nested_calls(a, b):
    return max(min(a, b), abs(a - b)), sum(map(abs, [a, -b])), len(str(pow(a, b)))


@case(6)
def method_calls(n):
    parts = []
    parts.append(str(n))
    parts.extend(["a", "b"])
    return ",".join(parts).upper().split(","), "{}-{}".format(n, n + 1)
