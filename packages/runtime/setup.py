"""Build script for framehook-runtime's C extension (metadata lives in pyproject.toml)."""

import sys

if not ((3, 9) <= sys.version_info[:2] <= (3, 15)):
    sys.exit(
        "framehook-runtime supports CPython 3.9 to 3.15; this is %d.%d. "
        "Its C extension reaches into each version's frame layout and cannot be built here." % sys.version_info[:2]
    )
if sys.implementation.name != "cpython":
    sys.exit("framehook-runtime needs CPython (PEP 523); this is %s." % sys.implementation.name)

import sysconfig  # noqa: E402

if sysconfig.get_config_var("Py_GIL_DISABLED"):
    sys.exit(
        "framehook-runtime supports CPython 3.9 to 3.15 with the GIL; this is a free-threaded build (%d.%dt), "
        "which is not supported." % sys.version_info[:2]
    )

from setuptools import Extension, setup  # noqa: E402

SOURCES = [
    "extra.c",
    "guarded.c",
    "guards.c",
    "frameview.c",
    "shadow.c",
    "events.c",
    "hook.c",
    "marks.c",
    "callwith.c",
    "module.c",
]

setup(
    ext_modules=[
        Extension(
            "framehook.runtime._C",
            sources=["src/framehook/runtime/_C/" + name for name in SOURCES],
            depends=["src/framehook/runtime/_C/" + h for h in ("compat.h", "runtime.h", "framehook_events.h")],
            # hidden visibility: calls between the extension's files bind directly, not
            # through the PLT (only PyInit__C is exported, by PyMODINIT_FUNC)
            extra_compile_args=["-std=gnu11", "-Wall", "-Wno-missing-field-initializers", "-fvisibility=hidden"],
        )
    ],
)
