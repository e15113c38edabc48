/* Version shims: what differs across CPython 3.9-3.15 (profile fields, frame accessors).
 * 3.14 and 3.15 need nothing of their own: the tracer reads frames only through the
 * public accessors (PyThreadState_GetFrame, PyFrame_GetBack, PyFrame_GetCode,
 * PyFrame_GetVar), which hide the tagged stack references of their frames. */
#ifndef FRAMEHOOK_PROFILER_COMPAT_H
#define FRAMEHOOK_PROFILER_COMPAT_H

#include <Python.h>
#include <frameobject.h>

/* Threads of a free-threaded build run at once, while the tracer relies on the GIL to
 * write other threads' states and to share its list of thread contexts. setup.py refuses
 * such a build first; this stops any other way of building one. */
#ifdef Py_GIL_DISABLED
#error "framehook-profiler needs a CPython built with the GIL (3.9 to 3.15); this one is free-threaded"
#endif

/* sys.monitoring (PEP 669) exists from 3.12; its backend lives in sysmonitoring.c. */
#if PY_VERSION_HEX >= 0x030C0000
#define FH_HAVE_MONITORING 1
#else
#define FH_HAVE_MONITORING 0
#endif

/* Sets a profile function on any thread state of this interpreter (the GIL must be
 * held), raising the "sys.setprofile" audit event first. Exported by every CPython
 * 3.9-3.15, but only declared publicly up to 3.12 (from 3.13 in an internal header). */
#if PY_VERSION_HEX >= 0x030D0000
PyAPI_FUNC(int) _PyEval_SetProfile(PyThreadState *tstate, Py_tracefunc func, PyObject *arg);
#endif

#pragma GCC visibility push(hidden) /* internal to the extension: see profiler.h */

/* The thread state at `ts` if it is still the one with that id (ids are never reused), else
 * NULL (compat.c). */
PyThreadState *fh_find_thread(PyInterpreterState *interp, PyThreadState *ts, uint64_t id);

/* Putting a profile function on another thread.
 *
 * A thread state found in the interpreter's list stays valid only while no Python code
 * runs: a thread deletes its state holding the GIL, which Python code may let go. Setting
 * a profile function may run Python code (audit hooks, the release of the object it
 * replaces), so it is done in two steps. fh_stage_set readies the function in a stage; it
 * may run Python code and may fail. fh_stage_swap exchanges the stage's function with the
 * one of a thread state found again after the last Python code ran; it runs none and
 * cannot fail. Afterwards the stage holds what the thread had: kept (fh_stage_move) to be
 * swapped back at stop, or dropped by fh_stage_release, which never raises an audit event.
 *
 * Before 3.12 the profile fields are plain: a stage is the function and a reference to
 * its object, the swap writes the fields as _PyEval_SetProfile does, and callers raise
 * the audit event themselves, once per batch (fh_audit_setprofile).
 *
 * From 3.12 profile functions ride on sys.monitoring: the interpreter counts the thread
 * states that have one, and switches its profile events on and off by that count, which
 * only _PyEval_SetProfile and PyThreadState_Clear keep, and only _PyEval_SetProfile (after
 * its audit event) reads. A stage is then a thread state of our own that never runs (the
 * holder, from PyThreadState_New): _PyEval_SetProfile sets the function there (audit
 * event, count and events included), and the swap exchanges the profile fields of the
 * holder and the target. The count stays right, since the same functions are set, on
 * other thread states. A holder is dropped with PyThreadState_Clear, which keeps the count
 * but leaves the events as they are: after dropping functions, fh_profile_events_sync
 * switches them by the count (one audit event). Holders are in the interpreter's list
 * while they live, marked by their dict: walks skip them (fh_is_holder). A holder kept
 * across Python code is only touched once found again in the list (the interpreter
 * deletes every other thread state at exit and in a forked child). */
typedef struct fh_stage {
#if PY_VERSION_HEX >= 0x030C0000
    PyThreadState *holder; /* NULL until fh_stage_set */
    uint64_t holder_id;
    unsigned long holder_ident;
#else
    Py_tracefunc func;
    PyObject *obj; /* owned */
#endif
} fh_stage;

#define FH_STAGE_INIT {0}

/* Takes what `src` holds into `dst` (empty), leaving `src` empty. Runs no Python code. */
static inline void fh_stage_move(fh_stage *dst, fh_stage *src) {
    *dst = *src;
    memset(src, 0, sizeof(*src));
}

#if PY_VERSION_HEX >= 0x030C0000

extern PyObject *fh_holder_mark; /* every holder's dict; never freed (compat.c) */

static inline int fh_is_holder(PyThreadState *ts) {
    return fh_holder_mark != NULL && ts->dict == fh_holder_mark;
}

/* Whether the stage has a holder (forgetting one the interpreter deleted). */
int fh_stage_ready(fh_stage *s);

static inline Py_tracefunc fh_stage_func(const fh_stage *s) {
    return s->holder != NULL ? s->holder->c_profilefunc : NULL;
}

static inline PyObject *fh_stage_obj(const fh_stage *s) {
    return s->holder != NULL ? s->holder->c_profileobj : NULL;
}

/* Switches the interpreter's profile events by the count of thread states with a profile
 * function (compat.c). May run Python code. Returns 0, or -1 with an exception set. */
int fh_profile_events_sync(void);

static inline int fh_stage_traverse(fh_stage *s, visitproc visit, void *arg) {
    return 0; /* the holder owns the object: a thread state, which gc does not traverse */
}

#else /* before 3.12 */

static inline int fh_is_holder(PyThreadState *ts) { return 0; }

static inline int fh_stage_ready(fh_stage *s) { return 1; }

static inline Py_tracefunc fh_stage_func(const fh_stage *s) { return s->func; }

static inline PyObject *fh_stage_obj(const fh_stage *s) { return s->obj; }

/* Each thread's tracing flag follows its own fields (fh_stage_swap): nothing to switch. */
static inline int fh_profile_events_sync(void) { return 0; }

static inline int fh_stage_traverse(fh_stage *s, visitproc visit, void *arg) {
    Py_VISIT(s->obj);
    return 0;
}
#endif

/* The staged function and the swap (compat.c, per version; see above).
 *
 * fh_stage_set readies `func` (with `obj`, which gets a reference) in the stage: 0, or -1
 * with an exception set (the stage then holds what it held before). fh_stage_swap gives
 * `ts` the staged function, the stage taking what `ts` had; it runs no Python code.
 * fh_stage_release drops what the stage holds without an audit event and never raises;
 * it returns 1 when a function was dropped (the events may need fh_profile_events_sync). */
int fh_stage_set(fh_stage *s, Py_tracefunc func, PyObject *obj);
void fh_stage_swap(fh_stage *s, PyThreadState *ts);
int fh_stage_release(fh_stage *s);

/* The "sys.setprofile" audit event, raised once before a batch of swaps before 3.12 (from
 * 3.12 fh_stage_set and fh_profile_events_sync raise it). May run Python code. */
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
 * an exception set (compat.c). */
PyObject *fh_first_argument(PyFrameObject *frame);

#pragma GCC visibility pop

/* What a weak reference points to (new reference), or NULL when it is dead. 3.13
 * deprecates the borrowing PyWeakref_GetObject for PyWeakref_GetRef. */
static inline PyObject *fh_weakref_target(PyObject *ref) {
#if PY_VERSION_HEX >= 0x030D0000
    PyObject *obj = NULL;
    if (PyWeakref_GetRef(ref, &obj) < 0) {
        PyErr_Clear();
        return NULL;
    }
    return obj;
#else
    PyObject *obj = PyWeakref_GetObject(ref);
    if (obj == NULL) {
        PyErr_Clear();
        return NULL;
    }
    if (obj == Py_None) {
        return NULL;
    }
    Py_INCREF(obj);
    return obj;
#endif
}

#endif
