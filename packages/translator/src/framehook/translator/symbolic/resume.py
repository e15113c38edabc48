"""Graph breaks that resume (Dynamo-style).

When tracing a frame stops at an instruction it cannot capture, the translator re-traces
the frame up to that instruction (``Tracer.stop_at``) and emits, in place of the frame's
body:

1. a call of the graph captured so far (its outputs: every graph value still live);
2. the live stack and locals, rebuilt from the graph's outputs, constants and sources,
   kept in temporaries (so the instruction cannot change them under us);
3. the unsupported instruction itself (for a call: the whole call sequence, 3.11's
   ``PRECALL``/``CALL`` and 3.12+'s ``CALL``/``POP_TOP`` kept adjacent), on its real inputs,
   with the user's line;
4. ``return resume(<stack>, <locals>)`` for each way the instruction continues (two for a
   conditional jump), where ``resume`` is a plain function whose code is the frame's code
   with a prologue that pushes the stack arguments and jumps to the next instruction. It
   is intercepted and translated in turn.

What resumes: a break at a call (``print``, an unknown C function, a class, a call that
cannot be inlined or raises), at a conditional jump on an array value, at an operator,
subscript, attribute load (without the method bit), attribute/subscript/global store,
formatting, unpacking, ``raise`` -- in straight-line code of the frame itself (a break in
an inlined function resumes at the call in the frame), outside any loop and any
try/except/finally/with block.

A break at a method load (``y.tolist()``: ``LOAD_METHOD``, 3.12+'s method ``LOAD_ATTR``)
runs the whole call -- load, arguments, call -- as the original instructions, after the
frame's locals are restored, when that call is straight-line code.

A break inside a loop or a try/with block, or at an instruction none of the above
handles, runs the whole statement holding it (``statement_site``): the trace stops at the
statement's first instruction, the graph runs, the locals are stored back, the statement's
instructions run as copied from the frame (jumps and exception handlers re-pointed at the
copies), and where it ends ``return resume(<locals>)`` follows; locals it may leave unbound
are looked up at run time (``_ResumeUnbound``).

Frames with cells: the frame's cell and free variables become free variables of its
resume functions, which are made at each call around the frame's own cells
(``_WithCells``), so closures made before the break share them. Cells the trace assigned
are stored into the real cells before the broken instructions run, and a function made in
the frame that is still live is made again around the same cells (``rebuild.py``).

What still runs the original code of the frame (``CannotResume``, the break is reported as
before): breaks in a resume function's prologue, a statement that runs to the end of the
frame with nothing before it, and a live value that cannot be rebuilt (an iterator, a
function made in an inlined call or with annotations, a cell, a mutable constant).
"""

# the pieces, by concern; this module names them for the translator and the tests
from .breaks import CannotResume
from .rebuild import Rebuilder
from .resume_code import (
    RESUME_PREFIX,
    _ResumeUnbound,
    _WithCells,
    closure_names,
    frame_label,
    is_resume_code,
    make_resume_code,
)
from .resume_emit import BreakPlan, emit_break
from .resume_sites import _RESUMES_ALONE, BreakSite, break_site, statement_site

__all__ = [
    "BreakSite",
    "BreakPlan",
    "break_site",
    "statement_site",
    "make_resume_code",
    "emit_break",
    "is_resume_code",
    "frame_label",
    "closure_names",
    "RESUME_PREFIX",
    "CannotResume",
    "Rebuilder",
    "_RESUMES_ALONE",
    "_ResumeUnbound",
    "_WithCells",
]
