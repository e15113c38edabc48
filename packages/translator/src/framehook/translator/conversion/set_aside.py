"""Cache entries set aside while ``explain()`` translates afresh, given back afterwards.

The runtime can drop a code object's entries but not put them back, so ``explain()`` keeps
each code's entries (replacement code and check function) and its ``frame_state`` here, and
the conversion loop hands them back on the code's next cache miss: an entry whose check
function accepts the call is returned as it was, with no translation, so functions compiled
before ``explain()`` keep their cache (no recompilation). ``reset()`` and
``remove_from_cache()`` drop what is kept.
"""

from __future__ import annotations

import threading
import types
from typing import Any, Dict, List, Optional, Tuple

from .._runtime import runtime
from ..translation.codemap import CodeIdentityMap

__all__ = ["SetAside", "set_aside"]


class _Kept:
    def __init__(self, entries: List[Tuple[types.CodeType, Any]], state: Optional[Dict[str, Any]]) -> None:
        self.entries = entries
        self.state = state


class SetAside:
    """``code -> (its cache entries, its frame_state)``, by code identity."""

    def __init__(self) -> None:
        self._kept: CodeIdentityMap[_Kept] = CodeIdentityMap()
        self._lock = threading.Lock()

    def put(
        self, code: types.CodeType, entries: List[Tuple[types.CodeType, Any]], state: Optional[Dict[str, Any]]
    ) -> None:
        if entries or state:
            with self._lock:
                self._kept[code] = _Kept(list(entries), dict(state) if state else None)

    def drain(self) -> Dict[int, Tuple[types.CodeType, List[Tuple[types.CodeType, Any]], Optional[Dict[str, Any]]]]:
        """Everything kept, by ``id(code)``, and nothing kept any more (an explain() that
        starts while entries of an earlier one are still kept sets those aside too)."""
        with self._lock:
            out = {}
            for code in self._kept.keys():
                kept = self._kept.get(code)
                if kept is not None and (kept.entries or kept.state):
                    out[id(code)] = (code, kept.entries, kept.state)
            self._kept.clear()
            return out

    def take(self, code: types.CodeType, f_locals: Dict[str, Any], frame_state: Dict[str, Any]) -> Any:
        """On a cache miss of ``code``: its kept ``frame_state`` goes back (once), and a kept
        entry whose check function accepts ``f_locals`` is returned as ``GuardedCode``; None
        when none does (the frame is then translated as usual)."""
        with self._lock:
            kept = self._kept.get(code)
            if kept is None or (not kept.entries and kept.state is None):
                return None
            if kept.state is not None:
                for key, value in kept.state.items():
                    frame_state.setdefault(key, value)
                kept.state = None
            found = None
            for i, (new_code, check_fn) in enumerate(kept.entries):
                try:
                    ok = bool(check_fn(f_locals))
                except Exception:  # a guard that raises now: let the translation decide
                    ok = False
                if ok:
                    found = kept.entries.pop(i)
                    break
        return None if found is None else runtime.GuardedCode(*found)

    def discard(self, code: types.CodeType) -> None:
        with self._lock:
            if code in self._kept:
                self._kept[code] = _Kept([], None)

    def clear(self) -> None:
        with self._lock:
            self._kept.clear()

    def __contains__(self, code: object) -> bool:
        kept = self._kept.get(code)  # type: ignore[arg-type]
        return kept is not None and bool(kept.entries or kept.state)


set_aside = SetAside()
