"""Guards: the conditions under which a compiled frame may be reused.

* ``model``: ``Guard``, ``GuardKind``, ``GuardsSet``, ``GuardsContext`` and the rest;
* ``sources``: where a guarded value came from (``L['x'].shape[0]`` and the like);
* ``contexts``: compile ids and the thread-local contexts a translation runs in;
* ``builder``: compiles a set of guards into one check function for the runtime (imports
  the runtime: not imported here, ``from framehook.translator.guards.builder import ...``).
"""

from .model import (
    DuplicateInputs,
    GlobalStateSource,
    Guard,
    GuardKind,
    GuardsCheckpointState,
    GuardsContext,
    GuardsSet,
)

__all__ = [
    "GuardKind",
    "Guard",
    "GuardsSet",
    "GuardsCheckpointState",
    "GuardsContext",
    "GlobalStateSource",
    "DuplicateInputs",
]
