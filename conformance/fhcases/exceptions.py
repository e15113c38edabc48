"""Exception handling: the code paths that moved to exception tables in 3.11."""
from ._registry import case


class AppError(Exception):
    pass


class SubError(AppError):
    pass


@case(1)
@case(0)
def try_except_else_finally(n):
    log = []
    try:
        log.append("try")
        if n:
            raise AppError("bad", n)
    except AppError as e:
        log.append(("except", e.args))
    else:
        log.append("else")
    finally:
        log.append("finally")
    return log


@case(3)
def return_in_finally(n):
    try:
        return "try"
    finally:
        if n > 2:
            return "finally"  # noqa: B012


@case(4)
def break_continue_finally(n):
    log = []
    for i in range(n):
        try:
            if i == 1:
                continue
            if i == 3:
                break
            log.append(i)
        finally:
            log.append(("f", i))
    return log


@case(2)
def nested_try(n):
    log = []
    try:
        try:
            raise KeyError(n)
        except KeyError:
            log.append("inner")
            raise IndexError(n)
        finally:
            log.append("inner-finally")
    except IndexError as e:
        log.append(("outer", type(e.__context__).__name__))
    return log


@case(5)
def raise_from(n):
    try:
        try:
            1 / 0
        except ZeroDivisionError as e:
            raise AppError(n) from e
    except AppError as e:
        return type(e.__cause__).__name__, e.__suppress_context__, e.args


@case(5)
def raise_from_none(n):
    try:
        try:
            {}["x"]
        except KeyError:
            raise SubError(n) from None
    except AppError as e:
        return e.__cause__ is None, e.__suppress_context__, type(e).__name__


@case(7)
def exception_propagates(n):
    raise SubError("propagated", n)


@case(3)
def reraise_bare(n):
    try:
        try:
            raise AppError(n)
        except AppError:
            raise
    except AppError as e:
        return e.args


@case(2)
def except_tuple(n):
    out = []
    for exc in (KeyError, IndexError, ValueError):
        try:
            raise exc(n)
        except (KeyError, IndexError) as e:
            out.append(("caught", type(e).__name__))
        except Exception as e:
            out.append(("other", type(e).__name__))
    return out


@case(1)
def exception_var_cleared(n):
    e = "before"
    try:
        raise AppError(n)
    except AppError as e:  # noqa: F841
        pass
    try:
        return e
    except NameError:
        return "cleared"


@case(3)
def with_statement(n):
    log = []

    class Ctx:
        def __enter__(self):
            log.append("enter")
            return self

        def __exit__(self, tp, val, tb):
            log.append(("exit", tp.__name__ if tp else None))
            return tp is KeyError
    with Ctx():
        log.append("body")
    with Ctx():
        raise KeyError(n)
    return log


@case(2)
def with_return_inside(n):
    log = []

    class Ctx:
        def __enter__(self):
            return n

        def __exit__(self, *a):
            log.append("exit")
    with Ctx() as v:
        return v, log


@case(4)
def exception_in_loop_recovery(n):
    total = 0
    for i in range(-n, n):
        try:
            total += 10 // i
        except ZeroDivisionError:
            total += 1000
    return total


@case(3)
def custom_exception_attrs(n):
    class Err(Exception):
        def __init__(self, code):
            super().__init__(code)
            self.code = code * 2
    try:
        raise Err(n)
    except Err as e:
        return e.code, e.args


@case(2)
def finally_overrides_exception(n):
    def f():
        try:
            raise ValueError(n)
        finally:
            return "swallowed"  # noqa: B012
    return f()


@case(3)
def exception_group_fallback(n):
    # ExceptionGroup exists from 3.11 only; the case stays version-independent.
    errors = [ValueError(i) for i in range(n)]
    return [type(e).__name__ for e in errors], [e.args for e in errors]


@case(6)
def assert_statement(n):
    try:
        assert n < 5, ("too big", n)
    except AssertionError as e:
        return e.args


@case(1)
def raise_builtin_uncaught(n):
    return [][n]


@case(8)
def try_in_generator_expr(n):
    def safe(i):
        try:
            return n // i
        except ZeroDivisionError:
            return None
    return [safe(i) for i in range(-2, 3)]


@case(3)
def exception_traceback_lines(n):
    import sys
    try:
        raise AppError(n)
    except AppError:
        tp, val, tb = sys.exc_info()
        return tp.__name__, val.args, tb is not None
