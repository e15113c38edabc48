"""``framehook replay FILE...``: one line per record.

Exit status: 0 every record matched; 1 a record's replay differed (MISMATCH); 2 a file
could not be read or replayed (ERROR), or the command line was wrong; 3 no mode ran for
a record (NOT RUN: every mode skipped); 4 a record's code gave two different outcomes in
two replays here (NONDETERMINISTIC). When records end differently, an error wins over a
mismatch, a mismatch over nondeterminism, and that over a record that did not run.
"""

from __future__ import annotations

import argparse
import sys
from typing import Sequence

from .errors import RecordError
from .limits import DEFAULT, Limits, parse_assignment
from . import modes
from .modes import describe_modes
from .text import printable
from .trust import ReplayPlan

EXIT_MISMATCH = 1
EXIT_ERROR = 2
EXIT_NOT_RUN = 3
EXIT_NONDETERMINISTIC = 4
# which status wins when several records end differently: an error, then a mismatch
_SEVERITY = {0: 0, EXIT_NOT_RUN: 1, EXIT_NONDETERMINISTIC: 2, EXIT_MISMATCH: 3, EXIT_ERROR: 4}


def _worse(a: int, b: int) -> int:
    return a if _SEVERITY[a] >= _SEVERITY[b] else b


def _parser() -> tuple[argparse.ArgumentParser, argparse.ArgumentParser]:
    """The top-level parser and the replay subcommand's (whose usage its errors print)."""
    parser = argparse.ArgumentParser(prog="framehook", description="framehook command-line tools")
    sub = parser.add_subparsers(dest="command")
    rp = sub.add_parser("replay", help="replay execution records and compare their outcomes")
    rp.add_argument("files", nargs="*", metavar="FILE")
    rp.add_argument(
        "--mode",
        action="append",
        help="replay only through this mode (repeatable; default: every mode; see --list-modes)",
    )
    rp.add_argument(
        "--list-modes",
        action="store_true",
        help="list the modes available here and those skipped because their package is absent",
    )
    rp.add_argument(
        "--trusted", action="store_true", help="allow pickle payloads in the records (runs code from the file!)"
    )
    rp.add_argument(
        "--source",
        action="store_true",
        help="use only the recorded source: do not even compare the recorded bytecode with it",
    )
    rp.add_argument(
        "--trust-bytecode",
        action="store_true",
        help="run the recorded bytecode (after static checks) when it differs from the source "
        "or there is no source; runs code the source does not show!",
    )
    rp.add_argument(
        "--limit",
        action="append",
        default=[],
        metavar="NAME=N",
        help="raise or lower a decoding limit (repeatable); NAME is one of "
        + ", ".join(f"{n} (default {getattr(DEFAULT, n)})" for n in Limits.names()),
    )
    rp.add_argument(
        "--plan",
        action="store_true",
        help="print what each replay would import and bind, and run nothing",
    )
    rp.add_argument(
        "-v",
        "--verbose",
        action="store_true",
        help="print what the replay imports and binds before it runs, then every difference and skip reason",
    )
    return parser, rp


def _plan_printer(name: str):
    def show(plan: ReplayPlan) -> None:
        print(f"PLAN     {printable(name)}")
        for line in plan.lines():
            print(f"  {printable(line)}")
        sys.stdout.flush()  # shown before the record's code runs

    return show


def main(argv: Sequence[str] | None = None) -> int:
    parser, rp = _parser()
    args = parser.parse_args(argv)
    if args.command != "replay":
        parser.print_help()
        return 2
    if args.list_modes:
        describe_modes()
        return 0
    if not args.files:
        rp.error("give at least one FILE (or --list-modes)")
    known = modes.known()
    for mode in args.mode or ():
        if mode not in known:
            rp.error(f"--mode {mode!r} is not a mode; expected one of {', '.join(known)}")
    changes = {}
    for text in args.limit:
        try:
            name, value = parse_assignment(text)
        except ValueError as exc:
            rp.error(str(exc))
        changes[name] = value
    limits = DEFAULT.replace(**changes)
    from .replay import plan, replay

    worst = 0
    for name in args.files:
        try:
            if args.plan:
                _plan_printer(name)(
                    plan(
                        name,
                        trusted=args.trusted,
                        prefer_source=args.source,
                        trust_bytecode=args.trust_bytecode,
                        limits=limits,
                    )
                )
                continue
            result = replay(
                name,
                modes=args.mode,
                trusted=args.trusted,
                prefer_source=args.source,
                trust_bytecode=args.trust_bytecode,
                limits=limits,
                show=_plan_printer(name) if args.verbose else None,
            )
        except RecordError as exc:
            print(f"ERROR    {printable(str(exc))}")
            worst = _worse(worst, EXIT_ERROR)
            continue
        except Exception as exc:  # never a raw traceback for one bad record
            print(f"ERROR    {printable(name)}: replay failed: {type(exc).__name__}: {printable(str(exc))}")
            worst = _worse(worst, EXIT_ERROR)
            continue
        if args.verbose or not result.ok:
            print(result.report(with_plan=not args.verbose))
        else:
            print(result.summary())
        if result.verdict == "MISMATCH":
            worst = _worse(worst, EXIT_MISMATCH)
        elif result.verdict == "NOT RUN":
            worst = _worse(worst, EXIT_NOT_RUN)
        elif result.verdict == "NONDETERMINISTIC":
            worst = _worse(worst, EXIT_NONDETERMINISTIC)
    sys.stdout.flush()
    return worst


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
