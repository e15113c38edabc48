"""Transform a code object: decode, let a function edit the instructions and the code's
fields, resolve names and constants, clean up, re-assemble, rebuild the code object."""

from __future__ import annotations

import dis
import opcode
import types
from typing import Any, Callable, Dict, List, Optional, Sequence

from .arguments import DECODER
from .behaviour import BEHAVIOUR
from .opcodes import CELL_OPS, JUMPS, LOCAL_OPS, PAIRED_LOCALS, has_arg
from .analysis import remove_dead_code, remove_pointless_jumps, stacksize
from .assemble import AssembleError, assemble
from .decode import decode, localsplus_names
from .instructions import Instruction

__all__ = [
    "code_options",
    "transform_code_object",
    "resolve_args",
    "relocate_locals",
    "rebuild",
    "Transform",
    "localsplus_names",
    "CODE_FIELDS",
]

Transform = Callable[[List[Instruction], Dict[str, Any]], Any]

CODE_FIELDS = [
    "co_argcount",
    "co_posonlyargcount",
    "co_kwonlyargcount",
    "co_nlocals",
    "co_stacksize",
    "co_flags",
    "co_consts",
    "co_names",
    "co_varnames",
    "co_freevars",
    "co_cellvars",
    "co_filename",
    "co_name",
    "co_firstlineno",
] + (["co_qualname"] if BEHAVIOUR.code_has_qualname else [])

_HASCONST = frozenset(opcode.hasconst)
_HASNAME = frozenset(opcode.hasname)


def code_options(code: types.CodeType) -> Dict[str, Any]:
    """The fields of ``code`` a transform may read and change (tuples become lists)."""
    opts = {name: getattr(code, name) for name in CODE_FIELDS}
    for name in ("co_consts", "co_names", "co_varnames", "co_freevars", "co_cellvars"):
        opts[name] = list(opts[name])
    return opts


def _cell_index(opts: Dict[str, Any], name: str, free: bool) -> int:
    """The slot of cell or free variable ``name``; ``free`` picks the free variable when
    the name is both."""
    names = localsplus_names(opts)
    if free and name in opts["co_freevars"]:
        return len(names) - len(opts["co_freevars"]) + opts["co_freevars"].index(name)
    return names.index(name)


def _const_index(consts: List[Any], value: Any) -> int:
    for i, c in enumerate(consts):
        # 1 == 1.0 == True: match type too; and identity for unhashable/odd values
        if c is value or (type(c) is type(value) and _safe_eq(c, value)):
            return i
    consts.append(value)
    return len(consts) - 1


def _safe_eq(a: Any, b: Any) -> bool:
    try:
        return bool(a == b) and repr(a) == repr(b)  # -0.0 vs 0.0, nan
    except Exception:
        return False


def _index_of(seq: List[str], name: str, add: bool = True) -> int:
    if name in seq:
        return seq.index(name)
    if not add:
        raise AssembleError(f"{name!r} is not a local of this code object")
    seq.append(name)
    return len(seq) - 1


_SUPER_LOCALS = frozenset(opcode.opmap[n] for n in PAIRED_LOCALS)


def _has_cells(opts: Dict[str, Any]) -> bool:
    return bool(opts["co_cellvars"] or opts["co_freevars"])


def relocate_locals(insts: List[Instruction], opts: Dict[str, Any]) -> List[Instruction]:
    """3.11+ code with cells or free variables: every local, cell and free variable access
    re-resolved by name. Their arguments index one array (locals, then cells, then free
    variables), so a local added to ``co_varnames`` moves every cell and free variable.
    A two-local instruction whose new indices no longer fit in 4 bits each is split."""
    if not BEHAVIOUR.cells_are_locals or not _has_cells(opts):
        return insts
    varnames = opts["co_varnames"]
    known = set(localsplus_names(opts))
    for inst in insts:
        if inst.opcode in LOCAL_OPS or inst.opcode in CELL_OPS:
            inst.arg = None
        if inst.opcode in LOCAL_OPS:
            # a new local goes into co_varnames before any index is taken
            for name in inst.argval if isinstance(inst.argval, tuple) else (inst.argval,):
                if name not in known:
                    varnames.append(name)
                    known.add(name)
    opts["co_nlocals"] = len(varnames)
    names = localsplus_names(opts)
    out: List[Instruction] = []
    for inst in insts:
        out.append(inst)
        if inst.opcode not in _SUPER_LOCALS:
            continue
        first, second = (names.index(n) for n in inst.argval)
        if first < 16 and second < 16:
            inst.arg = (first << 4) | second
            continue
        one, two = PAIRED_LOCALS[inst.opname]
        tail = Instruction(opcode.opmap[two], two, None, inst.argval[1], positions=inst.positions)
        tail.exn_tab_entry = inst.exn_tab_entry
        inst.opcode, inst.opname, inst.argval = opcode.opmap[one], one, inst.argval[0]
        out.append(tail)
    return out


def resolve_args(insts: Sequence[Instruction], opts: Dict[str, Any]) -> None:
    """Fill in ``arg`` from ``argval`` where it is missing (adding names and constants)."""
    for inst in insts:
        if inst.arg is not None or not has_arg(inst.opcode) or inst.opcode in JUMPS:
            continue
        op = inst.opcode
        name = inst.opname
        if op in _HASCONST:
            inst.arg = _const_index(opts["co_consts"], inst.argval)
        elif op in _HASNAME:
            idx = _index_of(opts["co_names"], inst.argval)
            inst.arg = DECODER.encode_index(name, idx, inst.flags)
        elif op in LOCAL_OPS:
            if (
                BEHAVIOUR.cells_are_locals
                and _has_cells(opts)
                and (inst.free_var or inst.argval not in opts["co_varnames"])
            ):
                inst.arg = _cell_index(opts, inst.argval, inst.free_var)  # a cell loaded for a closure (LOAD_FAST)
                continue
            inst.arg = _index_of(opts["co_varnames"], inst.argval)
            opts["co_nlocals"] = len(opts["co_varnames"])
        elif op in CELL_OPS:
            names = localsplus_names(opts)
            if inst.argval not in names:
                raise AssembleError(f"{name}: {inst.argval!r} is not a cell or free variable")
            inst.arg = _cell_index(opts, inst.argval, inst.free_var)
        elif name == "COMPARE_OP":
            idx = dis.cmp_op.index(inst.argval)
            inst.arg = DECODER.encode_index(name, idx, inst.flags)
        else:
            inst.arg = DECODER.encode_value(name, inst.argval)
            if inst.arg is None:
                raise AssembleError(f"cannot derive the argument of {name} from {inst.argval!r}; give arg=")


def rebuild(
    code: types.CodeType, insts: List[Instruction], opts: Dict[str, Any], *, clean: bool = False
) -> types.CodeType:
    """A new code object from ``insts`` and the (possibly edited) fields in ``opts``."""
    insts = relocate_locals(insts, opts)
    resolve_args(insts, opts)
    if clean:
        insts = remove_pointless_jumps(remove_dead_code(insts))
    out = assemble(insts, opts["co_firstlineno"])
    fields = dict(opts)
    for name in ("co_consts", "co_names", "co_varnames", "co_freevars", "co_cellvars"):
        fields[name] = tuple(fields[name])
    fields["co_nlocals"] = len(fields["co_varnames"])
    # never below the original: CPython 3.9 sizes the stack before folding constants
    fields["co_stacksize"] = max(stacksize(insts), code.co_stacksize)
    fields["co_code"] = out.code
    if BEHAVIOUR.line_table_is_lnotab:
        fields["co_lnotab"] = out.linetable
    else:
        fields["co_linetable"] = out.linetable
    if BEHAVIOUR.exception_table:
        fields["co_exceptiontable"] = out.exceptiontable
    return code.replace(**fields)


def transform_code_object(
    code: types.CodeType, transform: Optional[Transform] = None, *, clean: bool = False
) -> types.CodeType:
    """Decode ``code``, call ``transform(instructions, options)`` (it edits both in place),
    then rebuild. ``clean`` removes dead code and pointless jumps first."""
    insts = decode(code)
    opts = code_options(code)
    if transform is not None:
        transform(insts, opts)
    return rebuild(code, insts, opts, clean=clean)


# instructions a 3.11+ code object starts with, before any user code
_PREFIX = frozenset({"MAKE_CELL", "COPY_FREE_VARS", "RETURN_GENERATOR", "POP_TOP", "RESUME", "GEN_START"})


def prefix_length(insts: Sequence[Instruction]) -> int:
    """How many leading instructions are the interpreter's frame set-up (0 before 3.11)."""
    n = 0
    for inst in insts:
        if inst.opname not in _PREFIX:
            break
        n += 1
        if inst.opname in ("RESUME", "GEN_START"):
            break
    return n


def build_function(
    body: List[Instruction],
    argnames: Sequence[str] = (),
    *,
    freevars: Sequence[str] = (),
    closure_values: Sequence[Any] = (),
    globals_: Optional[Dict[str, Any]] = None,
    name: str = "___generated",
    filename: str = "<framehook generated>",
    firstlineno: int = 1,
) -> types.FunctionType:
    """A function whose code is ``body`` (after the frame set-up), taking ``argnames``
    positionally and closing over ``freevars`` (bound to ``closure_values``)."""
    for ident in (name, *argnames, *freevars):
        if not ident.isidentifier():
            raise ValueError(f"{ident!r} is not an identifier")
    if len(freevars) != len(closure_values):
        raise ValueError("build_function: one closure value per free variable")
    args = ", ".join(argnames)
    lines = ["def ___outer():"]
    lines += [f"    {v} = None" for v in freevars]
    lines.append(f"    def {name}({args}):")
    lines.append(f"        return ({', '.join(freevars)},)" if freevars else "        pass")
    lines.append(f"    return {name}")
    outer = compile("\n".join(lines), filename, "exec")
    template = next(c for c in outer.co_consts if isinstance(c, types.CodeType))
    template = next(c for c in template.co_consts if isinstance(c, types.CodeType))

    def replace_body(insts: List[Instruction], opts: Dict[str, Any]) -> None:
        keep = prefix_length(insts)
        insts[keep:] = body
        opts["co_firstlineno"] = firstlineno

    code = transform_code_object(template, replace_body)
    cells = tuple(types.CellType(v) for v in closure_values)
    return types.FunctionType(code, globals_ if globals_ is not None else {}, name, None, cells or None)
