"""f-strings: the parser rewritten in 3.12 (PEP 701); conversions, specs, nesting, '='."""
from ._registry import case


@case("x", 3.14159)
def conversions(s, f):
    return f"{s!r} {s!s} {s!a} {f:.2f} {f:10.3e}"


@case(42)
def specs(n):
    return f"{n:>8}|{n:<8}|{n:^8}|{n:08d}|{n:x}|{n:#o}|{n:,}"


@case(5)
def nested_spec(n):
    width = n + 3
    return f"{'ab':>{width}}|{n:{'0'}{width}d}"


@case("val", 7)
def debug_equals(s, n):
    return f"{s=}", f"{n + 1 = }", f"{n=:04d}"


@case([1, 2, 3])
def expressions_inside(xs):
    return f"{len(xs)} items: {', '.join(str(x) for x in xs)} sum={sum(xs)}"


@case({"k": "v"})
def dict_access_quotes(d):
    return f"{d['k']}-{d.get('q', 'none')}"


@case(3)
def multiline(n):
    return f"""a
{n}
b{'{'}{n}{'}'}"""


@case(2)
def fstring_in_comprehension(n):
    return [f"{i}:{i * n}" for i in range(3)]


@case(10)
def format_builtin_objects(n):
    import datetime
    d = datetime.date(2020, 1, n)
    return f"{d:%Y/%m/%d}", f"{d!r}"


@case(1.5)
def percent_and_format(x):
    return "%s|%5.1f|%r" % ("a", x, "b"), "{0}{1}{0}".format("x", x), f"{x:%}"


@case(0)
def fstring_with_lambda(n):
    return f"{(lambda x: x * 2)(n + 4)}"


@case(3)
def fstring_braces(n):
    return f"{{}}{n}{{{n}}}"
