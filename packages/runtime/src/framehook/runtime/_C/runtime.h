/* Declarations shared by the runtime's C files. One file per concern:
 *   extra.c      per-code-object state in the code's extra slot (cache entries, frame_state)
 *   guarded.c    the GuardedCode and CacheEntryInfo types
 *   guards.c     GuardChecker: a declarative guard set evaluated in C
 *   frameview.c  the read-only frame view handed to callbacks, and entry locals
 *   shadow.c     running replacement code in place of a frame, per CPython version
 *   events.c     the C event interface for other extensions (the profiler)
 *   hook.c       the eval-frame function and thread-local callbacks
 *   marks.c      function marks: which calls arm the hook where it is not installed (3.15)
 *   callwith.c   calls with a callback set: call_with's core and the CallbackWrapper type
 *   module.c     the Python-facing functions */
#ifndef FRAMEHOOK_RUNTIME_H
#define FRAMEHOOK_RUNTIME_H

#include "compat.h"
#include "framehook_events.h"

/* ---- per-code state (extra.c) ---------------------------------------------- */
typedef struct fh_entry {
    PyObject *code;     /* replacement code object (owned) */
    PyObject *check_fn; /* guard, called with the entry locals (owned) */
    Py_ssize_t hits;
    struct fh_entry *next;
} fh_entry;

typedef struct {
    fh_entry *head;        /* most recently hit first */
    PyObject *frame_state; /* dict handed to the callback, created on first use (owned) */
    int skip;              /* run this code unmodified from now on */
    unsigned long epoch;   /* bumped on every change of the entry list, so a lookup
                              notices when a guard it called changed the list */
    uint32_t saved_version; /* marks.c: the code's own version while it is withheld (0: not) */
    unsigned long withheld_in; /* marks.c: the activation that gave it its present version */
    int init_counted;       /* an __init__ code with entries, counted in fh_inits_with_entries */
} fh_extra;

int fh_extra_init(void);
extern Py_ssize_t fh_extra_index;
/* NULL when the code has no state (no error). On the hot path of every call. */
static inline fh_extra *fh_extra_get(PyCodeObject *co) {
    return (fh_extra *)fh_code_extra_fast(co, fh_extra_index);
}
fh_extra *fh_extra_ensure(PyCodeObject *co);           /* NULL with an exception */
int fh_extra_reset(PyCodeObject *co);
int fh_extra_add_entry(fh_extra *ex, PyObject *code, PyObject *check_fn);
void fh_extra_move_to_front(fh_extra *ex, fh_entry *prev, fh_entry *entry);
PyObject *fh_extra_frame_state(fh_extra *ex);          /* borrowed, NULL with an exception */

/* ---- types (guarded.c) ----------------------------------------------------- */
extern PyTypeObject fh_GuardedCode_Type;
typedef struct {
    PyObject_HEAD
    PyObject *code;
    PyObject *check_fn;
} fh_GuardedCode;
int fh_types_init(PyObject *module);
PyObject *fh_entry_info(fh_entry *entry); /* new CacheEntryInfo */
extern PyTypeObject fh_GuardChecker_Type;  /* guards.c */
int fh_guard_checker_ready(void);          /* PyType_Ready with its KINDS attribute */
/* checker(fh_entry_locals(f)) read from the frame itself: 1 pass, 0 fail, -1 error */
int fh_guard_checker_check_frame(PyObject *checker, fh_frame *f);

/* ---- frame view and entry locals (frameview.c) ----------------------------- */
extern PyTypeObject fh_FrameView_Type;
PyObject *fh_entry_locals(fh_frame *f);                            /* new dict */
/* fh_entry_locals(f)[name] without the dict: new ref, or NULL with KeyError/another error */
PyObject *fh_entry_local(fh_frame *f, PyObject *name);
PyObject *fh_frameview_new(PyThreadState *ts, fh_frame *f, PyObject *locals);
void fh_frameview_release(PyObject *view);                          /* invalidates it */

/* ---- running replacement code (shadow.c) ----------------------------------- */
/* Checks once, when a callback returns it, that `code` can take the frame's values. */
int fh_check_layout(PyCodeObject *original, PyCodeObject *replacement);
extern Py_ssize_t fh_runs_in_frame, fh_runs_as_call;
/* Runs `code` (a reference the call consumes) in place of the fresh frame f. */
PyObject *fh_run_replacement(PyThreadState *ts, fh_frame *f, PyCodeObject *code);
/* On 3.12+ the evaluator frees the frame; when we do not evaluate it we must. */
void fh_discard_frame(PyThreadState *ts, fh_frame *f);
PyObject *fh_eval_default(PyThreadState *ts, fh_frame *f, int throw_flag);

/* ---- events (events.c) ----------------------------------------------------- */
extern int fh_listener_count;
void fh_emit(int event, PyObject *code);
#define FH_EMIT(ev, code) do { if (fh_listener_count) fh_emit((ev), (PyObject *)(code)); } while (0)
PyObject *fh_events_capsule(void);

/* ---- hook (hook.c) --------------------------------------------------------- */
PyObject *fh_set_callback(PyObject *callback);   /* new ref to the previous callback */
PyObject *fh_get_callback(void);                 /* new ref */
extern PyObject *fh_guard_error_hook;            /* owned, may be NULL */
extern int fh_trace_callbacks;                   /* let tracers see callbacks and guards */
int fh_bypass_next(PyCodeObject *co);            /* shadow.c: next frame of co runs as is */
/* enable()/run_only()/disable() scopes: enter installs callback (0, or -1 with an exception
 * and nothing changed); exit restores what this thread's latest entry of scope replaced
 * (-1 with RuntimeError when the thread has no entry of it). Neither runs Python code
 * before the change is complete. */
int fh_scope_enter(PyObject *scope, PyObject *callback);
int fh_scope_exit(PyObject *scope);
extern PyTypeObject fh_CallbackScope_Type;       /* callwith.c */

/* ---- function marks (marks.c) ------------------------------------------------ */
#if FH_HOOK_ARMED_BY_FUNCTION_MARKS
/* A marked function's calls go through fh_marked_call (hook.c), which arms the hook. */
PyObject *fh_marked_call(PyObject *func, PyObject *const *args, size_t nargsf, PyObject *kwnames);
int fh_marks_activate(void);              /* 0, or -1 (no exception): install the hook instead */
void fh_marks_deactivate(void);
int fh_marks_active(void);
void fh_unmark(PyFunctionObject *func);   /* plain again: the evaluator may inline it */
void fh_marks_idle_call(PyFunctionObject *func); /* called while no thread has a callback */
void fh_marks_code_skipped(PyCodeObject *co);
int fh_code_is_init(PyCodeObject *co);     /* named __init__ */
int fh_marks_code_reset(PyCodeObject *co, int was_skipped);
PyObject *fh_marks_stats(void);              /* new dict */
/* __init__ codes with cache entries: CPython enters __init__ inline from class calls after
 * checking only the class's version, so while there are any the hook is also installed. */
extern Py_ssize_t fh_inits_with_entries;
#endif

/* ---- calls with a callback set (callwith.c) --------------------------------- */
/* -1 with a TypeError naming func's argument unless callback is None/False/callable and fn callable */
int fh_check_call_args(const char *func, PyObject *callback, PyObject *fn);
/* fn(*args) with this thread's callback set, the previous one restored after (also on error) */
PyObject *fh_call_with(PyObject *callback, PyObject *fn, PyObject *const *args, size_t nargsf, PyObject *kwnames);
extern PyTypeObject fh_CallbackWrapper_Type;

#endif
