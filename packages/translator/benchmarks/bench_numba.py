"""The numba backend against plain numpy, the eager and numexpr backends and hand-written
numba loops, side by side in one run.

    python packages/translator/benchmarks/bench_numba.py [--repeat N] [--first N] [--skip-corpus]
        [--skip-kernels] [--backends eager numexpr numba hand] [--only KERNEL ...] [--category CAT ...]
        [--split {all,tuned,unseen}] [--first-only KERNEL ...] [--json OUT] [--parallel] [--no-fuse]
        [--no-translation-cache]

Prints markdown tables:

1. the test corpus (``calls[0]`` of every case, small inputs): geometric means of each
   backend's steady-state time over plain numpy's, and what numba did with the graphs
   (``--skip-corpus`` leaves it out);
2. the NPBench-class kernels of npbench_kernels.py (59, tagged by category, 15 held out as
   ``unseen``): per kernel plain's time, each backend's time over plain's, what the numba
   backend did with each graph (its notes), whether every backend's result agrees with
   plain's (a ``FAIL`` row otherwise); then summary rows per backend for all kernels, the
   tuned set and the unseen set: geomean, worst kernel, kernels over 1.05x plain;
3. first calls, one fresh process per kernel (``--first N`` runs, 0 to skip): plain's first
   call, then numba's with cold caches (emptied) and warm ones (the cold process filled
   them: numba's and, unless ``--no-translation-cache``, ``config.translation_cache_dir``),
   then eager's and numexpr's in the cold process, and numba's first call over plain's in
   seconds.

Steady state: each backend gets the function afresh (the translator caches per code object:
reset between backends), is called until the numba backend settles (no new note for 3
calls and 0.3 s, no graph still compiling, and since the last note enough calls for the
backend's kernel-against-eager measurement to have ended: 2 * numba_measure_calls + 2
calls or 3 s; at most 60 s), then plain and the backend alternate for ``--repeat`` rounds, each the
median of rounds of enough calls to last about 20 ms; ratios are medians of one backend
against the plain rounds interleaved with it. ``--parallel`` and ``--no-fuse`` set the
backend's PARALLEL and FUSE switches, to measure its choices. Nothing is asserted: the
figures go to BENCHMARKS.md; ``--json OUT`` writes them machine-readable.
"""

from __future__ import annotations

import argparse
import contextlib
import copy
import json
import math
import os
import platform
import statistics
import subprocess
import sys
import tempfile
import time
import warnings
from collections import Counter
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
TESTS = HERE.parent / "tests"
sys.path.insert(0, str(HERE))
import npbench_kernels  # noqa: E402

BACKENDS = ("eager", "numexpr", "numba", "hand")
OVER = 1.05  # the bound: no kernel above 1.05x plain
FINAL = ("compiled", "fallback")  # note statuses after which a graph is not compiling any more
SETTLE_QUIET_CALLS, SETTLE_QUIET_SECONDS = 3, 0.3
SETTLE_MAX_SECONDS = 60.0
#: wall time after a kernel's note by which its measurement (a second of timed calls at
#: most) has ended, however slow the calls
MEASURE_SECONDS = 3.0


def _time(fn, args, number):
    """Seconds a call, each call on fresh copies of the arguments (kernels write them)."""
    total = 0.0
    for _ in range(number):
        fresh = copy.deepcopy(args)
        start = time.perf_counter()
        fn(*fresh)
        total += time.perf_counter() - start
    return total / number


def geomean(xs):
    xs = [x for x in xs if x > 0 and math.isfinite(x)]
    return math.exp(sum(math.log(x) for x in xs) / len(xs)) if xs else float("nan")


def agrees(a, b):
    """Same structure, shapes and values (float32 to 1e-3, else numpy's allclose)."""
    if isinstance(a, dict):
        return isinstance(b, dict) and a.keys() == b.keys() and all(agrees(a[k], b[k]) for k in a)
    if isinstance(a, (tuple, list)):
        return isinstance(b, (tuple, list)) and len(a) == len(b) and all(agrees(x, y) for x, y in zip(a, b))
    a, b = np.asarray(a), np.asarray(b)
    if a.shape != b.shape:
        return False
    if a.dtype.kind not in "biufc" or b.dtype.kind not in "biufc":  # strings, None, objects: equality
        return bool(np.all(a == b))
    if np.float32 in (a.dtype, b.dtype):
        return bool(np.allclose(a, b, rtol=1e-3, atol=1e-4, equal_nan=True))
    return bool(np.allclose(a, b, equal_nan=True))


class Notes:
    """The numba backend's notes as they arrive (from any thread), by graph."""

    def __init__(self):
        from framehook.translator.backends import numba as bnb

        self.bnb = bnb
        self.all = []
        self.last_at = time.perf_counter()
        bnb.add_note_observer(self._seen)

    def _seen(self, note):
        self.all.append(note)
        self.last_at = time.perf_counter()

    def close(self):
        self.bnb.remove_note_observer(self._seen)

    def since(self, start):
        return self.all[start:]

    @staticmethod
    def latest(notes):
        """The latest note of each graph, in the order the graphs first appeared."""
        out = {}
        for n in notes:
            out[getattr(n, "graph", "?")] = n
        return out

    @staticmethod
    def pending(notes):
        return [g for g, n in Notes.latest(notes).items() if getattr(n, "status", "") not in FINAL]

    @staticmethod
    def summary(notes):
        """One line: how many graphs compiled, and why the others run eager."""
        latest = Notes.latest(notes)
        if not latest:
            return "no graph"
        compiled = sum(getattr(n, "status", "") == "compiled" for n in latest.values())
        parts = [f"numba {compiled}"] if compiled else []
        others = Counter(
            (
                getattr(n, "status", "?")
                + (": " + getattr(n, "reason", "").split(" (")[0] if getattr(n, "reason", "") else "")
            )
            for n in latest.values()
            if getattr(n, "status", "") != "compiled"
        )
        parts += [f"{k}{f' x{v}' if v > 1 else ''}" for k, v in others.items()]
        return "; ".join(parts).replace("fallback: ", "eager: ")


def settle(opt, args, notes, first=0):
    """Call ``opt`` until the numba backend settles (its graphs' notes since ``first``, the
    runner's first call included, are final and quiet, and a kernel made ready since has had
    the calls its measurement against eager takes); (calls, seconds, settled)."""
    from framehook.translator import config

    pairs = getattr(config, "numba_measure_calls", 3)
    floor = 2 * pairs + 2  # past the backend's measuring calls, counted from the last note
    start = time.perf_counter()
    calls, quiet_from = 0, 0
    seen = len(notes.all)
    while True:
        opt(*copy.deepcopy(args))
        calls += 1
        if len(notes.all) != seen:
            seen, quiet_from = len(notes.all), calls
        now = time.perf_counter()
        waiting = Notes.pending(notes.since(first))
        since = now - notes.last_at
        # a kernel that became ready late (queued behind another compile) is still being
        # timed against eager, alternately, for up to ``pairs`` pairs or a second of calls:
        # timing the runner then would time that alternation
        measuring = calls - quiet_from < floor and since < MEASURE_SECONDS
        quiet = calls - quiet_from >= SETTLE_QUIET_CALLS and since >= SETTLE_QUIET_SECONDS
        if quiet and not waiting and not measuring:
            return calls, now - start, True
        if now - start > SETTLE_MAX_SECONDS:
            return calls, now - start, False
        if waiting:
            time.sleep(0.01)  # leave the core to a background compile


def make_runner(backend, fn, hand_fn):
    import framehook.translator as ft

    if backend == "hand":
        import numba

        return numba.njit(hand_fn)
    ft.reset()
    return ft.optimize(backend)(fn)


def measure(fn, hand_fn, args, backends, repeat, notes):
    """Per backend: steady-state seconds (median), plain's interleaved median, agreement
    with plain's result (first call and steady state), numba notes and settling."""
    import framehook.translator as ft

    number = max(1, int(0.02 / max(_time(fn, args, 1), 1e-7)))
    want = fn(*copy.deepcopy(args))
    out = {}
    for backend in backends:
        start = len(notes.all)
        res = {"ok": True, "error": ""}
        try:
            opt = make_runner(backend, fn, hand_fn)
            first = time.perf_counter()
            got = opt(*copy.deepcopy(args))
            res["first_call"] = time.perf_counter() - first
            if not agrees(got, want):
                res["ok"], res["error"] = False, "first call differs"  # kept: steady may differ too
            if backend != "hand":
                res["settle_calls"], res["settle_seconds"], res["settled"] = settle(opt, args, notes, start)
            else:
                opt(*copy.deepcopy(args))
            if not agrees(opt(*copy.deepcopy(args)), want):
                res["ok"], res["error"] = False, "; ".join(filter(None, [res["error"], "steady result differs"]))
            plain, mine = [], []
            for _ in range(repeat):  # alternate so that machine noise hits both alike
                plain.append(_time(fn, args, number))
                mine.append(_time(opt, args, number))
            res["plain"], res["time"] = statistics.median(plain), statistics.median(mine)
            res["ratio"] = res["time"] / res["plain"]
        except Exception as e:  # noqa: BLE001 - a backend that raises is a failure to report
            res.update(ok=False, error=f"{type(e).__name__}: {str(e)[:120]}")
        if backend == "numba":
            mine = notes.since(start)
            res["notes"] = Notes.summary(mine)
            res["note_lines"] = [str(n) for n in mine]
        out[backend] = res
    ft.reset()
    return out


def selected(only=None, categories=None, split="all"):
    keep = []
    for k in npbench_kernels.corpus():
        if only and k.name not in only:
            continue
        if categories and k.category not in categories:
            continue
        if split == "tuned" and k.unseen or split == "unseen" and not k.unseen:
            continue
        keep.append(k)
    return keep


def _fmt(res, key="ratio"):
    return f"{res[key]:.2f}" if key in res else "err"


def kernel_table(kernels, backends, repeat):
    notes = Notes()
    rows = []
    for k in kernels:
        print(f"  {k.name} ...", file=sys.stderr, flush=True)
        rows.append({"name": k.name, "category": k.category, "unseen": k.unseen, **{"backends": None}})
        rows[-1]["backends"] = measure(k.fn, k.hand, k.args, backends, repeat, notes)
    notes.close()
    print(f"\n### NPBench-class kernels, {len(rows)} kernels, median of {repeat} rounds alternating with plain\n")
    cols = " | ".join(f"{b} / plain" for b in backends)
    print(f"| kernel | category | plain | {cols} | numba graphs | results |")
    print("|---|---|---|" + "---|" * len(backends) + "---|---|")
    for row in rows:
        res = row["backends"]
        plains = [r["plain"] for r in res.values() if "plain" in r]
        row["plain"] = statistics.median(plains) if plains else float("nan")
        bad = [f"{b} ({r['error']})" for b, r in res.items() if not r["ok"]]
        row["ok"] = not bad
        label = f"**FAIL** {row['name']}" if bad else row["name"]
        unsettled = any(r.get("settled") is False for r in res.values())
        print(
            f"| {label}{' (unseen)' if row['unseen'] else ''} | {row['category']} | {row['plain'] * 1e3:.2f} ms | "
            + " | ".join(_fmt(res[b]) for b in backends)
            + f" | {res.get('numba', {}).get('notes', '')}{' (unsettled)' if unsettled else ''}"
            + f" | {'FAIL: ' + ', '.join(bad) if bad else 'all agree'} |"
        )
    summary = summarize(rows, backends)
    print("\n### Summary (steady state over plain numpy)\n")
    print("| set | backend | kernels | geomean | worst | over 1.05x | failures |\n|---|---|---|---|---|---|---|")
    for s in summary:
        worst = f"{s['worst']} {s['worst_ratio']:.2f}" if s["worst"] else ""
        print(
            f"| {s['set']} | {s['backend']} | {s['kernels']} | {s['geomean']:.2f} | {worst} "
            f"| {s['over']} | {s['failures']} |"
        )
    return rows, summary


def summarize(rows, backends):
    out = []
    for name, part in (
        ("all", rows),
        ("tuned", [r for r in rows if not r["unseen"]]),
        ("unseen", [r for r in rows if r["unseen"]]),
    ):
        if not part:
            continue
        for b in backends:
            ratios = [(r["name"], r["backends"][b]["ratio"]) for r in part if "ratio" in r["backends"][b]]
            worst = max(ratios, key=lambda x: x[1]) if ratios else ("", float("nan"))
            over = [n for n, x in ratios if x > OVER]
            out.append(
                {
                    "set": name,
                    "backend": b,
                    "kernels": len(ratios),
                    "geomean": geomean([x for _, x in ratios]),
                    "worst": worst[0],
                    "worst_ratio": worst[1],
                    "over": len(over),
                    "over_names": over,
                    "failures": sum(not r["backends"][b]["ok"] for r in part),
                }
            )
    return out


def corpus_table(repeat, backends):
    """The test corpus's cases (``calls[0]``), steady state against plain numpy."""
    sys.path.insert(0, str(TESTS))
    from corpus_helpers import corpus_modules

    backends = [b for b in backends if b != "hand"]
    cases = [case for m in corpus_modules() for case in m.CORPUS]
    notes = Notes()
    rows, status, failed = [], Counter(), []
    for case in cases:
        fn, calls = case[0], case[1]
        call = calls[0]
        args, kwargs = (
            call if len(call) == 2 and isinstance(call[0], tuple) and isinstance(call[1], dict) else (call, {})
        )
        if kwargs:
            continue
        with open(os.devnull, "w") as sink, contextlib.redirect_stdout(sink):  # cases that print
            try:
                fn(*copy.deepcopy(args))
            except Exception as e:  # a case that raises by design: its outcome is the test's business
                status[f"raises ({type(e).__name__})"] += 1
                continue
            res = measure(fn, None, args, backends, repeat, notes)
        if "numba" in res:
            status[res["numba"]["notes"].split(";")[0].split(" (")[0]] += 1
        failed += [f"{fn.__name__} ({b})" for b, r in res.items() if not r["ok"]]
        rows.append((fn.__name__, res))
    notes.close()
    print(f"\n### Test corpus, {len(rows)} cases (calls[0]), median of {repeat}\n")
    print("| | " + " | ".join(f"{b} / plain" for b in backends) + " |\n|---|" + "---|" * len(backends))
    geo = {b: geomean([r[b]["ratio"] for _, r in rows if "ratio" in r[b]]) for b in backends}
    print("| geomean | " + " | ".join(f"{geo[b]:.2f}" for b in backends) + " |")
    print("\nnumba outcome per case (first graph note): " + ", ".join(f"{k} {v}" for k, v in status.most_common()))
    if failed:
        print("\nFAIL (differs from plain or raised): " + ", ".join(failed))
    return {"cases": len(rows), "geomean": geo, "numba_outcomes": dict(status), "failures": failed}


# ---------------------------------------------------------------- first calls, fresh processes


def _first_worker(name, phase):
    """One fresh process, one kernel: plain's first call, then numba's (settled so that a
    background compile finishes and fills the cache), then, cold only, eager's and numexpr's."""
    import framehook.translator as ft
    import numba  # noqa: F401 - its import is not part of any kernel's first call

    kernel = next(k for k in npbench_kernels.corpus() if k.name == name)
    notes = Notes()
    out = {"name": name}

    def first(fn):
        fresh = copy.deepcopy(kernel.args)
        start = time.perf_counter()
        fn(*fresh)
        return time.perf_counter() - start

    out["plain"] = first(kernel.fn)
    ft.reset()
    # what optimize() does ahead of the first call for the function it wraps (the skip
    # verdict, the cache key, the kept translations read): reported beside the first call
    from framehook.translator.conversion.convert_frame import ConvertFrame

    prepare, ahead = ConvertFrame.prepare_code, []

    def timed_prepare(self, *args):
        start = time.perf_counter()
        try:
            return prepare(self, *args)
        finally:
            ahead.append(time.perf_counter() - start)

    ConvertFrame.prepare_code = timed_prepare
    opt = ft.optimize("numba")(kernel.fn)
    ConvertFrame.prepare_code = prepare
    out["ahead"] = sum(ahead)
    out["numba"] = first(opt)
    from framehook.translator.conversion import translation_cache

    out["translations_loaded"] = translation_cache.counts["hits"]
    out["numba_first_notes"] = [str(n) for n in notes.all]
    out["numba_seconds"] = sum(getattr(n, "numba_seconds", 0.0) for n in notes.all)
    _, out["numba_settle_seconds"], out["numba_settled"] = settle(opt, kernel.args, notes)
    out["numba_notes"] = Notes.summary(notes.all)
    if phase == "cold":
        for backend in ("eager", "numexpr"):
            ft.reset()
            try:
                out[backend] = first(ft.optimize(backend)(kernel.fn))
            except Exception as e:  # noqa: BLE001 - reported, not fatal
                out[backend] = None
                out[backend + "_error"] = f"{type(e).__name__}: {e}"
    notes.close()
    print(json.dumps(out))


def first_call_table(kernels, runs, switches, translation_cache=True):
    cache = tempfile.mkdtemp(prefix="fh-numba-first-")
    env = dict(os.environ, FRAMEHOOK_NUMBA_CACHE_DIR=cache, PYTHONPATH=os.pathsep.join(p for p in sys.path if p))
    env.pop("FRAMEHOOK_TRANSLATION_CACHE_DIR", None)
    if translation_cache:  # emptied with numba's: the cold run fills both
        env["FRAMEHOOK_TRANSLATION_CACHE_DIR"] = os.path.join(cache, "translations")
    results = []
    for k in kernels:
        print(f"  first calls: {k.name} ...", file=sys.stderr, flush=True)
        per = {"cold": [], "warm": []}
        for _ in range(runs):
            subprocess.run(["rm", "-rf", cache], check=True)
            for phase in ("cold", "warm"):
                done = subprocess.run(
                    [sys.executable, __file__, "--first-worker", k.name, phase, *switches],
                    env=env,
                    capture_output=True,
                    text=True,
                )
                if done.returncode:
                    per[phase].append({"error": (done.stderr.strip().splitlines() or ["?"])[-1]})
                else:
                    per[phase].append(json.loads(done.stdout.strip().splitlines()[-1]))
        results.append({"name": k.name, "unseen": k.unseen, **per})
    subprocess.run(["rm", "-rf", cache], check=True)

    def med(phase_runs, key):
        vals = [r[key] for r in phase_runs if r.get(key) is not None]
        return statistics.median(vals) if vals else float("nan")

    kept = "with" if translation_cache else "without"
    print(
        f"\n### First call in a fresh process per kernel, median of {runs} run(s) (numba imported beforehand, "
        f"{kept} the translation cache)\n"
    )
    print(
        "| kernel | plain | eager | numexpr | numba cold | numba warm | cold over plain | warm / plain "
        "| numba compile/load cold / warm | numba settled (cold) |"
    )
    print("|---|---|---|---|---|---|---|---|---|---|")
    rows = []
    for r in results:
        cold, warm = r["cold"], r["warm"]
        errors = [x["error"] for x in cold + warm if "error" in x]
        row = {
            "name": r["name"],
            "unseen": r["unseen"],
            "plain": med(cold + warm, "plain"),
            "eager": med(cold, "eager"),
            "numexpr": med(cold, "numexpr"),
            "numba_cold": med(cold, "numba"),
            "numba_warm": med(warm, "numba"),
            "ahead_warm": med(warm, "ahead"),
            "numba_seconds_cold": med(cold, "numba_seconds"),
            "numba_seconds_warm": med(warm, "numba_seconds"),
            "settle_cold": med(cold, "numba_settle_seconds"),
            "notes": next((x["numba_notes"] for x in cold if "numba_notes" in x), ""),
            "errors": errors,
        }
        row["cold_over_plain"] = row["numba_cold"] - row["plain"]
        row["warm_over_plain_ratio"] = row["numba_warm"] / row["plain"]
        row["warm_with_ahead_ratio"] = (row["numba_warm"] + row["ahead_warm"]) / row["plain"]
        rows.append(row)
        print(
            f"| {'**FAIL** ' if errors else ''}{r['name']} | {row['plain'] * 1e3:.1f} ms | {row['eager'] * 1e3:.0f} ms "
            f"| {row['numexpr'] * 1e3:.0f} ms | {row['numba_cold'] * 1e3:.0f} ms | {row['numba_warm'] * 1e3:.0f} ms "
            f"| {row['cold_over_plain']:.2f} s | {row['warm_over_plain_ratio']:.1f}x "
            f"| {row['numba_seconds_cold'] * 1e3:.0f} / {row['numba_seconds_warm'] * 1e3:.0f} ms "
            f"| {row['settle_cold']:.1f} s{'; ' + '; '.join(errors) if errors else ''} |"
        )
    ok = [r for r in rows if math.isfinite(r["cold_over_plain"])]
    if ok:
        over = [r["cold_over_plain"] for r in ok]
        warm = [r["warm_over_plain_ratio"] for r in ok]
        print(
            f"| median | | {statistics.median(r['eager'] for r in ok) * 1e3:.0f} ms "
            f"| {statistics.median(r['numexpr'] for r in ok) * 1e3:.0f} ms "
            f"| {statistics.median(r['numba_cold'] for r in ok) * 1e3:.0f} ms "
            f"| {statistics.median(r['numba_warm'] for r in ok) * 1e3:.0f} ms | {statistics.median(over):.2f} s "
            f"| {statistics.median(warm):.1f}x | | |"
        )
        worst = max(ok, key=lambda r: r["cold_over_plain"])
        worst_warm = max(ok, key=lambda r: r["warm_over_plain_ratio"])
        print(
            f"\nworst cold first call over plain's: {worst['name']} {worst['cold_over_plain']:.2f} s; "
            f"over 5 s: {sum(x > 5 for x in over)}; worst warm / plain: {worst_warm['name']} "
            f"{worst_warm['warm_over_plain_ratio']:.1f}x; warm over 2x plain: {sum(x > 2 for x in warm)}; "
            "warm first calls that loaded a kept translation: "
            f"{sum(any(x.get('translations_loaded') for x in r['warm']) for r in results)} of {len(results)}"
        )
        with_ahead = [r["warm_with_ahead_ratio"] for r in ok if math.isfinite(r["warm_with_ahead_ratio"])]
        if with_ahead:
            worst_ahead = max(ok, key=lambda r: r["warm_with_ahead_ratio"])
            print(
                "warm first call plus what optimize() did ahead of it for the function (skip verdict, cache "
                f"key, kept translations read): median {statistics.median(with_ahead):.1f}x plain, worst "
                f"{worst_ahead['name']} {worst_ahead['warm_with_ahead_ratio']:.1f}x, over 2x: "
                f"{sum(x > 2 for x in with_ahead)}; median time ahead (warm) "
                f"{statistics.median(r['ahead_warm'] for r in ok) * 1e6:.0f} us"
            )
    return rows


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--first", type=int, default=1, help="fresh-process runs for the first-call table (0: skip)")
    ap.add_argument("--skip-corpus", action="store_true", help="without the test corpus table")
    ap.add_argument("--skip-kernels", action="store_true", help="without the kernel table")
    ap.add_argument("--backends", nargs="+", choices=BACKENDS, default=list(BACKENDS))
    ap.add_argument("--only", nargs="*", help="kernels to run (default: all)")
    ap.add_argument("--category", nargs="*", choices=npbench_kernels.CATEGORIES, help="kernel categories to run")
    ap.add_argument("--split", choices=("all", "tuned", "unseen"), default="all")
    ap.add_argument("--first-only", nargs="*", help="kernels for the first-call table (default: those selected)")
    ap.add_argument("--json", metavar="OUT", help="write the results as JSON to OUT")
    ap.add_argument("--parallel", action="store_true", help="compile with parallel=True and prange")
    ap.add_argument("--no-fuse", action="store_true", help="without the loop lowering (numba_fusion)")
    ap.add_argument(
        "--no-translation-cache",
        action="store_true",
        help="first-call table without config.translation_cache_dir (numba's cache only)",
    )
    ap.add_argument("--first-worker", nargs=2, help=argparse.SUPPRESS)
    opts = ap.parse_args()
    warnings.simplefilter("ignore")
    from framehook.translator.backends.numba import lowering

    lowering.PARALLEL = opts.parallel
    lowering.FUSE = not opts.no_fuse
    if opts.first_worker:
        _first_worker(*opts.first_worker)
        return
    import numba

    switches = (["--parallel"] if opts.parallel else []) + (["--no-fuse"] if opts.no_fuse else [])
    meta = {
        "python": platform.python_version(),
        "numpy": np.__version__,
        "numba": numba.__version__,
        "cores": os.cpu_count(),
        "cache": os.environ.get("FRAMEHOOK_NUMBA_CACHE_DIR", "the default"),
        "repeat": opts.repeat,
        "switches": switches,
        "argv": sys.argv[1:],
    }
    print(
        f"Python {meta['python']}, numpy {meta['numpy']}, numba {meta['numba']}, {meta['cores']} cores; "
        f"numba cache in {meta['cache']}{'; ' + ' '.join(switches) if switches else ''}"
    )
    result = {"meta": meta}
    if not opts.skip_corpus:
        result["test_corpus"] = corpus_table(opts.repeat, opts.backends)
    kernels = selected(opts.only, opts.category, opts.split)
    if not opts.skip_kernels:
        result["kernels"], result["summary"] = kernel_table(kernels, opts.backends, opts.repeat)
    if opts.first:
        firsts = selected(opts.first_only) if opts.first_only else kernels
        result["first_calls"] = first_call_table(
            firsts, opts.first, switches, translation_cache=not opts.no_translation_cache
        )
    if opts.json:
        with open(opts.json, "w") as f:
            json.dump(result, f, indent=1, default=str)


if __name__ == "__main__":
    main()
