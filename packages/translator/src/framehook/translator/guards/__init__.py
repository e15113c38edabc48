"""Guards: the conditions under which a compiled frame may be reused.

* ``model``: the data model, importing no other module of the translator: ``Source`` and
  ``GuardSource``, ``Guard``, ``GuardKind``, ``GlobalStateSource``, ``DuplicateInputs``;
* ``sources``: the concrete sources (``L['x'].shape[0]`` and the like);
* ``contexts``: compile ids and the thread-local contexts a translation runs in, with the
  set of guards it gathers (``GuardsSet``, ``GuardsContext``) and global state;
* ``builder``: compiles a set of guards into one check function for the runtime (imports
  the runtime: not imported here, ``from framehook.translator.guards.builder import ...``);
* ``c_form``: the builder's code parts as the runtime's C checker takes them;
* ``portable``: what guards compare against, as plain data another process can compare.
"""

from .model import DuplicateInputs, GlobalStateSource, Guard, GuardKind, GuardSource, Source
from .sources import (
    AttrSource,
    ChainedSource,
    ClosureCellSource,
    ConstantSource,
    GlobalSource,
    IndexSource,
    ItemSource,
    LengthSource,
    LocalSource,
    NdarrayPropertySource,
    TypeSource,
)
from .contexts import (
    Checkpointable,
    CompileContext,
    CompileId,
    GuardsCheckpointState,
    GuardsContext,
    GuardsSet,
    TraceId,
    TracingContext,
    compile_context,
    register_global_state,
    tracing,
)

__all__ = [
    "GuardSource",
    "Source",
    "Guard",
    "GuardKind",
    "GlobalStateSource",
    "DuplicateInputs",
    "ChainedSource",
    "LocalSource",
    "GlobalSource",
    "ConstantSource",
    "AttrSource",
    "ItemSource",
    "IndexSource",
    "ClosureCellSource",
    "TypeSource",
    "LengthSource",
    "NdarrayPropertySource",
    "Checkpointable",
    "CompileContext",
    "CompileId",
    "TraceId",
    "TracingContext",
    "GuardsSet",
    "GuardsCheckpointState",
    "GuardsContext",
    "compile_context",
    "tracing",
    "register_global_state",
]
