"""Generated and resume code as Python, for ``debug.dump`` only.

``decompile.py`` turns straight-line bytecode back into statements, one handler per
instruction kind (``names.py``, ``operators.py``, ``calls.py``, ``flow.py``; stack values
in ``values.py``, their text in ``text.py``); ``source_match.py`` finds the user's own
source lines that compile to the instructions a code object copied; ``render.py`` puts
both together into a function's text and says whether it is exact. Nothing outside
``debug.py`` needs this subpackage.
"""
