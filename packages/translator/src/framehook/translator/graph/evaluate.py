"""Runs a graph node by node (for debugging and for backends that transform values)."""

from __future__ import annotations

import operator
from typing import Any, Dict

import numpy as np

from .ir import Graph, Node, NodeKind, map_arg

__all__ = ["Interpreter"]


class Interpreter:
    """``Interpreter(graph).run(*inputs)``; override ``run_node`` to observe or change values."""

    def __init__(self, graph: Graph) -> None:
        self.graph = graph
        self.env: Dict[Node, Any] = {}

    def run(self, *inputs: Any) -> Any:
        placeholders = self.graph.placeholders
        if len(inputs) != len(placeholders):
            raise TypeError(f"graph {self.graph.name} takes {len(placeholders)} inputs, got {len(inputs)}")
        self.env = dict(zip(placeholders, inputs))
        result = None
        for node in self.graph.nodes:
            if node.kind is NodeKind.PLACEHOLDER:
                continue
            settings = node.meta.get("errstate")
            if settings:
                with np.errstate(**settings):  # a captured ``with np.errstate(...)`` block
                    value = self.run_node(node)
            else:
                value = self.run_node(node)
            if node.kind is NodeKind.OUTPUT:
                result = value
            else:
                self.env[node] = value
        return result

    def fetch(self, arg: Any) -> Any:
        return map_arg(arg, lambda n: self.env[n])

    def run_node(self, node: Node) -> Any:
        args = self.fetch(node.args)
        kwargs = self.fetch(node.kwargs)
        if node.kind is NodeKind.OUTPUT:
            return args[0]
        if node.kind is NodeKind.GETATTR:
            return getattr(args[0], node.target)
        if node.kind is NodeKind.CALL_METHOD:
            return getattr(args[0], node.target)(*args[1:], **kwargs)
        if node.target is operator.setitem:
            operator.setitem(*args)
            return None
        return node.target(*args, **kwargs)
