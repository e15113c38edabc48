"""Resume functions: the frame's code entered at an instruction, with the live stack and
locals as arguments (``make_resume_code``), and the functions and calls that run them."""

from __future__ import annotations

import inspect
import itertools
import marshal
import sys
import types
from typing import Any, Dict, List, Optional, Sequence, Tuple

from ..bytecode import Codegen, Instruction, Positions, decode, prefix_length
from ..bytecode.behaviour import BEHAVIOUR
from ..bytecode.codegen import make, split_pair
from ..bytecode.kinds import Kind
from ..bytecode.opcodes import CELL_OPS, LOCAL_OPS
from ..bytecode.transform import code_options, rebuild
from ..translation.codemap import CodeIdentityMap

__all__ = [
    "RESUME_PREFIX",
    "is_resume_code",
    "frame_label",
    "closure_names",
    "make_resume_code",
    "resume_code_state",
    "load_resume_code",
]

RESUME_PREFIX = "__resume_at_"
_counter = itertools.count()

# code object of a resume function -> number of prologue instructions after the frame set-up
_RESUME_PROLOGUES: CodeIdentityMap[int] = CodeIdentityMap()
# code object of a resume function -> the line it resumes at (None: not known)
_RESUME_LINES: CodeIdentityMap[Optional[int]] = CodeIdentityMap()


def is_resume_code(code: types.CodeType) -> bool:
    return code in _RESUME_PROLOGUES


def resume_code_state(code: types.CodeType) -> Optional[Tuple[int, Optional[int]]]:
    """(prologue length, line resumed at) of a resume function's code; None for other code."""
    if code not in _RESUME_PROLOGUES:
        return None
    return _RESUME_PROLOGUES[code], _RESUME_LINES.get(code)


def load_resume_code(data: bytes, prologue: int, lineno: Optional[int]) -> types.CodeType:
    """A resume function's code that another process kept (the translation cache), known
    again as one: its own translation skips the prologue as it did there."""
    code = marshal.loads(data)
    if not isinstance(code, types.CodeType):
        raise TypeError(f"a kept resume function's code is a {type(code).__name__}")
    _RESUME_PROLOGUES[code] = prologue
    _RESUME_LINES[code] = lineno
    return code


def frame_label(code: types.CodeType) -> str:
    """How diagnostics name a translated frame: the function's qualified name (its name on
    3.9/3.10), and for a resume function the function it continues and where
    (``f (resume at line 12)``)."""
    name = getattr(code, "co_qualname", code.co_name)
    if code not in _RESUME_PROLOGUES:
        return name
    base = name.split("." + RESUME_PREFIX, 1)[0]
    line = _RESUME_LINES.get(code)
    return f"{base} (resume at line {line})" if line is not None else f"{base} (resume function)"


def _split_super(insts: List[Instruction]) -> List[Instruction]:
    """Two-local instructions (3.13+) as two plain ones (the locals are renumbered)."""
    out: List[Instruction] = []
    for inst in insts:
        pair = split_pair(inst)
        if pair is None:
            out.append(inst)
            continue
        first, second = pair
        second.exn_tab_entry = inst.exn_tab_entry
        # the first keeps the instruction's identity: jumps and handlers point at it
        inst.opcode, inst.opname, inst.arg, inst.argval = first.opcode, first.opname, None, first.argval
        inst.kind = first.kind
        out += [inst, second]
    return out


def closure_names(code: types.CodeType) -> List[str]:
    """The cells a resume function of ``code`` closes over, in its ``co_freevars`` order:
    the frame's cell variables, then its free variables."""
    return list(code.co_cellvars) + [n for n in code.co_freevars if n not in code.co_cellvars]


def make_resume_code(
    code: types.CodeType, target: int, stack: Sequence[Any], local_names: Sequence[str], lineno: Optional[int]
) -> Tuple[types.CodeType, List[str]]:
    """``code`` starting at instruction ``target`` with the stack described by ``stack``
    (True: a NULL, False: a value passed as an argument, a string: the method of that name
    of the object passed, ("method", name): the same through LOAD_METHOD) and ``local_names``
    as arguments.
    Returns the code and the names of its stack arguments."""
    insts = decode(code)
    goal = insts[target]
    for inst in insts:
        if inst.opcode in LOCAL_OPS or inst.opcode in CELL_OPS:
            inst.arg = None
    insts = _split_super(insts)
    shared = closure_names(code)
    if shared and BEHAVIOUR.cells_are_locals:
        # the frame's cells arrive in the closure: no MAKE_CELL, one COPY_FREE_VARS for them all
        keep = prefix_length(insts)
        head = [x for x in insts[:keep] if x.kind not in (Kind.MAKE_CELL, Kind.COPY_FREE_VARS)]
        head.insert(0, make(Kind.COPY_FREE_VARS, arg=len(shared)))
        insts[:keep] = head
    where = goal.positions
    stack_names: List[str] = []
    cg = Codegen(positions=where)
    for slot in stack:
        if slot is True:
            cg.push_null()
        else:
            name = f"___stack{len(stack_names)}"
            stack_names.append(name)
            cg.load_fast(name)
            if isinstance(slot, str):  # a bound method: its object is passed, the attribute loaded here
                cg.load_attr(slot)
            elif isinstance(slot, tuple):  # 3.9/3.10: NULL-or-self and the method, as LOAD_METHOD pushes them
                cg.load_method(slot[1])
    cg.jump(goal)
    prologue = cg.instructions
    keep = prefix_length(insts)
    insts[keep:keep] = prologue
    opts = code_options(code)
    args = stack_names + list(local_names)
    opts["co_varnames"] = args + [n for n in opts["co_varnames"] if n not in args and n not in shared]
    # the frame's cell variables become free variables of the resume function: both share
    # the cells with any closure made before the break
    opts["co_cellvars"] = []
    opts["co_freevars"] = list(shared)
    opts["co_argcount"] = len(args)
    opts["co_posonlyargcount"] = 0
    opts["co_kwonlyargcount"] = 0
    opts["co_flags"] &= ~(inspect.CO_VARARGS | inspect.CO_VARKEYWORDS)
    tag = f"{RESUME_PREFIX}{lineno if lineno is not None else 'x'}_{next(_counter)}"
    opts["co_name"] = code.co_name
    if BEHAVIOUR.code_has_qualname:
        opts["co_qualname"] = f"{code.co_qualname}.{tag}"
    new = rebuild(code, insts, opts)
    _RESUME_PROLOGUES[new] = len(prologue)
    _RESUME_LINES[new] = lineno
    return new, stack_names


def _return_call(fn: Any, names: Sequence[str], where: Positions, cells: Sequence[str] = ()) -> List[Instruction]:
    """``return fn(<each local of names>)``, at the user's position; with ``cells``,
    ``return fn((<each cell>,), <each local>)``."""
    cg = Codegen()

    def load_args() -> None:
        if cells:
            for name in cells:
                cg.load_closure(name)
            cg.build_tuple(len(cells))
        for name in names:
            cg.load_fast(name)

    cg.call_builtin(fn, load_args, nargs=len(names) + (1 if cells else 0))
    cg.return_value()
    for inst in cg.instructions:
        inst.positions = where
    return cg.instructions


def _resume_function(
    code: types.CodeType,
    target: int,
    names: Sequence[str],
    f_globals: Dict[str, Any],
    resume_cache: Dict[Any, Any],
    layout: Sequence[Any],
    lineno: Optional[int],
) -> types.FunctionType:
    """The resume function continuing ``code`` at instruction ``target`` (one per frame state)."""
    key = (target, tuple(layout), tuple(names))
    fn = resume_cache.get(key)
    if fn is None:
        rcode, _ = make_resume_code(code, target, list(layout), names, lineno)
        if rcode.co_freevars:
            fn = _WithCells(rcode, f_globals, code.co_name)
        else:
            fn = types.FunctionType(rcode, f_globals, code.co_name)
        resume_cache[key] = fn
    return fn


class _WithCells:
    """A resume function of a frame with cells: made at each call around the calling
    frame's cells (passed first), so it shares them with closures made before the break."""

    __slots__ = ("code", "f_globals", "name")

    def __init__(self, code: types.CodeType, f_globals: Dict[str, Any], name: str) -> None:
        self.code, self.f_globals, self.name = code, f_globals, name

    def __call__(self, cells: Tuple[Any, ...], *args: Any) -> Any:
        return types.FunctionType(self.code, self.f_globals, self.name, None, cells)(*args)


class _ResumeUnbound:
    """Calls the resume function after a statement that may leave some locals unbound: which
    ones are is only known at run time, read from the calling frame (one resume function per
    combination, made when first needed)."""

    def __init__(
        self,
        code: types.CodeType,
        target: int,
        lineno: Optional[int],
        sure: List[str],
        maybe: List[str],
        f_globals: Dict[str, Any],
        resume_cache: Dict[Any, Any],
    ) -> None:
        self.code, self.target, self.lineno, self.sure, self.maybe = code, target, lineno, sure, maybe
        self.f_globals, self.resume_cache = f_globals, resume_cache

    def __call__(self, *args: Any) -> Any:
        frame_locals = sys._getframe(1).f_locals
        present = [n for n in self.maybe if n in frame_locals]
        values = [frame_locals[n] for n in present]
        del frame_locals
        fn = _resume_function(
            self.code, self.target, self.sure + present, self.f_globals, self.resume_cache, (), self.lineno
        )
        return fn(*args, *values)  # with cells, args[0] is the cells' tuple
