"""framehook.profiler: a low-overhead C tracer of Python and C calls.

    from framehook.profiler import Profiler, record_function, tag_calls

    with Profiler() as prof:
        with record_function("step"):
            work()
    prof.profile.export("trace.json")          # Chrome trace (Perfetto, chrome://tracing)
    print(prof.profile.summary())

Also: ``framehook-profile [-o FILE] [--format ...] script.py [args]`` on the command line.
"""

from __future__ import annotations

from ._export import FORMATS, ExportError
from ._names import Function
from ._profile import Profile
from ._profiler import Profiler, ProfilerWarning
from ._tagging import tag_calls, untag_calls
from ._tracer import record_function
from ._trees import Event, Tag, ThreadTree

__version__ = "0.1.0"

__all__ = [
    "FORMATS",
    "Event",
    "ExportError",
    "Function",
    "Profile",
    "Profiler",
    "ProfilerWarning",
    "Tag",
    "ThreadTree",
    "record_function",
    "tag_calls",
    "untag_calls",
    "__version__",
]
