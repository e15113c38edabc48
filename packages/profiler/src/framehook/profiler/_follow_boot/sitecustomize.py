"""Put first on PYTHONPATH by ``framehook-profile --follow``: starts recording the new
interpreter (framehook.profiler._follow), then imports the sitecustomize this one hides."""

import importlib
import os
import sys


def _boot() -> None:
    try:
        from framehook.profiler._follow import boot_from_environment
    except ImportError:  # an interpreter without framehook-profiler: not followed
        pass
    else:
        boot_from_environment()


def _chain() -> None:
    here = os.path.dirname(os.path.abspath(__file__))
    sys.path[:] = [p for p in sys.path if os.path.abspath(p or os.curdir) != here]
    ours = sys.modules.pop("sitecustomize", None)
    try:
        importlib.import_module("sitecustomize")
    except ImportError as exc:
        if exc.name != "sitecustomize":
            raise  # (the hidden module's own error: site reports it, as without us)
        if ours is not None:
            sys.modules["sitecustomize"] = ours


_boot()
_chain()
