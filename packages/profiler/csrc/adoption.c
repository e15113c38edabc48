/* Threads met while recording. The profile function backend's thread starts, seen from
 * the thread that starts them (fh_spawn_begin, fh_spawn_end, fh_adopt_new_threads); the
 * start frames of a thread's context, read from its stack; and a context made before its
 * thread ran meeting that thread at its first event (fh_ctx_claim). */
#include "profiler.h"

PyCFunction fh_spawn_meth[2] = {NULL, NULL};

/* Fills fh_spawn_meth from the _thread module (always built in). */
int fh_find_spawn_functions(void) {
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

/* Threads started while recording, seen from the thread that starts them.
 *
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

void fh_spawn_begin(CtxObject *ctx) {
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
void fh_adopt_new_threads(TracerObject *tracer, uint64_t floor) {
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
        CtxObject *ctx = fh_ctx_new(tracer, 0);
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
void fh_spawn_end(CtxObject *ctx, PyObject *fn, int returned) {
    if (!fh_is_spawn(fn)) {
        return;
    }
    ctx->spawning--;
    if (returned) {
        fh_adopt_new_threads(ctx->tracer, ctx->spawn_floor);
    }
}

void fh_drop_stack(fh_stack *st) {
    for (int i = 0; i < st->n; i++) {
        Py_DECREF(st->f[i]);
    }
    st->n = 0;
}

/* Reads the stack from `innermost` (borrowed, or NULL) outwards. From 3.11 this may
 * create frame objects. Returns 0, or -1 with an exception set (nothing kept). */
int fh_read_stack(fh_stack *st, PyFrameObject *innermost) {
    st->n = 0;
    PyFrameObject *f = innermost;
    Py_XINCREF(f);
    while (f != NULL && st->n < FH_MAX_START_DEPTH) {
        st->f[st->n++] = f;
        f = PyFrame_GetBack(f);
    }
    Py_XDECREF(f);
    if (PyErr_Occurred()) { /* a frame object could not be made */
        fh_drop_stack(st);
        return -1;
    }
    return 0;
}

/* Records a stack read by fh_read_stack as start frames, outermost first, and releases it. */
static int record_stack(CtxObject *ctx, fh_stack *st, uint64_t t) {
    int rc = 0;
    for (int i = st->n - 1; i >= 0 && rc == 0; i--) {
        PyCodeObject *code = fh_frame_code(st->f[i]);
        fh_slot *slot = fh_intern_py(ctx, code, shadow_top(ctx));
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
    fh_drop_stack(st);
    return rc;
}

/* A context made for a thread before it was seen running meets its thread, on the thread
 * itself: adopted when it was started (fh_adopt_new_threads), found without frames at start,
 * or found after start() had collected the threads (a thread started while start() ran
 * Python code, which may have run since). The context learns the thread's id, and the
 * frames the thread is in already become its start frames, stamped now: none for a
 * thread that has just started. `frame` is the frame of the event (NULL: the current
 * one); `entering` when the event enters it (a call: recorded by the event itself, so
 * the start frames begin at its caller). Runs inside a profile callback: nothing escapes
 * (a failure stops this thread's recording). */
void fh_ctx_begin_on_thread(CtxObject *ctx, PyFrameObject *frame, int entering) {
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
    if (PyErr_Occurred() || fh_read_stack(&st, outer) < 0 ||
        record_stack(ctx, &st, fh_ticks()) < 0) {
        fh_ctx_break(ctx);
    }
    Py_XDECREF(outer);
    PyErr_Restore(exc_type, exc_value, exc_tb);
}

/* A context given fh_profile_first meets its thread (fh_ctx_begin_on_thread), at the
 * thread's first event, which is about `frame` (NULL: the current frame). Its profile
 * function becomes the plain one (the object stays, and so does the tracing state: only
 * the function pointer changes). */
void fh_ctx_claim(CtxObject *ctx, PyThreadState *ts, PyFrameObject *frame, int entering) {
    ts->c_profilefunc = fh_profile;
    fh_ctx_begin_on_thread(ctx, frame, entering);
}

/* Creates the context of a thread and records `st` as its start frames (released
 * either way). Returns the context (borrowed: the tracer's list keeps it), or NULL with
 * an exception set. */
CtxObject *fh_add_context_with_stack(TracerObject *self, unsigned long thread_id,
                                     fh_stack *st, uint64_t t) {
    CtxObject *ctx = fh_ctx_new(self, thread_id);
    if (ctx == NULL) {
        fh_drop_stack(st);
        return NULL;
    }
    int appended = PyList_Append(self->ctxs, (PyObject *)ctx);
    if (appended < 0) {
        fh_drop_stack(st);
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
CtxObject *fh_tracer_add_context(TracerObject *self, unsigned long thread_id,
                                 PyFrameObject *innermost, uint64_t t) {
    fh_stack st;
    if (fh_read_stack(&st, innermost) < 0) {
        return NULL;
    }
    return fh_add_context_with_stack(self, thread_id, &st, t);
}
