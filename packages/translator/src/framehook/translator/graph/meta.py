"""Abstract values: what a graph node is known to hold without computing it.

``ArrayMeta`` describes a numpy array or numpy scalar (shape, dtype, the exact Python
type); a dimension is an ``int`` or a ``SymDim`` (a named size not known at trace time).
``ScalarMeta`` describes a Python number flowing through the graph as an input.
``TupleMeta`` describes a named tuple of those returned by one operation (numpy's
``EighResult``, ``SVDResult``, ``QRResult``, ``SlogdetResult``, ``EigResult``).
Each can build a *proxy*: a stand-in value with the right type, dtype and shape whose
memory is one element (zero strides), on which numpy can be run to learn the result's
metadata.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Optional, Tuple, Union

import numpy as np

__all__ = ["SymDim", "ArrayMeta", "ScalarMeta", "TupleMeta", "format_shape", "meta_of", "Dim"]


@dataclass(frozen=True)
class SymDim:
    """A symbolic dimension: a size named ``name``, with the size seen when tracing as a hint."""

    name: str
    hint: Optional[int] = None

    def __repr__(self) -> str:
        return self.name


Dim = Union[int, SymDim]


def format_shape(shape: Tuple[Dim, ...]) -> str:
    return "(" + ", ".join(repr(d) for d in shape) + ("," if len(shape) == 1 else "") + ")"


def _fill(dtype: np.dtype) -> Any:
    # benign values: valid as indices (0 for integers), no domain errors for floats (1.0)
    if dtype.kind in "iub":
        return 0
    if dtype.kind in "fc":
        return 1
    return np.zeros((), dtype)[()]


@dataclass(frozen=True)
class ArrayMeta:
    """A numpy array (``pytype`` ndarray) or numpy scalar (``pytype`` e.g. numpy.float64)."""

    shape: Tuple[Dim, ...]
    dtype: np.dtype
    pytype: type = np.ndarray

    @classmethod
    def of(cls, value: Any) -> "ArrayMeta":
        if isinstance(value, np.ndarray):
            return cls(tuple(value.shape), value.dtype, type(value))
        if isinstance(value, np.generic):
            return cls((), value.dtype, type(value))
        raise TypeError(f"ArrayMeta.of: expected a numpy array or scalar, got {type(value).__name__}")

    @property
    def ndim(self) -> int:
        return len(self.shape)

    @property
    def is_static(self) -> bool:
        return all(isinstance(d, int) for d in self.shape)

    @property
    def is_array(self) -> bool:
        return issubclass(self.pytype, np.ndarray)

    @property
    def size(self) -> Dim:
        if not self.is_static:
            raise ValueError("the size of an array with symbolic dimensions is not known")
        n = 1
        for d in self.shape:
            n *= d  # type: ignore[operator]
        return n

    def concrete_shape(self) -> Tuple[int, ...]:
        return tuple(d if isinstance(d, int) else (d.hint if d.hint is not None else 2) for d in self.shape)

    def proxy(self) -> Any:
        """A stand-in of this type, dtype and shape that owns one element."""
        fill = _fill(self.dtype)
        if not self.is_array:
            return self.pytype(fill)
        base = np.full(1, fill, dtype=self.dtype)
        shape = self.concrete_shape()
        if self.dtype.hasobject:  # no view of an object array from its buffer
            return np.lib.stride_tricks.as_strided(base, shape=shape, strides=(0,) * len(shape))
        # the same view as as_strided's, made in C (a proxy is made per operand of every
        # recorded operation: as_strided's Python took a few microseconds each)
        return np.ndarray(shape, self.dtype, base, 0, (0,) * len(shape))

    def __str__(self) -> str:
        if self.is_array:
            return f"{self.dtype}{format_shape(self.shape)}"
        return f"{self.pytype.__name__}"


@dataclass(frozen=True)
class ScalarMeta:
    """A Python scalar (int, float, complex, bool) that is a graph input or result."""

    pytype: type
    hint: Any = None

    def proxy(self) -> Any:
        return self.hint if self.hint is not None else self.pytype(1)

    def __str__(self) -> str:
        return self.pytype.__name__


@dataclass(frozen=True)
class TupleMeta:
    """A named tuple (``pytype``, a ``tuple`` subclass with ``_fields``) whose items are
    described by ``items`` (ArrayMetas): the result of one operation, held whole by its node
    and read item by item through ``getitem`` nodes."""

    items: Tuple[Any, ...]
    pytype: type

    @property
    def fields(self) -> Tuple[str, ...]:
        return tuple(getattr(self.pytype, "_fields", ()))

    @property
    def is_static(self) -> bool:
        return all(getattr(m, "is_static", True) for m in self.items)

    def proxy(self) -> Any:
        return self.pytype(*(m.proxy() for m in self.items))

    def __str__(self) -> str:
        return f"{self.pytype.__name__}({', '.join(str(m) for m in self.items)})"


def meta_of(value: Any) -> Any:
    """The metadata of a concrete value (None when it is neither an array nor a scalar)."""
    if isinstance(value, (np.ndarray, np.generic)):
        return ArrayMeta.of(value)
    if type(value) in (int, float, complex, bool):
        return ScalarMeta(type(value), value)
    return None
