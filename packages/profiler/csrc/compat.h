/* Version shims: the few frame accessors whose cheapest form differs across 3.9-3.13. */
#ifndef FRAMEHOOK_PROFILER_COMPAT_H
#define FRAMEHOOK_PROFILER_COMPAT_H

#include <Python.h>
#include <frameobject.h>

/* sys.monitoring (PEP 669) exists from 3.12; its backend lives in monitoring.h. */
#if PY_VERSION_HEX >= 0x030C0000
#define FH_HAVE_MONITORING 1
#else
#define FH_HAVE_MONITORING 0
#endif

/* Sets a profile function on any thread state of this interpreter (the GIL must be
 * held). Exported by every CPython 3.9-3.13 (PyEval_SetProfileAllThreads is built on it),
 * but only declared publicly up to 3.12. */
#if PY_VERSION_HEX >= 0x030D0000
PyAPI_FUNC(int) _PyEval_SetProfile(PyThreadState *tstate, Py_tracefunc func, PyObject *arg);
#endif

/* The code object of a frame, borrowed: the frame keeps it alive for the duration of a
 * profile callback, and we only compare it unless we intern it (which takes a reference). */
#if PY_VERSION_HEX < 0x030B0000
static inline PyCodeObject *fh_frame_code(PyFrameObject *f) { return f->f_code; }
#else
static inline PyCodeObject *fh_frame_code(PyFrameObject *f) {
    PyCodeObject *code = PyFrame_GetCode(f);
    Py_DECREF(code); /* borrowed: the executing frame holds it */
    return code;
}
#endif

/* Names of a code object's local variables (new reference). */
static inline PyObject *fh_code_varnames(PyCodeObject *code) {
#if PY_VERSION_HEX < 0x030B0000
    Py_INCREF(code->co_varnames);
    return code->co_varnames;
#else
    return PyCode_GetVarnames(code);
#endif
}

/* The value of a frame's first argument at its call event (new reference), or NULL with
 * an exception set. 3.12 added PyFrame_GetVar; before, f_locals is materialised (only for
 * tagged calls, so the cost stays off the common path). */
static PyObject *fh_first_argument(PyFrameObject *frame) {
    PyCodeObject *code = fh_frame_code(frame);
    if (code->co_argcount < 1) {
        PyErr_SetString(PyExc_TypeError, "tagged call without arguments");
        return NULL;
    }
    PyObject *names = fh_code_varnames(code);
    if (names == NULL) {
        return NULL;
    }
    PyObject *name = PyTuple_GetItem(names, 0);
    PyObject *value = NULL;
    if (name != NULL) {
#if PY_VERSION_HEX >= 0x030C0000
        value = PyFrame_GetVar(frame, name);
#else
        PyObject *locals = PyObject_GetAttrString((PyObject *)frame, "f_locals");
        if (locals != NULL) {
            value = PyObject_GetItem(locals, name);
            Py_DECREF(locals);
        }
#endif
    }
    Py_DECREF(names);
    return value;
}

#endif
