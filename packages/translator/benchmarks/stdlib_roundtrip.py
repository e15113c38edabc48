"""Round-trip every code object of every pure-Python module of this interpreter's standard
library through decode -> assemble, and check the result is identical: bytecode, line
table (co_lines / co_positions), exception table, and a stack size no smaller than the
one computed. Prints the counts and the time taken.

    python benchmarks/stdlib_roundtrip.py
"""

from __future__ import annotations

import dis
import os
import sys
import sysconfig
import time
import types
import warnings

from framehook.translator.bytecode import decode, parse_exception_table, stacksize, transform_code_object


def all_codes(code):
    yield code
    for c in code.co_consts:
        if isinstance(c, types.CodeType):
            yield from all_codes(c)


def line_info(code):
    if sys.version_info >= (3, 11):
        return list(code.co_positions())
    if sys.version_info >= (3, 10):
        return list(code.co_lines())
    return list(dis.findlinestarts(code))


def main() -> int:
    root = sysconfig.get_paths()["stdlib"]
    files = []
    for base, dirs, names in os.walk(root):
        dirs[:] = [d for d in dirs if d not in ("site-packages", "dist-packages", "__pycache__")]
        files += [os.path.join(base, n) for n in names if n.endswith(".py")]
    files.sort()
    modules = codes = mismatched = 0
    failures = []
    start = time.perf_counter()
    warnings.simplefilter("ignore")
    for path in files:
        try:
            with open(path, encoding="utf-8") as fh:
                top = compile(fh.read(), path, "exec")
        except (SyntaxError, UnicodeDecodeError, ValueError):
            continue  # test data files that are not valid Python on this version
        except FileNotFoundError:
            continue  # a dangling link (Debian's sitecustomize.py points into /etc)
        modules += 1
        for code in all_codes(top):
            codes += 1
            try:
                new = transform_code_object(code)
                problems = []
                if new.co_code != code.co_code:
                    problems.append("bytecode")
                if line_info(new) != line_info(code):
                    problems.append("line table")
                if sys.version_info >= (3, 11) and parse_exception_table(
                    new.co_exceptiontable
                ) != parse_exception_table(code.co_exceptiontable):
                    problems.append("exception table")
                if stacksize(decode(code)) > code.co_stacksize:
                    problems.append("stack size")
            except Exception as e:  # report, keep going
                problems = [f"{type(e).__name__}: {e}"]
            if problems:
                mismatched += 1
                failures.append(f"{path}:{code.co_firstlineno} {code.co_name}: {', '.join(problems)}")
    elapsed = time.perf_counter() - start
    print(
        f"CPython {sys.version.split()[0]}: {modules} modules, {codes} code objects, "
        f"{mismatched} mismatched, {elapsed:.1f} s"
    )
    for line in failures[:20]:
        print("  " + line)
    return 1 if mismatched else 0


if __name__ == "__main__":
    sys.exit(main())
