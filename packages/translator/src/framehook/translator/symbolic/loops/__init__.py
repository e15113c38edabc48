"""Capturing ``for`` loops over ranges and ``while`` loops as loops in the graph.

Unrolling a 100-step time-stepping loop gives a graph 100 times its body and costs 100
body traces. Instead, after the first iteration has been traced as straight-line code,
the interpreter traces the body once more with every array (or graph number) it
reassigns replaced by a placeholder of a *body graph*, and the loop index by a symbolic
int. When that trace comes back to the loop head with each reassigned value of the same
kind (dtype, ndim, static dimensions) and every other value unchanged, each remaining
iteration would trace to the very same graph, so the remaining iterations become one
loop node (``graph/loop.py``). Anything else — a break or return in the body, a branch
on the index, a container made before the loop being mutated, a value whose shape grows,
a graph break — abandons the attempt, restores the interpreter's state and unrolls the
loop as before; the reason is kept in ``Tracer.loop_notes`` for ``explain()``.

Values the body reads from outside (a kernel, a parameter) enter the body graph as loop
invariants: ``lift`` adds a body placeholder for an outer node the first time the body
uses it. Python numbers the body changes (``t += dt``) make a second attempt carry them
as graph numbers (``carried.Promoted``); one updated by a single operation with a constant
gets its final value computed at trace time (``carried.folded_value``), so it is a Python
number after the loop. Only names whose value at the loop head is read (by the body before
it stores them, or after the loop: ``ControlFlow.live_locals``) are carried; a temporary of
one iteration is not a value of the loop.

Inside a body being captured, ``range()`` of a bound computed from a loop index
(``for j in range(i)``, ``range(i + 1, n)``) is a ``SymRange``: its loop cannot unroll, so
it is captured at once (with no first iteration traced as straight-line code) as a loop
node whose bounds are graph ints; when that fails, the enclosing loop unrolls instead and
the inner bounds are constants again. A triangular nest is then one loop node holding
another, not hundreds of unrolled copies.

A ``while`` loop whose condition the graph computes (``while err > tol:``) is captured the
same way from its condition's jump (``capture_while``): the body is traced once, to the
next test of the condition, and becomes a ``WhileLoop`` node that carries the condition
with the values. When the body cannot be captured, the branch breaks (FH002) as before.

An exit in the middle of a body (``if c: break`` with more body after it, the second test
of ``while a and b:``) makes the rest of the body a *tail*: a loop node inside the body
that runs once or not at all (``tails.py``). A Python number that an iteration turns into a
numpy scalar (``s = 0.0; s += a[k]``) is carried *widened* (``widening.py``). A nest is
captured at its first iteration (``holds_loop``), and ``range(k)`` of an automatic dynamic
int is a ``SymRange`` outside loop bodies too (its loop falls back to the FH011 break).


The modules: ``carried.py`` (the values a loop carries, the body graph and the state to
restore), ``widening.py`` (Python numbers a loop makes numpy scalars), ``ranges.py``
(``SymRange``), ``paths.py`` (where control goes from a jump, read from instruction kinds),
``tails.py`` (the body after an exit in its middle), ``for_loops.py`` and
``while_loops.py`` (the two captures). Loop heads and liveness are the control-flow
graph's (``bytecode/cfg.py``).
"""

from .carried import LoopAbort, LoopNote, left_body, lift, live_in
from .for_loops import capture_loop, exits_early, holds_loop
from .ranges import SymIter, SymRange, symbolic_range
from .while_loops import capture_while

__all__ = [
    "LoopAbort",
    "LoopNote",
    "SymRange",
    "SymIter",
    "capture_loop",
    "capture_while",
    "exits_early",
    "holds_loop",
    "symbolic_range",
    "lift",
    "left_body",
    "live_in",
]
