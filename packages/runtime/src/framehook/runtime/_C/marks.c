/* Function marks: where the hook is armed per call instead of installed (3.15).
 *
 * An installed eval function costs every Python-to-Python call its inlining, whatever the
 * frame's code. Here no eval function stays installed; instead, every function whose calls
 * the hook must see carries fh_marked_call as its vectorcall, which the evaluator's
 * specializer and generic call both refuse to inline. fh_marked_call arms the hook for the
 * one frame it creates (hook.c). A function must be marked while some thread has a
 * callback and its code is undecided or has cache entries; every other function, and every
 * function while no thread has a callback, keeps CPython's fast path.
 *
 * How marks follow the state of codes:
 *   - activation (a first thread sets a callback): the first time, every live function is
 *     marked (one walk of the GC heap) and a function watcher is registered; afterwards
 *     only the functions unmarked while idle are marked again (the idle set);
 *   - a function created while active is marked, and its code's version is withheld (the
 *     code gets a fresh one: MAKE_FUNCTION copies it into the function after the watcher
 *     ran, and call sites specialized for an earlier function of the code would match it);
 *   - a marked function called while idle, or whose code is skipped, is unmarked at that
 *     call; its version (and its code's) is given back, so call sites specialize again,
 *     unless CPython cleared it meanwhile (a new __code__ or new defaults clear it for good);
 *   - a function left unmarked while its code is skipped goes into the skipped set (borrowed
 *     pointers, like the idle set); reset_code of a skipped code marks its functions from
 *     there: at once while some thread has a callback, else at the next activation, in one
 *     pass for every code reset meanwhile (a translator's reset or a CallObserver's exit
 *     resets thousands). A heap walk only when an insertion into that set failed;
 *   - marking a function named __init__ invalidates the types whose specialization cache
 *     holds a marked __init__: CALL_ALLOC_AND_ENTER_INIT checks only the type's version. */
#include "runtime.h"

#if FH_HOOK_ARMED_BY_FUNCTION_MARKS

static int marks_on;           /* some thread has a callback */
static unsigned long activations; /* counts the times marks_on was set */
static int watcher_id = -1;    /* registered on first activation */
static int init_marked;        /* an __init__ was marked since the last type walk */
static PyObject *init_name;    /* "__init__", interned */
static Py_ssize_t n_sweeps, n_marks, n_unmarks, n_type_walks;

int fh_marks_active(void) { return marks_on; }

/* Frames the hook can intercept: fresh frames of plain functions (compat.h). */
static int interceptable(PyCodeObject *co) {
    const int resumable = CO_GENERATOR | CO_COROUTINE | CO_ASYNC_GENERATOR | CO_ITERABLE_COROUTINE;
    return (co->co_flags & CO_OPTIMIZED) && !(co->co_flags & resumable);
}

int fh_code_is_init(PyCodeObject *co) {
    if (init_name == NULL && (init_name = PyUnicode_InternFromString("__init__")) == NULL) {
        PyErr_Clear();
        return 0;
    }
    return co->co_name == init_name || PyUnicode_Compare(co->co_name, init_name) == 0;
}

static int needs_mark(PyCodeObject *co) {
    if (!interceptable(co)) {
        return 0;
    }
    fh_extra *ex = fh_extra_get(co);
    return ex == NULL || !ex->skip;
}

static void mark(PyFunctionObject *func) {
    if (func->vectorcall == fh_marked_call) {
        return;
    }
    /* Setting the vectorcall clears the version for good (CLEARED, as a modification of the
     * function does); a version we took ourselves is left UNSET instead, to give back. */
    uint32_t version = func->func_version;
    PyFunction_SetVectorcall(func, fh_marked_call);
    if (version != FUNC_VERSION_CLEARED) {
        func->func_version = FUNC_VERSION_UNSET;
    }
    n_marks++;
    if (fh_code_is_init((PyCodeObject *)func->func_code)) {
        init_marked = 1;
    }
}

/* The interpreter keeps borrowed (function, code) pairs by version, which a code clears
 * under its current version when it dies: before a code's version changes, its pair under
 * the old one goes, or it would outlive the code. */
static void forget_cached_code(PyCodeObject *co) {
    struct _func_version_cache_item *slot =
        &PyInterpreterState_Get()->func_state.func_version_cache[co->co_version % FUNC_VERSION_CACHE_SIZE];
    if (slot->code == (PyObject *)co) {
        slot->code = NULL;
        slot->func = NULL;
    }
}

/* A code's version is withheld by giving it a fresh one (debug builds require a valid
 * version in every new function): call sites specialized for its earlier functions miss
 * the functions made now. 0 when the interpreter has run out of versions. */
static uint32_t fresh_version(void) {
    PyInterpreterState *interp = PyInterpreterState_Get();
    uint32_t v = interp->func_state.next_version;
    if (v < FUNC_VERSION_FIRST_VALID) {
        return 0;
    }
    interp->func_state.next_version = v + 1;
    return v;
}

static void withhold_version(PyCodeObject *co) {
    fh_extra *ex = fh_extra_ensure(co);
    if (ex == NULL) {
        PyErr_Clear(); /* not withheld: call sites may still enter new functions inline */
        return;
    }
    if (ex->saved_version != 0 && ex->withheld_in == activations) {
        return; /* withheld already: every function made since is marked */
    }
    /* Functions made while no thread had a callback carry the version withheld before:
     * call sites may have specialized for them, so this activation takes another. */
    uint32_t v = fresh_version();
    if (v != 0) {
        forget_cached_code(co);
        if (ex->saved_version == 0) {
            ex->saved_version = co->co_version;
        }
        co->co_version = v;
        ex->withheld_in = activations;
    }
}

/* The code's version back, if it was withheld. */
static void give_back_version(PyCodeObject *co) {
    fh_extra *ex = fh_extra_get(co);
    if (ex != NULL && ex->saved_version != 0) {
        forget_cached_code(co);
        co->co_version = ex->saved_version;
        ex->saved_version = 0;
    }
}

static void note_skipped(PyFunctionObject *f, PyCodeObject *co);

void fh_unmark(PyFunctionObject *func) {
    if (func->vectorcall != fh_marked_call) {
        return;
    }
    PyCodeObject *co = (PyCodeObject *)func->func_code;
    give_back_version(co);
    func->vectorcall = _PyFunction_Vectorcall;
    /* CLEARED stays: CPython cleared it for a change of the function's code or defaults */
    if (func->func_version == FUNC_VERSION_UNSET && co->co_version >= FUNC_VERSION_FIRST_VALID) {
        _PyFunction_SetVersion(func, co->co_version);
    }
    n_unmarks++;
    note_skipped(func, co);
}

/* ---- sets of functions ------------------------------------------------------------ */
/* Open-addressing sets of borrowed pointers, an entry removed when its function is
 * destroyed. They only grow (amortized), so calls never allocate. */
#define FNSET_TOMBSTONE ((PyFunctionObject *)1)
typedef struct {
    PyFunctionObject **slots;
    size_t cap, used, count; /* used counts tombstones too */
    int lost;                /* an insertion failed (no memory) */
} fnset;

/* The idle set: functions unmarked (or created) while no thread had a callback, to mark
 * again on the next activation; lost: sweep the heap then. */
static fnset idle;
/* The skipped set: functions left unmarked because their code was skipped, to mark again
 * when the code is reset (while no thread has a callback: at the next activation) without
 * walking the heap; lost: walk it instead. */
static fnset skipped;
static int reset_while_idle; /* a skipped code was reset with no callback set */

static size_t fnset_hash(PyFunctionObject *f) {
    return (size_t)(((uintptr_t)f >> 4) * (uintptr_t)0x9E3779B97F4A7C15ull);
}

static int fnset_grow(fnset *set) {
    size_t cap = set->cap ? set->cap : 64;
    while (set->count * 4 >= cap) {
        cap *= 2;
    }
    PyFunctionObject **slots = PyMem_Calloc(cap, sizeof(PyFunctionObject *));
    if (slots == NULL) {
        return -1;
    }
    for (size_t i = 0; i < set->cap; i++) {
        PyFunctionObject *f = set->slots[i];
        if (f != NULL && f != FNSET_TOMBSTONE) {
            size_t j = fnset_hash(f) & (cap - 1);
            while (slots[j] != NULL) {
                j = (j + 1) & (cap - 1);
            }
            slots[j] = f;
        }
    }
    PyMem_Free(set->slots);
    set->slots = slots;
    set->cap = cap;
    set->used = set->count;
    return 0;
}

static void fnset_add(fnset *set, PyFunctionObject *f) {
    if ((set->used + 1) * 2 > set->cap && fnset_grow(set) < 0) {
        set->lost = 1;
        return;
    }
    size_t mask = set->cap - 1, i = fnset_hash(f) & mask;
    PyFunctionObject **free_slot = NULL;
    while (set->slots[i] != NULL) {
        if (set->slots[i] == f) {
            return;
        }
        if (set->slots[i] == FNSET_TOMBSTONE && free_slot == NULL) {
            free_slot = &set->slots[i];
        }
        i = (i + 1) & mask;
    }
    if (free_slot == NULL) {
        free_slot = &set->slots[i];
        set->used++;
    }
    *free_slot = f;
    set->count++;
}

static void fnset_remove(fnset *set, PyFunctionObject *f) {
    if (set->count == 0) {
        return;
    }
    size_t mask = set->cap - 1, i = fnset_hash(f) & mask;
    while (set->slots[i] != NULL) {
        if (set->slots[i] == f) {
            set->slots[i] = FNSET_TOMBSTONE;
            set->count--;
            return;
        }
        i = (i + 1) & mask;
    }
}

/* A function left unmarked while its code co is skipped: found again through the skipped set. */
static void note_skipped(PyFunctionObject *f, PyCodeObject *co) {
    if (interceptable(co) && !needs_mark(co)) {
        fnset_add(&skipped, f);
    }
}

static void idle_drain(void) {
    for (size_t i = 0; i < idle.cap && idle.count > 0; i++) {
        PyFunctionObject *f = idle.slots[i];
        if (f != NULL && f != FNSET_TOMBSTONE) {
            idle.count--;
            if (needs_mark((PyCodeObject *)f->func_code)) {
                mark(f);
            }
            else {
                note_skipped(f, (PyCodeObject *)f->func_code);
            }
        }
    }
    if (idle.cap) {
        memset(idle.slots, 0, idle.cap * sizeof(PyFunctionObject *));
    }
    idle.used = idle.count = 0;
}

/* Marks the functions of the skipped set that need it again (those of one code, or of
 * every code, when only is NULL), taking them out of the set. */
static void mark_reset(PyCodeObject *only) {
    for (size_t i = 0; i < skipped.cap && skipped.count > 0; i++) {
        PyFunctionObject *f = skipped.slots[i];
        if (f == NULL || f == FNSET_TOMBSTONE) {
            continue;
        }
        PyCodeObject *co = (PyCodeObject *)f->func_code;
        if ((only == NULL || co == only) && needs_mark(co)) {
            mark(f);
            skipped.slots[i] = FNSET_TOMBSTONE;
            skipped.count--;
        }
    }
}

void fh_marks_idle_call(PyFunctionObject *func) {
    fh_unmark(func);
    fnset_add(&idle, func);
}

/* ---- heap walks ------------------------------------------------------------------ */
/* Marks every function of one code (or of every code needing it, when code is NULL), and
 * puts every unmarked function of a skipped code into the skipped set. */
static int sweep_visit(PyObject *op, void *arg) {
    if (PyFunction_Check(op)) {
        PyFunctionObject *f = (PyFunctionObject *)op;
        PyCodeObject *co = (PyCodeObject *)f->func_code;
        if ((arg == NULL || arg == (void *)co) && needs_mark(co)) {
            mark(f);
        }
        else if (f->vectorcall != fh_marked_call) {
            note_skipped(f, co);
        }
    }
    return 1;
}

static void sweep(PyCodeObject *only) {
    n_sweeps++;
    skipped.lost = 0; /* the walk puts every such function back */
    PyUnstable_GC_VisitObjects(sweep_visit, only);
}

/* Marks the functions of codes reset while skipped (one code, or every code when only is
 * NULL): from the skipped set, or by a heap walk if an insertion into it failed. */
static void mark_reset_codes(PyCodeObject *only) {
    if (skipped.lost) {
        sweep(only);
    }
    else {
        mark_reset(only);
    }
}

/* Types whose specialization cache holds a marked __init__ get a new version, so that
 * call sites allocating them stop entering that __init__ inline. */
static int invalidate_init_caches(void) {
    n_type_walks++;
    init_marked = 0;
    PyObject *stack = PyList_New(0);
    if (stack == NULL || PyList_Append(stack, (PyObject *)&PyBaseObject_Type) < 0) {
        Py_XDECREF(stack);
        return -1;
    }
    Py_ssize_t n;
    while ((n = PyList_GET_SIZE(stack)) > 0) {
        PyObject *t = Py_NewRef(PyList_GET_ITEM(stack, n - 1));
        if (PyList_SetSlice(stack, n - 1, n, NULL) < 0) {
            Py_DECREF(t);
            Py_DECREF(stack);
            return -1;
        }
        PyTypeObject *type = (PyTypeObject *)t;
        if (PyType_HasFeature(type, Py_TPFLAGS_HEAPTYPE)) {
            PyObject *init = ((PyHeapTypeObject *)type)->_spec_cache.init;
            if (init != NULL && PyFunction_Check(init) && ((PyFunctionObject *)init)->vectorcall == fh_marked_call) {
                PyType_Modified(type);
            }
        }
        PyObject *subs = PyObject_CallMethod((PyObject *)&PyType_Type, "__subclasses__", "O", t);
        Py_DECREF(t);
        if (subs == NULL) {
            Py_DECREF(stack);
            return -1;
        }
        Py_ssize_t k = PyList_GET_SIZE(stack);
        int rc = PyList_SetSlice(stack, k, k, subs);
        Py_DECREF(subs);
        if (rc < 0) {
            Py_DECREF(stack);
            return -1;
        }
    }
    Py_DECREF(stack);
    return 0;
}

static void after_marking(void) {
    if (init_marked && invalidate_init_caches() < 0) {
        /* no memory for the walk: the next activation tries again */
        PyErr_WriteUnraisable(NULL);
        init_marked = 1;
    }
}

/* ---- the function watcher ------------------------------------------------------------ */
static int on_function_event(PyFunction_WatchEvent event, PyFunctionObject *func, PyObject *new_value) {
    switch (event) {
    case PyFunction_EVENT_CREATE: {
        PyCodeObject *co = (PyCodeObject *)func->func_code;
        if (!needs_mark(co)) {
            note_skipped(func, co);
            break;
        }
        if (!marks_on) {
            fnset_add(&idle, func);
            break;
        }
        withhold_version(co);
        mark(func);
        break;
    }
    case PyFunction_EVENT_DESTROY:
        fnset_remove(&idle, func);
        fnset_remove(&skipped, func);
        break;
    case PyFunction_EVENT_MODIFY_CODE:
        /* new_value is the code about to be assigned */
        if (new_value != NULL && PyCode_Check(new_value) && needs_mark((PyCodeObject *)new_value)) {
            if (marks_on) {
                mark(func);
            }
            else {
                fnset_add(&idle, func);
            }
        }
        else {
            if (func->vectorcall == fh_marked_call) {
                func->vectorcall = _PyFunction_Vectorcall; /* the assignment clears the version */
            }
            if (new_value != NULL && PyCode_Check(new_value)) {
                note_skipped(func, (PyCodeObject *)new_value);
            }
        }
        break;
    default:
        break;
    }
    return 0;
}

int fh_marks_activate(void) {
    if (watcher_id < 0) {
        watcher_id = PyFunction_AddWatcher(on_function_event);
        if (watcher_id < 0) {
            PyErr_Clear(); /* all watcher slots taken: the hook is installed instead */
            return -1;
        }
        idle.lost = 1; /* functions made before the watcher: found by a sweep */
    }
    marks_on = 1;
    activations++;
    idle_drain();
    if (idle.lost) {
        idle.lost = reset_while_idle = 0;
        sweep(NULL);
    }
    else if (reset_while_idle) {
        reset_while_idle = 0;
        mark_reset_codes(NULL);
    }
    after_marking();
    return 0;
}

void fh_marks_deactivate(void) { marks_on = 0; }

void fh_marks_code_skipped(PyCodeObject *co) { give_back_version(co); }

int fh_marks_code_reset(PyCodeObject *co, int was_skipped) {
    /* A code that was not skipped kept its functions marked (or in the idle set). */
    if (watcher_id < 0 || !was_skipped || !interceptable(co)) {
        return 0;
    }
    if (!marks_on) {
        /* No thread has a callback: a mark set now would come off at the function's next
         * call anyway, and only the next activation needs it. That activation goes through
         * the skipped set once for every code reset meanwhile. */
        reset_while_idle = 1;
        return 0;
    }
    mark_reset_codes(co);
    after_marking();
    return 0;
}

PyObject *fh_marks_stats(void) {
    return Py_BuildValue("{s:i,s:n,s:n,s:n,s:n,s:n,s:n}", "active", marks_on, "sweeps", n_sweeps, "marks", n_marks,
                         "unmarks", n_unmarks, "type_walks", n_type_walks, "idle", (Py_ssize_t)idle.count,
                         "inits_with_entries", fh_inits_with_entries);
}

#endif
