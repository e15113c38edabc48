"""Differential fuzzing: generated programs run plainly and through each framehook package.

Seeded batches (fuzz/programs.py's generators, a program per seed; what the docs' examples use):

    python fuzz/run.py [--seed S] [--count N] [--modes shadow,profiler,translator]
                       [--only FAMILY] [--save DIR] [--json OUT] [--stats]

Hypothesis-driven (fhfuzz.strategies.programs(); each failure shrunk to a minimal program,
saved with --save, and stored in --database):

    python fuzz/run.py --examples N [--target T] [--save DIR] [--json OUT]   # CI's batch
    python fuzz/run.py --minutes M [--target runtime|translator|profiler|all]
                       [--database DIR|redis://host:port[/db]] [--save DIR]
    python fuzz/run.py --replay --database SPEC [--target T] [--save DIR]

--examples runs a fixed batch (derandomized: the same programs on every run, no database);
--minutes generates programs until the time is up, printing progress every 10 s, replaying
the database's findings first; --replay only replays them. The oracle (fhfuzz.harness):
every program runs plainly (twice: the oracle must be deterministic), then through the
runtime's shadow frames (a pass-through callback: misses, then cache hits), under the
profiler (whose call counts per function of the program must equal what sys.setprofile
counts plainly), and through the translator (`optimize(backend="eager")`: twice, then with
other argument types; errstate programs also under the caller's numpy error settings).
Outcomes (value or exception, printed text, warnings, numpy error state, the closures the
program returns and their cells) must equal the plain ones. Exit status 1 on any mismatch.
Only the packages' public APIs are used.
"""

from __future__ import annotations

import argparse
import collections
import contextlib
import io
import json
import re
import sys
import types
import warnings
from pathlib import Path
from typing import Any, Callable, Dict, List, Optional, Tuple

import numpy as np  # noqa: F401 - programs and tests use run's namespace

from hypothesis import Phase

from fhfuzz.campaign import TARGETS, Campaign, describe, long_run, replay_database, summary
from fhfuzz.harness import (  # noqa: F401 - the harness's names, as tests and docs use them
    EXTRA_MODES,
    MODES,
    Check,
    FailedTranslations,
    build,
    check_program,
    floats_close,
    observe,
    outcome,
    run_modes,
    save_finding,
    stable_repr,
    translated_outcomes,
)
from fhfuzz.program import Program, evaluate_arguments
from fhfuzz.seeded import inputs_source, outer_errstate  # noqa: F401
from fhfuzz.strategies import FAMILIES
from programs import family, generate


def inputs(seed: int, variant: int = 0) -> tuple:
    """The arguments program ``seed`` is called with (variant 1: other types)."""
    return evaluate_arguments(inputs_source(seed, variant))


def functions_in(value: Any) -> List[Callable[..., Any]]:
    if isinstance(value, types.FunctionType):
        return [value]
    if isinstance(value, (list, tuple)):
        return [f for v in value for f in functions_in(v)]
    return []


def code_tree(code: types.CodeType) -> List[types.CodeType]:
    return [code, *(c for k in code.co_consts if isinstance(k, types.CodeType) for c in code_tree(k))]


def has_closures(code: types.CodeType) -> bool:
    """An inner function or lambda reads a variable of an enclosing function (comprehensions,
    inlined on 3.12+, are left out so that the count means the same on every version)."""
    return any(c.co_freevars for c in code_tree(code) if c.co_name == "<lambda>" or not c.co_name.startswith("<"))


def frame_kind(code: types.CodeType, program: types.CodeType) -> str:
    """f, an inner function of it, or a resume function the translator made (any other code)."""
    cells = " with cells" if code.co_cellvars or code.co_freevars else ""
    if code is program:
        return "f" + cells
    if any(code is c for c in code_tree(program)):
        return "inner functions" + cells
    return "resume functions" + cells


def explain_stats(
    fn: Callable[..., Any],
    args: tuple,
    kind: str,
    stats: "collections.Counter[str]",
    reasons: "collections.Counter[str]",
) -> None:
    """Counts, for --stats, what the translator did with one program's frames (explain() runs
    the call once more, and each closure it returns once)."""
    import framehook.translator as ft

    closures = has_closures(fn.__code__)
    stats[f"{kind} programs"] += 1
    stats[f"{kind} programs with closures"] += closures
    frames: List[Any] = []
    todo: List[Tuple[Callable[..., Any], tuple]] = [(fn, args)]
    # the runs being compared already recorded the warnings; shown here they flood stderr
    with warnings.catch_warnings(), contextlib.redirect_stdout(io.StringIO()):
        warnings.simplefilter("ignore")
        while todo:
            target, target_args = todo.pop()
            try:
                out = ft.explain(target)(*target_args)
                todo += [(g, ()) for g in functions_in(out.result)]
            except Exception as exc:  # noqa: BLE001 - the report is attached to the exception
                out = getattr(exc, "explain_output", None)
            frames += out.frames if out is not None else []
    ft.reset()
    resumed = False
    for report in frames:
        if report.graph_break is None:
            continue
        where = frame_kind(report.code, fn.__code__)
        stats[f"breaks in {where}"] += 1
        if report.resume_failure is None:
            stats[f"breaks in {where}, resumed"] += 1
            resumed |= where.endswith("with cells")
        elif where.endswith("with cells"):
            reasons[re.sub(r" at 0x[0-9a-fA-F]+|\d+", "#", report.resume_failure)[:100]] += 1
    stats[f"{kind} programs with closures and a resumed break in a frame with cells"] += closures and resumed


def seeds(first: int, count: int, only: Optional[str] = None) -> List[int]:
    """``count`` seeds from ``first`` on (of family ``only`` if given)."""
    found: List[int] = []
    seed = first
    while len(found) < count:
        if only is None or family(seed) == only:
            found.append(seed)
        seed += 1
    return found


def seed_program(seed: int) -> Program:
    """Program ``seed`` of the seeded generators (through this module's names, which tests
    replace)."""
    return Program(
        generate(seed),
        args_source=inputs_source(seed),
        other_args_source=inputs_source(seed, 1),
        family=family(seed),
        outer_errstate=outer_errstate(seed),
        seed=seed,
    )


def check_seed(
    seed: int,
    modes: List[str],
    watcher: FailedTranslations,
    stats: "Optional[collections.Counter[str]]" = None,
    reasons: "Optional[collections.Counter[str]]" = None,
) -> Tuple[List[Dict[str, Any]], int, List[str]]:
    """Runs program ``seed`` plainly and in every mode (fhfuzz.harness.check_program); returns
    the mismatches, the number of outcomes compared and the failed translations."""
    program = seed_program(seed)
    result = check_program(program, modes, watcher)
    if stats is not None and reasons is not None:
        explain_stats(build(program.source, f"<fuzz program {seed}>"), program.args(), program.family, stats, reasons)
    return result.findings, result.compared, result.failed


def main(argv: Optional[List[str]] = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--seed", type=int, default=0, help="first program seed (default 0)")
    parser.add_argument("--count", type=int, default=200, help="number of programs (default 200)")
    parser.add_argument(
        "--modes",
        help="comma-separated subset of %s (or numba: the translator's numba backend); default: all, "
        "or those of --target" % ",".join(MODES),
    )
    parser.add_argument("--save", type=Path, help="directory for findings (.py and .fhrec)")
    parser.add_argument("--json", type=Path, help="write a summary as JSON")
    parser.add_argument(
        "--only",
        choices=sorted(FAMILIES),
        help="run only programs of this family (seeded: the next --count seeds of it from --seed; "
        "grammar: Hypothesis-driven runs only)",
    )
    parser.add_argument(
        "--stats", action="store_true", help="count closures and graph breaks in frames with cells (runs explain() too)"
    )
    hypo = parser.add_argument_group("Hypothesis-driven runs")
    hypo.add_argument("--examples", type=int, help="a fixed, derandomized batch of N programs (CI's)")
    hypo.add_argument("--minutes", type=float, help="generate programs for M minutes (progress every 10 s)")
    hypo.add_argument("--replay", action="store_true", help="only replay the findings in --database")
    hypo.add_argument("--target", choices=sorted(TARGETS), default="all", help="the modes to check (default all)")
    hypo.add_argument("--database", help="share findings: a directory, or redis://host:port[/db]")
    parser.add_argument(
        "--coverage-report",
        type=int,
        nargs="?",
        const=3000,
        metavar="N",
        help="print which language constructs N grammar programs (default 3000) use; exit 1 if any "
        "construct this CPython's syntax has is never generated",
    )
    args = parser.parse_args(argv)
    if args.coverage_report is not None:
        from fhfuzz import constructs

        if args.coverage_report < 1:
            parser.error("--coverage-report: expected a positive number of programs")
        return constructs.main(["--count", str(args.coverage_report)])
    modes = [m.strip() for m in (args.modes or ",".join(TARGETS[args.target])).split(",") if m.strip()]
    unknown = sorted(set(modes) - set(MODES) - set(EXTRA_MODES))
    if unknown:
        parser.error(f"--modes: unknown {unknown}; expected some of {list(MODES + EXTRA_MODES)}")
    if args.count < 1:
        parser.error("--count must be at least 1")
    chosen = [
        n for n, v in (("--examples", args.examples), ("--minutes", args.minutes), ("--replay", args.replay)) if v
    ]
    if len(chosen) > 1:
        parser.error(f"{' and '.join(chosen)}: expected one of --examples, --minutes and --replay")
    if chosen:
        return hypothesis_main(parser, args, modes)
    if args.only == "grammar":
        parser.error("--only grammar: grammar programs have no seeds; use --examples, --minutes or --replay")
    return seeded_main(args, modes)


def hypothesis_main(parser: argparse.ArgumentParser, args: argparse.Namespace, modes: List[str]) -> int:
    from fhfuzz.database import open_database

    if args.examples is not None and args.examples < 1:
        parser.error("--examples must be at least 1")
    if args.minutes is not None and args.minutes <= 0:
        parser.error("--minutes must be a positive number")
    if args.replay and not args.database:
        parser.error("--replay: expected --database SPEC, the database to replay")
    if args.examples is not None and args.database:
        parser.error("--examples runs a fixed batch without a database; use --minutes with --database")
    try:
        database = open_database(args.database) if args.database else None
    except ValueError as exc:
        parser.error(str(exc))
    campaign = Campaign(
        modes, [args.only] if args.only else None, database, args.save, progress_every=10 if args.minutes else None
    )
    if args.examples is not None:
        batch = f"{args.examples} examples, derandomized"
        for kept in campaign.run(args.examples, [Phase.generate, Phase.shrink], derandomize=True):
            print(f"FINDING [{kept['signature']}]\n{describe(kept['finding'])}")
    elif args.replay:
        batch = f"replay of {args.database}"
        for kept in replay_database(campaign):
            print(f"FINDING [{kept['signature']}] (replayed)\n{describe(kept['finding'])}")
    else:
        batch = f"{args.minutes:g} minutes"
        long_run(campaign, args.minutes)
    print(summary(campaign))
    if args.json:
        cpu = campaign.cpu_seconds()
        data = {
            "python": sys.version.split()[0],
            "batch": f"hypothesis, {batch}, modes {','.join(modes)}",
            "programs": campaign.programs,
            "compared": campaign.compared,
            "cpu_seconds": round(cpu, 2),
            "programs_per_cpu_second": round(campaign.programs / cpu, 2) if cpu else None,
            "mismatches": [dict(kept["finding"], saved=kept["paths"]) for kept in campaign.findings],
            "failed_translations": campaign.failed,
        }
        args.json.write_text(json.dumps(data, indent=1))
    return 1 if campaign.findings else 0


def seeded_main(args: argparse.Namespace, modes: List[str]) -> int:
    findings: List[Dict[str, Any]] = []
    failed: Dict[int, List[str]] = {}
    stats: "collections.Counter[str]" = collections.Counter()
    reasons: "collections.Counter[str]" = collections.Counter()
    compared = 0
    watcher = FailedTranslations()
    run = seeds(args.seed, args.count, args.only)
    for seed in run:
        found, n, messages = check_seed(seed, modes, watcher, stats if args.stats else None, reasons)
        compared += n
        findings += found
        if messages:
            failed[seed] = messages
    for finding in findings:
        print(
            f"MISMATCH seed={finding['seed']} mode={finding['mode']}\n  plain: {finding['expected']}\n"
            f"  {finding['mode']}: {finding['got']}\n" + "".join(f"    | {l}\n" for l in finding["source"].splitlines())
        )
        if args.save:
            note = f"seed {finding['seed']}, {finding['mode']} ({finding['signature']})"
            finding["saved"] = save_finding(args.save, seed_program(finding["seed"]), note)
            print("  saved: " + ", ".join(finding["saved"]))
    for seed, messages in failed.items():
        print(f"translation failed (ran unmodified) seed={seed}: " + "; ".join(messages))
    if args.stats:
        for key, value in sorted(stats.items()):
            print(f"stats: {key}: {value}")
        for reason, n in reasons.most_common(8):
            print(f"stats: not resumed in a frame with cells x{n}: {reason}")
    print(
        f"fuzz: {args.count} {args.only + ' ' if args.only else ''}programs (seeds {run[0]}-{run[-1]}) x modes {','.join(modes)} "
        f"on CPython {sys.version.split()[0]}: {compared - len(findings)} outcomes matched, {len(findings)} mismatched; "
        f"{len(failed)} programs with failed translations"
    )
    if args.json:
        args.json.write_text(
            json.dumps(
                {
                    "python": sys.version.split()[0],
                    "batch": f"seeds {run[0]}-{run[-1]}, modes {','.join(modes)}",
                    "programs": args.count,
                    "compared": compared,
                    "mismatches": findings,
                    "failed_translations": failed,
                    "stats": dict(stats),
                },
                indent=1,
            )
        )
    return 1 if findings else 0


if __name__ == "__main__":
    sys.exit(main())
