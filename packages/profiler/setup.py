"""Build script for framehook-profiler's C extension (metadata lives in pyproject.toml)."""

import sys

SUPPORTED = "CPython 3.9 to 3.15 (built with the GIL)"

if not ((3, 9) <= sys.version_info[:2] <= (3, 15)):
    sys.exit(
        "framehook-profiler supports %s; this is %d.%d. Its C tracer uses each "
        "version's profiling hooks and is not built for other versions." % ((SUPPORTED,) + tuple(sys.version_info[:2]))
    )
if sys.implementation.name != "cpython":
    sys.exit(
        "framehook-profiler supports %s; this is %s (its tracer is a C profile "
        "function)." % (SUPPORTED, sys.implementation.name)
    )
import sysconfig  # noqa: E402

if sysconfig.get_config_var("Py_GIL_DISABLED"):
    sys.exit(
        "framehook-profiler supports %s; this is a free-threaded build of %d.%d, whose "
        "threads run at once: the tracer's per-thread buffers and the thread states it "
        "writes need the GIL." % ((SUPPORTED,) + tuple(sys.version_info[:2]))
    )

from setuptools import Extension, setup  # noqa: E402

# One file per concern (csrc/profiler.h lists them); the headers hold declarations and the
# inline functions of the hot path. No name may be one of CPython's own source files
# (context.c, threads.c, ...): tests/test_memcheck.py tells the extension's frames by it.
SOURCES = [
    "tracermodule.c",
    "tracer.c",
    "install.c",
    "threadctx.c",
    "profile.c",
    "intern.c",
    "adoption.c",
    "sysmonitoring.c",
    "runtime_events.c",
    "collect.c",
    "writer.c",
    "chrome.c",
    "speedscope.c",
    "gecko.c",
    "folded.c",
    "annotate.c",
    "tasks.c",
    "sigterm.c",
    "aggregate.c",
    "blocks.c",
    "compat.c",
    "replay.c",
    "sites.c",
]
HEADERS = [
    "aggregate.h",
    "buffer.h",
    "clock.h",
    "compat.h",
    "framehook_events.h",
    "profiler.h",
    "replay.h",
    "sigterm.h",
    "sites.h",
    "writer.h",
]

setup(
    ext_modules=[
        Extension(
            "framehook.profiler._tracer",
            sources=["csrc/" + name for name in SOURCES],
            depends=["csrc/" + h for h in HEADERS],
            # hidden visibility (and hidden declarations in the headers): the files reach
            # each other's functions and globals directly, not through the PLT or the GOT
            # (only PyInit__tracer is exported, by PyMODINIT_FUNC)
            extra_compile_args=[
                "-std=gnu11",
                "-Wall",
                "-Wno-missing-field-initializers",
                "-Wno-unused-function",
                "-fvisibility=hidden",
            ],
            # timer_create (sigterm.c) is in librt before glibc 2.34 (manylinux2014: 2.17)
            libraries=["rt"] if sys.platform.startswith("linux") else [],
        )
    ],
)
