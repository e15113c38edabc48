/* The hot path: what runs at every call and return of a recorded thread, laid out as
 * CPython's Modules/_lsprof.c. A call is recorded by record_py_call or record_c_call: the
 * caller from the shadow stack (profiler.h), the site's key from the thread's table
 * (fh_sites_find), a clock read and a 16-byte event appended (ctx_push). Both backends'
 * callbacks are here, so that all of this inlines into them: the C profile function
 * (fh_profile) and, from 3.12, the sys.monitoring callbacks (registered by sysmonitoring.c).
 * What runs once per site, thread or block is called out of line: interning (intern.c), a
 * thread's first event (adoption.c, sysmonitoring.c) and a full block (fh_ctx_grow, below). */
#include "profiler.h"

#ifdef FH_CLOCK_COUNTER
uint64_t fh_counter; /* the clock of -DFH_CLOCK_COUNTER builds (clock.h) */
#endif

/* The ring of max_events: a full buffer of max_blocks blocks folds its oldest block into
 * the aggregates and reuses it. While recording, ticks map to nanoseconds by the line
 * through the start anchor and one taken now (the stop anchor is not known yet). Runs in
 * the profile callback: NULL (no exception kept) when memory runs out. */
fh_event *fh_ctx_grow(CtxObject *ctx) {
    fh_buffer *b = &ctx->buf;
    if (ctx->max_blocks == 0 || b->nblocks < ctx->max_blocks || ctx->tracer == NULL) {
        return fh_buffer_grow(b);
    }
    if (ctx->agg == NULL) {
        fh_agg *agg = (fh_agg *)PyMem_RawMalloc(sizeof(fh_agg));
        if (agg == NULL) {
            return NULL;
        }
        if (fh_agg_init(agg) < 0) {
            PyMem_RawFree(agg);
            return NULL;
        }
        ctx->agg = agg;
    }
    uint64_t now_ticks;
    int64_t now_ns;
    fh_tick_anchor(&now_ticks, &now_ns);
    fh_clockmap clock;
    fh_clockmap_set(&clock, ctx->tracer->t0_ticks, ctx->tracer->t0_ns, now_ticks, now_ns);
    if (fh_agg_fold(ctx->agg, b->head->ev, FH_BLOCK_EVENTS, &ctx->sites, &clock) < 0) {
        ctx->agg_broken = 1; /* part of the block is folded: the aggregates are not exact */
        return NULL;
    }
    ctx->dropped += FH_BLOCK_EVENTS;
    return fh_buffer_rotate(b);
}

/* A Python call of `code`; `frame` is its frame, or NULL when only the tag path needs it
 * (the sys.monitoring backend, where it is the current frame). */
static inline void record_py_call(CtxObject *ctx, PyCodeObject *code, PyFrameObject *frame) {
    if (fh_tasks_on && (code->co_flags & FH_CO_TASK_ROOT) && ctx->home == NULL) {
        ctx = fh_task_enter(ctx); /* (an asyncio task's step may begin here: tasks.c) */
    }
    PyCodeObject *caller = shadow_top(ctx);
    shadow_push(ctx, code);
    fh_slot *slot = fh_sites_find(&ctx->sites, code, caller, FH_SITE_PY);
    if (slot == NULL) {
        slot = fh_intern_py(ctx, code, caller);
        if (slot == NULL) {
            fh_ctx_break(ctx);
            return;
        }
    }
    uint64_t t = fh_ticks();
    ctx_push(ctx, FH_EV_PY_CALL, slot->key1 - 1, t);
    if (slot->flags & FH_FLAG_TAGGED) {
        fh_record_tag(ctx, frame != NULL ? frame : PyEval_GetFrame(), t);
    }
}

/* A Python frame left (returned, yielded or unwound by an exception). */
static inline void record_py_return(CtxObject *ctx, uint32_t kind) {
    shadow_pop(ctx);
    uint64_t t = fh_ticks();
    ctx_push(ctx, kind, 0, t);
    if (ctx->home != NULL && ctx->depth == 0) {
        fh_task_leave(ctx, t); /* the end of a task's step */
    }
}

static inline void record_c_call(CtxObject *ctx, PyObject *fn) {
    const void *ident;
    if (PyCFunction_Check(fn)) {
        const PyMethodDef *ml = ((PyCFunctionObject *)fn)->m_ml;
        if (fh_is_internal(ml)) {
            return;
        }
        ident = ml;
    } else {
        ident = Py_TYPE(fn);
    }
    PyCodeObject *caller = shadow_top(ctx);
    fh_slot *slot = fh_sites_find(&ctx->sites, ident, caller, FH_SITE_C);
    if (slot == NULL) {
        slot = fh_intern_c_slow(ctx, fn, ident, caller);
        if (slot == NULL) {
            fh_ctx_break(ctx);
            return;
        }
    }
    ctx_push(ctx, FH_EV_C_CALL, slot->key1 - 1, fh_ticks());
    if (slot->flags & FH_FLAG_SPAWN) {
        fh_spawn_begin(ctx);
    }
}

/* record_py_call and record_c_call for the thread hook (tracer.c), out of line. */
void fh_record_py_call(CtxObject *ctx, PyCodeObject *code, PyFrameObject *frame) {
    record_py_call(ctx, code, frame);
}

void fh_record_c_call(CtxObject *ctx, PyObject *fn) {
    record_c_call(ctx, fn);
}

/* Calls of the profile function for a context that records nothing (stopped, or broken):
 * after stop() none should come (_tracer.idle_calls(), for the tests). */
Py_ssize_t fh_idle_calls = 0;

int fh_profile(PyObject *obj, PyFrameObject *frame, int what, PyObject *arg) {
    CtxObject *ctx = (CtxObject *)obj;
    if (!ctx->recording) {
        fh_idle_calls++;
        return 0;
    }
    if (ctx->task != NULL) {
        ctx = ctx->task; /* in an asyncio task's step */
    }
    switch (what) {
    case PyTrace_CALL:
        record_py_call(ctx, fh_frame_code(frame), frame);
        break;
    case PyTrace_RETURN:
        /* arg is NULL when the frame is being left by an exception */
        record_py_return(ctx, arg != NULL ? FH_EV_PY_RETURN : FH_EV_PY_UNWIND);
        break;
    case PyTrace_C_CALL:
        if (ctx->c_calls) {
            record_c_call(ctx, arg);
        } else if (fh_is_spawn(arg)) {
            fh_spawn_begin(ctx);
        }
        break;
    case PyTrace_C_RETURN:
    case PyTrace_C_EXCEPTION:
        /* Returns of the profiler's own (unrecorded) C calls are recorded too: checking
         * here would tax every C return, and the tree builder drops a C return that finds
         * no open C call. */
        if (ctx->c_calls) {
            ctx_push(ctx, what == PyTrace_C_RETURN ? FH_EV_C_RETURN : FH_EV_C_RAISE, 0,
                     fh_ticks());
        }
        if (ctx->spawning) {
            fh_spawn_end(ctx, arg, what == PyTrace_C_RETURN);
        }
        break;
    default:
        break;
    }
    return 0;
}

/* The profile function of a thread adopted before it ran: its first event claims the
 * context (the thread's id is only known on the thread itself), then it is fh_profile. */
int fh_profile_first(PyObject *obj, PyFrameObject *frame, int what, PyObject *arg) {
    fh_ctx_claim((CtxObject *)obj, PyThreadState_Get(), frame, what == PyTrace_CALL);
    return fh_profile(obj, frame, what, arg);
}

#if FH_HAVE_MONITORING

#include <descrobject.h>

/* The sys.monitoring callbacks: one per event (sysmonitoring.c says which event is which).
 * Each finds its thread's context through the thread-local pointer (mon_ctx). */

/* The C function a CALL (or C_RETURN, C_RAISE) event is about, or NULL when the call is
 * not recorded: not a C function, or one of the profiler's own. On a hit *fn is the
 * callable to name the site by (borrowed, or for a method descriptor NULL: named later). */
static inline const PyMethodDef *mon_c_method(PyObject *callable, PyObject *arg0) {
    PyTypeObject *type = Py_TYPE(callable);
    const PyMethodDef *ml;
    if (type == &PyCFunction_Type || type == &PyCMethod_Type) {
        ml = ((PyCFunctionObject *)callable)->m_ml;
    } else if (type == &PyMethodDescr_Type) {
        if (arg0 == fh_mon_missing) {
            return NULL;
        }
        ml = ((PyMethodDescrObject *)callable)->d_method;
    } else if (type == &PyMethod_Type) {
        PyObject *func = PyMethod_GET_FUNCTION(callable);
        if (!PyCFunction_Check(func)) {
            return NULL;
        }
        ml = ((PyCFunctionObject *)func)->m_ml;
    } else if (type == &PyFunction_Type) {
        return NULL; /* the common case, answered by the branches above in one compare */
    } else if (PyCFunction_Check(callable)) {
        ml = ((PyCFunctionObject *)callable)->m_ml;
    } else {
        return NULL;
    }
    return fh_is_internal(ml) ? NULL : ml;
}

/* A bound C function standing for the call (new reference), to name its site once. */
static PyObject *mon_c_function(PyObject *callable, PyObject *arg0) {
    if (Py_TYPE(callable) == &PyMethodDescr_Type) {
        return Py_TYPE(callable)->tp_descr_get(callable, arg0, (PyObject *)Py_TYPE(arg0));
    }
    if (Py_TYPE(callable) == &PyMethod_Type) {
        callable = PyMethod_GET_FUNCTION(callable);
    }
    Py_INCREF(callable);
    return callable;
}

PyObject *fh_mon_py_start(PyObject *self, PyObject *const *args, Py_ssize_t nargs) {
    PyCodeObject *code = (PyCodeObject *)args[0];
    CtxObject *ctx = mon_ctx(code);
    if (ctx != NULL) {
        record_py_call(ctx, code, NULL);
    }
    Py_RETURN_NONE;
}

PyObject *fh_mon_py_return(PyObject *self, PyObject *const *args, Py_ssize_t nargs) {
    CtxObject *ctx = mon_ctx(NULL);
    if (ctx != NULL) {
        record_py_return(ctx, FH_EV_PY_RETURN);
    }
    Py_RETURN_NONE;
}

PyObject *fh_mon_py_unwind(PyObject *self, PyObject *const *args, Py_ssize_t nargs) {
    CtxObject *ctx = mon_ctx(NULL);
    if (ctx != NULL) {
        record_py_return(ctx, FH_EV_PY_UNWIND);
    }
    Py_RETURN_NONE;
}

PyObject *fh_mon_call(PyObject *self, PyObject *const *args, Py_ssize_t nargs) {
    PyObject *callable = args[2];
    if (Py_TYPE(callable) == &PyFunction_Type) {
        return Py_NewRef(Py_None); /* a Python call: PY_START records it */
    }
    const PyMethodDef *ml = mon_c_method(callable, args[3]);
    if (ml == NULL) {
        Py_RETURN_NONE;
    }
    CtxObject *ctx = mon_ctx(NULL);
    if (ctx == NULL) {
        Py_RETURN_NONE;
    }
    PyCodeObject *caller = shadow_top(ctx);
    fh_slot *slot = fh_sites_find(&ctx->sites, ml, caller, FH_SITE_C);
    if (slot == NULL) {
        PyObject *fn = mon_c_function(callable, args[3]);
        slot = fn != NULL ? fh_intern_c_slow(ctx, fn, ml, caller) : NULL;
        Py_XDECREF(fn);
        if (slot == NULL) {
            fh_ctx_break(ctx);
            Py_RETURN_NONE;
        }
    }
    ctx_push(ctx, FH_EV_C_CALL, slot->key1 - 1, fh_ticks());
    Py_RETURN_NONE;
}

static inline PyObject *mon_c_end(PyObject *const *args, uint32_t kind) {
    if (mon_c_method(args[2], args[3]) != NULL) {
        CtxObject *ctx = mon_ctx(NULL);
        if (ctx != NULL) {
            ctx_push(ctx, kind, 0, fh_ticks());
        }
    }
    Py_RETURN_NONE;
}

PyObject *fh_mon_c_return(PyObject *self, PyObject *const *args, Py_ssize_t nargs) {
    return mon_c_end(args, FH_EV_C_RETURN);
}

PyObject *fh_mon_c_raise(PyObject *self, PyObject *const *args, Py_ssize_t nargs) {
    return mon_c_end(args, FH_EV_C_RAISE);
}

#endif
