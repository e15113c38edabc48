"""Helpers the runtime's test modules import (conftest.py holds only fixtures: when every
package's tests run in one pytest process, `conftest` is not a name one package owns)."""

from __future__ import annotations


def targeting(fn, callback):
    """Wraps a test callback so that it only sees frames of `fn` (others run unmodified)."""
    code = fn.__code__

    def wrapper(frame, cache_entry, frame_state):
        if frame.f_code is not code:
            return None
        return callback(frame, cache_entry, frame_state)

    return wrapper
