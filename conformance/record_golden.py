"""Record the golden records of every conformance case (run on CPython 3.11).

    python conformance/record_golden.py            # all cases
    python conformance/record_golden.py basics.    # cases whose name starts with a prefix

Golden records are recorded on one version and replayed on every version by run.py.
"""

from __future__ import annotations

import argparse
import sys

import _paths

GOLDEN_VERSION = (3, 11)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("prefix", nargs="*", help="only cases whose name starts with one of these")
    parser.add_argument("--any-version", action="store_true", help="allow recording on a Python other than 3.11")
    args = parser.parse_args(argv)
    if sys.version_info[:2] != GOLDEN_VERSION and not args.any_version:
        print(f"record_golden.py: golden records are recorded on CPython {GOLDEN_VERSION[0]}.{GOLDEN_VERSION[1]}")
        return 2
    _paths.setup()
    import fhcases
    from decisions import translate
    from framehook.records import record_call

    _paths.GOLDEN.mkdir(exist_ok=True)
    cases = fhcases.load_all()
    names = set()
    written = 0
    for case in cases:
        if case.name in names:
            raise SystemExit(f"duplicate case name {case.name}")
        names.add(case.name)
        if args.prefix and not any(case.name.startswith(p) for p in args.prefix):
            continue
        notes = [f"min_version={case.min_version[0]}.{case.min_version[1]}"]
        decisions = translate(case.fn, case.args, case.kwargs)
        rec = record_call(
            case.fn,
            case.args,
            case.kwargs,
            label=case.name,
            notes=notes,
            translator={"decisions": decisions} if decisions else None,
            path=_paths.GOLDEN / f"{case.name}.fhrec",
        )
        if rec.missing:
            print(f"warning: {case.name}: values not recorded: {', '.join(rec.missing)}")
        written += 1
    stale = [p for p in _paths.GOLDEN.glob("*.fhrec") if p.stem not in names]
    for path in stale:
        path.unlink()
    print(f"recorded {written} golden records in {_paths.GOLDEN} ({len(stale)} stale removed)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
