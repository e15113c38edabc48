/* start() and stop(): the profile function (or the sys.monitoring callbacks) put on every
 * thread of the interpreter, and taken off again with what each thread had before put
 * back. Thread states found in the interpreter's list are only dereferenced while no
 * Python code has run since they were found. */
#include "profiler.h"

/* The tracer that is recording (owned), or NULL: only one records at a time. */
TracerObject *fh_active = NULL;

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
        int rc = fh_read_stack(&stacks[i], top);
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
            fh_drop_stack(&stacks[i]);
            continue;
        }
        CtxObject *ctx = fh_add_context_with_stack(self, refs[i].thread_id, &stacks[i],
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

static void tracer_uninstall(TracerObject *self);

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

PyObject *fh_tracer_start(TracerObject *self, PyObject *Py_UNUSED(ignored)) {
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
    self->runtime = self->runtime_events ? fh_runtime_api() : NULL;
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
        fh_drop_stack(&stacks[i]); /* what a failure left unread */
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
        fh_adopt_new_threads(self, newest);
        if (fh_active != self || self->state != FH_RECORDING) {
            PyErr_SetString(PyExc_RuntimeError, "the profiler was stopped while it started");
            goto error;
        }
    }
    PyMem_Free(refs);
    if (self->runtime != NULL) {
        if (self->runtime->add_listener(fh_on_runtime_event, self) < 0) {
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
    fh_tracer_detach_contexts(self);
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
        if (self->runtime->remove_listener(fh_on_runtime_event, self) < 0) {
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

PyObject *fh_tracer_stop(TracerObject *self, PyObject *Py_UNUSED(ignored)) {
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
        fh_tasks_close_waits(self, self->t1_ticks);
    }
    Py_DECREF(self);
    Py_RETURN_NONE;
}
