"""What the running CPython's bytecode does, named by behaviour.

This module and the argument decoders (``arguments.py``) are the only places in the
translator that look at the interpreter's version: every other module asks for a
behaviour by name (as coverage.py's ``env.PYBEHAVIOR`` does). Supporting a new CPython
means updating the table below, adding its argument decoder, and handling the opcodes
that are genuinely new.
"""

from __future__ import annotations

import sys
from typing import Tuple

__all__ = ["VERSION", "Behaviour", "BEHAVIOUR", "behaviour_for"]

VERSION: Tuple[int, int] = sys.version_info[:2]


class Behaviour:
    """The bytecode facts of one CPython version (attributes are plain booleans or ints)."""

    def __init__(self, version: Tuple[int, int]) -> None:
        v = tuple(version)
        self.version = v
        # -- encoding
        #: jump arguments count code units, not bytes
        self.jumps_count_units = v >= (3, 10)
        #: the line table is co_lnotab (byte offsets and line deltas)
        self.line_table_is_lnotab = v < (3, 10)
        #: the line table is co_linetable's 3.10 form (ranges of bytes)
        self.line_table_is_ranges = (3, 10) <= v < (3, 11)
        #: the line table is the location table (lines and columns)
        self.line_table_has_columns = v >= (3, 11)
        #: instructions are followed by inline cache entries
        self.inline_caches = v >= (3, 11)
        #: exceptions are handled through co_exceptiontable, not SETUP_* blocks
        self.exception_table = v >= (3, 11)
        #: code objects carry co_qualname
        self.code_has_qualname = v >= (3, 11)
        #: cell and free variables share the locals' index space ("localsplus")
        self.cells_are_locals = v >= (3, 11)
        #: LOAD_CLOSURE is a pseudo-instruction; the compiler writes LOAD_FAST on the cell
        self.closure_loads_are_fast_loads = v >= (3, 13)
        # -- calls
        #: a call's callable comes with a NULL-or-self slot (3.11+)
        self.calls_push_null = v >= (3, 11)
        #: that slot comes after the callable rather than before it
        self.null_after_callable = v >= (3, 13)
        #: PRECALL comes before CALL
        self.precall_before_call = (3, 11) <= v < (3, 12)
        #: keyword names of a call come from a KW_NAMES instruction before it
        self.kw_names_instruction = (3, 11) <= v < (3, 13)
        #: CALL_FUNCTION_EX also pops the NULL-or-self slot under the callable
        self.call_ex_pops_null_slot = v >= (3, 11)
        #: CALL_FUNCTION_EX always has a kwargs slot (a NULL when there are none; no argument)
        self.call_ex_always_has_kwargs_slot = v >= (3, 14)
        #: LOAD_GLOBAL's lowest argument bit pushes a NULL with the global
        self.global_loads_push_null = v >= (3, 11)
        #: LOAD_ATTR's lowest argument bit loads a method (LOAD_METHOD is gone)
        self.attr_loads_methods = v >= (3, 12)
        #: MAKE_FUNCTION pops the qualified name
        self.make_function_pops_qualname = v < (3, 11)
        #: MAKE_FUNCTION makes a bare function; SET_FUNCTION_ATTRIBUTE adds each part
        self.function_attributes_set_separately = v >= (3, 13)
        # -- loads and operators
        #: loads may borrow (LOAD_FAST_BORROW and its paired form are LOAD_FAST's twins)
        self.loads_may_borrow = v >= (3, 14)
        #: small ints load with LOAD_SMALL_INT (the argument is the value)
        self.small_ints_load_with_load_small_int = v >= (3, 14)
        #: RETURN_CONST returns a constant (elsewhere LOAD_CONST + RETURN_VALUE do)
        self.return_const_instruction = (3, 12) <= v < (3, 14)
        #: BINARY_SUBSCR is BINARY_OP [] (NB_SUBSCR)
        self.subscripts_are_binary_ops = v >= (3, 14)
        #: GET_ITER pushes the iterator and an index-or-NULL slot; POP_ITER pops both
        self.iterators_take_two_slots = v >= (3, 15)
        # -- comparisons, formatting, loops
        #: COMPARE_OP's argument bit 16 converts the result to bool
        self.comparisons_may_convert_to_bool = v >= (3, 13)
        #: how far the comparison index is shifted left in COMPARE_OP's argument
        self.compare_op_shift = 5 if v >= (3, 13) else 4 if v >= (3, 12) else 0
        #: formatting is FORMAT_SIMPLE/FORMAT_WITH_SPEC/CONVERT_VALUE, not FORMAT_VALUE
        self.format_split = v >= (3, 13)
        #: every for loop ends with END_FOR, which FOR_ITER's exit jumps to (and skips)
        self.loops_end_with_end_for = v >= (3, 12)
        #: END_FOR pops only the iterator's last value; a POP_TOP after it pops the iterator
        self.end_for_followed_by_pop_top = v >= (3, 13)
        #: what pops the iterator after END_FOR: POP_TOP, or POP_ITER where that exists
        self.loop_exit_pop = "POP_ITER" if v >= (3, 14) else "POP_TOP"
        #: GEN_START begins generator code
        self.gen_start = (3, 10) <= v < (3, 11)
        #: RETURN_GENERATOR's reported stack effect omits the value the frame resumes with
        self.return_generator_effect_omits_sent = (3, 11) <= v < (3, 13)
        #: comprehensions are inlined into the enclosing code (PEP 709)
        self.comprehensions_inlined = v >= (3, 12)

    def __repr__(self) -> str:
        return "Behaviour(%d.%d)" % self.version


def behaviour_for(version: Tuple[int, int]) -> Behaviour:
    return Behaviour(version)


#: the running interpreter's behaviour
BEHAVIOUR = Behaviour(VERSION)
