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

/* Sets the profile function of a thread state of this interpreter, the calling thread's
 * or another one (the GIL must be held); `obj` gets a new reference, the previous object
 * loses one. Returns 0, or -1 with an exception set.
 *
 * Before 3.12 the fields are written directly, as _PyEval_SetProfile writes them but
 * without its "sys.setprofile" audit event: an audit hook is Python code, which may let
 * other threads run, and one of them could delete `ts` (a thread that was just started
 * and runs to its end) before the write. Here nothing between the caller finding `ts` in
 * the interpreter's thread list and the write can release the GIL (the previous object's
 * release comes last), so `ts` is alive when written. Callers raise the audit event
 * themselves beforehand (fh_audit_setprofile).
 *
 * From 3.12 profile functions ride on sys.monitoring, which counts the threads that have
 * one to switch its events on and off: only _PyEval_SetProfile keeps that count, so it is
 * used, audit event included. A caller walking the thread list must restart the walk
 * after each call (the audit hook may have let threads come and go). */
static int fh_set_thread_profile(PyThreadState *ts, Py_tracefunc func, PyObject *obj) {
#if PY_VERSION_HEX < 0x030C0000
    PyObject *prev = ts->c_profileobj;
    Py_XINCREF(obj);
    ts->c_profileobj = obj;
    ts->c_profilefunc = func;
    int on = func != NULL || ts->c_tracefunc != NULL;
#if PY_VERSION_HEX < 0x030A0000
    ts->use_tracing = on;
#elif PY_VERSION_HEX < 0x030B0000
    ts->cframe->use_tracing = on;
#else
    /* as _PyThreadState_UpdateTracingState: off while the thread is inside a callback */
    ts->cframe->use_tracing = (on && ts->tracing == 0) ? 255 : 0;
#endif
    Py_XDECREF(prev);
    return 0;
#else
    return _PyEval_SetProfile(ts, func, obj);
#endif
}

/* The "sys.setprofile" audit event, raised once before a batch of fh_set_thread_profile
 * calls (before 3.12, where those do not raise it). May run Python code. */
static inline int fh_audit_setprofile(void) {
#if PY_VERSION_HEX < 0x030C0000
    return PySys_Audit("sys.setprofile", NULL);
#else
    return 0;
#endif
}

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
