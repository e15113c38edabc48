"""Checking marshal data's structure before ``marshal.loads`` sees it.

marshal allocates a container or integer at the size its header declares before reading
the items, so a few bytes declaring a list of 2**31 items take gigabytes. This scan walks
the same structure without building anything and refuses data that declares more items,
characters or digits than there are bytes left, or that uses a type code marshal does not
write for code objects. It does not make marshal safe against every crafted input; it
removes the cheap memory bombs.
"""

from __future__ import annotations

import struct
import sys
from typing import Callable

# Fields of a marshalled code object after its type byte: "L" a raw 4-byte int, "O" an
# object, "C" the bytecode (a bytes object written inline).
if sys.version_info >= (3, 11):
    # argcount, posonly, kwonly, stacksize, flags; code, consts, names, localsplusnames,
    # localspluskinds, filename, name, qualname; firstlineno; linetable, exceptiontable
    _CODE_FIELDS = "LLLLL" + "C" + "O" * 7 + "L" + "OO"
else:
    # argcount, posonly, kwonly, nlocals, stacksize, flags; code, consts, names, varnames,
    # freevars, cellvars, filename, name; firstlineno; lnotab / linetable
    _CODE_FIELDS = "LLLLLL" + "C" + "O" * 7 + "L" + "O"

_FLAG_REF = 0x80
_SINGLETONS = frozenset(b"NFTS.")
_FIXED = {ord("i"): 4, ord("g"): 8, ord("y"): 16, ord("r"): 4, ord("I"): 8}
_SIZED_BYTES = frozenset(b"stuaA")  # 4-byte length, then that many bytes
_SHORT_BYTES = frozenset(b"zZ")  # 1-byte length, then that many bytes
_SIZED_SEQUENCE = frozenset(b"([<>")  # 4-byte count, then that many objects
# Items, characters and digits declared in all, at most: a function's code object with all
# its nested code declares a few thousand.
_MAX_ITEMS = 1 << 20


class MarshalShapeError(ValueError):
    pass


def check(data: bytes, bytecode_check: Callable[[bytes], None] | None = None) -> None:
    """Raise MarshalShapeError unless ``data`` is one well-formed marshal object whose
    declared sizes all fit in the bytes that follow them.

    ``bytecode_check`` is called with every code object's raw bytecode before anything is
    built: some opcodes crash the interpreter as soon as a code object holding them is
    created (instrumentation and executor hooks on 3.12+), that is inside marshal.loads.
    """
    pos, end = 0, len(data)
    stack: list = [iter("O")]

    def take(n: int) -> int:
        nonlocal pos
        if n < 0 or pos + n > end:
            raise MarshalShapeError(f"declares {n} bytes at offset {pos}, {end - pos} left")
        start = pos
        pos += n
        return start

    budget = _MAX_ITEMS
    refs: list = []  # what each back-reference index stands for (bytes, or None)

    def _bytecode(code: int, flagged: int) -> bytes:
        if code == ord("r"):  # identical bytecode written once and referred to
            index = struct.unpack_from("<I", data, take(4))[0]
            if index >= len(refs) or refs[index] is None:
                raise MarshalShapeError(f"a code object's bytecode at offset {pos - 5} refers to no bytes")
            return refs[index]
        if code != ord("s"):
            raise MarshalShapeError(f"a code object's bytecode at offset {pos - 1} is not a bytes object")
        n = count("<i", 4, 1)
        raw = data[take(n) : pos]
        if flagged:
            refs.append(raw)
        return raw

    def count(fmt: str, size: int, per_item: int) -> int:
        nonlocal budget
        n = struct.unpack_from(fmt, data, take(size))[0]
        if n < 0 or n * per_item > end - pos:
            raise MarshalShapeError(f"declares {n} items at offset {pos - size}, {end - pos} bytes left")
        budget -= n
        if budget < 0:
            raise MarshalShapeError(f"declares more than {_MAX_ITEMS} items in all")
        return n

    while stack:
        kind = next(stack[-1], None)
        if kind is None:
            stack.pop()
            continue
        if kind == "L":
            take(4)
            continue
        type_byte = data[take(1)]
        code, flagged = type_byte & ~_FLAG_REF, type_byte & _FLAG_REF
        if kind == "C":
            raw = _bytecode(code, flagged)
            if bytecode_check is not None:
                bytecode_check(raw)
            continue
        if flagged:
            refs.append(None)
        if kind == "K" and code == ord("0"):  # a dict ends at a NULL key
            stack.pop()
            continue
        if kind == "K":
            stack.append(iter("O"))  # the value, read after the key's own parts
        if code in _SINGLETONS:
            continue
        if code in _FIXED:
            take(_FIXED[code])
        elif code == ord("s") and flagged:
            n = count("<i", 4, 1)
            refs[-1] = data[take(n) : pos]
        elif code in _SIZED_BYTES:
            take(count("<i", 4, 1))
        elif code in _SHORT_BYTES:
            take(count("<B", 1, 1))
        elif code == ord("l"):
            n = struct.unpack_from("<i", data, take(4))[0]
            budget -= abs(n)
            if budget < 0:
                raise MarshalShapeError(f"declares an integer of {abs(n)} digits")
            take(2 * abs(n))
        elif code in _SIZED_SEQUENCE:
            stack.append(iter("O" * count("<i", 4, 1)))
        elif code == ord(")"):
            stack.append(iter("O" * count("<B", 1, 1)))
        elif code == ord("{"):
            stack.append(_dict_keys())
        elif code == ord("c"):
            stack.append(iter(_CODE_FIELDS))
        elif code == ord(":"):  # slice (3.14+): start, stop, step
            stack.append(iter("OOO"))
        else:
            raise MarshalShapeError(f"type code {code!r} at offset {pos - 1} is not one a code object uses")
    if pos != end:
        raise MarshalShapeError(f"{end - pos} bytes follow the object")


def _dict_keys():
    while True:
        yield "K"
