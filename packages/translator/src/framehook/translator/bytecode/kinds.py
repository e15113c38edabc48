"""The version-independent instruction set: what each concrete opcode does, as a kind.

Every decoded ``Instruction`` carries a ``kind`` (a ``Kind`` constant) and typed operands
in its fields (``condition``, ``depth``, ``unary``, ``call_slot``, ...). Consumers
outside ``bytecode/`` read kinds and operands, never concrete opcode names, so that the
bytecode of a new CPython is one more row in the tables below (its renamed or split
opcodes) and one more argument decoder (``arguments.py``), not an edit in every pass.

``DECODE`` maps every concrete spelling of every supported CPython to its kind;
``encode`` gives the running CPython's spelling of a kind back (code generation). A
concrete name that the running CPython lacks is simply absent from the tables.
"""

from __future__ import annotations

import opcode
from typing import Dict, FrozenSet, Optional, Tuple

__all__ = [
    "Kind",
    "EVERY_VERSION",
    "VERSION_ONLY",
    "DECODE",
    "BRANCH_CONDITIONS",
    "COPY_DEPTHS",
    "UNARY_OPERATORS",
    "kind_of",
    "OLD_BINARY_OPS",
    "encode",
    "encodings",
    "spelled",
]


class Kind:
    """The kinds (plain strings: cheap to compare and to use as dispatch keys)."""

    # -- no computation
    NOP = "nop"  # NOP, CACHE, EXTENDED_ARG, NOT_TAKEN, PRECALL
    RESUME = "resume"
    GEN_START = "gen_start"
    INTERNAL = "internal"  # the interpreter's own (executors, instrumentation): never in a code object
    # -- the stack
    POP_TOP = "pop_top"
    COPY = "copy"  # ``depth``: the value ``depth`` from the top (1: the top) pushed again
    COPY_TWO = "copy_two"  # the top two, pushed again in order
    SWAP = "swap"  # ``depth``: the top and the value ``depth`` from the top exchanged
    ROTATE = "rotate"  # ``depth``: the top moved under the ``depth - 1`` values below it
    PUSH_NULL = "push_null"
    # -- constants, locals, cells, globals, names
    LOAD_CONST = "load_const"  # ``argval`` is the value (a constant, a small int, a common constant)
    LOAD_ASSERTION_ERROR = "load_assertion_error"
    LOAD_LOCAL = "load_local"
    LOAD_LOCAL_AND_CLEAR = "load_local_and_clear"
    LOAD_LOCAL_PAIR = "load_local_pair"  # ``argval``: the two names, loaded in order
    STORE_LOCAL = "store_local"
    STORE_LOCAL_PAIR = "store_local_pair"  # ``argval``: the two names, stored in order
    STORE_LOAD_LOCAL = "store_load_local"  # ``argval``: (stored, loaded)
    DELETE_LOCAL = "delete_local"
    LOAD_CLOSURE = "load_closure"
    LOAD_DEREF = "load_deref"
    STORE_DEREF = "store_deref"
    DELETE_DEREF = "delete_deref"
    LOAD_CLASS_DEREF = "load_class_deref"  # a free variable of a class body
    MAKE_CELL = "make_cell"
    COPY_FREE_VARS = "copy_free_vars"
    LOAD_GLOBAL = "load_global"  # ``push_null``
    STORE_GLOBAL = "store_global"
    DELETE_GLOBAL = "delete_global"
    LOAD_NAME = "load_name"
    STORE_NAME = "store_name"
    DELETE_NAME = "delete_name"
    LOAD_FROM_DICT_OR_GLOBALS = "load_from_dict_or_globals"
    LOAD_LOCALS = "load_locals"
    LOAD_BUILD_CLASS = "load_build_class"
    SETUP_ANNOTATIONS = "setup_annotations"
    # -- attributes and items
    LOAD_ATTR = "load_attr"  # ``is_method`` / ``push_null``: a method load with its self slot
    LOAD_SUPER_ATTR = "load_super_attr"
    LOAD_SPECIAL = "load_special"  # ``argval``: the special method's name
    STORE_ATTR = "store_attr"
    DELETE_ATTR = "delete_attr"
    SUBSCR = "subscr"  # container[key]
    SUBSCR_SLICE = "subscr_slice"  # container[start:stop]
    STORE_SUBSCR = "store_subscr"
    STORE_SLICE = "store_slice"
    DELETE_SUBSCR = "delete_subscr"
    # -- operators
    BINARY_OP = "binary_op"  # ``binary_op``: "+", "+=", ...
    UNARY = "unary"  # ``unary``: "-", "+", "~" or "not"
    TO_BOOL = "to_bool"
    COMPARE = "compare"  # ``argval``: "<", "==", ...; ``to_bool``
    IS = "is"  # ``invert``
    CONTAINS = "contains"  # ``invert``
    CALL_INTRINSIC = "call_intrinsic"  # ``intrinsic``: its name (one argument)
    CALL_INTRINSIC_2 = "call_intrinsic_2"  # ``intrinsic``: its name (two arguments)
    # -- building values
    BUILD_TUPLE = "build_tuple"
    BUILD_LIST = "build_list"
    BUILD_SET = "build_set"
    BUILD_MAP = "build_map"
    BUILD_CONST_KEY_MAP = "build_const_key_map"
    BUILD_SLICE = "build_slice"
    BUILD_STRING = "build_string"
    BUILD_INTERPOLATION = "build_interpolation"  # ``conversion`` / ``format_spec``
    BUILD_TEMPLATE = "build_template"
    LIST_APPEND = "list_append"
    LIST_EXTEND = "list_extend"
    LIST_TO_TUPLE = "list_to_tuple"
    SET_ADD = "set_add"
    SET_UPDATE = "set_update"
    MAP_ADD = "map_add"
    DICT_UPDATE = "dict_update"
    DICT_MERGE = "dict_merge"
    UNPACK_SEQUENCE = "unpack_sequence"
    UNPACK_EX = "unpack_ex"  # ``unpack``
    FORMAT = "format"  # ``conversion`` (before formatting) / ``format_spec``
    CONVERT = "convert"  # ``conversion`` alone
    # -- calls and functions
    CALL = "call"  # ``arg`` values; ``call_slot``: under a NULL-or-self slot; ``call_names``: names tuple on top
    CALL_EX = "call_ex"  # ``call_kwargs``
    KW_NAMES = "kw_names"  # ``kw_names``: the next call's keyword names
    MAKE_FUNCTION = "make_function"  # ``function_parts``
    SET_FUNCTION_ATTRIBUTE = "set_function_attribute"  # ``function_parts``
    RETURN = "return"
    RETURN_CONST = "return_const"  # ``argval``
    RETURN_GENERATOR = "return_generator"
    # -- control flow
    JUMP = "jump"  # ``target``
    BRANCH = "branch"  # ``target``; ``condition``; ``keeps_operand`` when it jumps
    GET_ITER = "get_iter"
    FOR_ITER = "for_iter"  # ``target``: the loop's exit
    END_FOR = "end_for"
    POP_ITER = "pop_iter"
    GET_LEN = "get_len"
    # -- exceptions and with blocks
    SETUP_FINALLY = "setup_finally"
    SETUP_CLEANUP = "setup_cleanup"
    POP_BLOCK = "pop_block"
    WITH_ENTER = "with_enter"  # ``__enter__`` called, ``__exit__`` kept (one instruction)
    ASYNC_WITH_ENTER = "async_with_enter"
    WITH_EXCEPT_START = "with_except_start"
    RAISE = "raise"
    RERAISE = "reraise"
    PUSH_EXC_INFO = "push_exc_info"
    POP_EXCEPT = "pop_except"
    CHECK_EXC_MATCH = "check_exc_match"
    CHECK_EG_MATCH = "check_eg_match"
    EXC_MATCH_BRANCH = "exc_match_branch"  # the exception test and the jump in one (``target``)
    PREP_RERAISE_STAR = "prep_reraise_star"
    # -- generators and coroutines
    YIELD_VALUE = "yield_value"
    YIELD_FROM = "yield_from"
    SEND = "send"
    END_SEND = "end_send"
    CLEANUP_THROW = "cleanup_throw"
    GET_YIELD_FROM_ITER = "get_yield_from_iter"
    GET_AWAITABLE = "get_awaitable"
    GET_AITER = "get_aiter"
    GET_ANEXT = "get_anext"
    END_ASYNC_FOR = "end_async_for"
    ASYNC_GEN_WRAP = "async_gen_wrap"
    # -- imports, printing, pattern matching
    IMPORT_NAME = "import_name"
    IMPORT_FROM = "import_from"
    IMPORT_STAR = "import_star"
    PRINT_EXPR = "print_expr"
    MATCH_CLASS = "match_class"
    MATCH_KEYS = "match_keys"
    MATCH_MAPPING = "match_mapping"
    MATCH_SEQUENCE = "match_sequence"
    COPY_DICT_WITHOUT_KEYS = "copy_dict_without_keys"


#: every concrete spelling, of every CPython 3.9-3.15, and its kind. A new CPython that
#: renames or splits an opcode adds its spelling here.
_ROWS: Tuple[Tuple[str, str], ...] = (
    ("NOP", Kind.NOP),
    ("CACHE", Kind.NOP),
    ("EXTENDED_ARG", Kind.NOP),
    ("NOT_TAKEN", Kind.NOP),
    ("PRECALL", Kind.NOP),  # 3.11: a call's first half; CALL does the work
    ("RESUME", Kind.RESUME),
    ("GEN_START", Kind.GEN_START),
    ("POP_TOP", Kind.POP_TOP),
    ("COPY", Kind.COPY),
    ("DUP_TOP", Kind.COPY),
    ("DUP_TOP_TWO", Kind.COPY_TWO),
    ("SWAP", Kind.SWAP),
    ("ROT_TWO", Kind.SWAP),
    ("ROT_THREE", Kind.ROTATE),
    ("ROT_FOUR", Kind.ROTATE),
    ("ROT_N", Kind.ROTATE),
    ("PUSH_NULL", Kind.PUSH_NULL),
    ("LOAD_CONST", Kind.LOAD_CONST),
    ("LOAD_SMALL_INT", Kind.LOAD_CONST),
    ("LOAD_COMMON_CONSTANT", Kind.LOAD_CONST),
    ("LOAD_ASSERTION_ERROR", Kind.LOAD_ASSERTION_ERROR),
    ("LOAD_FAST", Kind.LOAD_LOCAL),
    ("LOAD_FAST_CHECK", Kind.LOAD_LOCAL),
    ("LOAD_FAST_BORROW", Kind.LOAD_LOCAL),
    ("LOAD_FAST_AND_CLEAR", Kind.LOAD_LOCAL_AND_CLEAR),
    ("LOAD_FAST_LOAD_FAST", Kind.LOAD_LOCAL_PAIR),
    ("LOAD_FAST_BORROW_LOAD_FAST_BORROW", Kind.LOAD_LOCAL_PAIR),
    ("STORE_FAST", Kind.STORE_LOCAL),
    ("STORE_FAST_MAYBE_NULL", Kind.STORE_LOCAL),
    ("STORE_FAST_STORE_FAST", Kind.STORE_LOCAL_PAIR),
    ("STORE_FAST_LOAD_FAST", Kind.STORE_LOAD_LOCAL),
    ("DELETE_FAST", Kind.DELETE_LOCAL),
    ("LOAD_CLOSURE", Kind.LOAD_CLOSURE),
    ("LOAD_DEREF", Kind.LOAD_DEREF),
    ("STORE_DEREF", Kind.STORE_DEREF),
    ("DELETE_DEREF", Kind.DELETE_DEREF),
    ("LOAD_CLASSDEREF", Kind.LOAD_CLASS_DEREF),
    ("LOAD_FROM_DICT_OR_DEREF", Kind.LOAD_CLASS_DEREF),
    ("MAKE_CELL", Kind.MAKE_CELL),
    ("COPY_FREE_VARS", Kind.COPY_FREE_VARS),
    ("LOAD_GLOBAL", Kind.LOAD_GLOBAL),
    ("STORE_GLOBAL", Kind.STORE_GLOBAL),
    ("DELETE_GLOBAL", Kind.DELETE_GLOBAL),
    ("LOAD_NAME", Kind.LOAD_NAME),
    ("STORE_NAME", Kind.STORE_NAME),
    ("DELETE_NAME", Kind.DELETE_NAME),
    ("LOAD_FROM_DICT_OR_GLOBALS", Kind.LOAD_FROM_DICT_OR_GLOBALS),
    ("LOAD_LOCALS", Kind.LOAD_LOCALS),
    ("LOAD_BUILD_CLASS", Kind.LOAD_BUILD_CLASS),
    ("SETUP_ANNOTATIONS", Kind.SETUP_ANNOTATIONS),
    ("LOAD_ATTR", Kind.LOAD_ATTR),
    ("LOAD_METHOD", Kind.LOAD_ATTR),
    ("LOAD_SUPER_ATTR", Kind.LOAD_SUPER_ATTR),
    ("LOAD_SUPER_METHOD", Kind.LOAD_SUPER_ATTR),
    ("LOAD_ZERO_SUPER_ATTR", Kind.LOAD_SUPER_ATTR),
    ("LOAD_ZERO_SUPER_METHOD", Kind.LOAD_SUPER_ATTR),
    ("LOAD_SPECIAL", Kind.LOAD_SPECIAL),
    ("STORE_ATTR", Kind.STORE_ATTR),
    ("DELETE_ATTR", Kind.DELETE_ATTR),
    ("BINARY_SUBSCR", Kind.SUBSCR),
    ("BINARY_SLICE", Kind.SUBSCR_SLICE),
    ("STORE_SUBSCR", Kind.STORE_SUBSCR),
    ("STORE_SLICE", Kind.STORE_SLICE),
    ("DELETE_SUBSCR", Kind.DELETE_SUBSCR),
    ("BINARY_OP", Kind.BINARY_OP),  # BINARY_OP [] is SUBSCR (the decoder says so)
    ("UNARY_NEGATIVE", Kind.UNARY),
    ("UNARY_POSITIVE", Kind.UNARY),
    ("UNARY_INVERT", Kind.UNARY),
    ("UNARY_NOT", Kind.UNARY),
    ("TO_BOOL", Kind.TO_BOOL),
    ("COMPARE_OP", Kind.COMPARE),
    ("IS_OP", Kind.IS),
    ("CONTAINS_OP", Kind.CONTAINS),
    ("CALL_INTRINSIC_1", Kind.CALL_INTRINSIC),  # some intrinsics are kinds of their own
    ("CALL_INTRINSIC_2", Kind.CALL_INTRINSIC_2),
    ("BUILD_TUPLE", Kind.BUILD_TUPLE),
    ("BUILD_LIST", Kind.BUILD_LIST),
    ("BUILD_SET", Kind.BUILD_SET),
    ("BUILD_MAP", Kind.BUILD_MAP),
    ("BUILD_CONST_KEY_MAP", Kind.BUILD_CONST_KEY_MAP),
    ("BUILD_SLICE", Kind.BUILD_SLICE),
    ("BUILD_STRING", Kind.BUILD_STRING),
    ("BUILD_INTERPOLATION", Kind.BUILD_INTERPOLATION),
    ("BUILD_TEMPLATE", Kind.BUILD_TEMPLATE),
    ("LIST_APPEND", Kind.LIST_APPEND),
    ("LIST_EXTEND", Kind.LIST_EXTEND),
    ("LIST_TO_TUPLE", Kind.LIST_TO_TUPLE),
    ("SET_ADD", Kind.SET_ADD),
    ("SET_UPDATE", Kind.SET_UPDATE),
    ("MAP_ADD", Kind.MAP_ADD),
    ("DICT_UPDATE", Kind.DICT_UPDATE),
    ("DICT_MERGE", Kind.DICT_MERGE),
    ("UNPACK_SEQUENCE", Kind.UNPACK_SEQUENCE),
    ("UNPACK_EX", Kind.UNPACK_EX),
    ("FORMAT_VALUE", Kind.FORMAT),
    ("FORMAT_SIMPLE", Kind.FORMAT),
    ("FORMAT_WITH_SPEC", Kind.FORMAT),
    ("CONVERT_VALUE", Kind.CONVERT),
    ("CALL", Kind.CALL),
    ("CALL_KW", Kind.CALL),
    ("CALL_FUNCTION", Kind.CALL),
    ("CALL_FUNCTION_KW", Kind.CALL),
    ("CALL_METHOD", Kind.CALL),
    ("CALL_FUNCTION_EX", Kind.CALL_EX),
    ("KW_NAMES", Kind.KW_NAMES),
    ("MAKE_FUNCTION", Kind.MAKE_FUNCTION),
    ("SET_FUNCTION_ATTRIBUTE", Kind.SET_FUNCTION_ATTRIBUTE),
    ("RETURN_VALUE", Kind.RETURN),
    ("RETURN_CONST", Kind.RETURN_CONST),
    ("RETURN_GENERATOR", Kind.RETURN_GENERATOR),
    ("JUMP_FORWARD", Kind.JUMP),
    ("JUMP_ABSOLUTE", Kind.JUMP),
    ("JUMP_BACKWARD", Kind.JUMP),
    ("JUMP_BACKWARD_NO_INTERRUPT", Kind.JUMP),
    ("JUMP", Kind.JUMP),
    ("JUMP_NO_INTERRUPT", Kind.JUMP),
    ("POP_JUMP_IF_FALSE", Kind.BRANCH),
    ("POP_JUMP_IF_TRUE", Kind.BRANCH),
    ("POP_JUMP_IF_NONE", Kind.BRANCH),
    ("POP_JUMP_IF_NOT_NONE", Kind.BRANCH),
    ("POP_JUMP_FORWARD_IF_FALSE", Kind.BRANCH),
    ("POP_JUMP_FORWARD_IF_TRUE", Kind.BRANCH),
    ("POP_JUMP_FORWARD_IF_NONE", Kind.BRANCH),
    ("POP_JUMP_FORWARD_IF_NOT_NONE", Kind.BRANCH),
    ("POP_JUMP_BACKWARD_IF_FALSE", Kind.BRANCH),
    ("POP_JUMP_BACKWARD_IF_TRUE", Kind.BRANCH),
    ("POP_JUMP_BACKWARD_IF_NONE", Kind.BRANCH),
    ("POP_JUMP_BACKWARD_IF_NOT_NONE", Kind.BRANCH),
    ("JUMP_IF_FALSE_OR_POP", Kind.BRANCH),
    ("JUMP_IF_TRUE_OR_POP", Kind.BRANCH),
    ("JUMP_IF_FALSE", Kind.BRANCH),
    ("JUMP_IF_TRUE", Kind.BRANCH),
    ("GET_ITER", Kind.GET_ITER),
    ("FOR_ITER", Kind.FOR_ITER),
    ("END_FOR", Kind.END_FOR),
    ("POP_ITER", Kind.POP_ITER),
    ("GET_LEN", Kind.GET_LEN),
    ("SETUP_FINALLY", Kind.SETUP_FINALLY),
    ("SETUP_CLEANUP", Kind.SETUP_CLEANUP),
    ("POP_BLOCK", Kind.POP_BLOCK),
    ("SETUP_WITH", Kind.WITH_ENTER),
    ("BEFORE_WITH", Kind.WITH_ENTER),
    ("SETUP_ASYNC_WITH", Kind.ASYNC_WITH_ENTER),
    ("BEFORE_ASYNC_WITH", Kind.ASYNC_WITH_ENTER),
    ("WITH_EXCEPT_START", Kind.WITH_EXCEPT_START),
    ("RAISE_VARARGS", Kind.RAISE),
    ("RERAISE", Kind.RERAISE),
    ("PUSH_EXC_INFO", Kind.PUSH_EXC_INFO),
    ("POP_EXCEPT", Kind.POP_EXCEPT),
    ("CHECK_EXC_MATCH", Kind.CHECK_EXC_MATCH),
    ("CHECK_EG_MATCH", Kind.CHECK_EG_MATCH),
    ("JUMP_IF_NOT_EXC_MATCH", Kind.EXC_MATCH_BRANCH),
    ("PREP_RERAISE_STAR", Kind.PREP_RERAISE_STAR),
    ("YIELD_VALUE", Kind.YIELD_VALUE),
    ("YIELD_FROM", Kind.YIELD_FROM),
    ("SEND", Kind.SEND),
    ("END_SEND", Kind.END_SEND),
    ("CLEANUP_THROW", Kind.CLEANUP_THROW),
    ("GET_YIELD_FROM_ITER", Kind.GET_YIELD_FROM_ITER),
    ("GET_AWAITABLE", Kind.GET_AWAITABLE),
    ("GET_AITER", Kind.GET_AITER),
    ("GET_ANEXT", Kind.GET_ANEXT),
    ("END_ASYNC_FOR", Kind.END_ASYNC_FOR),
    ("ASYNC_GEN_WRAP", Kind.ASYNC_GEN_WRAP),
    ("IMPORT_NAME", Kind.IMPORT_NAME),
    ("IMPORT_FROM", Kind.IMPORT_FROM),
    ("IMPORT_STAR", Kind.IMPORT_STAR),
    ("PRINT_EXPR", Kind.PRINT_EXPR),
    ("MATCH_CLASS", Kind.MATCH_CLASS),
    ("MATCH_KEYS", Kind.MATCH_KEYS),
    ("MATCH_MAPPING", Kind.MATCH_MAPPING),
    ("MATCH_SEQUENCE", Kind.MATCH_SEQUENCE),
    ("COPY_DICT_WITHOUT_KEYS", Kind.COPY_DICT_WITHOUT_KEYS),
    ("ANNOTATIONS_PLACEHOLDER", Kind.INTERNAL),
    ("ENTER_EXECUTOR", Kind.INTERNAL),
    ("EXIT_INIT_CHECK", Kind.INTERNAL),
    ("INTERPRETER_EXIT", Kind.INTERNAL),
    ("RESERVED", Kind.INTERNAL),
    ("TRACE_RECORD", Kind.INTERNAL),
)

#: the operator of each binary opcode that BINARY_OP replaced (3.9/3.10): each is a
#: BINARY_OP kind
OLD_BINARY_OPS: Dict[str, str] = {}
for _suffix, _symbol in (
    ("ADD", "+"),
    ("SUBTRACT", "-"),
    ("MULTIPLY", "*"),
    ("TRUE_DIVIDE", "/"),
    ("FLOOR_DIVIDE", "//"),
    ("MODULO", "%"),
    ("POWER", "**"),
    ("MATRIX_MULTIPLY", "@"),
    ("AND", "&"),
    ("OR", "|"),
    ("XOR", "^"),
    ("LSHIFT", "<<"),
    ("RSHIFT", ">>"),
):
    OLD_BINARY_OPS["BINARY_" + _suffix] = _symbol
    OLD_BINARY_OPS["INPLACE_" + _suffix] = _symbol + "="
del _suffix, _symbol
_ROWS += tuple((_name, Kind.BINARY_OP) for _name in OLD_BINARY_OPS)

#: the opcode names every supported CPython (3.9-3.15) has, all meaning the same: the only
#: concrete names code outside ``bytecode/`` may spell (tests/test_version_knowledge.py)
EVERY_VERSION: FrozenSet[str] = frozenset(
    {
        "BUILD_LIST",
        "BUILD_MAP",
        "BUILD_SET",
        "BUILD_SLICE",
        "BUILD_STRING",
        "BUILD_TUPLE",
        "CALL_FUNCTION_EX",
        "COMPARE_OP",
        "CONTAINS_OP",
        "DELETE_ATTR",
        "DELETE_DEREF",
        "DELETE_FAST",
        "DELETE_GLOBAL",
        "DELETE_NAME",
        "DELETE_SUBSCR",
        "DICT_MERGE",
        "DICT_UPDATE",
        "END_ASYNC_FOR",
        "EXTENDED_ARG",
        "FOR_ITER",
        "GET_AITER",
        "GET_ANEXT",
        "GET_AWAITABLE",
        "GET_ITER",
        "IMPORT_FROM",
        "IMPORT_NAME",
        "IS_OP",
        "JUMP_FORWARD",
        "LIST_APPEND",
        "LIST_EXTEND",
        "LOAD_ATTR",
        "LOAD_BUILD_CLASS",
        "LOAD_CLOSURE",
        "LOAD_CONST",
        "LOAD_DEREF",
        "LOAD_FAST",
        "LOAD_GLOBAL",
        "LOAD_NAME",
        "MAKE_FUNCTION",
        "MAP_ADD",
        "NOP",
        "POP_EXCEPT",
        "POP_TOP",
        "RAISE_VARARGS",
        "RERAISE",
        "RETURN_VALUE",
        "SETUP_ANNOTATIONS",
        "SET_ADD",
        "SET_UPDATE",
        "STORE_ATTR",
        "STORE_DEREF",
        "STORE_FAST",
        "STORE_GLOBAL",
        "STORE_NAME",
        "STORE_SUBSCR",
        "UNARY_INVERT",
        "UNARY_NEGATIVE",
        "UNARY_NOT",
        "UNPACK_EX",
        "UNPACK_SEQUENCE",
        "WITH_EXCEPT_START",
        "YIELD_VALUE",
    }
)
#: every other concrete name: some supported CPython lacks it
VERSION_ONLY: FrozenSet[str] = frozenset(name for name, _ in _ROWS) - EVERY_VERSION

#: the running CPython's concrete names and their kinds (instrumented twins included:
#: they never appear in ``co_code``, and are read as what they instrument)
DECODE: Dict[str, str] = {}
for _name, _kind in _ROWS:
    if _name in opcode.opmap:
        DECODE[_name] = _kind
for _name in opcode.opmap:
    if _name.startswith("INSTRUMENTED_"):
        DECODE[_name] = DECODE.get(_name[len("INSTRUMENTED_") :], Kind.INTERNAL)
del _name, _kind

#: how each conditional jump decides: "false", "true", "none" or "not none" (by name;
#: the spelling of every version)
BRANCH_CONDITIONS: Dict[str, str] = {}
for _name, _kind in _ROWS:
    if _kind == Kind.BRANCH:
        _when = _name.rsplit("_IF_", 1)[1].replace("_OR_POP", "").replace("_", " ").lower()
        BRANCH_CONDITIONS[_name] = _when
del _name, _kind, _when
#: conditional jumps that leave their operand on the stack when they jump
KEEPS_OPERAND: FrozenSet[str] = frozenset(n for n in BRANCH_CONDITIONS if n.endswith("_OR_POP"))

#: the depth each fixed stack shuffle works at (the others carry it in their argument)
COPY_DEPTHS: Dict[str, int] = {"DUP_TOP": 1, "ROT_TWO": 2, "ROT_THREE": 3, "ROT_FOUR": 4}
#: the operator of each unary opcode (and of the one-argument intrinsic that replaced one)
UNARY_OPERATORS: Dict[str, str] = {
    "UNARY_NEGATIVE": "-",
    "UNARY_POSITIVE": "+",
    "UNARY_INVERT": "~",
    "UNARY_NOT": "not",
    "INTRINSIC_UNARY_POSITIVE": "+",
}
#: one-argument intrinsics that are kinds of their own
INTRINSIC_KINDS: Dict[str, str] = {
    "INTRINSIC_UNARY_POSITIVE": Kind.UNARY,
    "INTRINSIC_LIST_TO_TUPLE": Kind.LIST_TO_TUPLE,
    "INTRINSIC_PRINT": Kind.PRINT_EXPR,
    "INTRINSIC_IMPORT_STAR": Kind.IMPORT_STAR,
}
#: calls whose keyword names come as a tuple on top of the arguments
CALLS_WITH_NAMES: FrozenSet[str] = frozenset({"CALL_FUNCTION_KW", "CALL_KW"})
#: calls under a NULL-or-self slot (3.9/3.10: only the method call; 3.11+: every call)
CALLS_WITH_SLOT: FrozenSet[str] = frozenset({"CALL_METHOD", "CALL", "CALL_KW"})


def kind_of(name: str) -> str:
    """The kind of the running CPython's opcode ``name`` (ValueError if it has none)."""
    try:
        return DECODE[name]
    except KeyError:
        raise ValueError(f"unknown opcode {name!r} on this Python") from None


def encodings(kind: str) -> Tuple[str, ...]:
    """The running CPython's concrete names of ``kind``, in the order of the table."""
    return tuple(name for name, k in _ROWS if k == kind and name in opcode.opmap)


#: the spelling code generation uses for a kind where CPython has several, by preference
_PREFERRED: Dict[str, Tuple[str, ...]] = {
    Kind.JUMP: ("JUMP_FORWARD",),
    Kind.LOAD_LOCAL: ("LOAD_FAST",),
    Kind.STORE_LOCAL: ("STORE_FAST",),
    Kind.LOAD_CONST: ("LOAD_CONST",),
    Kind.RETURN: ("RETURN_VALUE",),
    Kind.CALL: ("CALL", "CALL_FUNCTION"),
    Kind.SUBSCR: ("BINARY_SUBSCR",),
    Kind.SWAP: ("SWAP", "ROT_TWO"),
    Kind.COPY: ("COPY", "DUP_TOP"),
    Kind.NOP: ("NOP",),
}


def encode(kind: str) -> Optional[str]:
    """The running CPython's plain spelling of ``kind``, or None where it has none (for
    example ``Kind.RETURN_CONST`` outside 3.12-3.13). Operand-carrying spellings (the
    branch conditions, call shapes) are chosen by ``spelled``."""
    for name in _PREFERRED.get(kind, ()):
        if name in opcode.opmap:
            return name
    found = encodings(kind)
    return found[0] if found else None


def spelled(kind: str, **operands: object) -> Optional[str]:
    """The running CPython's spelling of ``kind`` with the given operands, or None.

    ``Kind.BRANCH``: ``condition`` ("false", "true", "none", "not none") and
    ``keeps_operand``; the plain forward spelling where a version has directions.
    """
    if kind == Kind.BRANCH:
        want = operands.get("condition")
        keeps = bool(operands.get("keeps_operand", False))
        for name in encodings(kind):
            if BRANCH_CONDITIONS[name] != want or (name in KEEPS_OPERAND) != keeps:
                continue
            if "BACKWARD" in name or name.startswith("JUMP_IF_") and name not in KEEPS_OPERAND:
                continue  # direction is the assembler's; 3.14's JUMP_IF_* are pseudo-instructions
            return name
        return None
    return encode(kind)
