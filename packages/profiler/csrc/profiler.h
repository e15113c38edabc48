/* framehook.profiler._tracer: the recording half of the profiler. Declarations shared by
 * its C files, one file per concern:
 *   threadctx.c       the thread context (ThreadContext): what one thread records
 *   intern.c          interning call sites and functions (the slow paths of the hot path)
 *   profile.c         the hot path: the profile function and the sys.monitoring callbacks
 *   adoption.c        threads met while recording: thread starts, start frames, claims
 *   runtime_events.c  framehook-runtime's events (its capsule, when it is installed)
 *   tracer.c          the Tracer type: set-up, properties, the thread hook
 *   install.c         start() and stop(): the profile function put on and taken off threads
 *   sysmonitoring.c   the sys.monitoring backend (3.12+): tool id, registration, attaching
 *   collect.c         after stop: finalizing each thread, aggregate() and collect()
 *   writer.c          what the streamed outputs share: buffered output, cursors, replay
 *   chrome.c          write_chrome: the Chrome trace events
 *   speedscope.c      write_speedscope: the speedscope profiles
 *   gecko.c           write_gecko_samples: the Firefox Profiler's samples
 *   folded.c          write_folded: collapsed stacks and the HTML flame graph's tree
 *   annotate.c        record_function: annotations, as a context manager or a decorator
 *   tasks.c           asyncio tasks (async_tasks): a context per task, its steps and waits
 *   sigterm.c         the SIGTERM guard of followed children (sigterm.h)
 *   tracermodule.c    the module: its functions, its method table, PyInit__tracer
 * and the building blocks, each with its own header: blocks.c (event storage: buffer.h),
 * sites.c (the site tables), replay.c (replaying events), aggregate.c (running aggregates)
 * and compat.c (what differs across CPython versions).
 *
 * A C profile function is installed on every thread of the interpreter, and on threads
 * started while recording: by the thread starting them, at the C return of the _thread
 * function that starts them (fh_adopt_new_threads), or through a threading.setprofile
 * hook. Each thread records into its own context object: an append-only block buffer of
 * 16-byte events and a table interning call sites into small keys. Nothing is decoded
 * while recording, unless max_events bounds the buffer: then its oldest block is folded
 * into running aggregates (aggregate.c) before it is reused. After stop, aggregate()
 * gives the per-function, per-pair and per-path tables, write_chrome() and
 * write_speedscope() stream the events to a file (writer.c), and collect() hands the raw
 * events and the site table to Python, which builds the call trees on demand.
 *
 * Globals are defined once, in the file named beside their declaration. Only PyInit__tracer
 * is exported (-fvisibility=hidden, and hidden declarations below), so the files reach
 * each other's functions and globals directly. */
#ifndef FRAMEHOOK_PROFILER_H
#define FRAMEHOOK_PROFILER_H

#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <frameobject.h>
#include <string.h>

#include "aggregate.h"
#include "buffer.h"
#include "clock.h"
#include "compat.h"
#include "framehook_events.h"
#include "replay.h"
#include "sites.h"

/* Everything the extension's files declare for each other is hidden: -fvisibility=hidden
 * only applies to definitions, and a global declared with default visibility is reached
 * through the GOT (one more instruction per access, on the hot path too: fh_gen at every
 * sys.monitoring event). Each header declares its part the same way. */
#pragma GCC visibility push(hidden)

#define FH_MAX_START_DEPTH 128
#define FH_SHADOW_DEPTH 512

enum { FH_NEW = 0, FH_RECORDING = 1, FH_STOPPED = 2, FH_REFUSED = 3 };

typedef struct TracerObject TracerObject;
typedef struct CtxObject CtxObject;

/* ---- the thread context (threadctx.c) ------------------------------------------------ */
/* The object handed to the profile function of one thread. */
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
     * thread state without frames at start, or one fh_adopt_new_threads found just
     * created). Its thread_id is 0 until the thread's first event (the thread writes its
     * id without the GIL before it first takes it), and `tstate` stays set (compared,
     * never dereferenced after install). Contexts whose thread_id stays 0 recorded
     * nothing. */
    int unstarted;
    int released;      /* stop (install.c) took this context's function off its thread */
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
    /* Set once after stop (ctx_finalize, collect.c): the push events of the frames open where the
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
    /* asyncio tasks (tasks.c), borrowed from the tracer's list or owned: a thread's
     * context sends the events of a task's step to that task's own context (`task`); a
     * task's context knows its thread's (`home`), its task (a weak reference), its name,
     * and when its last step ended (ticks; 0: never, or running). */
    CtxObject *task;
    CtxObject *home;
    PyObject *task_ref;
    PyObject *task_name;
    uint64_t suspended;
};

extern PyTypeObject fh_CtxType;
CtxObject *fh_ctx_new(TracerObject *tracer, unsigned long thread_id); /* NULL with an exception */
/* Stops the thread's recording for good after a failure in a profile callback. */
void fh_ctx_break(CtxObject *ctx);

/* ---- the Tracer (tracer.c, install.c) ------------------------------------------------ */
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
    unsigned long long next_serial; /* the serial of the next context made */
    PyObject *current_task; /* async_tasks: asyncio.current_task (owned), else NULL */
    PyObject *tasks;        /* async_tasks: dict, the address of a task -> its context */
};

extern PyTypeObject fh_TracerType;                   /* tracer.c */
/* The tracer that is recording (owned), or NULL: only one records at a time (install.c). */
extern TracerObject *fh_active;
void fh_tracer_detach_contexts(TracerObject *self);  /* tracer.c */
PyObject *fh_tracer_start(TracerObject *self, PyObject *ignored);   /* install.c */
PyObject *fh_tracer_stop(TracerObject *self, PyObject *ignored);    /* install.c */
PyObject *fh_tracer_thread_hook(TracerObject *self, PyObject *const *args, Py_ssize_t nargs);
PyObject *fh_tracer_retag(TracerObject *self, PyObject *tagged);

/* ---- the module's methods (tracermodule.c) ------------------------------------------- */
/* Every method of this module's types and of the module, in one array: Tracer's from
 * FH_TRACER_METHODS, record_function's from FH_RECFN_METHODS, the module's from
 * FH_MODULE_METHODS, each run ended by a sentinel. */
#define FH_N_METHODS 23
extern PyMethodDef fh_methods[FH_N_METHODS];
#define FH_TRACER_METHODS (fh_methods + 0)
#define FH_RECFN_METHODS (fh_methods + 11)
#define FH_MODULE_METHODS (fh_methods + 14)

/* Calls into this module (stopping, annotation enter/exit) are the profiler's own work,
 * not the program's: they are never recorded. One range check covers them all because
 * every PyMethodDef lives in fh_methods. */
static inline int fh_is_internal(const PyMethodDef *ml) {
    return ml >= fh_methods && ml < fh_methods + FH_N_METHODS;
}

/* ---- the hot path (profile.c) -------------------------------------------------------- */
int fh_profile(PyObject *obj, PyFrameObject *frame, int what, PyObject *arg);
int fh_profile_first(PyObject *obj, PyFrameObject *frame, int what, PyObject *arg);
/* Calls of the profile function for a context that records nothing. */
extern Py_ssize_t fh_idle_calls;
/* The slot after a full block (a new block, or the ring's reuse); NULL when memory ran
 * out (no exception kept). */
fh_event *fh_ctx_grow(CtxObject *ctx);
/* A call, recorded as the profile function records it (for the thread hook). */
void fh_record_py_call(CtxObject *ctx, PyCodeObject *code, PyFrameObject *frame);
void fh_record_c_call(CtxObject *ctx, PyObject *fn);

static inline int is_fh_profile(Py_tracefunc func) {
    return func == fh_profile || func == fh_profile_first;
}

/* Appends one event to the thread's buffer (a compare and a store, but for a full block). */
static inline void ctx_push(CtxObject *ctx, uint32_t kind, uint32_t key, uint64_t t) {
    fh_buffer *b = &ctx->buf;
    fh_event *ev = b->cur != b->end ? b->cur++ : fh_ctx_grow(ctx);
    if (ev == NULL) {
        fh_ctx_break(ctx);
        return;
    }
    ev->t = t;
    ev->key = key;
    ev->kind = kind;
}

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

/* ---- interning (intern.c) ------------------------------------------------------------ */
/* Each returns the site's slot, or NULL with an exception set. */
fh_slot *fh_intern_py(CtxObject *ctx, PyCodeObject *code, PyCodeObject *caller);
fh_slot *fh_intern_c_slow(CtxObject *ctx, PyObject *fn, const void *ident, PyCodeObject *caller);
fh_slot *fh_intern_object(CtxObject *ctx, PyObject *obj, uint32_t kind);
void fh_record_tag(CtxObject *ctx, PyFrameObject *frame, uint64_t t);
int fh_code_is_tagged(TracerObject *tracer, PyCodeObject *code);

/* ---- asyncio tasks (tasks.c) --------------------------------------------------------- */
/* A tracer with async_tasks is recording: the hot path's only extra test. */
extern int fh_tasks_on;
/* The name of the frames that stand for a task's waits (made at module init). */
extern PyObject *fh_await_name;
/* The code flags of frames that can be a task's outermost coroutine (Task accepts
 * generator-based coroutines too). */
#define FH_CO_TASK_ROOT (CO_COROUTINE | CO_ITERABLE_COROUTINE)
CtxObject *fh_task_enter(CtxObject *thread);
void fh_task_leave(CtxObject *ctx, uint64_t t);
void fh_tasks_close_waits(TracerObject *tracer, uint64_t t);
PyObject *fh_task_name_of(PyObject *task); /* new reference, or NULL with an exception */

/* ---- threads (adoption.c) ------------------------------------------------------------ */
/* The C functions that start a thread whose state they create in the calling thread
 * (_thread.start_new_thread and its alias start_new; start_joinable_thread, 3.13+, which
 * threading uses), by their C entry point; NULL where absent. Found at module init
 * (fh_find_spawn_functions). */
extern PyCFunction fh_spawn_meth[2];
int fh_find_spawn_functions(void);

static inline int fh_is_spawn(PyObject *fn) {
    if (Py_TYPE(fn) != &PyCFunction_Type && Py_TYPE(fn) != &PyCMethod_Type) {
        return 0;
    }
    PyCFunction meth = ((PyCFunctionObject *)fn)->m_ml->ml_meth;
    return meth != NULL && (meth == fh_spawn_meth[0] || meth == fh_spawn_meth[1]);
}

void fh_spawn_begin(CtxObject *ctx);
void fh_spawn_end(CtxObject *ctx, PyObject *fn, int returned);
void fh_adopt_new_threads(TracerObject *tracer, uint64_t floor);
void fh_ctx_claim(CtxObject *ctx, PyThreadState *ts, PyFrameObject *frame, int entering);
void fh_ctx_begin_on_thread(CtxObject *ctx, PyFrameObject *frame, int entering);

/* The frames on a thread's stack, innermost first, at most FH_MAX_START_DEPTH (owned). */
typedef struct {
    PyFrameObject *f[FH_MAX_START_DEPTH];
    int n;
} fh_stack;

void fh_drop_stack(fh_stack *st);
int fh_read_stack(fh_stack *st, PyFrameObject *innermost);
CtxObject *fh_add_context_with_stack(TracerObject *self, unsigned long thread_id, fh_stack *st,
                                     uint64_t t);
CtxObject *fh_tracer_add_context(TracerObject *self, unsigned long thread_id,
                                 PyFrameObject *innermost, uint64_t t);

/* ---- framehook-runtime's events (runtime_events.c) ----------------------------------- */
void fh_on_runtime_event(void *userdata, int event, PyObject *code);
const fh_runtime_events_api *fh_runtime_api(void);

/* ---- the sys.monitoring backend (sysmonitoring.c; its callbacks are in profile.c) ---- */
/* Bumped at each start and stop; thread-local pointers of another generation are stale. */
extern uint64_t fh_gen;
int fh_mon_prepare(TracerObject *self);
void fh_mon_release(TracerObject *self);
int fh_mon_install(TracerObject *self, CtxObject *mine);
void fh_mon_uninstall(TracerObject *self);
CtxObject *fh_mon_current(void);

#if FH_HAVE_MONITORING

#if defined(__GNUC__) || defined(__clang__)
#define FH_TLS __thread __attribute__((tls_model("initial-exec")))
#define FH_LIKELY(x) __builtin_expect(!!(x), 1)
#else
#define FH_TLS _Thread_local
#define FH_LIKELY(x) (x)
#endif

typedef struct {
    CtxObject *ctx; /* borrowed from the tracer's list; NULL when this thread records nothing */
    uint64_t gen;
} fh_tls_t;

extern FH_TLS fh_tls_t fh_tls;
/* sys.monitoring.MISSING (owned while recording): CALL's arg0 when there is no argument. */
extern PyObject *fh_mon_missing;
CtxObject *fh_mon_attach(PyCodeObject *entering);

static inline CtxObject *mon_ctx(PyCodeObject *entering) {
    CtxObject *ctx = FH_LIKELY(fh_tls.gen == fh_gen) ? fh_tls.ctx : fh_mon_attach(entering);
    if (ctx == NULL || !ctx->recording) {
        return NULL;
    }
    return ctx->task != NULL ? ctx->task : ctx; /* (in an asyncio task's step) */
}

PyObject *fh_mon_py_start(PyObject *self, PyObject *const *args, Py_ssize_t nargs);
PyObject *fh_mon_py_return(PyObject *self, PyObject *const *args, Py_ssize_t nargs);
PyObject *fh_mon_py_unwind(PyObject *self, PyObject *const *args, Py_ssize_t nargs);
PyObject *fh_mon_call(PyObject *self, PyObject *const *args, Py_ssize_t nargs);
PyObject *fh_mon_c_return(PyObject *self, PyObject *const *args, Py_ssize_t nargs);
PyObject *fh_mon_c_raise(PyObject *self, PyObject *const *args, Py_ssize_t nargs);

#endif

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
        fh_ctx_claim((CtxObject *)ts->c_profileobj, ts, NULL, 0);
    }
    CtxObject *ctx = (CtxObject *)ts->c_profileobj;
    return !ctx->recording ? NULL : ctx->task != NULL ? ctx->task : ctx;
}

/* ---- after stop (collect.c) ---------------------------------------------------------- */
/* The contexts of a stopped tracer that recorded a thread, finalized; a new list. */
PyObject *fh_tracer_finished_contexts(TracerObject *self);
size_t fh_ctx_kept(CtxObject *ctx); /* events a finished context keeps */
PyObject *fh_tracer_collect(TracerObject *self, PyObject *ignored);
PyObject *fh_tracer_aggregate(TracerObject *self, PyObject *ignored);

/* ---- outputs (chrome.c, speedscope.c, gecko.c, folded.c) --------------------------------------- */
PyObject *fh_tracer_write_chrome(TracerObject *self, PyObject *args);
PyObject *fh_tracer_write_speedscope(TracerObject *self, PyObject *args);
PyObject *fh_tracer_write_gecko_samples(TracerObject *self, PyObject *args);
PyObject *fh_tracer_write_folded(TracerObject *self, PyObject *args); /* folded.c */

/* ---- record_function (annotate.c) ---------------------------------------------------- */
extern PyTypeObject fh_RecordFunctionType;
extern PyTypeObject fh_AnnotatedType;
PyObject *fh_recfn_enter(PyObject *self, PyObject *ignored);
PyObject *fh_recfn_exit(PyObject *self, PyObject *const *args, Py_ssize_t nargs);

#pragma GCC visibility pop

#endif
