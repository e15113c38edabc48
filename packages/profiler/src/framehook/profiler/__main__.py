"""python -m framehook.profiler [-o FILE] [--format ...] script.py [args]"""

import sys

from ._cli import command_line

if __name__ == "__main__":
    sys.exit(command_line())
