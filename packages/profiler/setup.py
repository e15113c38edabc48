"""Build script for framehook-profiler's C extension (metadata lives in pyproject.toml)."""
import sys

if not ((3, 9) <= sys.version_info[:2] <= (3, 13)):
    sys.exit(
        "framehook-profiler supports CPython 3.9 to 3.13; this is %d.%d. Its C tracer uses "
        "each version's profiling hooks and is not built for other versions." % sys.version_info[:2]
    )
if sys.implementation.name != "cpython":
    sys.exit("framehook-profiler needs CPython (its tracer is a C profile function); "
             "this is %s." % sys.implementation.name)
import sysconfig  # noqa: E402

if sysconfig.get_config_var("Py_GIL_DISABLED"):
    sys.exit("framehook-profiler needs a CPython built with the GIL; this one is free-threaded.")

from setuptools import Extension, setup  # noqa: E402

HEADERS = ["buffer.h", "clock.h", "compat.h", "framehook_events.h", "monitoring.h",
           "sites.h"]

setup(
    ext_modules=[
        Extension(
            "framehook.profiler._tracer",
            sources=["csrc/tracer.c"],
            depends=["csrc/" + h for h in HEADERS],
            extra_compile_args=["-std=gnu11", "-Wall", "-Wno-missing-field-initializers",
                                "-Wno-unused-function"],
        )
    ],
)
