/* The function bodies of the version shims (compat.h): finding a thread state again,
 * putting a profile function on another thread (the stages), reading a frame's first
 * argument. */
#include "profiler.h"

/* The thread state at `ts` if it is still the one with that id (ids are never reused), else
 * NULL. Compares addresses only until it finds `ts`, so a freed state is never read. */
PyThreadState *fh_find_thread(PyInterpreterState *interp, PyThreadState *ts, uint64_t id) {
    for (PyThreadState *live = PyInterpreterState_ThreadHead(interp); live != NULL;
         live = PyThreadState_Next(live)) {
        if (live == ts) {
            return live->id == id ? live : NULL;
        }
    }
    return NULL;
}

#if PY_VERSION_HEX >= 0x030C0000

PyObject *fh_holder_mark = NULL;

/* Whether the stage has a holder (forgetting one the interpreter deleted). */
int fh_stage_ready(fh_stage *s) {
    if (s->holder != NULL &&
        fh_find_thread(PyThreadState_GetInterpreter(PyThreadState_Get()), s->holder,
                       s->holder_id) == NULL) {
        s->holder = NULL;
    }
    return s->holder != NULL;
}

/* Readies `func` (with `obj`, which gets a reference) in the stage. May run Python code,
 * except to ready nothing in an empty stage (no audit event: nothing changes). Returns 0,
 * or -1 with an exception set (the stage then holds what it held before). */
int fh_stage_set(fh_stage *s, Py_tracefunc func, PyObject *obj) {
    if (s->holder == NULL) {
        if (fh_holder_mark == NULL) {
            fh_holder_mark = PyObject_CallNoArgs((PyObject *)&PyBaseObject_Type);
            if (fh_holder_mark == NULL) {
                return -1;
            }
        }
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
        h->dict = Py_NewRef(fh_holder_mark);
        s->holder = h;
        s->holder_id = h->id;
    }
    if (func == NULL && s->holder->c_profilefunc == NULL && s->holder->c_profileobj == NULL) {
        return 0; /* already empty: no count to change */
    }
    return _PyEval_SetProfile(s->holder, func, obj);
}

/* Gives `ts` the staged function; the stage takes what `ts` had. The stage must be ready.
 * Runs no Python code. */
void fh_stage_swap(fh_stage *s, PyThreadState *ts) {
    PyThreadState *h = s->holder;
    Py_tracefunc func = ts->c_profilefunc;
    PyObject *obj = ts->c_profileobj;
    ts->c_profilefunc = h->c_profilefunc;
    ts->c_profileobj = h->c_profileobj;
    h->c_profilefunc = func;
    h->c_profileobj = obj;
}

/* Drops what the stage holds and deletes its holder, without an audit event: may run
 * Python code (the release of the object), never raises. Returns 1 when a function was
 * dropped: the count went down, the events may need fh_profile_events_sync. */
int fh_stage_release(fh_stage *s) {
    if (!fh_stage_ready(s)) {
        return 0;
    }
    PyThreadState *h = s->holder;
    s->holder = NULL;
    int dropped = h->c_profilefunc != NULL;
    PyObject *exc_type, *exc_value, *exc_tb;
    PyErr_Fetch(&exc_type, &exc_value, &exc_tb);
    h->thread_id = s->holder_ident;
    PyThreadState_Clear(h);
    PyThreadState_Delete(h);
    PyErr_Restore(exc_type, exc_value, exc_tb);
    return dropped;
}

/* Switches the interpreter's profile events by the count of thread states with a profile
 * function: _PyEval_SetProfile on an empty holder, which changes nothing else. It raises
 * the "sys.setprofile" audit event: CPython exports no other way to switch the events, so
 * if an audit hook refuses, they stay as they are (possibly on with no profile function
 * left: then every call pays for a callback that finds none and returns) until the next
 * allowed sys.setprofile of anyone, as when a profiled thread ends. May run Python code.
 * Returns 0, or -1 with an exception set. */
int fh_profile_events_sync(void) {
    fh_stage s = FH_STAGE_INIT;
    if (fh_stage_set(&s, NULL, NULL) < 0) {
        return -1;
    }
    int rc = _PyEval_SetProfile(s.holder, NULL, NULL);
    fh_stage_release(&s);
    return rc;
}

#else /* before 3.12 */

int fh_stage_set(fh_stage *s, Py_tracefunc func, PyObject *obj) {
    Py_XINCREF(obj);
    PyObject *prev = s->obj;
    s->func = func;
    s->obj = obj;
    Py_XDECREF(prev);
    return 0;
}

/* Writes the fields as _PyEval_SetProfile does, without its audit event. */
void fh_stage_swap(fh_stage *s, PyThreadState *ts) {
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

int fh_stage_release(fh_stage *s) {
    int dropped = s->func != NULL;
    s->func = NULL;
    Py_CLEAR(s->obj);
    return dropped;
}
#endif

/* The value of a frame's first argument at its call event (new reference), or NULL with
 * an exception set. 3.12 added PyFrame_GetVar; before, f_locals is materialised (only for
 * tagged calls, so the cost stays off the common path). */
PyObject *fh_first_argument(PyFrameObject *frame) {
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
