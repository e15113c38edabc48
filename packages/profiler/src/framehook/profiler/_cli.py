"""framehook-profile [-o FILE] [--format FORMAT] (script.py | -m module) [args...]

Runs a Python script (or module) under the profiler and writes the profile. The script's
own exit code is passed through, and an exception it raises is printed as Python would
print it (exit code 1). As the interpreter does at exit, the command line then waits for
the non-daemon threads still running, still recording; the profile is written after that,
in every case, to a temporary file if the requested path cannot be written by then (a
path that cannot be written before the script runs is refused at once).
"""

from __future__ import annotations

import argparse
import builtins
import contextlib
import os
import signal
import sys
import threading
import traceback
import types
from typing import TYPE_CHECKING, Any, Iterator, List, Optional, Tuple

from ._compat import no_second_exit_wait, shutdown_error_report
from ._export import (
    DEFAULT_SUFFIX,
    FORMATS,
    DirectoryNotWritable,
    ExportError,
    check_writable,
    failure_reason,
    format_for,
)
from ._profile import Profile
from ._profiler import Profiler
from ._progress import Progress

if TYPE_CHECKING:  # (imported when --follow is given: a plain run needs neither)
    from ._follow import Follow

PROG = "framehook-profile"
PROGRESS_AFTER = 1.0  # seconds of post-processing before progress is shown (on a terminal)
# Events kept per thread when only aggregated outputs are written (pstats, text, svg,
# collapsed stacks): they stay exact with older events folded as recording goes, so memory
# need not follow the run.
AGGREGATE_RING = 1 << 16
AGGREGATED_FORMATS = ("pstats", "text", "svg", "html", "collapsed", "collapsed-calls")


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog=PROG,
        description="Profile a Python script with framehook-profiler.",
        usage=f"{PROG} [-o FILE] [--format FORMAT] [--no-c-calls] [--max-events N] "
        "[--summary] [--follow] [--async] (script.py | -m module) [args...]",
        epilog="Options end at the script or at -m MODULE, as with python: "
        "everything after them is the script's own argv.",
        allow_abbrev=False,
    )  # _split_argv must know every option that takes a value
    parser.add_argument(
        "-o", "--output", metavar="FILE", help="where to write the profile (default: <script>.<format suffix>)"
    )
    parser.add_argument("--format", choices=FORMATS, help="output format (default: from the -o extension, else chrome)")
    parser.add_argument("--no-c-calls", action="store_true", help="do not record calls of C functions")
    parser.add_argument("--summary", action="store_true", help="also print the text summary to stderr")
    parser.add_argument(
        "--max-events",
        metavar="N",
        help="keep at most N events per output that lists every call "
        "(Chrome trace, speedscope); the counts and times of pstats, "
        "the summary and the flame graph stay exact",
    )
    parser.add_argument(
        "--follow",
        action="store_true",
        help="also profile the Python processes the script starts (os.fork, multiprocessing, "
        "subprocess), each written to a part merged into the output as a process of its own",
    )
    parser.add_argument(
        "--async",
        dest="async_tasks",
        action="store_true",
        help="give each asyncio task a track of its own (its coroutine frames, and its waits "
        "between steps as 'await' frames), as if it were a thread",
    )
    parser.add_argument("-m", dest="module", metavar="MODULE", help="run a library module as a script (like python -m)")
    return parser


_TAKES_VALUE = ("-o", "--output", "--format", "--max-events")


def _split_argv(argv: List[str]) -> Tuple[List[str], Optional[str], List[str]]:
    """(our options, -m's module or None, the script's argv): like python's own command line,
    our options end at the first argument that is not one of them (the script) or at
    -m MODULE, so the script's or module's own options (even --help) are passed on."""
    i = 0
    while i < len(argv):
        arg = argv[i]
        if arg == "-m":
            if i + 1 == len(argv):
                return argv[: i + 1], None, []  # argparse reports the missing module
            return argv[:i], argv[i + 1], argv[i + 2 :]
        if arg.startswith("-m") and not arg.startswith("--"):
            return argv[:i], arg[2:], argv[i + 1 :]  # -mpackage.module, as python accepts
        if arg == "--":
            return argv[:i], None, argv[i + 1 :]
        if arg == "-" or not arg.startswith("-"):
            return argv[:i], None, argv[i:]
        i += 2 if arg in _TAKES_VALUE else 1
    return argv, None, []


def _error(message: str) -> None:
    print(f"{PROG}: error: {message}", file=sys.stderr)


def _resolve_output(args: argparse.Namespace, stem: str) -> Tuple[str, str]:
    if args.output:
        fmt = args.format or (format_for(args.output) if _has_known_suffix(args.output) else None)
        if fmt is None:
            raise ValueError(
                f"cannot tell the format of {args.output!r} from its extension; pass --format ({', '.join(FORMATS)})"
            )
        return args.output, fmt
    fmt = args.format or "chrome"
    return stem + DEFAULT_SUFFIX[fmt], fmt


def _max_events(value: Optional[str]) -> Optional[int]:
    """--max-events as a number, or ValueError saying what was expected."""
    if value is None:
        return None
    try:
        number = int(value)
    except ValueError:
        number = 0
    if number <= 0:
        raise ValueError(f"--max-events: expected a positive whole number of events, got {value!r}")
    return number


def _check_output(output: str, given: bool) -> None:
    """ValueError, naming -o, if the profile could not be written at ``output``."""
    try:
        check_writable(output)
    except DirectoryNotWritable as exc:  # (the file itself may well be writable)
        where = f"-o {output}: " if given else f"{output}: "
        raise ValueError(
            f"{where}cannot write the profile: {failure_reason(exc)}" + ("" if given else "; choose where with -o")
        ) from exc
    except OSError as exc:
        reason = failure_reason(exc)
        if given:
            raise ValueError(f"-o {output}: cannot write the profile there ({reason})") from exc
        raise ValueError(f"cannot write the profile to {output} ({reason}); choose where with -o") from exc


def _has_known_suffix(path: str) -> bool:
    try:
        format_for(path)
    except ValueError:
        return False
    return True


def _run(code: types.CodeType, main_globals: dict, filename: str, prof: Profiler, exiting: bool) -> int:
    """Runs the code under the profiler and ends it as the interpreter would (_script_end);
    returns the exit code."""
    prof._hide_launcher(sys._getframe())  # runpy, this module and the entry point are not the script
    prof._mute(_script_end)
    with prof:
        try:
            exec(code, main_globals)
        except BaseException as exc:  # the script's own: reported as Python would
            ended: Optional[BaseException] = exc
        else:
            ended = None
        return _script_end(ended, filename, exiting)


def _script_end(ended: Optional[BaseException], filename: str, exiting: bool) -> int:
    """What the interpreter does once the main module's code has ended, before its exit
    handlers: reports how the code ended, then (when the process exits next) waits for the
    non-daemon threads. The profiler records the threads meanwhile; this call, with all it
    calls, is left out of the trees (the main thread's tree ends with the script)."""
    status = _report_end(ended, filename)
    if exiting:
        _wait_for_threads()
    return status


def _report_end(ended: Optional[BaseException], filename: str) -> int:
    """Prints what Python prints for the way the script ended; returns the exit code."""
    if ended is None:
        return 0
    if isinstance(ended, SystemExit):
        if ended.code is None:
            return 0
        if isinstance(ended.code, int):
            return ended.code
        print(ended.code, file=sys.stderr)
        return 1
    _print_script_exception(ended, filename)
    return 130 if isinstance(ended, KeyboardInterrupt) else 1


def _print_script_exception(exc: BaseException, filename: str) -> None:
    tb = exc.__traceback__
    while tb is not None and tb.tb_frame.f_code.co_filename != filename:
        tb = tb.tb_next  # drop the profiler's own frames, as if Python ran the script
    traceback.print_exception(type(exc), exc, tb if tb is not None else exc.__traceback__)


def _wait_for_threads() -> None:
    """Makes the interpreter's own wait for threads at exit, now, on the main thread.

    threading._shutdown is what the interpreter calls, by name, at exit on 3.9-3.15. It
    first runs threading's exit callbacks (they tell the workers of a concurrent.futures
    executor left open to finish: joining the threads without them would hang), marks the
    main thread finished, then joins every non-daemon thread, also those started while it
    waits. Once the main thread is marked, the interpreter's own call after the profile is
    written finds no thread to wait for (3.15 joins any started since). Ctrl-C ends the
    wait as at exit: the exception is reported as the interpreter reports it (3.13 and
    3.14 report one that interrupts joining a thread themselves, and return), the exit
    code stays the script's, and the interpreter does not wait again.
    """
    wait = threading._shutdown  # type: ignore[attr-defined]
    try:
        wait()
    except BaseException as exc:  # Ctrl-C (or an exit callback's error): the wait ends
        # The interpreter waits once: after an exception it goes on to exit without waiting
        # again, which its own call could do if the exception came before the main thread
        # was marked (from an exit callback).
        threading._shutdown = no_second_exit_wait  # type: ignore[attr-defined]
        _report_wait_exception(exc, wait.__code__)


def _report_wait_exception(exc: BaseException, wait_code: types.CodeType) -> None:
    """Prints an exception of the wait as the interpreter prints one of its own wait at exit
    (an ignored exception: the exit code stays the script's)."""
    tb = exc.__traceback__
    while tb is not None and tb.tb_frame.f_code is not wait_code:
        tb = tb.tb_next  # from threading's frame down, as the interpreter shows it
    sys.stderr.write(shutdown_error_report(exc, tb))
    sys.stderr.flush()


def _load(args: argparse.Namespace) -> Tuple[types.CodeType, dict, str, List[str]]:
    if args.module:
        import runpy

        mod_name, spec, code = runpy._get_module_details(args.module)  # type: ignore[attr-defined]
        filename = spec.origin or args.module
        main_globals = {
            "__name__": "__main__",
            "__file__": filename,
            "__spec__": spec,
            "__loader__": spec.loader,
            "__package__": spec.parent,
            "__builtins__": builtins,
            "__doc__": None,
            "__cached__": None,
        }
        return code, main_globals, filename, [filename] + args.target
    script = args.target[0]
    try:
        with open(script, "rb") as fh:
            source = fh.read()
    except OSError as exc:
        raise FileNotFoundError(f"cannot open script {script!r}: {exc.strerror or exc}") from exc
    filename = os.path.abspath(script)
    code = compile(source, filename, "exec", dont_inherit=True)
    main_globals = {
        "__name__": "__main__",
        "__file__": filename,
        "__builtins__": builtins,
        "__doc__": None,
        "__package__": None,
        "__spec__": None,
        "__loader__": None,
        "__cached__": None,
    }
    return code, main_globals, filename, [script] + args.target[1:]


def command_line() -> int:
    """Entry point of framehook-profile and python -m framehook.profiler."""
    return main(exiting=True)


def main(argv: Optional[List[str]] = None, *, exiting: bool = False) -> int:
    """Profiles the script named in argv (default: sys.argv[1:]); returns its exit code.

    exiting: the process exits once this returns (the command line), so the script's end
    is the interpreter's shutdown: after the script's code, the non-daemon threads are
    waited for as the interpreter would (while recording, on the main thread, which must be
    the caller), before the profile is written. Called within a program that goes on, the
    threads the script left are that program's: recording ends with the script's code.
    """
    ours, module, target = _split_argv(sys.argv[1:] if argv is None else list(argv))
    args = _parser().parse_args(ours)
    if module is not None:
        args.module = module
    args.target = target
    if not args.module and not args.target:
        _parser().print_usage(sys.stderr)
        _error("no script given")
        return 2
    stem = args.module.rpartition(".")[2] if args.module else os.path.splitext(os.path.basename(args.target[0]))[0]
    try:
        max_events = _max_events(args.max_events)
        output, fmt = _resolve_output(args, stem)
        _check_output(output, bool(args.output))
        code, main_globals, filename, script_argv = _load(args)
    except (ValueError, FileNotFoundError, SyntaxError, ImportError) as exc:
        _error(str(exc))
        return 2
    options: dict = {"c_calls": not args.no_c_calls}
    if args.async_tasks:
        options["async_tasks"] = True
    if max_events is not None:
        options["max_events"] = max_events
    elif fmt in AGGREGATED_FORMATS:
        options["max_events"] = AGGREGATE_RING
    follow: Optional[Follow] = None
    if args.follow:
        from ._follow import Follow, FollowError

        try:  # (before the script runs: an unwritable place for the parts is refused now)
            follow = Follow(output, fmt, options)
        except FollowError as exc:
            _error(str(exc))
            return 2

    main_module = types.ModuleType("__main__")
    main_module.__dict__.update(main_globals)
    saved = sys.argv[:], sys.path[:], sys.modules.get("__main__")
    sys.argv[:] = script_argv
    if not args.module:
        sys.path.insert(0, os.path.dirname(filename))
    sys.modules["__main__"] = main_module
    prof = Profiler(**options)
    pid = os.getpid()
    if follow is not None:
        follow.watch(prof)
    try:
        status = _run(code, main_module.__dict__, filename, prof, exiting)
    finally:
        sys.argv[:], sys.path[:] = saved[0], saved[1]
        if saved[2] is not None:
            sys.modules["__main__"] = saved[2]
        if follow is not None and os.getpid() == pid:
            follow.unwatch()

    if os.getpid() != pid or prof.state == "forked":
        # A child the script forked, whose code ended here too: the profile is the
        # parent's, which writes it; the child writes nothing and says nothing of it.
        return status
    profile = prof.profile
    if max_events is None and "max_events" in options:
        profile.dropped_by = f"{PROG}'s default ring of {AGGREGATE_RING:,} events per thread (--max-events N widens it)"
    with _ended_by_signals():
        if follow is not None:
            written = _write_followed(profile, follow, output, fmt, script_argv)
        else:
            written = _write(profile, output, fmt, stem, max_events is not None)
        if written is None:
            status = status or 1
        if args.summary:
            print(profile.summary(), file=sys.stderr)
    return status


def _write(profile: Profile, output: str, fmt: str, stem: str, limited: bool) -> Optional[str]:
    """Writes the profile to ``output`` or, failing that, to a temporary file; returns the
    path written, None for the temporary file. On a terminal, shows progress meanwhile.
    ``limited``: --max-events was given (what it left out is said)."""
    progress = Progress(sys.stderr, 0, f"writing the {fmt} file", after=PROGRESS_AFTER)

    def calls_written(calls: int) -> None:
        progress(2 * calls)  # a begin and an end event per call, in both event formats

    try:
        written = profile.export(output, fmt, progress=calls_written)
    except ExportError as err:
        progress.finish()
        _error(str(err))
        import tempfile  # (only here: it takes a while to import)

        try:
            fd, fallback = tempfile.mkstemp(prefix=f"{stem}-", suffix=DEFAULT_SUFFIX[fmt])
        except OSError as exc:  # (no usable temporary directory either)
            _error(f"nor could a temporary file be made for it ({failure_reason(exc)}); the profile is lost")
            return None
        os.close(fd)
        try:
            written = profile.export(fallback, fmt, progress=calls_written)
        except ExportError as exc:
            with contextlib.suppress(OSError):
                os.unlink(fallback)
            _error(f"{exc}; the profile is lost")
            return None
        finally:
            progress.finish()
        print(f"{PROG}: the profile was written to {written} instead", file=sys.stderr)
        return None
    finally:
        progress.finish()
    # (counts known without building the trees, which no format needs); events the ring
    # dropped were recorded too: the aggregated formats count them
    dropped = profile.aggregates().dropped if limited or fmt in AGGREGATED_FORMATS else 0
    print(
        f"{PROG}: wrote {fmt} profile to {written} ({profile.event_count + dropped} events recorded, "
        f"{len(profile.thread_names)} thread(s))"
        + (f"; the oldest {dropped} events were left out (--max-events)" if dropped and limited else ""),
        file=sys.stderr,
    )
    return written


def _write_followed(profile: Profile, follow: Follow, output: str, fmt: str, command: List[str]) -> Optional[str]:
    """Writes this process's part, waits for the children still running, and merges every
    part into ``output``; returns the path written, None if nothing could be."""
    from ._follow import describe, part_format
    from ._merge import Source, merge_into

    try:
        try:
            own = profile.export(os.path.join(follow.parts, f"{os.getpid()}.part"), part_format(fmt))
            children = follow.children(say=lambda text: print(f"{PROG}: {text}", file=sys.stderr))
            sources = [Source(own, f"{PROG} {os.getpid()}: {describe(command)}", os.getpid(), profile.start_ns)]
            sources += [Source(p.path, p.label, p.pid, p.start_ns) for p in children.parts]
            missing = children.missing()
            written = merge_into(sources, fmt, output, missing)
        except OSError as exc:
            _error(f"cannot write the merged profile to {output} ({failure_reason(exc)})")
            return None
    finally:
        follow.cleanup()
    for note in missing:
        _error(note)
    print(
        f"{PROG}: wrote {fmt} profile to {written} ({len(sources)} process(es): this one and "
        f"{len(sources) - 1} child(ren)" + (f"; {len(missing)} missing" if missing else "") + ")",
        file=sys.stderr,
    )
    return written


class _Ended(BaseException):
    """A signal that ends the process arrived while the profile was being written."""

    def __init__(self, signum: int) -> None:
        super().__init__(signum)
        self.signum = signum


_ENDING_SIGNALS = tuple(getattr(signal, name) for name in ("SIGTERM", "SIGHUP") if hasattr(signal, name))


@contextlib.contextmanager
def _ended_by_signals() -> Iterator[None]:
    """While the profile is written, SIGTERM and SIGHUP, where they would end the process
    without running any code (their default), first unwind the write, which deletes its
    temporary file; then the process ends by the signal as it would have. (Ctrl-C unwinds
    the same way, as KeyboardInterrupt.)"""
    if threading.current_thread() is not threading.main_thread():
        yield  # (handlers can only be set from the main thread)
        return
    ours: List[int] = []

    def ended(signum: int, frame: Any) -> None:
        raise _Ended(signum)

    try:
        for signum in _ENDING_SIGNALS:
            if signal.getsignal(signum) is signal.SIG_DFL:
                signal.signal(signum, ended)
                ours.append(signum)
        yield
    except _Ended as exc:
        _restore(ours)
        signal.raise_signal(exc.signum)  # ends the process (the default handler)
        raise SystemExit(128 + exc.signum)  # (in case it did not)
    finally:
        _restore(ours)


def _restore(signals: List[int]) -> None:
    while signals:
        signal.signal(signals.pop(), signal.SIG_DFL)


if __name__ == "__main__":  # pragma: no cover
    sys.exit(command_line())
