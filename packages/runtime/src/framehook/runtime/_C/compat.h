/* Version shims: everything that differs between CPython 3.9 and 3.15 lives here,
 * behind small inline functions, so the rest of the extension reads the same on
 * every version. */
#ifndef FRAMEHOOK_COMPAT_H
#define FRAMEHOOK_COMPAT_H

#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <frameobject.h>

#if PY_VERSION_HEX < 0x03090000 || PY_VERSION_HEX >= 0x03100000
#error "framehook-runtime supports CPython 3.9 to 3.15"
#endif

#if PY_VERSION_HEX < 0x030A0000
static inline PyObject *Py_NewRef(PyObject *o) { Py_INCREF(o); return o; }
static inline PyObject *Py_XNewRef(PyObject *o) { Py_XINCREF(o); return o; }
#define Py_NewRef(o) Py_NewRef((PyObject *)(o))
#define Py_XNewRef(o) Py_XNewRef((PyObject *)(o))
#endif

/* Keeps a helper's stack frame out of its caller's (Py_NO_INLINE is missing on 3.9). */
#if defined(__GNUC__) || defined(__clang__)
#  define FH_NOINLINE __attribute__((noinline))
#elif defined(_MSC_VER)
#  define FH_NOINLINE __declspec(noinline)
#else
#  define FH_NOINLINE
#endif

#ifdef Py_GIL_DISABLED
#error "framehook-runtime needs the GIL: free-threaded CPython builds are not supported"
#endif

#define FH_PY311 (PY_VERSION_HEX >= 0x030B0000)
#define FH_PY312 (PY_VERSION_HEX >= 0x030C0000)
#define FH_PY313 (PY_VERSION_HEX >= 0x030D0000)
/* Frame slots (locals, stack, code and function) hold tagged stack references rather
 * than object pointers: an empty slot is not all-zero bits, and a slot may borrow its
 * object (a tag bit says the reference owns no count). */
#define FH_FRAME_SLOTS_ARE_STACKREFS (PY_VERSION_HEX >= 0x030E0000)
/* The evaluator's own clear-and-pop of a returning frame is callable by extensions. */
#define FH_EVALUATOR_EXPORTS_FRAME_RELEASE (PY_VERSION_HEX >= 0x030D0000)
/* Function objects carry what routes their calls past the evaluator's inlining: a
 * vectorcall of their own makes the specializer and the generic call refuse to inline
 * them, and the function-version setter is exported, so a function can be given its fast
 * path back. With that, the hook is armed per marked call instead of installed for every
 * frame (marks.c). 3.15 first: its evaluator's specialized calls still fall back to the
 * eval function whenever one is installed, whatever the allow-specialization flag says. */
#define FH_HOOK_ARMED_BY_FUNCTION_MARKS (PY_VERSION_HEX >= 0x030F0000)

#if FH_PY311
/* The interpreter frame layout is only published in the internal headers. */
#  if FH_PY312
#    undef _PyGC_FINALIZED /* python/cpython#105268: clash between core and non-core headers */
#  endif
#  define Py_BUILD_CORE
#  include <internal/pycore_frame.h>
#  if FH_FRAME_SLOTS_ARE_STACKREFS
/* the frame struct and the stack reference helpers moved out of pycore_frame.h */
#    include <internal/pycore_interpframe.h>
#  endif
#  if FH_EVALUATOR_EXPORTS_FRAME_RELEASE
#    include <internal/pycore_ceval.h>
#  endif
#  if FH_HOOK_ARMED_BY_FUNCTION_MARKS
#    include <internal/pycore_function.h>
#  endif
#  undef Py_BUILD_CORE
typedef _PyInterpreterFrame fh_frame;
#else
typedef PyFrameObject fh_frame;
#endif

/* ---- code extra slots ---------------------------------------------------- */
#if FH_PY312
#  define fh_request_extra_index PyUnstable_Eval_RequestCodeExtraIndex
#  define fh_code_set_extra PyUnstable_Code_SetExtra
#else
#  define fh_request_extra_index _PyEval_RequestCodeExtraIndex
#  define fh_code_set_extra _PyCode_SetExtra
#endif

/* Reading a code's extra slot sits on the hot path of every call, so it reads the
 * slot array directly rather than through the checked API. The layout (a size, then
 * the slots) is the same in 3.9-3.15 (Objects/codeobject.c); writes still go through the API. */
typedef struct {
    Py_ssize_t ce_size;
    void *ce_extras[1];
} fh_code_extra_layout;

static inline void *fh_code_extra_fast(PyCodeObject *co, Py_ssize_t index) {
    fh_code_extra_layout *e = (fh_code_extra_layout *)co->co_extra;
    return (e != NULL && index < e->ce_size) ? e->ce_extras[index] : NULL;
}

/* ---- frame accessors ------------------------------------------------------- */
static inline PyCodeObject *fh_frame_code(fh_frame *f) {
#if FH_FRAME_SLOTS_ARE_STACKREFS
    return (PyCodeObject *)PyStackRef_AsPyObjectBorrow(f->f_executable);
#elif FH_PY313
    return (PyCodeObject *)f->f_executable;
#else
    return f->f_code;
#endif
}

static inline PyObject *fh_frame_globals(fh_frame *f) { return f->f_globals; }
static inline PyObject *fh_frame_builtins(fh_frame *f) { return f->f_builtins; }

/* The function object being called, or NULL where the frame does not record it. */
static inline PyObject *fh_frame_function(fh_frame *f) {
#if FH_FRAME_SLOTS_ARE_STACKREFS
    return PyStackRef_IsNull(f->f_funcobj) ? NULL : PyStackRef_AsPyObjectBorrow(f->f_funcobj);
#elif FH_PY312
    return f->f_funcobj;
#elif FH_PY311
    return (PyObject *)f->f_func;
#else
    (void)f;
    return NULL;
#endif
}

/* Only fresh frames of plain functions owned by the thread stack can be shadowed:
 * generators and coroutines resume into their own frames, class and module bodies
 * have a locals mapping. */
static inline int fh_frame_is_fresh_function(fh_frame *f) {
    PyCodeObject *co = fh_frame_code(f);
    const int skip = CO_GENERATOR | CO_COROUTINE | CO_ASYNC_GENERATOR | CO_ITERABLE_COROUTINE;
    if (!(co->co_flags & CO_OPTIMIZED) || (co->co_flags & skip) || f->f_locals != NULL) {
        return 0;
    }
#if FH_PY313
    return f->owner == FRAME_OWNED_BY_THREAD && f->instr_ptr == _PyCode_CODE(co);
#elif FH_PY311
    return f->owner == FRAME_OWNED_BY_THREAD && f->prev_instr == _PyCode_CODE(co) - 1;
#else
    return f->f_lasti < 0;
#endif
}

#if FH_PY311
/* ---- interpreter frame slots (3.11+) ------------------------------------------ */
/* The object in local slot i (borrowed), or NULL when the slot is empty. */
static inline PyObject *fh_frame_slot(fh_frame *f, int i) {
#if FH_FRAME_SLOTS_ARE_STACKREFS
    return PyStackRef_IsNull(f->localsplus[i]) ? NULL : PyStackRef_AsPyObjectBorrow(f->localsplus[i]);
#else
    return f->localsplus[i];
#endif
}

/* Marks slot i empty without releasing anything (it held no reference). */
static inline void fh_frame_slot_forget(fh_frame *f, int i) {
#if FH_FRAME_SLOTS_ARE_STACKREFS
    f->localsplus[i] = PyStackRef_NULL;
#else
    f->localsplus[i] = NULL;
#endif
}

/* Points a fresh frame at `code` (taking a new reference, releasing the old code),
 * about to run its first instruction with an empty value stack. */
static inline void fh_frame_restart_with(fh_frame *f, PyCodeObject *code) {
#if FH_FRAME_SLOTS_ARE_STACKREFS
    _PyStackRef old = f->f_executable;
    f->f_executable = PyStackRef_FromPyObjectNew((PyObject *)code);
    f->instr_ptr = _PyCode_CODE(code);
    f->stackpointer = f->localsplus + code->co_nlocalsplus;
    PyStackRef_CLOSE(old);
#else
    PyCodeObject *old = fh_frame_code(f);
#  if FH_PY313
    f->f_executable = Py_NewRef(code);
    f->instr_ptr = _PyCode_CODE(code);
#  else
    f->f_code = (PyCodeObject *)Py_NewRef(code);
    f->prev_instr = _PyCode_CODE(code) - 1;
#  endif
    f->stacktop = code->co_nlocalsplus;
    Py_DECREF(old);
#endif
}

/* Data-stack words a frame of this code occupies (3.12 caches it on the code). */
static inline int fh_code_framesize(PyCodeObject *co) {
#if FH_PY312
    return co->co_framesize;
#else
    return co->co_nlocalsplus + co->co_stacksize + FRAME_SPECIALS_SIZE;
#endif
}
#endif

/* Number of argument slots: positional, keyword-only, *args and **kwargs. */
static inline int fh_code_nargs(PyCodeObject *co) {
    return co->co_argcount + co->co_kwonlyargcount + ((co->co_flags & CO_VARARGS) ? 1 : 0) +
           ((co->co_flags & CO_VARKEYWORDS) ? 1 : 0);
}

/* ---- the thread's C stack ---------------------------------------------------- */
/* The evaluator itself raises RecursionError before a chain of its own C frames (which
 * any eval-frame hook makes of Python calls) exhausts the C stack: it compares the stack
 * pointer with the thread's stack bounds. Before, it counted only Python frames (3.9-3.11)
 * or C recursion levels against a fixed limit (3.12, 3.13), which a thread with a small
 * stack can run out before. */
#define FH_EVALUATOR_MEASURES_C_STACK (PY_VERSION_HEX >= 0x030E0000)

/* An address in the caller's stack frame: how far down the C stack the caller is. */
#if defined(__GNUC__) || defined(__clang__)
#  define fh_stack_here() ((uintptr_t)__builtin_frame_address(0))
#else
static inline uintptr_t fh_stack_here(void) {
    char here;
    return (uintptr_t)&here;
}
#endif

/* Lowest usable address of the calling thread's C stack (stacks grow down on every
 * platform handled here), or NULL where it cannot be found. */
#if defined(__linux__) && defined(__GLIBC__)
#  include <pthread.h>
static inline char *fh_stack_low(size_t *size) {
    pthread_attr_t attr;
    void *addr = NULL;
    *size = 0;
    if (pthread_getattr_np(pthread_self(), &attr) != 0) {
        return NULL;
    }
    if (pthread_attr_getstack(&attr, &addr, size) != 0) {
        addr = NULL;
    }
    pthread_attr_destroy(&attr);
    return (char *)addr;
}
#elif defined(__APPLE__)
#  include <pthread.h>
static inline char *fh_stack_low(size_t *size) {
    *size = pthread_get_stacksize_np(pthread_self());
    return (char *)pthread_get_stackaddr_np(pthread_self()) - *size;
}
#else
static inline char *fh_stack_low(size_t *size) {
    *size = 0;
    return NULL;
}
#endif

/* ---- refusing a frame near the end of the C stack (3.9-3.13) ----------------------- */
#if !FH_EVALUATOR_MEASURES_C_STACK
/* The evaluator links the frame it is given into the thread's chain of frames on entry,
 * and on 3.12+ also pops and clears it on exit (generator frames included): a frame that
 * reached the eval function can only be unwound by the evaluator. Before, the evaluator
 * returned at its recursion check without touching the frame, and so can we. */
#define FH_EVALUATOR_LINKS_FRAMES FH_PY311
/* The budget the evaluator checks on entry counts C levels (c_recursion_remaining, which it
 * spends before checking); before, one count of recursion levels, checked against the
 * thread's copy of the limit, which is refreshed from the interpreter's before it raises. */
#define FH_RECURSION_BUDGET_COUNTS_C_LEVELS FH_PY312

#if FH_EVALUATOR_LINKS_FRAMES
typedef struct {
    int remaining;
    int other; /* 3.12+: the Python-level budget; 3.11: the thread's limit */
} fh_recursion_budget;

/* Sets the budget so that the evaluator's next entry check fails; returns what it was. */
static inline fh_recursion_budget fh_recursion_budget_exhaust(PyThreadState *ts) {
    fh_recursion_budget saved;
#  if FH_RECURSION_BUDGET_COUNTS_C_LEVELS
    saved.remaining = ts->c_recursion_remaining;
    saved.other = ts->py_recursion_remaining;
    ts->c_recursion_remaining = -1;
#  else
    saved.remaining = ts->recursion_remaining;
    saved.other = ts->recursion_limit;
    ts->recursion_remaining = 0;
    ts->recursion_limit = Py_GetRecursionLimit(); /* depth now above the limit: no refresh */
#  endif
    return saved;
}

static inline void fh_recursion_budget_restore(PyThreadState *ts, fh_recursion_budget saved) {
#  if FH_RECURSION_BUDGET_COUNTS_C_LEVELS
    ts->c_recursion_remaining = saved.remaining;
    ts->py_recursion_remaining = saved.other;
#  else
    ts->recursion_remaining = saved.remaining;
    ts->recursion_limit = saved.other;
#  endif
}
#endif

/* Refuses the frame f with RecursionError, leaving it as the evaluator leaves a frame it
 * refuses at its own recursion limit (linked and unlinked, popped and cleared as the
 * version does, a generator marked finished): on 3.11+ by running the evaluator with its
 * recursion budget exhausted, so that it raises at its entry check, before running
 * anything, and unwinds the frame itself. */
static inline PyObject *fh_eval_refusing_for_recursion(PyThreadState *ts, fh_frame *f, int throw_flag) {
#if FH_EVALUATOR_LINKS_FRAMES
    fh_recursion_budget saved = fh_recursion_budget_exhaust(ts);
    PyObject *result = _PyEval_EvalFrameDefault(ts, f, throw_flag);
    fh_recursion_budget_restore(ts, saved);
    return result;
#else
    (void)ts;
    (void)f;
    (void)throw_flag;
    PyErr_SetString(PyExc_RecursionError, "maximum recursion depth exceeded");
    return NULL;
#endif
}
#endif /* !FH_EVALUATOR_MEASURES_C_STACK */

/* ---- tracing suspension ------------------------------------------------------ */
static inline void fh_suspend_tracing(PyThreadState *ts) {
#if FH_PY311
    PyThreadState_EnterTracing(ts);
#elif PY_VERSION_HEX >= 0x030A0000
    ts->tracing++;
    ts->cframe->use_tracing = 0;
#else
    ts->tracing++;
    ts->use_tracing = 0;
#endif
}

static inline void fh_resume_tracing(PyThreadState *ts) {
#if FH_PY311
    PyThreadState_LeaveTracing(ts);
#elif PY_VERSION_HEX >= 0x030A0000
    ts->tracing--;
    ts->cframe->use_tracing = (ts->tracing == 0) && (ts->c_tracefunc != NULL || ts->c_profilefunc != NULL);
#else
    ts->tracing--;
    ts->use_tracing = (ts->tracing == 0) && (ts->c_tracefunc != NULL || ts->c_profilefunc != NULL);
#endif
}

#endif /* FRAMEHOOK_COMPAT_H */
