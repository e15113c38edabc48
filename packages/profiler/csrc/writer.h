/* Event outputs written from the buffers (Chrome trace, speedscope, the Firefox
 * Profiler's samples), in C: each thread's events are replayed (replay.c) and every
 * visible call becomes text in a buffered output at once, so no Python object is made per
 * call. Names come pre-encoded as JSON, once per function, from Python. What the writers
 * share is declared here and lives in writer.c; each format has its own file (chrome.c,
 * speedscope.c, gecko.c).
 *
 * Chrome: a begin ("B") and an end ("E") event per call, so each thread's timestamps are
 * in order. Calls are numbered ("id") by start time across threads, as the trees number
 * them: the threads are replayed side by side and the earliest pending call goes next.
 * speedscope: one evented profile per thread, open ("O") and close ("C") events. */
#ifndef FRAMEHOOK_PROFILER_WRITER_H
#define FRAMEHOOK_PROFILER_WRITER_H

#include "profiler.h"

#pragma GCC visibility push(hidden) /* internal to the extension: see profiler.h */

#define FH_OUT_CHUNK (1 << 20)

/* Text output buffered in chunks handed to a Python write callable. */
typedef struct {
    PyObject *write;    /* borrowed */
    PyObject *progress; /* borrowed, or NULL: called with the calls written so far */
    char *buf;
    size_t len;
    uint64_t written_events;
} fh_out;

/* Hands the buffered text to `write` (then calls progress, if any); 0 or -1 with an
 * exception set, as every fh_out_* function. */
int fh_out_flush(fh_out *o);

/* The writers' inner loop: several pieces of text per call written, inline. */
static inline int fh_out_bytes(fh_out *o, const char *s, size_t n) {
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

/* Decimal digits of v, written backwards ending at `end`; returns the first. */
static inline char *fh_digits(char *end, uint64_t v) {
    do {
        *--end = (char)('0' + v % 10);
        v /= 10;
    } while (v != 0);
    return end;
}

static inline int fh_out_i64(fh_out *o, int64_t v) {
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
int fh_out_fixed(fh_out *o, int64_t v, int decimals);

static inline int fh_out_str(fh_out *o, const char *s) { return fh_out_bytes(o, s, strlen(s)); }

/* A bytes object's contents (the pre-encoded JSON fragments). */
static inline int fh_out_obj(fh_out *o, PyObject *bytes) {
    return fh_out_bytes(o, PyBytes_AS_STRING(bytes), (size_t)PyBytes_GET_SIZE(bytes));
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

void fh_cursor_init(fh_cursor *c, const fh_event *prefix, size_t nprefix, const fh_buffer *buf,
                    size_t skip);
/* The next event, or NULL at the end. `skip` is the head block's first kept event. */
const fh_event *fh_cursor_next(fh_cursor *c, size_t skip);
const fh_event *fh_cursor_peek(fh_cursor *c, size_t skip);

/* One thread being written, and the writing of all of them. */
typedef struct fh_wctx fh_wctx;

typedef struct {
    fh_wctx *w;
    CtxObject *ctx;
    Py_ssize_t index;  /* the thread's position among the finished contexts */
    fh_cursor cur;
    fh_replay st;
    Py_ssize_t pending; /* Chrome: the stack index of a call not written yet, or -1 */
    int done;
    PyObject *names;    /* borrowed: per function id, (name, args) JSON fragments (Chrome)
                           or the speedscope frame index */
    int64_t tid;
    int64_t last;       /* the last time written on the thread's track */
    int first;          /* speedscope: no event written yet */
} fh_wthread;

struct fh_wctx {
    fh_out out;
    fh_clockmap clock;
    int64_t origin;
    int64_t end_ns;
    int64_t pid;
    uint64_t next_id;
    PyObject *tag; /* callable(thread index, site key) -> bytes (Chrome), or NULL */
};

/* A time on a thread's track: from the start of recording, and never before the last one
 * written there (viewers need each track in order; a clock read on another core could in
 * principle be a few ticks behind). */
static inline int64_t track_time(fh_wthread *wt, int64_t ns) {
    int64_t at = ns - wt->w->origin;
    at = at < wt->last ? wt->last : at;
    wt->last = at;
    return at;
}

/* Plays a thread's events until a call is pending (Chrome) or its events end. */
int fh_wthread_advance(fh_wthread *wt, const fh_sink *sink);
/* Sets up a writer over the finished contexts; `threads` (one entry per context) gives
 * each its track id and names. Returns the contexts list (new) or NULL. */
PyObject *fh_writer_setup(TracerObject *self, fh_wctx *w, PyObject *write, PyObject *threads,
                          fh_wthread **out_wts, int chrome);
void fh_writer_teardown(fh_wctx *w, fh_wthread *wts, PyObject *ctxs);

#pragma GCC visibility pop

#endif
