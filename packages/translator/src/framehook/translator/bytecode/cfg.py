"""The control-flow graph of a list of instructions.

``ControlFlow(insts)`` is built once per instruction list and answers every control-flow
question the translator asks: an instruction's index, jump target and handler, successors
and predecessors, basic blocks, reachability, loops, the stack depth before each
instruction, and which instructions run inside a try/with block. Only the index is made up
front; each other fact is computed when first asked for (instructions must not change
while the graph is in use).
"""

from __future__ import annotations

import functools
from typing import Dict, List, Optional, Sequence, Set, Tuple

from .behaviour import BEHAVIOUR
from .effects import net_effect
from .instructions import Instruction
from .opcodes import BRANCHES, TERMINAL, UNCONDITIONAL

__all__ = ["ControlFlow", "Block", "StackDepthError"]


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
    def loop_heads(self) -> List[Set[int]]:
        """For each instruction, the first instructions (targets of the jumps back) of the
        control-flow cycles -- loops -- it lies on. A backward jump alone does not make a
        loop: 3.12+ place exception handlers at the end, jumping back to the code after the
        ``try``, which no path leads from to the handler."""
        succ, pred = self.successors, self.predecessors
        heads: List[Set[int]] = [set() for _ in self.insts]
        for u, outs in enumerate(succ):
            for v in outs:
                if v <= u:  # every cycle takes at least one edge that does not go forward
                    for k in _walk(succ, v) & _walk(pred, u):
                        heads[k].add(v)
        return heads

    @functools.cached_property
    def in_cycle(self) -> List[bool]:
        """Which instructions lie on a loop (``loop_heads``)."""
        return [bool(h) for h in self.loop_heads]

    # ------------------------------------------------------------ stack depth
    @functools.cached_property
    def _depth_walk(self) -> Tuple[Dict[int, int], int]:
        insts, index, net = self.insts, self._index, net_effect
        if not insts:
            return {}, 0
        depth_at: Dict[int, int] = {}
        # a generator resumes with the sent value on the stack (3.10 GEN_START pops it)
        work = [(0, 1 if BEHAVIOUR.gen_start and insts[0].opname == "GEN_START" else 0)]
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
            setup = inst.opname.startswith("SETUP_")
            target = self.target(k)
            if setup:
                after = depth + 1
                work.append((target, depth + 1))
            elif inst.opname in ("POP_BLOCK", "POP_EXCEPT"):
                after = depth - 1
            for j in self.successors[k]:
                if not setup or j != target:
                    work.append((j, after))
        return [blocks.get(k, 0) > 0 for k in range(len(insts))]
