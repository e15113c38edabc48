"""The guard builder's code parts in the form the runtime's C ``GuardChecker`` takes: each
part's source as a path of steps from the frame's locals, and the checker's guard list."""

from __future__ import annotations

from typing import Any, Dict, List, Optional, Tuple

from .sources import (
    AttrSource,
    ChainedSource,
    ClosureCellSource,
    GlobalSource,
    IndexSource,
    ItemSource,
    LengthSource,
    LocalSource,
    NdarrayPropertySource,
    Source,
    TypeSource,
)

__all__ = ["COVERED", "c_guards", "source_path"]

#: a code part's C spec saying "checked by the C guard of the part before it"
COVERED = ("covered",)


def source_path(source: Any) -> Optional[Tuple[Tuple[Any, ...], ...]]:
    """The C checker's path for ``source`` (steps from f_locals), or None when a step has no
    C equivalent."""
    steps: List[Tuple[Any, ...]] = []
    while isinstance(source, ChainedSource):
        t = type(source)
        if t is AttrSource:
            new: List[Tuple[Any, ...]] = [("attr", part) for part in source.member.split(".")]
        elif t is ItemSource:
            new = [("item", source.key)]
        elif t is IndexSource:
            new = [("index", source.index)]
        elif t is ClosureCellSource:
            new = [("attr", "__closure__"), ("index", source.index), ("attr", "cell_contents")]
        elif t is TypeSource:
            new = [("type",)]
        elif t is LengthSource:
            new = [("len",)]
        elif t is NdarrayPropertySource:
            new = [("attr", part) for part in source.prop.split(".")]
            if source.index is not None:
                new.append(("index", source.index))
        else:
            return None
        steps[:0] = new
        source = source.base
    if isinstance(source, LocalSource) and type(source).name is LocalSource.name:
        steps.insert(0, ("local", source.local_name))
    elif type(source) is GlobalSource:
        steps.insert(0, ("global", source.global_name))
    else:
        return None
    return tuple(steps)


def c_guards(parts: List[Any]) -> Optional[Tuple[List[Tuple[Any, ...]], List[int]]]:
    """The C checker's guard list for ``parts`` and, per C guard, the index of its first part;
    None when some part has no C form."""
    specs: List[Tuple[Any, ...]] = []
    starts: List[int] = []
    paths: Dict[Source, Any] = {}
    for i, part in enumerate(parts):
        c = part.c_spec
        if c is None:
            return None
        if c is COVERED:
            continue
        if c[0] in ("CALL", "CONTEXTVAR_IS"):  # not an opcode: checker ops
            path: Any = ()
        else:
            source = part.guard.originating_source
            if source not in paths:
                paths[source] = source_path(source)
            path = paths[source]
            if path is None:
                return None
        specs.append((path,) + tuple(c))
        starts.append(i)
    return specs, starts
