"""The symbolic interpreter's operators: binary and unary operators, comparisons, ``is``
and ``in`` (a ``FrameTracer`` mixin)."""

from __future__ import annotations

import operator
from typing import Any, Callable, Dict

from . import errstate
from .values import NULL, Const, DictV, ListV, NewObjV, Tensor, TupleV, V, flatten

__all__ = ["BINARY_NAMES", "COMPARE", "INPLACE_TO_PLAIN", "UNARY_NAMES", "OperatorHandlers"]

BINARY_NAMES: Dict[str, Callable[[Any, Any], Any]] = {
    "+": operator.add,
    "-": operator.sub,
    "*": operator.mul,
    "/": operator.truediv,
    "//": operator.floordiv,
    "%": operator.mod,
    "**": operator.pow,
    "@": operator.matmul,
    "&": operator.and_,
    "|": operator.or_,
    "^": operator.xor,
    "<<": operator.lshift,
    ">>": operator.rshift,
    "+=": operator.iadd,
    "-=": operator.isub,
    "*=": operator.imul,
    "/=": operator.itruediv,
    "//=": operator.ifloordiv,
    "%=": operator.imod,
    "**=": operator.ipow,
    "@=": operator.imatmul,
    "&=": operator.iand,
    "|=": operator.ior,
    "^=": operator.ixor,
    "<<=": operator.ilshift,
    ">>=": operator.irshift,
}
INPLACE_TO_PLAIN = {BINARY_NAMES[k]: BINARY_NAMES[k[:-1]] for k in BINARY_NAMES if k.endswith("=")}
COMPARE: Dict[str, Callable[[Any, Any], Any]] = {
    "<": operator.lt,
    "<=": operator.le,
    ">": operator.gt,
    ">=": operator.ge,
    "==": operator.eq,
    "!=": operator.ne,
}
#: the unary operators computed as operators (``not`` is a truth test)
UNARY_NAMES: Dict[str, Callable[[Any], Any]] = {"-": operator.neg, "+": operator.pos, "~": operator.invert}


class OperatorHandlers:
    """Operators on symbolic values: graph nodes on arrays and graph numbers, computed at
    trace time on known values."""

    def binary(self, op: Callable[[Any, Any], Any], a: V, b: V) -> V:
        a, b = self.tracer.as_plain(a), self.tracer.as_plain(b)  # a named tuple is a tuple here
        if isinstance(a, Const) and isinstance(a.value, (str, bytes)) and isinstance(b, Tensor):
            b = Const(self.const_of(b, "string formatting"))  # "%d" % n: a Python value, not a graph one
        if isinstance(a, Tensor) or isinstance(b, Tensor):
            for side in (a, b):
                if isinstance(side, (TupleV, ListV)) and any(isinstance(i, Tensor) for i in flatten([side])):
                    raise self.brk("FH008", "an operator between an array and a container holding arrays")
            if op in INPLACE_TO_PLAIN and isinstance(a, Tensor) and not a.is_array:
                op = INPLACE_TO_PLAIN[op]  # numbers are immutable: a += b is a = a + b
            if op is operator.pow and self.python_int(a) and isinstance(b, Tensor) and self.python_int(b):
                # int ** int is an int or a float by the exponent's sign: known at trace time
                b = Const(self.const_of(b, "the exponent of an int power"))
                if not isinstance(a, Tensor):
                    return self.binary(op, a, b)
            return self.tracer.record(op, [a, b], name=f"operator.{op.__name__}")
        if isinstance(a, (TupleV, ListV)) or isinstance(b, (TupleV, ListV)):
            return self.sequence_op(op, a, b)
        x = self.const_of(a)
        y = self.const_of(b)
        try:
            with errstate.strict(self):
                return Const(op(x, y))
        except Exception as e:
            raise self.brk("FH009", f"{op.__name__} raised {type(e).__name__}: {e}") from None

    @staticmethod
    def python_int(v: V) -> bool:
        if isinstance(v, Tensor):
            return not v.is_array and issubclass(v.pytype, int)
        return isinstance(v, Const) and type(v.value) in (int, bool)

    def sequence_op(self, op: Callable[[Any, Any], Any], a: V, b: V) -> V:
        plain = INPLACE_TO_PLAIN.get(op, op)
        if plain is operator.add and type(a) is type(b) and isinstance(a, (TupleV, ListV)):
            if op is operator.iadd and isinstance(a, ListV):
                self.check_mutable(a)
                a.items.extend(b.items)
                return a
            return type(a)(a.items + b.items)
        if isinstance(a, TupleV) and isinstance(b, Const) and isinstance(b.value, tuple) and plain is operator.add:
            return TupleV(a.items + [Const(x) for x in b.value])
        if isinstance(b, TupleV) and isinstance(a, Const) and isinstance(a.value, tuple) and plain is operator.add:
            return TupleV([Const(x) for x in a.value] + b.items)
        if plain is operator.mul:
            seq, n = (a, b) if isinstance(a, (TupleV, ListV)) else (b, a)
            count = self.const_of(n)
            if isinstance(count, int):
                return type(seq)(seq.items * count)
        if op in COMPARE.values():
            return Const(op(self.const_of(a), self.const_of(b)))
        raise self.brk("FH008", f"operator {op.__name__} on {a.describe()} and {b.describe()}")

    def k_binary_op(self, inst: Any) -> None:
        b = self.pop()
        a = self.pop()
        self.push(self.binary(BINARY_NAMES[inst.binary_op], a, b))

    def unary(self, op: Callable[[Any], Any], v: V) -> V:
        v = self.tracer.as_plain(v)
        if isinstance(v, Tensor):
            return self.tracer.record(op, [v], name=f"operator.{op.__name__}")
        x = self.const_of(v)
        try:
            with errstate.strict(self):
                return Const(op(x))
        except Exception as e:
            raise self.brk("FH009", f"{op.__name__} raised {type(e).__name__}: {e}") from None

    def k_unary(self, inst: Any) -> None:
        # ``+`` also comes as an intrinsic (3.12+), decoded to this kind
        if inst.unary == "not":
            self.push(Const(not self.truth(self.pop())))
        else:
            self.push(self.unary(UNARY_NAMES[inst.unary], self.pop()))

    def k_to_bool(self, inst: Any) -> None:
        v = self.jump_truth(self.pop())
        if v is not NULL:
            self.push(v)

    def k_call_intrinsic(self, inst: Any) -> None:
        # the intrinsics the interpreter executes decode to kinds of their own
        raise self.brk("FH001", f"intrinsic {inst.argrepr}")

    def k_compare(self, inst: Any) -> None:
        b = self.tracer.as_plain(self.pop())
        a = self.tracer.as_plain(self.pop())
        op = COMPARE[inst.argval]
        if any(self.tracer.is_symbolic_number(side) for side in (a, b)) and not any(
            isinstance(side, Tensor) and side.is_array for side in (a, b)
        ):
            # ``n > 1`` on a dynamic dimension: a graph bool (a branch on it breaks)
            result = self.binary(op, a, b)
            result = self.jump_truth(result) if inst.to_bool else result
            if result is not NULL:
                self.push(result)
            return
        # Python numbers that entered the graph are specialized when compared
        for side in (a, b):
            if isinstance(side, Tensor) and side.is_python_scalar:
                self.const_of(side)
        if (isinstance(a, Tensor) and a.is_array) or (isinstance(b, Tensor) and b.is_array):
            result = self.binary(op, a, b)
        else:
            a2 = a if not isinstance(a, Tensor) else Const(self.const_of(a))
            b2 = b if not isinstance(b, Tensor) else Const(self.const_of(b))
            result = self.binary(op, a2, b2)
        if inst.to_bool:
            result = self.jump_truth(result)
        if result is not NULL:
            self.push(result)

    def k_is(self, inst: Any) -> None:
        b = self.pop()
        a = self.pop()
        if isinstance(a, Const) and isinstance(b, Const):
            same = a.value is b.value
        elif type(a) is not type(b) and (
            isinstance(a, Const) and a.value is None or isinstance(b, Const) and b.value is None
        ):
            same = False
        elif a is b:
            same = True
        elif isinstance(a, Const) or isinstance(b, Const) or isinstance(a, NewObjV) or isinstance(b, NewObjV):
            same = False  # a traced value is never one of the known constant objects, nor a new object
        else:
            raise self.brk("FH008", f"`is` between {a.describe()} and {b.describe()}")
        self.push(Const(same != inst.invert))

    def k_contains(self, inst: Any) -> None:
        container = self.tracer.as_plain(self.pop())
        item = self.tracer.as_plain(self.pop())
        if isinstance(container, DictV):
            found = self.const_of(item) in container.items
        elif isinstance(container, (TupleV, ListV)) and all(not isinstance(i, Tensor) for i in flatten([container])):
            found = self.const_of(item) in self.const_of(container)
        elif isinstance(container, Const) and not isinstance(item, Tensor):
            try:
                found = self.const_of(item) in container.value
            except Exception as e:
                raise self.brk("FH009", f"`in` raised {type(e).__name__}: {e}") from None
        else:
            raise self.brk("FH002", f"`in` on {container.describe()} needs array values")
        self.push(Const(found != inst.invert))
