"""Generators: yields, yield from, send, return values, close, generator expressions."""
from ._registry import case


def _sub(n):
    for i in range(n):
        yield i
    return "sub-done"


@case(3)
@case(0)
def simple_gen(n):
    for i in range(n):
        yield i * i


@case(2)
def gen_return_value(n):
    yield n
    return n * 10


@case(3)
def yield_from(n):
    result = yield from _sub(n)
    yield result


@case(4)
def gen_raises(n):
    yield n
    raise ValueError(n)


@case(3)
def consume_genexpr(n):
    g = (i * 2 for i in range(n))
    return list(g), sum(i for i in range(n)), next(iter([n]))


@case(5)
def send_protocol(n):
    def acc():
        total = 0
        while True:
            x = yield total
            if x is None:
                return total
            total += x
    g = acc()
    next(g)
    for i in range(n):
        g.send(i)
    try:
        g.send(None)
    except StopIteration as stop:
        return stop.value


@case(3)
def gen_close_finally(n):
    log = []

    def g():
        try:
            for i in range(n):
                yield i
        finally:
            log.append("closed")
    it = g()
    first = next(it)
    it.close()
    return first, log


@case(2)
def gen_throw(n):
    def g():
        try:
            yield 1
        except KeyError as e:
            yield ("caught", e.args)
    it = g()
    next(it)
    return it.throw(KeyError(n))


@case(4)
def gen_with_try_in_loop(n):
    for i in range(n):
        try:
            if i % 2:
                raise IndexError(i)
            yield ("ok", i)
        except IndexError as e:
            yield ("err", e.args[0])


@case(3)
def nested_generators(n):
    def inner(k):
        yield from range(k)
    for i in range(n):
        yield list(inner(i))


@case(5)
def gen_state_inspection(n):
    import inspect

    def g():
        yield 1
    it = g()
    states = [inspect.getgeneratorstate(it)]
    next(it)
    states.append(inspect.getgeneratorstate(it))
    list(it)
    states.append(inspect.getgeneratorstate(it))
    return states, n


@case(3)
def gen_closure(n):
    mult = n

    def g():
        for i in range(3):
            yield i * mult
    return list(g())


@case(2)
def yield_in_expression(n):
    x = yield n
    y = yield (x, n)
    return (x, y)


@case(3)
def stopiteration_inside_gen(n):
    def g():
        yield 1
        raise StopIteration  # becomes RuntimeError since 3.7
    try:
        list(g())
    except RuntimeError:
        return "RuntimeError", n


@case([3, 1, 2])
def generator_pipeline(xs):
    evens = (x for x in xs if x % 2 == 0)
    squares = (x * x for x in xs)
    return sorted(squares), list(evens), max((x for x in xs), default=None)


@case(3)
def gen_yield_tuple_star(n):
    rest = list(range(n))
    yield 0, *rest
    yield [*rest, *rest]


@case(2)
def zip_generators(n):
    a = (i for i in range(n + 2))
    b = (chr(97 + i) for i in range(n))
    return list(zip(a, b)), list(a)
