/* What the streamed outputs share (writer.h): text buffered in chunks for a Python write
 * callable, the cursor over a finished thread's events, and the per-thread writer state
 * with the replay loop that drives a format's sink. */
#include "writer.h"

int fh_out_flush(fh_out *o) {
    if (o->len == 0) {
        return 0;
    }
    PyObject *chunk = PyBytes_FromStringAndSize(o->buf, (Py_ssize_t)o->len);
    if (chunk == NULL) {
        return -1;
    }
    PyObject *res = PyObject_CallOneArg(o->write, chunk);
    Py_DECREF(chunk);
    if (res == NULL) {
        return -1;
    }
    Py_DECREF(res);
    o->len = 0;
    if (o->progress != NULL) {
        res = PyObject_CallFunction(o->progress, "K", (unsigned long long)o->written_events);
        if (res == NULL) {
            return -1;
        }
        Py_DECREF(res);
    }
    return 0;
}

/* v / 10^decimals, exactly: at most `decimals` decimals, no trailing zeros (nanoseconds
 * as microseconds with 3, as milliseconds with 6). */
int fh_out_fixed(fh_out *o, int64_t v, int decimals) {
    char tmp[40];
    char *end = tmp + sizeof(tmp);
    char *p = end;
    uint64_t a = v < 0 ? (uint64_t)0 - (uint64_t)v : (uint64_t)v;
    static const uint64_t units[] = {1, 10, 100, 1000, 10000, 100000, 1000000};
    uint64_t unit = units[decimals]; /* (decimals: 0 to 6) */
    uint64_t frac = a % unit;
    if (frac != 0) {
        int width = decimals;
        while (frac % 10 == 0) {
            frac /= 10;
            width--;
        }
        for (int i = 0; i < width; i++) {
            *--p = (char)('0' + frac % 10);
            frac /= 10;
        }
        *--p = '.';
    }
    p = fh_digits(p, a / unit);
    if (v < 0) {
        *--p = '-';
    }
    return fh_out_bytes(o, p, (size_t)(end - p));
}

void fh_cursor_init(fh_cursor *c, const fh_event *prefix, size_t nprefix,
                    const fh_buffer *buf, size_t skip) {
    c->prefix = prefix;
    c->nprefix = nprefix;
    c->buf = buf;
    c->blk = buf->head;
    c->in_prefix = nprefix > 0;
    c->pos = c->in_prefix ? 0 : skip;
}

/* The next event, or NULL at the end. `skip` is the head block's first kept event. */
const fh_event *fh_cursor_next(fh_cursor *c, size_t skip) {
    if (c->in_prefix) {
        if (c->pos < c->nprefix) {
            return &c->prefix[c->pos++];
        }
        c->in_prefix = 0;
        c->pos = skip;
    }
    while (c->blk != NULL) {
        size_t used = fh_block_used(c->buf, c->blk);
        if (c->pos < used) {
            return &c->blk->ev[c->pos++];
        }
        c->blk = c->blk->next;
        c->pos = 0;
    }
    return NULL;
}

const fh_event *fh_cursor_peek(fh_cursor *c, size_t skip) {
    fh_cursor saved = *c;
    const fh_event *ev = fh_cursor_next(c, skip);
    *c = saved;
    return ev;
}

/* Plays a thread's events until a call is pending (Chrome) or its events end. */
int fh_wthread_advance(fh_wthread *wt, const fh_sink *sink) {
    while (wt->pending < 0 && !wt->done) {
        const fh_event *ev = fh_cursor_next(&wt->cur, wt->ctx->skip);
        int rc;
        if (ev == NULL) {
            wt->done = 1;
            rc = fh_replay_finish(&wt->st, wt->w->end_ns, sink, wt);
        } else {
            rc = fh_replay_event(&wt->st, ev, &wt->ctx->sites, &wt->w->clock, sink, wt);
        }
        if (rc < 0) {
            return -1;
        }
    }
    return 0;
}

/* Checks what Python passed for one thread: per function id, a (bytes, bytes) pair
 * (Chrome) or an int (speedscope). */
static int check_names(CtxObject *ctx, PyObject *names, int chrome) {
    if (!PyList_Check(names) || PyList_GET_SIZE(names) < (Py_ssize_t)ctx->funcs.nsites) {
        PyErr_SetString(PyExc_TypeError, "names: a list with an entry per function of the thread");
        return -1;
    }
    for (Py_ssize_t i = 0; i < PyList_GET_SIZE(names); i++) {
        PyObject *item = PyList_GET_ITEM(names, i);
        int ok = chrome ? PyTuple_Check(item) && PyTuple_GET_SIZE(item) == 2 &&
                              PyBytes_Check(PyTuple_GET_ITEM(item, 0)) &&
                              PyBytes_Check(PyTuple_GET_ITEM(item, 1))
                        : PyLong_Check(item);
        if (!ok) {
            PyErr_SetString(PyExc_TypeError, chrome ? "names: (bytes, bytes) per function"
                                                    : "names: an int per function");
            return -1;
        }
    }
    return 0;
}

/* Sets up a writer over the finished contexts; `threads` (one entry per context) gives
 * each its track id and names. Returns the contexts list (new) or NULL. */
PyObject *fh_writer_setup(TracerObject *self, fh_wctx *w, PyObject *write, PyObject *threads,
                          fh_wthread **out_wts, int chrome) {
    PyObject *ctxs = fh_tracer_finished_contexts(self);
    if (ctxs == NULL) {
        return NULL;
    }
    Py_ssize_t n = PyList_GET_SIZE(ctxs);
    if (!PyList_Check(threads) || PyList_GET_SIZE(threads) != n) {
        PyErr_Format(PyExc_ValueError, "threads: a list of %zd entries, one per recorded thread", n);
        Py_DECREF(ctxs);
        return NULL;
    }
    fh_wthread *wts = (fh_wthread *)PyMem_Calloc((size_t)n + 1, sizeof(fh_wthread));
    w->out.buf = (char *)PyMem_Malloc(FH_OUT_CHUNK);
    if (wts == NULL || w->out.buf == NULL) {
        PyMem_Free(wts);
        PyMem_Free(w->out.buf);
        w->out.buf = NULL;
        Py_DECREF(ctxs);
        PyErr_NoMemory();
        return NULL;
    }
    w->out.write = write;
    w->out.len = 0; /* (out.progress is the caller's) */
    w->out.written_events = 0;
    fh_clockmap_set(&w->clock, self->t0_ticks, self->t0_ns, self->t1_ticks, self->t1_ns);
    w->origin = self->t0_ns;
    w->end_ns = self->t1_ns;
    w->next_id = 0;
    for (Py_ssize_t i = 0; i < n; i++) {
        fh_wthread *wt = &wts[i];
        CtxObject *ctx = (CtxObject *)PyList_GET_ITEM(ctxs, i);
        PyObject *entry = PyList_GET_ITEM(threads, i);
        wt->w = w;
        wt->ctx = ctx;
        wt->index = i;
        wt->pending = -1;
        wt->first = 1;
        fh_replay_init(&wt->st);
        fh_cursor_init(&wt->cur, ctx->prefix, ctx->nprefix, &ctx->buf, ctx->skip);
        if (!PyTuple_Check(entry) || PyTuple_GET_SIZE(entry) != 2) {
            PyErr_SetString(PyExc_TypeError, "threads: (track, names) per thread");
            goto error;
        }
        PyObject *track = PyTuple_GET_ITEM(entry, 0);
        wt->names = PyTuple_GET_ITEM(entry, 1);
        if (chrome) {
            wt->tid = PyLong_AsLongLong(track);
            if (wt->tid == -1 && PyErr_Occurred()) {
                goto error;
            }
        } else if (!PyBytes_Check(track)) {
            PyErr_SetString(PyExc_TypeError, "threads: (header bytes, names) per thread");
            goto error;
        }
        if (check_names(ctx, wt->names, chrome) < 0) {
            goto error;
        }
    }
    *out_wts = wts;
    return ctxs;

error:
    PyMem_Free(wts);
    PyMem_Free(w->out.buf);
    w->out.buf = NULL;
    Py_DECREF(ctxs);
    return NULL;
}

void fh_writer_teardown(fh_wctx *w, fh_wthread *wts, PyObject *ctxs) {
    for (Py_ssize_t i = 0; i < PyList_GET_SIZE(ctxs); i++) {
        fh_replay_free(&wts[i].st);
    }
    PyMem_Free(wts);
    PyMem_Free(w->out.buf);
    Py_DECREF(ctxs);
}
