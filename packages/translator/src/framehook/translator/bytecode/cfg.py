"""The control-flow graph of a list of instructions.

``ControlFlow(insts)`` is built once per instruction list and answers every control-flow
question the translator asks: an instruction's index, jump target and handler, successors
and predecessors, basic blocks, reachability, loops, the stack depth before each
instruction, which instructions run inside a try/with block, and which locals are live.
Only the index is made up front; each other fact is computed when first asked for and
kept on the graph (instructions must not change while the graph is in use).

Loops: a *back edge* is an edge ``u -> v`` that does not go forward (``v <= u``) and that
``v`` reaches back (``u`` is reachable from ``v``): ``v`` is a *loop head*, the one
definition of it. Two bodies hang off each back edge: the *cycles* through it (what ``v``
reaches that reaches ``u``: ``loop_heads``, which for an inner loop holds the rest of its
outer loop too) and the *natural loop* (what reaches ``u`` without passing ``v``:
``natural_loop_heads``, the body alone).
"""

from __future__ import annotations

import functools
from typing import Dict, FrozenSet, Iterable, List, Optional, Sequence, Set, Tuple

from .behaviour import BEHAVIOUR
from .effects import net_effect
from .instructions import Instruction
from .kinds import Kind
from .opcodes import BRANCHES, TERMINAL, UNCONDITIONAL

# before exception tables: the setups that push a block on the block stack
_PUSHES_BLOCK = frozenset({Kind.SETUP_FINALLY, Kind.WITH_ENTER, Kind.ASYNC_WITH_ENTER})

__all__ = ["ControlFlow", "Block", "StackDepthError", "LOCAL_READS", "LOCAL_WRITES", "local_names"]

#: kinds that read a local's value at the point they run (deleting one reads it: it raises
#: when the local is unset)
LOCAL_READS: FrozenSet[str] = frozenset(
    {Kind.LOAD_LOCAL, Kind.LOAD_LOCAL_AND_CLEAR, Kind.DELETE_LOCAL, Kind.LOAD_LOCAL_PAIR}
)
#: kinds that change which value a local holds (store, delete, clear)
LOCAL_WRITES: FrozenSet[str] = frozenset(
    {Kind.STORE_LOCAL, Kind.DELETE_LOCAL, Kind.STORE_LOCAL_PAIR, Kind.STORE_LOAD_LOCAL, Kind.LOAD_LOCAL_AND_CLEAR}
)


def local_names(inst: Instruction) -> Tuple[str, ...]:
    """The local names an instruction of ``LOCAL_READS``/``LOCAL_WRITES`` names (two for
    the pair kinds; stored then loaded for ``Kind.STORE_LOAD_LOCAL``)."""
    return inst.argval if isinstance(inst.argval, tuple) else (inst.argval,)


class StackDepthError(ValueError):
    """The stack depth is negative somewhere: the bytecode is inconsistent."""


class Block:
    """A basic block: instructions ``start`` to ``end - 1``, entered only at ``start`` and
    left only after its last instruction (or by an exception)."""

    __slots__ = ("start", "end", "successors", "predecessors")

    def __init__(self, start: int, end: int) -> None:
        self.start = start
        self.end = end
        self.successors: List[int] = []  # indices of blocks, in ``ControlFlow.blocks``
        self.predecessors: List[int] = []

    def __repr__(self) -> str:
        return f"Block({self.start}, {self.end})"


def _walk(edges: List[List[int]], start: int, stop: Optional[int] = None) -> Set[int]:
    """``start`` and every node a path along ``edges`` reaches from it without passing ``stop``."""
    seen = {start}
    work = [start]
    while work:
        for j in edges[work.pop()]:
            if j != stop and j not in seen:
                seen.add(j)
                work.append(j)
    return seen


class ControlFlow:
    """Control-flow facts of one instruction list (see the module's docstring)."""

    def __init__(self, insts: Sequence[Instruction]) -> None:
        # a list is shared, not copied: the graph describes it as it is
        self.insts: List[Instruction] = insts if isinstance(insts, list) else list(insts)
        self._index: Dict[int, int] = {id(inst): k for k, inst in enumerate(self.insts)}

    def __len__(self) -> int:
        return len(self.insts)

    # ------------------------------------------------------------ single instructions
    def index_of(self, inst: Instruction) -> int:
        """The position of ``inst`` in the list (KeyError when it is not in it)."""
        return self._index[id(inst)]

    def target(self, k: int) -> Optional[int]:
        """Where instruction ``k`` jumps to, or None (also for a jump control never takes)."""
        inst = self.insts[k]
        if inst.target is None or inst.opcode not in BRANCHES:
            return None
        return self._index[id(inst.target)]

    def handler(self, k: int) -> Optional[int]:
        """The exception handler instruction ``k`` goes to when it raises (3.11+), or None."""
        entry = self.insts[k].exn_tab_entry
        return None if entry is None else self._index[id(entry.target)]

    def falls_through(self, k: int) -> bool:
        op = self.insts[k].opcode
        return op not in UNCONDITIONAL and op not in TERMINAL and k + 1 < len(self.insts)

    # ------------------------------------------------------------ edges
    @functools.cached_property
    def successors(self) -> List[List[int]]:
        """For each instruction, where control can go after it: the next instruction, its
        jump target and, when it raises, its exception handler (in that order)."""
        index, last = self._index, len(self.insts) - 1
        out: List[List[int]] = []
        for k, inst in enumerate(self.insts):  # falls_through, target and handler, inlined
            op = inst.opcode
            succ = [k + 1] if op not in UNCONDITIONAL and op not in TERMINAL and k < last else []
            if inst.target is not None and op in BRANCHES:
                succ.append(index[id(inst.target)])
            entry = inst.exn_tab_entry
            if entry is not None:
                succ.append(index[id(entry.target)])
            out.append(succ)
        return out

    @functools.cached_property
    def predecessors(self) -> List[List[int]]:
        pred: List[List[int]] = [[] for _ in self.insts]
        for k, succ in enumerate(self.successors):
            for j in succ:
                pred[j].append(k)
        return pred

    @functools.cached_property
    def blocks(self) -> List[Block]:
        """Basic blocks in instruction order, with the edges between them (handlers included)."""
        n = len(self.insts)
        leaders = {0} if n else set()
        for k in range(n):
            leaders.update(j for j in (self.target(k), self.handler(k)) if j is not None)
            if k + 1 < n and (
                not self.falls_through(k) or self.target(k) is not None or self.handler(k) != self.handler(k + 1)
            ):
                leaders.add(k + 1)  # after a jump or an end; where the protecting handler changes
        starts = sorted(leaders)
        blocks = [Block(s, e) for s, e in zip(starts, starts[1:] + [n])]
        of = {b.start: i for i, b in enumerate(blocks)}
        for i, b in enumerate(blocks):
            for k in range(b.start, b.end):
                for j in self.successors[k]:
                    if j == k + 1 and k + 1 < b.end:
                        continue
                    t = of[j]
                    if t not in b.successors:
                        b.successors.append(t)
                        blocks[t].predecessors.append(i)
        return blocks

    def block_of(self, k: int) -> int:
        """The index of the basic block holding instruction ``k``."""
        return self._block_index[k]

    @functools.cached_property
    def _block_index(self) -> List[int]:
        out = [0] * len(self.insts)
        for i, b in enumerate(self.blocks):
            out[b.start : b.end] = [i] * (b.end - b.start)
        return out

    # ------------------------------------------------------------ reachability
    def reachable_from(self, start: int, stop: Optional[int] = None) -> Set[int]:
        """Instructions some path from ``start`` reaches without passing ``stop``
        (``start`` included; ``stop`` excluded unless it is ``start``)."""
        return _walk(self.successors, start, stop)

    @functools.cached_property
    def live(self) -> List[bool]:
        """Which instructions some path from the first one reaches (handlers included)."""
        seen = self.reachable_from(0) if self.insts else set()
        return [k in seen for k in range(len(self.insts))]

    # ------------------------------------------------------------ loops
    @functools.cached_property
    def back_edges(self) -> List[Tuple[int, int]]:
        """The edges ``(u, v)`` that close a loop: ``v <= u`` (every cycle takes at least
        one edge that does not go forward) and ``v`` reaches ``u``; ``v`` is the loop head.
        A backward jump alone does not make a loop: 3.12+ place exception handlers at the
        end, jumping back to the code after the ``try``, which no path leads from to the
        handler. In the order of ``successors`` (an edge listed twice is kept twice)."""
        out: List[Tuple[int, int]] = []
        for u, outs in enumerate(self.successors):
            for v in outs:
                if v <= u and u in self._reach(v):
                    out.append((u, v))
        return out

    def _reach(self, v: int) -> Set[int]:
        # what a loop head reaches, kept for the two bodies (callers must not change it)
        seen = self._reached.get(v)
        if seen is None:
            seen = self._reached[v] = _walk(self.successors, v)
        return seen

    @functools.cached_property
    def _reached(self) -> Dict[int, Set[int]]:
        return {}

    @functools.cached_property
    def heads(self) -> FrozenSet[int]:
        """The loop heads: the targets of the back edges."""
        return frozenset(v for _, v in self.back_edges)

    @functools.cached_property
    def loop_heads(self) -> List[Set[int]]:
        """For each instruction, the heads of the control-flow cycles it lies on: for each
        back edge ``u -> v``, what ``v`` reaches that reaches ``u`` (an inner loop's head
        is on every instruction of its outer loop too)."""
        pred = self.predecessors
        heads: List[Set[int]] = [set() for _ in self.insts]
        for u, v in self.back_edges:
            for k in self._reach(v) & _walk(pred, u):
                heads[k].add(v)
        return heads

    @functools.cached_property
    def natural_loop_heads(self) -> List[FrozenSet[int]]:
        """For each instruction, the heads of the natural loops holding it: for each back
        edge ``u -> v``, what ``v`` reaches that reaches ``u`` without passing ``v`` again
        (so an inner loop does not hold the rest of its outer loop, unlike ``loop_heads``)."""
        pred = self.predecessors
        heads: List[Set[int]] = [set() for _ in self.insts]
        for u, v in self.back_edges:
            # ``v`` ends the walk back from ``u`` (a self-loop: ``u`` is ``v``, the body alone)
            body = {v} if u == v else _walk(pred, u, v) | {v}
            for k in body & self._reach(v):
                heads[k].add(v)
        return [frozenset(h) for h in heads]

    @functools.cached_property
    def in_cycle(self) -> List[bool]:
        """Which instructions lie on a loop (``loop_heads``)."""
        return [bool(h) for h in self.loop_heads]

    # ------------------------------------------------------------ liveness
    @functools.cached_property
    def live_locals(self) -> List[FrozenSet[str]]:
        """For each instruction, the local names some path from it (it included) reads
        before storing them: those whose value before the instruction can still be read."""
        bit: Dict[str, int] = {}

        def mask(names: Iterable[str]) -> int:
            m = 0
            for name in names:
                m |= 1 << bit.setdefault(name, len(bit))
            return m

        uses: List[int] = []
        kills: List[int] = []
        for inst in self.insts:
            kind = inst.kind
            if kind in LOCAL_READS:  # a delete or a clear reads first
                uses.append(mask(local_names(inst)))
                kills.append(0)
            elif kind == Kind.STORE_LOAD_LOCAL:
                stored, loaded = inst.argval
                uses.append(0 if loaded == stored else mask((loaded,)))
                kills.append(mask((stored,)))
            elif kind in LOCAL_WRITES:
                uses.append(0)
                kills.append(mask(local_names(inst)))
            else:
                uses.append(0)
                kills.append(0)
        successors = self.successors
        # names as bits of an int; sweeps from the end until nothing changes (loops need a few)
        live = [0] * len(uses)
        changed = True
        while changed:
            changed = False
            for k in range(len(uses) - 1, -1, -1):
                out = 0
                for j in successors[k]:
                    out |= live[j]
                new = (out & ~kills[k]) | uses[k]
                if new != live[k]:
                    live[k] = new
                    changed = True
        names = sorted(bit, key=bit.__getitem__)
        sets: Dict[int, FrozenSet[str]] = {}
        result = []
        for m in live:
            fs = sets.get(m)
            if fs is None:
                fs = sets[m] = frozenset(name for i, name in enumerate(names) if m >> i & 1)
            result.append(fs)
        return result

    def live_at_block(self, i: int) -> FrozenSet[str]:
        """The locals live on entry to basic block ``i``."""
        return self.live_locals[self.blocks[i].start]

    # ------------------------------------------------------------ stack depth
    @functools.cached_property
    def _depth_walk(self) -> Tuple[Dict[int, int], int]:
        insts, index, net = self.insts, self._index, net_effect
        if not insts:
            return {}, 0
        depth_at: Dict[int, int] = {}
        # a generator resumes with the sent value on the stack (3.10 GEN_START pops it)
        work = [(0, 1 if BEHAVIOUR.gen_start and insts[0].kind == Kind.GEN_START else 0)]
        best = 0
        while work:
            i, depth = work.pop()
            while i < len(insts):
                inst = insts[i]
                seen = depth_at.get(i)
                if seen is not None and seen >= depth:
                    break
                depth_at[i] = depth
                entry = inst.exn_tab_entry
                if entry is not None:
                    handler_depth = entry.depth + 1 + int(entry.lasti)
                    best = max(best, handler_depth)
                    work.append((index[id(entry.target)], handler_depth))
                op = inst.opcode
                if op in BRANCHES:
                    if inst.target is not None:
                        jumped = depth + net(inst, jump=True)
                        best = max(best, jumped)
                        work.append((index[id(inst.target)], jumped))
                    if op in UNCONDITIONAL:
                        break
                    depth += net(inst, jump=False)
                else:
                    depth += net(inst)
                if depth < 0:
                    raise StackDepthError(f"stack depth {depth} after {inst.opname} (index {i})")
                best = max(best, depth)
                if op in TERMINAL:
                    break
                i += 1
        return depth_at, best

    @property
    def stack_depths(self) -> Dict[int, int]:
        """Stack depth before each reachable instruction, by index."""
        return self._depth_walk[0]

    @property
    def stacksize(self) -> int:
        """Largest stack depth any path reaches, jumps' transient depths included (what
        ``co_stacksize`` must be)."""
        return self._depth_walk[1]

    # ------------------------------------------------------------ exception regions
    @functools.cached_property
    def protected(self) -> List[bool]:
        """Which instructions run inside a try/with block: with an exception table, those
        with an entry; before it, those between a ``SETUP_*`` and its handler."""
        if BEHAVIOUR.exception_table:
            return [inst.exn_tab_entry is not None for inst in self.insts]
        return self._setup_blocks()

    def _setup_blocks(self) -> List[bool]:
        # the block stack's depth, followed along every path: SETUP_* pushes a block (its
        # handler runs under an except-handler block), POP_BLOCK and POP_EXCEPT pop one
        insts = self.insts
        blocks: Dict[int, int] = {}
        work = [(0, 0)] if insts else []
        while work:
            k, depth = work.pop()
            if blocks.get(k, -1) >= depth:
                continue
            blocks[k] = depth
            inst = insts[k]
            after = depth
            # a block is pushed by a setup that names its handler (not SETUP_ANNOTATIONS)
            setup = inst.kind in _PUSHES_BLOCK and inst.target is not None
            target = self.target(k)
            if setup:
                after = depth + 1
                work.append((target, depth + 1))
            elif inst.kind in (Kind.POP_BLOCK, Kind.POP_EXCEPT):
                after = depth - 1
            for j in self.successors[k]:
                if not setup or j != target:
                    work.append((j, after))
        return [blocks.get(k, 0) > 0 for k in range(len(insts))]
