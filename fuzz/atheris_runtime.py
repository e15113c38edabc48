"""Coverage-guided fuzzing of framehook.runtime's C entry points with atheris (libFuzzer).

    python fuzz/atheris_runtime.py [--crashes DIR] [libFuzzer options] [CORPUS_DIR ...]
    python fuzz/atheris_runtime.py CRASH_FILE          # libFuzzer replays one input
    python fuzz/atheris_runtime.py --run FILE ...      # the same without atheris
    python fuzz/atheris_runtime.py --describe FILE ... # what an input decodes to
    python fuzz/atheris_runtime.py --check-leaks FILE ...

Each input's bytes decide a small generated function (signature, free variables, body)
and how the runtime meets it: how the callback is installed (`set_eval_frame`, `enable`,
`call_with`, `CallbackWrapper`, on another thread), the calls and their arguments, what the
callback returns on each miss (None, `GuardedCode` with a compatible or incompatible
replacement code object, objects of the wrong type, a `GuardedCode` it fails to build, an
exception, `BaseException` subclasses included), what it does first (reads or keeps the
frame view, resets the code, changes the thread's callback), and what each guard returns
(bools, other objects, objects whose `__bool__` raises or returns a non-bool, exceptions,
a guard that resets the cache, a `GuardChecker` calling back into Python).

The oracle: each call's outcome (value, or exception type and message) is the one the
events of that call imply — the plain function's, the replacement code's (run as a plain
function with the original's globals, defaults and closure), the `TypeError` of a
rejected replacement or a bad callback result, or the exception a callback or guard raised.
Afterwards no callback is left set and the eval function is not installed. A violation
raises `AssertionError`, which atheris reports as a crash like a signal: libFuzzer writes
the input to `crash-*` under `--crashes` (default: fuzz/atheris-crashes/).

The decoding reads the bytes itself (no atheris.FuzzedDataProvider), so `--describe` and
`--run` work on every CPython, also where atheris does not install.
"""

from __future__ import annotations

import argparse
import dataclasses
import functools
import gc
import inspect
import os
import sys
import threading
import types
from pathlib import Path
from typing import Any, Callable, Dict, List, Optional, Sequence, Tuple


if __name__ == "__main__":
    # imported by main(), or when fuzzing by the first input, once libFuzzer is loaded
    rt: Any = None
else:
    import framehook.runtime as rt

CRASH_DIR = Path(__file__).resolve().parent / "atheris-crashes"

# ---- reading the input -------------------------------------------------------------


class Reader:
    """Bytes as a stream of small choices; past the end every choice is the first option."""

    def __init__(self, data: bytes) -> None:
        self.data = data
        self.pos = 0

    def byte(self) -> int:
        if self.pos >= len(self.data):
            return 0
        self.pos += 1
        return self.data[self.pos - 1]

    def pick(self, options: Sequence[Any]) -> Any:
        return options[self.byte() % len(options)]

    def count(self, low: int, high: int) -> int:
        return low + self.byte() % (high - low + 1)


# ---- what an input decodes to ------------------------------------------------------

# (parameter list, names the body reads, fewest and most positional arguments it takes)
SIGNATURES = [
    ("", (), 0, 0),
    ("a", ("a",), 1, 1),
    ("a, b", ("a", "b"), 2, 2),
    ("a, b=2", ("a", "b"), 1, 2),
    ("a, /, b", ("a", "b"), 2, 2),
    ("a, *, k=3", ("a", "k"), 1, 1),
    ("*args", ("args",), 0, 3),
    ("a, *args, **kw", ("a", "args", "kw"), 1, 3),
]
FREE_VARS = [(), ("v",), ("v", "w"), ("w",)]
BODIES = ["tuple", "sum", "raise", "helper", "cell", "yield"]
EXTRA_LOCALS = [0, 0, 1, 8, 64, 300, 3000]
VALUES = [0, 1, -7, 2.5, "s", None, (1, 2), [3]]
KEYWORDS = ["a", "b", "k", "z"]
FITTING_KEYWORDS = {5: ["k"], 7: ["b", "k", "z"]}  # by signature
INSTALLS = ["set", "enable", "call_with", "wrapper", "thread"]
CALL_MODES = ["hook", "hook", "hook", "run_only", "off"]
RESPONSES = ["none", "guarded", "guarded", "guarded", "wrong", "raise", "bad_guarded"]
WRONG_RESULTS = ["int", "str", "code", "type", "tuple", "true"]
EXCEPTIONS = ["ValueError", "StopIteration", "FuzzBaseError", "FuzzInterrupt", "RecursionError"]
REPLACEMENTS = ["same", "twin", "twin", "other_signature", "other_free", "own", "helper"]
GUARDS = ["true", "false", "raise", "raise_base", "bool_raises", "bool_not_bool", "len_negative", "truthy", "falsy"]
GUARDS += ["reset", "checker_true", "checker_false", "checker_raise", "checker_raise_base"]
BEFORE = ["nothing", "nothing", "read_view", "keep_view", "reset", "set_none", "set_false", "set_self", "call_target"]
HELPER_POLICIES = ["skip", "passthrough"]
BAD_API = ["none", "none", "none", "set_eval_frame", "call_with_callback", "call_with_fn", "wrapper_args"]
BAD_API += ["enable", "guarded_code", "guarded_check_fn", "reset_code", "cache_entries", "guard_error_hook"]


@dataclasses.dataclass
class Source:
    """A generated function: `def target(<params>)` inside a factory taking the free variables."""

    signature: int
    free: Tuple[str, ...]
    body: str
    extra_locals: int
    tag: str

    def text(self, brief: bool = False) -> str:
        params, names = SIGNATURES[self.signature][:2]
        names = names + self.free
        listed = "".join(n + ", " for n in names)
        lines = [f"x{i} = {i}" for i in range(self.extra_locals)]
        if brief and self.extra_locals > 2:
            lines[1:-1] = [f"...  # x0 to x{self.extra_locals - 1}"]
        if self.body == "tuple":
            lines.append(f"return ({self.tag!r}, {listed})")
        elif self.body == "sum":
            lines.append(f"return ({self.tag!r}, {' + '.join(names) or '0'})")
        elif self.body == "raise":
            lines.append(f"raise ValueError({self.tag!r}, {listed})")
        elif self.body == "helper":
            lines.append(f"return ({self.tag!r}, helper({listed}))")
        elif self.body == "cell":  # the arguments become cells
            lines.append(f"g = lambda: ({listed})")
            lines.append(f"return ({self.tag!r}, g())")
        else:
            lines.append(f"yield {self.tag!r}")
            lines.append(f"yield ({listed})")
        inner = "".join("        " + line + "\n" for line in lines)
        return f"def factory({', '.join(self.free)}):\n    def target({params}):\n{inner}    return target\n"


@dataclasses.dataclass
class Response:
    """What the callback does on one miss of the target's code."""

    kind: str
    before: str
    replacement: str = ""
    replacement_source: Optional[Source] = None
    guards: Tuple[str, ...] = ()
    wrong: str = ""
    exception: str = ""


@dataclasses.dataclass
class Call:
    mode: str
    args: Tuple[Any, ...]
    kwargs: Dict[str, Any]


@dataclasses.dataclass
class Case:
    target: Source
    install: str
    helper_policy: str
    guard_error_hook: bool
    responses: List[Response]
    calls: List[Call]
    bad_api: str


def decode_source(
    r: Reader, tag: str, signature: Optional[int] = None, free: Optional[Tuple[str, ...]] = None
) -> Source:
    sig = r.count(0, len(SIGNATURES) - 1) if signature is None else signature
    fv = r.pick(FREE_VARS) if free is None else free
    return Source(sig, fv, r.pick(BODIES), r.pick(EXTRA_LOCALS), tag)


def decode_response(r: Reader, index: int, target: Source) -> Response:
    resp = Response(r.pick(RESPONSES), r.pick(BEFORE))
    if resp.kind == "guarded":
        resp.replacement = r.pick(REPLACEMENTS)
        tag = f"r{index}"
        if resp.replacement == "twin":
            resp.replacement_source = decode_source(r, tag, target.signature, target.free)
        elif resp.replacement == "other_signature":
            resp.replacement_source = decode_source(r, tag, free=target.free)
        elif resp.replacement == "other_free":
            resp.replacement_source = decode_source(r, tag, target.signature)
        resp.guards = tuple(r.pick(GUARDS) for _ in range(r.count(1, 3)))
    elif resp.kind == "wrong":
        resp.wrong = r.pick(WRONG_RESULTS)
    elif resp.kind == "raise":
        resp.exception = r.pick(EXCEPTIONS)
    return resp


def decode(data: bytes) -> Case:
    r = Reader(data)
    target = decode_source(r, "t")
    install = r.pick(INSTALLS)
    helper_policy = r.pick(HELPER_POLICIES)
    error_hook = r.byte() % 2 == 1
    bad_api = r.pick(BAD_API)
    responses = [decode_response(r, i, target) for i in range(r.count(1, 3))]
    calls = []
    for _ in range(r.count(1, 4)):
        mode = r.pick(CALL_MODES)
        # mostly calls the signature accepts, so that the hook is reached
        fits = r.byte() % 8 != 7
        low, high = SIGNATURES[target.signature][2:] if fits else (0, 3)
        args = tuple(r.pick(VALUES) for _ in range(r.count(low, high)))
        keywords = FITTING_KEYWORDS.get(target.signature, ()) if fits else KEYWORDS
        count = r.pick([0, 0, 1, 2]) if keywords else 0
        kwargs = {r.pick(keywords): r.pick(VALUES) for _ in range(count)}
        calls.append(Call(mode, args, kwargs))
    return Case(target, install, helper_policy, error_hook, responses, calls, bad_api)


def describe(case: Case) -> str:
    out = [f"target ({case.target}):", case.target.text(brief=True).rstrip()]
    out.append(f"install={case.install} helper_policy={case.helper_policy} guard_error_hook={case.guard_error_hook}")
    out.append(f"bad_api={case.bad_api}")
    for i, resp in enumerate(case.responses):
        fields = {k: v for k, v in dataclasses.asdict(resp).items() if v and k != "replacement_source"}
        out.append(f"callback result {i}: {fields}")
        if resp.replacement_source is not None:
            out.append("    replacement code: " + resp.replacement_source.text(brief=True).replace("\n", "\n    "))
    for i, call in enumerate(case.calls):
        out.append(f"call {i}: mode={call.mode} args={call.args!r} kwargs={call.kwargs!r}")
    return "\n".join(out)


# ---- objects the input asks for ----------------------------------------------------


class FuzzBaseError(BaseException):
    """A BaseException that is not an Exception: guards and callbacks must let it through."""


class FuzzInterrupt(KeyboardInterrupt):
    pass


class BoolRaises:
    def __bool__(self) -> bool:
        raise ArithmeticError("__bool__ of a guard result raised")


class BoolNotBool:
    def __bool__(self) -> Any:
        return 2


class LenNegative:
    def __len__(self) -> int:
        return -1


def helper(*args: Any) -> int:
    return len(args)


EXCEPTION_TYPES = {
    "ValueError": ValueError,
    "StopIteration": StopIteration,
    "FuzzBaseError": FuzzBaseError,
    "FuzzInterrupt": FuzzInterrupt,
    "RecursionError": RecursionError,
}


@functools.lru_cache(maxsize=1024)
def compiled(text: str, tag: str) -> types.CodeType:
    return compile(text, f"<fuzz {tag}>", "exec", dont_inherit=True)  # (not this module's __future__ flags)


def build(source: Source, free_values: Dict[str, Any]) -> types.FunctionType:
    namespace: Dict[str, Any] = {"helper": helper}
    exec(compiled(source.text(), source.tag), namespace)
    fn = namespace["factory"](*(free_values[n] for n in source.free))
    # a code object of its own: the runtime keeps cache entries and skip marks on it
    fn.__code__ = fn.__code__.replace()
    return fn


FREE_VALUES = {"v": 10, "w": "w"}

_LAYOUT_FLAGS = (
    inspect.CO_OPTIMIZED
    | inspect.CO_NEWLOCALS
    | inspect.CO_VARARGS
    | inspect.CO_VARKEYWORDS
    | inspect.CO_GENERATOR
    | inspect.CO_COROUTINE
    | inspect.CO_ASYNC_GENERATOR
    | inspect.CO_ITERABLE_COROUTINE
)


def layout(code: types.CodeType) -> tuple:
    """What a replacement must share with the original (the README's rule)."""
    flags = code.co_flags & _LAYOUT_FLAGS
    nargs = code.co_argcount + code.co_kwonlyargcount
    nargs += bool(flags & inspect.CO_VARARGS) + bool(flags & inspect.CO_VARKEYWORDS)
    names = code.co_varnames[:nargs]
    return (code.co_argcount, code.co_posonlyargcount, code.co_kwonlyargcount, flags, names, code.co_freevars)


def outcome_of(fn: Callable[[], Any]) -> tuple:
    try:
        value = fn()
        if inspect.isgenerator(value):
            value = list(value)
        return ("value", repr(value))
    except BaseException as exc:  # noqa: BLE001 - every outcome is compared, BaseException included
        if type(exc) is KeyboardInterrupt or type(exc) is SystemExit:
            raise
        return ("raise", type(exc).__name__, str(exc))


# ---- running one input -------------------------------------------------------------


class Run:
    """One decoded input, built and run with the oracle's bookkeeping."""

    def __init__(self, case: Case) -> None:
        self.case = case
        self.target = build(case.target, FREE_VALUES)
        self.code = self.target.__code__
        self.helper_code = helper.__code__
        self.events: List[tuple] = []
        self.problems: List[str] = []
        self.kept_views: list = []
        self.responses = [self.prepare(resp) for resp in case.responses]
        self.misses = 0

    # replacement code and guards, built once per input so the cache sees the same objects
    def prepare(self, resp: Response) -> dict:
        made: Dict[str, Any] = {"resp": resp}
        if resp.kind != "guarded":
            return made
        if resp.replacement == "same":
            made["code"] = build(self.case.target, FREE_VALUES).__code__
        elif resp.replacement == "own":
            made["code"] = self.code
        elif resp.replacement == "helper":
            made["code"] = helper.__code__
        else:
            made["code"] = build(resp.replacement_source, FREE_VALUES).__code__
        made["compatible"] = layout(made["code"]) == layout(self.code)
        made["guard"] = self.make_guard(resp.guards, made)
        return made

    def make_guard(self, kinds: Tuple[str, ...], made: dict) -> Callable[..., Any]:
        state = {"n": 0}
        checker_kind = next((k for k in kinds if k.startswith("checker")), None)
        if checker_kind is not None:
            params, names = SIGNATURES[self.case.target.signature][:2]

            def call_back() -> bool:
                return self.guard_result(checker_kind, made, checker=True)

            specs: list = []
            if names and "*" not in params.split(",")[0]:
                specs.append(((("local", names[0]),), "NOT_NONE"))
            specs.append(((), "CALL", call_back))
            return rt.GuardChecker(specs)

        def guard(f_locals: Dict[str, Any]) -> Any:
            kind = kinds[state["n"] % len(kinds)]
            state["n"] += 1
            return self.guard_result(kind, made)

        return guard

    def guard_result(self, kind: str, made: dict, checker: bool = False) -> Any:
        value: Any
        if kind in ("true", "checker_true"):
            value = True
        elif kind in ("false", "checker_false"):
            value = False
        elif kind in ("raise", "checker_raise"):
            exc = ValueError("guard raised")
            self.events.append(("guard", made, "raises", exc, checker))
            raise exc
        elif kind in ("raise_base", "checker_raise_base"):
            exc = FuzzBaseError("guard raised a BaseException")
            self.events.append(("guard", made, "raises", exc, checker))
            raise exc
        elif kind == "bool_raises":
            value = BoolRaises()
        elif kind == "bool_not_bool":
            value = BoolNotBool()
        elif kind == "len_negative":
            value = LenNegative()
        elif kind == "truthy":
            value = [0]
        elif kind == "falsy":
            value = ""
        else:  # reset: the lookup becomes a miss
            rt.reset_code(self.code)
            self.events.append(("guard", made, "reset", None, checker))
            return True
        self.events.append(("guard", made, "returns", value, checker))
        return value

    def callback(self, frame: Any, cache_entry: Any, frame_state: Dict[str, Any]) -> Any:
        code = frame.f_code
        if code is not self.code:
            if self.case.helper_policy == "passthrough" and code is self.helper_code:
                return rt.GuardedCode(code, bool)
            return None
        made = self.responses[self.misses % len(self.responses)]
        self.misses += 1
        resp: Response = made["resp"]
        self.before(resp.before, frame)
        if resp.kind == "none":
            result: Any = None
        elif resp.kind == "guarded":
            result = rt.GuardedCode(made["code"], made["guard"])
        elif resp.kind == "wrong":
            result = {
                "int": 42,
                "str": "text",
                "code": self.code,
                "type": rt.GuardedCode,
                "tuple": (self.code, bool),
                "true": True,
            }[resp.wrong]
        elif resp.kind == "bad_guarded":
            self.events.append(("callback", made))
            return rt.GuardedCode(self.code, 42) if self.misses % 2 else rt.GuardedCode(42, bool)
        else:
            made["exception"] = EXCEPTION_TYPES[resp.exception](f"raised by the callback ({resp.exception})")
            self.events.append(("callback", made))
            raise made["exception"]
        self.events.append(("callback", made))
        return result

    def before(self, what: str, frame: Any) -> None:
        if what == "read_view":
            self.check_view(frame)
        elif what == "keep_view":
            self.kept_views.append(frame)
        elif what == "reset":
            rt.reset_code(self.code)
        elif what == "set_none":
            rt.set_eval_frame(None)
        elif what == "set_false":
            rt.set_eval_frame(False)
        elif what == "set_self":
            rt.set_eval_frame(self.callback)
        elif what == "call_target":  # the callback is suspended: this call is not intercepted
            depth = len(self.events)
            outcome_of(lambda: self.target(*self.current.args, **self.current.kwargs))
            if len(self.events) != depth:
                self.problems.append("a call made by the callback was intercepted")

    def check_view(self, frame: Any) -> None:
        call = self.current
        bound = inspect.signature(self.target).bind(*call.args, **call.kwargs)
        bound.apply_defaults()
        expected = dict(bound.arguments)
        expected.update((n, FREE_VALUES[n]) for n in self.case.target.free)
        seen = dict(frame.f_locals)
        if seen != expected:
            self.problems.append(f"frame.f_locals is {seen!r}, expected {expected!r}")
        if frame.f_lasti != -1:
            self.problems.append(f"frame.f_lasti is {frame.f_lasti}")
        if frame.function not in (self.target, None):
            self.problems.append(f"frame.function is {frame.function!r}")

    # the hooked call, with as few Python frames of ours as possible while the hook is set
    def hooked(self, call: Call) -> tuple:
        value = {"hook": self.callback, "run_only": False, "off": None}[call.mode]
        install = self.case.install
        fn = self.target
        if install in ("set", "thread"):
            rt.set_eval_frame(value)
            try:
                return outcome_of(lambda: fn(*call.args, **call.kwargs))
            finally:
                rt.set_eval_frame(None)
        if install == "enable":
            context = {"hook": rt.enable, "run_only": lambda _: rt.run_only(), "off": lambda _: rt.disable()}
            with context[call.mode](value):
                return outcome_of(lambda: fn(*call.args, **call.kwargs))
        if install == "call_with":
            return outcome_of(lambda: rt.call_with(value, fn, *call.args, **call.kwargs))
        return outcome_of(lambda: rt.CallbackWrapper(value, fn)(*call.args, **call.kwargs))

    def expected(self, call: Call, events: List[tuple]) -> Tuple[tuple, Optional[str]]:
        """The outcome the call's events imply: (exact outcome, or (type, text) to find in the message)."""
        plain = outcome_of(lambda: self.target(*call.args, **call.kwargs))
        if not events:
            return plain, None
        last = events[-1]
        made = last[1]
        if last[0] == "callback":
            resp: Response = made["resp"]
            if resp.kind == "none":
                return plain, None
            if resp.kind == "wrong":
                return ("raise", "TypeError"), "must return None or GuardedCode"
            if resp.kind == "bad_guarded":
                return ("raise", "TypeError"), "GuardedCode() argument"
            if resp.kind == "raise":
                exc = made["exception"]
                return ("raise", type(exc).__name__, str(exc)), None
            if not made["compatible"]:
                return ("raise", "TypeError"), "cannot take the frame's values"
            return self.replacement_outcome(made, call), None
        _, made, how, value, checker = last
        if how == "reset":
            # the lookup was a miss and no callback followed: run-only or the callback went away
            return plain, None
        if how == "raises":
            if checker and isinstance(value, Exception):
                return plain, None  # a GuardChecker treats an Exception as a failed guard
            return ("raise", type(value).__name__, str(value)), None
        truth = outcome_of(lambda: bool(value))
        if truth[0] == "raise":
            return truth, None
        if truth == ("value", "True"):
            return self.replacement_outcome(made, call), None
        return plain, None

    def replacement_outcome(self, made: dict, call: Call) -> tuple:
        fn = types.FunctionType(
            made["code"], self.target.__globals__, "target", self.target.__defaults__, self.target.__closure__
        )
        fn.__kwdefaults__ = self.target.__kwdefaults__
        return outcome_of(lambda: fn(*call.args, **call.kwargs))

    def guard_errors(self, events: List[tuple]) -> int:
        count = 0
        for event in events:
            if event[0] != "guard":
                continue
            _, made, how, value, checker = event
            if how == "raises" and not (checker and isinstance(value, Exception)):
                count += 1
            elif how == "returns" and outcome_of(lambda: bool(value))[0] == "raise":
                count += 1
        return count

    def run_calls(self) -> None:
        for call in self.case.calls:
            self.current = call
            self.events.clear()
            hook_calls: List[tuple] = []
            previous_hook = None
            if self.case.guard_error_hook:
                previous_hook = rt.set_guard_error_hook(lambda *args: hook_calls.append(args))
            try:
                got = self.hooked(call)
            finally:
                if self.case.guard_error_hook:
                    rt.set_guard_error_hook(previous_hook)
            events = list(self.events)
            want, text = self.expected(call, events)
            if text is None and got != want or text is not None and (got[:2] != want or text not in got[2]):
                self.problems.append(f"{call}: got {got!r}, expected {want!r} {text or ''}; events {events!r}")
            if self.case.guard_error_hook and len(hook_calls) != self.guard_errors(events):
                self.problems.append(f"{call}: guard error hook called {len(hook_calls)} times; events {events!r}")
            for info in rt.cache_entries(self.code):
                made = next((m for m in self.responses if m.get("code") is info.code), None)
                if made is None or not made["compatible"]:
                    self.problems.append(f"cache entry with code {info.code!r} that no callback returned compatibly")
            for view in self.kept_views:
                try:
                    view.f_code
                except RuntimeError:
                    continue
                self.problems.append("a frame view kept after its callback is still readable")

    def run(self) -> List[str]:
        if self.case.install == "thread":
            failure: list = []

            def body() -> None:
                try:
                    self.run_calls()
                except BaseException as exc:  # noqa: BLE001 - reported on the main thread
                    failure.append(exc)
                if rt.get_eval_frame() is not None:
                    self.problems.append("the thread's callback is still set")

            thread = threading.Thread(target=body)
            thread.start()
            thread.join()
            if failure:
                raise failure[0]
        else:
            self.run_calls()
        self.bad_api_call()
        if rt.get_eval_frame() is not None:
            self.problems.append(f"the callback is still set: {rt.get_eval_frame()!r}")
        if rt.eval_frame_installed():
            self.problems.append("framehook's eval function is still installed")
        rt.reset_code(self.code)
        rt.reset_code(self.helper_code)  # the next input starts from the same state
        return self.problems

    def bad_api_call(self) -> None:
        what = self.case.bad_api
        calls = {
            "set_eval_frame": (lambda: rt.set_eval_frame(42), "argument 'callback'"),
            "call_with_callback": (lambda: rt.call_with(42, self.target), "argument 'callback'"),
            "call_with_fn": (lambda: rt.call_with(self.callback, 42), "argument 'fn'"),
            "wrapper_args": (lambda: rt.CallbackWrapper(self.callback), "CallbackWrapper()"),
            "enable": (lambda: rt.enable(42), "argument 'callback'"),
            "guarded_code": (lambda: rt.GuardedCode("code", bool), "argument 'code'"),
            "guarded_check_fn": (lambda: rt.GuardedCode(self.code, 1), "argument 'check_fn'"),
            "reset_code": (lambda: rt.reset_code(42), ""),
            "cache_entries": (lambda: rt.cache_entries("text"), ""),
            "guard_error_hook": (lambda: rt.set_guard_error_hook(42), "argument 'fn'"),
        }
        if what not in calls:
            return
        fn, text = calls[what]
        got = outcome_of(fn)
        if got[:2] != ("raise", "TypeError") or text not in got[2]:
            self.problems.append(f"bad API call {what}: got {got!r}, expected TypeError naming {text!r}")


def run_input(data: bytes) -> List[str]:
    """Runs one input; returns the oracle's complaints (empty when all is well)."""
    return Run(decode(data)).run()


def check_input(data: bytes) -> None:
    problems = run_input(data)
    if problems:
        raise AssertionError("framehook.runtime fuzz oracle:\n" + "\n".join(problems))


def check_leaks(data: bytes, rounds: int = 200) -> int:
    """How many objects more the collector tracks after `rounds` further runs of the input."""
    for _ in range(20):
        run_input(data)
    gc.collect()
    before = len(gc.get_objects())
    for _ in range(rounds):
        run_input(data)
    gc.collect()
    return len(gc.get_objects()) - before


def load_runtime() -> None:
    global rt
    import framehook.runtime

    rt = framehook.runtime


def promote_libfuzzer() -> None:
    """Makes the libFuzzer atheris loaded (locally, when fuzzing started) global, so that an
    extension built with ``-fsanitize=fuzzer-no-link`` (see fuzz/README.md) finds its
    coverage hooks when it is loaded: then ``cov:`` counts the C code's edges too."""
    import ctypes

    with open("/proc/self/maps") as maps:
        paths = {line.split()[-1] for line in maps if "/atheris/core_with_libfuzzer" in line}
    for path in paths:
        ctypes.CDLL(path, mode=os.RTLD_GLOBAL | getattr(os, "RTLD_NOLOAD", 0))


def fuzz_one(data: bytes) -> None:
    if rt is None:  # the first input: libFuzzer is loaded now
        promote_libfuzzer()
        load_runtime()
        extension = rt._C.__file__
        native = b"__sanitizer_cov_8bit_counters_init" in Path(extension).read_bytes()
        how = "built with libFuzzer coverage" if native else "no C coverage (Python branches only)"
        print(f"[atheris_runtime] {extension}: {how}", flush=True)
    check_input(data)


def fuzz(argv: List[str], crashes: Path) -> None:
    try:
        import atheris
    except Exception as exc:  # ImportError, or RuntimeError from a version atheris does not support
        sys.exit(f"atheris is not importable on CPython {sys.version.split()[0]} ({exc}); use --run or --describe")
    crashes.mkdir(parents=True, exist_ok=True)
    if not any(a.startswith("-artifact_prefix=") for a in argv):
        argv = argv + [f"-artifact_prefix={crashes}/"]
    if not any(a.startswith("-max_len=") for a in argv):
        argv = argv + ["-max_len=256"]
    if not any(a.startswith("-len_control=") for a in argv):
        argv = argv + ["-len_control=0"]  # a whole case takes some 40 bytes; libFuzzer would start at 4
    # coverage of this module's Python branches (the decoding and the oracle)
    for name in ("decode", "decode_source", "decode_response", "Run", "check_input"):
        obj = globals()[name]
        if isinstance(obj, type):
            for attr, fn in list(vars(obj).items()):
                if inspect.isfunction(fn):
                    setattr(obj, attr, atheris.instrument_func(fn))
        else:
            globals()[name] = atheris.instrument_func(obj)
    atheris.Setup(argv, fuzz_one)
    atheris.Fuzz()


def main(argv: Optional[List[str]] = None) -> int:
    argv = sys.argv if argv is None else argv
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0], add_help=True)
    parser.add_argument("--crashes", type=Path, default=CRASH_DIR, help="where libFuzzer writes crash-* inputs")
    parser.add_argument("--describe", action="store_true", help="print what each FILE decodes to")
    parser.add_argument("--run", action="store_true", help="run each FILE once without atheris")
    parser.add_argument("--check-leaks", action="store_true", help="run each FILE 220 times, report object growth")
    opts, rest = parser.parse_known_args(argv[1:])
    if opts.describe or opts.run or opts.check_leaks:
        load_runtime()
    if opts.describe or opts.run or opts.check_leaks:
        status = 0
        for name in rest:
            data = Path(name).read_bytes()
            if opts.describe:
                print(f"== {name}\n{describe(decode(data))}")
            if opts.run:
                problems = run_input(data)
                print(f"{name}: " + ("ok" if not problems else "\n  ".join(["FAILED"] + problems)))
                status |= bool(problems)
            if opts.check_leaks:
                grown = check_leaks(data)
                print(f"{name}: {grown} more objects after 200 runs")
                status |= grown > 100
        return status
    fuzz([argv[0]] + rest, opts.crashes)
    return 0


if __name__ == "__main__":
    sys.exit(main())
