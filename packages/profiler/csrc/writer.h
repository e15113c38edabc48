/* Event outputs written from the buffers (Chrome trace, speedscope), in C: each thread's
 * events are replayed (replay.h) and every visible call becomes text in a buffered output
 * at once, so no Python object is made per call. Names come pre-encoded as JSON, once per
 * function, from Python.
 *
 * Chrome: a begin ("B") and an end ("E") event per call, so each thread's timestamps are
 * in order. Calls are numbered ("id") by start time across threads, as the trees number
 * them: the threads are replayed side by side and the earliest pending call goes next.
 * speedscope: one evented profile per thread, open ("O") and close ("C") events. */
#ifndef FRAMEHOOK_PROFILER_WRITER_H
#define FRAMEHOOK_PROFILER_WRITER_H

#include <Python.h>

#include "replay.h"

#define FH_OUT_CHUNK (1 << 20)

/* Text output buffered in chunks handed to a Python write callable. */
typedef struct {
    PyObject *write;    /* borrowed */
    PyObject *progress; /* borrowed, or NULL: called with the calls written so far */
    char *buf;
    size_t len;
    uint64_t written_events;
} fh_out;

static int fh_out_flush(fh_out *o) {
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

static int fh_out_bytes(fh_out *o, const char *s, size_t n) {
    if (o->len + n > FH_OUT_CHUNK && fh_out_flush(o) < 0) {
        return -1;
    }
    if (n > FH_OUT_CHUNK) { /* (a name longer than a chunk) */
        PyObject *big = PyBytes_FromStringAndSize(s, (Py_ssize_t)n);
        if (big == NULL) {
            return -1;
        }
        PyObject *res = PyObject_CallOneArg(o->write, big);
        Py_DECREF(big);
        Py_XDECREF(res);
        return res == NULL ? -1 : 0;
    }
    memcpy(o->buf + o->len, s, n);
    o->len += n;
    return 0;
}

static inline int fh_out_str(fh_out *o, const char *s) { return fh_out_bytes(o, s, strlen(s)); }

/* A bytes object's contents (the pre-encoded JSON fragments). */
static inline int fh_out_obj(fh_out *o, PyObject *bytes) {
    return fh_out_bytes(o, PyBytes_AS_STRING(bytes), (size_t)PyBytes_GET_SIZE(bytes));
}

/* Decimal digits of v, written backwards ending at `end`; returns the first. */
static inline char *fh_digits(char *end, uint64_t v) {
    do {
        *--end = (char)('0' + v % 10);
        v /= 10;
    } while (v != 0);
    return end;
}

static int fh_out_i64(fh_out *o, int64_t v) {
    char tmp[24];
    char *end = tmp + sizeof(tmp);
    char *p = fh_digits(end, v < 0 ? (uint64_t)0 - (uint64_t)v : (uint64_t)v);
    if (v < 0) {
        *--p = '-';
    }
    return fh_out_bytes(o, p, (size_t)(end - p));
}

/* v / 10^decimals, exactly: at most `decimals` decimals, no trailing zeros (nanoseconds
 * as microseconds with 3, as milliseconds with 6). */
static int fh_out_fixed(fh_out *o, int64_t v, int decimals) {
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

static inline int fh_out_us(fh_out *o, int64_t ns) { return fh_out_fixed(o, ns, 3); }

/* A cursor over the events a finished thread keeps: its prefix, then its buffer. */
typedef struct {
    const fh_event *prefix;
    size_t nprefix;
    const fh_buffer *buf;
    const fh_block *blk; /* NULL: in the prefix (or done) */
    size_t pos;
    int in_prefix;
} fh_cursor;

static void fh_cursor_init(fh_cursor *c, const fh_event *prefix, size_t nprefix,
                           const fh_buffer *buf, size_t skip) {
    c->prefix = prefix;
    c->nprefix = nprefix;
    c->buf = buf;
    c->blk = buf->head;
    c->in_prefix = nprefix > 0;
    c->pos = c->in_prefix ? 0 : skip;
}

/* The next event, or NULL at the end. `skip` is the head block's first kept event. */
static const fh_event *fh_cursor_next(fh_cursor *c, size_t skip) {
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

static const fh_event *fh_cursor_peek(fh_cursor *c, size_t skip) {
    fh_cursor saved = *c;
    const fh_event *ev = fh_cursor_next(c, skip);
    *c = saved;
    return ev;
}

#endif
