"""The frame-conversion loop: what the runtime calls for each new frame.

* ``convert_frame``: decides per frame whether to translate it, runs the translator with
  restarts, builds the guards' check function and caches the result;
* ``skipfiles``: which files and modules are never translated;
* ``set_aside``: runs code with the translator's caches put aside;
* ``failure_records``: writes a failure record (``framehook-records``) when asked to.

Nothing is imported here: ``convert_frame`` needs the runtime extension.
"""
