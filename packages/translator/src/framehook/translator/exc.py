"""Exceptions of the translator and the way the user's stack is attached to them."""

from __future__ import annotations

import traceback
from typing import Optional

__all__ = [
    "TranslatorError",
    "InternalTranslatorError",
    "Unsupported",
    "BackendCompilerFailed",
    "InvalidBackendError",
    "RestartAnalysis",
    "SpeculationRestartAnalysis",
    "UnspecializeRestartAnalysis",
    "SkipFrame",
    "CacheLimitExceeded",
    "format_user_stack",
    "augment_message",
]


class TranslatorError(RuntimeError):
    """Base of the errors the translator raises to users."""


class InternalTranslatorError(TranslatorError):
    """A bug in the translator itself (as opposed to code it does not support)."""


class Unsupported(TranslatorError):
    """The frame uses something the translator cannot handle."""


class BackendCompilerFailed(TranslatorError):
    """The backend raised, or returned something that is not callable."""

    def __init__(self, backend_name: str, inner: BaseException) -> None:
        self.backend_name = backend_name
        self.inner_exception = inner
        super().__init__(f"backend {backend_name!r} failed: {type(inner).__name__}: {inner}")


class InvalidBackendError(TranslatorError, ValueError):
    """An unknown backend name or a backend object that is not callable."""


class CacheLimitExceeded(Unsupported):
    """A code object reached config.cache_size_limit."""


class RestartAnalysis(Exception):
    """Start translating the frame again from its first instruction."""

    def __init__(self, reason: str = "") -> None:
        super().__init__(reason)
        self.reason = reason


class SpeculationRestartAnalysis(RestartAnalysis):
    """A speculation failed: retry, keeping what the speculation log learned."""


class UnspecializeRestartAnalysis(RestartAnalysis):
    """Retry with nothing learned: the speculation log is cleared."""


class SkipFrame(Exception):
    """Give up on this frame: it runs unmodified and is not intercepted again."""


def format_user_stack(stack: Optional[traceback.StackSummary]) -> str:
    if not stack:
        return ""
    return "".join(traceback.format_list(stack)).rstrip()


def augment_message(exc: BaseException) -> str:
    """The exception's message followed by the user's stack when one was attached."""
    msg = f"{type(exc).__name__}: {exc}"
    real_stack = getattr(exc, "real_stack", None)
    if real_stack:
        msg += "\n\nfrom user code:\n" + format_user_stack(real_stack)
    record = getattr(exc, "record_filename", None)
    if record:
        msg += f"\n\nexecution record written to {record}"
    return msg
