"""The symbolic interpreter's control flow: jumps, branches, iteration, try/with blocks
and raising (a ``FrameTracer`` mixin)."""

from __future__ import annotations

from typing import Any, List

from ..bytecode.behaviour import BEHAVIOUR
from ..bytecode.kinds import Kind
from ..config import config
from . import errstate
from .breaks import GraphBreak
from .loops import SymIter, SymRange, capture_loop, capture_while, exits_early, holds_loop
from .values import NULL, Const, DictV, IterV, ListV, Tensor, TupleV, V

__all__ = ["ControlFlowHandlers"]


class ControlFlowHandlers:
    """Jumps and branches decided at trace time (a branch on a graph value breaks, unless
    it is a while loop's condition), loops unrolled or captured (``loops.py``), and the
    blocks the interpreter refuses (FH007) but for ``numpy.errstate`` (``errstate.py``)."""

    # ------------------------------------------------------------ jumps
    def k_jump(self, inst: Any) -> None:
        self.jump(inst)

    def k_branch(self, inst: Any) -> None:
        when = inst.condition
        if inst.keeps_operand:
            # the operand stays when the jump is taken (3.9-3.11's ``and``/``or``)
            if self.truth(self.stack[-1]) == (when == "true"):
                self.jump(inst)
            else:
                self.pop()
        elif when in ("none", "not none"):
            if self._is_none(self.pop()) == (when == "none"):
                self.jump(inst)
        else:
            self._pop_jump(inst, when == "true")

    def _pop_jump(self, inst: Any, when: bool) -> None:
        v = self.pop()
        try:
            taken = self.truth(v) == when
        except GraphBreak as e:
            if capture_while(self, inst, v, e):  # the condition of a while loop: captured whole
                return
            raise
        if taken:
            self.jump(inst)

    def jump_truth(self, v: V) -> V:
        """``bool(v)`` for the conditional jump that follows (TO_BOOL, COMPARE_OP's bool()):
        a graph value there may be a while loop's condition (``loops.capture_while``)."""
        try:
            return Const(self.truth(v))
        except GraphBreak as e:
            jump = self.insts[self.ip] if self.ip < len(self.insts) else None
            if jump is not None and _pops_and_branches(jump) and capture_while(self, jump, v, e):
                return NULL  # captured: the frame continues after the loop, past the jump
            raise

    def _is_none(self, v: V) -> bool:
        if isinstance(v, Const):
            return v.value is None
        return False

    # ------------------------------------------------------------ iteration
    def iterate(self, v: V) -> List[V]:
        """The values iterating ``v`` yields (trace-time known length)."""
        if isinstance(v, Tensor) and v.is_named_tuple:
            return list(self.tracer.items(v))
        if isinstance(v, (TupleV, ListV)):
            return list(v.items)
        if isinstance(v, DictV):
            return [Const(k) for k in v.items]
        if isinstance(v, IterV):
            self.check_mutable(v)
            return v.rest()
        if isinstance(v, Tensor):
            if not v.is_array or v.meta.ndim == 0:
                raise self.brk("FH009", f"iteration over a 0-d {v.describe()}")
            n = v.meta.shape[0]
            if not isinstance(n, int):
                raise self.brk("FH011", "iteration over an array with a symbolic first dimension")
            if n > config.max_unrolled_iterations:
                raise self.brk("FH010", f"iteration over {n} rows of an array")
            return [self.subscr(v, Const(i)) for i in range(n)]
        if isinstance(v, Const):
            value = v.value
            if isinstance(value, (range, tuple, str, bytes, list)):
                if len(value) > config.max_unrolled_iterations:
                    raise self.brk("FH010", f"iteration over {len(value)} items")
                return [self.tracer.wrap(x, None) for x in value]
        raise self.brk("FH008", f"iteration over {v.describe()}")

    def k_get_iter(self, inst: Any) -> None:
        v = self.pop()
        if isinstance(v, IterV):
            self.push(v)
        elif isinstance(v, ListV):
            self.push(IterV([], live=v))
        elif isinstance(v, SymRange):
            self.push(SymIter(v))  # captured as a loop node with graph bounds (loops.py)
        elif isinstance(v, Const) and type(v.value) is range:
            self.push(IterV([], range_=v.value))  # unrolled (FH010 past the limit) or captured as a loop
        else:
            self.push(IterV(self.iterate(v)))
        if BEHAVIOUR.iterators_take_two_slots:
            self.push(NULL)  # the index slot: the IterV keeps its own position

    def iterator(self) -> Any:
        """The iterator FOR_ITER advances (under its index slot where there is one)."""
        return self.stack[-2 if BEHAVIOUR.iterators_take_two_slots else -1]

    def k_for_iter(self, inst: Any) -> None:
        it = self.iterator()
        if not isinstance(it, IterV):
            raise self.brk("FH008", f"iteration over {it.describe()}")
        self.check_mutable(it)
        if isinstance(it, SymIter):
            capture_loop(self, inst, it)  # captured, or LoopAbort: the enclosing loop unrolls
        elif (
            config.capture_loops
            and it.live is None
            and id(inst) not in self.loop_failed
            and (id(inst) in self.loop_counts or exits_early(self, inst) or holds_loop(self, inst))
        ):
            capture_loop(self, inst, it)  # on success the iterator is exhausted: the loop exits below
        v = it.next()
        if v is None:
            if BEHAVIOUR.loops_end_with_end_for:
                self.push(NULL)  # END_FOR (and the POP_TOP after it) pop it with the iterator
            else:
                self.pop()
            self.jump(inst)
            return
        n = self.loop_counts.get(id(inst), 0) + 1
        self.loop_counts[id(inst)] = n
        if n > config.max_unrolled_iterations:
            raise self.brk("FH010", f"a loop ran more than {config.max_unrolled_iterations} iterations")
        self.push(v)

    def k_end_for(self, inst: Any) -> None:
        self.pop()
        if not BEHAVIOUR.end_for_followed_by_pop_top:
            self.pop()

    def k_pop_iter(self, inst: Any) -> None:
        self.pop()
        if BEHAVIOUR.iterators_take_two_slots:
            self.pop()

    # ------------------------------------------------------------ blocks and raising
    def k_setup_finally(self, inst: Any) -> None:
        raise self.brk("FH007", "code inside a try block")

    def k_async_with_enter(self, inst: Any) -> None:
        if inst.target is None:
            raise self.unhandled(inst)  # entering the context manager: never executed
        self.k_setup_finally(inst)  # 3.9/3.10's second half, which sets up the block

    def k_with_enter(self, inst: Any) -> None:
        cm = self.stack[-1]
        if not isinstance(cm, errstate.ErrstateV):
            raise self.brk("FH007", "code inside a try block")
        self.pop()
        block = errstate.enter(self, cm, inst)
        self.push(errstate.ErrstateExitV(block))
        self.push(Const(None))  # what numpy.errstate.__enter__ returns

    def k_load_special(self, inst: Any) -> None:
        # a with statement: ``__exit__`` is fetched first, then ``__enter__`` enters
        cm = self.stack[-1]
        if not isinstance(cm, errstate.ErrstateV):
            raise self.brk("FH007", "code inside a try block")
        self.pop()
        if inst.argval == "__exit__":
            self.push(errstate.ErrstateExitV(None, cm))
            self.push(NULL)
            return
        block = errstate.enter(self, cm, inst)
        for v in self.stack:
            if isinstance(v, errstate.ErrstateExitV) and v.cm is cm and v.block is None:
                v.block = block
        self.push(errstate.ErrstateEnterV())
        self.push(NULL)

    def k_pop_block(self, inst: Any) -> None:
        # 3.9/3.10: only an errstate block gets this far (every other SETUP_* breaks); its
        # __exit__ call right after closes it
        pass

    def k_raise(self, inst: Any) -> None:
        raise self.brk("FH009", "an explicit raise")

    k_reraise = k_load_assertion_error = k_raise


def _pops_and_branches(inst: Any) -> bool:
    """A conditional jump that pops its operand either way."""
    return inst.kind == Kind.BRANCH and not inst.keeps_operand
