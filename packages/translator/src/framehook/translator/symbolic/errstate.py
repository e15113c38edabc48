"""``with np.errstate(...):`` blocks captured into the graph.

``np.errstate(<constant keyword arguments>)`` called right before a with-entry instruction
(SETUP_WITH on 3.9/3.10, BEFORE_WITH on 3.11-3.13, ``COPY 1`` and LOAD_SPECIAL on 3.14+)
becomes an ``ErrstateV``. Entering it opens a block on the tracer: every node recorded
until the block's ``__exit__(None, None, None)`` call gets ``meta["errstate"]``, the numpy
error settings the block sets on top of the caller's (nested blocks combined as numpy
nests them), and the graph's code runs those nodes inside ``with numpy.errstate(...)``
(``graph/codegen.py``). On 3.11+ the instructions covered by the block's own cleanup
handler are allowed; any other try/with still breaks with FH007.

A graph break inside the block becomes FH007 at the ``np.errstate`` call, as before this
was captured: the whole with statement runs in Python between the graphs (``convert``).
"""

from __future__ import annotations

import contextlib
from typing import TYPE_CHECKING, Any, Dict, Iterator, List, Optional

import numpy as np

from ..bytecode.kinds import Kind
from . import numpy_support as nps
from .breaks import GraphBreak
from .values import Const, V

if TYPE_CHECKING:  # pragma: no cover
    from .roles import Frame

__all__ = [
    "ErrstateV",
    "ErrstateExitV",
    "ErrstateEnterV",
    "Block",
    "make",
    "enter",
    "exit_call",
    "convert",
    "allowed",
    "strict",
]

_KINDS = ("divide", "over", "under", "invalid")
_KEYS = frozenset(_KINDS + ("all",))
# 'call' and 'log' hand errors to np.seterrcall's object: left to Python
_MODES = frozenset({"ignore", "warn", "raise", "print"})


class ErrstateV(V):
    """``np.errstate(**settings)`` not entered yet."""

    __slots__ = ("settings", "call_index", "lineno")

    def __init__(self, settings: Dict[str, str], call_index: int, lineno: int) -> None:
        self.settings = settings
        self.call_index = call_index
        self.lineno = lineno

    def describe(self) -> str:
        return "a numpy.errstate context manager"


class ErrstateExitV(V):
    """The entered block's ``__exit__`` (fetched before the block is entered where
    LOAD_SPECIAL fetches it: ``block`` is set on entry)."""

    __slots__ = ("block", "cm")

    def __init__(self, block: Optional["Block"], cm: Optional[ErrstateV] = None) -> None:
        self.block = block
        self.cm = cm

    def describe(self) -> str:
        return "numpy.errstate.__exit__"


class ErrstateEnterV(V):
    """The entered block's ``__enter__``, where LOAD_SPECIAL fetches it (the block is
    open already: calling it returns what numpy.errstate.__enter__ does)."""

    __slots__ = ()

    def describe(self) -> str:
        return "numpy.errstate.__enter__"


class Block:
    """An open errstate block: its frame, cleanup handler (3.11+; 3.9/3.10: the SETUP_WITH
    target), the manager it came from and the combined settings inside it."""

    __slots__ = ("frame", "handler", "cm", "state")

    def __init__(self, frame: "Frame", handler: Any, cm: ErrstateV, state: Dict[str, str]) -> None:
        self.frame = frame
        self.handler = handler
        self.cm = cm
        self.state = state


def _expand(settings: Dict[str, str]) -> Dict[str, str]:
    """What ``np.seterr(**settings)`` changes: ``all`` sets every kind, the others override it."""
    out = {k: settings["all"] for k in _KINDS} if "all" in settings else {}
    out.update((k, v) for k, v in settings.items() if k != "all")
    return out


def _entered_next(fr: "Frame") -> bool:
    """Is the value just made entered as a context manager right away: the with-entry
    instruction (Kind.WITH_ENTER), or where LOAD_SPECIAL fetches the methods, a copy of
    the top before it (3.14+)?"""
    nxt = fr.insts[fr.ip] if fr.ip < len(fr.insts) else None
    if nxt is None:
        return False
    if nxt.kind == Kind.COPY:
        after = fr.insts[fr.ip + 1] if fr.ip + 1 < len(fr.insts) else None
        return nxt.depth == 1 and after is not None and after.kind == Kind.LOAD_SPECIAL
    return nxt.kind == Kind.WITH_ENTER


def make(fr: "Frame", args: List[V], kwargs: Dict[str, V]) -> V:
    """The value of an ``np.errstate(...)`` call; FH007 (the with statement runs in Python)
    unless it has constant, valid keyword arguments and is entered right away."""
    if args or not _entered_next(fr):
        raise fr.brk("FH007", "a with block (numpy.errstate)")
    settings: Dict[str, str] = {}
    for key, v in kwargs.items():
        value = v.value if isinstance(v, Const) else None
        if key not in _KEYS or not isinstance(value, str) or value not in _MODES:
            raise fr.brk("FH007", f"a with block (numpy.errstate with {key}={v.describe()})")
        settings[key] = value
    return ErrstateV(settings, fr.cur_index, fr.lineno)


def enter(fr: "Frame", cm: ErrstateV, inst: Any) -> Block:
    """Open the block entered by ``inst`` (the with-entry instruction)."""
    if inst.kind == Kind.WITH_ENTER and inst.target is not None:  # 3.9/3.10: the block's handler
        handler = inst.target
    else:
        # the first instruction of the block: after BEFORE_WITH, or after LOAD_SPECIAL's CALL
        k = fr.ip + (1 if inst.kind == Kind.LOAD_SPECIAL else 0)
        first = fr.insts[k] if k < len(fr.insts) else None
        entry = getattr(first, "exn_tab_entry", None)
        if entry is None or entry.target.kind != Kind.PUSH_EXC_INFO:
            raise fr.brk("FH007", "a with block (numpy.errstate) without its cleanup handler")  # pragma: no cover
        handler = entry.target
    tracer = fr.tracer
    outer = tracer.errstate_blocks[-1].state if tracer.errstate_blocks else {}
    state = dict(outer)
    state.update(_expand(cm.settings))
    block = Block(fr, handler, cm, state)
    tracer.errstate_blocks.append(block)
    tracer.graph.errstate = state or None
    return block


def exit_call(fr: "Frame", fn: ErrstateExitV, args: List[V], kwargs: Dict[str, V]) -> V:
    """``__exit__(None, None, None)`` on the block's normal way out: close it."""
    tracer = fr.tracer
    blocks = tracer.errstate_blocks
    if (
        kwargs
        or len(args) != 3
        or not all(isinstance(a, Const) and a.value is None for a in args)
        or not blocks
        or blocks[-1] is not fn.block
    ):
        raise fr.brk("FH007", "a with block (numpy.errstate) left another way")
    blocks.pop()
    tracer.graph.errstate = (blocks[-1].state or None) if blocks else None
    return Const(None)


def allowed(fr: "Frame", entry: Any) -> bool:
    """Is an instruction with exception-table ``entry`` inside an open errstate block of
    ``fr`` (and in no other try/with block)?"""
    target = entry.target
    return any(b.handler is target and b.frame is fr for b in fr.tracer.errstate_blocks)


def convert(fr: "Frame", e: GraphBreak) -> GraphBreak:
    """A break inside ``fr``'s open errstate blocks: FH007 at the outermost one's
    ``np.errstate`` call, so the whole with statement runs in Python."""
    mine = [b for b in fr.tracer.errstate_blocks if b.frame is fr]
    if not mine or getattr(e, "errstate_block", None) is mine[0]:
        return e
    outer = mine[0]
    new = GraphBreak("FH007", f"a with block (numpy.errstate) around {e.code}: {e.reason}")
    lineno, fr.lineno = fr.lineno, outer.cm.lineno
    try:
        fr.locate(new)  # at the with statement, with the user's stack there
    finally:
        fr.lineno = lineno
    new.errstate_block = outer  # type: ignore[attr-defined]
    if fr.depth == 0:
        new.break_index = outer.cm.call_index
    return new


@contextlib.contextmanager
def strict(fr: "Frame") -> Iterator[None]:
    """Around a value the trace computes now (constant folding): a floating-point error that
    would warn, raise or print when the code runs raises FloatingPointError here instead,
    which the caller turns into a break (inside an errstate block the with statement then
    runs in Python; outside, the operation runs in Python, where it warns at the user's
    line) rather than folding the error away. Outside a block the settings are the caller's
    now, which the cache entry's guard on numpy's error state keeps for every call. Any other
    warning raises too (``nps.warnings_raised``): issued now it would come from the
    translator's line on the first call only."""
    blocks = fr.tracer.errstate_blocks
    state = blocks[-1].state if blocks else np.geterr()
    with np.errstate(**{k: "ignore" if state.get(k) == "ignore" else "raise" for k in _KINDS}), nps.warnings_raised():
        yield
