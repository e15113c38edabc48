"""Where control goes from a jump, for loop capture: past no-ops and unconditional jumps,
the two sides of a conditional jump, and whether two places run copies of the same code
(3.12+ copy a loop's exit and condition). Read from instruction kinds and operands."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Dict, Iterable, List, Optional, Tuple

from ...bytecode.cfg import LOCAL_WRITES, local_names
from ...bytecode.kinds import Kind

if TYPE_CHECKING:  # pragma: no cover
    from ..roles import Frame


#: the kinds that return from the frame
RETURNS = frozenset({Kind.RETURN, Kind.RETURN_CONST})


def stored_names(frame: "Frame", indices: Iterable[int]) -> List[str]:
    """The local names the instructions at ``indices`` store, delete or clear, in order."""
    names: Dict[str, None] = {}
    for k in indices:
        inst = frame.insts[k]
        if inst.kind in LOCAL_WRITES:
            for name in local_names(inst):
                names[name] = None
    return list(names)


def _same_straight(x: Any, y: Any) -> bool:
    """Are ``x`` and ``y`` the same straight-line instruction: one concrete opcode (compiler
    copies of one piece of code match exactly, spelling included) with one argument?"""
    return x.opcode == y.opcode and x.target is None and y.target is None and x.argval == y.argval


def same_exit(frame: "Frame", a: int, b: int) -> bool:
    """Do the code at ``a`` and at ``b`` do the same (one place, or copies of straight-line
    code ending in a return)?"""
    for _ in range(32):
        a, b = settle(frame, a), settle(frame, b)
        if a == b:
            return True
        x, y = frame.insts[a], frame.insts[b]
        if not _same_straight(x, y):
            return False
        if x.kind in RETURNS:
            return True
        a, b = a + 1, b + 1
    return False


def jump_sense(inst: Any) -> Optional[bool]:
    """The truth value on which a jump that pops its operand and tests its truth jumps
    (None: another instruction, or a test against None)."""
    if inst.kind != Kind.BRANCH or inst.keeps_operand or inst.condition not in ("true", "false"):
        return None
    return inst.condition == "true"


def settle(frame: "Frame", k: int) -> int:
    """Where control really goes from ``k``: past no-ops and unconditional jumps."""
    for _ in range(8):  # a chain of jumps is short; a cycle of them is not followed for ever
        inst = frame.insts[k]
        if inst.kind == Kind.NOP:
            k += 1
        elif inst.kind == Kind.JUMP and inst.target is not None:
            k = frame.flow.index_of(inst.target)
        else:
            return k
    return k


def branch_sides(frame: "Frame", k: int) -> Optional[Tuple[Tuple[int, bool], Tuple[int, bool]]]:
    """((jump target, truth value going there), (next instruction, truth value going there))."""
    inst = frame.insts[k]
    sense = jump_sense(inst)
    if sense is None or inst.target is None:
        return None
    return (frame.flow.index_of(inst.target), sense), (k + 1, not sense)


def destinations(frame: "Frame", k: int) -> Optional[Dict[bool, int]]:
    sides = branch_sides(frame, k)
    return None if sides is None else {when: settle(frame, go) for go, when in sides}


def same_test(frame: "Frame", a: int, b: int) -> bool:
    """Do the code at ``a`` and at ``b`` compute the same test and go to the same places on it
    (3.12+ copy a loop's condition, ``and``/``or`` included, to the bottom of the loop)?"""
    for _ in range(32):
        a, b = settle(frame, a), settle(frame, b)
        if a == b:
            return True
        x, y = frame.insts[a], frame.insts[b]
        if jump_sense(x) is not None and jump_sense(y) is not None:
            return destinations(frame, a) == destinations(frame, b)
        if not _same_straight(x, y):
            return False
        a, b = a + 1, b + 1
    return False
