"""Comprehensions: inlined into the enclosing frame from 3.12 (PEP 709), own frames before."""
from ._registry import case


@case(4)
def list_comp(n):
    return [i * i for i in range(n) if i % 2 == 0]


@case(3)
def dict_set_comp(n):
    return {i: str(i) for i in range(n)}, {i % 2 for i in range(n)}


@case(3)
def nested_comp(n):
    return [[i * j for j in range(n)] for i in range(n)]


@case(3)
def comp_shadows_outer_name(n):
    i = "outer"
    xs = [i for i in range(n)]
    return i, xs


@case(3)
def comp_lambda_capture(n):
    fs = [lambda: i for i in range(n)]
    return [f() for f in fs]


@case(4)
def comp_closure_over_outer(n):
    k = n * 10
    return [k + i for i in range(3)]


@case(5)
def comp_walrus_leaks(n):
    ys = [(last := i) for i in range(n)]
    return ys, last


@case(3)
def comp_in_class_body(n):
    class K:
        base = n
        items = [i for i in range(3)]       # the iterable is evaluated in class scope
        try:
            bad = [base for _ in range(2)]  # class names are not visible inside
        except NameError:
            bad = "NameError"
    return K.items, K.bad


@case(3)
def comp_multiple_for(n):
    return [(a, b) for a in range(n) for b in range(a)]


@case(2)
def comp_with_cell_in_loop(n):
    out = []
    for j in range(n):
        out.append([lambda: j + i for i in range(2)])
    return [[f() for f in row] for row in out]


@case(4)
def genexpr_not_inlined(n):
    g = (i for i in range(n))
    return type(g).__name__, sum(g)


@case(3)
def comp_exception_inside(n):
    try:
        return [10 // (i - 1) for i in range(n)]
    except ZeroDivisionError:
        return "ZeroDivisionError"


@case(3)
def comp_uses_argument_cell(n):
    def get():
        return n
    return [get() + i for i in range(n)]


@case(3)
def comp_over_dict_items(n):
    d = {str(i): i for i in range(n)}
    return {v: k for k, v in d.items()}, [k for k in d if d[k] > 0]


@case(4)
def comp_nested_scopes(n):
    return [[(x, y) for y in range(x) if y % 2 == 0] for x in range(n) if x > 1]


@case(3)
def comp_iteration_var_unbound_after(n):
    [q for q in range(n)]
    try:
        return q  # noqa: F821
    except NameError:
        return "unbound"


@case(3)
def comp_mutates_outer(n):
    acc = []
    [acc.append(i) for i in range(n)]
    return acc


@case(2)
def comp_conditional_expression(n):
    return ["even" if i % 2 == 0 else "odd" for i in range(n + 3)]


@case(3)
def set_comp_of_tuples(n):
    return sorted({(i % 2, i % 3) for i in range(n * 4)})


@case(3)
def comp_with_locals_after(n):
    a = 1
    _ = [a for _ in range(n)]
    b = 2
    return a + b, len(_)


@case(3)
def comp_in_nested_function(n):
    def inner(m):
        return [x * m for x in range(n)]
    return inner(2)


@case(4)
def dict_comp_key_collisions(n):
    return {i % 2: i for i in range(n)}


@case(3)
def comprehension_with_star(n):
    pairs = [(i, i + 1) for i in range(n)]
    return [[*p, *p] for p in pairs]
