"""An output code in a form another process can load (the translation cache).

marshal writes code objects, but not every constant an output code holds: the compiled
graph, a resume function, a helper the code calls. ``split`` replaces each such constant,
in the code and in the codes nested in it, by a slot: a string constant no compiler
writes. The code is then marshalled and the constants are kept apart, for the cache to
pickle. ``fill`` puts the constants back in a loaded code. The compiled graph has a slot
of its own: the loading process compiles the kept graph again and passes the result.
"""

from __future__ import annotations

import marshal
import types
from typing import Any, Callable, Dict, List, Optional, Tuple

__all__ = ["GRAPH", "split", "fill"]

_PREFIX = "\x00framehook slot "
#: the entry of ``split``'s constants that stands for the compiled graph
GRAPH = ("graph",)


def _marshalable(value: Any) -> bool:
    try:
        marshal.dumps(value, 2)
    except ValueError:
        return False
    return True


def split(
    code: types.CodeType, compiled: Any, keep_apart: Callable[[Any], bool] = lambda value: False
) -> Tuple[bytes, List[Any]]:
    """(``code`` marshalled with slots, the constants taken out in slot order: ``GRAPH`` for
    ``compiled``, the others as ``("object", value)``). ``keep_apart(value)``: a constant
    marshal could write that must be taken out all the same (a resume function's code,
    which its loader registers). ValueError when the code has a string that reads as a slot."""
    out: List[Any] = []
    slots: Dict[int, str] = {}

    def slot(value: Any) -> str:
        name = slots.get(id(value))
        if name is None:
            name = slots[id(value)] = f"{_PREFIX}{len(out)}\x00"
            out.append(GRAPH if value is compiled else ("object", value))
        return name

    def walk(c: types.CodeType) -> types.CodeType:
        consts = []
        for k in c.co_consts:
            if compiled is not None and k is compiled or keep_apart(k):
                consts.append(slot(k))
            elif isinstance(k, types.CodeType):
                consts.append(walk(k))
            elif type(k) is str and k.startswith(_PREFIX):
                raise ValueError("the code has a constant that reads as a slot")
            elif _marshalable(k):
                consts.append(k)
            else:
                consts.append(slot(k))
        return c.replace(co_consts=tuple(consts))

    return marshal.dumps(walk(code), 2), out


def fill(template: bytes, compiled: Optional[Any], constants: List[Any]) -> types.CodeType:
    """The code ``split`` wrote, with its constants back (``compiled`` for ``GRAPH``)."""
    values = [compiled if entry == GRAPH else entry[1] for entry in constants]

    def walk(c: types.CodeType) -> types.CodeType:
        consts = []
        changed = False
        for k in c.co_consts:
            if type(k) is str and k.startswith(_PREFIX):
                k = values[int(k[len(_PREFIX) : -1])]
                changed = True
            elif isinstance(k, types.CodeType):
                new = walk(k)
                changed = changed or new is not k
                k = new
            consts.append(k)
        return c.replace(co_consts=tuple(consts)) if changed else c

    code = marshal.loads(template)
    if not isinstance(code, types.CodeType):
        raise ValueError(f"a kept output code is a {type(code).__name__}")
    return walk(code)
