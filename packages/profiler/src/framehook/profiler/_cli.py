"""framehook-profile [-o FILE] [--format FORMAT] (script.py | -m module) [args...]

Runs a Python script (or module) under the profiler and writes the profile. The script's
own exit code is passed through, and an exception it raises is printed as Python would
print it (exit code 1); the profile is written in every case, to a temporary file if the
requested path cannot be written.
"""
from __future__ import annotations

import argparse
import builtins
import os
import sys
import tempfile
import traceback
import types
from typing import List, Optional, Tuple

from ._export import DEFAULT_SUFFIX, FORMATS, ExportError, format_for
from ._profiler import Profiler

PROG = "framehook-profile"


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog=PROG, description="Profile a Python script with framehook-profiler.",
        usage=f"{PROG} [-o FILE] [--format FORMAT] [--no-c-calls] (script.py | -m module) [args...]")
    parser.add_argument("-o", "--output", metavar="FILE",
                        help="where to write the profile (default: <script>.<format suffix>)")
    parser.add_argument("--format", choices=FORMATS,
                        help="output format (default: from the -o extension, else chrome)")
    parser.add_argument("--no-c-calls", action="store_true",
                        help="do not record calls of C functions")
    parser.add_argument("--summary", action="store_true",
                        help="also print the text summary to stderr")
    parser.add_argument("-m", dest="module", metavar="MODULE",
                        help="run a library module as a script (like python -m)")
    parser.add_argument("target", nargs=argparse.REMAINDER, help="script.py and its arguments")
    return parser


def _error(message: str) -> None:
    print(f"{PROG}: error: {message}", file=sys.stderr)


def _resolve_output(args: argparse.Namespace, stem: str) -> Tuple[str, str]:
    if args.output:
        fmt = args.format or (format_for(args.output) if _has_known_suffix(args.output) else None)
        if fmt is None:
            raise ValueError(f"cannot tell the format of {args.output!r} from its extension; "
                             f"pass --format ({', '.join(FORMATS)})")
        return args.output, fmt
    fmt = args.format or "chrome"
    return stem + DEFAULT_SUFFIX[fmt], fmt


def _has_known_suffix(path: str) -> bool:
    try:
        format_for(path)
    except ValueError:
        return False
    return True


def _run(code: types.CodeType, main_globals: dict, prof: Profiler) -> Tuple[int, Optional[BaseException]]:
    """Runs the code under the profiler; returns (exit code, uncaught exception)."""
    prof._hide_launcher(sys._getframe())  # runpy, this module and the entry point are not the script
    try:
        with prof:
            exec(code, main_globals)
    except SystemExit as exc:
        if exc.code is None:
            return 0, None
        if isinstance(exc.code, int):
            return exc.code, None
        print(exc.code, file=sys.stderr)
        return 1, None
    except BaseException as exc:  # the script's own exception: reported after writing
        return (130 if isinstance(exc, KeyboardInterrupt) else 1), exc
    return 0, None


def _print_script_exception(exc: BaseException, filename: str) -> None:
    tb = exc.__traceback__
    while tb is not None and tb.tb_frame.f_code.co_filename != filename:
        tb = tb.tb_next  # drop the profiler's own frames, as if Python ran the script
    traceback.print_exception(type(exc), exc, tb if tb is not None else exc.__traceback__)


def _load(args: argparse.Namespace) -> Tuple[types.CodeType, dict, str, List[str]]:
    if args.module:
        import runpy
        mod_name, spec, code = runpy._get_module_details(args.module)  # type: ignore[attr-defined]
        filename = spec.origin or args.module
        main_globals = {"__name__": "__main__", "__file__": filename, "__spec__": spec,
                        "__loader__": spec.loader, "__package__": spec.parent,
                        "__builtins__": builtins, "__doc__": None, "__cached__": None}
        return code, main_globals, filename, [filename] + args.target
    script = args.target[0]
    try:
        with open(script, "rb") as fh:
            source = fh.read()
    except OSError as exc:
        raise FileNotFoundError(f"cannot open script {script!r}: {exc.strerror or exc}") from exc
    filename = os.path.abspath(script)
    code = compile(source, filename, "exec", dont_inherit=True)
    main_globals = {"__name__": "__main__", "__file__": filename, "__builtins__": builtins,
                    "__doc__": None, "__package__": None, "__spec__": None,
                    "__loader__": None, "__cached__": None}
    return code, main_globals, filename, [script] + args.target[1:]


def main(argv: Optional[List[str]] = None) -> int:
    args = _parser().parse_args(argv)
    if not args.module and not args.target:
        _parser().print_usage(sys.stderr)
        _error("no script given")
        return 2
    stem = args.module.rpartition(".")[2] if args.module else \
        os.path.splitext(os.path.basename(args.target[0]))[0]
    try:
        output, fmt = _resolve_output(args, stem)
        code, main_globals, filename, script_argv = _load(args)
    except (ValueError, FileNotFoundError, SyntaxError, ImportError) as exc:
        _error(str(exc))
        return 2

    main_module = types.ModuleType("__main__")
    main_module.__dict__.update(main_globals)
    saved = sys.argv[:], sys.path[:], sys.modules.get("__main__")
    sys.argv[:] = script_argv
    if not args.module:
        sys.path.insert(0, os.path.dirname(filename))
    sys.modules["__main__"] = main_module
    prof = Profiler(c_calls=not args.no_c_calls)
    try:
        status, exc = _run(code, main_module.__dict__, prof)
    finally:
        sys.argv[:], sys.path[:] = saved[0], saved[1]
        if saved[2] is not None:
            sys.modules["__main__"] = saved[2]

    profile = prof.profile
    try:
        written = profile.export(output, fmt)
    except ExportError as err:
        _error(str(err))
        fd, fallback = tempfile.mkstemp(prefix=f"{stem}-", suffix=DEFAULT_SUFFIX[fmt])
        os.close(fd)
        written = profile.export(fallback, fmt)
        print(f"{PROG}: the profile was written to {written} instead", file=sys.stderr)
        status = status or 1
    else:
        print(f"{PROG}: wrote {fmt} profile to {written} ({len(profile.events)} events, "
              f"{len(profile.threads)} thread(s))", file=sys.stderr)
    if args.summary:
        print(profile.summary(), file=sys.stderr)
    if exc is not None:
        _print_script_exception(exc, filename)
    return status


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
