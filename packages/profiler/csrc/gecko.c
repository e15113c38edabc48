/* The Firefox Profiler's samples of one thread, from its buffers (Tracer.write_gecko_samples).
 *
 * A traced thread fits the format's sample table as "tracing-ms" samples: one wherever the
 * stack changes (a call opens or closes), weighted by the time until the next change. The
 * replay (replay.c) interns each open call's stack as a (caller's stack, function id) node,
 * keeping its index in the frame's `path` slot (unused by writers), so the samples hold a
 * stack index each and the stack table is what was interned. The samples are written as
 * JSON columns; the stack table and the marked calls (annotations, cache lookups,
 * compiled regions) go back to Python, which writes the other tables. It reuses the
 * writers' thread state and replay loop (writer.c). */
#include "writer.h"

typedef struct {
    fh_wthread wt; /* first: the sink's argument is this struct */
    /* the stack table, and an open-addressing index of it by (prefix, fid) */
    int32_t *prefix;
    uint32_t *fid;
    size_t nstacks, capstacks;
    uint32_t *slots; /* stack index + 1, 0 when empty */
    size_t nslots;
    /* the samples: stack index (-1: none) and time from the start of recording, in ns */
    int32_t *stack;
    int64_t *at;
    size_t nsamples, capsamples;
    PyObject *markers; /* [(fid, start ns, end ns)] of the marked calls */
} fh_gecko;

static inline size_t gecko_hash(int32_t prefix, uint32_t fid, size_t mask) {
    uint64_t h = ((uint64_t)(uint32_t)prefix << 32 | fid) * 0x9E3779B97F4A7C15ull;
    return (size_t)(h >> 29) & mask;
}

static int gecko_grow_index(fh_gecko *g) {
    size_t n = g->nslots ? g->nslots * 2 : 1024;
    uint32_t *slots = (uint32_t *)PyMem_Calloc(n, sizeof(uint32_t));
    if (slots == NULL) {
        PyErr_NoMemory();
        return -1;
    }
    for (size_t i = 0; i < g->nstacks; i++) {
        size_t at = gecko_hash(g->prefix[i], g->fid[i], n - 1);
        while (slots[at] != 0) {
            at = (at + 1) & (n - 1);
        }
        slots[at] = (uint32_t)i + 1;
    }
    PyMem_Free(g->slots);
    g->slots = slots;
    g->nslots = n;
    return 0;
}

/* Doubles the capacity of two arrays that grow side by side (`initial` when empty). On
 * failure `cap` stays, and both arrays stay valid (one may have grown) and the caller's. */
static int gecko_grow_pair(void **a, size_t asize, void **b, size_t bsize, size_t *cap,
                           size_t initial) {
    size_t n = *cap ? *cap * 2 : initial;
    void *ga = PyMem_Realloc(*a, n * asize);
    if (ga == NULL) {
        PyErr_NoMemory();
        return -1;
    }
    *a = ga;
    void *gb = PyMem_Realloc(*b, n * bsize);
    if (gb == NULL) {
        PyErr_NoMemory();
        return -1;
    }
    *b = gb;
    *cap = n;
    return 0;
}

/* The stack of `fid` called from stack `prefix` (-1: a root), interned. -1 on error. */
static int64_t gecko_stack(fh_gecko *g, int32_t prefix, uint32_t fid) {
    if (2 * (g->nstacks + 1) > g->nslots && gecko_grow_index(g) < 0) {
        return -1;
    }
    size_t at = gecko_hash(prefix, fid, g->nslots - 1);
    for (; g->slots[at] != 0; at = (at + 1) & (g->nslots - 1)) {
        uint32_t i = g->slots[at] - 1;
        if (g->prefix[i] == prefix && g->fid[i] == fid) {
            return i;
        }
    }
    if (g->nstacks == g->capstacks &&
        gecko_grow_pair((void **)&g->prefix, sizeof(int32_t), (void **)&g->fid, sizeof(uint32_t),
                        &g->capstacks, 256) < 0) {
        return -1;
    }
    if (g->nstacks >= INT32_MAX) {
        PyErr_SetString(PyExc_OverflowError, "more distinct call stacks than the format numbers");
        return -1;
    }
    g->prefix[g->nstacks] = prefix;
    g->fid[g->nstacks] = fid;
    g->slots[at] = (uint32_t)g->nstacks + 1;
    return (int64_t)g->nstacks++;
}

static int gecko_sample(fh_gecko *g, int64_t ns, int32_t stack) {
    int64_t at = track_time(&g->wt, ns);
    if (g->nsamples > 0 && g->at[g->nsamples - 1] == at) {
        g->stack[g->nsamples - 1] = stack; /* nothing ran between: the later stack holds */
        return 0;
    }
    if (g->nsamples == g->capsamples &&
        gecko_grow_pair((void **)&g->stack, sizeof(int32_t), (void **)&g->at, sizeof(int64_t),
                        &g->capsamples, 4096) < 0) {
        return -1;
    }
    g->stack[g->nsamples] = stack;
    g->at[g->nsamples] = at;
    g->nsamples++;
    return 0;
}

static inline int32_t gecko_caller_stack(fh_replay *r, fh_frame *f) {
    return f->vparent >= 0 ? (int32_t)r->frames[f->vparent].path : -1;
}

static int gecko_open(void *arg, fh_replay *r, fh_frame *f) {
    fh_gecko *g = (fh_gecko *)arg;
    int64_t stack = gecko_stack(g, gecko_caller_stack(r, f), f->fid);
    if (stack < 0) {
        return -1;
    }
    f->path = (uint32_t)stack;
    return gecko_sample(g, f->start_ns, (int32_t)stack);
}

static int gecko_close(void *arg, fh_replay *r, fh_frame *f, int64_t end_ns) {
    fh_gecko *g = (fh_gecko *)arg;
    if (f->cls == FH_CLS_ANNOT || f->cls == FH_CLS_LOOKUP || f->cls == FH_CLS_REGION ||
        f->cls == FH_CLS_TASK) {
        int64_t origin = g->wt.w->origin;
        PyObject *marker = Py_BuildValue("(ILL)", f->fid, (long long)(f->start_ns - origin),
                                         (long long)(end_ns - origin));
        int rc = marker == NULL ? -1 : PyList_Append(g->markers, marker);
        Py_XDECREF(marker);
        if (rc < 0) {
            return -1;
        }
    }
    return gecko_sample(g, end_ns, gecko_caller_stack(r, f));
}

static const fh_sink gecko_sink = {gecko_open, gecko_close};

static void gecko_free(fh_gecko *g) {
    fh_replay_free(&g->wt.st);
    PyMem_Free(g->prefix);
    PyMem_Free(g->fid);
    PyMem_Free(g->slots);
    PyMem_Free(g->stack);
    PyMem_Free(g->at);
    Py_XDECREF(g->markers);
}

/* {"weightType":"tracing-ms","stack":[...],"time":[...],"weight":[...],"length":n} */
static int gecko_write_samples(fh_gecko *g, fh_out *o, int64_t end) {
    if (fh_out_str(o, "{\"weightType\":\"tracing-ms\",\"stack\":[") < 0) {
        return -1;
    }
    for (size_t i = 0; i < g->nsamples; i++) {
        if ((i > 0 && fh_out_str(o, ",") < 0) ||
            (g->stack[i] < 0 ? fh_out_str(o, "null") : fh_out_i64(o, g->stack[i])) < 0) {
            return -1;
        }
    }
    if (fh_out_str(o, "],\"time\":[") < 0) {
        return -1;
    }
    for (size_t i = 0; i < g->nsamples; i++) {
        if ((i > 0 && fh_out_str(o, ",") < 0) || fh_out_fixed(o, g->at[i], 6) < 0) {
            return -1;
        }
    }
    if (fh_out_str(o, "],\"weight\":[") < 0) {
        return -1;
    }
    for (size_t i = 0; i < g->nsamples; i++) {
        int64_t next = i + 1 < g->nsamples ? g->at[i + 1] : (end > g->at[i] ? end : g->at[i]);
        if ((i > 0 && fh_out_str(o, ",") < 0) || fh_out_fixed(o, next - g->at[i], 6) < 0) {
            return -1;
        }
    }
    return fh_out_str(o, "],\"length\":") < 0 || fh_out_i64(o, (int64_t)g->nsamples) < 0 ||
                   fh_out_str(o, "}") < 0
               ? -1
               : 0;
}

/* write_gecko_samples(write, index): writes the samples of the index-th recorded thread
 * (as the aggregates number them); returns (prefixes, fids, markers): the stack table as
 * two bytes of native int32 / uint32 (prefix -1: a root), and the marked calls as
 * (fid, start ns, end ns) from the start of recording. */
PyObject *fh_tracer_write_gecko_samples(TracerObject *self, PyObject *args) {
    PyObject *write;
    Py_ssize_t index;
    if (!PyArg_ParseTuple(args, "On:write_gecko_samples", &write, &index)) {
        return NULL;
    }
    PyObject *ctxs = fh_tracer_finished_contexts(self);
    if (ctxs == NULL) {
        return NULL;
    }
    if (index < 0 || index >= PyList_GET_SIZE(ctxs)) {
        PyErr_Format(PyExc_IndexError, "index: %zd recorded threads, no thread %zd",
                     PyList_GET_SIZE(ctxs), index);
        Py_DECREF(ctxs);
        return NULL;
    }
    fh_wctx w;
    memset(&w, 0, sizeof(w));
    fh_gecko g;
    memset(&g, 0, sizeof(g));
    PyObject *result = NULL;
    CtxObject *ctx = (CtxObject *)PyList_GET_ITEM(ctxs, index);
    w.out.write = write;
    fh_clockmap_set(&w.clock, self->t0_ticks, self->t0_ns, self->t1_ticks, self->t1_ns);
    w.origin = self->t0_ns;
    w.end_ns = self->t1_ns;
    g.wt.w = &w;
    g.wt.ctx = ctx;
    g.wt.index = index;
    g.wt.pending = -1;
    fh_replay_init(&g.wt.st);
    fh_cursor_init(&g.wt.cur, ctx->prefix, ctx->nprefix, &ctx->buf, ctx->skip);
    w.out.buf = (char *)PyMem_Malloc(FH_OUT_CHUNK);
    g.markers = PyList_New(0);
    if (w.out.buf == NULL || g.markers == NULL) {
        if (w.out.buf == NULL) {
            PyErr_NoMemory();
        }
        goto done;
    }
    if (fh_wthread_advance(&g.wt, &gecko_sink) < 0 ||
        gecko_write_samples(&g, &w.out, w.end_ns - w.origin) < 0 || fh_out_flush(&w.out) < 0) {
        goto done;
    }
    /* (y# makes None of a NULL pointer: a thread with no visible call has no table) */
    result = Py_BuildValue("(y#y#O)", g.prefix ? (const char *)g.prefix : "",
                           (Py_ssize_t)(g.nstacks * sizeof(int32_t)),
                           g.fid ? (const char *)g.fid : "",
                           (Py_ssize_t)(g.nstacks * sizeof(uint32_t)), g.markers);
done:
    gecko_free(&g);
    PyMem_Free(w.out.buf);
    Py_DECREF(ctxs);
    return result;
}
