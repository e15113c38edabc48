"""``with np.errstate(<constant keyword arguments>):`` blocks are captured into the graph and
run under the same numpy error settings as the plain code: values, exceptions and warnings
match the plain function on the first call and on a cache hit; a break inside the block, or
settings the translator does not model, keep the with statement in Python (FH007)."""

import sys
import warnings

import numpy as np
import pytest

import framehook.translator as ft
from framehook.translator import config
from framehook.translator.graph import Interpreter

try:
    import numexpr  # noqa: F401

    HAVE_NUMEXPR = True
except ImportError:  # pragma: no cover - the dev venvs have it
    HAVE_NUMEXPR = False


def observe(fn, *args):
    """What a call does: ('ok', result) or ('raise', type, message), with the warnings it
    issued (category, message, line) and the numpy error state before and after."""
    before = np.geterr()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        try:
            outcome = ("ok", fn(*args))
        except Exception as e:  # noqa: BLE001 - compared with the plain function's
            outcome = ("raise", type(e), str(e))
    assert np.geterr() == before, "the call changed the global numpy error state"
    return outcome, [(w.category, str(w.message), w.lineno) for w in caught]


def same(a, b):
    if isinstance(a, tuple):
        assert type(b) is tuple and len(a) == len(b)
        for x, y in zip(a, b):
            same(x, y)
        return
    assert type(a) is type(b)
    if isinstance(a, (np.ndarray, np.generic)):
        assert a.dtype == b.dtype and np.shape(a) == np.shape(b)
        np.testing.assert_array_equal(a, b)
    else:
        assert a == b or (a != a and b != b)


def explain(fn, *args):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            return ft.explain(fn)(*args)
        except Exception as e:  # noqa: BLE001 - the function raises: the report comes with it
            return e.explain_output


def check(fn, calls, graphs, breaks, backend="eager"):
    """The optimized function agrees with the plain one on every call (twice each: first
    call and cache hit), and explain() reports ``graphs`` graphs and ``breaks`` breaks."""
    ft.reset()
    opt = ft.optimize(backend)(fn)
    for args in calls:
        for _ in range(2):
            plain_out, plain_warns = observe(fn, *[a.copy() if isinstance(a, np.ndarray) else a for a in args])
            opt_out, opt_warns = observe(opt, *[a.copy() if isinstance(a, np.ndarray) else a for a in args])
            assert opt_warns == plain_warns
            assert opt_out[0] == plain_out[0], (opt_out, plain_out)
            if plain_out[0] == "ok":
                same(opt_out[1], plain_out[1])
            else:
                assert opt_out[1:] == plain_out[1:]
    out = explain(fn, *calls[0])
    assert out.graph_count == graphs, str(out)
    assert [b.code for b in out.break_reasons] == breaks, str(out)
    return out


X = np.array([0.0, 1.0, -2.0, 4.0])
Y = np.array([0.0, 2.0, 0.0, 0.5])


def safe_div(x, y):
    s = x * 2
    with np.errstate(divide="ignore", invalid="ignore"):
        q = x / y
        lg = np.log(np.abs(x))
    return np.where(np.isfinite(q), q, 0.0) + s, lg


def test_ignore_around_division_and_log_of_zeros_is_one_graph():
    out = check(safe_div, [(X, Y), (X[:3], Y[:3])], 1, [])
    ops = [n for n in out.graphs[0].operations() if n.meta.get("errstate")]
    assert {n.meta["errstate"]["divide"] for n in ops} == {"ignore"}
    # the code before and after the block is in the same graph, outside the settings
    assert any(not n.meta.get("errstate") for n in out.graphs[0].operations())


def test_the_plain_function_does_warn_without_the_block():
    # the comparison above is not vacuous: the same operations warn outside a block
    def bare(x, y):
        return x / y

    _, warns = observe(bare, X, Y)
    assert warns and warns[0][0] is RuntimeWarning
    check(bare, [(X, Y)], 1, [])


def raises_at_division(x, y, out):
    out[0] = 7.0  # before the raising operation: happens
    with np.errstate(all="raise"):
        a = x + 1
        q = x / y  # FloatingPointError here
        out[1] = 9.0  # after it: does not happen
    return a + q


def test_all_raise_raises_at_the_same_operation():
    for args in [(X, Y, np.zeros(2)), (X, Y + 1, np.zeros(2))]:
        check(raises_at_division, [args], 1, [])
    opt = ft.optimize("eager")(raises_at_division)
    for fn in (raises_at_division, opt):
        buf = np.zeros(2)
        before = np.geterr()
        with pytest.raises(FloatingPointError, match="divide by zero"):
            fn(X, Y, buf)
        assert np.geterr() == before  # restored when the graph raises
        assert buf.tolist() == [7.0, 0.0]
        # the caller carries on after catching it
        np.testing.assert_array_equal(fn(X, Y + 1, buf), (X + 1) + X / (Y + 1))
        assert buf.tolist() == [7.0, 9.0]


def test_unused_operation_under_raise_still_raises():
    def unused(x):
        with np.errstate(invalid="raise"):
            np.sqrt(x)
        return x + 1

    check(unused, [(np.array([-1.0, 4.0]),), (np.array([1.0, 4.0]),)], 1, [])


def unused_helper(u, v):
    with np.errstate(over="warn", under="ignore"):
        u = u.astype(np.float32) * np.float32(3e38)  # overwritten: its value goes unused
        u = v * 2.0
        return u


def unused_in_caller(x):
    with np.errstate(divide="ignore"):
        np.log(x)  # unused: invalid and over are still the caller's
        y = x * 3.0
    return y + unused_helper(x, x)


def test_unused_operation_that_warns_still_warns():
    # fuzz (errstate programs): dead-code elimination dropped an unused operation under 'warn'
    # in a block (an inlined function's block here), and its warning with it
    x = np.array([-1.0, 2.0, 0.0])
    check(unused_in_caller, [(x,), (np.array([1.0, 2.0]),)], 1, [])

    def unused_ops(out):
        return sorted(str(n).split("(")[0].split(" = ")[-1] for n in out.graphs[0].operations() if not n.users)

    # the log and the helper's float32 product are kept
    assert [k[:3] for k in unused_ops(check(unused_in_caller, [(x,)], 1, []))] == ["log", "mul"]
    with np.errstate(all="ignore"):
        # the log's block and the caller ignore everything: dropped, as before; the helper's
        # block warns on overflow whatever the caller's settings
        assert [k[:3] for k in unused_ops(check(unused_in_caller, [(x,)], 1, []))] == ["mul"]


def overflow_warns(x):
    with np.errstate(over="warn", under="ignore"):
        return np.exp(x) * 2


def test_over_warn_warns_under_a_quiet_global_state():
    for state in ("ignore", "raise"):
        with np.errstate(all=state):
            check(overflow_warns, [(np.array([1.0, 1000.0]),), (np.array([1.0, 2.0]),)], 1, [])
            _, warns = observe(ft.optimize("eager")(overflow_warns), np.array([1000.0]))
            assert [w[0] for w in warns] == [RuntimeWarning] and "overflow" in warns[0][1]


def nested(x, y):
    with np.errstate(divide="ignore", invalid="raise"):
        a = x / y
        with np.errstate(invalid="warn", over="ignore"):
            b = (x - x) / y  # 0/0: invalid, warns here
            c = x / y  # divide: still ignored from the outer block
            with np.errstate(all="ignore"):
                d = (x - x) / y
            e = np.exp(x * 1000.0)
        f = np.log(y)  # divide ignored
    return a, b, c, d, e, f


def test_nested_blocks_combine_as_numpy_nests_them():
    out = check(nested, [(X, Y), (X, Y + 1)], 1, [])
    states = [n.meta.get("errstate") for n in out.graphs[0].operations()]
    assert {"divide": "ignore", "invalid": "warn", "over": "ignore"} in states
    assert {"divide": "ignore", "invalid": "ignore", "over": "ignore", "under": "ignore"} in states
    with np.errstate(all="ignore"):  # the outer invalid="raise" holds after the inner blocks
        check(nested_then_raise, [(X, Y)], 1, [])


def nested_then_raise(x, y):
    with np.errstate(invalid="raise"):
        with np.errstate(invalid="ignore"):
            a = (x - x) / y
        b = (x - x) / y  # raises
    return a, b


def blocks_in_a_loop(x, n):
    acc = np.zeros_like(x)
    for i in range(n):
        with np.errstate(divide="ignore"):
            acc = acc + np.log(x - i)
        acc = acc * 0.5
    return acc


def loop_in_a_block(x, n):
    acc = x * 0
    with np.errstate(divide="ignore", invalid="ignore"):
        for i in range(n):
            acc = acc + (x - i) / (x - i)
    return acc + np.log(x)


@pytest.mark.parametrize("fn", [blocks_in_a_loop, loop_in_a_block])
def test_blocks_and_captured_loops(fn):
    x = np.array([0.0, 1.0, 2.0, 3.0, 9.0])
    with config.patch(capture_loops=True):
        out = check(fn, [(x, 6), (x, 8)], 1, [])
    assert out.loops and all(note.captured for note in out.loops), [str(n) for n in out.loops]


def print_inside(x, y):
    s = x + 1
    with np.errstate(divide="ignore"):
        q = x / y
        print("inside", q.shape)
    return s * q


def test_a_break_inside_the_block_keeps_the_with_statement_in_python(capsys):
    # as before errstate blocks were captured: the graph before the block, the with statement
    # in Python, the graph of a resume function after it (3.13 copies the code after a with
    # block into its exit handler, so the statement runs to the end of the frame there)
    out = check(print_inside, [(X, Y)], 2 if sys.version_info < (3, 13) else 1, ["FH007"])
    b = out.break_reasons[0]
    assert b.lineno == print_inside.__code__.co_firstlineno + 2 and "FH005" in b.reason
    capsys.readouterr()


def helper_block(x, y):
    with np.errstate(divide="ignore"):
        q = x / y
        if q.sum() > 0:  # a branch on array data: FH002 inside the block
            q = q * 2
    return q


def test_a_data_dependent_branch_inside_the_block():
    # the with statement is the whole function: it runs unmodified, as before
    check(helper_block, [(X, Y), (-X, Y)], 0, ["FH007"])


def calls_helper(x, y):
    return helper_ok(x, y) + 1


def helper_ok(x, y):
    with np.errstate(divide="ignore", invalid="ignore") as nothing:
        return x / y if nothing is None else x


def test_block_in_an_inlined_function_with_return_and_as_target():
    check(calls_helper, [(X, Y)], 1, [])
    check(helper_ok, [(X, Y)], 1, [])


SETTINGS = {"divide": "ignore", "invalid": "ignore"}


def star_kwargs(x, y):
    with np.errstate(**SETTINGS):
        return x / y


def kwargs_arg(x, y, mode):
    with np.errstate(divide=mode):
        return x / y


def test_star_dict_and_argument_settings():
    check(star_kwargs, [(X, Y)], 1, [])
    # a string argument is specialized (guarded): each value has its own entry
    check(kwargs_arg, [(X, Y, "ignore"), (X, Y, "warn"), (X, Y, "raise")], 1, [])


def non_constant(x, y, mode):
    with np.errstate(divide=mode):
        return x / y


def test_settings_the_translator_does_not_model_stay_fh007():
    def with_call(x, y):
        with np.errstate(divide="ignore", call=None):
            return x / y

    check(with_call, [(X, Y)], 0, ["FH007"])

    class Mode(str):
        pass

    # values the translator does not know at trace time break before or at the call
    check(non_constant, [(X, Y, Mode("ignore"))], 0, ["FH008"])
    check(non_constant, [(X, Y, 3)], 0, ["FH007"])  # a graph number: numpy's error, in Python
    check(non_constant, [(X, Y, "bogus")], 0, ["FH007"])  # numpy's own error, raised in Python


def test_an_errstate_not_entered_at_once_stays_fh007():
    def stored(x, y):
        es = np.errstate(divide="ignore")
        z = x + 1
        with es:
            q = x / y
        return q + z

    # the call, then the with statement in its resume function
    out = check(stored, [(X, Y)], 2, ["FH007", "FH007"])
    assert not any(n.meta.get("errstate") for g in out.graphs for n in g.operations())


def test_other_with_and_try_blocks_inside_an_errstate_block_stay_fh007():
    def try_inside(x, y):
        with np.errstate(divide="ignore"):
            try:
                q = x / y
            except ZeroDivisionError:
                q = x
        return q

    check(try_inside, [(X, Y)], 0, ["FH007"])


def test_generated_code_and_interpreter_apply_the_settings():
    out = explain(safe_div, X, Y)
    graph = out.graphs[0]
    assert "with __numpy_errstate(divide='ignore', invalid='ignore'):" in graph.python_code()
    expected = safe_div(X, Y)
    for run in (graph.forward, lambda *a: Interpreter(graph).run(*a)):
        with warnings.catch_warnings():
            warnings.simplefilter("error")  # a warning would fail here
            got = run(*[{"x": X, "y": Y}[p.target] for p in graph.placeholders])
        same(tuple(got), expected)


def test_graph_interpreter_raises_under_raise():
    out = explain(raises_at_division, X, Y + 1, np.zeros(2))
    graph = out.graphs[0]
    values = {"x": X, "y": Y, "out": np.zeros(2)}
    before = np.geterr()
    with pytest.raises(FloatingPointError):
        Interpreter(graph).run(*[values[p.target] for p in graph.placeholders])
    assert np.geterr() == before


@pytest.mark.skipif(not HAVE_NUMEXPR, reason="numexpr is not installed")
@pytest.mark.parametrize(
    "fn, calls",
    [
        (safe_div, [(X, Y)]),
        (nested, [(X, Y), (X, Y + 1)]),
        (overflow_warns, [(np.array([1.0, 1000.0]),)]),
        (raises_at_division, [(X, Y, np.zeros(2)), (X, Y + 1, np.zeros(2))]),
    ],
)
def test_numexpr_backend_agrees(fn, calls):
    out = check(fn, calls, 1, [], backend="numexpr")
    from framehook.translator.backends.numexpr import plan

    fused = plan(out.graphs[0], ("arith", "math", "logic"))
    for node in fused.operations():
        if type(node.target).__name__ == "FusedKernel":
            assert not node.meta.get("errstate")


def test_global_state_restored_and_guarded():
    opt = ft.optimize("eager")(safe_div)
    ft.reset()
    for state in ("warn", "raise", "ignore"):
        with np.errstate(all=state):
            before = np.geterr()
            same(opt(X, Y), safe_div(X, Y))
            assert np.geterr() == before


def break_out_of_block(x, n):
    acc = x * 0
    for i in range(n):
        with np.errstate(divide="ignore"):
            acc = acc + 1 / (x - i)
            if i == 2:
                break  # leaves the block through its __exit__
    return acc * 2


def block_after_a_break(x, y):
    print("before")
    with np.errstate(divide="ignore", invalid="ignore"):
        q = x / y
    return q + 1


def test_break_out_of_the_block_and_a_block_in_a_resume_function(capsys):
    x = np.array([0.0, 1.0, 2.0, 5.0])
    check(break_out_of_block, [(x, 6), (x, 2)], 1, [])
    out = check(block_after_a_break, [(X, Y)], 1, ["FH005"])  # the resume function's graph has the block
    assert any(n.meta.get("errstate") for n in out.graphs[0].operations())
    capsys.readouterr()


def test_verify_backend_agrees():
    with config.patch(verify_backend=True):
        check(nested, [(X, Y)], 1, [])
        check(raises_at_division, [(X, Y, np.zeros(2))], 1, [])


def folded_log(x):
    with np.errstate(divide="raise"):
        return x + np.log(0.0)  # computed at trace time: must still raise


def folded_ok(x):
    with np.errstate(divide="ignore"):
        c = np.float64(1.0) / np.float64(0.0)
    return x + c + np.log(2.0)


def folded_overflow(x):
    with np.errstate(over="warn"):
        return x * (np.float64(1e300) * np.float64(1e300))


def test_values_folded_at_trace_time_keep_the_block_settings():
    check(folded_log, [(X,)], 0, ["FH007"])  # the with statement runs in Python and raises
    check(folded_ok, [(X,)], 1, [])  # ignored: folded, captured
    with np.errstate(over="ignore"):
        check(folded_overflow, [(X,)], 0, ["FH007"])


def folded_sqrt_outside(x):
    return x + np.sqrt(np.float64(-4.0))


def folded_product_outside(x):
    return x * 2 + np.float32(-5.0) * np.float32(1e38)


# graphs when the operation warns (before and after it) and when it raises (before it only)
@pytest.mark.parametrize("fn, graphs", [(folded_sqrt_outside, (1, 0)), (folded_product_outside, (2, 1))])
def test_values_folded_outside_a_block_keep_the_callers_settings(fn, graphs):
    # fuzz (errstate programs): a numpy function or operator on constants was folded at trace
    # time outside any block, so the graph neither warned nor raised as the caller's settings
    # ask (the trace's own warning escaped from the translator's file on the first call)
    # an error the settings report: the operation runs in Python, between graphs
    for settings, n in [
        ({}, graphs[0]),
        ({"all": "raise"}, graphs[1]),
        ({"over": "warn", "invalid": "warn"}, graphs[0]),
    ]:
        with np.errstate(**settings):
            check(fn, [(X,), (X[:2],)], n, ["FH009"])
    with np.errstate(all="ignore"):
        check(fn, [(X,), (X[:2],)], 1, [])  # ignored: folded, one graph


def folded_nanmean_of_nans(x):
    return x + np.nanmean([float("nan")])  # warns "Mean of empty slice", no FP error


def folded_mean_of_empty(x):
    return x + np.mean([])  # warns, then 0/0 (invalid)


@pytest.mark.parametrize("fn", [folded_nanmean_of_nans, folded_mean_of_empty])
def test_values_folded_at_trace_time_that_warn_run_in_python(fn):
    # a numpy function on constants that issues a warning of its own (not an FP error) was
    # called at trace time with the user's filters: the warning came from the translator's
    # line on the first call (twice when the call then broke) and never on a cache hit
    check(fn, [(X,), (X[:2],)], 1, ["FH009"])
