/* The thread context (ThreadContext): the object handed to one thread's profile function,
 * holding what that thread records (its buffer, its site tables, its aggregates once
 * folded). */
#include "profiler.h"

CtxObject *fh_ctx_new(TracerObject *tracer, unsigned long thread_id) {
    CtxObject *ctx = PyObject_GC_New(CtxObject, &fh_CtxType);
    if (ctx == NULL) {
        return NULL;
    }
    ctx->tracer = tracer;
    ctx->thread_id = thread_id;
    ctx->serial = tracer->next_serial++;
    ctx->tstate = NULL;
    ctx->recording = 0;
    ctx->claimed = 0;
    ctx->c_calls = tracer->c_calls;
    ctx->broken = 0;
    ctx->unstarted = 0;
    ctx->released = 0;
    ctx->spawning = 0;
    ctx->spawn_floor = 0;
    memset(&ctx->prev, 0, sizeof(ctx->prev));
    ctx->depth = 0;
    ctx->task = ctx->home = NULL;
    ctx->task_ref = ctx->task_name = NULL;
    ctx->suspended = 0;
    fh_buffer_init(&ctx->buf);
    ctx->max_blocks = tracer->max_events > 0
                          ? ((size_t)tracer->max_events + FH_BLOCK_EVENTS - 1) / FH_BLOCK_EVENTS + 1
                          : 0;
    ctx->fid_index = NULL;
    ctx->kid_index = NULL;
    ctx->kid_fid = NULL;
    ctx->nkids = 0;
    ctx->kid_cap = 0;
    ctx->agg = NULL;
    ctx->dropped = 0;
    ctx->finalized = 0;
    ctx->agg_broken = 0;
    ctx->prefix = NULL;
    ctx->nprefix = 0;
    ctx->skip = 0;
    memset(&ctx->sites, 0, sizeof(ctx->sites));
    memset(&ctx->funcs, 0, sizeof(ctx->funcs));
    if (fh_sites_init(&ctx->sites) < 0 || fh_sites_init(&ctx->funcs) < 0) {
        Py_DECREF(ctx);
        return NULL;
    }
    PyObject_GC_Track(ctx);
    return ctx;
}

static int ctx_traverse(CtxObject *self, visitproc visit, void *arg) {
    int rc = fh_stage_traverse(&self->prev, visit, arg);
    if (rc == 0) {
        rc = fh_sites_traverse(&self->sites, visit, arg);
    }
    if (rc != 0) {
        return rc;
    }
    Py_VISIT(self->fid_index);
    Py_VISIT(self->kid_index);
    Py_VISIT(self->task_ref);
    Py_VISIT(self->task_name);
    return fh_sites_traverse(&self->funcs, visit, arg);
}

static int ctx_clear(CtxObject *self) {
    fh_stage_release(&self->prev); /* (stop releases it first: this is only a fallback) */
    fh_sites_clear(&self->sites);
    fh_sites_clear(&self->funcs);
    Py_CLEAR(self->fid_index);
    Py_CLEAR(self->kid_index);
    Py_CLEAR(self->task_ref);
    Py_CLEAR(self->task_name);
    return 0;
}

static void ctx_dealloc(CtxObject *self) {
    PyObject_GC_UnTrack(self);
    fh_stage_release(&self->prev);
    fh_sites_free(&self->sites);
    fh_sites_free(&self->funcs);
    Py_CLEAR(self->fid_index);
    Py_CLEAR(self->kid_index);
    Py_CLEAR(self->task_ref);
    Py_CLEAR(self->task_name);
    PyMem_Free(self->kid_fid);
    fh_buffer_free(&self->buf);
    if (self->agg != NULL) {
        fh_agg_free(self->agg);
        PyMem_RawFree(self->agg);
    }
    PyMem_RawFree(self->prefix);
    PyObject_GC_Del(self);
}

PyTypeObject fh_CtxType = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "framehook.profiler._tracer.ThreadContext",
    .tp_doc = "Per-thread recording state of a Tracer (internal).",
    .tp_basicsize = sizeof(CtxObject),
    .tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_HAVE_GC,
    .tp_dealloc = (destructor)ctx_dealloc,
    .tp_traverse = (traverseproc)ctx_traverse,
    .tp_clear = (inquiry)ctx_clear,
};

/* Marks the thread as stopped for good after a failure inside the profile function,
 * which must not raise: the data recorded so far stays valid. */
void fh_ctx_break(CtxObject *ctx) {
    PyErr_Clear();
    ctx->broken = 1;
    ctx->recording = 0;
}
