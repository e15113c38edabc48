"""Control flow: loops with else, break/continue, conditionals, del, global, boolean logic."""
from ._registry import case

COUNTER = [0]
LIMIT = 3


@case(10)
@case(4)
def for_else(n):
    for i in range(2, n):
        if n % i == 0:
            return "composite", i
    else:
        return "prime", n


@case(5)
def while_else(n):
    i = 0
    while i < n:
        i += 2
        if i == 100:
            break
    else:
        i = -i
    return i


@case(6)
def nested_break_continue(n):
    out = []
    for i in range(n):
        if i == 1:
            continue
        for j in range(n):
            if j > i:
                break
            if (i + j) % 3 == 0:
                continue
            out.append((i, j))
    return out


@case(3)
def global_statement(n):
    global LIMIT
    old = LIMIT
    LIMIT = n * 10
    return old, LIMIT


@case(2)
def mutate_global_container(n):
    COUNTER.append(n)
    return list(COUNTER)


@case(4)
def del_statements(n):
    a = n
    b = [1, 2, 3, 4]
    d = {"x": 1, "y": 2}
    del b[1:3]
    del d["x"]
    del a
    try:
        a  # noqa: F821
    except UnboundLocalError:
        state = "unbound"
    return b, d, state


@case(0)
@case(1)
@case(2)
def if_elif_else(n):
    if n == 0:
        return "zero"
    elif n == 1:
        return "one"
    else:
        return "many"


@case(5)
def ternary_chain(n):
    return "big" if n > 10 else "mid" if n > 3 else "small"


@case([0, "", None, 3, "x"])
def short_circuit(values):
    calls = []

    def probe(v):
        calls.append(v)
        return v
    res = [probe(v) and probe("t") or probe("f") for v in values]
    return res, calls


@case(8)
def loop_with_try_continue(n):
    out = []
    for i in range(n):
        try:
            if i % 3 == 0:
                continue
            out.append(i)
        finally:
            out.append(-1)
    return out


@case(3)
def range_forms(n):
    return list(range(n)), list(range(1, 10, n)), list(range(10, 0, -n)), range(n)[-1]


@case(6)
def infinite_loop_with_break(n):
    i = 0
    while True:
        i += 1
        if i * i > n:
            break
    return i


@case(3)
def enumerate_zip_loops(n):
    out = []
    for i, (a, b) in enumerate(zip("abc", range(n, n + 3))):
        out.append(f"{i}{a}{b}")
    return out


@case(5)
def unbound_local_error(n):
    def f():
        if n > 10:
            x = 1
        return x  # noqa: F821
    try:
        return f()
    except UnboundLocalError:
        return "UnboundLocalError"


@case(4)
def iterator_protocol(n):
    class Count:
        def __init__(self):
            self.i = 0

        def __iter__(self):
            return self

        def __next__(self):
            if self.i >= n:
                raise StopIteration
            self.i += 1
            return self.i
    return list(Count()), sum(Count())


@case(20)
def many_branches(n):
    acc = 0
    for i in range(n):
        if i % 15 == 0:
            acc += 15
        elif i % 5 == 0:
            acc += 5
        elif i % 3 == 0:
            acc += 3
        else:
            acc -= 1
    return acc


@case(3)
def local_import(n):
    import math
    from collections import Counter
    return math.factorial(n), sorted(Counter("abca").items())


@case(2)
def large_function_many_consts(n):
    xs = [1.5, 2.5, "a", "b", b"c", (1, 2), None, True, 10**20, -7, 0.0, -0.0]
    return [x for x in xs if x is not None][n:], str(-0.0)
