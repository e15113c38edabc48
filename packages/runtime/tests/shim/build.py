"""Builds the do-nothing eval-frame shim for the running interpreter and imports it."""

from __future__ import annotations

import importlib.util
import os
import subprocess
import sys
import tempfile
from pathlib import Path
from types import ModuleType

HERE = Path(__file__).resolve().parent

SETUP = """
from setuptools import Extension, setup
setup(name="fh_shim", ext_modules=[Extension("fh_shim", [{src!r}])], script_args=["-q", "build_ext", "--inplace"])
"""


def build_shim(directory: str | None = None) -> ModuleType:
    out = Path(directory or tempfile.mkdtemp(prefix="fh_shim_"))
    out.mkdir(parents=True, exist_ok=True)
    script = out / "setup_shim.py"
    script.write_text(SETUP.format(src=str(HERE / "fh_shim.c")))
    env = dict(os.environ)
    env.pop("CFLAGS", None)  # the gcov env's --coverage is for framehook's own code
    env.pop("LDFLAGS", None)
    subprocess.run([sys.executable, str(script)], cwd=str(out), check=True, env=env, stdout=subprocess.DEVNULL)
    built = next(out.glob("fh_shim*.so"), None) or next(out.glob("fh_shim*.pyd"))
    spec = importlib.util.spec_from_file_location("fh_shim", built)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module
