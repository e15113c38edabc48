"""A weak map keyed by the identity of code objects.

A ``WeakKeyDictionary`` compares keys by equality, and code objects that differ only in
``co_qualname`` (two resume functions of one frame made by different translations), or
two compilations of the same source, are equal: the entry of one would stand for the
other, and vanish when the first is collected."""

from __future__ import annotations

import types
import weakref
from typing import Any, Dict, Generic, List, Optional, Tuple, TypeVar

__all__ = ["CodeIdentityMap"]

T = TypeVar("T")


class CodeIdentityMap(Generic[T]):
    """``code -> value`` for live code objects, by identity; an entry goes with its code."""

    def __init__(self) -> None:
        self._items: Dict[int, Tuple[Any, T]] = {}

    def __setitem__(self, code: types.CodeType, value: T) -> None:
        key = id(code)
        items = self._items

        def forget(ref: Any, key: int = key) -> None:
            entry = items.get(key)
            if entry is not None and entry[0] is ref:
                del items[key]

        items[key] = (weakref.ref(code, forget), value)

    def get(self, code: types.CodeType, default: Optional[T] = None) -> Optional[T]:
        entry = self._items.get(id(code))
        if entry is None or entry[0]() is not code:
            return default
        return entry[1]

    def __getitem__(self, code: types.CodeType) -> T:
        entry = self._items.get(id(code))
        if entry is None or entry[0]() is not code:
            raise KeyError(code)
        return entry[1]

    def __contains__(self, code: types.CodeType) -> bool:
        entry = self._items.get(id(code))
        return entry is not None and entry[0]() is code

    def __len__(self) -> int:
        return len(self.keys())

    def keys(self) -> List[types.CodeType]:
        return [c for c in (ref() for ref, _ in list(self._items.values())) if c is not None]

    def clear(self) -> None:
        self._items.clear()
