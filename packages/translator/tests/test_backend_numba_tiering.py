"""The numba backend's first calls and steady state: first calls eager while the kernel
compiles in a background thread (no frame callback there, nothing raised from it, a
compile past its budget leaves the graph eager and is remembered), guards failing
meanwhile, a process exiting mid-compile; the measured keep-or-eager decision and the
steady-state demotion on real graphs, with a fake clock."""

from __future__ import annotations

import functools
import os
import subprocess
import sys
import textwrap
import threading
import time
from typing import Any, Dict, List

import numpy as np
import pytest

numba = pytest.importorskip("numba", reason="numba is not installed for this interpreter")
import framehook.translator as ft  # noqa: E402
from framehook.translator._runtime import runtime  # noqa: E402
from framehook.translator.backends import numba as bnb  # noqa: E402
from framehook.translator.backends.numba import diskcache, kernel, measure, tiering  # noqa: E402
from test_backend_numba import numba_cache  # noqa: E402,F401 - the cache fixture


@pytest.fixture
def notes() -> Any:
    seen: List[bnb.NumbaNote] = []

    def verdicts(note: bnb.NumbaNote) -> None:  # what became of each graph ("pending": its own test)
        if note.status != "pending":
            seen.append(note)

    bnb.add_note_observer(verdicts)
    yield seen
    bnb.remove_note_observer(verdicts)


def join_compiles() -> None:
    assert bnb.wait_for_compiles(300)


@pytest.fixture
def fresh_cache(tmp_path: Any, monkeypatch: Any) -> Any:
    monkeypatch.setenv("FRAMEHOOK_NUMBA_CACHE_DIR", str(tmp_path / "cache"))
    diskcache._reset_for_tests()
    ft.reset()
    yield tmp_path / "cache"
    join_compiles()
    ft.reset()
    diskcache._reset_for_tests()


def made_by(made: List[Any]) -> Any:
    """A backend that is the numba backend, keeping what it makes."""

    def backend(graph: Any, example_inputs: Any) -> Any:
        compiled = bnb.numba_backend(graph, example_inputs)
        made.append(compiled)
        return compiled

    return backend


def poly(x):
    return np.sqrt(x * x + 1.0) * 0.5 - x


# ------------------------------------------------------------------ tiered first calls


def test_first_calls_run_eager_while_the_kernel_compiles_in_the_background(fresh_cache, notes, monkeypatch):
    callbacks: List[Any] = []
    prepare = kernel.NumbaGraph._prepare_untraced
    release = threading.Event()
    every: List[bnb.NumbaNote] = []
    bnb.add_note_observer(every.append)

    def held(self, key, args):  # the compile waits until the test lets it go
        callbacks.append((threading.current_thread().name, runtime.get_eval_frame()))
        release.wait(60)
        return prepare(self, key, args)

    monkeypatch.setattr(kernel.NumbaGraph, "_prepare_untraced", held)
    made: List[Any] = []
    x = np.linspace(-1.0, 1.0, 7)
    with ft.config.patch(numba_background=True):
        opt = ft.optimize(made_by(made))(poly)
        for _ in range(3):  # eager meanwhile, one compile started
            np.testing.assert_allclose(opt(x), poly(x))
        (graph,) = made
        assert len(graph._jobs) == 1 and graph._ready == {} and notes == []
        assert [n.status for n in every] == ["pending"]  # said once, when the compile starts
        assert "runs eager meanwhile" in str(every[0])
        release.set()
        join_compiles()
        assert [n.status for n in notes] == ["compiled"], [str(n) for n in notes]
        assert len(graph._ready) == 1
        np.testing.assert_allclose(opt(x), poly(x))
    bnb.remove_note_observer(every.append)
    # numba compiled on a thread of its own, with no frame callback: never traced
    assert [name.startswith("framehook-numba-") for name, _ in callbacks] == [True]
    assert [cb for _, cb in callbacks] == [None]


def test_a_compile_starts_only_once_the_call_that_queued_it_has_returned(fresh_cache, notes, monkeypatch):
    # started at once, the compiler would take the GIL in turns with that very call
    prepare = kernel.NumbaGraph._prepare_untraced
    started = threading.Event()
    seen_during_call: List[bool] = []

    def recorded(self, key, args):
        started.set()
        return prepare(self, key, args)

    def spying(graph: Any, example_inputs: Any) -> Any:
        compiled = bnb.numba_backend(graph, example_inputs)
        eager = compiled.eager

        def spy(*args: Any) -> Any:
            seen_during_call.append(started.wait(0.5))  # long enough for a started thread
            if len(seen_during_call) == 1:
                raise ValueError("the first eager run fails")
            return eager(*args)

        compiled.eager = spy
        return compiled

    monkeypatch.setattr(kernel.NumbaGraph, "_prepare_untraced", recorded)
    x = np.linspace(-1.0, 1.0, 7)
    with ft.config.patch(numba_background=True):
        opt = ft.optimize(spying)(poly)
        with pytest.raises(ValueError, match="first eager run"):
            opt(x)
        join_compiles()  # released although the call raised
        assert seen_during_call == [False] and started.is_set()
        assert [n.status for n in notes] == ["compiled"], [str(n) for n in notes]


def test_a_compile_waits_while_graphs_keep_returning_from_eager_runs(fresh_cache, notes, monkeypatch):
    # a call with a graph break runs more graphs after the one that queued the job: a load
    # or compile starting between them would take the GIL in turns with the rest of the call
    monkeypatch.setattr(tiering, "QUIET", 0.3)
    monkeypatch.setattr(tiering, "MAX_WAIT", 120.0)
    made: List[Any] = []
    x = np.linspace(-1.0, 1.0, 7)
    with ft.config.patch(numba_background=True):
        opt = ft.optimize(made_by(made))(poly)
        np.testing.assert_allclose(opt(x), poly(x))  # queues the job, released as it returns
        (graph,) = made
        (key,) = graph._jobs
        for _ in range(8):  # other graphs return from eager runs meanwhile
            time.sleep(0.05)
            assert graph._jobs[key] is None  # not started
            last = time.perf_counter()
            tiering.release()
        join_compiles()
    assert graph._jobs[key] >= last + 0.3  # started once none had returned for QUIET seconds
    assert [n.status for n in notes] == ["compiled"], [str(n) for n in notes]


def test_a_compile_waits_for_quiet_no_longer_than_its_bound(fresh_cache, notes, monkeypatch):
    monkeypatch.setattr(tiering, "QUIET", 3600.0)
    monkeypatch.setattr(tiering, "MAX_WAIT", 0.2)
    made: List[Any] = []
    x = np.linspace(-1.0, 1.0, 7)
    with ft.config.patch(numba_background=True):
        opt = ft.optimize(made_by(made))(poly)
        opt(x)
        (graph,) = made
        (key,) = graph._jobs
        deadline = time.perf_counter() + 60
        while graph._jobs[key] is None and time.perf_counter() < deadline:  # never quiet
            tiering.release()
            time.sleep(0.01)
        assert graph._jobs[key] is not None  # started all the same
        join_compiles()
    assert [n.status for n in notes] == ["compiled"], [str(n) for n in notes]


def test_optimize_starts_the_compiler_and_kernel_calls_never_reach_the_callback(fresh_cache, notes, monkeypatch):
    # a thread started in a first call cost it 0.3-3 ms; the backend's own functions reaching
    # the frame callback (to be skipped there) about 25 us each
    from framehook.translator.conversion import convert_frame

    seen: List[str] = []
    real = convert_frame.frame_skip_reason

    def spy(frame: Any) -> Any:
        seen.append(frame.f_code.co_filename)
        return real(frame)

    monkeypatch.setattr(convert_frame, "frame_skip_reason", spy)
    x = np.linspace(-1.0, 1.0, 7)
    with ft.config.patch(numba_background=True):
        opt = ft.optimize("numba")(poly)
        thread = tiering._compiler._thread
        assert thread is not None and thread.is_alive() and thread.daemon  # before any call
        for _ in range(4):
            np.testing.assert_allclose(opt(x), poly(x))
            join_compiles()
    assert "compiled" in [n.status for n in notes], [str(n) for n in notes]
    backend_dir = os.path.dirname(kernel.__file__) + os.sep
    assert seen and not [f for f in seen if f.startswith(backend_dir)], seen
    # nor threading's Python methods: handing a job to the compiler calls none
    assert not [f for f in seen if os.path.basename(f) == "threading.py"], seen


def floor_plus(x, k):
    return x // k + 1


def test_the_lowering_too_runs_in_the_background_with_its_fallbacks(fresh_cache, notes, monkeypatch):
    # lowering a graph takes 1-15 ms (over 100 for big ones): not a first call's business
    lowered_on: List[str] = []
    lower = kernel.lower

    def recorded(*args: Any, **kwargs: Any) -> Any:
        lowered_on.append(threading.current_thread().name)
        return lower(*args, **kwargs)

    monkeypatch.setattr(kernel, "lower", recorded)
    made: List[Any] = []
    x, ints = np.linspace(-1.0, 1.0, 7), np.arange(-3, 4)
    with ft.config.patch(numba_background=True):
        good = ft.optimize(made_by(made))(poly)
        np.testing.assert_allclose(good(x), poly(x))
        risky = ft.optimize(made_by(made))(floor_plus)
        with np.errstate(all="ignore"):
            np.testing.assert_array_equal(risky(ints, 2), floor_plus(ints, 2))
        join_compiles()
        # nothing lowered in the calls: both on the compiler's thread, after them
        assert [name.startswith("framehook-numba-") for name in lowered_on] == [True, True]
        assert sorted(n.status for n in notes) == ["compiled", "fallback"], [str(n) for n in notes]
        (fallback,) = [n for n in notes if n.status == "fallback"]
        assert "integer-array // or %" in fallback.reason and fallback.code == "FH016"
        np.testing.assert_allclose(good(x), poly(x))
        with np.errstate(all="ignore"):
            np.testing.assert_array_equal(risky(ints, 2), floor_plus(ints, 2))
    # the same graphs lowered in the call when compiling there gives the same keys
    ft.reset()
    again: List[Any] = []
    with ft.config.patch(numba_background=False):
        ft.optimize(made_by(again))(poly)(x)
    assert again[0].lowered.key == made[0].lowered.key


def test_a_warm_cache_loads_in_the_background_too(fresh_cache, notes):
    x = np.linspace(-1.0, 1.0, 7)
    with ft.config.patch(numba_background=False):
        ft.optimize("numba")(poly)(x)
    assert [n.cache for n in notes] == ["miss"]
    ft.reset()
    with ft.config.patch(numba_background=True):
        opt = ft.optimize("numba")(poly)
        np.testing.assert_allclose(opt(x), poly(x))
        join_compiles()
        assert [n.cache for n in notes] == ["miss", "hit"]
        np.testing.assert_allclose(opt(x), poly(x))


_NO_IMPORT = textwrap.dedent("""
    import sys, numpy as np
    import framehook.translator as ft
    def f(x):
        return np.sqrt(x * x + 1.0)
    x = np.linspace(0, 1, 5)
    assert np.allclose(ft.optimize("numba")(f)(x), f(x))
    print("numba" in sys.modules)
""")


def test_a_first_call_does_not_import_numba(tmp_path):
    # the import (a quarter of a second) happens with the compile, in the background
    env = dict(
        os.environ, FRAMEHOOK_NUMBA_CACHE_DIR=str(tmp_path), PYTHONPATH=os.pathsep.join(p for p in sys.path if p)
    )
    done = subprocess.run([sys.executable, "-c", _NO_IMPORT], env=env, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() in ("False", "True")  # True only if the thread got there first
    assert "Error" not in done.stderr and "Warning" not in done.stderr, done.stderr


def test_guards_failing_while_compiling_stay_correct(fresh_cache, notes):
    with ft.config.patch(numba_background=True):
        opt = ft.optimize("numba")(poly)
        calls = [np.linspace(0, 1, 5), np.arange(6.0).reshape(2, 3), np.linspace(0, 1, 5).astype(np.float32)]
        for _ in range(3):
            for x in calls:
                np.testing.assert_allclose(opt(x), poly(x), rtol=1e-6)
        ft.reset()  # every graph dropped while its compile may still run: no harm when it ends
        join_compiles()
        opt = ft.optimize("numba")(poly)
        for x in calls:
            np.testing.assert_allclose(opt(x), poly(x), rtol=1e-6)
    join_compiles()
    assert {n.status for n in notes} <= {"compiled", "fallback"}


def test_a_failing_background_compile_never_reaches_the_user(fresh_cache, notes, monkeypatch):
    def broken(self, key, args):
        raise RuntimeError("boom in the background")

    monkeypatch.setattr(kernel.NumbaGraph, "_prepare_untraced", broken)
    x = np.linspace(0, 1, 5)
    with ft.config.patch(numba_background=True):
        opt = ft.optimize("numba")(poly)
        for _ in range(4):
            np.testing.assert_allclose(opt(x), poly(x))
            join_compiles()


def test_a_compile_past_its_budget_stays_eager_and_is_remembered(fresh_cache, notes, monkeypatch):
    prepare = kernel.NumbaGraph._prepare_untraced
    release = threading.Event()

    entered = threading.Event()

    def slow(self, key, args):  # a compile that outlasts the budget
        entered.set()
        release.wait(60)
        return prepare(self, key, args)

    monkeypatch.setattr(kernel.NumbaGraph, "_prepare_untraced", slow)
    x = np.linspace(0, 1, 5)
    made: List[Any] = []
    with ft.config.patch(numba_background=True, numba_compile_budget=1e-6):
        opt = ft.optimize(made_by(made))(poly)
        np.testing.assert_allclose(opt(x), poly(x))  # queues the compile
        assert entered.wait(60)  # the budget counts from when the compiler takes it up
        np.testing.assert_allclose(opt(x), poly(x))  # past the budget: eager for good
        assert [n.status for n in notes] == ["fallback"] and "budget of 1e-06 s" in notes[0].reason
        release.set()
        join_compiles()
        assert made[0]._ready == {} or made[0].fallback_reason is not None
        assert [n.status for n in notes] == ["fallback"]  # the late kernel is dropped, no note
        np.testing.assert_allclose(opt(x), poly(x))
        assert os.path.exists(tiering.budget_marker(made[0]))
        ft.reset()
        # a later run of the same graph does not try again
        made.clear()
        entered.clear()
        with ft.config.patch(numba_compile_budget=None):
            again = ft.optimize(made_by(made))(poly)
            np.testing.assert_allclose(again(x), poly(x))
            join_compiles()
            np.testing.assert_allclose(again(x), poly(x))
        assert not entered.is_set() and made[0]._ready == {} and "budget" in made[0].fallback_reason


_EXITING = textwrap.dedent("""
    import sys, numpy as np
    import framehook.translator as ft
    def big(x, y):
        for _ in range(3):
            x = np.sin(x) * np.cos(y) + np.sqrt(np.abs(x - y)) * 0.5
            y = np.where(x > 0.1, x, y) ** 2 + np.tanh(y)
        return x.sum() + y.max()
    ft.config.numba_background = sys.argv[1] == "background"
    x, y = np.linspace(0, 1, 9), np.linspace(1, 2, 9)
    got = ft.optimize("numba")(big)(x, y)
    assert np.isclose(got, big(x, y)), got
    print("ok")
""")


def test_a_process_exits_mid_compile_without_hanging_or_a_corrupt_cache(tmp_path):
    env = dict(
        os.environ,
        FRAMEHOOK_NUMBA_CACHE_DIR=str(tmp_path),
        PYTHONPATH=os.pathsep.join(p for p in sys.path if p),
    )
    for mode in ("background", "background", "foreground", "foreground"):
        done = subprocess.run(
            [sys.executable, "-c", _EXITING, mode], env=env, capture_output=True, text=True, timeout=300
        )
        assert done.returncode == 0 and done.stdout.strip() == "ok", done.stderr
        assert "Warning" not in done.stderr, done.stderr
    assert not [p for p in os.listdir(tmp_path) if p.endswith(".tmp")]


# ------------------------------------------------------------------ measured, then sampled


class Clock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


def timed_graph(monkeypatch: Any, costs: Dict[str, float]) -> Any:
    """A backend whose kernel and eager calls take ``costs`` seconds on a fake clock."""
    clock = Clock()
    monkeypatch.setattr(kernel, "Measurement", functools.partial(measure.Measurement, clock=clock))
    call_kernel = kernel.NumbaGraph._call_kernel

    def kernel_call(self, entry, args):
        clock.now += costs["kernel"]
        return call_kernel(self, entry, args)

    runtime.skip_code(kernel_call.__code__)  # test scaffolding: never translated
    monkeypatch.setattr(kernel.NumbaGraph, "_call_kernel", kernel_call)

    def backend(graph: Any, example_inputs: Any) -> Any:
        compiled = bnb.numba_backend(graph, example_inputs)
        eager = compiled.eager

        def timed_eager(*args: Any) -> Any:
            clock.now += costs["eager"]
            return eager(*args)

        runtime.skip_code(timed_eager.__code__)
        compiled.eager = timed_eager
        return compiled

    return backend


def run(opt: Any, calls: int) -> None:
    for i in range(calls):
        x = np.linspace(0, 1, 5) + i
        np.testing.assert_allclose(opt(x), poly(x))


def test_a_clear_win_is_kept_and_a_later_steady_loss_demotes_it(fresh_cache, notes, monkeypatch):
    costs = {"kernel": 10e-6, "eager": 100e-6}
    with ft.config.patch(numba_background=False, numba_measure_calls=20):
        opt = ft.optimize(timed_graph(monkeypatch, costs))(poly)
        run(opt, 20 * measure.SAMPLE_EVERY)
        assert [n.status for n in notes] == ["compiled"], [str(n) for n in notes]
        costs["kernel"] = 400e-6  # the machine changed: the kernel now loses
        for _ in range(200):  # until demoted: a far-ahead kernel is sampled less often
            run(opt, 100)
            if len(notes) > 1:
                break
    assert [n.status for n in notes] == ["compiled", "fallback"], [str(n) for n in notes]
    assert notes[-1].code == "FH016"
    assert notes[-1].reason.startswith("demoted: kernel 400.0 us against eager 100.0 us over ")
    assert "FH016" in str(notes[-1]) and "\n" not in str(notes[-1])


def test_a_near_tie_goes_eager(fresh_cache, notes, monkeypatch):
    costs = {"kernel": 98e-6, "eager": 100e-6}
    with ft.config.patch(numba_background=False, numba_measure_calls=8):
        run(ft.optimize(timed_graph(monkeypatch, costs))(poly), 30)
    assert [n.status for n in notes] == ["compiled", "fallback"]
    assert "not measured faster than eager: kernel 98.0 us against eager 100.0 us" in notes[-1].reason


_EXIT_WAITS = textwrap.dedent("""
    import sys, time, numpy as np
    import framehook.translator as ft
    from framehook.translator.backends.numba import tiering
    real = tiering._compile_one
    def slow(graph, key, args):
        time.sleep(1.5)  # still compiling when the script ends
        real(graph, key, args)
        print("compile ended", flush=True)
    tiering._compile_one = slow
    def f(x):
        return np.sqrt(x * x + 1.0) * 0.5 - x
    x = np.linspace(0, 1, 9)
    assert np.allclose(ft.optimize("numba")(f)(x), f(x))
    time.sleep(0.3)  # the compiler takes the job up (one not started yet is dropped at exit)
    print("script ended", flush=True)
""")


def test_a_process_exiting_mid_compile_waits_for_it_and_says_so(tmp_path):
    # exiting during numba's LLVM work crashed the process after the script had ended
    env = dict(
        os.environ, FRAMEHOOK_NUMBA_CACHE_DIR=str(tmp_path), PYTHONPATH=os.pathsep.join(p for p in sys.path if p)
    )
    done = subprocess.run([sys.executable, "-c", _EXIT_WAITS], env=env, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == ["script", "ended", "compile", "ended"], done.stdout
    assert "waiting for numba to finish compiling f in the background before exiting" in done.stderr
    assert done.stderr.count("framehook:") == 1, done.stderr


def test_a_kernel_too_long_to_compile_runs_eager_with_its_reason(fresh_cache, notes, monkeypatch):
    from framehook.translator.backends.numba import lowering

    monkeypatch.setattr(lowering, "MAX_SOURCE_LINES", 3)
    x = np.linspace(-1.0, 1.0, 7)
    with ft.config.patch(numba_background=False):
        opt = ft.optimize("numba")(poly)
        for _ in range(2):
            np.testing.assert_allclose(opt(x), poly(x))
    assert [n.status for n in notes] == ["fallback"], [str(n) for n in notes]
    assert "lines, over 3: numba compiles such a kernel for tens of seconds" in notes[0].reason
