"""Bytecode tooling for CPython 3.9-3.15: decode, transform, re-assemble.

insts = decode(code)                             # Instructions with targets and locations
new = transform_code_object(code, fn)            # fn(insts, options) edits in place
f = build_function(body, ["x"])                  # a function from instructions
"""

from .analysis import (
    in_cycle,
    loop_heads,
    moves_values_only,
    needs_cleaning,
    reachable,
    remove_dead_code,
    remove_pointless_jumps,
    stack_depths,
    stacksize,
)
from .cfg import Block, ControlFlow, StackDepthError
from .assemble import AssembleError, Assembled, assemble
from .codegen import Codegen
from .decode import BytecodeDecodeError, decode
from .exception_table import encode_exception_table, parse_exception_table
from .create import copy_instruction, create_instruction, create_jump
from .instructions import ExnTabEntry, Instruction, Positions
from .transform import build_function, code_options, prefix_length, rebuild, resolve_args, transform_code_object

__all__ = [
    "AssembleError",
    "Assembled",
    "Block",
    "BytecodeDecodeError",
    "Codegen",
    "ControlFlow",
    "ExnTabEntry",
    "Instruction",
    "Positions",
    "assemble",
    "build_function",
    "code_options",
    "copy_instruction",
    "create_instruction",
    "create_jump",
    "decode",
    "encode_exception_table",
    "in_cycle",
    "loop_heads",
    "moves_values_only",
    "needs_cleaning",
    "parse_exception_table",
    "prefix_length",
    "reachable",
    "rebuild",
    "remove_dead_code",
    "remove_pointless_jumps",
    "resolve_args",
    "StackDepthError",
    "stack_depths",
    "stacksize",
    "transform_code_object",
]
