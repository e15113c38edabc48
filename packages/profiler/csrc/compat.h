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
 * held), raising the "sys.setprofile" audit event first. Exported by every CPython
 * 3.9-3.13, but only declared publicly up to 3.12. */
#if PY_VERSION_HEX >= 0x030D0000
PyAPI_FUNC(int) _PyEval_SetProfile(PyThreadState *tstate, Py_tracefunc func, PyObject *arg);
#endif

/* Putting a profile function on another thread.
 *
 * A thread state found in the interpreter's list stays valid only while no Python code
 * runs: a thread deletes its state holding the GIL, which Python code may let go. Setting
 * a profile function may run Python code (audit hooks, the release of the object it
 * replaces), so it is done in two steps. fh_stage_set readies the function in a stage; it
 * may run Python code and may fail. fh_stage_swap exchanges the stage's function with the
 * one of a thread state found again after the last Python code ran; it runs none and
 * cannot fail. Afterwards the stage holds what the thread had, until fh_stage_release.
 *
 * Before 3.12 the profile fields are plain: a stage is the function and a reference to
 * its object, the swap writes the fields as _PyEval_SetProfile does, and callers raise
 * the audit event themselves, once per batch (fh_audit_setprofile).
 *
 * From 3.12 profile functions ride on sys.monitoring: the interpreter counts the thread
 * states that have one and switches the events on and off by that count, which only
 * _PyEval_SetProfile and PyThreadState_Clear keep. A stage is then a thread state of our
 * own that never runs (the holder, from PyThreadState_New): _PyEval_SetProfile sets the
 * function there (audit event, count and events included), and the swap exchanges the
 * profile fields of the holder and the target. The count stays right, since the same
 * functions are set, on other thread states. Holders are in the interpreter's list while
 * they live: walks skip them (fh_is_holder). */
typedef struct fh_stage {
#if PY_VERSION_HEX >= 0x030C0000
    PyThreadState *holder; /* NULL until fh_stage_set */
    unsigned long holder_ident;
    struct fh_stage *next; /* in fh_live_stages while the holder exists */
#else
    Py_tracefunc func;
    PyObject *obj; /* owned */
#endif
} fh_stage;

#define FH_STAGE_INIT {0}

#if PY_VERSION_HEX >= 0x030C0000

static fh_stage *fh_live_stages = NULL;

static int fh_is_holder(PyThreadState *ts) {
    for (fh_stage *s = fh_live_stages; s != NULL; s = s->next) {
        if (s->holder == ts) {
            return 1;
        }
    }
    return 0;
}

/* Readies `func` (with `obj`, which gets a reference) in the stage. May run Python code.
 * Returns 0, or -1 with an exception set (the stage then holds what it held before). */
static int fh_stage_set(fh_stage *s, Py_tracefunc func, PyObject *obj) {
    if (s->holder == NULL) {
        PyThreadState *h = PyThreadState_New(PyThreadState_GetInterpreter(PyThreadState_Get()));
        if (h == NULL) {
            if (!PyErr_Occurred()) {
                PyErr_NoMemory();
            }
            return -1;
        }
        /* It is bound to this thread: hide its id, so that nothing looking a thread up by
         * id (PyThreadState_SetAsyncExc) finds it instead of ours. Restored before it is
         * deleted. */
        s->holder_ident = h->thread_id;
        h->thread_id = 0;
        s->holder = h;
        s->next = fh_live_stages;
        fh_live_stages = s;
    }
    if (func == NULL && s->holder->c_profilefunc == NULL && s->holder->c_profileobj == NULL) {
        return 0; /* already empty: no count to change */
    }
    return _PyEval_SetProfile(s->holder, func, obj);
}

static inline Py_tracefunc fh_stage_func(const fh_stage *s) {
    return s->holder != NULL ? s->holder->c_profilefunc : NULL;
}

static inline PyObject *fh_stage_obj(const fh_stage *s) {
    return s->holder != NULL ? s->holder->c_profileobj : NULL;
}

/* Gives `ts` the staged function; the stage takes what `ts` had. The stage must have
 * been set. Runs no Python code. */
static void fh_stage_swap(fh_stage *s, PyThreadState *ts) {
    PyThreadState *h = s->holder;
    Py_tracefunc func = ts->c_profilefunc;
    PyObject *obj = ts->c_profileobj;
    ts->c_profilefunc = h->c_profilefunc;
    ts->c_profileobj = h->c_profileobj;
    h->c_profilefunc = func;
    h->c_profileobj = obj;
}

/* Drops what the stage holds and deletes its holder. May run Python code. Emptying the
 * holder goes through _PyEval_SetProfile, so the events follow the count (off once no
 * thread has a profile function); if an audit hook refuses that, PyThreadState_Clear
 * still takes the holder off the count (the events then stay on until the next change:
 * time lost, nothing recorded) and -1 is returned with the hook's exception set. */
static int fh_stage_release(fh_stage *s) {
    PyThreadState *h = s->holder;
    if (h == NULL) {
        return 0;
    }
    int rc = 0;
    if (h->c_profilefunc != NULL || h->c_profileobj != NULL) {
        rc = _PyEval_SetProfile(h, NULL, NULL);
    }
    PyObject *exc_type, *exc_value, *exc_tb;
    PyErr_Fetch(&exc_type, &exc_value, &exc_tb);
    for (fh_stage **p = &fh_live_stages; *p != NULL; p = &(*p)->next) {
        if (*p == s) {
            *p = s->next;
            break;
        }
    }
    s->holder = NULL;
    s->next = NULL;
    h->thread_id = s->holder_ident;
    PyThreadState_Clear(h);
    PyThreadState_Delete(h);
    PyErr_Restore(exc_type, exc_value, exc_tb);
    return rc;
}

#else /* before 3.12 */

static inline int fh_is_holder(PyThreadState *ts) { return 0; }

static int fh_stage_set(fh_stage *s, Py_tracefunc func, PyObject *obj) {
    Py_XINCREF(obj);
    PyObject *prev = s->obj;
    s->func = func;
    s->obj = obj;
    Py_XDECREF(prev);
    return 0;
}

static inline Py_tracefunc fh_stage_func(const fh_stage *s) { return s->func; }

static inline PyObject *fh_stage_obj(const fh_stage *s) { return s->obj; }

/* Writes the fields as _PyEval_SetProfile does, without its audit event. */
static void fh_stage_swap(fh_stage *s, PyThreadState *ts) {
    Py_tracefunc func = ts->c_profilefunc;
    PyObject *obj = ts->c_profileobj;
    ts->c_profilefunc = s->func;
    ts->c_profileobj = s->obj;
    s->func = func;
    s->obj = obj;
    int on = ts->c_profilefunc != NULL || ts->c_tracefunc != NULL;
#if PY_VERSION_HEX < 0x030A0000
    ts->use_tracing = on;
#elif PY_VERSION_HEX < 0x030B0000
    ts->cframe->use_tracing = on;
#else
    /* as _PyThreadState_UpdateTracingState: off while the thread is inside a callback */
    ts->cframe->use_tracing = (on && ts->tracing == 0) ? 255 : 0;
#endif
}

static int fh_stage_release(fh_stage *s) {
    s->func = NULL;
    Py_CLEAR(s->obj);
    return 0;
}

#endif

/* The "sys.setprofile" audit event, raised once before a batch of swaps before 3.12 (from
 * 3.12 fh_stage_set raises it). May run Python code. */
static inline int fh_audit_setprofile(void) {
#if PY_VERSION_HEX < 0x030C0000
    return PySys_Audit("sys.setprofile", NULL);
#else
    return 0;
#endif
}

/* Keeps allocations from running Python code while thread states found in the list are
 * used (from collecting them to reading their stacks): a collection runs finalizers,
 * which may let the threads run, end, or pop a frame being read. Only 3.11 needs it:
 * reading another thread's frames creates frame objects there, and an allocation may
 * collect at once. Before, those frames are objects already; from 3.12 an allocation only
 * schedules a collection, for the next check of the eval loop. Returns a token for
 * fh_gc_resume. */
#if PY_VERSION_HEX >= 0x030B0000 && PY_VERSION_HEX < 0x030C0000
static inline int fh_gc_pause(void) { return PyGC_Disable(); }
static inline void fh_gc_resume(int was_on) {
    if (was_on) {
        PyGC_Enable();
    }
}
#else
static inline int fh_gc_pause(void) { return 0; }
static inline void fh_gc_resume(int was_on) {}
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
