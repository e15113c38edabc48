"""Observing calls of chosen code objects through the eval-frame hook.

framehook-records' ``record_calls()`` (and its pytest plugin) finds this class through the
entry point group ``framehook.records.call_observers``; it is usable on its own too:

    def handler(fn, args, kwargs):          # runs in place of the call, returns its result
        print("calling", fn.__qualname__)
        return fn(*args, **kwargs)          # this call of fn is not observed again

    observer = CallObserver(handler)
    observer.add(work.__code__)             # or choose=lambda code: ... for codes seen later
    with observer:
        work(1)                             # however work is reached: its identity is untouched

How: while the observer is entered, it is this thread's eval-frame callback. At the fresh
frame of a target code it takes the frame's function object (``FrameView.function``) and
returns, as the frame's replacement, a *trampoline*: a code object with the target's
argument names, kinds and free variables whose body passes its arguments to the observer,
which calls ``handler(function, args, kwargs)``; the handler's result (or exception) is the
frame's. The original body runs once, inside the handler. Calls made while a handler runs
on the same thread (the handler's own call of ``fn``, recursion, other targets) are not
observed: they run their own code, unmodified. Each cached entry's guard never holds and
the callback drops the code's entries before returning, so every call of a target comes
back to the callback, and a code holds at most one entry.

Only frames the runtime intercepts can be observed: fresh frames of plain functions, not
generator, coroutine or async-generator functions (``add`` returns False for those).
Callbacks are per thread: calls on other threads are not observed. Inside another
callback's scope (``enable(PassThrough())``) that callback is the thread's, so nothing is
observed there.
"""

from __future__ import annotations

import inspect
import keyword
import sys
import threading
import types
import warnings
import weakref
from typing import Any, Callable, Dict, List, Optional, Tuple

from ._C import FrameView, GuardedCode, reset_code
from .contexts import enable

__all__ = ["CallObserver", "trampoline"]

Handler = Callable[[types.FunctionType, tuple, dict], Any]

# codes the hook never hands a callback at their start (see the README)
_DEFERRED = inspect.CO_GENERATOR | inspect.CO_COROUTINE | inspect.CO_ASYNC_GENERATOR | inspect.CO_ITERABLE_COROUTINE
_MARK = "__framehook_observe_5f1d__"  # the constant the trampoline calls, replaced once compiled
_FRAME_HOLDS_FUNCTION = sys.version_info >= (3, 11)  # _PyInterpreterFrame's f_func / f_funcobj


def _never(f_locals: Dict[str, Any]) -> bool:
    """The guard of every entry the observer caches: each call comes back to the callback."""
    return False


def observable(code: types.CodeType) -> bool:
    """Whether the hook hands this code's frames to a callback at their start."""
    return bool(code.co_flags & inspect.CO_OPTIMIZED) and not code.co_flags & _DEFERRED


def trampoline(code: types.CodeType, target: Callable[..., Any]) -> types.CodeType:
    """A code object laid out like ``code`` (argument names and kinds, free variables)
    whose body is ``return target(*positional, **keyword_only)``, with ``code``'s name,
    file and first line (a traceback through it points at the function's definition)."""
    names = code.co_varnames
    npos, nkw = code.co_argcount, code.co_kwonlyargcount
    params: List[str] = []
    call: List[str] = []
    for i in range(npos):
        params.append(names[i])
        call.append(names[i])
        if code.co_posonlyargcount and i + 1 == code.co_posonlyargcount:
            params.append("/")
    at = npos + nkw
    if code.co_flags & inspect.CO_VARARGS:
        params.append("*" + names[at])
        call.append("*" + names[at])
        at += 1
    elif nkw:
        params.append("*")
    for name in names[npos : npos + nkw]:
        params.append(name)
        call.append(f"{name}={name}")
    if code.co_flags & inspect.CO_VARKEYWORDS:
        params.append("**" + names[at])
        call.append("**" + names[at])
    for name in names[: at + 1] + code.co_freevars:
        if not name.isidentifier() or keyword.iskeyword(name):
            raise ValueError(f"{code.co_name}: {name!r} cannot be written as a parameter")
    free = code.co_freevars
    # the free variables are named in dead code: the symbol table makes them free
    # variables of f all the same, and nothing reads them
    lines = ["def outer():"]
    if free:
        lines.append(f"    {' = '.join(free)} = None")
    lines.append(f"    def f({', '.join(params)}):")
    if free:
        lines.append(f"        if 0:\n            ({', '.join(free)},)")
    lines.append(f"        return {_MARK!r}({', '.join(call)})")
    lines.append("    return f")
    namespace: Dict[str, Any] = {}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # "'str' object is not callable"
        exec(compile("\n".join(lines), code.co_filename, "exec"), namespace)
    made = namespace["outer"]().__code__
    consts = tuple(target if c == _MARK and isinstance(c, str) else c for c in made.co_consts)
    fields: Dict[str, Any] = {
        "co_consts": consts,
        "co_name": code.co_name,
        "co_firstlineno": code.co_firstlineno,
    }
    if hasattr(code, "co_qualname"):  # 3.11+
        fields["co_qualname"] = code.co_qualname
    return made.replace(**fields)


class _Entry:
    """What a trampoline calls: the observer's ``_run`` for one code. It holds the observer
    weakly: code objects take no part in garbage collection, so a cycle through a
    trampoline's constants would never be freed."""

    __slots__ = ("_observer", "_code")

    def __init__(self, observer: "CallObserver", code: types.CodeType) -> None:
        self._observer = weakref.ref(observer)
        self._code = code

    def __call__(self, /, *args: Any, **kwargs: Any) -> Any:  # "self" may be a keyword argument
        observer = self._observer()
        if observer is None:  # pragma: no cover - an entry outlives its observer only if the trampoline runs late
            raise RuntimeError("framehook: the CallObserver of this call is gone")
        return observer._run(self._code, *args, **kwargs)


class _ThreadState(threading.local):
    def __init__(self) -> None:
        self.depth = 0  # > 0 while a handler runs on this thread
        self.pending: List[Tuple[types.CodeType, types.FunctionType]] = []


class CallObserver:
    """Runs ``handler(fn, args, kwargs)`` in place of each call of the target codes made on
    the thread that entered it, outside other handlers (see the module docstring).

    ``choose(code) -> bool``, when given, is asked once about each other code object whose
    frame reaches the callback, and makes it a target when true (for code that is not
    loaded yet, e.g. every function of a package). A context manager, entered on one
    thread at a time; may be entered again after it exits.
    """

    def __init__(self, handler: Handler, choose: Optional[Callable[[types.CodeType], bool]] = None) -> None:
        self._handler = handler
        self._choose = choose
        self._targets: Dict[types.CodeType, types.CodeType] = {}  # code -> its trampoline
        self._released: "weakref.WeakSet[types.CodeType]" = weakref.WeakSet()
        self._touched: "weakref.WeakSet[types.CodeType]" = weakref.WeakSet()  # codes to reset on exit
        self._copies: Dict[types.CodeType, types.CodeType] = {}  # code -> the copy run unobserved
        self._known: Dict[types.CodeType, "weakref.ref[types.FunctionType]"] = {}  # 3.9/3.10 (_function)
        self._local = _ThreadState()
        self._scope: Any = None
        self.calls = 0  # calls handed to the handler
        self.missed = 0  # target frames whose function could not be found (run unobserved)

    # -- targets ---------------------------------------------------------------------------
    def add(self, code: types.CodeType) -> bool:
        """Observe calls of ``code``; False (and nothing changes) when the hook cannot see
        its frames at their start (generator, coroutine, async-generator code) or its
        parameters cannot be laid out again."""
        if code in self._targets:
            return True
        if not observable(code):
            return False
        try:
            self._targets[code] = trampoline(code, _Entry(self, code))
        except (ValueError, SyntaxError):
            return False
        self._released.discard(code)
        if self._scope is not None:
            reset_code(code)  # it may be marked skipped by this observer's callback
        return True

    def release(self, code: types.CodeType) -> None:
        """Stop observing ``code`` (e.g. once enough of its calls were seen): its frames
        run unmodified, without reaching the callback, until the observer exits."""
        self._targets.pop(code, None)
        self._copies.pop(code, None)
        self._released.add(code)

    def targets(self) -> List[types.CodeType]:
        return list(self._targets)

    # -- the scope -------------------------------------------------------------------------
    def __enter__(self) -> "CallObserver":
        if self._scope is not None:
            raise RuntimeError("this CallObserver is already entered")
        for code in self._targets:
            reset_code(code)  # earlier entries or a skip mark would bypass the callback
            self._touched.add(code)
        scope = enable(self._callback)
        scope.__enter__()
        self._scope = scope
        return self

    def __exit__(self, *exc_info: object) -> None:
        scope, self._scope = self._scope, None
        if scope is not None:
            scope.__exit__(None, None, None)
        # every mark this observer left on code objects (entries, skip marks) goes
        for code in list(self._touched):
            reset_code(code)
        self._touched = weakref.WeakSet()
        self._copies.clear()
        self._known.clear()
        self._local.pending.clear()

    # -- the hook --------------------------------------------------------------------------
    def _callback(self, frame: FrameView, cache_entry: Any, frame_state: Dict[str, Any]) -> Optional[GuardedCode]:
        code = frame.f_code
        self._touched.add(code)
        tramp = self._targets.get(code)
        if tramp is None and self._choose is not None and code not in self._released and observable(code):
            try:
                chosen = self._choose(code) and self.add(code)
            except Exception:
                chosen = False
            tramp = self._targets.get(code) if chosen else None
        if tramp is None:
            return None  # marked skipped until __exit__ resets it: never asked about again
        reset_code(code)  # the previous call's entry: at most one per code
        fn = self._function(frame, code) if self._local.depth == 0 else None
        if fn is None:
            if self._local.depth == 0:
                self.missed += 1
            return GuardedCode(self._copy(code), _never)
        self._local.pending.append((code, fn))
        return GuardedCode(tramp, _never)

    def _function(self, frame: FrameView, code: types.CodeType) -> Optional[types.FunctionType]:
        """The frame's function. 3.11+ frames hold it; on 3.9 and 3.10 the view searches the
        code's referrers on every access, so a function without free variables found once is
        taken again for calls of its code with the same globals (another function object
        with the same code, globals and no closure, e.g. lambdas made in a loop with other
        defaults, is taken for the first one: the call is the same, since the trampoline
        passes every argument)."""
        if _FRAME_HOLDS_FUNCTION or code.co_freevars:
            return frame.function  # type: ignore[return-value]
        ref = self._known.get(code)
        fn = ref() if ref is not None else None
        if fn is not None and fn.__code__ is code and fn.__globals__ is frame.f_globals:
            return fn
        fn = frame.function  # type: ignore[assignment]
        if fn is not None:
            self._known[code] = weakref.ref(fn)
        return fn

    def _copy(self, code: types.CodeType) -> types.CodeType:
        copy = self._copies.get(code)
        if copy is None:
            copy = self._copies[code] = code.replace()
        return copy

    def _run(self, code: types.CodeType, /, *args: Any, **kwargs: Any) -> Any:
        """The trampoline's target: the call's function, taken from what the callback left
        for this code, handed to the handler with the call's arguments."""
        local = self._local
        pending = local.pending
        fn: Optional[types.FunctionType] = None
        for i in range(len(pending) - 1, -1, -1):
            if pending[i][0] is code:
                fn = pending.pop(i)[1]
                break
        if fn is None:  # pragma: no cover - the callback always leaves one before the trampoline runs
            raise RuntimeError(f"framehook: no pending call of {code.co_name}")
        self.calls += 1
        local.depth += 1
        try:
            return self._handler(fn, args, kwargs)
        finally:
            local.depth -= 1
