"""Infix spellings shared by the backends that write expressions (numexpr's strings, the
numba backend's loop lowering): a comparison is written alike whether the graph holds the
operator or numpy's ufunc."""

from __future__ import annotations

import operator
from typing import Any, Dict

import numpy as np

__all__ = ["COMPARISONS"]

COMPARISONS: Dict[Any, str] = {
    operator.lt: "<",
    operator.le: "<=",
    operator.gt: ">",
    operator.ge: ">=",
    operator.eq: "==",
    operator.ne: "!=",
    np.less: "<",
    np.less_equal: "<=",
    np.greater: ">",
    np.greater_equal: ">=",
    np.equal: "==",
    np.not_equal: "!=",
}
