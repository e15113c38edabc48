"""Hypothesis strategies and campaign plumbing for framehook's differential fuzzer.

Importable on its own (put ``fuzz/`` on ``sys.path``): ``fhfuzz.program.Program`` is what
every strategy draws and what ``fuzz/run.py`` checks. Only the framehook packages' public
APIs are used, and no framehook package imports this.
"""
