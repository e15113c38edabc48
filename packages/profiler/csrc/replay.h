/* Replaying one thread's events against a stack of open frames, in C.
 *
 * The rules are those of the Python tree builder (_trees.build_thread): calls push, exits
 * pop down to the nearest frame of their kind, calls of hidden code (the profiler's own)
 * are left out while their callees go to the nearest visible caller, and a muted call is
 * left out with everything under it. A sink sees each visible frame open and close; the
 * aggregates and the event writers are such sinks, so none of them needs a Python object
 * per call. */
#ifndef FRAMEHOOK_PROFILER_REPLAY_H
#define FRAMEHOOK_PROFILER_REPLAY_H

#include <Python.h>
#include <math.h>
#include <stdint.h>

#include "buffer.h"
#include "sites.h"

/* Event kinds, as stored in fh_event.kind (exported to Python under the same names). */
enum {
    FH_EV_PY_CALL = 1,
    FH_EV_PY_RETURN = 2,
    FH_EV_PY_UNWIND = 3, /* a Python frame left by an exception */
    FH_EV_C_CALL = 4,
    FH_EV_C_RETURN = 5,
    FH_EV_C_RAISE = 6,
    FH_EV_START_FRAME = 7, /* a frame already running when recording started */
    FH_EV_TAG = 8,         /* the instance of the tagged call just entered */
    FH_EV_ANNOT_BEGIN = 9,
    FH_EV_ANNOT_END = 10,
    FH_EV_TASK_BEGIN = 11, /* asyncio (async_tasks): a task's step, or the wait before it */
    FH_EV_TASK_END = 12,
    FH_EV_RUNTIME = 16 /* + the runtime's event number (1..4) */
};

/* What a frame is, for the exits that close it (and for the outputs' categories). */
enum { FH_CLS_PY = 0, FH_CLS_C = 1, FH_CLS_ANNOT = 2, FH_CLS_LOOKUP = 3, FH_CLS_REGION = 4,
       FH_CLS_TASK = 5, FH_N_CLS = 6 };

/* Ticks to monotonic nanoseconds, rounded per timestamp exactly as _trees._Clock does. */
typedef struct {
    uint64_t t0;
    int64_t ns0;
    double scale;
} fh_clockmap;

static inline void fh_clockmap_set(fh_clockmap *c, uint64_t t0, int64_t ns0, uint64_t t1,
                                   int64_t ns1) {
    c->t0 = t0;
    c->ns0 = ns0;
    c->scale = t1 != t0 ? (double)(ns1 - ns0) / (double)(int64_t)(t1 - t0) : 1.0;
}

static inline int64_t fh_clockmap_ns(const fh_clockmap *c, uint64_t t) {
    /* nearbyint rounds half to even in the default mode, as Python's round() */
    return c->ns0 + (int64_t)nearbyint((double)(int64_t)(t - c->t0) * c->scale);
}

typedef struct {
    int64_t start_ns;
    int64_t child_ns; /* durations of the visible frames directly under this one */
    uint64_t t;       /* the push event itself, kept for snapshots */
    uint32_t key;
    uint32_t kind;
    uint32_t fid;
    uint32_t kid;     /* the function's pstats label (see fh_site.kid) */
    uint32_t pair;    /* aggregates: caller/callee pair (by label), or FH_NONE */
    uint32_t path;    /* aggregates: call path node */
    uint32_t tag;     /* writers: the instance site + 1, or 0 */
    /* aggregates: the last callee opened under this frame, its pair and path (callers
     * mostly call the same function again: a loop, a recursion) */
    uint32_t last_fid, last_pair, last_path;
    uint64_t id;      /* writers: the event's number */
    int32_t vparent;  /* index of the nearest visible frame below, or -1 */
    uint8_t cls;
    uint8_t hidden;
    uint8_t outer;      /* aggregates: no open frame of the same function below */
    uint8_t key_outer;  /* aggregates: no open frame of the same pstats label below */
    uint8_t pair_outer; /* aggregates: no open frame of the same pair below */
    uint8_t exception;
    uint8_t start_frame;
} fh_frame;

#define FH_NONE UINT32_MAX

typedef struct fh_replay fh_replay;

/* A sink's callbacks return 0, or -1 with an exception set (which stops the replay). */
typedef struct {
    int (*open)(void *sink, fh_replay *r, fh_frame *f);
    int (*close)(void *sink, fh_replay *r, fh_frame *f, int64_t end_ns);
} fh_sink;

struct fh_replay {
    fh_frame *frames;
    size_t depth;
    size_t cap;
    Py_ssize_t muted_depth; /* depth of the open muted call, -1 when none */
};

static inline void fh_replay_init(fh_replay *r) {
    r->frames = NULL;
    r->depth = 0;
    r->cap = 0;
    r->muted_depth = -1;
}

static inline void fh_replay_free(fh_replay *r) {
    PyMem_RawFree(r->frames);
    fh_replay_init(r);
}

static int fh_replay_push(fh_replay *r, const fh_event *ev, int cls, uint32_t fid, uint32_t kid,
                          int hidden, int start_frame, int64_t ns, const fh_sink *sink,
                          void *arg) {
    if (r->depth == r->cap) {
        size_t ncap = r->cap ? r->cap * 2 : 64;
        fh_frame *grown = (fh_frame *)PyMem_RawRealloc(r->frames, ncap * sizeof(fh_frame));
        if (grown == NULL) {
            PyErr_NoMemory();
            return -1;
        }
        r->frames = grown;
        r->cap = ncap;
    }
    fh_frame *f = &r->frames[r->depth];
    memset(f, 0, sizeof(*f));
    f->start_ns = ns;
    f->t = ev->t;
    f->key = ev->key;
    f->kind = ev->kind;
    f->fid = fid;
    f->kid = kid;
    f->pair = FH_NONE;
    f->last_fid = FH_NONE;
    f->cls = (uint8_t)cls;
    f->hidden = (uint8_t)(hidden || r->muted_depth >= 0 || fid == FH_NONE || kid == FH_NONE);
    f->start_frame = (uint8_t)start_frame;
    if (r->depth == 0) {
        f->vparent = -1;
    } else {
        const fh_frame *below = &r->frames[r->depth - 1];
        f->vparent = below->hidden ? below->vparent : (int32_t)(r->depth - 1);
    }
    r->depth++;
    return f->hidden || sink->open == NULL ? 0 : sink->open(arg, r, f);
}

/* Closes the frames from the top down to index `to`, innermost first. */
static int fh_replay_close_to(fh_replay *r, size_t to, int64_t end_ns, const fh_sink *sink,
                              void *arg) {
    while (r->depth > to) {
        fh_frame *f = &r->frames[r->depth - 1];
        if (!f->hidden && sink->close != NULL && sink->close(arg, r, f, end_ns) < 0) {
            return -1;
        }
        r->depth--;
    }
    return 0;
}

/* The index of the topmost frame of class `cls`, or -1. */
static inline Py_ssize_t fh_replay_find(const fh_replay *r, int cls) {
    for (Py_ssize_t d = (Py_ssize_t)r->depth - 1; d >= 0; d--) {
        if (r->frames[d].cls == cls) {
            return d;
        }
    }
    return -1;
}

static int fh_replay_pop_until(fh_replay *r, int cls, int64_t ns, int exception,
                               const fh_sink *sink, void *arg) {
    Py_ssize_t d = fh_replay_find(r, cls);
    if (d < 0) {
        return 0;
    }
    /* only the frame the exit is about is marked, as the tree builder does */
    r->frames[d].exception = (uint8_t)exception;
    return fh_replay_close_to(r, (size_t)d, ns, sink, arg);
}

/* Plays one event. `sites` is the thread's table (fid and flags of each key). */
static int fh_replay_event(fh_replay *r, const fh_event *ev, const fh_sites *sites,
                           const fh_clockmap *clock, const fh_sink *sink, void *arg) {
    if ((Py_ssize_t)r->depth <= r->muted_depth) { /* the muted call has returned */
        r->muted_depth = -1;
    }
    uint32_t kind = ev->kind;
    const fh_site *site = ev->key < sites->nsites ? &sites->sites[ev->key] : NULL;
    int64_t ns = fh_clockmap_ns(clock, ev->t);
    switch (kind) {
    case FH_EV_PY_CALL:
    case FH_EV_START_FRAME: {
        if (site == NULL) {
            return 0;
        }
        if (kind == FH_EV_PY_CALL && (site->flags & FH_FLAG_MUTED) && r->muted_depth < 0) {
            r->muted_depth = (Py_ssize_t)r->depth;
        }
        return fh_replay_push(r, ev, FH_CLS_PY, site->fid, site->kid,
                              (site->flags & FH_FLAG_HIDDEN) != 0, kind == FH_EV_START_FRAME, ns,
                              sink, arg);
    }
    case FH_EV_PY_RETURN:
    case FH_EV_PY_UNWIND:
        return fh_replay_pop_until(r, FH_CLS_PY, ns, kind == FH_EV_PY_UNWIND, sink, arg);
    case FH_EV_C_CALL:
        return site == NULL ? 0
                            : fh_replay_push(r, ev, FH_CLS_C, site->fid, site->kid, 0, 0, ns,
                                             sink, arg);
    case FH_EV_C_RETURN:
    case FH_EV_C_RAISE:
        if (r->depth > 0 && r->frames[r->depth - 1].cls == FH_CLS_C) {
            r->frames[r->depth - 1].exception = kind == FH_EV_C_RAISE;
            return fh_replay_close_to(r, r->depth - 1, ns, sink, arg);
        }
        return 0;
    case FH_EV_TAG:
        if (r->depth > 0) {
            r->frames[r->depth - 1].tag = ev->key + 1;
        }
        return 0;
    case FH_EV_ANNOT_BEGIN:
        return site == NULL ? 0
                            : fh_replay_push(r, ev, FH_CLS_ANNOT, site->fid, site->kid, 0, 0, ns,
                                             sink, arg);
    case FH_EV_ANNOT_END:
        return fh_replay_pop_until(r, FH_CLS_ANNOT, ns, 0, sink, arg);
    case FH_EV_TASK_BEGIN:
        return site == NULL ? 0
                            : fh_replay_push(r, ev, FH_CLS_TASK, site->fid, site->kid, 0, 0, ns,
                                             sink, arg);
    case FH_EV_TASK_END:
        return fh_replay_pop_until(r, FH_CLS_TASK, ns, 0, sink, arg);
    case FH_EV_RUNTIME + 1:
    case FH_EV_RUNTIME + 3:
        if (site == NULL) {
            return 0;
        }
        return fh_replay_push(r, ev, kind == FH_EV_RUNTIME + 1 ? FH_CLS_LOOKUP : FH_CLS_REGION,
                              kind == FH_EV_RUNTIME + 1 ? site->fid : site->fid2,
                              kind == FH_EV_RUNTIME + 1 ? site->kid : site->kid2, 0, 0, ns,
                              sink, arg);
    case FH_EV_RUNTIME + 2:
        return fh_replay_pop_until(r, FH_CLS_LOOKUP, ns, 0, sink, arg);
    case FH_EV_RUNTIME + 4:
        return fh_replay_pop_until(r, FH_CLS_REGION, ns, 0, sink, arg);
    default:
        return 0;
    }
}

/* Closes everything still open at the end of the recording. */
static inline int fh_replay_finish(fh_replay *r, int64_t end_ns, const fh_sink *sink, void *arg) {
    return fh_replay_close_to(r, 0, end_ns, sink, arg);
}

#endif
