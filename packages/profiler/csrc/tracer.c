/* The Tracer type: its arguments and set-up, its garbage collection, the thread hook that
 * moves a thread started by threading onto the C profile function, retagging, and the
 * properties. start() and stop() are in install.c, what comes after stop in collect.c. */
#include "profiler.h"

/* The tagged code objects as a tuple (new reference), or NULL with TypeError. */
static PyObject *tagged_tuple(PyObject *tagged) {
    PyObject *codes = tagged != NULL ? PySequence_Tuple(tagged) : PyTuple_New(0);
    if (codes == NULL) {
        return NULL;
    }
    for (Py_ssize_t i = 0; i < PyTuple_GET_SIZE(codes); i++) {
        if (!PyCode_Check(PyTuple_GET_ITEM(codes, i))) {
            Py_DECREF(codes);
            PyErr_SetString(PyExc_TypeError, "tagged, hidden and muted must hold code objects");
            return NULL;
        }
    }
    return codes;
}

static int tracer_init(TracerObject *self, PyObject *args, PyObject *kwds) {
    static char *kwlist[] = {"c_calls", "tagged", "describe", "runtime_events", "monitoring",
                             "hidden", "muted", "max_events", "current_task", NULL};
    int c_calls = 1, runtime_events = 1, monitoring = 0;
    PyObject *tagged = NULL, *describe = Py_None, *hidden = NULL, *muted = NULL;
    PyObject *max_events = Py_None, *current_task = Py_None;
    if (!PyArg_ParseTupleAndKeywords(args, kwds, "|pOOppOOOO", kwlist, &c_calls, &tagged,
                                     &describe, &runtime_events, &monitoring, &hidden, &muted,
                                     &max_events, &current_task)) {
        return -1;
    }
    if (current_task != Py_None && !PyCallable_Check(current_task)) {
        PyErr_Format(PyExc_TypeError,
                     "current_task must be callable (asyncio.current_task) or None, not %.100s",
                     Py_TYPE(current_task)->tp_name);
        return -1;
    }
    Py_ssize_t limit = 0;
    if (max_events != Py_None) {
        if (!PyLong_Check(max_events) || PyBool_Check(max_events)) {
            PyErr_Format(PyExc_ValueError, "max_events must be an int >= 1 or None, not %.100s",
                         Py_TYPE(max_events)->tp_name);
            return -1;
        }
        limit = PyLong_AsSsize_t(max_events);
        if (limit == -1 && PyErr_Occurred()) {
            PyErr_Clear();
            limit = PY_SSIZE_T_MAX; /* more than memory can hold: no limit in effect */
        }
        if (limit < 1) {
            PyErr_Format(PyExc_ValueError, "max_events must be an int >= 1 or None, not %zd",
                         limit);
            return -1;
        }
        if ((size_t)limit > (size_t)PY_SSIZE_T_MAX / 2) {
            limit = PY_SSIZE_T_MAX / 2;
        }
    }
    if (monitoring && !FH_HAVE_MONITORING) {
        PyErr_SetString(PyExc_ValueError, "the sys.monitoring backend needs CPython 3.12+");
        return -1;
    }
    if (self->state != FH_NEW) {
        PyErr_SetString(PyExc_RuntimeError, "Tracer cannot be re-initialised");
        return -1;
    }
    PyObject *codes = tagged_tuple(tagged);
    if (codes == NULL) {
        return -1;
    }
    PyObject *hidden_codes = tagged_tuple(hidden);
    if (hidden_codes == NULL) {
        Py_DECREF(codes);
        return -1;
    }
    PyObject *muted_codes = tagged_tuple(muted);
    if (muted_codes == NULL) {
        Py_DECREF(codes);
        Py_DECREF(hidden_codes);
        return -1;
    }
    Py_XSETREF(self->hidden, hidden_codes);
    Py_XSETREF(self->muted, muted_codes);
    self->max_events = limit;
    if (describe != Py_None && !PyCallable_Check(describe)) {
        Py_DECREF(codes);
        PyErr_SetString(PyExc_TypeError, "describe must be callable or None");
        return -1;
    }
    Py_XSETREF(self->tagged, codes);
    Py_XINCREF(describe == Py_None ? NULL : describe);
    Py_XSETREF(self->describe, describe == Py_None ? NULL : describe);
    Py_XINCREF(current_task == Py_None ? NULL : current_task);
    Py_XSETREF(self->current_task, current_task == Py_None ? NULL : current_task);
    self->c_calls = c_calls;
    self->runtime_events = runtime_events;
    self->monitoring = monitoring;
    return 0;
}

static PyObject *tracer_new(PyTypeObject *type, PyObject *args, PyObject *kwds) {
    TracerObject *self = (TracerObject *)type->tp_alloc(type, 0);
    if (self == NULL) {
        return NULL;
    }
    self->ctxs = PyList_New(0);
    self->tasks = PyDict_New();
    if (self->ctxs == NULL || self->tasks == NULL) {
        Py_DECREF(self);
        return NULL;
    }
    self->state = FH_NEW;
    self->c_calls = 1;
    self->runtime_events = 1;
    self->tool_id = -1;
    return (PyObject *)self;
}

static int tracer_traverse(TracerObject *self, visitproc visit, void *arg) {
    Py_VISIT(self->ctxs);
    Py_VISIT(self->tagged);
    Py_VISIT(self->describe);
    Py_VISIT(self->hidden);
    Py_VISIT(self->muted);
    Py_VISIT(self->current_task);
    Py_VISIT(self->tasks);
    return 0;
}

void fh_tracer_detach_contexts(TracerObject *self) {
    if (self->ctxs == NULL) {
        return;
    }
    for (Py_ssize_t i = 0; i < PyList_GET_SIZE(self->ctxs); i++) {
        CtxObject *ctx = (CtxObject *)PyList_GET_ITEM(self->ctxs, i);
        ctx->recording = 0;
        ctx->tracer = NULL;
    }
}

static int tracer_clear(TracerObject *self) {
    fh_tracer_detach_contexts(self);
    Py_CLEAR(self->ctxs);
    Py_CLEAR(self->tagged);
    Py_CLEAR(self->describe);
    Py_CLEAR(self->hidden);
    Py_CLEAR(self->muted);
    Py_CLEAR(self->mon);
    Py_CLEAR(self->current_task);
    Py_CLEAR(self->tasks);
    return 0;
}

static void tracer_dealloc(TracerObject *self) {
    PyObject_GC_UnTrack(self);
    tracer_clear(self);
    Py_TYPE(self)->tp_free((PyObject *)self);
}

/* Installed with threading.setprofile: runs as a Python-level profile function at the
 * first event of each thread started while recording, and swaps itself for the C one.
 * Returns the serial of the context recording the calling thread (None: none records
 * it), by which the caller names the thread. */
PyObject *fh_tracer_thread_hook(TracerObject *self, PyObject *const *args, Py_ssize_t nargs) {
    if (nargs != 3 || !PyFrame_Check(args[0]) || !PyUnicode_Check(args[1])) {
        PyErr_SetString(PyExc_TypeError, "thread_hook(frame, event, arg)");
        return NULL;
    }
    PyFrameObject *frame = (PyFrameObject *)args[0];
    PyObject *event = args[1];
    if (self->state != FH_RECORDING || fh_active != self || self->monitoring) {
        /* sys.monitoring sees every thread without it: the hook only had to run once */
        PyEval_SetProfile(NULL, NULL);
        CtxObject *mine = self->state == FH_RECORDING && fh_active == self ? fh_mon_current()
                                                                         : NULL;
        if (mine == NULL) {
            Py_RETURN_NONE;
        }
        return PyLong_FromUnsignedLongLong(mine->home != NULL ? mine->home->serial : mine->serial);
    }
    int is_call = PyUnicode_CompareWithASCIIString(event, "call") == 0;
    int is_c_call = PyUnicode_CompareWithASCIIString(event, "c_call") == 0;
    /* A thread adopted when it was started (fh_adopt_new_threads) that threading has just
     * moved onto this hook: it goes back to its context, and this event is recorded as
     * the profile function would have. Of the contexts made for this thread state's
     * address, the newest is this thread's (an address is only reused once the older
     * thread is gone, and contexts are adopted in creation order). */
    PyThreadState *me = PyThreadState_Get();
    for (Py_ssize_t i = PyList_GET_SIZE(self->ctxs) - 1; i >= 0; i--) {
        CtxObject *ctx = (CtxObject *)PyList_GET_ITEM(self->ctxs, i);
        if (!ctx->unstarted || ctx->tstate != me) {
            continue;
        }
        if (ctx->thread_id == 0) {
            fh_ctx_begin_on_thread(ctx, frame, is_call);
        }
        PyEval_SetProfile(fh_profile, (PyObject *)ctx);
        int what = is_call ? PyTrace_CALL : is_c_call ? PyTrace_C_CALL : -1;
        if (what < 0) {
            static const struct { const char *name; int what; } others[] = {
                {"return", PyTrace_RETURN},
                {"c_return", PyTrace_C_RETURN},
                {"c_exception", PyTrace_C_EXCEPTION},
            };
            for (size_t k = 0; k < sizeof(others) / sizeof(others[0]); k++) {
                if (PyUnicode_CompareWithASCIIString(event, others[k].name) == 0) {
                    what = others[k].what;
                }
            }
        }
        if (what >= 0) {
            fh_profile((PyObject *)ctx, frame, what, args[2]);
        }
        return PyLong_FromUnsignedLongLong(ctx->serial);
    }
    PyFrameObject *outer = is_call ? PyFrame_GetBack(frame) : (Py_INCREF(frame), frame);
    /* this thread's start frames begin now, not when recording started */
    CtxObject *ctx = fh_tracer_add_context(self, PyThread_get_thread_ident(), outer, fh_ticks());
    Py_XDECREF(outer);
    if (ctx == NULL) {
        return NULL;
    }
    ctx->recording = 1;
    PyEval_SetProfile(fh_profile, (PyObject *)ctx);
    if (is_call) {
        fh_record_py_call(ctx, fh_frame_code(frame), frame);
    } else if (is_c_call && ctx->c_calls) {
        fh_record_c_call(ctx, args[2]);
    }
    return PyLong_FromUnsignedLongLong(ctx->serial);
}

/* Replaces the tagged code objects, also for sites already interned (tag_calls and
 * untag_calls while recording). */
PyObject *fh_tracer_retag(TracerObject *self, PyObject *tagged) {
    PyObject *codes = tagged_tuple(tagged);
    if (codes == NULL) {
        return NULL;
    }
    Py_XSETREF(self->tagged, codes);
    for (Py_ssize_t i = 0; i < PyList_GET_SIZE(self->ctxs); i++) {
        fh_sites *t = &((CtxObject *)PyList_GET_ITEM(self->ctxs, i))->sites;
        for (size_t j = 0; t->slots != NULL && j <= t->mask; j++) {
            fh_slot *slot = &t->slots[j];
            if (slot->key1 != 0 && slot->kind == FH_SITE_PY) {
                uint16_t flags = (uint16_t)((slot->flags & ~FH_FLAG_TAGGED) |
                    (fh_code_is_tagged(self, (PyCodeObject *)slot->a) ? FH_FLAG_TAGGED : 0));
                slot->flags = flags;
                t->sites[slot->key1 - 1].flags = flags;
            }
        }
    }
    Py_RETURN_NONE;
}

static PyObject *tracer_get_state(TracerObject *self, void *closure) {
    static const char *names[] = {"new", "recording", "stopped", "refused"};
    return PyUnicode_FromString(names[self->state]);
}

static PyObject *tracer_get_event_count(TracerObject *self, void *closure) {
    size_t n = 0;
    for (Py_ssize_t i = 0; i < PyList_GET_SIZE(self->ctxs); i++) {
        CtxObject *ctx = (CtxObject *)PyList_GET_ITEM(self->ctxs, i);
        n += ctx->finalized > 0 ? fh_ctx_kept(ctx) : fh_buffer_count(&ctx->buf);
    }
    return PyLong_FromSize_t(n);
}

static PyObject *tracer_get_memory(TracerObject *self, void *closure) {
    size_t n = 0;
    for (Py_ssize_t i = 0; i < PyList_GET_SIZE(self->ctxs); i++) {
        CtxObject *ctx = (CtxObject *)PyList_GET_ITEM(self->ctxs, i);
        n += sizeof(CtxObject) + ctx->buf.nblocks * sizeof(fh_block) +
             fh_sites_memory(&ctx->sites) + fh_sites_memory(&ctx->funcs) +
             (ctx->agg != NULL ? fh_agg_memory(ctx->agg) : 0) + ctx->nprefix * sizeof(fh_event);
    }
    return PyLong_FromSize_t(n);
}

/* (serial, thread id) of each context that recorded a thread, as collect() and
 * aggregate() list them: what naming the threads needs, without touching their events. */
static PyObject *tracer_get_threads(TracerObject *self, void *closure) {
    PyObject *out = PyList_New(0);
    if (out == NULL) {
        return NULL;
    }
    for (Py_ssize_t i = 0; self->state != FH_NEW && !self->failed && self->ctxs != NULL &&
                           i < PyList_GET_SIZE(self->ctxs); i++) {
        CtxObject *ctx = (CtxObject *)PyList_GET_ITEM(self->ctxs, i);
        if (ctx->thread_id == 0) {
            continue;
        }
        PyObject *item = Py_BuildValue("(Kk)", ctx->serial, ctx->thread_id);
        if (item == NULL || PyList_Append(out, item) < 0) {
            Py_XDECREF(item);
            Py_DECREF(out);
            return NULL;
        }
        Py_DECREF(item);
    }
    return out;
}

static PyObject *tracer_get_anchors(TracerObject *self, void *closure) {
    return Py_BuildValue("(KLKL)", (unsigned long long)self->t0_ticks, (long long)self->t0_ns,
                         (unsigned long long)self->t1_ticks, (long long)self->t1_ns);
}

static PyObject *tracer_get_runtime_events(TracerObject *self, void *closure) {
    return PyBool_FromLong(self->runtime != NULL);
}

static PyObject *tracer_get_backend(TracerObject *self, void *closure) {
    return PyUnicode_FromString(self->monitoring ? "monitoring" : "profile");
}

/* (serial, name) of each task's context (async_tasks): the name the task has now, or
 * had when it was last seen. */
static PyObject *tracer_get_tasks(TracerObject *self, void *closure) {
    PyObject *out = PyList_New(0);
    for (Py_ssize_t i = 0; out != NULL && self->state != FH_NEW && !self->failed &&
                           self->ctxs != NULL && i < PyList_GET_SIZE(self->ctxs); i++) {
        CtxObject *ctx = (CtxObject *)PyList_GET_ITEM(self->ctxs, i);
        if (ctx->home == NULL) {
            continue;
        }
        PyObject *task = fh_weakref_target(ctx->task_ref);
        if (task != NULL) {
            PyObject *name = fh_task_name_of(task);
            Py_DECREF(task);
            if (name == NULL) {
                Py_CLEAR(out);
                break;
            }
            Py_SETREF(ctx->task_name, name);
        }
        PyObject *item = Py_BuildValue("(KO)", ctx->serial, ctx->task_name);
        if (item == NULL || PyList_Append(out, item) < 0) {
            Py_CLEAR(out);
        }
        Py_XDECREF(item);
    }
    return out;
}

static PyGetSetDef tracer_getset[] = {
    {"tasks", (getter)tracer_get_tasks, NULL,
     "(serial, name) of each asyncio task recorded on a context of its own", NULL},
    {"backend", (getter)tracer_get_backend, NULL,
     "'monitoring' (sys.monitoring callbacks) or 'profile' (a C profile function)", NULL},
    {"state", (getter)tracer_get_state, NULL, "new, recording, stopped or refused", NULL},
    {"event_count", (getter)tracer_get_event_count, NULL, "events recorded so far", NULL},
    {"memory", (getter)tracer_get_memory, NULL, "bytes held by the recorded data", NULL},
    {"threads", (getter)tracer_get_threads, NULL,
     "(serial, thread id) of each recorded thread, in the order collect() gives them", NULL},
    {"anchors", (getter)tracer_get_anchors, NULL,
     "(ticks, ns) at start and at stop: the clock's mapping", NULL},
    {"runtime_events", (getter)tracer_get_runtime_events, NULL,
     "whether framehook-runtime's events are being (or were) recorded", NULL},
    {NULL},
};

PyTypeObject fh_TracerType = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "framehook.profiler._tracer.Tracer",
    .tp_doc = "Tracer(c_calls=True, tagged=(), describe=None, runtime_events=True, "
              "monitoring=False, hidden=(), muted=(), max_events=None)\n\n"
              "Records Python and C calls of every thread between start() and stop().\n"
              "hidden: code whose calls the outputs leave out (their callees stay); muted:\n"
              "code whose calls are left out with all they call; max_events: the newest\n"
              "events kept per thread, older ones folded into the aggregates.",
    .tp_basicsize = sizeof(TracerObject),
    .tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_HAVE_GC,
    .tp_new = tracer_new,
    .tp_init = (initproc)tracer_init,
    .tp_dealloc = (destructor)tracer_dealloc,
    .tp_traverse = (traverseproc)tracer_traverse,
    .tp_clear = (inquiry)tracer_clear,
    .tp_methods = FH_TRACER_METHODS,
    .tp_getset = tracer_getset,
};
