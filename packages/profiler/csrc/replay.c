/* Replaying one thread's events (replay.h): the frame stack's pushes and pops, and the
 * rules by which each event kind opens or closes frames. */
#include "profiler.h"

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
int fh_replay_close_to(fh_replay *r, size_t to, int64_t end_ns, const fh_sink *sink,
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
int fh_replay_event(fh_replay *r, const fh_event *ev, const fh_sites *sites,
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
    case FH_EV_ANNOT_BEGIN: /* named regions: an annotation, or an asyncio task's step */
    case FH_EV_TASK_BEGIN:
        return site == NULL ? 0
                            : fh_replay_push(r, ev,
                                             kind == FH_EV_ANNOT_BEGIN ? FH_CLS_ANNOT : FH_CLS_TASK,
                                             site->fid, site->kid, 0, 0, ns, sink, arg);
    case FH_EV_ANNOT_END:
    case FH_EV_TASK_END:
        return fh_replay_pop_until(r, kind == FH_EV_ANNOT_END ? FH_CLS_ANNOT : FH_CLS_TASK, ns, 0,
                                   sink, arg);
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
