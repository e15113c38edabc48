"""``export(fn)(*args, **kwargs)``: one standalone callable with its guards (``framehook.translator.export``;
the module is named ``exporting`` so that it does not shadow the function).

    exported = export(step)(x, 0.1)      # traces step on these inputs
    exported(x2, 0.2)                    # runs the captured graph, after checking the guards
    exported.guards                      # the guards, as readable text
    print(exported.graph)                # the captured graph

The call is traced once with the translator in strict mode (the entries it made are
dropped again, so ``fn`` itself is left as it was). When the function cannot be captured
whole, ``export`` raises ``ExportError`` at the first graph break (identifier, reason,
file:line, hint), found while tracing: none of ``fn`` has run, so its side effects (a
print, a write) have not happened, as with Dynamo's export. Calling the exported function
with inputs its guards reject raises ``ExportGuardError`` naming every failing guard; it
never falls back to running ``fn``.
"""

from __future__ import annotations

import inspect
import types
from typing import Any, Callable, Dict, List, Optional, Union

from ._runtime import runtime
from .backends import CompilerFn
from .exc import TranslatorError

__all__ = ["export", "Exported", "ExportError", "ExportGuardError"]


class ExportError(TranslatorError):
    """The function cannot be exported as one graph; ``.breaks`` lists why."""

    def __init__(self, message: str, breaks: Optional[List[Any]] = None) -> None:
        super().__init__(message)
        self.breaks = list(breaks or [])


class ExportGuardError(TranslatorError, TypeError):
    """An exported function was called with inputs its guards reject; ``.reasons`` lists them."""

    def __init__(self, message: str, reasons: List[str]) -> None:
        super().__init__(message)
        self.reasons = reasons


def _split_method(target: Any) -> Any:
    if inspect.ismethod(target):
        return target.__func__, (target.__self__,)
    return target, ()


class Exported:
    """The captured function: checks its guards, then runs the generated code (which calls the
    compiled graph) with no frame interception."""

    def __init__(
        self, function: types.FunctionType, bound: tuple, check_fn: Any, code: types.CodeType, graph: Any, result: Any
    ) -> None:
        self._function = function
        self._bound = bound
        self._signature = inspect.signature(function)
        self.check_fn = check_fn
        self.code = code
        self.graph = graph
        self.example_result = result
        self.__name__ = function.__name__
        self.__qualname__ = function.__qualname__
        self.__doc__ = function.__doc__
        self._run = types.FunctionType(
            code, function.__globals__, function.__name__, function.__defaults__, function.__closure__
        )
        self._run.__kwdefaults__ = function.__kwdefaults__

    @property
    def guards(self) -> List[str]:
        return list(getattr(self.check_fn, "code_parts", []))

    def f_locals(self, *args: Any, **kwargs: Any) -> Dict[str, Any]:
        """What the guards see for a call: the bound arguments and the free variables."""
        bound = self._signature.bind(*self._bound, *args, **kwargs)
        bound.apply_defaults()
        f_locals = dict(bound.arguments)
        code = self._function.__code__
        for name, cell in zip(code.co_freevars, self._function.__closure__ or ()):
            try:
                f_locals[name] = cell.cell_contents
            except ValueError:  # an empty cell: the guard on it fails, as in a real call
                pass
        return f_locals

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        from .conversion.convert_frame import describe_failures

        f_locals = self.f_locals(*args, **kwargs)
        if not self.check_fn(f_locals):
            reasons = describe_failures(self.check_fn, f_locals)
            raise ExportGuardError(
                f"exported {self.__qualname__} was called with inputs its guards reject:\n"
                + "\n".join(f"  - {r}" for r in reasons),
                reasons,
            )
        return runtime.call_with(None, self._run, *self._bound, *args, **kwargs)

    def __repr__(self) -> str:
        return f"<exported {self.__qualname__}: {len(self.guards)} guards, graph {getattr(self.graph, 'name', '?')}>"


def _break_of(error: Any, name: str, make: Any) -> Any:
    """The graph break a strict trace raised, as ``explain()`` reports one, or None for
    another refusal (no break code)."""
    code = getattr(error, "code", None)
    if not isinstance(code, str):
        return None
    stack = getattr(error, "real_stack", None) or []
    function = stack[-1].name if stack else name
    return make(
        code,
        getattr(error, "reason", str(error)),
        getattr(error, "filename", None),
        getattr(error, "lineno", None),
        function,
    )


def export(
    fn: Callable[..., Any], *, backend: Union[str, CompilerFn] = "eager", dynamic: Optional[bool] = None
) -> Callable[..., Exported]:
    """A callable that traces ``fn(*args, **kwargs)`` and returns an ``Exported``, or raises
    ``ExportError`` at the first graph break, before any of ``fn`` runs."""
    if not callable(fn):
        raise TypeError(f"export() expects a callable, got {type(fn).__name__}")
    from .eval_frame import innermost_fn, optimize
    from .exc import Unsupported
    from .explaining import BreakReason, _summarize
    from .symbolic import add_observer, remove_observer

    def run(*args: Any, **kwargs: Any) -> Exported:
        function, bound = _split_method(innermost_fn(fn))
        code = getattr(function, "__code__", None)
        if not isinstance(function, types.FunctionType) or not isinstance(code, types.CodeType):
            raise ExportError(f"export() needs a Python function or bound method, got {type(function).__name__}")
        runtime.reset_code(code)
        name = getattr(code, "co_qualname", code.co_name)
        reports: List[Any] = []
        add_observer(reports.append)
        try:
            # strict: a break raises while the frame is traced, before any of it runs
            result = optimize(backend, nopython=True, dynamic=dynamic)(function)(*bound, *args, **kwargs)
            entries = runtime.cache_entries(code)
        except Unsupported as e:
            brk = _break_of(e, name, BreakReason)
            if brk is None:
                raise ExportError(f"cannot export {name}: {str(e).splitlines()[0]}") from e
            where = f"{brk.filename}:{brk.lineno}" if brk.filename else "<unknown location>"
            raise ExportError(
                f"cannot export {name}: a graph break, found while tracing (none of {name} ran)\n"
                f"  - {brk.code} at {where} (in {brk.function}): {brk.reason}\n    hint: {brk.hint}",
                [brk],
            ) from None
        finally:
            remove_observer(reports.append)
            for seen in {id(r.code): r.code for r in reports}.values():
                runtime.reset_code(seen)
            runtime.reset_code(code)
        summary = _summarize(reports, result)
        if summary.break_reasons:  # (strict tracing raises first: kept for a backend's own breaks)
            lines = [f"cannot export {name}: {summary.graph_break_count} graph break(s)"]
            for b in summary.break_reasons:
                where = f"{b.filename}:{b.lineno}" if b.filename else "<unknown location>"
                lines.append(f"  - {b.code} at {where} (in {b.function}): {b.reason}")
                lines.append(f"    hint: {b.hint}")
            raise ExportError("\n".join(lines), summary.break_reasons)
        # the translator's check functions carry the graphs they guard
        graphs = getattr(entries[0].check_fn, "framehook_graphs", None) if entries else None
        if not graphs:
            raise ExportError(
                f"cannot export {name}: the translator did not capture it (no numpy reachable "
                "from the frame, or its file is skipped: see config.skip_dirs/force_dirs)"
            )
        entry = entries[0]
        graph = graphs[0]
        return Exported(function, bound, entry.check_fn, entry.code, graph, result)

    return run
