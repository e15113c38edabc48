"""Closures and cells: argument cells, nonlocal, late binding, empty cells, recursion through cells."""
from ._registry import case


def _make_counter(start):
    count = start

    def bump(step=1):
        nonlocal count
        count += step
        return count
    return bump


_COUNTER = _make_counter(100)


def _make_adder(k):
    return lambda x: x + k


_ADD5 = _make_adder(5)


@case(1)
def argument_cell(a):
    def read():
        return a
    a = a + 1           # the argument lives in a cell (MAKE_CELL / COPY_FREE_VARS in 3.11+)
    return read()


@case(3)
def nonlocal_counter(n):
    total = 0

    def add(x):
        nonlocal total
        total += x
    for i in range(n):
        add(i)
    return total


@case(3)
def late_binding(n):
    fs = []
    for i in range(n):
        fs.append(lambda: i)
    return [f() for f in fs]


@case(4)
def early_binding(n):
    return [(lambda i=i: i * i)() for i in range(n)]


@case(2)
def returns_closure(n):
    base = n * 10

    def inner(x):
        return base + x
    return inner


@case(7)
def closure_value_called(x):
    return _ADD5(x), _ADD5(_ADD5(x))


@case(2)
def stateful_closure_global(n):
    return [_COUNTER(n) for _ in range(3)]


@case(5)
def nested_three_levels(n):
    def outer():
        def middle():
            def inner():
                return n * 2
            return inner()
        return middle()
    return outer()


@case(6)
def deleted_cell(n):
    x = n

    def get():
        return x
    first = get()
    del x
    try:
        get()
    except NameError:
        return first, "unbound"
    return first, "bound"


@case(5)
def recursive_inner(n):
    def fib(k):
        return k if k < 2 else fib(k - 1) + fib(k - 2)
    return fib(n)


@case(3)
def cell_shared_by_two(n):
    value = [n]

    def push(x):
        value.append(x)

    def total():
        return sum(value)
    push(4)
    push(5)
    return total(), value


@case(2)
def closure_over_loop_var_after_loop(n):
    for i in range(n + 3):
        pass

    def f():
        return i
    return f()


@case(10)
def closure_in_class_method(n):
    class Box:
        def get(self):
            return n
    return Box().get()


@case(1, 2)
def closure_over_args_and_kwargs(*args, **kwargs):
    def show():
        return args, sorted(kwargs)
    return show()


@case(3)
def free_var_modified_after_def(n):
    def peek():
        return v
    v = n
    a = peek()
    v = n * 2
    return a, peek()


def _outer_with_cell(x):
    y = x * 3

    def g():
        return y
    return g


_WITH_CELL = _outer_with_cell(4)


@case()
def closure_global_function():
    return _WITH_CELL()


@case(4)
def closure_counter_factory(n):
    c = _make_counter(n)
    return c(), c(2), c(3)


@case(2)
def lambda_chain(n):
    f = lambda x: lambda y: lambda z: x + y + z  # noqa: E731
    return f(n)(n + 1)(n + 2)


@case(3)
def global_and_nonlocal_mix(n):
    result = []

    def outer():
        x = n

        def inner():
            nonlocal x
            x += 1
            result.append(x)
        inner()
        inner()
        return x
    return outer(), result


@case(5)
def empty_cell_closure(n):
    def later():
        return unset
    out = []
    try:
        later()
    except NameError:
        out.append("NameError")
    unset = n
    out.append(later())
    return out
