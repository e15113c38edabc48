/* After stop: each thread's context finalized once (what max_events dropped and what is
 * still open folded into its aggregates), then aggregate() and collect() hand the
 * aggregates or the raw events, with the site tables that name them, to Python. */
#include "profiler.h"

static PyObject *site_tuple(const fh_site *site) {
    return Py_BuildValue("(IOOOI)", site->kind, site->a != NULL ? site->a : Py_None,
                         site->b != NULL ? site->b : Py_None,
                         site->info != NULL ? site->info : Py_None, site->flags);
}

/* Runs fn over the events a finished context keeps, in order: the prefix (the frames open
 * where they begin), then the buffer from the head block's first unfolded event. */
typedef int (*fh_events_fn)(void *arg, const fh_event *ev, size_t n);

static int ctx_each_run(CtxObject *ctx, fh_events_fn fn, void *arg) {
    if (ctx->nprefix > 0 && fn(arg, ctx->prefix, ctx->nprefix) < 0) {
        return -1;
    }
    for (fh_block *blk = ctx->buf.head; blk != NULL; blk = blk->next) {
        size_t from = blk == ctx->buf.head ? ctx->skip : 0;
        size_t used = fh_block_used(&ctx->buf, blk);
        if (used > from && fn(arg, blk->ev + from, used - from) < 0) {
            return -1;
        }
    }
    return 0;
}

/* Events a finished context keeps (its prefix included). */
size_t fh_ctx_kept(CtxObject *ctx) {
    return ctx->nprefix + fh_buffer_count(&ctx->buf) - ctx->skip;
}

typedef struct {
    fh_agg *agg;
    const fh_sites *sites;
    const fh_clockmap *clock;
} fh_fold_args;

static int fold_run(void *arg, const fh_event *ev, size_t n) {
    fh_fold_args *f = (fh_fold_args *)arg;
    return fh_agg_fold(f->agg, ev, n, f->sites, f->clock);
}

/* After stop, once per context: folds what exceeds max_events (the oldest events), keeps
 * the stack where the kept events begin as their prefix, then folds the kept events too
 * and closes what is still open at the stop time, which completes the aggregates.
 * 0, or -1 with an exception set. */
static int ctx_finalize(CtxObject *ctx, TracerObject *tracer) {
    if (ctx->finalized) {
        if (ctx->finalized > 0) {
            return 0;
        }
        PyErr_SetString(PyExc_MemoryError, "memory ran out while the profile's aggregates "
                                           "were made: they are not available");
        return -1;
    }
    ctx->finalized = -1; /* until it succeeds */
    fh_clockmap clock;
    fh_clockmap_set(&clock, tracer->t0_ticks, tracer->t0_ns, tracer->t1_ticks, tracer->t1_ns);
    if (ctx->agg == NULL) {
        fh_agg *agg = (fh_agg *)PyMem_RawMalloc(sizeof(fh_agg));
        if (agg == NULL) {
            PyErr_NoMemory();
            return -1;
        }
        if (fh_agg_init(agg) < 0) {
            PyMem_RawFree(agg);
            return -1;
        }
        ctx->agg = agg;
    }
    fh_buffer *b = &ctx->buf;
    size_t count = fh_buffer_count(b);
    size_t limit = (size_t)tracer->max_events;
    size_t excess = limit > 0 && count > limit ? count - limit : 0;
    while (excess > 0 && b->head != NULL) {
        size_t used = fh_block_used(b, b->head);
        size_t n = used - ctx->skip < excess ? used - ctx->skip : excess;
        if (fh_agg_fold(ctx->agg, b->head->ev + ctx->skip, n, &ctx->sites, &clock) < 0) {
            return -1;
        }
        ctx->skip += n;
        ctx->dropped += n;
        excess -= n;
        if (ctx->skip == used && b->head != b->tail) {
            fh_buffer_drop_head(b);
            ctx->skip = 0;
        }
    }
    const fh_replay *st = &ctx->agg->stack;
    if (st->depth > 0) {
        ctx->prefix = (fh_event *)PyMem_RawMalloc(st->depth * sizeof(fh_event));
        if (ctx->prefix == NULL) {
            PyErr_NoMemory();
            return -1;
        }
        for (size_t i = 0; i < st->depth; i++) {
            ctx->prefix[i].t = st->frames[i].t;
            ctx->prefix[i].key = st->frames[i].key;
            ctx->prefix[i].kind = st->frames[i].kind;
        }
        ctx->nprefix = st->depth;
    }
    /* the prefix is already on the aggregates' stack: only the buffer is folded */
    size_t nprefix = ctx->nprefix;
    ctx->nprefix = 0;
    fh_fold_args args = {ctx->agg, &ctx->sites, &clock};
    int rc = ctx_each_run(ctx, fold_run, &args);
    ctx->nprefix = nprefix;
    if (rc < 0 || fh_replay_finish(&ctx->agg->stack, tracer->t1_ns, &fh_agg_sink, ctx->agg) < 0) {
        return -1;
    }
    ctx->finalized = 1;
    return 0;
}

/* The contexts of a stopped tracer that recorded a thread, finalized; a new list. */
PyObject *fh_tracer_finished_contexts(TracerObject *self) {
    if (self->state == FH_RECORDING) {
        PyErr_SetString(PyExc_RuntimeError, "stop the profiler before collecting its events");
        return NULL;
    }
    if (self->state == FH_NEW) {
        PyErr_SetString(PyExc_RuntimeError, "the profiler was never started");
        return NULL;
    }
    PyObject *out = PyList_New(0);
    if (out == NULL) {
        return NULL;
    }
    for (Py_ssize_t i = 0; !self->failed && self->ctxs != NULL && i < PyList_GET_SIZE(self->ctxs);
         i++) {
        CtxObject *ctx = (CtxObject *)PyList_GET_ITEM(self->ctxs, i);
        if (ctx->thread_id == 0) {
            continue; /* made for a thread that had not run, and did not while recording */
        }
        if (ctx_finalize(ctx, self) < 0 || PyList_Append(out, (PyObject *)ctx) < 0) {
            Py_DECREF(out);
            return NULL;
        }
    }
    return out;
}

static PyObject *sites_list(const fh_sites *t) {
    PyObject *sites = PyList_New((Py_ssize_t)t->nsites);
    if (sites == NULL) {
        return NULL;
    }
    for (size_t i = 0; i < t->nsites; i++) {
        PyObject *item = site_tuple(&t->sites[i]);
        if (item == NULL) {
            Py_DECREF(sites);
            return NULL;
        }
        PyList_SET_ITEM(sites, (Py_ssize_t)i, item);
    }
    return sites;
}

static int copy_run(void *arg, const fh_event *ev, size_t n) {
    char **out = (char **)arg;
    memcpy(*out, ev, n * sizeof(fh_event));
    *out += n * sizeof(fh_event);
    return 0;
}

static PyObject *ctx_collect(CtxObject *ctx) {
    size_t n = fh_ctx_kept(ctx);
    PyObject *events = PyBytes_FromStringAndSize(NULL, (Py_ssize_t)(n * sizeof(fh_event)));
    if (events == NULL) {
        return NULL;
    }
    char *out = PyBytes_AS_STRING(events);
    PyObject *sites = ctx_each_run(ctx, copy_run, &out) == 0 ? sites_list(&ctx->sites) : NULL;
    if (sites == NULL) {
        Py_DECREF(events);
        return NULL;
    }
    return Py_BuildValue("{s:k,s:K,s:N,s:N,s:O,s:K,s:O}", "thread_id", ctx->thread_id, "serial",
                         ctx->serial, "events", events, "sites", sites, "broken",
                         ctx->broken ? Py_True : Py_False, "dropped",
                         (unsigned long long)ctx->dropped, "task",
                         ctx->home != NULL ? Py_True : Py_False);
}

/* One thread's aggregates, with what names them: its sites, and per function id the
 * (first site, class) it was made from. */
static PyObject *ctx_aggregate(CtxObject *ctx) {
    if (ctx->agg_broken) {
        PyErr_SetString(PyExc_MemoryError, "memory ran out while a thread's events were "
                                           "aggregated: its aggregates are not exact");
        return NULL;
    }
    PyObject *tables = fh_agg_tables(ctx->agg);
    if (tables == NULL) {
        return NULL;
    }
    PyObject *funcs = PyList_New((Py_ssize_t)ctx->funcs.nsites);
    if (funcs == NULL) {
        Py_DECREF(tables);
        return NULL;
    }
    for (size_t i = 0; i < ctx->funcs.nsites; i++) {
        const fh_site *f = &ctx->funcs.sites[i];
        PyObject *item = Py_BuildValue("(II)", f->fid, f->kind - 1);
        if (item == NULL) {
            Py_DECREF(tables);
            Py_DECREF(funcs);
            return NULL;
        }
        PyList_SET_ITEM(funcs, (Py_ssize_t)i, item);
    }
    PyObject *key_funcs = PyList_New((Py_ssize_t)ctx->nkids);
    for (size_t i = 0; key_funcs != NULL && i < ctx->nkids; i++) {
        PyObject *fid = PyLong_FromUnsignedLong(ctx->kid_fid[i]);
        if (fid == NULL) {
            Py_CLEAR(key_funcs);
            break;
        }
        PyList_SET_ITEM(key_funcs, (Py_ssize_t)i, fid);
    }
    PyObject *sites = key_funcs != NULL ? sites_list(&ctx->sites) : NULL;
    if (sites == NULL || PyDict_SetItemString(tables, "sites", sites) < 0 ||
        PyDict_SetItemString(tables, "function_sites", funcs) < 0 ||
        PyDict_SetItemString(tables, "key_functions", key_funcs) < 0) {
        Py_XDECREF(sites);
        Py_XDECREF(key_funcs);
        Py_DECREF(funcs);
        Py_DECREF(tables);
        return NULL;
    }
    Py_DECREF(sites);
    Py_DECREF(key_funcs);
    Py_DECREF(funcs);
    PyObject *extra = Py_BuildValue("{s:k,s:K,s:O,s:K,s:K,s:O}", "thread_id", ctx->thread_id,
                                    "serial", ctx->serial, "broken",
                                    ctx->broken ? Py_True : Py_False, "events",
                                    (unsigned long long)(fh_ctx_kept(ctx) - ctx->nprefix), "dropped",
                                    (unsigned long long)ctx->dropped, "task",
                                    ctx->home != NULL ? Py_True : Py_False);
    if (extra == NULL || PyDict_Update(tables, extra) < 0) {
        Py_XDECREF(extra);
        Py_DECREF(tables);
        return NULL;
    }
    Py_DECREF(extra);
    return tables;
}

static PyObject *tracer_recording(TracerObject *self, PyObject *(*per_thread)(CtxObject *)) {
    PyObject *ctxs = fh_tracer_finished_contexts(self);
    if (ctxs == NULL) {
        return NULL;
    }
    PyObject *threads = PyList_New(PyList_GET_SIZE(ctxs));
    if (threads == NULL) {
        Py_DECREF(ctxs);
        return NULL;
    }
    for (Py_ssize_t i = 0; i < PyList_GET_SIZE(ctxs); i++) {
        PyObject *item = per_thread((CtxObject *)PyList_GET_ITEM(ctxs, i));
        if (item == NULL) {
            Py_DECREF(ctxs);
            Py_DECREF(threads);
            return NULL;
        }
        PyList_SET_ITEM(threads, i, item);
    }
    Py_DECREF(ctxs);
    return Py_BuildValue("{s:s,s:(KLKL),s:N}", "clock", FH_CLOCK_NAME,
                         "anchors", (unsigned long long)self->t0_ticks, (long long)self->t0_ns,
                         (unsigned long long)self->t1_ticks, (long long)self->t1_ns,
                         "threads", threads);
}

PyObject *fh_tracer_aggregate(TracerObject *self, PyObject *Py_UNUSED(ignored)) {
    return tracer_recording(self, ctx_aggregate);
}

PyObject *fh_tracer_collect(TracerObject *self, PyObject *Py_UNUSED(ignored)) {
    return tracer_recording(self, ctx_collect);
}
