/* record_function: annotations, as a context manager or a decorator. An annotation is a
 * begin and an end event on the calling thread, named by an interned site. */
#include "profiler.h"

#include <structmember.h>

typedef struct {
    PyObject_HEAD
    PyObject *name; /* str */
} RecordFunctionObject;

typedef struct {
    PyObject_HEAD
    PyObject *name;
    PyObject *func;
    PyObject *dict; /* for functools.update_wrapper */
    vectorcallfunc vectorcall;
} AnnotatedObject;

static void annotate(PyObject *name, uint32_t kind) {
    CtxObject *ctx = ctx_of_current_thread();
    if (ctx == NULL) {
        return;
    }
    uint64_t t = fh_ticks();
    uint32_t key = 0;
    if (name != NULL) {
        fh_slot *slot = fh_intern_object(ctx, name, FH_SITE_NAME);
        if (slot == NULL) {
            fh_ctx_break(ctx);
            return;
        }
        key = slot->key1 - 1;
    }
    ctx_push(ctx, kind, key, t);
}

static int recfn_init(RecordFunctionObject *self, PyObject *args, PyObject *kwds) {
    static char *kwlist[] = {"name", NULL};
    PyObject *name;
    if (!PyArg_ParseTupleAndKeywords(args, kwds, "U:record_function", kwlist, &name)) {
        return -1;
    }
    Py_INCREF(name);
    Py_XSETREF(self->name, name);
    return 0;
}

static void recfn_dealloc(RecordFunctionObject *self) {
    Py_XDECREF(self->name);
    Py_TYPE(self)->tp_free((PyObject *)self);
}

PyObject *fh_recfn_enter(PyObject *op, PyObject *Py_UNUSED(ignored)) {
    RecordFunctionObject *self = (RecordFunctionObject *)op;
    if (self->name == NULL) {
        PyErr_SetString(PyExc_RuntimeError, "record_function was not initialised");
        return NULL;
    }
    annotate(self->name, FH_EV_ANNOT_BEGIN);
    Py_INCREF(self);
    return (PyObject *)self;
}

PyObject *fh_recfn_exit(PyObject *self, PyObject *const *args, Py_ssize_t nargs) {
    annotate(NULL, FH_EV_ANNOT_END);
    Py_RETURN_FALSE;
}

static PyObject *annotated_vectorcall(AnnotatedObject *self, PyObject *const *args,
                                      size_t nargsf, PyObject *kwnames) {
    annotate(self->name, FH_EV_ANNOT_BEGIN);
    PyObject *result = PyObject_Vectorcall(self->func, args, nargsf, kwnames);
    annotate(NULL, FH_EV_ANNOT_END);
    return result;
}

/* Decorator form: record_function("name")(func) wraps func in an annotated callable. */
static PyObject *recfn_call(RecordFunctionObject *self, PyObject *args, PyObject *kwds) {
    PyObject *func;
    if (kwds != NULL && PyDict_GET_SIZE(kwds) != 0) {
        PyErr_SetString(PyExc_TypeError, "record_function(...) takes one callable to decorate");
        return NULL;
    }
    if (!PyArg_ParseTuple(args, "O:record_function", &func)) {
        return NULL;
    }
    if (!PyCallable_Check(func)) {
        PyErr_Format(PyExc_TypeError, "record_function can only decorate a callable, not %.100s",
                     Py_TYPE(func)->tp_name);
        return NULL;
    }
    AnnotatedObject *wrapper = PyObject_GC_New(AnnotatedObject, &fh_AnnotatedType);
    if (wrapper == NULL) {
        return NULL;
    }
    Py_INCREF(self->name);
    wrapper->name = self->name;
    Py_INCREF(func);
    wrapper->func = func;
    wrapper->dict = NULL;
    wrapper->vectorcall = (vectorcallfunc)annotated_vectorcall;
    PyObject_GC_Track(wrapper);
    PyObject *functools = PyImport_ImportModule("functools");
    if (functools == NULL) {
        Py_DECREF(wrapper);
        return NULL;
    }
    PyObject *res = PyObject_CallMethod(functools, "update_wrapper", "OO", wrapper, func);
    Py_DECREF(functools);
    if (res == NULL) {
        Py_DECREF(wrapper);
        return NULL;
    }
    Py_DECREF(res);
    return (PyObject *)wrapper;
}

static PyObject *recfn_repr(RecordFunctionObject *self) {
    return PyUnicode_FromFormat("record_function(%R)", self->name != NULL ? self->name : Py_None);
}

static PyMemberDef recfn_members[] = {
    {"name", T_OBJECT, offsetof(RecordFunctionObject, name), READONLY, "the annotation's name"},
    {NULL},
};

static int annotated_traverse(AnnotatedObject *self, visitproc visit, void *arg) {
    Py_VISIT(self->name);
    Py_VISIT(self->func);
    Py_VISIT(self->dict);
    return 0;
}

static int annotated_clear(AnnotatedObject *self) {
    Py_CLEAR(self->name);
    Py_CLEAR(self->func);
    Py_CLEAR(self->dict);
    return 0;
}

static void annotated_dealloc(AnnotatedObject *self) {
    PyObject_GC_UnTrack(self);
    annotated_clear(self);
    PyObject_GC_Del(self);
}

/* Bound like a function, so decorated methods receive self. */
static PyObject *annotated_descr_get(PyObject *self, PyObject *obj, PyObject *type) {
    if (obj == NULL || obj == Py_None) {
        Py_INCREF(self);
        return self;
    }
    return PyMethod_New(self, obj);
}

static PyObject *annotated_repr(AnnotatedObject *self) {
    return PyUnicode_FromFormat("<record_function %R of %R>", self->name, self->func);
}

static PyMemberDef annotated_members[] = {
    {"annotation", T_OBJECT, offsetof(AnnotatedObject, name), READONLY, "the annotation's name"},
    {NULL},
};

static PyGetSetDef annotated_getset[] = {
    {"__dict__", PyObject_GenericGetDict, PyObject_GenericSetDict, NULL, NULL},
    {NULL},
};

PyTypeObject fh_RecordFunctionType = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "framehook.profiler.record_function",
    .tp_doc = "record_function(name)\n\n"
              "Annotates a region in the profile: `with record_function(\"step\"):` or, as a\n"
              "decorator, `@record_function(\"step\")`. Costs a branch when nothing records.",
    .tp_basicsize = sizeof(RecordFunctionObject),
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_new = PyType_GenericNew,
    .tp_init = (initproc)recfn_init,
    .tp_dealloc = (destructor)recfn_dealloc,
    .tp_call = (ternaryfunc)recfn_call,
    .tp_repr = (reprfunc)recfn_repr,
    .tp_methods = FH_RECFN_METHODS,
    .tp_members = recfn_members,
};

PyTypeObject fh_AnnotatedType = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "framehook.profiler._tracer.Annotated",
    .tp_doc = "A callable wrapped by record_function.",
    .tp_basicsize = sizeof(AnnotatedObject),
    .tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_HAVE_GC | Py_TPFLAGS_HAVE_VECTORCALL,
    .tp_dealloc = (destructor)annotated_dealloc,
    .tp_traverse = (traverseproc)annotated_traverse,
    .tp_clear = (inquiry)annotated_clear,
    .tp_call = PyVectorcall_Call,
    .tp_vectorcall_offset = offsetof(AnnotatedObject, vectorcall),
    .tp_descr_get = annotated_descr_get,
    .tp_dictoffset = offsetof(AnnotatedObject, dict),
    .tp_repr = (reprfunc)annotated_repr,
    .tp_members = annotated_members,
    .tp_getset = annotated_getset,
};
