"""Generated and resume code as Python, for ``debug.dump`` only.

``decompile.py`` turns straight-line bytecode back into statements, one handler per
instruction kind (``name_steps.py``, ``operator_steps.py``, ``call_steps.py``, ``flow_steps.py``;
stack values in ``stack_values.py``, their text in ``text.py``); ``source_match.py`` finds the user's own
source lines that compile to the instructions a code object copied; ``render.py`` puts
both together into a function's text and says whether it is exact. Nothing outside
``debug.py`` needs this subpackage.
"""
