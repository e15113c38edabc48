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

#pragma GCC visibility push(hidden) /* internal to the extension: see profiler.h */

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

/* Closes the frames from the top down to index `to`, innermost first. */
int fh_replay_close_to(fh_replay *r, size_t to, int64_t end_ns, const fh_sink *sink, void *arg);
/* Plays one event. `sites` is the thread's table (fid and flags of each key). */
int fh_replay_event(fh_replay *r, const fh_event *ev, const fh_sites *sites,
                    const fh_clockmap *clock, const fh_sink *sink, void *arg);

/* Closes everything still open at the end of the recording. */
static inline int fh_replay_finish(fh_replay *r, int64_t end_ns, const fh_sink *sink, void *arg) {
    return fh_replay_close_to(r, 0, end_ns, sink, arg);
}

#pragma GCC visibility pop

#endif
