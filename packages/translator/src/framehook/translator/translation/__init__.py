"""What a frame translator is, shared by the conversion loop (``conversion/``) and the
symbolic interpreter (``symbolic/``), which implements it.

* ``base``: the instruction-translator interface (``InstructionTranslatorBase``,
  ``FrameInfo``, ``TranslationOutput``, ``call_backend``) and a minimal translator;
* ``speculation``: the decisions a translation made, kept across its restarts;
* ``codemap``: a map keyed by code objects' identity, dropped with them.
"""
