/* framehook.profiler._tracer: the recording half of the profiler.
 *
 * A C profile function is installed on every thread of the interpreter, and on threads
 * started while recording: by the thread starting them, at the C return of the _thread
 * function that starts them (adopt_new_threads), or through a threading.setprofile hook.
 * Each thread records into its own context object: an append-only block buffer of
 * 16-byte events and a table interning call sites into small keys. Nothing is decoded
 * while recording, unless max_events bounds the buffer: then its oldest block is folded
 * into running aggregates (aggregate.h) before it is reused. After stop, aggregate()
 * gives the per-function, per-pair and per-path tables, write_chrome() and
 * write_speedscope() stream the events to a file (writer.h), and collect() hands the
 * raw events and the site table to Python, which builds the call trees on demand.
 *
 * Layout follows Modules/_lsprof.c: types first (thread context, tracer, annotations),
 * then the profile function, then the methods, then module init. */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <frameobject.h>
#include <string.h>
#include <structmember.h>

#include "aggregate.h"
#include "buffer.h"
#include "clock.h"
#include "compat.h"
#include "framehook_events.h"
#include "replay.h"
#include "sigterm.h"
#include "sites.h"
#include "writer.h"

#define FH_MAX_START_DEPTH 128
#define FH_SHADOW_DEPTH 512

enum { FH_NEW = 0, FH_RECORDING = 1, FH_STOPPED = 2, FH_REFUSED = 3 };

typedef struct TracerObject TracerObject;

/* ------------------------------------------------------------------------------------ */
/* Thread context: the object handed to the profile function of one thread.            */

typedef struct CtxObject CtxObject;

struct CtxObject {
    PyObject_HEAD
    TracerObject *tracer; /* borrowed; the tracer outlives recording (fh_active owns it) */
    unsigned long thread_id;
    /* This context's number in its tracer, in creation order: thread ids are reused once
     * a thread ends, so two recorded threads may share one; their serials differ. */
    unsigned long long serial;
    PyThreadState *tstate; /* only dereferenced while start() holds the GIL; with
                              sys.monitoring, compared until the thread claims the context */
    int recording;
    int claimed; /* sys.monitoring: the thread's own events found this context */
    int c_calls;
    int broken; /* memory ran out: this thread stopped recording, its data is kept */
    /* Profile function backend: a context made for a thread that may not have run yet (a
     * thread state without frames at start, or one adopt_new_threads found just created).
     * Its thread_id is 0 until the thread's first event (the thread writes its id without
     * the GIL before it first takes it), and `tstate` stays set (compared, never
     * dereferenced after install). Contexts whose thread_id stays 0 recorded nothing. */
    int unstarted;
    int released;      /* tracer_uninstall took this context's function off its thread */
    int spawning;      /* thread starts in progress on this thread (C call seen, not its end) */
    uint64_t spawn_floor; /* the newest thread state id when the outermost one began */
    fh_buffer buf;
    fh_sites sites;
    fh_sites funcs; /* the functions its sites call (see fh_site.fid) */
    PyObject *fid_index; /* dict: a function's value -> its number (see function_value) */
    PyObject *kid_index; /* dict: a pstats label -> its number */
    uint32_t *kid_fid;   /* per pstats number, the first function that has it */
    size_t nkids, kid_cap;
    /* Bounded recording (max_events): past max_blocks blocks, the oldest block is folded
     * into `agg` and reused, so the aggregates stay exact while the events are dropped. */
    size_t max_blocks; /* 0: unlimited */
    fh_agg *agg;       /* NULL until the first fold */
    uint64_t dropped;  /* events folded and no longer kept */
    /* Set once after stop (ctx_finalize): the push events of the frames open where the
     * kept events begin (their stack, replayed first), and how many events of the head
     * block were folded. The aggregates are then complete. */
    int finalized;
    int agg_broken; /* memory ran out while folding: aggregate() refuses */
    fh_event *prefix;
    size_t nprefix;
    size_t skip;
    fh_stage prev; /* what the thread had before us (a function of its own), swapped back
                      at stop: kept as it was, so no audit hook decides whether it returns */
    /* Code objects of the Python frames this thread is in, innermost last: gives the
     * caller of each call without asking the frame (out-of-line calls on 3.11+). Only
     * site keys depend on it, never the trees, so an approximation past the depth limit
     * (or after unmatched returns) is harmless. Borrowed: the frames keep them alive. */
    Py_ssize_t depth;
    PyCodeObject *shadow[FH_SHADOW_DEPTH];
    /* asyncio tasks (see tasks.h), all borrowed from the tracer's list or owned: a thread's
     * context sends the events of a task's step to that task's own context (`task`); a
     * task's context knows its thread's (`home`), its task (a weak reference), its name,
     * and when its last step ended (ticks; 0: never, or running). */
    CtxObject *task;
    CtxObject *home;
    PyObject *task_ref;
    PyObject *task_name;
    uint64_t suspended;
};

struct TracerObject {
    PyObject_HEAD
    int state;
    int c_calls;
    int runtime_events;
    PyObject *ctxs;     /* list of CtxObject */
    PyObject *tagged;   /* tuple of code objects whose calls are tagged */
    PyObject *describe; /* callable(instance) -> description, or NULL */
    PyObject *hidden;   /* tuple of code objects left out of the outputs (FH_FLAG_HIDDEN) */
    PyObject *muted;    /* tuple of code objects left out with all they call */
    Py_ssize_t max_events; /* newest events kept per thread; 0: all */
    uint64_t t0_ticks, t1_ticks;
    int64_t t0_ns, t1_ns;
    const fh_runtime_events_api *runtime;
    int listening;
    int monitoring;  /* backend: 1 = sys.monitoring callbacks, 0 = the C profile function */
    int tool_id;     /* sys.monitoring tool id held while recording, or -1 */
    PyObject *mon;   /* sys.monitoring (owned) while a tool id is held */
    int failed;      /* start() raised: collect() reports no thread */
    PyObject *current_task; /* async_tasks: asyncio.current_task (owned), else NULL */
    PyObject *tasks;        /* async_tasks: dict, the address of a task -> its context */
    unsigned long long next_serial; /* the serial of the next context made */
};

static PyTypeObject CtxType;
static PyTypeObject TracerType;
static PyTypeObject RecordFunctionType;
static PyTypeObject AnnotatedType;

/* The tracer that is recording (owned), or NULL: only one records at a time. */
static TracerObject *fh_active = NULL;

#define FH_N_METHODS 22
static PyMethodDef fh_methods[FH_N_METHODS]; /* every method of this module: fh_is_internal */

/* Calls into this module (stopping, annotation enter/exit) are the profiler's own work,
 * not the program's: they are never recorded. One range check covers them all because
 * every PyMethodDef lives in fh_methods. */
static inline int fh_is_internal(const PyMethodDef *ml) {
    return ml >= fh_methods && ml < fh_methods + FH_N_METHODS;
}

static int fh_profile(PyObject *obj, PyFrameObject *frame, int what, PyObject *arg);
static int fh_profile_first(PyObject *obj, PyFrameObject *frame, int what, PyObject *arg);

/* The C functions that start a thread whose state they create in the calling thread
 * (_thread.start_new_thread and its alias start_new; start_joinable_thread, 3.13+, which
 * threading uses), by their C entry point; NULL where absent. Found at module init. */
static PyCFunction fh_spawn_meth[2] = {NULL, NULL};

static inline int fh_is_spawn(PyObject *fn) {
    if (Py_TYPE(fn) != &PyCFunction_Type && Py_TYPE(fn) != &PyCMethod_Type) {
        return 0;
    }
    PyCFunction meth = ((PyCFunctionObject *)fn)->m_ml->ml_meth;
    return meth != NULL && (meth == fh_spawn_meth[0] || meth == fh_spawn_meth[1]);
}

static void ctx_begin_on_thread(CtxObject *ctx, PyFrameObject *frame, int entering);

/* A context given fh_profile_first meets its thread (ctx_begin_on_thread), at the
 * thread's first event, which is about `frame` (NULL: the current frame). Its profile
 * function becomes the plain one (the object stays, and so does the tracing state: only
 * the function pointer changes). */
static void ctx_claim(CtxObject *ctx, PyThreadState *ts, PyFrameObject *frame, int entering) {
    ts->c_profilefunc = fh_profile;
    ctx_begin_on_thread(ctx, frame, entering);
}

static CtxObject *ctx_new(TracerObject *tracer, unsigned long thread_id) {
    CtxObject *ctx = PyObject_GC_New(CtxObject, &CtxType);
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

static PyTypeObject CtxType = {
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
static void ctx_break(CtxObject *ctx) {
    PyErr_Clear();
    ctx->broken = 1;
    ctx->recording = 0;
}

static fh_event *ctx_grow(CtxObject *ctx);

static inline void ctx_push(CtxObject *ctx, uint32_t kind, uint32_t key, uint64_t t) {
    fh_buffer *b = &ctx->buf;
    fh_event *ev = b->cur != b->end ? b->cur++ : ctx_grow(ctx);
    if (ev == NULL) {
        ctx_break(ctx);
        return;
    }
    ev->t = t;
    ev->key = key;
    ev->kind = kind;
}

/* The ring of max_events: a full buffer of max_blocks blocks folds its oldest block into
 * the aggregates and reuses it. While recording, ticks map to nanoseconds by the line
 * through the start anchor and one taken now (the stop anchor is not known yet). Runs in
 * the profile callback: NULL (no exception kept) when memory runs out. */
static fh_event *ctx_grow(CtxObject *ctx) {
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

static CtxObject *fh_mon_current(void);

/* The context recording the calling thread, or NULL. */
static inline CtxObject *ctx_of_current_thread(void) {
    if (fh_active != NULL && fh_active->monitoring) {
        return fh_mon_current();
    }
    PyThreadState *ts = PyThreadState_Get();
    if (ts->c_profilefunc != fh_profile) {
        if (ts->c_profilefunc != fh_profile_first) {
            return NULL;
        }
        ctx_claim((CtxObject *)ts->c_profileobj, ts, NULL, 0);
    }
    CtxObject *ctx = (CtxObject *)ts->c_profileobj;
    return !ctx->recording ? NULL : ctx->task != NULL ? ctx->task : ctx;
}

/* ------------------------------------------------------------------------------------ */
/* Interning (the slow paths: each runs once per distinct site and thread).            */

static int code_is_tagged(TracerObject *tracer, PyCodeObject *code) {
    if (tracer == NULL || tracer->tagged == NULL) {
        return 0;
    }
    Py_ssize_t n = PyTuple_GET_SIZE(tracer->tagged);
    for (Py_ssize_t i = 0; i < n; i++) {
        if (PyTuple_GET_ITEM(tracer->tagged, i) == (PyObject *)code) {
            return 1;
        }
    }
    return 0;
}

static int code_in(PyObject *codes, PyCodeObject *code) {
    for (Py_ssize_t i = 0; codes != NULL && i < PyTuple_GET_SIZE(codes); i++) {
        if (PyTuple_GET_ITEM(codes, i) == (PyObject *)code) {
            return 1;
        }
    }
    return 0;
}

/* What two functions share when the outputs merge them, as a new tuple (or NULL with an
 * exception set). pstats merges by (file, first line, name) as cProfile labels code; the
 * summary by the function itself: its code object, or the description of a C function,
 * or an annotation's name. `by_key` picks the first; NULL is returned with no exception
 * when the function's pointer identity is its only identity (its code object). */
static PyObject *function_value(uint32_t cls, PyObject *obj, PyObject *info, int by_key) {
    static const char *tags[FH_N_CLS] = {"py", "c", "annotation", "lookup", "region", "task"};
    if (cls == FH_CLS_C) {
        return Py_BuildValue("(sO)", tags[cls], info != NULL ? info : Py_None);
    }
    if (cls == FH_CLS_ANNOT || cls == FH_CLS_TASK) {
        return Py_BuildValue("(sO)", tags[cls], obj);
    }
    if (!by_key) {
        return NULL;
    }
    PyObject *file = PyObject_GetAttrString(obj, "co_filename");
    PyObject *line = file != NULL ? PyObject_GetAttrString(obj, "co_firstlineno") : NULL;
    PyObject *name = line != NULL ? PyObject_GetAttrString(obj, "co_name") : NULL;
    PyObject *value = name != NULL ? Py_BuildValue("(sOOO)", tags[cls], file, line, name) : NULL;
    Py_XDECREF(file);
    Py_XDECREF(line);
    Py_XDECREF(name);
    return value;
}

/* The number `value` has in `index` (a dict made on first use), given `next` if it has
 * none yet (*added set). FH_NO_FID with an exception set. */
static uint32_t index_of(PyObject **index, PyObject *value, uint32_t next, int *added) {
    *added = 0;
    if (*index == NULL && (*index = PyDict_New()) == NULL) {
        return FH_NO_FID;
    }
    PyObject *found = PyDict_GetItemWithError(*index, value);
    if (found != NULL) {
        return (uint32_t)PyLong_AsUnsignedLong(found);
    }
    if (PyErr_Occurred()) {
        return FH_NO_FID;
    }
    PyObject *number = PyLong_FromUnsignedLong(next);
    if (number == NULL || PyDict_SetItem(*index, value, number) < 0) {
        Py_XDECREF(number);
        return FH_NO_FID;
    }
    Py_DECREF(number);
    *added = 1;
    return next;
}

/* The pstats number of function `fid` (made with it). FH_NO_FID with an exception set. */
static uint32_t intern_kid(CtxObject *ctx, uint32_t cls, PyObject *obj, PyObject *info,
                           uint32_t fid) {
    PyObject *value = function_value(cls, obj, info, 1);
    if (value == NULL) {
        return FH_NO_FID;
    }
    int added;
    uint32_t kid = index_of(&ctx->kid_index, value, (uint32_t)ctx->nkids, &added);
    Py_DECREF(value);
    if (kid == FH_NO_FID || !added) {
        return kid;
    }
    if (ctx->nkids == ctx->kid_cap) {
        size_t ncap = ctx->kid_cap ? ctx->kid_cap * 2 : 64;
        uint32_t *grown = (uint32_t *)PyMem_Realloc(ctx->kid_fid, ncap * sizeof(uint32_t));
        if (grown == NULL) {
            PyErr_NoMemory();
            return FH_NO_FID;
        }
        ctx->kid_fid = grown;
        ctx->kid_cap = ncap;
    }
    ctx->kid_fid[ctx->nkids++] = fid;
    return kid;
}

/* The number of the function (class `cls`; `a` and `b` its pointers, `obj` its object,
 * `info` a C function's description) on this thread, made at its first site (`site_key`)
 * with its pstats number (in the function's fid2). FH_NO_FID with an exception set. */
static uint32_t intern_fid(CtxObject *ctx, uint32_t cls, const void *a, const void *b,
                           PyObject *obj, PyObject *info, uint32_t site_key) {
    uint32_t kind = cls + 1;
    fh_slot *slot = fh_sites_find(&ctx->funcs, a, b, kind);
    if (slot != NULL) {
        return slot->key1 - 1;
    }
    /* other pointers, the same function (a C function bound elsewhere, a name) */
    PyObject *value = function_value(cls, obj, info, 0);
    if (value == NULL && PyErr_Occurred()) {
        return FH_NO_FID;
    }
    int added = 1;
    uint32_t fid = (uint32_t)ctx->funcs.nsites;
    if (value != NULL) {
        fid = index_of(&ctx->fid_index, value, fid, &added);
        Py_DECREF(value);
        if (fid == FH_NO_FID || !added) {
            return fid;
        }
    }
    uint32_t kid = intern_kid(ctx, cls, obj, info, fid);
    if (kid == FH_NO_FID) {
        return FH_NO_FID;
    }
    slot = fh_sites_add(&ctx->funcs, a, b, kind, 0, obj, NULL, NULL);
    if (slot == NULL) {
        return FH_NO_FID;
    }
    ctx->funcs.sites[slot->key1 - 1].fid = site_key;
    ctx->funcs.sites[slot->key1 - 1].fid2 = kid;
    return slot->key1 - 1;
}

/* Gives the site just added (`slot`) its function; NULL (exception set) on failure. */
static fh_slot *site_function(CtxObject *ctx, fh_slot *slot, uint32_t cls, const void *a,
                              const void *b, PyObject *obj) {
    if (slot == NULL) {
        return NULL;
    }
    uint32_t key = slot->key1 - 1;
    fh_site *site = &ctx->sites.sites[key];
    uint32_t fid = intern_fid(ctx, cls, a, b, obj, site->info, key);
    if (fid == FH_NO_FID) {
        return NULL;
    }
    site = &ctx->sites.sites[key]; /* (interning ran Python code: nothing moved, but) */
    site->fid = fid;
    site->kid = ctx->funcs.sites[fid].fid2;
    if (cls == FH_CLS_LOOKUP) {
        fid = intern_fid(ctx, FH_CLS_REGION, a, b, obj, NULL, key);
        if (fid == FH_NO_FID) {
            return NULL;
        }
        site = &ctx->sites.sites[key];
        site->fid2 = fid;
        site->kid2 = ctx->funcs.sites[fid].fid2;
    }
    return slot;
}

static uint32_t py_site_flags(TracerObject *tracer, PyCodeObject *code) {
    if (tracer == NULL) {
        return 0;
    }
    return (code_is_tagged(tracer, code) ? FH_FLAG_TAGGED : 0) |
           (code_in(tracer->hidden, code) ? FH_FLAG_HIDDEN : 0) |
           (code_in(tracer->muted, code) ? FH_FLAG_MUTED : 0);
}

static fh_slot *intern_py(CtxObject *ctx, PyCodeObject *code, PyCodeObject *caller) {
    fh_slot *slot = fh_sites_find(&ctx->sites, code, caller, FH_SITE_PY);
    if (slot != NULL) {
        return slot;
    }
    slot = fh_sites_add(&ctx->sites, code, caller, FH_SITE_PY, py_site_flags(ctx->tracer, code),
                        (PyObject *)code, (PyObject *)caller, NULL);
    return site_function(ctx, slot, FH_CLS_PY, code, NULL, (PyObject *)code);
}

/* Names a C callable once: (owner name or None, function name, how it is bound), where
 * "how" is 0 for a function of a module, 1 for a method of an instance's type and 2 for a
 * method bound to a type. The owner object is kept so that the PyMethodDef stays alive. */
static fh_slot *intern_c_slow(CtxObject *ctx, PyObject *fn, const void *ident,
                              PyCodeObject *caller) {
    PyObject *owner;
    PyObject *info;
    if (PyCFunction_Check(fn)) {
        PyCFunctionObject *f = (PyCFunctionObject *)fn;
        PyObject *self = f->m_self;
        const char *name = f->m_ml->ml_name;
        if (self == NULL || PyModule_Check(self)) {
            owner = self != NULL ? self : Py_None;
            PyObject *module = f->m_module;
            if (module == NULL || !PyUnicode_Check(module)) {
                module = Py_None;
            }
            info = Py_BuildValue("(Osi)", module, name, 0);
        } else if (PyType_Check(self)) {
            owner = self;
            info = Py_BuildValue("(ssi)", ((PyTypeObject *)self)->tp_name, name, 2);
        } else {
            owner = (PyObject *)Py_TYPE(self);
            info = Py_BuildValue("(ssi)", Py_TYPE(self)->tp_name, name, 1);
        }
    } else {
        owner = (PyObject *)Py_TYPE(fn);
        info = Py_BuildValue("(ssi)", Py_TYPE(fn)->tp_name, "__call__", 1);
    }
    if (info == NULL) {
        return NULL;
    }
    fh_slot *slot = fh_sites_add(&ctx->sites, ident, caller, FH_SITE_C,
                                 fh_is_spawn(fn) ? FH_FLAG_SPAWN : 0, owner,
                                 (PyObject *)caller, info);
    Py_DECREF(info);
    return site_function(ctx, slot, FH_CLS_C, ident, owner, owner);
}

/* A site keyed by one object (runtime code objects, annotation names). */
static fh_slot *intern_object(CtxObject *ctx, PyObject *obj, uint32_t kind) {
    fh_slot *slot = fh_sites_find(&ctx->sites, obj, NULL, kind);
    if (slot != NULL) {
        return slot;
    }
    slot = fh_sites_add(&ctx->sites, obj, NULL, kind, 0, obj, NULL, NULL);
    uint32_t cls = kind == FH_SITE_NAME   ? FH_CLS_ANNOT
                   : kind == FH_SITE_TASK ? FH_CLS_TASK
                                          : FH_CLS_LOOKUP;
    return site_function(ctx, slot, cls, obj, NULL, obj);
}

/* Records which instance a tagged call went through. The description (class name, array
 * attributes) is taken the first time the instance is seen on this thread; describe may
 * run Python code, which the interpreter does not profile while we are in a callback. */
static void record_tag(CtxObject *ctx, PyFrameObject *frame, uint64_t t) {
    if (frame == NULL) {
        return;
    }
    PyObject *exc_type, *exc_value, *exc_tb;
    PyErr_Fetch(&exc_type, &exc_value, &exc_tb);
    PyObject *self = fh_first_argument(frame);
    if (self == NULL) {
        PyErr_Clear();
        PyErr_Restore(exc_type, exc_value, exc_tb);
        return;
    }
    fh_slot *slot = fh_sites_find(&ctx->sites, self, NULL, FH_SITE_INSTANCE);
    if (slot == NULL) {
        PyObject *info = NULL;
        TracerObject *tracer = ctx->tracer;
        if (tracer != NULL && tracer->describe != NULL) {
            info = PyObject_CallOneArg(tracer->describe, self);
            if (info == NULL) {
                PyErr_Clear();
            }
        }
        slot = fh_sites_add(&ctx->sites, self, NULL, FH_SITE_INSTANCE, 0, self, NULL, info);
        Py_XDECREF(info);
    }
    Py_DECREF(self);
    if (slot == NULL) {
        ctx_break(ctx);
    } else {
        ctx_push(ctx, FH_EV_TAG, slot->key1 - 1, t);
    }
    PyErr_Restore(exc_type, exc_value, exc_tb);
}

#include "tasks.h" /* (uses the context and the interning above) */

/* ------------------------------------------------------------------------------------ */
/* The profile function: the hot path.                                                  */

/* The code of the innermost Python frame, per the shadow stack (NULL if unknown). */
static inline PyCodeObject *shadow_top(CtxObject *ctx) {
    Py_ssize_t d = ctx->depth;
    return d > 0 && d <= FH_SHADOW_DEPTH ? ctx->shadow[d - 1] : NULL;
}

static inline void shadow_push(CtxObject *ctx, PyCodeObject *code) {
    if (ctx->depth < FH_SHADOW_DEPTH) {
        ctx->shadow[ctx->depth] = code;
    }
    ctx->depth++;
}

static inline void shadow_pop(CtxObject *ctx) {
    if (ctx->depth > 0) {
        ctx->depth--;
    }
}

/* A Python call of `code`; `frame` is its frame, or NULL when only the tag path needs it
 * (the sys.monitoring backend, where it is the current frame). */
static inline void record_py_call(CtxObject *ctx, PyCodeObject *code, PyFrameObject *frame) {
    if (fh_tasks_on && (code->co_flags & FH_CO_TASK_ROOT) && ctx->home == NULL) {
        ctx = task_enter(ctx);
    }
    PyCodeObject *caller = shadow_top(ctx);
    shadow_push(ctx, code);
    fh_slot *slot = fh_sites_find(&ctx->sites, code, caller, FH_SITE_PY);
    if (slot == NULL) {
        slot = intern_py(ctx, code, caller);
        if (slot == NULL) {
            ctx_break(ctx);
            return;
        }
    }
    uint64_t t = fh_ticks();
    ctx_push(ctx, FH_EV_PY_CALL, slot->key1 - 1, t);
    if (slot->flags & FH_FLAG_TAGGED) {
        record_tag(ctx, frame != NULL ? frame : PyEval_GetFrame(), t);
    }
}

/* A Python frame left (returned, yielded or unwound by an exception). */
static inline void record_py_return(CtxObject *ctx, uint32_t kind) {
    shadow_pop(ctx);
    uint64_t t = fh_ticks();
    ctx_push(ctx, kind, 0, t);
    if (ctx->home != NULL && ctx->depth == 0) {
        task_leave(ctx, t); /* the end of a task's step */
    }
}

static void spawn_begin(CtxObject *ctx);
static void spawn_end(CtxObject *ctx, PyObject *fn, int returned);

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
        slot = intern_c_slow(ctx, fn, ident, caller);
        if (slot == NULL) {
            ctx_break(ctx);
            return;
        }
    }
    ctx_push(ctx, FH_EV_C_CALL, slot->key1 - 1, fh_ticks());
    if (slot->flags & FH_FLAG_SPAWN) {
        spawn_begin(ctx);
    }
}

/* Calls of the profile function for a context that records nothing (stopped, or broken):
 * after stop() none should come (_tracer.idle_calls(), for the tests). */
static Py_ssize_t fh_idle_calls = 0;

static int fh_profile(PyObject *obj, PyFrameObject *frame, int what, PyObject *arg) {
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
            spawn_begin(ctx);
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
            spawn_end(ctx, arg, what == PyTrace_C_RETURN);
        }
        break;
    default:
        break;
    }
    return 0;
}

/* The profile function of a thread adopted before it ran: its first event claims the
 * context (the thread's id is only known on the thread itself), then it is fh_profile. */
static int fh_profile_first(PyObject *obj, PyFrameObject *frame, int what, PyObject *arg) {
    ctx_claim((CtxObject *)obj, PyThreadState_Get(), frame, what == PyTrace_CALL);
    return fh_profile(obj, frame, what, arg);
}

/* ------------------------------------------------------------------------------------ */
/* Threads started while recording, seen from the thread that starts them.             */
/*
 * The profile function is per thread, and a thread started with _thread directly runs no
 * Python code of ours (threading's setprofile hook covers only threading's threads). But
 * _thread creates the new thread's state in the calling thread, before the call returns,
 * and the new thread cannot run Python code before it takes the GIL, which the caller
 * holds until its C-return event has been handled. So at the C return of a thread start,
 * the new thread state is in the interpreter's list, has no profile function, and has an
 * id (ids grow) newer than every thread state that existed when the call began: it gets a
 * context and fh_profile_first. Checked against CPython 3.9-3.13 (Modules/_threadmodule.c:
 * thread_PyThread_start_new_thread, ThreadHandle_start from 3.13; Python/pystate.c), and
 * on 3.14 and 3.15 by tests/test_threads.py (threads started with _thread are recorded).
 *
 * Every thread state field read here is one the new thread does not write before it
 * holds the GIL (id is set at creation, the profile fields only under the GIL); its
 * thread_id is written without the GIL, hence the claim at its first event. */

/* The id of the newest thread state of this interpreter. */
static uint64_t newest_tstate_id(PyInterpreterState *interp) {
    uint64_t newest = 0;
    for (PyThreadState *ts = PyInterpreterState_ThreadHead(interp); ts != NULL;
         ts = PyThreadState_Next(ts)) {
        if (ts->id > newest) {
            newest = ts->id;
        }
    }
    return newest;
}

static void spawn_begin(CtxObject *ctx) {
    if (ctx->spawning++ == 0) {
        ctx->spawn_floor = newest_tstate_id(PyThreadState_GetInterpreter(PyThreadState_Get()));
    }
}

/* The thread state with the smallest id above `after` that has no profile function,
 * or NULL. */
static PyThreadState *next_unprofiled(PyInterpreterState *interp, uint64_t after) {
    PyThreadState *found = NULL;
    for (PyThreadState *ts = PyInterpreterState_ThreadHead(interp); ts != NULL;
         ts = PyThreadState_Next(ts)) {
        if (ts->id > after && ts->c_profilefunc == NULL && ts->c_profileobj == NULL &&
            !fh_is_holder(ts) && (found == NULL || ts->id < found->id)) {
            found = ts;
        }
    }
    return found;
}

/* Gives each thread state newer than `floor` that has no profile function a context of
 * `tracer` and fh_profile_first (which reads the thread's stack at its first event: a
 * thread adopted at the end of start() may have run already). Runs inside the profile
 * function, or at the end of start(), so nothing escapes: a failure leaves that thread
 * unrecorded (and is reported as unraisable). One thread at a
 * time: making its context and staging its function may run Python code (a collection, an
 * audit hook), which may let threads come and go, so the thread state is only compared
 * until it is found again, by address and id, right before the swap. */
static void adopt_new_threads(TracerObject *tracer, uint64_t floor) {
    if (tracer == NULL || fh_active != tracer || tracer->state != FH_RECORDING ||
        tracer->monitoring) {
        return;
    }
    PyInterpreterState *interp = PyThreadState_GetInterpreter(PyThreadState_Get());
    if (next_unprofiled(interp, floor) == NULL) {
        return;
    }
    PyObject *exc_type, *exc_value, *exc_tb;
    PyErr_Fetch(&exc_type, &exc_value, &exc_tb);
    Py_INCREF(tracer); /* Python code below could stop it and drop the last reference */
    if (fh_audit_setprofile() < 0) {
        PyErr_WriteUnraisable((PyObject *)tracer);
        goto done;
    }
    uint64_t after = floor;
    for (;;) {
        PyThreadState *ts = next_unprofiled(interp, after);
        if (ts == NULL || fh_active != tracer || tracer->state != FH_RECORDING) {
            break;
        }
        uint64_t id = ts->id;
        after = id;
        CtxObject *ctx = ctx_new(tracer, 0);
        if (ctx == NULL) {
            PyErr_WriteUnraisable((PyObject *)tracer);
            continue;
        }
        ctx->unstarted = 1;
        fh_stage stage = FH_STAGE_INIT;
        if (PyList_Append(tracer->ctxs, (PyObject *)ctx) < 0 ||
            fh_stage_set(&stage, fh_profile_first, (PyObject *)ctx) < 0) {
            PyErr_WriteUnraisable((PyObject *)tracer);
        } else {
            PyThreadState *live = fh_find_thread(interp, ts, id);
            if (live != NULL && live->c_profilefunc == NULL && live->c_profileobj == NULL &&
                fh_active == tracer && tracer->state == FH_RECORDING) {
                ctx->tstate = live;
                ctx->recording = 1;
                fh_stage_swap(&stage, live);
            } /* else the context stays unclaimed; collect() leaves it out */
        }
        /* The stage holds what the new thread had (nothing), or our function if the thread
         * went: then, if the tracer was stopped meanwhile, the events may have to go off. */
        if (fh_stage_release(&stage) && (fh_active != tracer || tracer->state != FH_RECORDING) &&
            fh_profile_events_sync() < 0) {
            PyErr_WriteUnraisable((PyObject *)tracer);
        }
        Py_DECREF(ctx);
    }
done:
    Py_DECREF(tracer);
    PyErr_Restore(exc_type, exc_value, exc_tb);
}

/* The end of a C call while a thread start is in progress on this thread: if it is the
 * thread start's (C calls end innermost first, but only this one matters) and it
 * returned, the new thread is adopted. */
static void spawn_end(CtxObject *ctx, PyObject *fn, int returned) {
    if (!fh_is_spawn(fn)) {
        return;
    }
    ctx->spawning--;
    if (returned) {
        adopt_new_threads(ctx->tracer, ctx->spawn_floor);
    }
}

/* The frames on a thread's stack, innermost first, at most FH_MAX_START_DEPTH (owned). */
typedef struct {
    PyFrameObject *f[FH_MAX_START_DEPTH];
    int n;
} fh_stack;

static void drop_stack(fh_stack *st) {
    for (int i = 0; i < st->n; i++) {
        Py_DECREF(st->f[i]);
    }
    st->n = 0;
}

/* Reads the stack from `innermost` (borrowed, or NULL) outwards. From 3.11 this may
 * create frame objects. Returns 0, or -1 with an exception set (nothing kept). */
static int read_stack(fh_stack *st, PyFrameObject *innermost) {
    st->n = 0;
    PyFrameObject *f = innermost;
    Py_XINCREF(f);
    while (f != NULL && st->n < FH_MAX_START_DEPTH) {
        st->f[st->n++] = f;
        f = PyFrame_GetBack(f);
    }
    Py_XDECREF(f);
    if (PyErr_Occurred()) { /* a frame object could not be made */
        drop_stack(st);
        return -1;
    }
    return 0;
}

/* Records a stack read by read_stack as start frames, outermost first, and releases it. */
static int record_stack(CtxObject *ctx, fh_stack *st, uint64_t t) {
    int rc = 0;
    for (int i = st->n - 1; i >= 0 && rc == 0; i--) {
        PyCodeObject *code = fh_frame_code(st->f[i]);
        fh_slot *slot = intern_py(ctx, code, shadow_top(ctx));
        shadow_push(ctx, code);
        if (slot == NULL) {
            rc = -1;
        } else {
            ctx_push(ctx, FH_EV_START_FRAME, slot->key1 - 1, t);
            if (ctx->broken) {
                PyErr_NoMemory();
                rc = -1;
            }
        }
    }
    drop_stack(st);
    return rc;
}

/* A context made for a thread before it was seen running meets its thread, on the thread
 * itself: adopted when it was started (adopt_new_threads), found without frames at start,
 * or found after start() had collected the threads (a thread started while start() ran
 * Python code, which may have run since). The context learns the thread's id, and the
 * frames the thread is in already become its start frames, stamped now: none for a
 * thread that has just started. `frame` is the frame of the event (NULL: the current
 * one); `entering` when the event enters it (a call: recorded by the event itself, so
 * the start frames begin at its caller). Runs inside a profile callback: nothing escapes
 * (a failure stops this thread's recording). */
static void ctx_begin_on_thread(CtxObject *ctx, PyFrameObject *frame, int entering) {
    ctx->thread_id = PyThread_get_thread_ident();
    if (!ctx->recording) {
        return;
    }
    PyObject *exc_type, *exc_value, *exc_tb;
    PyErr_Fetch(&exc_type, &exc_value, &exc_tb);
    PyFrameObject *outer;
    if (frame == NULL) {
        outer = PyEval_GetFrame();
        Py_XINCREF(outer);
    } else if (entering) {
        outer = PyFrame_GetBack(frame); /* (3.11+ may have to create it) */
    } else {
        outer = frame;
        Py_INCREF(outer);
    }
    fh_stack st;
    if (PyErr_Occurred() || read_stack(&st, outer) < 0 ||
        record_stack(ctx, &st, fh_ticks()) < 0) {
        ctx_break(ctx);
    }
    Py_XDECREF(outer);
    PyErr_Restore(exc_type, exc_value, exc_tb);
}

/* ------------------------------------------------------------------------------------ */
/* Runtime events (framehook-runtime's capsule, when it is installed).                  */

static void on_runtime_event(void *userdata, int event, PyObject *code) {
    if (event < FH_RUNTIME_LOOKUP_BEGIN || event > FH_RUNTIME_REGION_END || code == NULL) {
        return;
    }
    CtxObject *ctx = ctx_of_current_thread();
    if (ctx == NULL || (void *)ctx->tracer != userdata) {
        return;
    }
    uint64_t t = fh_ticks();
    fh_slot *slot = intern_object(ctx, code, FH_SITE_CODE);
    if (slot == NULL) {
        ctx_break(ctx);
        return;
    }
    ctx_push(ctx, FH_EV_RUNTIME + (uint32_t)event, slot->key1 - 1, t);
}

/* The runtime's event table, or NULL when framehook-runtime is absent or incompatible
 * (no exception is left set: the profiler simply records no runtime events). */
static const fh_runtime_events_api *runtime_api(void) {
    const fh_runtime_events_api *api =
        (const fh_runtime_events_api *)PyCapsule_Import(FH_RUNTIME_CAPSULE, 0);
    if (api == NULL) {
        PyErr_Clear();
        return NULL;
    }
    if (api->abi_version != FH_RUNTIME_EVENTS_ABI) {
        return NULL;
    }
    return api;
}

/* ------------------------------------------------------------------------------------ */
/* Tracer                                                                               */

/* The tagged code objects as a tuple (new reference), or NULL with TypeError. */
static PyObject *tagged_tuple(PyObject *tagged) {
    PyObject *codes = tagged != NULL ? PySequence_Tuple(tagged) : PyTuple_New(0);
    if (codes == NULL) {
        return NULL;
    }
    for (Py_ssize_t i = 0; i < PyTuple_GET_SIZE(codes); i++) {
        if (!PyCode_Check(PyTuple_GET_ITEM(codes, i))) {
            Py_DECREF(codes);
            PyErr_SetString(PyExc_TypeError, "tagged, hidden and muted must hold code objects");
            return NULL;
        }
    }
    return codes;
}

static int tracer_init(TracerObject *self, PyObject *args, PyObject *kwds) {
    static char *kwlist[] = {"c_calls", "tagged", "describe", "runtime_events", "monitoring",
                             "hidden", "muted", "max_events", "current_task", NULL};
    int c_calls = 1, runtime_events = 1, monitoring = 0;
    PyObject *tagged = NULL, *describe = Py_None, *hidden = NULL, *muted = NULL;
    PyObject *max_events = Py_None, *current_task = Py_None;
    if (!PyArg_ParseTupleAndKeywords(args, kwds, "|pOOppOOOO", kwlist, &c_calls, &tagged,
                                     &describe, &runtime_events, &monitoring, &hidden, &muted,
                                     &max_events, &current_task)) {
        return -1;
    }
    if (current_task != Py_None && !PyCallable_Check(current_task)) {
        PyErr_Format(PyExc_TypeError,
                     "current_task must be callable (asyncio.current_task) or None, not %.100s",
                     Py_TYPE(current_task)->tp_name);
        return -1;
    }
    Py_ssize_t limit = 0;
    if (max_events != Py_None) {
        if (!PyLong_Check(max_events) || PyBool_Check(max_events)) {
            PyErr_Format(PyExc_ValueError, "max_events must be an int >= 1 or None, not %.100s",
                         Py_TYPE(max_events)->tp_name);
            return -1;
        }
        limit = PyLong_AsSsize_t(max_events);
        if (limit == -1 && PyErr_Occurred()) {
            PyErr_Clear();
            limit = PY_SSIZE_T_MAX; /* more than memory can hold: no limit in effect */
        }
        if (limit < 1) {
            PyErr_Format(PyExc_ValueError, "max_events must be an int >= 1 or None, not %zd",
                         limit);
            return -1;
        }
        if ((size_t)limit > (size_t)PY_SSIZE_T_MAX / 2) {
            limit = PY_SSIZE_T_MAX / 2;
        }
    }
    if (monitoring && !FH_HAVE_MONITORING) {
        PyErr_SetString(PyExc_ValueError, "the sys.monitoring backend needs CPython 3.12+");
        return -1;
    }
    if (self->state != FH_NEW) {
        PyErr_SetString(PyExc_RuntimeError, "Tracer cannot be re-initialised");
        return -1;
    }
    PyObject *codes = tagged_tuple(tagged);
    if (codes == NULL) {
        return -1;
    }
    PyObject *hidden_codes = tagged_tuple(hidden);
    if (hidden_codes == NULL) {
        Py_DECREF(codes);
        return -1;
    }
    PyObject *muted_codes = tagged_tuple(muted);
    if (muted_codes == NULL) {
        Py_DECREF(codes);
        Py_DECREF(hidden_codes);
        return -1;
    }
    Py_XSETREF(self->hidden, hidden_codes);
    Py_XSETREF(self->muted, muted_codes);
    self->max_events = limit;
    if (describe != Py_None && !PyCallable_Check(describe)) {
        Py_DECREF(codes);
        PyErr_SetString(PyExc_TypeError, "describe must be callable or None");
        return -1;
    }
    Py_XSETREF(self->tagged, codes);
    Py_XINCREF(describe == Py_None ? NULL : describe);
    Py_XSETREF(self->describe, describe == Py_None ? NULL : describe);
    Py_XINCREF(current_task == Py_None ? NULL : current_task);
    Py_XSETREF(self->current_task, current_task == Py_None ? NULL : current_task);
    self->c_calls = c_calls;
    self->runtime_events = runtime_events;
    self->monitoring = monitoring;
    return 0;
}

static PyObject *tracer_new(PyTypeObject *type, PyObject *args, PyObject *kwds) {
    TracerObject *self = (TracerObject *)type->tp_alloc(type, 0);
    if (self == NULL) {
        return NULL;
    }
    self->ctxs = PyList_New(0);
    self->tasks = PyDict_New();
    if (self->ctxs == NULL || self->tasks == NULL) {
        Py_DECREF(self);
        return NULL;
    }
    self->state = FH_NEW;
    self->c_calls = 1;
    self->runtime_events = 1;
    self->tool_id = -1;
    return (PyObject *)self;
}

static int tracer_traverse(TracerObject *self, visitproc visit, void *arg) {
    Py_VISIT(self->ctxs);
    Py_VISIT(self->tagged);
    Py_VISIT(self->describe);
    Py_VISIT(self->hidden);
    Py_VISIT(self->muted);
    Py_VISIT(self->current_task);
    Py_VISIT(self->tasks);
    return 0;
}

static void tracer_detach_contexts(TracerObject *self) {
    if (self->ctxs == NULL) {
        return;
    }
    for (Py_ssize_t i = 0; i < PyList_GET_SIZE(self->ctxs); i++) {
        CtxObject *ctx = (CtxObject *)PyList_GET_ITEM(self->ctxs, i);
        ctx->recording = 0;
        ctx->tracer = NULL;
    }
}

static int tracer_clear(TracerObject *self) {
    tracer_detach_contexts(self);
    Py_CLEAR(self->ctxs);
    Py_CLEAR(self->tagged);
    Py_CLEAR(self->describe);
    Py_CLEAR(self->hidden);
    Py_CLEAR(self->muted);
    Py_CLEAR(self->mon);
    Py_CLEAR(self->current_task);
    Py_CLEAR(self->tasks);
    return 0;
}

static void tracer_dealloc(TracerObject *self) {
    PyObject_GC_UnTrack(self);
    tracer_clear(self);
    Py_TYPE(self)->tp_free((PyObject *)self);
}

/* Creates the context of a thread and records `st` as its start frames (released
 * either way). Returns the context (borrowed: the tracer's list keeps it), or NULL with
 * an exception set. */
static CtxObject *add_context_with_stack(TracerObject *self, unsigned long thread_id,
                                         fh_stack *st, uint64_t t) {
    CtxObject *ctx = ctx_new(self, thread_id);
    if (ctx == NULL) {
        drop_stack(st);
        return NULL;
    }
    int appended = PyList_Append(self->ctxs, (PyObject *)ctx);
    if (appended < 0) {
        drop_stack(st);
    }
    if (appended < 0 || record_stack(ctx, st, t) < 0) {
        Py_DECREF(ctx);
        return NULL;
    }
    Py_DECREF(ctx); /* the list keeps it */
    return ctx;
}

/* Creates the context of the calling thread, with the frames from `innermost` (borrowed,
 * or NULL) outwards as its start frames. */
static CtxObject *tracer_add_context(TracerObject *self, unsigned long thread_id,
                                     PyFrameObject *innermost, uint64_t t) {
    fh_stack st;
    if (read_stack(&st, innermost) < 0) {
        return NULL;
    }
    return add_context_with_stack(self, thread_id, &st, t);
}

static void tracer_uninstall(TracerObject *self);

#include "monitoring.h"

/* A thread state seen in the interpreter's list: its address, dereferenced only while no
 * Python code has run since it was seen (and only compared otherwise), and its id, which
 * tells a state at a reused address apart. */
typedef struct {
    PyThreadState *ts;
    uint64_t id;
    unsigned long thread_id; /* read at collection (0 if the thread may not have run) */
    int started;
    CtxObject *ctx; /* borrowed: the tracer's list keeps it */
    fh_stage stage;
    int done;
} fh_thread_ref;

/* The interpreter's thread states (holders left out), in list order, in a new PyMem array
 * of *count entries, or NULL with an exception set. Nothing is allocated while walking.
 * The list can only grow between the two walks (PyMem_Calloc runs no Python code, and
 * threads delete their states holding the GIL, but a thread started from C links its new
 * state in without the GIL, in PyGILState_Ensure): then it is counted again. */
static fh_thread_ref *collect_threads(PyInterpreterState *interp, Py_ssize_t *count) {
    for (;;) {
        Py_ssize_t n = 0;
        for (PyThreadState *ts = PyInterpreterState_ThreadHead(interp); ts != NULL;
             ts = PyThreadState_Next(ts)) {
            n += !fh_is_holder(ts);
        }
        fh_thread_ref *refs = PyMem_Calloc((size_t)n + 1, sizeof(fh_thread_ref));
        if (refs == NULL) {
            PyErr_NoMemory();
            return NULL;
        }
        Py_ssize_t m = 0;
        for (PyThreadState *ts = PyInterpreterState_ThreadHead(interp); ts != NULL && m <= n;
             ts = PyThreadState_Next(ts)) {
            if (fh_is_holder(ts)) {
                continue;
            }
            if (m < n) {
                refs[m].ts = ts;
                refs[m].id = ts->id;
            }
            m++;
        }
        if (m <= n) {
            *count = m;
            return refs;
        }
        PyMem_Free(refs);
    }
}

/* Reads what start() needs of each collected thread: its id and its stack (frame
 * objects, which 3.11+ may have to create). The caller has paused automatic collection:
 * nothing here runs Python code, so every collected thread state is alive throughout. */
static int read_threads(fh_thread_ref *refs, fh_stack *stacks, Py_ssize_t n,
                        PyThreadState *me) {
    for (Py_ssize_t i = 0; i < n; i++) {
        PyThreadState *ts = refs[i].ts;
        PyFrameObject *top = PyThreadState_GetFrame(ts);
        if (top == NULL && PyErr_Occurred()) {
            return -1;
        }
        /* A thread with frames has held the GIL, so its id is written; one without may
         * be a thread that was just started and has not run yet (see `unstarted`). */
        refs[i].started = top != NULL || ts == me;
        refs[i].thread_id = refs[i].started ? ts->thread_id : 0;
        int rc = read_stack(&stacks[i], top);
        Py_XDECREF(top);
        if (rc < 0) {
            return -1;
        }
    }
    return 0;
}

/* Makes the context of each collected thread, recording the stacks read (all released,
 * even on failure). Allocating may run Python code (a collection): thread states are
 * only compared from here on. */
static int make_contexts(TracerObject *self, fh_thread_ref *refs, fh_stack *stacks,
                         Py_ssize_t n) {
    int rc = 0;
    for (Py_ssize_t i = 0; i < n; i++) {
        if (rc < 0) {
            drop_stack(&stacks[i]);
            continue;
        }
        CtxObject *ctx = add_context_with_stack(self, refs[i].thread_id, &stacks[i],
                                                self->t0_ticks);
        if (ctx == NULL) {
            rc = -1;
            continue;
        }
        ctx->tstate = refs[i].ts;
        ctx->unstarted = !refs[i].started && !self->monitoring;
        refs[i].ctx = ctx;
    }
    return rc;
}

static inline int is_fh_profile(Py_tracefunc func) {
    return func == fh_profile || func == fh_profile_first;
}

/* Releases every stage of refs[0..n) (no audit event, never raises). Returns whether a
 * function was dropped (see fh_profile_events_sync). */
static int release_stages(fh_thread_ref *refs, Py_ssize_t n) {
    int dropped = 0;
    for (Py_ssize_t i = 0; i < n; i++) {
        dropped |= fh_stage_release(&refs[i].stage);
    }
    return dropped;
}

/* The collected thread ``ts`` still is (same state, same id), marked done; NULL when
 * none, or when it was already handled in this walk. */
static fh_thread_ref *take_ref(fh_thread_ref *refs, Py_ssize_t n, PyThreadState *ts) {
    for (Py_ssize_t i = 0; i < n; i++) {
        fh_thread_ref *ref = &refs[i];
        if (!ref->done && ref->ts == ts && ts->id == ref->id) {
            ref->done = 1;
            return ref;
        }
    }
    return NULL;
}

/* Installs the profile function of the collected threads. Every function is staged
 * first (from 3.12 each stage runs the audit hooks: Python code, during which threads may
 * come and go), then all are swapped in by one walk of the list that runs no Python code,
 * matching thread states by address and id. An audit hook refusing leaves nothing
 * installed. A collected thread gone by then keeps no context. */
static int install_profile(TracerObject *self, PyInterpreterState *interp,
                           fh_thread_ref *refs, Py_ssize_t n) {
    for (Py_ssize_t i = 0; i < n; i++) {
        CtxObject *ctx = refs[i].ctx;
        if (fh_stage_set(&refs[i].stage, ctx->unstarted ? fh_profile_first : fh_profile,
                         (PyObject *)ctx) < 0) {
            /* An audit hook refused (or memory ran out): the functions staged so far go
             * without asking it again. From 3.12 the ones it allowed switched the profile
             * events on, and they stay on until the next allowed sys.setprofile (see
             * fh_profile_events_sync), doing nothing: no thread has a function of ours. */
            release_stages(refs, n);
            return -1;
        }
    }
    if (fh_active != self || self->state != FH_RECORDING) {
        if (release_stages(refs, n) && fh_profile_events_sync() < 0) {
            PyErr_Clear();
        }
        PyErr_SetString(PyExc_RuntimeError, "the profiler was stopped while it started");
        return -1;
    }
    for (PyThreadState *ts = PyInterpreterState_ThreadHead(interp); ts != NULL;
         ts = PyThreadState_Next(ts)) {
        fh_thread_ref *ref = take_ref(refs, n, ts);
        if (ref == NULL) {
            continue;
        }
        fh_stage_swap(&ref->stage, ts);
        /* What the thread had (now in the stage) is kept as it is, and swapped back at
         * stop (from 3.12 the holder stays counted meanwhile: the events are on anyway). */
        CtxObject *ctx = ref->ctx;
        Py_tracefunc prev = fh_stage_func(&ref->stage);
        if (prev != NULL && !is_fh_profile(prev)) {
            fh_stage_move(&ctx->prev, &ref->stage);
        }
        if (!ctx->unstarted) {
            ctx->tstate = NULL;
        }
    }
    for (Py_ssize_t i = 0; i < n; i++) {
        /* A thread that ended before its function was installed: its start frames are
         * not kept. (A context made for a thread that had not run may have been claimed
         * by threading's hook meanwhile: what it recorded is kept.) */
        if (!refs[i].done && !refs[i].ctx->unstarted) {
            refs[i].ctx->recording = 0;
            refs[i].ctx->thread_id = 0;
        }
    }
    /* The other stages hold nothing, or our function for a thread that ended (the
     * calling thread keeps one: the events stay on, as they should). */
    release_stages(refs, n);
    return 0;
}

static PyObject *tracer_start(TracerObject *self, PyObject *Py_UNUSED(ignored)) {
    if (self->state != FH_NEW) {
        PyErr_SetString(PyExc_RuntimeError, self->state == FH_RECORDING
                                                ? "this profiler is already recording"
                                                : "a profiler can only be started once");
        return NULL;
    }
    if (fh_active != NULL) {
        self->state = FH_REFUSED;
        Py_RETURN_FALSE;
    }
    /* The capsule import may run Python code: do it before anything is installed. */
    self->runtime = self->runtime_events ? runtime_api() : NULL;
    if (self->monitoring && fh_mon_prepare(self) < 0) {
        fh_mon_release(self);
        self->state = FH_STOPPED;
        self->failed = 1;
        return NULL;
    }
    /* Before 3.12 the "sys.setprofile" audit event is raised here, once (it may run
     * Python code, so before the clock anchor and before any thread is looked at). */
    if (!self->monitoring && fh_audit_setprofile() < 0) {
        self->state = FH_STOPPED;
        self->failed = 1;
        return NULL;
    }
    fh_pool_warm();
    int gc_token = fh_gc_pause();

    fh_tick_anchor(&self->t0_ticks, &self->t0_ns);
    PyThreadState *me = PyThreadState_Get();
    PyInterpreterState *interp = PyThreadState_GetInterpreter(me);
    /* From collecting the thread states to resuming collection no Python code runs, so no
     * thread can end (a thread deletes its state holding the GIL, which we keep) and no
     * frame being read can be popped. */
    Py_ssize_t n = 0;
    fh_stack *stacks = NULL;
    fh_thread_ref *refs = collect_threads(interp, &n);
    if (refs != NULL) {
        stacks = PyMem_Calloc((size_t)n + 1, sizeof(fh_stack));
        if (stacks == NULL) {
            PyErr_NoMemory();
        }
    }
    int read = stacks != NULL ? read_threads(refs, stacks, n, me) : -1;
    fh_gc_resume(gc_token);
    /* A collection due meanwhile (3.11) runs here, while the contexts are made: before
     * anything records. */
    int made = read == 0 ? make_contexts(self, refs, stacks, n) : -1;
    for (Py_ssize_t i = 0; stacks != NULL && i < n; i++) {
        drop_stack(&stacks[i]); /* what a failure left unread */
    }
    PyMem_Free(stacks);
    if (made < 0) {
        goto error;
    }
    Py_INCREF(self);
    fh_active = self;
    self->state = FH_RECORDING;
    for (Py_ssize_t i = 0; i < PyList_GET_SIZE(self->ctxs); i++) {
        ((CtxObject *)PyList_GET_ITEM(self->ctxs, i))->recording = 1;
    }
    fh_tasks_on = self->current_task != NULL;
    if (self->monitoring) {
        CtxObject *mine = NULL;
        for (Py_ssize_t i = 0; i < n; i++) {
            if (refs[i].ts == me) {
                mine = refs[i].ctx;
            }
        }
        if (fh_mon_install(self, mine) < 0) {
            tracer_uninstall(self);
            goto error;
        }
    } else if (install_profile(self, interp, refs, n) < 0) {
        tracer_uninstall(self);
        goto error;
    } else {
        /* Threads started while start() ran Python code after collecting the thread states
         * (from 3.12 the audit hooks run by staging; a collection's finalizers) are not
         * among them: they run no function of ours, and thread starts are only watched
         * from the threads that run one. Each thread state newer than the collection that
         * has no profile function is adopted as a thread start would be (threading's own
         * threads set the thread hook themselves, once they run). */
        uint64_t newest = 0;
        for (Py_ssize_t i = 0; i < n; i++) {
            newest = refs[i].id > newest ? refs[i].id : newest;
        }
        adopt_new_threads(self, newest);
        if (fh_active != self || self->state != FH_RECORDING) {
            PyErr_SetString(PyExc_RuntimeError, "the profiler was stopped while it started");
            goto error;
        }
    }
    PyMem_Free(refs);
    if (self->runtime != NULL) {
        if (self->runtime->add_listener(on_runtime_event, self) < 0) {
            PyErr_Clear();
        } else {
            self->listening = 1;
        }
    }
    Py_RETURN_TRUE;

error:
    PyMem_Free(refs);
    self->state = FH_STOPPED;
    self->failed = 1; /* collect() returns no thread: nothing was recorded */
    tracer_detach_contexts(self);
    return NULL;
}

/* The context of ours that `ts` runs for `tracer` and that was not released yet, or
 * NULL. */
static CtxObject *releasable_context(PyThreadState *ts, TracerObject *tracer) {
    if (!is_fh_profile(ts->c_profilefunc) || fh_is_holder(ts)) {
        return NULL;
    }
    CtxObject *ctx = (CtxObject *)ts->c_profileobj;
    return ctx->tracer == tracer && !ctx->released ? ctx : NULL;
}

#define FH_RELEASE_BATCH 32

/* Takes the profile function off every thread that runs one of `self`'s contexts,
 * putting back what the thread had before (kept as it was since start, in ctx->prev). In
 * rounds of at most FH_RELEASE_BATCH threads: one walk collects them (each is attempted
 * once), a stage is readied for each (what it had, or an empty one: no audit event), and
 * one walk swaps them in; no Python code runs from the first walk to the end of the
 * second. Never raises (failures are unraisable).
 *
 * One "sys.setprofile" audit event per stop: before 3.12 raised first, from 3.12 by the
 * last step, which switches the profile events off once no thread state has a function
 * (fh_profile_events_sync). If an audit hook refuses it, the release is complete all the
 * same: it needs no event, and the hook is not asked again. Nothing of ours is left on
 * any thread, the previous functions are back and the interpreter's count of profiled
 * threads is right; from 3.12 only the events may stay on, calling no profile function,
 * until the next allowed sys.setprofile (ours or the program's) switches them by that
 * count. Leaving our function on the thread instead, inert until a later release was
 * allowed, would keep a profile function of ours running there (sys.getprofile() showing
 * it) with the same events on. */
static void release_threads(TracerObject *self) {
    PyInterpreterState *interp = PyThreadState_GetInterpreter(PyThreadState_Get());
    if (fh_audit_setprofile() < 0) {
        PyErr_WriteUnraisable((PyObject *)self); /* stopping goes on regardless */
    }
    int dropped = 0;
    for (;;) {
        fh_thread_ref refs[FH_RELEASE_BATCH];
        memset(refs, 0, sizeof(refs));
        Py_ssize_t n = 0;
        for (PyThreadState *ts = PyInterpreterState_ThreadHead(interp);
             ts != NULL && n < FH_RELEASE_BATCH; ts = PyThreadState_Next(ts)) {
            CtxObject *ctx = releasable_context(ts, self);
            if (ctx != NULL) {
                ctx->released = 1;
                refs[n].ts = ts;
                refs[n].id = ts->id;
                refs[n].ctx = ctx;
                n++;
            }
        }
        if (n == 0) {
            break;
        }
        for (Py_ssize_t i = 0; i < n; i++) {
            fh_stage_move(&refs[i].stage, &refs[i].ctx->prev);
            /* an empty stage (from 3.12 a new holder: readying nothing raises no event) */
            if (!fh_stage_ready(&refs[i].stage) && fh_stage_set(&refs[i].stage, NULL, NULL) < 0) {
                PyErr_WriteUnraisable((PyObject *)self);
                refs[i].done = 1; /* memory ran out: the inert function stays */
            }
        }
        for (PyThreadState *ts = PyInterpreterState_ThreadHead(interp); ts != NULL;
             ts = PyThreadState_Next(ts)) {
            fh_thread_ref *ref = take_ref(refs, n, ts);
            /* unless the thread changed its function meanwhile */
            if (ref != NULL && is_fh_profile(ts->c_profilefunc) &&
                ts->c_profileobj == (PyObject *)ref->ctx) {
                fh_stage_swap(&ref->stage, ts);
            }
        }
        dropped |= release_stages(refs, n);
    }
    /* what threads that ended, or changed their function, had before */
    for (Py_ssize_t i = 0; i < PyList_GET_SIZE(self->ctxs); i++) {
        dropped |= fh_stage_release(&((CtxObject *)PyList_GET_ITEM(self->ctxs, i))->prev);
    }
    if (dropped && fh_profile_events_sync() < 0) {
        PyErr_WriteUnraisable((PyObject *)self);
    }
}

/* Stops recording: takes the profile function off every thread that still runs it
 * (restoring whatever that thread had before), and releases the single-recorder slot. */
static void tracer_uninstall(TracerObject *self) {
    PyObject *exc_type, *exc_value, *exc_tb;
    PyErr_Fetch(&exc_type, &exc_value, &exc_tb);
    for (Py_ssize_t i = 0; i < PyList_GET_SIZE(self->ctxs); i++) {
        ((CtxObject *)PyList_GET_ITEM(self->ctxs, i))->recording = 0;
    }
    if (fh_active == self) {
        fh_tasks_on = 0;
    }
    if (self->monitoring) {
        fh_mon_uninstall(self);
    } else {
        release_threads(self);
    }
    if (self->listening) {
        if (self->runtime->remove_listener(on_runtime_event, self) < 0) {
            PyErr_WriteUnraisable((PyObject *)self);
        }
        self->listening = 0;
    }
    if (fh_active == self) {
        fh_active = NULL;
        Py_DECREF(self);
    }
    PyErr_Restore(exc_type, exc_value, exc_tb);
}

static PyObject *tracer_stop(TracerObject *self, PyObject *Py_UNUSED(ignored)) {
    if (self->state == FH_REFUSED) {
        self->state = FH_STOPPED;
        Py_RETURN_NONE;
    }
    if (self->state != FH_RECORDING) {
        PyErr_SetString(PyExc_RuntimeError, self->state == FH_NEW
                                                ? "stop() called on a profiler that was never started"
                                                : "this profiler is already stopped");
        return NULL;
    }
    fh_tick_anchor(&self->t1_ticks, &self->t1_ns);
    self->state = FH_STOPPED;
    Py_INCREF(self); /* uninstall may drop fh_active's reference */
    tracer_uninstall(self);
    if (self->current_task != NULL) {
        tasks_close_waits(self, self->t1_ticks);
    }
    Py_DECREF(self);
    Py_RETURN_NONE;
}

/* Installed with threading.setprofile: runs as a Python-level profile function at the
 * first event of each thread started while recording, and swaps itself for the C one.
 * Returns the serial of the context recording the calling thread (None: none records
 * it), by which the caller names the thread. */
static PyObject *tracer_thread_hook(TracerObject *self, PyObject *const *args, Py_ssize_t nargs) {
    if (nargs != 3 || !PyFrame_Check(args[0]) || !PyUnicode_Check(args[1])) {
        PyErr_SetString(PyExc_TypeError, "thread_hook(frame, event, arg)");
        return NULL;
    }
    PyFrameObject *frame = (PyFrameObject *)args[0];
    PyObject *event = args[1];
    if (self->state != FH_RECORDING || fh_active != self || self->monitoring) {
        /* sys.monitoring sees every thread without it: the hook only had to run once */
        PyEval_SetProfile(NULL, NULL);
        CtxObject *mine = self->state == FH_RECORDING && fh_active == self ? fh_mon_current()
                                                                         : NULL;
        if (mine == NULL) {
            Py_RETURN_NONE;
        }
        return PyLong_FromUnsignedLongLong(mine->home != NULL ? mine->home->serial : mine->serial);
    }
    int is_call = PyUnicode_CompareWithASCIIString(event, "call") == 0;
    int is_c_call = PyUnicode_CompareWithASCIIString(event, "c_call") == 0;
    /* A thread adopted when it was started (adopt_new_threads) that threading has just
     * moved onto this hook: it goes back to its context, and this event is recorded as
     * the profile function would have. Of the contexts made for this thread state's
     * address, the newest is this thread's (an address is only reused once the older
     * thread is gone, and contexts are adopted in creation order). */
    PyThreadState *me = PyThreadState_Get();
    for (Py_ssize_t i = PyList_GET_SIZE(self->ctxs) - 1; i >= 0; i--) {
        CtxObject *ctx = (CtxObject *)PyList_GET_ITEM(self->ctxs, i);
        if (!ctx->unstarted || ctx->tstate != me) {
            continue;
        }
        if (ctx->thread_id == 0) {
            ctx_begin_on_thread(ctx, frame, is_call);
        }
        PyEval_SetProfile(fh_profile, (PyObject *)ctx);
        int what = is_call ? PyTrace_CALL : is_c_call ? PyTrace_C_CALL : -1;
        if (what < 0) {
            static const struct { const char *name; int what; } others[] = {
                {"return", PyTrace_RETURN},
                {"c_return", PyTrace_C_RETURN},
                {"c_exception", PyTrace_C_EXCEPTION},
            };
            for (size_t k = 0; k < sizeof(others) / sizeof(others[0]); k++) {
                if (PyUnicode_CompareWithASCIIString(event, others[k].name) == 0) {
                    what = others[k].what;
                }
            }
        }
        if (what >= 0) {
            fh_profile((PyObject *)ctx, frame, what, args[2]);
        }
        return PyLong_FromUnsignedLongLong(ctx->serial);
    }
    PyFrameObject *outer = is_call ? PyFrame_GetBack(frame) : (Py_INCREF(frame), frame);
    /* this thread's start frames begin now, not when recording started */
    CtxObject *ctx = tracer_add_context(self, PyThread_get_thread_ident(), outer, fh_ticks());
    Py_XDECREF(outer);
    if (ctx == NULL) {
        return NULL;
    }
    ctx->recording = 1;
    PyEval_SetProfile(fh_profile, (PyObject *)ctx);
    if (is_call) {
        record_py_call(ctx, fh_frame_code(frame), frame);
    } else if (is_c_call && ctx->c_calls) {
        record_c_call(ctx, args[2]);
    }
    return PyLong_FromUnsignedLongLong(ctx->serial);
}

/* Replaces the tagged code objects, also for sites already interned (tag_calls and
 * untag_calls while recording). */
static PyObject *tracer_retag(TracerObject *self, PyObject *tagged) {
    PyObject *codes = tagged_tuple(tagged);
    if (codes == NULL) {
        return NULL;
    }
    Py_XSETREF(self->tagged, codes);
    for (Py_ssize_t i = 0; i < PyList_GET_SIZE(self->ctxs); i++) {
        fh_sites *t = &((CtxObject *)PyList_GET_ITEM(self->ctxs, i))->sites;
        for (size_t j = 0; t->slots != NULL && j <= t->mask; j++) {
            fh_slot *slot = &t->slots[j];
            if (slot->key1 != 0 && slot->kind == FH_SITE_PY) {
                uint16_t flags = (uint16_t)((slot->flags & ~FH_FLAG_TAGGED) |
                    (code_is_tagged(self, (PyCodeObject *)slot->a) ? FH_FLAG_TAGGED : 0));
                slot->flags = flags;
                t->sites[slot->key1 - 1].flags = flags;
            }
        }
    }
    Py_RETURN_NONE;
}

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
static size_t ctx_kept(CtxObject *ctx) {
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
static PyObject *tracer_finished_contexts(TracerObject *self) {
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
    size_t n = ctx_kept(ctx);
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
                                    (unsigned long long)(ctx_kept(ctx) - ctx->nprefix), "dropped",
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
    PyObject *ctxs = tracer_finished_contexts(self);
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

static PyObject *tracer_aggregate(TracerObject *self, PyObject *Py_UNUSED(ignored)) {
    return tracer_recording(self, ctx_aggregate);
}

/* ------------------------------------------------------------------------------------ */
/* Event outputs, streamed from the buffers (writer.h).                                 */

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

static int chrome_open(void *arg, fh_replay *r, fh_frame *f) {
    ((fh_wthread *)arg)->pending = f - r->frames;
    return 0;
}

static int chrome_close(void *arg, fh_replay *r, fh_frame *f, int64_t end_ns) {
    fh_wthread *wt = (fh_wthread *)arg;
    fh_out *o = &wt->w->out;
    if (fh_out_str(o, ",\n{\"ph\":\"E\",\"ts\":") < 0 || fh_out_us(o, track_time(wt, end_ns)) < 0 ||
        fh_out_str(o, ",\"pid\":") < 0 || fh_out_i64(o, wt->w->pid) < 0 ||
        fh_out_str(o, ",\"tid\":") < 0 || fh_out_i64(o, wt->tid) < 0) {
        return -1;
    }
    return fh_out_str(o, f->exception ? ",\"args\":{\"exception\":true}}" : "}");
}

static const fh_sink chrome_sink = {chrome_open, chrome_close};

static int speedscope_event(fh_wthread *wt, const char *type, uint32_t fid, int64_t ns) {
    fh_out *o = &wt->w->out;
    int64_t at = ns - wt->w->origin;
    at = at < wt->last ? wt->last : at; /* speedscope needs time never to go back */
    wt->last = at;
    long long frame = PyLong_AsLongLong(PyList_GET_ITEM(wt->names, fid));
    if (frame == -1 && PyErr_Occurred()) {
        return -1;
    }
    int rc = fh_out_str(o, wt->first ? "\n{\"type\":\"" : ",\n{\"type\":\"");
    wt->first = 0;
    if (rc < 0 || fh_out_str(o, type) < 0 || fh_out_str(o, "\",\"frame\":") < 0 ||
        fh_out_i64(o, frame) < 0 || fh_out_str(o, ",\"at\":") < 0 ||
        fh_out_i64(o, at) < 0 || fh_out_str(o, "}") < 0) {
        return -1;
    }
    wt->w->out.written_events += type[0] == 'O';
    return 0;
}

static int speedscope_open(void *arg, fh_replay *r, fh_frame *f) {
    return speedscope_event((fh_wthread *)arg, "O", f->fid, f->start_ns);
}

static int speedscope_close(void *arg, fh_replay *r, fh_frame *f, int64_t end_ns) {
    return speedscope_event((fh_wthread *)arg, "C", f->fid, end_ns);
}

static const fh_sink speedscope_sink = {speedscope_open, speedscope_close};

/* Plays a thread's events until a call is pending (Chrome) or its events end. */
static int wthread_advance(fh_wthread *wt, const fh_sink *sink) {
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

/* Writes the begin event of a thread's pending call, numbered next. */
static int chrome_begin(fh_wthread *wt) {
    fh_wctx *w = wt->w;
    fh_out *o = &w->out;
    /* a tagged call's instance is the event right after it */
    const fh_event *next = fh_cursor_peek(&wt->cur, wt->ctx->skip);
    if (next != NULL && next->kind == FH_EV_TAG) {
        next = fh_cursor_next(&wt->cur, wt->ctx->skip); /* (the event peeked) */
        if (fh_replay_event(&wt->st, next, &wt->ctx->sites, &w->clock, &chrome_sink, wt) < 0) {
            return -1;
        }
    }
    fh_frame *f = &wt->st.frames[wt->pending];
    wt->pending = -1;
    f->id = ++w->next_id;
    PyObject *names = PyList_GET_ITEM(wt->names, f->fid);
    if (fh_out_str(o, ",\n{\"ph\":\"B\",") < 0 || fh_out_obj(o, PyTuple_GET_ITEM(names, 0)) < 0 ||
        fh_out_str(o, ",\"ts\":") < 0 || fh_out_us(o, track_time(wt, f->start_ns)) < 0 ||
        fh_out_str(o, ",\"pid\":") < 0 || fh_out_i64(o, w->pid) < 0 ||
        fh_out_str(o, ",\"tid\":") < 0 || fh_out_i64(o, wt->tid) < 0 ||
        fh_out_str(o, ",\"args\":{\"id\":") < 0 || fh_out_i64(o, (int64_t)f->id) < 0) {
        return -1;
    }
    if (f->vparent >= 0 && (fh_out_str(o, ",\"parent\":") < 0 ||
                            fh_out_i64(o, (int64_t)wt->st.frames[f->vparent].id) < 0)) {
        return -1;
    }
    if (fh_out_obj(o, PyTuple_GET_ITEM(names, 1)) < 0 ||
        (f->start_frame && fh_out_str(o, ",\"start_frame\":true") < 0)) {
        return -1;
    }
    if (f->tag != 0 && w->tag != NULL) {
        PyObject *desc = PyObject_CallFunction(w->tag, "nI", wt->index, f->tag - 1);
        if (desc == NULL) {
            return -1;
        }
        int rc = PyBytes_Check(desc) ? 0 : -1;
        if (rc < 0) {
            PyErr_SetString(PyExc_TypeError, "tag() must return bytes");
        } else {
            rc = fh_out_str(o, ",\"instance\":") < 0 || fh_out_obj(o, desc) < 0 ? -1 : 0;
        }
        Py_DECREF(desc);
        if (rc < 0) {
            return -1;
        }
    }
    o->written_events++;
    return fh_out_str(o, "}}");
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
static PyObject *writer_setup(TracerObject *self, fh_wctx *w, PyObject *write, PyObject *threads,
                              fh_wthread **out_wts, int chrome) {
    PyObject *ctxs = tracer_finished_contexts(self);
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

static void writer_teardown(fh_wctx *w, fh_wthread *wts, PyObject *ctxs) {
    for (Py_ssize_t i = 0; i < PyList_GET_SIZE(ctxs); i++) {
        fh_replay_free(&wts[i].st);
    }
    PyMem_Free(wts);
    PyMem_Free(w->out.buf);
    Py_DECREF(ctxs);
}

/* Whether thread a's pending call goes before thread b's: earlier start, then the thread
 * listed first (the trees' numbering sorts stably by start). */
static inline int pending_before(const fh_wthread *wts, Py_ssize_t a, Py_ssize_t b) {
    int64_t ta = wts[a].st.frames[wts[a].pending].start_ns;
    int64_t tb = wts[b].st.frames[wts[b].pending].start_ns;
    return ta < tb || (ta == tb && a < b);
}

static void heap_push(const fh_wthread *wts, Py_ssize_t *heap, Py_ssize_t *size, Py_ssize_t i) {
    Py_ssize_t at = (*size)++;
    while (at > 0 && pending_before(wts, i, heap[(at - 1) / 2])) {
        heap[at] = heap[(at - 1) / 2];
        at = (at - 1) / 2;
    }
    heap[at] = i;
}

static Py_ssize_t heap_pop(const fh_wthread *wts, Py_ssize_t *heap, Py_ssize_t *size) {
    Py_ssize_t top = heap[0];
    Py_ssize_t last = heap[--(*size)];
    Py_ssize_t at = 0;
    for (;;) {
        Py_ssize_t child = 2 * at + 1;
        if (child >= *size) {
            break;
        }
        if (child + 1 < *size && pending_before(wts, heap[child + 1], heap[child])) {
            child++;
        }
        if (!pending_before(wts, heap[child], last)) {
            break;
        }
        heap[at] = heap[child];
        at = child;
    }
    if (*size > 0) {
        heap[at] = last;
    }
    return top;
}

/* write_chrome(write, pid, threads, tag, progress=None): the events of a Chrome trace,
 * each preceded by a comma (the caller writes the document around them). Returns the
 * calls written. */
static PyObject *tracer_write_chrome(TracerObject *self, PyObject *args) {
    PyObject *write, *threads, *tag, *progress = Py_None;
    long long pid;
    if (!PyArg_ParseTuple(args, "OLOO|O:write_chrome", &write, &pid, &threads, &tag,
                          &progress)) {
        return NULL;
    }
    fh_wctx w;
    memset(&w, 0, sizeof(w));
    w.out.progress = progress == Py_None ? NULL : progress;
    w.pid = pid;
    w.tag = tag == Py_None ? NULL : tag;
    fh_wthread *wts = NULL;
    PyObject *ctxs = writer_setup(self, &w, write, threads, &wts, 1);
    if (ctxs == NULL) {
        return NULL;
    }
    Py_ssize_t n = PyList_GET_SIZE(ctxs);
    /* the threads with a pending call, in a min-heap by (start, thread index) */
    Py_ssize_t *heap = (Py_ssize_t *)PyMem_Malloc(((size_t)n + 1) * sizeof(Py_ssize_t));
    int rc = heap == NULL ? (PyErr_NoMemory(), -1) : 0;
    Py_ssize_t size = 0;
    for (Py_ssize_t i = 0; i < n && rc == 0; i++) {
        rc = wthread_advance(&wts[i], &chrome_sink);
        if (rc == 0 && wts[i].pending >= 0) {
            heap_push(wts, heap, &size, i);
        }
    }
    while (rc == 0 && size > 0) {
        Py_ssize_t i = heap_pop(wts, heap, &size);
        rc = chrome_begin(&wts[i]);
        if (rc == 0) {
            rc = wthread_advance(&wts[i], &chrome_sink);
        }
        if (rc == 0 && wts[i].pending >= 0) {
            heap_push(wts, heap, &size, i);
        }
    }
    PyMem_Free(heap);
    if (rc == 0) {
        rc = fh_out_flush(&w.out);
    }
    uint64_t written = w.out.written_events;
    writer_teardown(&w, wts, ctxs);
    return rc < 0 ? NULL : PyLong_FromUnsignedLongLong(written);
}

/* write_speedscope(write, threads, progress=None): per thread, its header (bytes, up to
 * the events list) and frame indices; writes the profiles, comma-separated. Returns the
 * calls written. */
static PyObject *tracer_write_speedscope(TracerObject *self, PyObject *args) {
    PyObject *write, *threads, *progress = Py_None;
    if (!PyArg_ParseTuple(args, "OO|O:write_speedscope", &write, &threads, &progress)) {
        return NULL;
    }
    fh_wctx w;
    memset(&w, 0, sizeof(w));
    w.out.progress = progress == Py_None ? NULL : progress;
    fh_wthread *wts = NULL;
    PyObject *ctxs = writer_setup(self, &w, write, threads, &wts, 0);
    if (ctxs == NULL) {
        return NULL;
    }
    int rc = 0;
    for (Py_ssize_t i = 0; i < PyList_GET_SIZE(ctxs) && rc == 0; i++) {
        fh_wthread *wt = &wts[i];
        fh_out *o = &w.out;
        if ((i > 0 && fh_out_str(o, ",\n") < 0) ||
            fh_out_obj(o, PyTuple_GET_ITEM(PyList_GET_ITEM(threads, i), 0)) < 0 ||
            wthread_advance(wt, &speedscope_sink) < 0) {
            rc = -1;
            break;
        }
        int64_t end = w.end_ns - w.origin;
        rc = fh_out_str(o, "],\"endValue\":") < 0 || fh_out_i64(o, end > wt->last ? end : wt->last) < 0 ||
             fh_out_str(o, "}") < 0 ? -1 : 0;
    }
    if (rc == 0) {
        rc = fh_out_flush(&w.out);
    }
    uint64_t written = w.out.written_events;
    writer_teardown(&w, wts, ctxs);
    return rc < 0 ? NULL : PyLong_FromUnsignedLongLong(written);
}

#include "gecko.h" /* (uses the writers' thread state and replay loop above) */

static PyObject *tracer_collect(TracerObject *self, PyObject *Py_UNUSED(ignored)) {
    return tracer_recording(self, ctx_collect);
}

static PyObject *tracer_get_state(TracerObject *self, void *closure) {
    static const char *names[] = {"new", "recording", "stopped", "refused"};
    return PyUnicode_FromString(names[self->state]);
}

static PyObject *tracer_get_event_count(TracerObject *self, void *closure) {
    size_t n = 0;
    for (Py_ssize_t i = 0; i < PyList_GET_SIZE(self->ctxs); i++) {
        CtxObject *ctx = (CtxObject *)PyList_GET_ITEM(self->ctxs, i);
        n += ctx->finalized > 0 ? ctx_kept(ctx) : fh_buffer_count(&ctx->buf);
    }
    return PyLong_FromSize_t(n);
}

static PyObject *tracer_get_memory(TracerObject *self, void *closure) {
    size_t n = 0;
    for (Py_ssize_t i = 0; i < PyList_GET_SIZE(self->ctxs); i++) {
        CtxObject *ctx = (CtxObject *)PyList_GET_ITEM(self->ctxs, i);
        n += sizeof(CtxObject) + ctx->buf.nblocks * sizeof(fh_block) +
             fh_sites_memory(&ctx->sites) + fh_sites_memory(&ctx->funcs) +
             (ctx->agg != NULL ? fh_agg_memory(ctx->agg) : 0) + ctx->nprefix * sizeof(fh_event);
    }
    return PyLong_FromSize_t(n);
}

/* (serial, thread id) of each context that recorded a thread, as collect() and
 * aggregate() list them: what naming the threads needs, without touching their events. */
static PyObject *tracer_get_threads(TracerObject *self, void *closure) {
    PyObject *out = PyList_New(0);
    if (out == NULL) {
        return NULL;
    }
    for (Py_ssize_t i = 0; self->state != FH_NEW && !self->failed && self->ctxs != NULL &&
                           i < PyList_GET_SIZE(self->ctxs); i++) {
        CtxObject *ctx = (CtxObject *)PyList_GET_ITEM(self->ctxs, i);
        if (ctx->thread_id == 0) {
            continue;
        }
        PyObject *item = Py_BuildValue("(Kk)", ctx->serial, ctx->thread_id);
        if (item == NULL || PyList_Append(out, item) < 0) {
            Py_XDECREF(item);
            Py_DECREF(out);
            return NULL;
        }
        Py_DECREF(item);
    }
    return out;
}

static PyObject *tracer_get_anchors(TracerObject *self, void *closure) {
    return Py_BuildValue("(KLKL)", (unsigned long long)self->t0_ticks, (long long)self->t0_ns,
                         (unsigned long long)self->t1_ticks, (long long)self->t1_ns);
}

static PyObject *tracer_get_runtime_events(TracerObject *self, void *closure) {
    return PyBool_FromLong(self->runtime != NULL);
}

static PyObject *tracer_get_backend(TracerObject *self, void *closure) {
    return PyUnicode_FromString(self->monitoring ? "monitoring" : "profile");
}

/* (serial, name) of each task's context (async_tasks): the name the task has now, or
 * had when it was last seen. */
static PyObject *tracer_get_tasks(TracerObject *self, void *closure) {
    PyObject *out = PyList_New(0);
    for (Py_ssize_t i = 0; out != NULL && self->state != FH_NEW && !self->failed &&
                           self->ctxs != NULL && i < PyList_GET_SIZE(self->ctxs); i++) {
        CtxObject *ctx = (CtxObject *)PyList_GET_ITEM(self->ctxs, i);
        if (ctx->home == NULL) {
            continue;
        }
        PyObject *task = fh_weakref_target(ctx->task_ref);
        if (task != NULL) {
            PyObject *name = task_name_of(task);
            Py_DECREF(task);
            if (name == NULL) {
                Py_CLEAR(out);
                break;
            }
            Py_SETREF(ctx->task_name, name);
        }
        PyObject *item = Py_BuildValue("(KO)", ctx->serial, ctx->task_name);
        if (item == NULL || PyList_Append(out, item) < 0) {
            Py_CLEAR(out);
        }
        Py_XDECREF(item);
    }
    return out;
}

static PyGetSetDef tracer_getset[] = {
    {"tasks", (getter)tracer_get_tasks, NULL,
     "(serial, name) of each asyncio task recorded on a context of its own", NULL},
    {"backend", (getter)tracer_get_backend, NULL,
     "'monitoring' (sys.monitoring callbacks) or 'profile' (a C profile function)", NULL},
    {"state", (getter)tracer_get_state, NULL, "new, recording, stopped or refused", NULL},
    {"event_count", (getter)tracer_get_event_count, NULL, "events recorded so far", NULL},
    {"memory", (getter)tracer_get_memory, NULL, "bytes held by the recorded data", NULL},
    {"threads", (getter)tracer_get_threads, NULL,
     "(serial, thread id) of each recorded thread, in the order collect() gives them", NULL},
    {"anchors", (getter)tracer_get_anchors, NULL,
     "(ticks, ns) at start and at stop: the clock's mapping", NULL},
    {"runtime_events", (getter)tracer_get_runtime_events, NULL,
     "whether framehook-runtime's events are being (or were) recorded", NULL},
    {NULL},
};

/* ------------------------------------------------------------------------------------ */
/* record_function: annotations, as a context manager or a decorator.                  */

typedef struct {
    PyObject_HEAD
    PyObject *name; /* str */
} RecordFunctionObject;

typedef struct {
    PyObject_HEAD
    PyObject *name;
    PyObject *func;
    PyObject *dict; /* for functools.update_wrapper */
    vectorcallfunc vectorcall;
} AnnotatedObject;

static void annotate(PyObject *name, uint32_t kind) {
    CtxObject *ctx = ctx_of_current_thread();
    if (ctx == NULL) {
        return;
    }
    uint64_t t = fh_ticks();
    uint32_t key = 0;
    if (name != NULL) {
        fh_slot *slot = intern_object(ctx, name, FH_SITE_NAME);
        if (slot == NULL) {
            ctx_break(ctx);
            return;
        }
        key = slot->key1 - 1;
    }
    ctx_push(ctx, kind, key, t);
}

static int recfn_init(RecordFunctionObject *self, PyObject *args, PyObject *kwds) {
    static char *kwlist[] = {"name", NULL};
    PyObject *name;
    if (!PyArg_ParseTupleAndKeywords(args, kwds, "U:record_function", kwlist, &name)) {
        return -1;
    }
    Py_INCREF(name);
    Py_XSETREF(self->name, name);
    return 0;
}

static void recfn_dealloc(RecordFunctionObject *self) {
    Py_XDECREF(self->name);
    Py_TYPE(self)->tp_free((PyObject *)self);
}

static PyObject *recfn_enter(RecordFunctionObject *self, PyObject *Py_UNUSED(ignored)) {
    if (self->name == NULL) {
        PyErr_SetString(PyExc_RuntimeError, "record_function was not initialised");
        return NULL;
    }
    annotate(self->name, FH_EV_ANNOT_BEGIN);
    Py_INCREF(self);
    return (PyObject *)self;
}

static PyObject *recfn_exit(RecordFunctionObject *self, PyObject *const *args, Py_ssize_t nargs) {
    annotate(NULL, FH_EV_ANNOT_END);
    Py_RETURN_FALSE;
}

static PyObject *annotated_vectorcall(AnnotatedObject *self, PyObject *const *args,
                                      size_t nargsf, PyObject *kwnames) {
    annotate(self->name, FH_EV_ANNOT_BEGIN);
    PyObject *result = PyObject_Vectorcall(self->func, args, nargsf, kwnames);
    annotate(NULL, FH_EV_ANNOT_END);
    return result;
}

/* Decorator form: record_function("name")(func) wraps func in an annotated callable. */
static PyObject *recfn_call(RecordFunctionObject *self, PyObject *args, PyObject *kwds) {
    PyObject *func;
    if (kwds != NULL && PyDict_GET_SIZE(kwds) != 0) {
        PyErr_SetString(PyExc_TypeError, "record_function(...) takes one callable to decorate");
        return NULL;
    }
    if (!PyArg_ParseTuple(args, "O:record_function", &func)) {
        return NULL;
    }
    if (!PyCallable_Check(func)) {
        PyErr_Format(PyExc_TypeError, "record_function can only decorate a callable, not %.100s",
                     Py_TYPE(func)->tp_name);
        return NULL;
    }
    AnnotatedObject *wrapper = PyObject_GC_New(AnnotatedObject, &AnnotatedType);
    if (wrapper == NULL) {
        return NULL;
    }
    Py_INCREF(self->name);
    wrapper->name = self->name;
    Py_INCREF(func);
    wrapper->func = func;
    wrapper->dict = NULL;
    wrapper->vectorcall = (vectorcallfunc)annotated_vectorcall;
    PyObject_GC_Track(wrapper);
    PyObject *functools = PyImport_ImportModule("functools");
    if (functools == NULL) {
        Py_DECREF(wrapper);
        return NULL;
    }
    PyObject *res = PyObject_CallMethod(functools, "update_wrapper", "OO", wrapper, func);
    Py_DECREF(functools);
    if (res == NULL) {
        Py_DECREF(wrapper);
        return NULL;
    }
    Py_DECREF(res);
    return (PyObject *)wrapper;
}

static PyObject *recfn_repr(RecordFunctionObject *self) {
    return PyUnicode_FromFormat("record_function(%R)", self->name != NULL ? self->name : Py_None);
}

static PyMemberDef recfn_members[] = {
    {"name", T_OBJECT, offsetof(RecordFunctionObject, name), READONLY, "the annotation's name"},
    {NULL},
};

static int annotated_traverse(AnnotatedObject *self, visitproc visit, void *arg) {
    Py_VISIT(self->name);
    Py_VISIT(self->func);
    Py_VISIT(self->dict);
    return 0;
}

static int annotated_clear(AnnotatedObject *self) {
    Py_CLEAR(self->name);
    Py_CLEAR(self->func);
    Py_CLEAR(self->dict);
    return 0;
}

static void annotated_dealloc(AnnotatedObject *self) {
    PyObject_GC_UnTrack(self);
    annotated_clear(self);
    PyObject_GC_Del(self);
}

/* Bound like a function, so decorated methods receive self. */
static PyObject *annotated_descr_get(PyObject *self, PyObject *obj, PyObject *type) {
    if (obj == NULL || obj == Py_None) {
        Py_INCREF(self);
        return self;
    }
    return PyMethod_New(self, obj);
}

static PyObject *annotated_repr(AnnotatedObject *self) {
    return PyUnicode_FromFormat("<record_function %R of %R>", self->name, self->func);
}

static PyMemberDef annotated_members[] = {
    {"annotation", T_OBJECT, offsetof(AnnotatedObject, name), READONLY, "the annotation's name"},
    {NULL},
};

static PyGetSetDef annotated_getset[] = {
    {"__dict__", PyObject_GenericGetDict, PyObject_GenericSetDict, NULL, NULL},
    {NULL},
};

/* ------------------------------------------------------------------------------------ */
/* Module                                                                               */

static PyObject *fh_get_clock_name(PyObject *module, PyObject *Py_UNUSED(ignored)) {
    return PyUnicode_FromString(FH_CLOCK_NAME);
}

static PyObject *fh_get_active(PyObject *module, PyObject *Py_UNUSED(ignored)) {
    PyObject *active = fh_active != NULL ? (PyObject *)fh_active : Py_None;
    Py_INCREF(active);
    return active;
}

static PyObject *fh_is_recording_thread(PyObject *module, PyObject *Py_UNUSED(ignored)) {
    return PyBool_FromLong(ctx_of_current_thread() != NULL);
}

static PyObject *fh_runtime_available(PyObject *module, PyObject *Py_UNUSED(ignored)) {
    return PyBool_FromLong(runtime_api() != NULL);
}

static PyObject *fh_get_idle_calls(PyObject *module, PyObject *Py_UNUSED(ignored)) {
    return PyLong_FromSsize_t(fh_idle_calls);
}

static PyObject *fh_profile_function_installed(PyObject *module, PyObject *Py_UNUSED(ignored)) {
    return PyBool_FromLong(is_fh_profile(PyThreadState_Get()->c_profilefunc));
}

/* Every method of the module's types, in one array (see fh_is_internal). */
static PyMethodDef fh_methods[FH_N_METHODS] = {
    /* 0: Tracer */
    {"start", (PyCFunction)tracer_start, METH_NOARGS,
     "Start recording on every thread; False (recording nothing) if another tracer records."},
    {"stop", (PyCFunction)tracer_stop, METH_NOARGS, "Stop recording on every thread."},
    {"thread_hook", (PyCFunction)(void (*)(void))tracer_thread_hook, METH_FASTCALL,
     "threading.setprofile hook that moves a new thread onto the C profile function."},
    {"collect", (PyCFunction)tracer_collect, METH_NOARGS,
     "The raw recording: clock anchors and, per thread, events (bytes) and sites."},
    {"aggregate", (PyCFunction)tracer_aggregate, METH_NOARGS,
     "Per thread, the calls aggregated per function, caller/callee pair and call path."},
    {"write_chrome", (PyCFunction)tracer_write_chrome, METH_VARARGS,
     "write_chrome(write, pid, threads, tag, progress=None): writes the Chrome trace "
     "events; progress(calls written) after each chunk."},
    {"write_gecko_samples", (PyCFunction)tracer_write_gecko_samples, METH_VARARGS,
     "write_gecko_samples(write, index): writes one thread's Firefox Profiler samples; "
     "returns its stack table (prefixes, fids) and marked calls"},
    {"write_speedscope", (PyCFunction)tracer_write_speedscope, METH_VARARGS,
     "write_speedscope(write, threads, progress=None): writes the speedscope profiles; "
     "progress(calls written) after each chunk."},
    {"retag", (PyCFunction)tracer_retag, METH_O,
     "Replace the tagged code objects (takes effect at once, also while recording)."},
    {NULL, NULL, 0, NULL},
    /* 10: record_function */
    {"__enter__", (PyCFunction)recfn_enter, METH_NOARGS, NULL},
    {"__exit__", (PyCFunction)(void (*)(void))recfn_exit, METH_FASTCALL, NULL},
    {NULL, NULL, 0, NULL},
    /* 13: module */
    {"clock_name", fh_get_clock_name, METH_NOARGS, "Name of the recording clock."},
    {"active", fh_get_active, METH_NOARGS, "The tracer that is recording, or None."},
    {"is_recording_thread", fh_is_recording_thread, METH_NOARGS,
     "Whether the calling thread is being recorded."},
    {"runtime_available", fh_runtime_available, METH_NOARGS,
     "Whether framehook-runtime's event interface (ABI 1) can be imported."},
    {"profile_function_installed", fh_profile_function_installed, METH_NOARGS,
     "Whether the calling thread runs this module's profile function (recording or not)."},
    {"idle_calls", fh_get_idle_calls, METH_NOARGS,
     "How many times this module's profile function was called for a thread that records "
     "nothing (stopped or broken), in this process."},
    {"sigterm_guard", fh_sigterm_guard, METH_O, fh_sigterm_guard_doc},
    {"sigterm_seen", fh_sigterm_seen, METH_NOARGS, fh_sigterm_seen_doc},
    {NULL, NULL, 0, NULL},
};
#define FH_TRACER_METHODS (fh_methods + 0)
#define FH_RECFN_METHODS (fh_methods + 10)
#define FH_MODULE_METHODS (fh_methods + 13)

static PyTypeObject TracerType = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "framehook.profiler._tracer.Tracer",
    .tp_doc = "Tracer(c_calls=True, tagged=(), describe=None, runtime_events=True, "
              "monitoring=False, hidden=(), muted=(), max_events=None)\n\n"
              "Records Python and C calls of every thread between start() and stop().\n"
              "hidden: code whose calls the outputs leave out (their callees stay); muted:\n"
              "code whose calls are left out with all they call; max_events: the newest\n"
              "events kept per thread, older ones folded into the aggregates.",
    .tp_basicsize = sizeof(TracerObject),
    .tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_HAVE_GC,
    .tp_new = tracer_new,
    .tp_init = (initproc)tracer_init,
    .tp_dealloc = (destructor)tracer_dealloc,
    .tp_traverse = (traverseproc)tracer_traverse,
    .tp_clear = (inquiry)tracer_clear,
    .tp_methods = FH_TRACER_METHODS,
    .tp_getset = tracer_getset,
};

static PyTypeObject RecordFunctionType = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "framehook.profiler.record_function",
    .tp_doc = "record_function(name)\n\n"
              "Annotates a region in the profile: `with record_function(\"step\"):` or, as a\n"
              "decorator, `@record_function(\"step\")`. Costs a branch when nothing records.",
    .tp_basicsize = sizeof(RecordFunctionObject),
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_new = PyType_GenericNew,
    .tp_init = (initproc)recfn_init,
    .tp_dealloc = (destructor)recfn_dealloc,
    .tp_call = (ternaryfunc)recfn_call,
    .tp_repr = (reprfunc)recfn_repr,
    .tp_methods = FH_RECFN_METHODS,
    .tp_members = recfn_members,
};

static PyTypeObject AnnotatedType = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "framehook.profiler._tracer.Annotated",
    .tp_doc = "A callable wrapped by record_function.",
    .tp_basicsize = sizeof(AnnotatedObject),
    .tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_HAVE_GC | Py_TPFLAGS_HAVE_VECTORCALL,
    .tp_dealloc = (destructor)annotated_dealloc,
    .tp_traverse = (traverseproc)annotated_traverse,
    .tp_clear = (inquiry)annotated_clear,
    .tp_call = PyVectorcall_Call,
    .tp_vectorcall_offset = offsetof(AnnotatedObject, vectorcall),
    .tp_descr_get = annotated_descr_get,
    .tp_dictoffset = offsetof(AnnotatedObject, dict),
    .tp_repr = (reprfunc)annotated_repr,
    .tp_members = annotated_members,
    .tp_getset = annotated_getset,
};

static struct PyModuleDef fh_module = {
    PyModuleDef_HEAD_INIT,
    .m_name = "framehook.profiler._tracer",
    .m_doc = "C recording core of framehook.profiler.",
    .m_size = -1, /* one recorder per process: the state is the static fh_active */
    .m_methods = FH_MODULE_METHODS,
};

/* Fills fh_spawn_meth from the _thread module (always built in). */
static int find_spawn_functions(void) {
    static const char *names[2] = {"start_new_thread", "start_joinable_thread"};
    PyObject *thread = PyImport_ImportModule("_thread");
    if (thread == NULL) {
        return -1;
    }
    for (int i = 0; i < 2; i++) {
        PyObject *fn = PyObject_GetAttrString(thread, names[i]);
        if (fn == NULL) {
            if (i == 0 || !PyErr_ExceptionMatches(PyExc_AttributeError)) {
                Py_DECREF(thread);
                return -1;
            }
            PyErr_Clear(); /* start_joinable_thread is 3.13+ */
            continue;
        }
        if (PyCFunction_Check(fn)) {
            fh_spawn_meth[i] = ((PyCFunctionObject *)fn)->m_ml->ml_meth;
        }
        Py_DECREF(fn);
    }
    Py_DECREF(thread);
    return 0;
}

static int add_int(PyObject *m, const char *name, long value) {
    return PyModule_AddIntConstant(m, name, value);
}

PyMODINIT_FUNC PyInit__tracer(void) {
    if (PyType_Ready(&CtxType) < 0 || PyType_Ready(&TracerType) < 0 ||
        PyType_Ready(&RecordFunctionType) < 0 || PyType_Ready(&AnnotatedType) < 0) {
        return NULL;
    }
    if (find_spawn_functions() < 0) {
        return NULL;
    }
    if (fh_await_name == NULL && (fh_await_name = PyUnicode_InternFromString("await")) == NULL) {
        return NULL;
    }
    PyObject *m = PyModule_Create(&fh_module);
    if (m == NULL) {
        return NULL;
    }
    Py_INCREF(&TracerType);
    if (PyModule_AddObject(m, "Tracer", (PyObject *)&TracerType) < 0) {
        Py_DECREF(&TracerType);
        goto error;
    }
    Py_INCREF(&RecordFunctionType);
    if (PyModule_AddObject(m, "record_function", (PyObject *)&RecordFunctionType) < 0) {
        Py_DECREF(&RecordFunctionType);
        goto error;
    }
    if (add_int(m, "EV_PY_CALL", FH_EV_PY_CALL) < 0 ||
        add_int(m, "EV_PY_RETURN", FH_EV_PY_RETURN) < 0 ||
        add_int(m, "EV_PY_UNWIND", FH_EV_PY_UNWIND) < 0 ||
        add_int(m, "EV_C_CALL", FH_EV_C_CALL) < 0 ||
        add_int(m, "EV_C_RETURN", FH_EV_C_RETURN) < 0 ||
        add_int(m, "EV_C_RAISE", FH_EV_C_RAISE) < 0 ||
        add_int(m, "EV_START_FRAME", FH_EV_START_FRAME) < 0 ||
        add_int(m, "EV_TAG", FH_EV_TAG) < 0 ||
        add_int(m, "EV_ANNOT_BEGIN", FH_EV_ANNOT_BEGIN) < 0 ||
        add_int(m, "EV_ANNOT_END", FH_EV_ANNOT_END) < 0 ||
        add_int(m, "EV_TASK_BEGIN", FH_EV_TASK_BEGIN) < 0 ||
        add_int(m, "EV_TASK_END", FH_EV_TASK_END) < 0 ||
        add_int(m, "EV_RUNTIME", FH_EV_RUNTIME) < 0 ||
        add_int(m, "SITE_PY", FH_SITE_PY) < 0 || add_int(m, "SITE_C", FH_SITE_C) < 0 ||
        add_int(m, "SITE_INSTANCE", FH_SITE_INSTANCE) < 0 ||
        add_int(m, "SITE_CODE", FH_SITE_CODE) < 0 || add_int(m, "SITE_NAME", FH_SITE_NAME) < 0 ||
        add_int(m, "SITE_TASK", FH_SITE_TASK) < 0 || add_int(m, "CLS_TASK", FH_CLS_TASK) < 0 ||
        add_int(m, "FLAG_TAGGED", FH_FLAG_TAGGED) < 0 ||
        add_int(m, "FLAG_HIDDEN", FH_FLAG_HIDDEN) < 0 ||
        add_int(m, "FLAG_MUTED", FH_FLAG_MUTED) < 0 ||
        add_int(m, "CLS_PY", FH_CLS_PY) < 0 || add_int(m, "CLS_C", FH_CLS_C) < 0 ||
        add_int(m, "CLS_ANNOT", FH_CLS_ANNOT) < 0 ||
        add_int(m, "CLS_LOOKUP", FH_CLS_LOOKUP) < 0 ||
        add_int(m, "CLS_REGION", FH_CLS_REGION) < 0 ||
        add_int(m, "BLOCK_EVENTS", FH_BLOCK_EVENTS) < 0 ||
        add_int(m, "MAX_START_DEPTH", FH_MAX_START_DEPTH) < 0 ||
        add_int(m, "EVENT_SIZE", (long)sizeof(fh_event)) < 0 ||
        add_int(m, "HAVE_MONITORING", FH_HAVE_MONITORING) < 0) {
        goto error;
    }
    return m;

error:
    Py_DECREF(m);
    return NULL;
}
