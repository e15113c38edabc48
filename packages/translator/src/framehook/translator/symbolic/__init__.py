"""The symbolic interpreter: executes a frame's bytecode on symbolic values and records
its numpy computation into a graph (``graph/``). ``SymbolicTranslator`` is the
translator the conversion loop uses; graph breaks carry ``FH`` identifiers (``breaks.py``)."""

from .breaks import BREAKS, BreakKind, GraphBreak
from .translator import FrameReport, SymbolicTranslator, add_observer, make_output_code, remove_observer

__all__ = [
    "BREAKS",
    "BreakKind",
    "GraphBreak",
    "SymbolicTranslator",
    "FrameReport",
    "add_observer",
    "remove_observer",
    "make_output_code",
]
