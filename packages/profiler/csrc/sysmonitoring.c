/* The sys.monitoring backend (PEP 669, CPython 3.12+): claiming a tool id, registering the
 * callbacks, turning the events on and off, and a thread's first event (fh_mon_attach).
 * The callbacks themselves are in profile.c, beside the profile function: both are the
 * hot path, and the recording of a call is inlined into each.
 *
 * One C callback per event, registered with sys.monitoring under a free tool id:
 *
 *   PY_START, PY_RESUME, PY_THROW   -> a Python call (as the profile function's "call")
 *   PY_RETURN, PY_YIELD             -> a Python return
 *   PY_UNWIND                       -> a Python frame left by an exception
 *   CALL                            -> a C call, when the callable is a C function (or a
 *                                      method descriptor with its self, or a method
 *                                      bound to a C function); other callables: nothing
 *   C_RETURN, C_RAISE               -> the end of such a C call (same filter)
 *
 * The same nine events, under the same names, exist on every version from 3.12 (3.15
 * included); the others (lines, jumps, BRANCH, or 3.14's BRANCH_LEFT and BRANCH_RIGHT
 * that replace it) are never turned on, so the changes to them do not concern us.
 *
 * sys.monitoring callbacks are interpreter-wide, so each callback finds its thread's
 * context through a thread-local pointer, valid while its generation matches fh_gen (which
 * changes at every start and stop). A thread meets a stale generation at its first event
 * of a recording and takes the slow path (fh_mon_attach): it claims the context made for it
 * at start, or gets a new one (a thread started while recording, with threading or with
 * _thread) whose start frames are its stack at that moment. */
#include "profiler.h"

/* Bumped at each start and stop; thread-local pointers of another generation are stale. */
uint64_t fh_gen = 1;

#if FH_HAVE_MONITORING

/* This thread's context, valid while fh_tls.gen == fh_gen (initial-exec: one TLS variable,
 * reached without a call, in every file that reads it). */
FH_TLS fh_tls_t fh_tls = {NULL, 0};

PyObject *fh_mon_missing = NULL;

/* The context of a thread whose thread-local pointer is stale (once per thread and
 * recording). `code` is the code of the frame the event enters (PY_START, PY_RESUME,
 * PY_THROW) or NULL: that frame is recorded by the event itself, not as a start frame. */
CtxObject *fh_mon_attach(PyCodeObject *entering) {
    fh_tls.gen = fh_gen;
    fh_tls.ctx = NULL;
    TracerObject *tracer = fh_active;
    if (tracer == NULL || !tracer->monitoring || tracer->state != FH_RECORDING) {
        return NULL;
    }
    PyThreadState *ts = PyThreadState_Get();
    unsigned long ident = PyThread_get_thread_ident();
    for (Py_ssize_t i = 0; i < PyList_GET_SIZE(tracer->ctxs); i++) {
        CtxObject *ctx = (CtxObject *)PyList_GET_ITEM(tracer->ctxs, i);
        if (!ctx->claimed && ctx->tstate == ts && ctx->thread_id == ident) {
            ctx->claimed = 1;
            ctx->tstate = NULL;
            fh_tls.ctx = ctx->recording ? ctx : NULL;
            return fh_tls.ctx;
        }
    }
    /* A thread that did not exist at start: its stack so far becomes start frames. */
    PyObject *exc_type, *exc_value, *exc_tb;
    PyErr_Fetch(&exc_type, &exc_value, &exc_tb);
    PyFrameObject *top = PyThreadState_GetFrame(ts);
    if (top != NULL && entering != NULL && fh_frame_code(top) == entering) {
        PyFrameObject *back = PyFrame_GetBack(top);
        Py_DECREF(top);
        top = back;
    }
    CtxObject *ctx = fh_tracer_add_context(tracer, ident, top, fh_ticks());
    Py_XDECREF(top);
    if (ctx == NULL) {
        PyErr_Clear(); /* this thread records nothing; the others go on */
    } else {
        ctx->claimed = 1;
        ctx->recording = 1;
        fh_tls.ctx = ctx;
    }
    PyErr_Restore(exc_type, exc_value, exc_tb);
    return fh_tls.ctx;
}

#define FH_MON_CALLBACK(f) ((PyCFunction)(void (*)(void))(f))

typedef struct {
    int c_call; /* only registered when C calls are recorded */
    PyMethodDef def; /* def.ml_name is the event's name in sys.monitoring.events */
} fh_mon_callback;

static fh_mon_callback fh_mon_callbacks[] = {
    {0, {"PY_START", FH_MON_CALLBACK(fh_mon_py_start), METH_FASTCALL, NULL}},
    {0, {"PY_RESUME", FH_MON_CALLBACK(fh_mon_py_start), METH_FASTCALL, NULL}},
    {0, {"PY_THROW", FH_MON_CALLBACK(fh_mon_py_start), METH_FASTCALL, NULL}},
    {0, {"PY_RETURN", FH_MON_CALLBACK(fh_mon_py_return), METH_FASTCALL, NULL}},
    {0, {"PY_YIELD", FH_MON_CALLBACK(fh_mon_py_return), METH_FASTCALL, NULL}},
    {0, {"PY_UNWIND", FH_MON_CALLBACK(fh_mon_py_unwind), METH_FASTCALL, NULL}},
    {1, {"CALL", FH_MON_CALLBACK(fh_mon_call), METH_FASTCALL, NULL}},
    {1, {"C_RETURN", FH_MON_CALLBACK(fh_mon_c_return), METH_FASTCALL, NULL}},
    {1, {"C_RAISE", FH_MON_CALLBACK(fh_mon_c_raise), METH_FASTCALL, NULL}},
};
#define FH_MON_NCALLBACKS ((int)(sizeof(fh_mon_callbacks) / sizeof(fh_mon_callbacks[0])))

/* Each callback's event bit, read from sys.monitoring.events (0 until prepared). */
static long fh_mon_event_bits[FH_MON_NCALLBACKS];

/* Tool ids tried in order: the profiler's own, then the unnamed ones. */
static const int fh_mon_tool_ids[] = {2, 3, 4};

/* Registers (func != NULL) or unregisters (func == NULL) every callback. */
static int mon_register(TracerObject *self, int on) {
    for (int i = 0; i < FH_MON_NCALLBACKS; i++) {
        const fh_mon_callback *cb = &fh_mon_callbacks[i];
        if (cb->c_call && !self->c_calls) {
            continue;
        }
        PyObject *func = on ? PyCFunction_New((PyMethodDef *)&cb->def, NULL) : Py_NewRef(Py_None);
        if (func == NULL) {
            return -1;
        }
        PyObject *prev = PyObject_CallMethod(self->mon, "register_callback", "ilO",
                                             self->tool_id, fh_mon_event_bits[i], func);
        Py_DECREF(func);
        if (prev == NULL) {
            return -1;
        }
        Py_DECREF(prev);
    }
    return 0;
}

static int mon_set_events(TracerObject *self, int on) {
    long mask = 0;
    for (int i = 0; on && i < FH_MON_NCALLBACKS; i++) {
        if (!fh_mon_callbacks[i].c_call || self->c_calls) {
            mask |= fh_mon_event_bits[i];
        }
    }
    PyObject *r = PyObject_CallMethod(self->mon, "set_events", "il", self->tool_id, mask);
    if (r == NULL) {
        return -1;
    }
    Py_DECREF(r);
    return 0;
}

/* Looks sys.monitoring up and claims a tool id. May run Python code, so start() calls it
 * before anything is installed. Returns 0, or -1 with an exception set. */
int fh_mon_prepare(TracerObject *self) {
    PyObject *mon = PySys_GetObject("monitoring"); /* borrowed */
    if (mon == NULL) {
        PyErr_SetString(PyExc_RuntimeError, "sys.monitoring is missing");
        return -1;
    }
    PyObject *missing = PyObject_GetAttrString(mon, "MISSING");
    if (missing == NULL) {
        return -1;
    }
    Py_XSETREF(fh_mon_missing, missing);
    PyObject *events = PyObject_GetAttrString(mon, "events");
    if (events == NULL) {
        return -1;
    }
    for (int i = 0; i < FH_MON_NCALLBACKS; i++) {
        PyObject *bit = PyObject_GetAttrString(events, fh_mon_callbacks[i].def.ml_name);
        long value = bit != NULL ? PyLong_AsLong(bit) : -1;
        Py_XDECREF(bit);
        if (value == -1 && PyErr_Occurred()) {
            Py_DECREF(events);
            return -1;
        }
        fh_mon_event_bits[i] = value;
    }
    Py_DECREF(events);
    Py_INCREF(mon);
    Py_XSETREF(self->mon, mon);
    for (size_t i = 0; i < sizeof(fh_mon_tool_ids) / sizeof(fh_mon_tool_ids[0]); i++) {
        PyObject *owner = PyObject_CallMethod(mon, "get_tool", "i", fh_mon_tool_ids[i]);
        if (owner == NULL) {
            return -1;
        }
        int taken = owner != Py_None;
        Py_DECREF(owner);
        if (taken) {
            continue;
        }
        PyObject *r = PyObject_CallMethod(mon, "use_tool_id", "is", fh_mon_tool_ids[i],
                                          "framehook-profiler");
        if (r == NULL) {
            return -1;
        }
        Py_DECREF(r);
        self->tool_id = fh_mon_tool_ids[i];
        return 0;
    }
    PyErr_SetString(PyExc_RuntimeError,
                    "no free sys.monitoring tool id (2, 3 and 4 are all in use); use "
                    "backend='profile'");
    return -1;
}

/* Undoes whatever part of install/prepare was done; never raises (errors are reported
 * as unraisable). */
void fh_mon_release(TracerObject *self) {
    if (self->tool_id < 0) {
        return;
    }
    if (mon_set_events(self, 0) < 0 || mon_register(self, 0) < 0) {
        PyErr_WriteUnraisable((PyObject *)self);
    }
    PyObject *r = PyObject_CallMethod(self->mon, "free_tool_id", "i", self->tool_id);
    if (r == NULL) {
        PyErr_WriteUnraisable((PyObject *)self);
    }
    Py_XDECREF(r);
    self->tool_id = -1;
    Py_CLEAR(self->mon);
}

/* Turns the events on (the contexts exist and are marked recording). */
int fh_mon_install(TracerObject *self, CtxObject *mine) {
    fh_gen++;
    fh_tls.gen = fh_gen;
    fh_tls.ctx = mine;
    if (mine != NULL) {
        mine->claimed = 1;
        mine->tstate = NULL;
    }
    if (mon_register(self, 1) < 0 || mon_set_events(self, 1) < 0) {
        return -1;
    }
    return 0;
}

void fh_mon_uninstall(TracerObject *self) {
    fh_mon_release(self);
    fh_gen++;
}

CtxObject *fh_mon_current(void) { return mon_ctx(NULL); }

#else /* before 3.12: no sys.monitoring */

int fh_mon_prepare(TracerObject *self) {
    PyErr_SetString(PyExc_ValueError, "the sys.monitoring backend needs CPython 3.12+");
    return -1;
}

void fh_mon_release(TracerObject *self) {}
int fh_mon_install(TracerObject *self, CtxObject *mine) { return 0; }
void fh_mon_uninstall(TracerObject *self) { fh_gen++; }
CtxObject *fh_mon_current(void) { return NULL; }

#endif
