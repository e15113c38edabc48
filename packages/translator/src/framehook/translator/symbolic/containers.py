"""The symbolic interpreter's containers: building tuples, lists, dicts, slices and
strings, unpacking, and formatting (a ``FrameTracer`` mixin)."""

from __future__ import annotations

from typing import Any, List, Optional

from ..bytecode.behaviour import BEHAVIOUR
from . import numpy_support as nps
from .values import Const, DictV, ListV, SliceV, TupleV, V

__all__ = ["ContainerHandlers"]

_CONVERTERS = {"str": str, "repr": repr, "ascii": ascii}


def _convert(value: Any, conversion: Optional[str]) -> Any:
    return _CONVERTERS[conversion](value) if conversion else value


class ContainerHandlers:
    """Containers built from the stack (their items stay symbolic) and strings formatted
    from known values."""

    # ------------------------------------------------------------ building
    def k_build_tuple(self, inst: Any) -> None:
        self.push(TupleV(self.popn(inst.arg)))

    def k_build_list(self, inst: Any) -> None:
        self.push(ListV(self.popn(inst.arg)))

    def k_build_map(self, inst: Any) -> None:
        flat = self.popn(2 * inst.arg)
        self.push(DictV({self.const_of(flat[i]): flat[i + 1] for i in range(0, len(flat), 2)}))

    def k_build_const_key_map(self, inst: Any) -> None:
        keys = self.const_of(self.pop())
        values = self.popn(inst.arg)
        self.push(DictV(dict(zip(keys, values))))

    def make_slice(self, parts: List[V]) -> V:
        """A slice: bounds that are graph ints (dynamic dimensions, a loop index) stay in the
        graph; other graph numbers are specialized."""
        parts = [nps.slice_bound(self, p) for p in parts]  # x[:idx[0]]: a graph int too
        if any(self.tracer.is_symint(p) for p in parts):
            return SliceV([p if self.tracer.is_symint(p) else Const(self.const_of(p, "a slice bound")) for p in parts])
        return Const(slice(*(self.const_of(p, "a slice bound") for p in parts)))

    def k_build_slice(self, inst: Any) -> None:
        self.push(self.make_slice(self.popn(inst.arg)))

    def k_list_append(self, inst: Any) -> None:
        v = self.pop()
        self.check_mutable(self.stack[-inst.arg])
        self.stack[-inst.arg].items.append(v)

    def k_list_extend(self, inst: Any) -> None:
        v = self.pop()
        self.check_mutable(self.stack[-inst.arg])
        self.stack[-inst.arg].items.extend(self.iterate(v))

    def k_list_to_tuple(self, inst: Any) -> None:
        self.push(TupleV(self.pop().items))

    def k_map_add(self, inst: Any) -> None:
        value = self.pop()
        key = self.pop()
        self.check_mutable(self.stack[-inst.arg])
        self.stack[-inst.arg].items[self.const_of(key)] = value

    def k_dict_update(self, inst: Any) -> None:
        v = self.pop()
        target = self.stack[-inst.arg]
        self.check_mutable(target)
        if isinstance(v, DictV):
            target.items.update(v.items)
        elif isinstance(v, Const) and isinstance(v.value, dict):
            target.items.update({k: self.tracer.wrap(x, None) for k, x in v.value.items()})
        else:
            raise self.brk("FH008", f"** of {v.describe()}")

    k_dict_merge = k_dict_update

    def k_unpack_sequence(self, inst: Any) -> None:
        items = self.iterate(self.pop())
        if len(items) != inst.arg:
            raise self.brk("FH009", f"cannot unpack {len(items)} values into {inst.arg}")
        self.stack.extend(reversed(items))

    def k_unpack_ex(self, inst: Any) -> None:
        items = self.iterate(self.pop())
        before, after = inst.unpack
        if len(items) < before + after:
            raise self.brk("FH009", "not enough values to unpack")
        middle = ListV(items[before : len(items) - after])
        out = items[:before] + [middle] + items[len(items) - after :]
        self.stack.extend(reversed(out))

    def k_format(self, inst: Any) -> None:
        if BEHAVIOUR.format_split:
            # the conversion is an instruction of its own, and a spec is read before the value
            spec = self.const_of(self.pop()) if inst.format_spec else ""
            self.push(Const(format(self.const_of(self.pop(), "formatting"), spec)))
            return
        spec_v = self.pop() if inst.format_spec else Const("")
        value = _convert(self.const_of(self.pop(), "formatting"), inst.conversion)
        self.push(Const(format(value, self.const_of(spec_v))))

    def k_convert(self, inst: Any) -> None:
        value = self.const_of(self.pop(), "formatting")
        self.push(Const(_convert(value, inst.conversion)))

    def k_build_interpolation(self, inst: Any) -> None:
        # t-strings: built at trace time from known values (an array's value is not known)
        spec = self.const_of(self.pop(), "a t-string") if inst.format_spec else ""
        expression = self.const_of(self.pop(), "a t-string")
        value = self.const_of(self.pop(), "a t-string")
        from string.templatelib import Interpolation  # 3.14+: only reached there

        self.push(Const(Interpolation(value, expression, (inst.conversion or "")[:1] or None, spec)))

    def k_build_template(self, inst: Any) -> None:
        interpolations = self.const_of(self.pop(), "a t-string")
        strings = self.const_of(self.pop(), "a t-string")
        from string.templatelib import Template

        parts: List[Any] = []
        for k, text in enumerate(strings):
            parts.append(text)
            if k < len(interpolations):
                parts.append(interpolations[k])
        self.push(Const(Template(*parts)))

    def k_build_string(self, inst: Any) -> None:
        self.push(Const("".join(self.const_of(p) for p in self.popn(inst.arg))))
