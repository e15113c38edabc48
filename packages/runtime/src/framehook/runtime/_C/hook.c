/* The eval-frame function and the thread-local callbacks.
 *
 * The interpreter-wide eval function is ours only while at least one thread has a
 * callback; whatever was installed before us is called for every frame we do not
 * replace, and put back when the last thread turns its callback off. */
#include "runtime.h"

/* What one entry of a callback scope (enable(), run_only(), disable()) replaced, kept on
 * the entering thread until the scope exits: a list, latest entry first. */
typedef struct fh_scope_entry {
    PyObject *scope;  /* the scope object (owned) */
    PyObject *saved;  /* the callback it replaced: Py_None, Py_False or a callable (owned) */
    struct fh_scope_entry *next;
} fh_scope_entry;

typedef struct {
    PyObject *callback;   /* NULL: off; Py_False: run-only; otherwise a callable. Owned. */
    PyCodeObject *bypass; /* the next frame of this code runs as is (shadow.c's calls) */
    int suspended;        /* > 0 while this thread's guards or callback run */
    int registered;       /* a cleanup capsule sits in the thread's dict */
    fh_scope_entry *scopes; /* scopes entered on this thread and not exited yet */
    /* Frames are refused while the C stack pointer is less than stack_reserve bytes above
     * stack_low (unsigned: an address outside the thread's stack never is). stack_reserve
     * is UINTPTR_MAX until the thread's stack has been measured, 0 when it cannot be. */
    uintptr_t stack_low;
    uintptr_t stack_reserve;
} fh_thread;

/* One struct, so the hook computes the thread-local address once per frame. */
static _Thread_local fh_thread tls = {.stack_reserve = UINTPTR_MAX};
static int active_threads;
static int installed;
static _PyFrameEvalFunction previous_eval;
/* Remembered so that uninstalling works during finalization, when the thread
 * clearing another thread's state may have no current thread state. */
static PyInterpreterState *hooked_interp;
/* Key of the cleanup capsule in thread dicts, made once (with the module) rather than
 * interned anew by PyDict_SetItemString on each thread. */
static PyObject *thread_key;

PyObject *fh_guard_error_hook;
int fh_trace_callbacks;

PyObject *fh_eval_default(PyThreadState *ts, fh_frame *f, int throw_flag) {
    if (previous_eval != NULL) {
        return previous_eval(ts, f, throw_flag);
    }
    return _PyEval_EvalFrameDefault(ts, f, throw_flag);
}

int fh_bypass_next(PyCodeObject *co) {
    tls.bypass = co;
    return 0;
}

static PyObject *framehook_eval(PyThreadState *ts, fh_frame *f, int throw_flag);

#if FH_HOOK_ARMED_BY_FUNCTION_MARKS
/* Set while the hook is active through function marks rather than installed. */
static int marks_mode;
/* Armed by fh_marked_call for the next frame of armed_code on armed_ts; armed_saved is the
 * eval function to put back once that frame is in (NULL: CPython's). */
static PyCodeObject *armed_code;
static PyThreadState *armed_ts;
static _PyFrameEvalFunction armed_saved;
static int installed_for_inits;
#endif

/* Makes ours the interpreter's eval function, remembering the one it replaces. */
static void put_eval_function(PyInterpreterState *interp) {
    _PyFrameEvalFunction current = _PyInterpreterState_GetEvalFrameFunc(interp);
    if (current != framehook_eval) {
        previous_eval = (current == _PyEval_EvalFrameDefault) ? NULL : current;
        _PyInterpreterState_SetEvalFrameFunc(interp, framehook_eval);
    }
}

/* Puts the replaced eval function back, if ours is still the interpreter's: 1 if it was. */
static int take_eval_function(PyInterpreterState *interp) {
    if (_PyInterpreterState_GetEvalFrameFunc(interp) != framehook_eval) {
        return 0;
    }
    /* Setting the default back (not NULL) lets 3.11+ inline calls again. */
    _PyInterpreterState_SetEvalFrameFunc(interp, previous_eval ? previous_eval : _PyEval_EvalFrameDefault);
    return 1;
}

#if FH_HOOK_ARMED_BY_FUNCTION_MARKS

/* Installs or removes the eval function as __init__ codes gain or lose their entries. */
static void follow_inits(void) {
    int want = marks_mode && fh_inits_with_entries > 0;
    if (want == installed_for_inits || hooked_interp == NULL) {
        return;
    }
    if (want) {
        put_eval_function(hooked_interp);
    }
    else {
        take_eval_function(hooked_interp);
    }
    installed_for_inits = want;
}

static void count_init(PyCodeObject *co, fh_extra *ex) {
    if (ex->init_counted || ex->head == NULL) {
        return;
    }
    if (fh_code_is_init(co)) {
        ex->init_counted = 1;
        fh_inits_with_entries++;
        follow_inits();
    }
}
#endif

static void install(void) {
    PyInterpreterState *interp = PyInterpreterState_Get();
    hooked_interp = interp;
#if FH_HOOK_ARMED_BY_FUNCTION_MARKS
    if (fh_marks_activate() == 0) {
        marks_mode = 1;
        installed = 1;
        follow_inits();
        return;
    }
#endif
    put_eval_function(interp);
    installed = 1;
}

static void uninstall(void) {
#if FH_HOOK_ARMED_BY_FUNCTION_MARKS
    if (marks_mode) {
        fh_marks_deactivate();
        marks_mode = 0;
        follow_inits();
        installed = 0;
        return;
    }
#endif
    PyInterpreterState *interp = hooked_interp;
    if (interp == NULL) {
        return;
    }
    if (take_eval_function(interp)) {
        previous_eval = NULL;
    }
    /* Otherwise another extension chained onto us: leave its function in place; ours,
     * if it calls it, passes every frame through. */
    installed = 0;
}

int fh_is_installed(void) {
#if FH_HOOK_ARMED_BY_FUNCTION_MARKS
    if (marks_mode) {
        return installed;
    }
#endif
    return _PyInterpreterState_GetEvalFrameFunc(PyInterpreterState_Get()) == framehook_eval;
}

static void store_callback(fh_thread *t, PyObject *callback) {
    PyObject *old = t->callback;
    t->callback = callback;
    if (old == NULL && callback != NULL) {
        if (active_threads++ == 0) {
            install();
        }
    }
    else if (old != NULL && callback == NULL) {
        if (--active_threads == 0) {
            uninstall();
        }
    }
    Py_XDECREF(old);
}

/* Runs when the thread's state is cleared (the thread ends), so a thread that exits
 * with a callback set does not keep the eval function installed. */
static void thread_cleanup(PyObject *capsule) {
    fh_thread *t = (fh_thread *)PyCapsule_GetPointer(capsule, "framehook.runtime.thread");
    if (t == NULL) {
        PyErr_Clear();
        return;
    }
    t->registered = 0;
    /* scopes the thread never exited (a generator suspended inside a with block) */
    while (t->scopes != NULL) {
        fh_scope_entry *e = t->scopes;
        t->scopes = e->next;
        Py_DECREF(e->scope);
        Py_DECREF(e->saved);
        PyMem_Free(e);
    }
    store_callback(t, NULL);
}

#if !FH_EVALUATOR_MEASURES_C_STACK
static void measure_stack(fh_thread *t);
#endif

int fh_hook_init(void) {
#if !FH_EVALUATOR_MEASURES_C_STACK
    /* The importing thread's stack, now rather than at its first hooked frame: for the
     * main thread glibc parses /proc/self/maps, 0.4 ms once numpy and numba are loaded. */
    measure_stack(&tls);
#endif
    thread_key = PyUnicode_InternFromString("framehook.runtime.thread");
    return thread_key ? 0 : -1;
}

static int register_thread_cleanup(void) {
    if (tls.registered) {
        return 0;
    }
    PyObject *dict = PyThreadState_GetDict();
    if (dict == NULL) {
        PyErr_SetString(PyExc_RuntimeError, "framehook: this thread has no thread state dict");
        return -1;
    }
    PyObject *capsule = PyCapsule_New(&tls, "framehook.runtime.thread", thread_cleanup);
    if (capsule == NULL) {
        return -1;
    }
    int rc = PyDict_SetItem(dict, thread_key, capsule);
    Py_DECREF(capsule);
    if (rc == 0) {
        tls.registered = 1;
    }
    return rc;
}

PyObject *fh_set_callback(PyObject *callback) {
    PyObject *previous = tls.callback ? Py_NewRef(tls.callback) : Py_NewRef(Py_None);
    if (callback != Py_None && register_thread_cleanup() < 0) {
        Py_DECREF(previous);
        return NULL;
    }
    store_callback(&tls, callback == Py_None ? NULL : Py_NewRef(callback));
    return previous;
}

PyObject *fh_get_callback(void) {
    return Py_NewRef(tls.callback ? tls.callback : Py_None);
}

/* ---- callback scopes ----------------------------------------------------------- */
/* Entering a scope installs its callback and remembers the replaced one; exiting puts that
 * back. Neither evaluates a Python frame after the scope's callback is installed, so a
 * callback that fails for every frame cannot keep either from completing. */
int fh_scope_enter(PyObject *scope, PyObject *callback) {
    if (register_thread_cleanup() < 0) { /* frees the entries of a thread that exits inside */
        return -1;
    }
    fh_scope_entry *e = PyMem_Malloc(sizeof(fh_scope_entry));
    if (e == NULL) {
        PyErr_NoMemory();
        return -1;
    }
    /* cannot fail from here on: the thread is registered */
    e->scope = Py_NewRef(scope);
    e->saved = fh_get_callback();
    e->next = tls.scopes;
    tls.scopes = e;
    store_callback(&tls, callback == Py_None ? NULL : Py_NewRef(callback));
    return 0;
}

int fh_scope_exit(PyObject *scope) {
    fh_scope_entry **link = &tls.scopes;
    while (*link != NULL && (*link)->scope != scope) {
        link = &(*link)->next;
    }
    fh_scope_entry *e = *link;
    if (e == NULL) {
        PyErr_Format(PyExc_RuntimeError,
                     "framehook: this %.100s was not entered on this thread (or was exited already), so there is "
                     "no callback of this thread for it to restore",
                     Py_TYPE(scope)->tp_name);
        return -1;
    }
    *link = e->next;
    /* Restored first, with no Python code run before: the releases below may run finalizers */
    store_callback(&tls, e->saved == Py_None ? NULL : e->saved);
    if (e->saved == Py_None) {
        Py_DECREF(e->saved);
    }
    Py_DECREF(e->scope);
    PyMem_Free(e);
    return 0;
}

/* ---- lookup ---------------------------------------------------------------- */
/* The entry locals dict, built on first need: GuardCheckers read the frame directly, so a
 * hit through them builds none. Borrowed from *locals, NULL with an exception. */
static PyObject *entry_locals(fh_frame *f, PyObject **locals) {
    if (*locals == NULL) {
        *locals = fh_entry_locals(f);
    }
    return *locals;
}

static void report_guard_error(PyObject *check_fn, PyCodeObject *co, fh_frame *f, PyObject **locals, int index,
                               int last) {
    if (fh_guard_error_hook == NULL) {
        return;
    }
    PyObject *type, *value, *tb;
    PyErr_Fetch(&type, &value, &tb);
    PyObject *r = NULL;
    if (entry_locals(f, locals) != NULL) {
        r = PyObject_CallFunction(fh_guard_error_hook, "OOOiO", check_fn, (PyObject *)co, *locals, index,
                                  last ? Py_True : Py_False);
    }
    if (r == NULL) {
        PyErr_WriteUnraisable(fh_guard_error_hook);
    }
    Py_XDECREF(r);
    PyErr_Restore(type, value, tb);
}

/* check_fn(entry locals) as a truth value: 1, 0, or -1 with an exception set. */
static int check(PyObject *check_fn, fh_frame *f, PyObject **locals) {
    if (Py_IS_TYPE(check_fn, &fh_GuardChecker_Type)) {
        return fh_guard_checker_check_frame(check_fn, f);
    }
    if (entry_locals(f, locals) == NULL) {
        return -1;
    }
    PyObject *r = PyObject_CallOneArg(check_fn, *locals);
    int truth = r ? PyObject_IsTrue(r) : -1;
    Py_XDECREF(r);
    return truth;
}

/* Finds the first entry whose guard accepts the frame's entry locals (*locals is the
 * dict if one was needed, for the caller to release). Returns -1 if a guard raised. */
static int lookup(fh_extra *ex, PyCodeObject *co, fh_frame *f, PyObject **locals, fh_entry **hit) {
    *hit = NULL;
    if (ex == NULL) {
        return 0;
    }
    fh_entry *prev = NULL;
    int index = 0;
    for (fh_entry *e = ex->head; e != NULL; prev = e, e = e->next, index++) {
        unsigned long epoch = ex->epoch;
        int last = e->next == NULL;
        PyObject *check_fn = Py_NewRef(e->check_fn);
        int truth = check(check_fn, f, locals);
        if (truth < 0) {
            report_guard_error(check_fn, co, f, locals, index, last);
            Py_DECREF(check_fn);
            return -1;
        }
        Py_DECREF(check_fn);
        if (ex->epoch != epoch) {
            return 0; /* the guard changed the entry list: treat as a miss */
        }
        if (truth) {
            e->hits++;
            fh_extra_move_to_front(ex, prev, e);
            *hit = e;
            return 0;
        }
    }
    return 0;
}

/* Calls the thread's callback on a miss. Returns a new reference to the replacement
 * code, Py_None when the frame should run unmodified, NULL with an exception. */
static PyObject *ask_callback(PyThreadState *ts, fh_frame *f, PyCodeObject *co, PyObject *callback,
                              PyObject *locals) {
    fh_extra *ex = fh_extra_ensure(co);
    if (ex == NULL) {
        return NULL;
    }
    PyObject *frame_state = fh_extra_frame_state(ex);
    if (frame_state == NULL) {
        return NULL;
    }
    PyObject *latest = ex->head ? fh_entry_info(ex->head) : Py_NewRef(Py_None);
    if (latest == NULL) {
        return NULL;
    }
    PyObject *view = fh_frameview_new(ts, f, locals);
    if (view == NULL) {
        Py_DECREF(latest);
        return NULL;
    }
    Py_INCREF(frame_state); /* the callback may reset the code, dropping the state */
    Py_INCREF(callback);
    PyObject *res = PyObject_CallFunctionObjArgs(callback, view, latest, frame_state, NULL);
    Py_DECREF(callback);
    Py_DECREF(frame_state);
    fh_frameview_release(view);
    Py_DECREF(view);
    Py_DECREF(latest);
    if (res == NULL) {
        return NULL;
    }
    if (res == Py_None) {
        ex->skip = 1;
#if FH_HOOK_ARMED_BY_FUNCTION_MARKS
        fh_marks_code_skipped(co);
        PyObject *func = fh_frame_function(f);
        if (func != NULL && PyFunction_Check(func)) {
            fh_unmark((PyFunctionObject *)func);
        }
#endif
        return res;
    }
    if (!PyObject_TypeCheck(res, &fh_GuardedCode_Type)) {
        PyErr_Format(PyExc_TypeError,
                     "framehook: the eval-frame callback must return None or GuardedCode, not %.200s",
                     Py_TYPE(res)->tp_name);
        Py_DECREF(res);
        return NULL;
    }
    fh_GuardedCode *guarded = (fh_GuardedCode *)res;
    PyObject *code = Py_NewRef(guarded->code);
    if (fh_check_layout(co, (PyCodeObject *)code) < 0 || fh_extra_add_entry(ex, code, guarded->check_fn) < 0) {
        Py_DECREF(code);
        code = NULL;
    }
#if FH_HOOK_ARMED_BY_FUNCTION_MARKS
    else {
        count_init(co, ex);
    }
#endif
    Py_DECREF(res);
    return code;
}

/* What runs for a fresh frame: a new reference to replacement code, Py_None to run the
 * frame unmodified, NULL with an exception. Out of line, so that the frame of the eval
 * function is gone (tail calls) while the replacement runs. */
static FH_NOINLINE PyObject *choose(fh_thread *t, PyThreadState *ts, fh_frame *f, PyCodeObject *co, fh_extra *ex,
                                     PyObject *callback) {
    PyObject *code = NULL;
    fh_entry *hit = NULL;
    FH_EMIT(FRAMEHOOK_EV_LOOKUP_BEGIN, co);
    t->suspended++;
    if (!fh_trace_callbacks) {
        fh_suspend_tracing(ts);
    }
    PyObject *locals = NULL;
    if (lookup(ex, co, f, &locals, &hit) == 0) {
        if (hit != NULL) {
            code = Py_NewRef(hit->code);
        }
        else if (callback != Py_False) {
            if (entry_locals(f, &locals) != NULL) {
                code = ask_callback(ts, f, co, callback, locals);
            }
        }
        else {
            code = Py_NewRef(Py_None); /* run-only miss */
        }
    }
    Py_XDECREF(locals);
    if (!fh_trace_callbacks) {
        fh_resume_tracing(ts);
    }
    t->suspended--;
    FH_EMIT(FRAMEHOOK_EV_LOOKUP_END, co);
    return code;
}

/* A replacement run with event listeners registered: bracketed by region events. */
static FH_NOINLINE PyObject *run_observed(PyThreadState *ts, fh_frame *f, PyObject *code) {
    FH_EMIT(FRAMEHOOK_EV_REGION_BEGIN, code);
    Py_INCREF(code); /* for REGION_END: the run consumes the other reference */
    PyObject *result = fh_run_replacement(ts, f, (PyCodeObject *)code);
    FH_EMIT(FRAMEHOOK_EV_REGION_END, code);
    Py_DECREF(code);
    return result;
}

static PyObject *intercept(fh_thread *t, PyThreadState *ts, fh_frame *f, PyCodeObject *co, fh_extra *ex,
                           PyObject *callback) {
    PyObject *code = choose(t, ts, f, co, ex, callback);
    if (code == NULL) {
        fh_discard_frame(ts, f);
        return NULL;
    }
    if (code == Py_None) {
        Py_DECREF(code);
        return fh_eval_default(ts, f, 0);
    }
    if (fh_listener_count) {
        return run_observed(ts, f, code);
    }
    return fh_run_replacement(ts, f, (PyCodeObject *)code); /* a tail call: no frame of ours stays */
}

/* Everything the hook does for a frame once the C stack is known to have room. */
static inline PyObject *dispatch(PyThreadState *ts, fh_frame *f, int throw_flag) {
    /* Code marked skipped runs unmodified whatever the thread's mode: decided first, from
     * the code object alone, so the common case never touches thread-local storage. */
    PyCodeObject *co = fh_frame_code(f);
    fh_extra *ex = fh_extra_get(co);
    if (ex != NULL && ex->skip) {
        return fh_eval_default(ts, f, throw_flag);
    }
    fh_thread *t = &tls;
    PyObject *callback = t->callback;
    if (callback == NULL || t->suspended || throw_flag) {
        return fh_eval_default(ts, f, throw_flag);
    }
    if (t->bypass != NULL && t->bypass == co) {
        t->bypass = NULL; /* the temporary function of a replacement call */
        return fh_eval_default(ts, f, 0);
    }
    if (!fh_frame_is_fresh_function(f)) {
        return fh_eval_default(ts, f, 0);
    }
    if (callback == Py_False && (ex == NULL || ex->head == NULL)) {
        return fh_eval_default(ts, f, 0);
    }
    return intercept(t, ts, f, co, ex, callback);
}

/* ---- the C stack ------------------------------------------------------------- */
#if !FH_EVALUATOR_MEASURES_C_STACK
/* Room kept free at the end of a thread's C stack: a frame reaching into it is refused
 * with RecursionError. It holds what runs between two evaluations of Python frames (the
 * evaluator's own C frame, the calls it makes, the callback's lookup), what runs where no
 * Python frame is evaluated (a C function such as repr or str.format) and the raising
 * and unwinding of the error. An eighth of a smaller stack: 32 KiB of a 256 KiB thread. */
#ifdef Py_DEBUG
#  define STACK_RESERVE ((size_t)512 * 1024) /* unoptimized evaluator frames are larger */
#else
#  define STACK_RESERVE ((size_t)256 * 1024)
#endif

static void measure_stack(fh_thread *t) {
    size_t size;
    char *low = fh_stack_low(&size);
    if (low == NULL || size == 0) {
        t->stack_low = 0;
        t->stack_reserve = 0; /* unknown: never refuse */
        return;
    }
    t->stack_low = (uintptr_t)low;
    t->stack_reserve = size / 8 < STACK_RESERVE ? size / 8 : STACK_RESERVE;
}

/* The stack of the thread that evaluated the last frame, known by its thread state: the
 * common case (the same thread again) reads no thread-local storage. A thread state's
 * memory may be reused by a new thread once the old one is freed, so the state's unique id
 * is compared too. (Ids are unique within an interpreter; the module's state is global, one
 * interpreter's.) Measured with callgrind on 3.13, a skipped frame costs 7 instructions
 * more than without the check; reading the thread-local struct first cost 21. */
static PyThreadState *recent_ts;
static uint64_t recent_id;
static uintptr_t recent_low, recent_reserve;

/* Out of line and rarely run: another thread than the last one (its first frame, or after
 * a switch), or a frame near the end of the stack, which is refused (the evaluator unwinds
 * it as at its own recursion limit). */
static FH_NOINLINE PyObject *check_stack(PyThreadState *ts, fh_frame *f, int throw_flag, uintptr_t here) {
    fh_thread *t = &tls;
    if (t->stack_reserve == UINTPTR_MAX) {
        measure_stack(t);
    }
    recent_ts = ts;
    recent_id = ts->id;
    recent_low = t->stack_low;
    recent_reserve = t->stack_reserve;
    if (here - t->stack_low < t->stack_reserve) {
        return fh_eval_refusing_for_recursion(ts, f, throw_flag);
    }
    return dispatch(ts, f, throw_flag);
}
#endif

#if FH_HOOK_ARMED_BY_FUNCTION_MARKS
/* ---- arming the hook for one call -------------------------------------------------- */
/* The vectorcall of marked functions. The eval function is set for exactly the frame this
 * call creates, and put back as soon as that frame reaches it, so the frame's own calls run
 * with CPython's inlining. Nothing else runs in between under the GIL, except in the rare
 * case that binding the arguments runs Python code (a str subclass's __eq__): those frames
 * then pass through the hook as they would if it were installed. */
PyObject *fh_marked_call(PyObject *func, PyObject *const *args, size_t nargsf, PyObject *kwnames) {
    PyFunctionObject *fn = (PyFunctionObject *)func;
    PyCodeObject *co = (PyCodeObject *)fn->func_code;
    if (installed_for_inits && fh_inits_with_entries == 0) {
        follow_inits(); /* the last __init__ entries were dropped */
    }
    if (!marks_mode) {
        fh_marks_idle_call(fn);
        return _PyFunction_Vectorcall(func, args, nargsf, kwnames);
    }
    fh_extra *ex = fh_extra_get(co);
    if (ex != NULL && ex->skip) {
        fh_unmark(fn);
        return _PyFunction_Vectorcall(func, args, nargsf, kwnames);
    }
    fh_thread *t = &tls;
    PyObject *callback = t->callback;
    if (callback == NULL || t->suspended || (callback == Py_False && (ex == NULL || ex->head == NULL))) {
        return _PyFunction_Vectorcall(func, args, nargsf, kwnames); /* marked for other threads */
    }
    PyThreadState *ts = PyThreadState_GET();
    PyInterpreterState *interp = ts->interp;
    PyCodeObject *outer_code = armed_code;
    PyThreadState *outer_ts = armed_ts;
    if (outer_code == NULL) {
        armed_saved = interp->eval_frame;
    }
    armed_code = co;
    armed_ts = ts;
    interp->eval_frame = framehook_eval;
    PyObject *result = _PyFunction_Vectorcall(func, args, nargsf, kwnames);
    if (armed_code == co && armed_ts == ts) {
        /* no frame reached the hook (the arguments did not bind): unarm */
        interp->eval_frame = outer_code != NULL ? framehook_eval : armed_saved;
    }
    else if (outer_code != NULL) {
        interp->eval_frame = framehook_eval; /* still armed for the outer call's frame */
    }
    /* else the hook unarmed at the frame, and the eval function is as the frame left it */
    armed_code = outer_code;
    armed_ts = outer_ts;
    return result;
}

static inline void disarm_for(PyThreadState *ts, fh_frame *f) {
    if (armed_code != NULL && armed_ts == ts && fh_frame_code(f) == armed_code) {
        armed_code = NULL;
        ts->interp->eval_frame = armed_saved;
        if (armed_saved != framehook_eval) { /* else installed for __init__ entries */
            previous_eval = armed_saved;
        }
    }
}
#endif

/* Shadowed calls, and on 3.11+ every Python-to-Python call while any eval function is
 * installed, nest C frames of the evaluator that not every CPython measures: deep recursion
 * at a raised recursion limit could run off the end of the C stack (in a small thread even
 * at the default limit). So every frame that comes through the hook is checked first;
 * unsigned, an address outside the thread's stack is never short of room. */
static PyObject *framehook_eval(PyThreadState *ts, fh_frame *f, int throw_flag) {
#if FH_HOOK_ARMED_BY_FUNCTION_MARKS
    disarm_for(ts, f);
#endif
#if !FH_EVALUATOR_MEASURES_C_STACK
    uintptr_t here = fh_stack_here();
    if (ts != recent_ts || ts->id != recent_id || here - recent_low < recent_reserve) {
        return check_stack(ts, f, throw_flag, here);
    }
#endif
    return dispatch(ts, f, throw_flag);
}
