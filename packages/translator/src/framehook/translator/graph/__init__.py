"""The graph IR: what the symbolic interpreter records and backends compile.

g = Graph("f")
x = g.placeholder("x", meta=ArrayMeta.of(np.ones(3)))
y = g.call(np.exp, (x,))
g.output(y)
print(g)                 # readable listing with shapes, dtypes and user locations
g.python_code()          # the straight-line Python source of g.forward
g.forward(np.ones(3))    # the generated function (what the eager backend runs)
Interpreter(g).run(np.ones(3))   # node by node
"""

from .ir import Graph, Location, Node, NodeKind, set_code_generator
from .loop import Loop, WhileLoop, is_loop
from .meta import ArrayMeta, ScalarMeta, SymDim, TupleMeta, format_shape
from .pysource import GraphCodegenError, python_code, compile_graph, forward_from_state, forward_state
from .evaluate import Interpreter

# Graph.python_code and Graph.forward generate code with pysource (ir does not import it)
set_code_generator(python_code, compile_graph, forward_state, forward_from_state)

__all__ = [
    "Graph",
    "Location",
    "Node",
    "NodeKind",
    "Loop",
    "WhileLoop",
    "is_loop",
    "ArrayMeta",
    "ScalarMeta",
    "TupleMeta",
    "SymDim",
    "format_shape",
    "GraphCodegenError",
    "python_code",
    "compile_graph",
    "Interpreter",
]
