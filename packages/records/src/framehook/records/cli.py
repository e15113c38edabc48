"""``framehook replay FILE...``: one line per record; exit 1 on a mismatch, 2 on unreadable files."""

from __future__ import annotations

import argparse
import sys
from typing import Sequence

from .errors import RecordError
from .limits import DEFAULT, Limits, parse_assignment
from .modes import describe_modes
from .text import printable


def _parser() -> argparse.ArgumentParser:
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
    rp.add_argument("-v", "--verbose", action="store_true", help="print every difference and skip reason")
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    parser = _parser()
    args = parser.parse_args(argv)
    if args.command != "replay":
        parser.print_help()
        return 2
    if args.list_modes:
        describe_modes()
        return 0
    if not args.files:
        parser.error("replay: give at least one FILE (or --list-modes)")
    changes = {}
    for text in args.limit:
        try:
            name, value = parse_assignment(text)
        except ValueError as exc:
            parser.error(f"replay: {exc}")
        changes[name] = value
    limits = DEFAULT.replace(**changes)
    from .replay import replay

    worst = 0
    for name in args.files:
        try:
            result = replay(
                name,
                modes=args.mode,
                trusted=args.trusted,
                prefer_source=args.source,
                trust_bytecode=args.trust_bytecode,
                limits=limits,
            )
        except RecordError as exc:
            print(f"ERROR    {printable(str(exc))}")
            worst = max(worst, 2)
            continue
        except Exception as exc:  # never a raw traceback for one bad record
            print(f"ERROR    {printable(name)}: replay failed: {type(exc).__name__}: {printable(str(exc))}")
            worst = max(worst, 2)
            continue
        print(result.report() if args.verbose or not result.ok else result.summary())
        if not result.ok:
            worst = max(worst, 1)
    sys.stdout.flush()
    return worst


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
