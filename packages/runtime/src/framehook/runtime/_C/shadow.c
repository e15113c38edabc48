/* Running replacement code in place of an intercepted frame.
 *
 * 3.9/3.10: the frame is a PyFrameObject sized for the original code, so the
 *   replacement runs in a new frame object (the shadow) that receives the arguments,
 *   fresh cells and the closure's cells; the original frame is released by its caller.
 * 3.11+: the frame is an interpreter frame on the thread's data stack that has not
 *   started. Only its argument slots are filled, so it can be re-targeted at the
 *   replacement code in place when its slots fit the data stack chunk. When they do
 *   not, the replacement runs as a call of a temporary function with the same
 *   arguments and closure, and (3.12+, where the evaluator frees frames) the original
 *   frame is discarded by hand. */
#include "runtime.h"

/* How replacements ran: in a frame of their own (3.9/3.10 shadow frame object, or an
 * in-place re-targeted interpreter frame) or, when that frame could not grow, as a call. */
Py_ssize_t fh_runs_in_frame, fh_runs_as_call;

static int layout_error(PyCodeObject *original, const char *what) {
    PyErr_Format(PyExc_TypeError,
                 "framehook: the replacement code for %U (%U:%d) cannot take the frame's values: %s",
                 original->co_name, original->co_filename, original->co_firstlineno, what);
    return -1;
}

static PyObject *arg_names(PyCodeObject *co) {
#if FH_PY311
    return PyTuple_GetSlice(co->co_localsplusnames, 0, fh_code_nargs(co));
#else
    return PyTuple_GetSlice(co->co_varnames, 0, fh_code_nargs(co));
#endif
}

static PyObject *free_names(PyCodeObject *co) {
#if FH_PY311
    return PyTuple_GetSlice(co->co_localsplusnames, co->co_nlocalsplus - co->co_nfreevars, co->co_nlocalsplus);
#else
    return Py_NewRef(co->co_freevars);
#endif
}

static int same_names(PyObject *(*names)(PyCodeObject *), PyCodeObject *a, PyCodeObject *b) {
    PyObject *x = names(a);
    if (x == NULL) {
        return -1;
    }
    PyObject *y = names(b);
    if (y == NULL) {
        Py_DECREF(x);
        return -1;
    }
    int eq = PyObject_RichCompareBool(x, y, Py_EQ);
    Py_DECREF(x);
    Py_DECREF(y);
    return eq;
}

int fh_check_layout(PyCodeObject *original, PyCodeObject *replacement) {
    const int kind = CO_OPTIMIZED | CO_NEWLOCALS | CO_VARARGS | CO_VARKEYWORDS | CO_GENERATOR | CO_COROUTINE |
                     CO_ASYNC_GENERATOR | CO_ITERABLE_COROUTINE;
    if (original->co_argcount != replacement->co_argcount ||
        original->co_posonlyargcount != replacement->co_posonlyargcount ||
        original->co_kwonlyargcount != replacement->co_kwonlyargcount) {
        return layout_error(original, "argument counts differ");
    }
    if ((original->co_flags & kind) != (replacement->co_flags & kind)) {
        return layout_error(original, "code kinds differ (*args, **kwargs, generator or coroutine flags)");
    }
    int eq = same_names(arg_names, original, replacement);
    if (eq <= 0) {
        return eq < 0 ? -1 : layout_error(original, "argument names differ");
    }
    eq = same_names(free_names, original, replacement);
    if (eq <= 0) {
        return eq < 0 ? -1 : layout_error(original, "free variables differ");
    }
    return 0;
}

#if !FH_PY311
PyObject *fh_frame_arg_value(PyFrameObject *f, int i);

/* The shadow frame: out of line, so its building takes no stack while it runs. */
static FH_NOINLINE PyFrameObject *shadow_frame(PyThreadState *ts, PyFrameObject *f, PyCodeObject *code) {
    PyFrameObject *sf = PyFrame_New(ts, code, f->f_globals, NULL);
    if (sf == NULL) {
        return NULL;
    }
    Py_INCREF(f->f_builtins);
    Py_SETREF(sf->f_builtins, f->f_builtins);
    int nargs = fh_code_nargs(code);
    for (int i = 0; i < nargs; i++) {
        sf->f_localsplus[i] = Py_XNewRef(fh_frame_arg_value(f, i));
    }
    /* The original frame's cells are still private to it (nothing has run), so fresh
     * cells laid out for the replacement are equivalent. */
    Py_ssize_t ncells = PyTuple_GET_SIZE(code->co_cellvars);
    for (Py_ssize_t j = 0; j < ncells; j++) {
        Py_ssize_t arg = code->co_cell2arg ? code->co_cell2arg[j] : CO_CELL_NOT_AN_ARG;
        PyObject *cell;
        if (arg != CO_CELL_NOT_AN_ARG) {
            cell = PyCell_New(sf->f_localsplus[arg]);
            Py_CLEAR(sf->f_localsplus[arg]);
        }
        else {
            cell = PyCell_New(NULL);
        }
        if (cell == NULL) {
            Py_DECREF(sf);
            return NULL;
        }
        sf->f_localsplus[code->co_nlocals + j] = cell;
    }
    PyCodeObject *orig = f->f_code;
    Py_ssize_t orig_cells = PyTuple_GET_SIZE(orig->co_cellvars);
    Py_ssize_t nfree = PyTuple_GET_SIZE(code->co_freevars);
    for (Py_ssize_t i = 0; i < nfree; i++) {
        sf->f_localsplus[code->co_nlocals + ncells + i] =
            Py_XNewRef(f->f_localsplus[orig->co_nlocals + orig_cells + i]);
    }
    return sf;
}

PyObject *fh_run_replacement(PyThreadState *ts, fh_frame *f, PyCodeObject *code) {
    PyFrameObject *sf = shadow_frame(ts, f, code);
    Py_DECREF(code); /* the shadow frame holds its own reference */
    if (sf == NULL) {
        return NULL;
    }
    fh_runs_in_frame++;
    PyObject *result = fh_eval_default(ts, sf, 0);
    Py_DECREF(sf);
    return result;
}

void fh_discard_frame(PyThreadState *ts, fh_frame *f) {
    (void)ts;
    (void)f; /* the caller of the evaluator releases the frame object */
}

#else /* 3.11+ */

/* Re-targets the frame at `code` when its slots fit; returns 0 when they do not. */
static int retarget(PyThreadState *ts, fh_frame *f, PyCodeObject *code) {
    PyCodeObject *old = fh_frame_code(f);
    PyObject **base = (PyObject **)f;
    if (ts->datastack_top == base + fh_code_framesize(old)) {
        if (base + fh_code_framesize(code) > ts->datastack_limit) {
            return 0;
        }
        ts->datastack_top = base + fh_code_framesize(code);
    }
    else if (fh_code_framesize(code) > fh_code_framesize(old)) {
        return 0; /* not the top of the stack (never seen): cannot grow */
    }
    /* Slots past the arguments were NULL for the old layout; past the old locals they
     * were stack space, so clear them for the new one. */
    for (int i = fh_code_nargs(code); i < code->co_nlocalsplus; i++) {
        fh_frame_slot_forget(f, i);
    }
    fh_frame_restart_with(f, code);
    return 1;
}

#if FH_EVALUATOR_EXPORTS_FRAME_RELEASE
void fh_discard_frame(PyThreadState *ts, fh_frame *f) {
    _PyEval_FrameClearAndPop(ts, f); /* what the evaluator does when a frame returns */
}
#elif FH_PY312
void fh_discard_frame(PyThreadState *ts, fh_frame *f) {
    PyObject **base = (PyObject **)f;
    for (int i = 0; i < f->stacktop; i++) {
        Py_CLEAR(f->localsplus[i]);
    }
    Py_CLEAR(f->frame_obj); /* never created for a fresh frame: we do not expose one */
    Py_CLEAR(f->f_locals);
    Py_CLEAR(f->f_funcobj);
    PyObject *code = (PyObject *)fh_frame_code(f);
    Py_DECREF(code);
    _PyStackChunk *chunk = ts->datastack_chunk;
    if (base == &chunk->data[0]) {
        /* The frame opened this chunk: give the chunk back as CPython would. */
        _PyStackChunk *previous = chunk->previous;
        ts->datastack_top = &previous->data[previous->top];
        ts->datastack_chunk = previous;
        ts->datastack_limit = (PyObject **)(((char *)previous) + previous->size);
        PyObjectArenaAllocator arena;
        PyObject_GetArenaAllocator(&arena);
        arena.free(arena.ctx, chunk, chunk->size);
    }
    else {
        ts->datastack_top = base;
    }
}
#else
void fh_discard_frame(PyThreadState *ts, fh_frame *f) {
    (void)ts;
    (void)f; /* 3.11: _PyEval_Vector clears and pops the frame after the evaluator returns */
}
#endif

/* Runs `code` as a call with the frame's bound arguments, rebuilt as a call. */
static FH_NOINLINE PyObject *call_replacement(PyThreadState *ts, fh_frame *f, PyCodeObject *code) {
    PyFunctionObject *orig = (PyFunctionObject *)fh_frame_function(f);
    PyObject *result = NULL, *kwnames = NULL, **stack = NULL;
    PyObject *fn = PyFunction_NewWithQualName((PyObject *)code, f->f_globals, orig ? orig->func_qualname : NULL);
    if (fn == NULL) {
        fh_discard_frame(ts, f);
        Py_DECREF(code);
        return NULL;
    }
    if (orig != NULL && orig->func_closure != NULL && PyFunction_SetClosure(fn, orig->func_closure) < 0) {
        goto done;
    }
    int argc = code->co_argcount, kwonly = code->co_kwonlyargcount;
    PyObject *varargs = (code->co_flags & CO_VARARGS) ? fh_frame_slot(f, argc + kwonly) : NULL;
    PyObject *varkw = (code->co_flags & CO_VARKEYWORDS)
                          ? fh_frame_slot(f, argc + kwonly + ((code->co_flags & CO_VARARGS) ? 1 : 0))
                          : NULL;
    Py_ssize_t nvar = varargs ? PyTuple_GET_SIZE(varargs) : 0;
    Py_ssize_t nkw = kwonly + (varkw ? PyDict_GET_SIZE(varkw) : 0);
    Py_ssize_t npos = argc + nvar;
    stack = PyMem_Malloc(sizeof(PyObject *) * (size_t)(npos + nkw + 1));
    kwnames = nkw ? PyTuple_New(nkw) : NULL;
    if (stack == NULL || (nkw && kwnames == NULL)) {
        if (stack == NULL) {
            PyErr_NoMemory();
        }
        goto done;
    }
    for (int i = 0; i < argc; i++) {
        stack[i] = fh_frame_slot(f, i);
    }
    for (Py_ssize_t i = 0; i < nvar; i++) {
        stack[argc + i] = PyTuple_GET_ITEM(varargs, i);
    }
    Py_ssize_t k = 0;
    for (int i = 0; i < kwonly; i++, k++) {
        PyTuple_SET_ITEM(kwnames, k, Py_NewRef(PyTuple_GET_ITEM(code->co_localsplusnames, argc + i)));
        stack[npos + k] = fh_frame_slot(f, argc + i);
    }
    if (varkw != NULL) {
        Py_ssize_t pos = 0;
        PyObject *key, *value;
        while (PyDict_Next(varkw, &pos, &key, &value)) {
            PyTuple_SET_ITEM(kwnames, k, Py_NewRef(key));
            stack[npos + k] = value;
            k++;
        }
    }
    fh_bypass_next(code);
    result = PyObject_Vectorcall(fn, stack, (size_t)npos, kwnames);
    fh_bypass_next(NULL);
done:
    PyMem_Free(stack);
    Py_XDECREF(kwnames);
    Py_DECREF(fn);
    fh_discard_frame(ts, f);
    Py_DECREF(code);
    return result;
}

PyObject *fh_run_replacement(PyThreadState *ts, fh_frame *f, PyCodeObject *code) {
    if (retarget(ts, f, code)) {
        Py_DECREF(code); /* the frame holds its own reference now */
        fh_runs_in_frame++;
        return fh_eval_default(ts, f, 0); /* a tail call: the replacement costs no C stack of ours */
    }
    fh_runs_as_call++;
    return call_replacement(ts, f, code);
}
#endif
