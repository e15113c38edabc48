/* The read-only frame view handed to callbacks, and the entry locals dict that both
 * callbacks and guards receive. Only fresh function frames reach here, so the locals
 * are exactly the bound arguments plus the closure's free variables. */
#include "runtime.h"

static int set_local(PyObject *dict, PyObject *name, PyObject *value) {
    if (value == NULL) {
        return 0; /* unbound: leave it out, as frame.f_locals does */
    }
    return PyDict_SetItem(dict, name, value);
}

/* Index of `name` among names[lo:hi]: identity first (names are usually interned on
 * both sides), then equality. -1 when absent, -2 with an exception set. */
static Py_ssize_t find_name(PyObject *names, PyObject *name, Py_ssize_t lo, Py_ssize_t hi) {
    for (Py_ssize_t i = lo; i < hi; i++) {
        if (PyTuple_GET_ITEM(names, i) == name) {
            return i;
        }
    }
    for (Py_ssize_t i = lo; i < hi; i++) {
        int eq = PyObject_RichCompareBool(PyTuple_GET_ITEM(names, i), name, Py_EQ);
        if (eq != 0) {
            return eq < 0 ? -2 : i;
        }
    }
    return -1;
}

/* What fh_entry_locals(f)[name] would be, without building the dict: a new reference,
 * or NULL with KeyError when the name is not bound at entry. */
static PyObject *entry_value(PyObject *value, PyObject *name) {
    if (value == NULL) {
        PyErr_SetObject(PyExc_KeyError, name);
        return NULL;
    }
    return Py_NewRef(value);
}

#if FH_PY311
PyObject *fh_entry_locals(fh_frame *f) {
    PyCodeObject *co = fh_frame_code(f);
    PyObject *dict = PyDict_New();
    if (dict == NULL) {
        return NULL;
    }
    int nargs = fh_code_nargs(co);
    PyObject *names = co->co_localsplusnames;
    for (int i = 0; i < nargs; i++) {
        if (set_local(dict, PyTuple_GET_ITEM(names, i), fh_frame_slot(f, i)) < 0) {
            goto fail;
        }
    }
    if (co->co_nfreevars > 0) {
        /* Free variables are copied out of the closure by the code's first instruction,
         * so at entry they are still only in the function. */
        PyFunctionObject *fn = (PyFunctionObject *)fh_frame_function(f);
        PyObject *closure = fn ? fn->func_closure : NULL;
        if (closure != NULL && PyTuple_Check(closure) && PyTuple_GET_SIZE(closure) == co->co_nfreevars) {
            int base = co->co_nlocalsplus - co->co_nfreevars;
            for (int i = 0; i < co->co_nfreevars; i++) {
                PyObject *cell = PyTuple_GET_ITEM(closure, i);
                if (set_local(dict, PyTuple_GET_ITEM(names, base + i), PyCell_GET(cell)) < 0) {
                    goto fail;
                }
            }
        }
    }
    return dict;
fail:
    Py_DECREF(dict);
    return NULL;
}
PyObject *fh_entry_local(fh_frame *f, PyObject *name) {
    PyCodeObject *co = fh_frame_code(f);
    PyObject *names = co->co_localsplusnames;
    Py_ssize_t i = find_name(names, name, 0, fh_code_nargs(co));
    if (i >= 0) {
        return entry_value(fh_frame_slot(f, (int)i), name);
    }
    int base = co->co_nlocalsplus - co->co_nfreevars;
    if (i == -1 && co->co_nfreevars > 0) {
        i = find_name(names, name, base, co->co_nlocalsplus);
        if (i >= 0) {
            PyFunctionObject *fn = (PyFunctionObject *)fh_frame_function(f);
            PyObject *closure = fn ? fn->func_closure : NULL;
            if (closure == NULL || !PyTuple_Check(closure) || PyTuple_GET_SIZE(closure) != co->co_nfreevars) {
                return entry_value(NULL, name); /* as fh_entry_locals: not in the dict */
            }
            return entry_value(PyCell_GET(PyTuple_GET_ITEM(closure, i - base)), name);
        }
    }
    return i == -2 ? NULL : entry_value(NULL, name);
}
#else
/* 3.9/3.10: an argument that is also a cell variable was moved into its cell (and its
 * local slot cleared) when the frame was built. */
PyObject *fh_frame_arg_value(PyFrameObject *f, int i) {
    PyCodeObject *co = f->f_code;
    PyObject *v = f->f_localsplus[i];
    if (v == NULL && co->co_cell2arg != NULL) {
        Py_ssize_t ncells = PyTuple_GET_SIZE(co->co_cellvars);
        for (Py_ssize_t j = 0; j < ncells; j++) {
            if (co->co_cell2arg[j] == i) {
                PyObject *cell = f->f_localsplus[co->co_nlocals + j];
                return cell ? PyCell_GET(cell) : NULL;
            }
        }
    }
    return v;
}

PyObject *fh_entry_locals(fh_frame *f) {
    PyCodeObject *co = f->f_code;
    PyObject *dict = PyDict_New();
    if (dict == NULL) {
        return NULL;
    }
    int nargs = fh_code_nargs(co);
    for (int i = 0; i < nargs; i++) {
        if (set_local(dict, PyTuple_GET_ITEM(co->co_varnames, i), fh_frame_arg_value(f, i)) < 0) {
            goto fail;
        }
    }
    Py_ssize_t ncells = PyTuple_GET_SIZE(co->co_cellvars);
    Py_ssize_t nfree = PyTuple_GET_SIZE(co->co_freevars);
    for (Py_ssize_t i = 0; i < nfree; i++) {
        PyObject *cell = f->f_localsplus[co->co_nlocals + ncells + i];
        if (cell != NULL && set_local(dict, PyTuple_GET_ITEM(co->co_freevars, i), PyCell_GET(cell)) < 0) {
            goto fail;
        }
    }
    return dict;
fail:
    Py_DECREF(dict);
    return NULL;
}
PyObject *fh_entry_local(fh_frame *f, PyObject *name) {
    PyCodeObject *co = f->f_code;
    Py_ssize_t i = find_name(co->co_varnames, name, 0, fh_code_nargs(co));
    if (i >= 0) {
        return entry_value(fh_frame_arg_value(f, (int)i), name);
    }
    Py_ssize_t nfree = PyTuple_GET_SIZE(co->co_freevars);
    if (i == -1 && nfree > 0) {
        i = find_name(co->co_freevars, name, 0, nfree);
        if (i >= 0) {
            PyObject *cell = f->f_localsplus[co->co_nlocals + PyTuple_GET_SIZE(co->co_cellvars) + i];
            return entry_value(cell ? PyCell_GET(cell) : NULL, name);
        }
    }
    return i == -2 ? NULL : entry_value(NULL, name);
}
#endif

/* ---- FrameView ------------------------------------------------------------- */
typedef struct {
    PyObject_HEAD
    fh_frame *frame;  /* NULL once the callback has returned */
    PyObject *locals; /* owned */
    PyObject *back;   /* owned, may be NULL */
#if FH_PY311
    /* The caller's interpreter frame. Its frame object is only created if f_back is
     * read, so that intercepting a call has no side effect a program could observe
     * (such as one more object in gc.get_objects()). */
    _PyInterpreterFrame *caller;
#endif
} FrameView;

#if FH_PY311
static _PyInterpreterFrame *current_interpreter_frame(PyThreadState *ts) {
#if FH_PY313
    return ts->current_frame;
#else
    return ts->cframe->current_frame;
#endif
}

/* Walks back from the running frame (the callback's) to the recorded caller. */
static PyObject *caller_frame_object(_PyInterpreterFrame *caller) {
    PyFrameObject *f = PyThreadState_GetFrame(PyThreadState_Get());
    while (f != NULL) {
        if (f->f_frame == caller) {
            return (PyObject *)f;
        }
        PyFrameObject *back = PyFrame_GetBack(f);
        Py_DECREF(f);
        f = back;
    }
    return NULL;
}
#endif

PyObject *fh_frameview_new(PyThreadState *ts, fh_frame *f, PyObject *locals) {
    FrameView *v = PyObject_GC_New(FrameView, &fh_FrameView_Type);
    if (v == NULL) {
        return NULL;
    }
    v->frame = f;
    v->locals = Py_NewRef(locals);
#if FH_PY311
    /* The frame is not linked yet: the thread's current frame is its caller. */
    v->back = NULL;
    v->caller = current_interpreter_frame(ts);
#else
    (void)ts;
    v->back = Py_XNewRef((PyObject *)f->f_back);
#endif
    PyObject_GC_Track(v);
    return (PyObject *)v;
}

void fh_frameview_release(PyObject *view) {
    ((FrameView *)view)->frame = NULL;
}

static int view_traverse(FrameView *v, visitproc visit, void *arg) {
    Py_VISIT(v->locals);
    Py_VISIT(v->back);
    return 0;
}

static int view_clear(FrameView *v) {
    Py_CLEAR(v->locals);
    Py_CLEAR(v->back);
    return 0;
}

static void view_dealloc(FrameView *v) {
    PyObject_GC_UnTrack(v);
    view_clear(v);
    PyObject_GC_Del(v);
}

static fh_frame *live(FrameView *v) {
    if (v->frame == NULL) {
        PyErr_SetString(PyExc_RuntimeError,
                        "framehook frame view used after its callback returned; copy what you need during the callback");
    }
    return v->frame;
}

static PyObject *view_code(FrameView *v, void *c) {
    fh_frame *f = live(v);
    return f ? Py_NewRef(fh_frame_code(f)) : NULL;
}

static PyObject *view_globals(FrameView *v, void *c) {
    fh_frame *f = live(v);
    return f ? Py_NewRef(fh_frame_globals(f)) : NULL;
}

static PyObject *view_builtins(FrameView *v, void *c) {
    fh_frame *f = live(v);
    return f ? Py_NewRef(fh_frame_builtins(f)) : NULL;
}

static PyObject *view_locals(FrameView *v, void *c) {
    return live(v) ? PyDictProxy_New(v->locals) : NULL;
}

static PyObject *view_lasti(FrameView *v, void *c) {
    return live(v) ? PyLong_FromLong(-1) : NULL; /* fresh frames only: nothing executed */
}

static PyObject *view_lineno(FrameView *v, void *c) {
    fh_frame *f = live(v);
    return f ? PyLong_FromLong(fh_frame_code(f)->co_firstlineno) : NULL;
}

static PyObject *view_back(FrameView *v, void *c) {
    if (!live(v)) {
        return NULL;
    }
#if FH_PY311
    if (v->back == NULL && v->caller != NULL) {
        v->back = caller_frame_object(v->caller);
        v->caller = NULL;
    }
#endif
    return Py_NewRef(v->back ? v->back : Py_None);
}

#if !FH_PY311
/* 3.9/3.10 frames do not record their function: find the function whose code, globals
 * and closure cells are the frame's. Slow (a heap scan), so only done on request. */
static PyObject *find_function(PyFrameObject *f) {
    PyCodeObject *co = f->f_code;
    PyObject *gc = PyImport_ImportModule("gc");
    if (gc == NULL) {
        return NULL;
    }
    PyObject *refs = PyObject_CallMethod(gc, "get_referrers", "O", (PyObject *)co);
    Py_DECREF(gc);
    if (refs == NULL) {
        return NULL;
    }
    Py_ssize_t ncells = PyTuple_GET_SIZE(co->co_cellvars);
    Py_ssize_t nfree = PyTuple_GET_SIZE(co->co_freevars);
    PyObject *found = Py_None;
    for (Py_ssize_t k = 0; k < PyList_GET_SIZE(refs); k++) {
        PyObject *fn = PyList_GET_ITEM(refs, k);
        if (!PyFunction_Check(fn) || PyFunction_GET_CODE(fn) != (PyObject *)co ||
            PyFunction_GET_GLOBALS(fn) != f->f_globals) {
            continue;
        }
        PyObject *closure = PyFunction_GET_CLOSURE(fn);
        int same = 1;
        for (Py_ssize_t i = 0; i < nfree; i++) {
            if (closure == NULL || PyTuple_GET_ITEM(closure, i) != f->f_localsplus[co->co_nlocals + ncells + i]) {
                same = 0;
                break;
            }
        }
        if (same) {
            found = fn;
            break;
        }
    }
    Py_INCREF(found);
    Py_DECREF(refs);
    return found;
}
#endif

static PyObject *view_function(FrameView *v, void *c) {
    fh_frame *f = live(v);
    if (f == NULL) {
        return NULL;
    }
#if FH_PY311
    PyObject *fn = fh_frame_function(f);
    return Py_NewRef(fn ? fn : Py_None);
#else
    return find_function(f);
#endif
}

static PyObject *view_repr(FrameView *v) {
    if (v->frame == NULL) {
        return PyUnicode_FromString("<framehook FrameView (released)>");
    }
    PyCodeObject *co = fh_frame_code(v->frame);
    return PyUnicode_FromFormat("<framehook FrameView of %U at %U:%d>", co->co_name, co->co_filename,
                                co->co_firstlineno);
}

static PyGetSetDef view_getset[] = {
    {"f_code", (getter)view_code, NULL, "code object of the frame", NULL},
    {"f_globals", (getter)view_globals, NULL, "globals of the frame", NULL},
    {"f_builtins", (getter)view_builtins, NULL, "builtins of the frame", NULL},
    {"f_locals", (getter)view_locals, NULL, "read-only mapping of the arguments and free variables at entry", NULL},
    {"f_lasti", (getter)view_lasti, NULL, "always -1: intercepted frames have not started", NULL},
    {"f_lineno", (getter)view_lineno, NULL, "first line of the code", NULL},
    {"f_back", (getter)view_back, NULL, "the caller's frame object, or None", NULL},
    {"function", (getter)view_function, NULL, "the function being called, or None if it cannot be found", NULL},
    {NULL},
};

PyTypeObject fh_FrameView_Type = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "framehook.runtime.FrameView",
    .tp_basicsize = sizeof(FrameView),
    .tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_HAVE_GC,
    .tp_doc = "Read-only view of an intercepted frame, valid only while its callback runs.",
    .tp_dealloc = (destructor)view_dealloc,
    .tp_traverse = (traverseproc)view_traverse,
    .tp_clear = (inquiry)view_clear,
    .tp_repr = (reprfunc)view_repr,
    .tp_getset = view_getset,
};
