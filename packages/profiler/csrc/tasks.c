/* asyncio tasks (async_tasks): each task's coroutine frames are recorded on a context of
 * its own, as if the task were a thread, so that every output shows a tree per task.
 *
 * A task runs in steps: the event loop calls its coroutine's send() (or throw()), which
 * resumes the outermost coroutine frame, which resumes the frame it awaits, and so on;
 * the innermost then yields, and each frame returns in turn. The profile function (and
 * sys.monitoring) see a call for each resumed frame and a return for each that yields.
 * So a step begins with a coroutine frame entered on a thread's own context while
 * asyncio says a task is running (its outermost frame: the thread is in no step yet),
 * and ends when the task's context is back at depth 0.
 *
 * On the thread's track the step is a frame named after the task; on the task's track
 * the time between two steps is a frame named "await". The profile function (profile.c)
 * calls fh_task_enter and fh_task_leave. */
#include "profiler.h"

int fh_tasks_on = 0;
PyObject *fh_await_name = NULL;

/* Pushes a task frame's begin (named `name`) or end on `ctx`; 0, or -1 with the context
 * broken (memory ran out). */
static int task_push(CtxObject *ctx, PyObject *name, uint32_t kind, uint64_t t) {
    uint32_t key = 0;
    if (name != NULL) {
        fh_slot *slot = fh_intern_object(ctx, name, FH_SITE_TASK);
        if (slot == NULL) {
            fh_ctx_break(ctx);
            return -1;
        }
        key = slot->key1 - 1;
    }
    ctx_push(ctx, kind, key, t);
    return ctx->broken ? -1 : 0;
}

/* The task's name (new reference): get_name() where it has one, else its repr. */
PyObject *fh_task_name_of(PyObject *task) {
    PyObject *name = PyObject_CallMethod(task, "get_name", NULL);
    if (name != NULL && !PyUnicode_Check(name)) {
        Py_SETREF(name, PyObject_Str(name));
    }
    if (name == NULL) {
        PyErr_Clear();
        name = PyObject_Repr(task);
    }
    return name;
}

/* The context recording `task` for the thread context `thread` (borrowed: the tracer's
 * list keeps it), made on the task's first step; NULL with an exception set. Tasks are
 * found by address, checked against a weak reference: a task that is gone may leave its
 * address to a new one, which gets a context of its own. */
static CtxObject *task_context(CtxObject *thread, PyObject *task) {
    TracerObject *tracer = thread->tracer;
    PyObject *key = PyLong_FromVoidPtr(task);
    if (key == NULL) {
        return NULL;
    }
    CtxObject *found = (CtxObject *)PyDict_GetItemWithError(tracer->tasks, key);
    if (found != NULL && found->home == thread) {
        PyObject *alive = fh_weakref_target(found->task_ref);
        Py_XDECREF(alive);
        if (alive == task) {
            Py_DECREF(key);
            return found;
        }
    }
    if (PyErr_Occurred()) {
        Py_DECREF(key);
        return NULL;
    }
    CtxObject *ctx = fh_ctx_new(tracer, thread->thread_id);
    if (ctx == NULL) {
        Py_DECREF(key);
        return NULL;
    }
    ctx->home = thread;
    ctx->claimed = 1; /* (no thread's events may claim it: sys.monitoring's mon_attach) */
    ctx->recording = 1;
    ctx->task_ref = PyWeakref_NewRef(task, NULL);
    ctx->task_name = ctx->task_ref != NULL ? fh_task_name_of(task) : NULL;
    int rc = ctx->task_name == NULL || PyList_Append(tracer->ctxs, (PyObject *)ctx) < 0 ||
                     PyDict_SetItem(tracer->tasks, key, (PyObject *)ctx) < 0
                 ? -1
                 : 0;
    Py_DECREF(key);
    Py_DECREF(ctx); /* (the list keeps it when it was appended) */
    return rc < 0 ? NULL : ctx;
}

/* A coroutine frame is entered on a thread's own context: if it begins a task's step,
 * the step's events go to the task's context from now on, which is returned; else the
 * thread's. Runs inside the profile callback: nothing escapes (a failure leaves the step
 * on the thread's track). */
CtxObject *fh_task_enter(CtxObject *thread) {
    TracerObject *tracer = thread->tracer;
    if (tracer == NULL || tracer->current_task == NULL) {
        return thread;
    }
    PyObject *exc_type, *exc_value, *exc_tb;
    PyErr_Fetch(&exc_type, &exc_value, &exc_tb);
    /* (raises RuntimeError where no event loop runs: a coroutine driven by hand) */
    PyObject *task = PyObject_CallNoArgs(tracer->current_task);
    CtxObject *ctx = task != NULL && task != Py_None ? task_context(thread, task) : NULL;
    Py_XDECREF(task);
    if (ctx == NULL) {
        PyErr_Clear();
        PyErr_Restore(exc_type, exc_value, exc_tb);
        return thread;
    }
    uint64_t t = fh_ticks();
    task_push(thread, ctx->task_name, FH_EV_TASK_BEGIN, t);
    if (ctx->suspended != 0 && task_push(ctx, fh_await_name, FH_EV_TASK_BEGIN, ctx->suspended) == 0) {
        task_push(ctx, NULL, FH_EV_TASK_END, t);
    }
    ctx->suspended = 0;
    thread->task = ctx;
    PyErr_Restore(exc_type, exc_value, exc_tb);
    return ctx;
}

/* The outermost frame of a task's step has returned (or yielded) at `t`: the thread's
 * own context records again. */
void fh_task_leave(CtxObject *ctx, uint64_t t) {
    CtxObject *thread = ctx->home;
    thread->task = NULL;
    ctx->suspended = t;
    ctx_push(thread, FH_EV_TASK_END, 0, t);
}

/* At stop (`t`, before which every step that ended did): a task still waiting for its
 * next step waited until now; a task that is done (or gone) has no wait left. */
void fh_tasks_close_waits(TracerObject *tracer, uint64_t t) {
    for (Py_ssize_t i = 0; i < PyList_GET_SIZE(tracer->ctxs); i++) {
        CtxObject *ctx = (CtxObject *)PyList_GET_ITEM(tracer->ctxs, i);
        if (ctx->home == NULL || ctx->suspended == 0 || ctx->suspended >= t) {
            continue;
        }
        PyObject *task = fh_weakref_target(ctx->task_ref);
        PyObject *done = task != NULL ? PyObject_CallMethod(task, "done", NULL) : NULL;
        int waiting = done != NULL ? PyObject_Not(done) : 0;
        Py_XDECREF(done);
        Py_XDECREF(task);
        if (waiting < 0) {
            PyErr_Clear();
            waiting = 0;
        }
        if (waiting && task_push(ctx, fh_await_name, FH_EV_TASK_BEGIN, ctx->suspended) == 0) {
            task_push(ctx, NULL, FH_EV_TASK_END, t);
        }
        ctx->suspended = 0;
    }
}
