/* Calling a function with this thread's callback set: the core that call_with() and the
 * CallbackWrapper type share. A decorator built on CallbackWrapper costs one C call per
 * call of the decorated function, with no Python frame and no argument packing. */
#include "runtime.h"
#include <structmember.h>

int fh_check_call_args(const char *func, PyObject *callback, PyObject *fn) {
    if (callback != Py_None && callback != Py_False && !PyCallable_Check(callback)) {
        PyErr_Format(PyExc_TypeError, "%s() argument 'callback' must be None, False or a callable, not %.200s", func,
                     Py_TYPE(callback)->tp_name);
        return -1;
    }
    if (!PyCallable_Check(fn)) {
        PyErr_Format(PyExc_TypeError, "%s() argument 'fn' must be callable, not %.200s", func, Py_TYPE(fn)->tp_name);
        return -1;
    }
    return 0;
}

PyObject *fh_call_with(PyObject *callback, PyObject *fn, PyObject *const *args, size_t nargsf, PyObject *kwnames) {
    PyObject *previous = fh_set_callback(callback);
    if (previous == NULL) {
        return NULL;
    }
    PyObject *result = PyObject_Vectorcall(fn, args, nargsf, kwnames);
    PyObject *type, *value, *tb;
    PyErr_Fetch(&type, &value, &tb);
    PyObject *restored = fh_set_callback(previous);
    Py_DECREF(previous);
    if (restored == NULL) {
        /* restoring cannot fail for a callback this thread already had; keep fn's error if any */
        Py_XDECREF(result);
        if (type != NULL) {
            PyErr_Clear();
            PyErr_Restore(type, value, tb);
        }
        return NULL;
    }
    Py_DECREF(restored);
    PyErr_Restore(type, value, tb);
    return result;
}

/* ---- CallbackWrapper ---------------------------------------------------------- */
typedef struct {
    PyObject_HEAD
    PyObject *callback;
    PyObject *fn;
    PyObject *dict;        /* __name__, __wrapped__, ... as functools.update_wrapper sets them */
    PyObject *weakreflist;
    vectorcallfunc vectorcall;
} fh_CallbackWrapper;

static PyObject *wrapper_vectorcall(PyObject *self, PyObject *const *args, size_t nargsf, PyObject *kwnames) {
    fh_CallbackWrapper *w = (fh_CallbackWrapper *)self;
    if (w->fn == NULL) { /* cleared by the garbage collector, yet reached from a finalizer */
        PyErr_SetString(PyExc_RuntimeError, "CallbackWrapper called after it was cleared");
        return NULL;
    }
    /* wrappers of wrappers recurse in C with no Python frame to count: a RecursionError,
     * not a stack overflow, when a chain is absurdly deep */
    if (Py_EnterRecursiveCall(" while calling a CallbackWrapper")) {
        return NULL;
    }
    /* our caller's PY_VECTORCALL_ARGUMENTS_OFFSET permission passes on unchanged: same array */
    PyObject *result = fh_call_with(w->callback, w->fn, args, nargsf, kwnames);
    Py_LeaveRecursiveCall();
    return result;
}

static PyObject *wrapper_new(PyTypeObject *type, PyObject *args, PyObject *kwds) {
    if (kwds != NULL && PyDict_GET_SIZE(kwds) != 0) {
        PyErr_SetString(PyExc_TypeError, "CallbackWrapper() takes no keyword arguments");
        return NULL;
    }
    if (PyTuple_GET_SIZE(args) != 2) {
        PyErr_Format(PyExc_TypeError, "CallbackWrapper() takes a callback and a function (2 arguments), got %zd",
                     PyTuple_GET_SIZE(args));
        return NULL;
    }
    PyObject *callback = PyTuple_GET_ITEM(args, 0), *fn = PyTuple_GET_ITEM(args, 1);
    if (fh_check_call_args("CallbackWrapper", callback, fn) < 0) {
        return NULL;
    }
    fh_CallbackWrapper *self = (fh_CallbackWrapper *)type->tp_alloc(type, 0);
    if (self == NULL) {
        return NULL;
    }
    self->callback = Py_NewRef(callback);
    self->fn = Py_NewRef(fn);
    self->vectorcall = wrapper_vectorcall;
    return (PyObject *)self;
}

static int wrapper_traverse(fh_CallbackWrapper *self, visitproc visit, void *arg) {
    Py_VISIT(self->callback);
    Py_VISIT(self->fn);
    Py_VISIT(self->dict);
    return 0;
}

static int wrapper_clear(fh_CallbackWrapper *self) {
    Py_CLEAR(self->callback);
    Py_CLEAR(self->fn);
    Py_CLEAR(self->dict);
    return 0;
}

static void wrapper_dealloc(fh_CallbackWrapper *self) {
    PyObject_GC_UnTrack(self);
    /* freeing a long chain of wrappers of wrappers is deferred in steps, as CPython does
     * for its containers, instead of recursing once per link */
    Py_TRASHCAN_BEGIN(self, wrapper_dealloc)
    if (self->weakreflist != NULL) {
        PyObject_ClearWeakRefs((PyObject *)self);
    }
    wrapper_clear(self);
    Py_TYPE(self)->tp_free((PyObject *)self);
    Py_TRASHCAN_END
}

/* Binds like a Python function, so a decorated method receives its instance. */
static PyObject *wrapper_descr_get(PyObject *self, PyObject *obj, PyObject *type) {
    if (obj == NULL || obj == Py_None) {
        return Py_NewRef(self);
    }
    return PyMethod_New(self, obj);
}

static PyObject *wrapper_repr(fh_CallbackWrapper *self) {
    int rc = Py_ReprEnter((PyObject *)self);
    if (rc != 0) {
        return rc > 0 ? PyUnicode_FromString("CallbackWrapper(...)") : NULL;
    }
    /* a cleared wrapper (mid-collection) has no fields left */
    PyObject *r = self->fn == NULL ? PyUnicode_FromString("CallbackWrapper(<cleared>)")
                                   : PyUnicode_FromFormat("CallbackWrapper(callback=%R, fn=%R)", self->callback,
                                                          self->fn);
    Py_ReprLeave((PyObject *)self);
    return r;
}

/* Pickled and copied by reference, as functions are: pickle looks __qualname__ up in
 * __module__ (where a module-level decorated function is found); copy returns self. */
static PyObject *wrapper_reduce(PyObject *self, PyObject *unused) {
    PyObject *name = PyObject_GetAttrString(self, "__qualname__");
    if (name == NULL || !PyUnicode_Check(name)) {
        if (name == NULL && !PyErr_ExceptionMatches(PyExc_AttributeError)) {
            return NULL;
        }
        PyErr_Clear();
        Py_XDECREF(name);
        PyErr_SetString(PyExc_TypeError, "cannot pickle a CallbackWrapper without a str __qualname__ "
                                         "(functools.update_wrapper sets it from the wrapped function)");
        return NULL;
    }
    return name;
}

static PyMethodDef wrapper_methods[] = {
    {"__reduce__", wrapper_reduce, METH_NOARGS, "Pickle by reference (module and qualified name)."},
    {NULL, NULL, 0, NULL},
};

static PyMemberDef wrapper_members[] = {
    {"callback", T_OBJECT, offsetof(fh_CallbackWrapper, callback), READONLY,
     "the callback set around each call (None, False or a callable)"},
    {"fn", T_OBJECT, offsetof(fh_CallbackWrapper, fn), READONLY, "the function called"},
    {NULL},
};

static PyGetSetDef wrapper_getset[] = {
    {"__dict__", PyObject_GenericGetDict, PyObject_GenericSetDict, NULL, NULL},
    {NULL},
};

PyTypeObject fh_CallbackWrapper_Type = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "framehook.runtime.CallbackWrapper",
    .tp_basicsize = sizeof(fh_CallbackWrapper),
    /* METHOD_DESCRIPTOR: obj.method(...) may call us with obj first instead of binding,
     * which __get__ makes equivalent */
    .tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_HAVE_GC | Py_TPFLAGS_HAVE_VECTORCALL | Py_TPFLAGS_METHOD_DESCRIPTOR,
    .tp_doc = "CallbackWrapper(callback, fn)\n--\n\n"
              "A callable that calls fn(*args, **kwargs) with this thread's callback set to callback and\n"
              "restores the previous one afterwards, also when fn raises: call_with(callback, fn, ...)\n"
              "as a function object. It binds as a method like a function does, and takes attributes\n"
              "(functools.update_wrapper(CallbackWrapper(cb, f), f) makes it look like f).",
    .tp_new = wrapper_new,
    .tp_dealloc = (destructor)wrapper_dealloc,
    .tp_traverse = (traverseproc)wrapper_traverse,
    .tp_clear = (inquiry)wrapper_clear,
    .tp_repr = (reprfunc)wrapper_repr,
    .tp_call = PyVectorcall_Call,
    .tp_vectorcall_offset = offsetof(fh_CallbackWrapper, vectorcall),
    .tp_descr_get = wrapper_descr_get,
    .tp_dictoffset = offsetof(fh_CallbackWrapper, dict),
    .tp_weaklistoffset = offsetof(fh_CallbackWrapper, weakreflist),
    .tp_methods = wrapper_methods,
    .tp_members = wrapper_members,
    .tp_getset = wrapper_getset,
};

/* ---- CallbackScope ------------------------------------------------------------- */
/* The context manager under enable(), run_only() and disable(): entering sets this thread's
 * callback, exiting restores the one the entry replaced. Both are C methods, so no Python
 * frame runs under the scope's callback on the way in or out: a callback that raises or
 * returns something invalid for every frame cannot leave itself installed. Entries are kept
 * per thread (hook.c), so one object can be entered on several threads and re-entered. */
typedef struct {
    PyObject_HEAD
    PyObject *callback; /* None, False or a callable */
    PyObject *name;     /* the factory's name, for messages: "enable", "run_only", "disable" */
} fh_CallbackScope;

static PyObject *scope_new(PyTypeObject *type, PyObject *args, PyObject *kwds) {
    static char *kwlist[] = {"callback", "name", NULL};
    PyObject *callback, *name;
    if (!PyArg_ParseTupleAndKeywords(args, kwds, "OU:CallbackScope", kwlist, &callback, &name)) {
        return NULL;
    }
    if (callback != Py_None && callback != Py_False && !PyCallable_Check(callback)) {
        PyErr_Format(PyExc_TypeError,
                     "CallbackScope() argument 'callback' must be None, False or a callable, not %.200s",
                     Py_TYPE(callback)->tp_name);
        return NULL;
    }
    fh_CallbackScope *self = (fh_CallbackScope *)type->tp_alloc(type, 0);
    if (self == NULL) {
        return NULL;
    }
    self->callback = Py_NewRef(callback);
    self->name = Py_NewRef(name);
    return (PyObject *)self;
}

static int scope_traverse(fh_CallbackScope *self, visitproc visit, void *arg) {
    Py_VISIT(self->callback);
    return 0;
}

static int scope_clear(fh_CallbackScope *self) {
    Py_CLEAR(self->callback);
    return 0;
}

/* (a Python subclass's own dealloc releases the reference its instances hold to it) */
static void scope_dealloc(fh_CallbackScope *self) {
    PyObject_GC_UnTrack(self);
    scope_clear(self);
    Py_CLEAR(self->name);
    Py_TYPE(self)->tp_free((PyObject *)self);
}

static PyObject *scope_enter(PyObject *self, PyObject *unused) {
    fh_CallbackScope *s = (fh_CallbackScope *)self;
    if (s->callback == NULL) { /* cleared by the garbage collector, yet reached from a finalizer */
        PyErr_SetString(PyExc_RuntimeError, "CallbackScope entered after it was cleared");
        return NULL;
    }
    if (fh_scope_enter(self, s->callback) < 0) {
        return NULL;
    }
    return Py_NewRef(self);
}

static PyObject *scope_exit(PyObject *self, PyObject *const *args, Py_ssize_t nargs) {
    (void)args;
    (void)nargs; /* the exception, if any, propagates: never suppressed */
    if (fh_scope_exit(self) < 0) {
        return NULL;
    }
    Py_RETURN_NONE;
}

static PyMethodDef scope_methods[] = {
    {"__enter__", scope_enter, METH_NOARGS, "Set this thread's callback to the scope's; returns the scope."},
    {"__exit__", (PyCFunction)(void (*)(void))scope_exit, METH_FASTCALL,
     "Restore the callback this thread's latest entry of the scope replaced."},
    {NULL, NULL, 0, NULL},
};

static PyMemberDef scope_members[] = {
    {"callback", T_OBJECT, offsetof(fh_CallbackScope, callback), READONLY,
     "the callback set inside the scope (None, False or a callable)"},
    {"name", T_OBJECT, offsetof(fh_CallbackScope, name), READONLY, "the name of the function that made the scope"},
    {NULL},
};

PyTypeObject fh_CallbackScope_Type = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "framehook.runtime.CallbackScope",
    .tp_basicsize = sizeof(fh_CallbackScope),
    .tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_HAVE_GC | Py_TPFLAGS_BASETYPE,
    .tp_doc = "CallbackScope(callback, name)\n--\n\n"
              "A context manager that sets this thread's callback on entry and restores the previous one\n"
              "on exit, in C: no Python frame runs under callback while entering or exiting. The base\n"
              "of what enable(), run_only() and disable() return.",
    .tp_new = scope_new,
    .tp_dealloc = (destructor)scope_dealloc,
    .tp_traverse = (traverseproc)scope_traverse,
    .tp_clear = (inquiry)scope_clear,
    .tp_methods = scope_methods,
    .tp_members = scope_members,
};
