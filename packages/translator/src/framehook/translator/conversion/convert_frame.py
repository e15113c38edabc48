"""The frame-conversion loop: the callback the runtime calls on a cache miss.

For each frame it decides whether to translate (skip rules), then, holding the compile
lock, translates with restart analysis, preserves global state, builds the guards into a
check function and returns ``GuardedCode``; or returns None so the frame runs unmodified
and is not intercepted again. With ``config.translation_cache_dir`` set, a code's first
translation in a process is first looked up among those earlier processes kept
(``translation_cache.py``), and kept when it has a portable form.
"""

from __future__ import annotations

import collections
import dis
import io
import itertools
import logging
import os
import threading
import traceback
import types
from typing import Any, Callable, Dict, List, Optional, Set

import numpy as np

from .. import logs as fh_logging
from .._runtime import runtime
from ..backends import CompilerFn, backend_name
from ..bytecode import needs_cleaning, remove_dead_code, remove_pointless_jumps, transform_code_object
from ..translation.codemap import CodeIdentityMap
from ..config import config
from ..guards.contexts import (
    CompileContext,
    CompileId,
    GlobalStateContext,
    TracingContext,
    compile_context,
    registered_global_states,
    tracing,
)
from ..exc import (
    CacheLimitExceeded,
    InternalTranslatorError,
    RestartAnalysis,
    SkipFrame,
    SpeculationRestartAnalysis,
    TranslatorError,
    Unsupported,
    UnspecializeRestartAnalysis,
    augment_message,
    format_user_stack,
)
from ..guards.builder import build_check_fn
from ..guards import GlobalStateSource, GuardKind
from ..hooks import GuardFail, Hooks
from .set_aside import set_aside
from . import skipfiles
from .skipfiles import skip_reason
from ..translation.speculation import SpeculationLog
from ..translation.base import FrameInfo, TranslationOutput, call_backend, source_value
from . import translation_cache

__all__ = [
    "ConvertFrame",
    "convert_frame",
    "convert_frame_assert",
    "compile_lock",
    "register_bytecode_hook",
    "has_array_in_frame",
    "frame_skip_reason",
    "input_codes",
    "output_codes",
    "last_decisions",
    "reset_state",
    "always_translate_code_objects",
    "BytecodeHook",
]

log = fh_logging.get_logger("translator")
recompiles_log = fh_logging.get_logger("recompiles")
bytecode_log = fh_logging.get_logger("bytecode")
restarts_log = fh_logging.get_logger("restarts")

compile_lock = threading.RLock()

BytecodeHook = Callable[[types.CodeType, types.CodeType], Optional[types.CodeType]]
_bytecode_hooks: "collections.OrderedDict[int, BytecodeHook]" = collections.OrderedDict()
_hook_ids = itertools.count()


class _RemovableHandle:
    def __init__(self, table: Dict[int, Any], key: int) -> None:
        self._table = table
        self.id = key

    def remove(self) -> None:
        self._table.pop(self.id, None)

    def __enter__(self) -> "_RemovableHandle":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.remove()


def register_bytecode_hook(hook: BytecodeHook) -> _RemovableHandle:
    """``hook(original_code, new_code)`` runs on every translated code object; it may log,
    or return a code object to use instead. ``handle.remove()`` unregisters it."""
    if not callable(hook):
        raise TypeError(f"register_bytecode_hook: expected a callable, got {type(hook).__name__}")
    key = next(_hook_ids)
    _bytecode_hooks[key] = hook
    return _RemovableHandle(_bytecode_hooks, key)


class _CodeTracker:
    """Code objects seen, held weakly, by identity."""

    def __init__(self) -> None:
        self._codes: CodeIdentityMap[bool] = CodeIdentityMap()

    def add(self, code: types.CodeType) -> None:
        if code not in self._codes:
            self._codes[code] = True

    def __contains__(self, code: object) -> bool:
        return code in self._codes  # type: ignore[operator]

    def live(self) -> List[types.CodeType]:
        return self._codes.keys()

    def clear(self) -> None:
        self._codes.clear()


input_codes = _CodeTracker()
output_codes = _CodeTracker()
always_translate_code_objects = _CodeTracker()
skipped_codes = _CodeTracker()

_frame_ids: CodeIdentityMap[int] = CodeIdentityMap()
_frame_counter = itertools.count()
_compile_counts: Dict[int, int] = collections.defaultdict(int)
_decisions: CodeIdentityMap[Dict[str, Any]] = CodeIdentityMap()


def reset_state() -> None:
    """Forget every code object seen, compile ids and decisions (part of ``reset()``)."""
    global _frame_counter
    for code in input_codes.live() + skipped_codes.live():
        runtime.reset_code(code)
    input_codes.clear()
    skipped_codes.clear()
    output_codes.clear()
    _frame_ids.clear()
    _compile_counts.clear()
    _frame_counter = itertools.count()
    _decisions.clear()
    set_aside.clear()
    fh_logging.reset_once()


def next_compile_id(code: types.CodeType) -> CompileId:
    frame_id = _frame_ids.get(code)
    if frame_id is None:
        frame_id = _frame_ids[code] = next(_frame_counter)
    n = _compile_counts[frame_id]
    _compile_counts[frame_id] = n + 1
    return CompileId(frame_id, n)


def last_decisions(fn: Any) -> Optional[Dict[str, Any]]:
    """What the translator decided for ``fn``'s code the last time it compiled it (guards
    as text, graphs, restarts, recompilation reasons), or None."""
    code = fn if isinstance(fn, types.CodeType) else getattr(_innermost(fn), "__code__", None)
    found = None if code is None else _decisions.get(code)
    return None if found is None else dict(found, guards=list(found["guards"]))


def _innermost(fn: Any) -> Any:
    while hasattr(fn, "_framehook_orig_callable"):
        fn = fn._framehook_orig_callable
    return getattr(fn, "__func__", fn)


# ------------------------------------------------------------------ skip rules


def _is_numpy_object(obj: Any) -> bool:
    if isinstance(obj, types.ModuleType):
        return obj is np or obj.__name__.startswith("numpy.")
    if isinstance(obj, (np.ufunc, np.ndarray, np.generic)):
        return True
    module = getattr(obj, "__module__", None)
    return isinstance(module, str) and (module == "numpy" or module.startswith("numpy."))


def has_array_in_frame(frame: Any) -> bool:
    """Does the frame reach numpy: an array in its locals (inside lists, tuples, dicts,
    namedtuples), or numpy (module, function, array) among the globals it reads?"""
    code = frame.f_code
    if code in always_translate_code_objects:
        return True
    f_globals = frame.f_globals
    for name in code.co_names:
        if name in f_globals and _is_numpy_object(f_globals[name]):
            return True
    seen: Dict[int, bool] = {}

    def has_array(obj: Any, depth: int = 0) -> bool:
        key = id(obj)
        if key in seen:
            return seen[key]
        seen[key] = False
        t = type(obj)
        if t is np.ndarray or isinstance(obj, (np.ndarray, np.generic)):
            found = True
        elif depth > 20:
            found = False
        elif t in (list, tuple) or (isinstance(obj, tuple) and hasattr(obj, "_fields")):
            found = any(has_array(v, depth + 1) for v in obj)
        elif t is dict:
            found = any(has_array(v, depth + 1) for v in list(obj.values()))
        else:
            found = False
        seen[key] = found
        return found

    return any(has_array(v) for v in frame.f_locals.values())


def frame_skip_reason(frame: Any) -> Optional[str]:
    code = frame.f_code
    if config.disable:
        return "the translator is disabled (config.disable / FRAMEHOOK_DISABLE=1)"
    reason = skip_reason(code.co_filename)
    if reason is not None:
        return reason
    # frame.function is a heap scan on 3.9/3.10: read it only for code made by exec
    if code.co_filename == "<string>" and (
        code.co_name == "__new__" or getattr(getattr(frame, "function", None), "__qualname__", "").endswith(".__new__")
    ):
        return "namedtuple constructor"
    if config.trace_numpy and not has_array_in_frame(frame):
        return "no numpy array or numpy object reachable from the frame"
    return None


# ------------------------------------------------------------------ global state


def preserve_global_state(fn: Callable[..., Any]) -> Callable[..., Any]:
    """Run ``fn`` with the registered global state saved, restored and checked afterwards."""

    def wrapper(*args: Any, **kwargs: Any) -> Any:
        ctx = GlobalStateContext()
        before = ctx.copy_graphstate()
        try:
            return fn(*args, **kwargs)
        finally:
            # comparing costs less than setting every state back (numpy's random state alone
            # takes ~45 us to set), and most translations change nothing
            changed = before.diff(ctx.copy_graphstate())
            if changed:
                ctx.restore_graphstate(before)
                changed = before.diff(ctx.copy_graphstate())
            if changed:
                entries = registered_global_states()
                lost = sorted(n for n in changed if n not in entries or entries[n].setter is None)
                raise InternalTranslatorError(
                    "global state changed while translating and could not be restored: "
                    + ", ".join(lost or sorted(changed))
                )

    wrapper.__wrapped__ = fn  # type: ignore[attr-defined]
    return wrapper


# ------------------------------------------------------------------ the loop


def _code_location(code: types.CodeType) -> str:
    return f"{getattr(code, 'co_qualname', code.co_name)} ({code.co_filename}:{code.co_firstlineno})"


class ConvertFrame:
    """The runtime callback. ``strict`` (nopython=True) raises translation errors at the
    call; otherwise they are logged once and the frame runs unmodified."""

    def __init__(
        self,
        compiler_fn: CompilerFn,
        hooks: Optional[Hooks] = None,
        *,
        strict: bool = False,
        dynamic: Optional[bool] = None,
        translator: Optional[Callable[..., Any]] = None,
    ) -> None:
        self.compiler_fn = compiler_fn
        self.hooks = hooks or Hooks()
        self.strict = strict
        self.dynamic = dynamic
        self.translator = translator or _default_translator()
        self._framehook_orig_callable = compiler_fn
        # once per process, here rather than in the first call: where the skipped files
        # live, and the translation cache's directory check and build fingerprint
        skipfiles.prepare()
        if config.translation_cache_dir is not None:
            translation_cache.prepare()
        prepare = getattr(compiler_fn, "prepare", None)  # a backend's own once-per-process set-up
        if callable(prepare):
            prepare()

    def prepare_code(self, code: types.CodeType, f_globals: Optional[Dict[str, Any]] = None) -> None:
        """What ``optimize`` does for a function it wraps, so that its first call does not:
        the verdict on its file, its key in the translation cache, and the translations kept
        under that key read (resolving symlinks, hashing the code, reading and decoding took
        0.1 ms each of a warm first call). ``f_globals``: the function's globals."""
        try:
            skip_reason(code.co_filename)
            key = self._disk_key(code, {})
            # only for a first call: a function wrapped again (in a loop, say) reads nothing
            if key is not None and f_globals is not None and not runtime.cache_entries(code):
                translation_cache.read_ahead(key, f_globals)
        except Exception as e:  # noqa: BLE001 - never an error of optimize(): the call does it all again
            log.debug("preparing %s ahead of its first call failed: %s", _code_location(code), e)

    def __repr__(self) -> str:
        return f"ConvertFrame(backend={backend_name(self.compiler_fn)!r}, strict={self.strict})"

    def __call__(self, frame: Any, cache_entry: Any, frame_state: Any) -> Any:
        reason = frame_skip_reason(frame)
        if reason is not None:
            skipped_codes.add(frame.f_code)  # so that reset() lets it be intercepted again
            if log.isEnabledFor(logging.DEBUG):
                log.debug("skipping %s: %s", _code_location(frame.f_code), reason)
            return None
        info = FrameInfo.from_view(frame)
        with compile_lock:
            return self._convert(
                info, frame_state if frame_state is not None else {}, caller=getattr(frame, "f_back", None)
            )

    # one frame, under the compile lock; ``caller`` is the calling frame (alive during the callback)
    def _convert(self, frame: FrameInfo, frame_state: Dict[str, Any], caller: Any = None) -> Any:
        code = frame.code
        input_codes.add(code)
        restored = set_aside.take(code, frame.f_locals, frame_state)  # kept while explain() ran
        if restored is not None:
            return restored
        entries = runtime.cache_entries(code)
        reasons: List[str] = []
        if entries:
            stack = user_call_stack(caller)
            reasons = self._recompile_reasons(frame, entries, stack)
            seen = frame_state.setdefault("recompile_reasons", [])
            for reason in reasons:
                if reason not in seen:
                    seen.append(reason)
            if len(entries) >= config.cache_size_limit:
                msg = cache_limit_message(code, len(entries), seen, stack=stack)
                if self.strict:
                    raise CacheLimitExceeded(msg)
                fh_logging.warn_once(log, ("cache_limit", id(code)), "framehook: %s", msg)
                return None
        compile_id = next_compile_id(code)
        disk_key = self._disk_key(code, frame_state)
        if disk_key is not None:
            found = self._from_disk(frame, disk_key, compile_id, reasons)
            if found is not None:
                return found
        try:
            return self._compile(frame, frame_state, compile_id, reasons, disk_key)
        except SkipFrame as e:
            log.info("skipping %s: %s", _code_location(code), e)
            return None
        except Exception as e:
            return self._failed(frame, e, compile_id)

    def _recompile_reasons(
        self, frame: FrameInfo, entries: List[Any], stack: Optional[traceback.StackSummary] = None
    ) -> List[str]:
        reasons = []
        for i, entry in enumerate(entries):
            found = describe_failures(entry.check_fn, frame.f_locals)
            label = f"cache entry {i}" + (
                f" [{entry.check_fn.compile_id}]" if getattr(entry.check_fn, "compile_id", None) else ""
            )
            reasons.append(f"{label}: " + "; ".join(found))
        code = frame.code
        if recompiles_log.isEnabledFor(logging.INFO):
            recompiles_log.info(
                "Recompiling %s, triggered by the failing guard(s):\n%s%s",
                _code_location(code),
                "\n".join(f"  - {r}" for r in reasons),
                _format_call_stack(stack),
            )
        if self.hooks.guard_fail_fn is not None:
            for reason in reasons:
                self.hooks.guard_fail_fn(GuardFail(reason, code, stack))
        return reasons

    def _failed(self, frame: FrameInfo, e: Exception, compile_id: CompileId) -> None:
        code = frame.code
        internal = not isinstance(e, (TranslatorError, RestartAnalysis))
        if internal and (config.record_on_failure or config.record_dir):
            path = _record_failure(frame, e)
            if path:
                e.record_filename = path  # type: ignore[attr-defined]
        if self.strict:
            raise _user_facing(e)
        text = augment_message(e)
        if config.verbose:
            text += "\n" + "".join(traceback.format_exception(type(e), e, e.__traceback__))
        fh_logging.warn_once(
            log,
            ("failed", id(code)),
            "framehook: translating %s failed [%s]; it runs unmodified.\n%s",
            _code_location(code),
            compile_id,
            text,
        )
        return None

    def _disk_key(self, code: types.CodeType, frame_state: Dict[str, Any]) -> Optional[str]:
        """The translation cache's key for this frame, or None when it is not to be used:
        no cache directory, hooks that change what a translation gives, explain() watching
        the translations, or a frame whose earlier translations left state behind."""
        if config.translation_cache_dir is None or not translation_cache.active():
            return None
        hooks = self.hooks
        if hooks.guard_filter_fn is not None or hooks.guard_export_fn is not None or _bytecode_hooks:
            return None
        if config.verify_backend or any(k != "recompile_reasons" for k in frame_state):
            return None
        from ..symbolic.translator import observing

        if observing():
            return None
        return translation_cache.cache_key(code, self.compiler_fn, self.translator, self.strict, self.dynamic)

    def _from_disk(self, frame: FrameInfo, key: str, compile_id: CompileId, recompile_reasons: List[str]) -> Any:
        """The cache entry rebuilt from a translation another process kept, or None."""
        found = translation_cache.lookup(key, frame.f_locals, frame.f_globals)
        if found is None:
            return None
        graph, sources, template = found.graph, found.sources, found.template
        compiled: Any = None
        if graph is not None:
            graph.bind_globals(frame.f_globals)
            example_inputs = [source_value(s, frame.f_locals, frame.f_globals) for s in sources]
            try:
                with compile_context(CompileContext(compile_id)), tracing(TracingContext()):
                    compiled = call_backend(self.compiler_fn, graph, example_inputs)
            except Exception as e:  # the backend refuses it now: translate as without the cache
                log.info("translation cache entry of %s not used: %s", _code_location(frame.code), e)
                return None
        if template is None:  # the original code, under the guards
            out = TranslationOutput(code=None)
        else:
            new_code = translation_cache.output_code(template, compiled, found.constants)
            out = TranslationOutput(
                code=new_code,
                graphs=[graph] if graph is not None else [],
                compiled_fns=[compiled] if compiled is not None else [],
            )
        if found.check_fn is not None:  # the kept C checker (the translation's guards, global state's included)
            return self._entry(frame, out, found.check_fn, compile_id, [], recompile_reasons, "loaded")
        assert found.guards is not None
        return self._guarded(
            frame, out, set(found.guards), compile_id, [], recompile_reasons, origin="loaded", built=found.builder
        )

    def _compile(
        self,
        frame: FrameInfo,
        frame_state: Dict[str, Any],
        compile_id: CompileId,
        recompile_reasons: List[str],
        disk_key: Optional[str] = None,
    ) -> Any:
        code = frame.code
        speculation_log = SpeculationLog()
        restart_reasons: List[str] = []
        out: Optional[TranslationOutput] = None
        guards: Set[Any] = set()

        @preserve_global_state
        def attempt() -> TranslationOutput:
            speculation_log.restart()
            tracer = self.translator(
                frame,
                compiler_fn=compiler_fn,
                speculation_log=speculation_log,
                frame_state=frame_state,
                one_graph=self.strict,
                dynamic=self.dynamic,
            )
            tctx = TracingContext()
            summary = traceback.FrameSummary(
                code.co_filename, code.co_firstlineno, getattr(code, "co_qualname", code.co_name), lookup_line=False
            )
            with tracing(tctx), TracingContext.current_frame(summary):
                result = tracer.run()
            guards.clear()
            guards.update(tctx.guards_context.guards)
            return result

        compiler_fn = self.compiler_fn
        if config.verify_backend:
            from ..backends.verify import verifying_backend

            compiler_fn = verifying_backend(compiler_fn)

        cctx = CompileContext(compile_id)
        with compile_context(cctx):
            for n in itertools.count():
                cctx.attempt = n
                try:
                    out = attempt()
                    break
                except UnspecializeRestartAnalysis as e:
                    speculation_log.clear()
                    restart_reasons.append(f"unspecialize: {e.reason}")
                except SpeculationRestartAnalysis as e:
                    restart_reasons.append(f"speculation: {e.reason}")
                restarts_log.info(
                    "restarting %s [%s]: %s", _code_location(code), cctx.current_trace_id(), restart_reasons[-1]
                )
                if len(restart_reasons) > config.restart_limit:
                    raise Unsupported(
                        f"gave up after {len(restart_reasons)} restarts "
                        f"(config.restart_limit={config.restart_limit}): " + "; ".join(restart_reasons[-3:])
                    )
        assert out is not None
        if out.code is not None:
            # kept cleaned: a process loading the translation runs it as it is (cleaning
            # radial_profile's output code took 2.3 ms of such a first call)
            out.code = _cleaned(out.code)
        result = self._guarded(frame, out, guards, compile_id, restart_reasons, recompile_reasons)
        if out.portable is not None and disk_key is not None:
            translation_cache.save(disk_key, guards, out, frame.f_locals, frame.f_globals)
        return result

    def _guarded(
        self,
        frame: FrameInfo,
        out: TranslationOutput,
        guards: Set[Any],
        compile_id: CompileId,
        restart_reasons: List[str],
        recompile_reasons: List[str],
        origin: str = "translated",
        built: Any = None,
    ) -> Any:
        """The cache entry for a translation's output (``_entry``) guarded by the check
        function of its guards (``guards`` gains the global-state guard)."""
        if config.guard_global_state:
            guards.add(GlobalStateSource().make_guard(GuardKind.GLOBAL_STATE))
        if self.hooks.guard_filter_fn is not None:
            kept = filter_guards(self.hooks.guard_filter_fn, guards)
            guards.clear()
            guards.update(kept)
        check_fn = build_check_fn(
            guards, frame.f_locals, frame.f_globals, guard_export_fn=self.hooks.guard_export_fn, built=built
        )
        return self._entry(frame, out, check_fn, compile_id, restart_reasons, recompile_reasons, origin)

    def _entry(
        self,
        frame: FrameInfo,
        out: TranslationOutput,
        check_fn: Any,
        compile_id: CompileId,
        restart_reasons: List[str],
        recompile_reasons: List[str],
        origin: str,
    ) -> Any:
        """The cache entry: the output code (cleaned already: ``_cleaned``; through the
        bytecode hooks) under ``check_fn``, and what debugging and explain() read back."""
        code = frame.code
        new_code = out.code if out.code is not None else code
        for hook in list(_bytecode_hooks.values()):
            replaced = hook(code, new_code)
            if replaced is not None:
                new_code = replaced
        if bytecode_log.isEnabledFor(logging.DEBUG):
            bytecode_log.debug(
                "%s [%s]\nORIGINAL\n%s\nGENERATED\n%s",
                _code_location(code),
                compile_id,
                _dis_text(code),
                _dis_text(new_code),
            )
        # what debug.dump and export() read back from the cache entry
        for attr, value in (
            ("compile_id", str(compile_id)),
            ("graphs", list(out.graphs)),
            ("compiled_fns", list(out.compiled_fns)),
            ("generated_code", new_code),
            ("original_code", code),
        ):
            try:
                setattr(check_fn, f"framehook_{attr}" if attr != "compile_id" else attr, value)
            except (AttributeError, TypeError):  # pragma: no cover - every check function takes attributes
                pass
        output_codes.add(new_code)
        _decisions[code] = {
            "compile_id": str(compile_id),
            "guards": check_fn.code_parts,  # written when read
            "graphs": [repr(g) for g in out.graphs],
            "restarts": restart_reasons,
            "recompile_reasons": recompile_reasons,
            "backend": backend_name(self.compiler_fn),
            "origin": origin,
        }
        if log.isEnabledFor(logging.INFO):
            guards = check_fn.guards
            log.info("%s %s [%s] with %d guards", origin, _code_location(code), compile_id, len(guards))
        return runtime.GuardedCode(new_code, check_fn)


def _cleaned(code: types.CodeType) -> types.CodeType:
    """An output code without its dead code and pointless jumps (``config.dead_code_elimination``)."""
    # most output code (load the inputs, call the graph, return) has nothing to clean
    if not config.dead_code_elimination or not needs_cleaning(code):
        return code
    return transform_code_object(
        code, lambda insts, opts: insts.__setitem__(slice(None), remove_pointless_jumps(remove_dead_code(insts)))
    )


def describe_failures(check_fn: Any, f_locals: Dict[str, Any]) -> List[str]:
    """Every failing guard of one cache entry, readable (type names qualified)."""
    describe_all = getattr(check_fn, "fail_reasons", None)
    if describe_all is not None:
        found = list(describe_all(f_locals))
    else:
        describe = getattr(check_fn, "fail_reason", None)
        one = describe(f_locals) if describe is not None else None
        found = [one] if one else []
    return found or ["guards of a cache entry not made by the translator failed"]


# the translator package (this module is in its conversion/ subpackage)
_PACKAGE_DIR = os.path.dirname(os.path.dirname(os.path.abspath(__file__))) + os.sep
_RUNTIME_DIR = os.path.dirname(os.path.abspath(getattr(runtime, "__file__", None) or __file__)) + os.sep


def _is_framehook_file(filename: str) -> bool:
    return filename.startswith(_PACKAGE_DIR) or filename.startswith(_RUNTIME_DIR)


def user_call_stack(caller: Any) -> traceback.StackSummary:
    """The Python stack at the call that started a frame, outermost first, as a traceback
    lists it (file, line, function); ``caller`` is the calling frame. framehook's own frames
    (``run``/``enable`` helpers; the optimize wrapper is a C callable with no frame) are left out."""
    rows = []
    back = caller
    while back is not None:
        code = getattr(back, "f_code", None)
        if code is None:
            break
        if not _is_framehook_file(code.co_filename):
            rows.append(traceback.FrameSummary(code.co_filename, back.f_lineno, code.co_name, lookup_line=False))
        back = back.f_back
    rows.reverse()
    return traceback.StackSummary.from_list(rows)


def _format_call_stack(stack: Optional[traceback.StackSummary], title: str = "the call") -> str:
    if not stack:
        return ""
    return f"\nuser's stack at {title} (most recent call last):\n" + format_user_stack(stack)


def cache_limit_message(
    code: types.CodeType,
    entries: int,
    reasons: List[str],
    shown: int = 20,
    stack: Optional[traceback.StackSummary] = None,
) -> str:
    """The one warning given when a function reaches config.cache_size_limit."""
    last = stack[-1] if stack else None
    lines = [
        f"{_code_location(code)} reached config.cache_size_limit ({config.cache_size_limit}) "
        f"with {entries} cache entries"
        + (f" (last call from {last.filename}:{last.lineno} in {last.name})" if last else "")
        + "; it now runs unmodified (raise the limit, or mark the changing inputs dynamic). "
        f"Recompilation reasons seen ({len(reasons)}):"
    ]
    lines += [f"  - {r}" for r in reasons[:shown]]
    if len(reasons) > shown:
        lines.append(f"  ... and {len(reasons) - shown} more")
    return "\n".join(lines) + _format_call_stack(stack, "the last call")


def filter_guards(guard_filter_fn: Callable[[List[Any]], Any], guards: Set[Any]) -> Set[Any]:
    """The guards ``guard_filter_fn`` keeps: it receives the guards in order and returns one
    bool per guard (True: keep)."""
    ordered = sorted(guards, key=lambda g: g.sort_key())
    keep = list(guard_filter_fn(list(ordered)))
    if len(keep) != len(ordered) or not all(isinstance(k, bool) for k in keep):
        raise TypeError(f"guard_filter_fn must return one bool per guard ({len(ordered)} guards), got {keep!r:.200}")
    dropped = [g for g, k in zip(ordered, keep) if not k]
    if dropped and log.isEnabledFor(logging.DEBUG):
        log.debug("guard_filter_fn dropped: %s", ", ".join(g.describe() for g in dropped))
    return {g for g, k in zip(ordered, keep) if k}


def _default_translator() -> Callable[..., Any]:
    """The symbolic interpreter (captures numpy code into graphs)."""
    from ..symbolic import SymbolicTranslator

    return SymbolicTranslator


def _dis_text(code: types.CodeType) -> str:
    buf = io.StringIO()
    dis.dis(code, file=buf)
    return buf.getvalue()


def _user_facing(e: Exception) -> Exception:
    """The exception to raise at the user's call in strict mode, carrying the user's stack."""
    stack = getattr(e, "real_stack", None)
    if isinstance(e, TranslatorError):
        if stack and e.args and isinstance(e.args[0], str) and "from user code:" not in e.args[0]:
            e.args = (e.args[0] + "\n\nfrom user code:\n" + format_user_stack(stack),) + e.args[1:]
        return e
    wrapped = InternalTranslatorError(augment_message(e))
    wrapped.__cause__ = e
    wrapped.real_stack = stack  # type: ignore[attr-defined]
    return wrapped


def _record_failure(frame: FrameInfo, e: Exception) -> Optional[str]:
    from .failure_records import record_translation_failure

    with runtime.run_only():
        return record_translation_failure(
            frame.function, frame.f_locals, e, directory=config.record_dir, decisions=None
        )


def convert_frame(compiler_fn: CompilerFn, hooks: Optional[Hooks] = None, **kwargs: Any) -> ConvertFrame:
    """A non-strict callback: failures log once and the frame runs unmodified."""
    return ConvertFrame(compiler_fn, hooks, strict=False, **kwargs)


def convert_frame_assert(compiler_fn: CompilerFn, hooks: Optional[Hooks] = None, **kwargs: Any) -> ConvertFrame:
    """A strict callback (nopython=True): failures raise at the user's call."""
    return ConvertFrame(compiler_fn, hooks, strict=True, **kwargs)
