/* GuardedCode (what a callback returns) and CacheEntryInfo (what cache_entries reports). */
#include "runtime.h"
#include <structmember.h>

static PyObject *guarded_new(PyTypeObject *type, PyObject *args, PyObject *kwds) {
    static char *kwlist[] = {"code", "check_fn", NULL};
    PyObject *code, *check_fn;
    if (!PyArg_ParseTupleAndKeywords(args, kwds, "OO:GuardedCode", kwlist, &code, &check_fn)) {
        return NULL;
    }
    if (!PyCode_Check(code)) {
        PyErr_Format(PyExc_TypeError, "GuardedCode() argument 'code' must be a code object, not %.200s",
                     Py_TYPE(code)->tp_name);
        return NULL;
    }
    if (!PyCallable_Check(check_fn)) {
        PyErr_Format(PyExc_TypeError, "GuardedCode() argument 'check_fn' must be callable, not %.200s",
                     Py_TYPE(check_fn)->tp_name);
        return NULL;
    }
    fh_GuardedCode *self = (fh_GuardedCode *)type->tp_alloc(type, 0);
    if (self == NULL) {
        return NULL;
    }
    self->code = Py_NewRef(code);
    self->check_fn = Py_NewRef(check_fn);
    return (PyObject *)self;
}

static int guarded_traverse(fh_GuardedCode *self, visitproc visit, void *arg) {
    Py_VISIT(self->code);
    Py_VISIT(self->check_fn);
    return 0;
}

static int guarded_clear(fh_GuardedCode *self) {
    Py_CLEAR(self->code);
    Py_CLEAR(self->check_fn);
    return 0;
}

static void guarded_dealloc(fh_GuardedCode *self) {
    PyObject_GC_UnTrack(self);
    guarded_clear(self);
    Py_TYPE(self)->tp_free((PyObject *)self);
}

static PyObject *guarded_repr(fh_GuardedCode *self) {
    return PyUnicode_FromFormat("GuardedCode(code=%R, check_fn=%R)", self->code, self->check_fn);
}

static PyMemberDef guarded_members[] = {
    {"code", T_OBJECT, offsetof(fh_GuardedCode, code), READONLY, "the replacement code object"},
    {"check_fn", T_OBJECT, offsetof(fh_GuardedCode, check_fn), READONLY,
     "guard called with the frame's entry locals; the code runs while it is true"},
    {NULL},
};

PyTypeObject fh_GuardedCode_Type = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "framehook.runtime.GuardedCode",
    .tp_basicsize = sizeof(fh_GuardedCode),
    .tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_HAVE_GC,
    .tp_doc = "GuardedCode(code, check_fn)\n--\n\n"
              "Replacement code for an intercepted frame, valid while check_fn(f_locals) is true.",
    .tp_new = guarded_new,
    .tp_dealloc = (destructor)guarded_dealloc,
    .tp_traverse = (traverseproc)guarded_traverse,
    .tp_clear = (inquiry)guarded_clear,
    .tp_repr = (reprfunc)guarded_repr,
    .tp_members = guarded_members,
};

static PyTypeObject entry_info_type;
static PyStructSequence_Field entry_info_fields[] = {
    {"code", "the replacement code object"},
    {"check_fn", "its guard"},
    {"hits", "how many calls ran it"},
    {NULL},
};
static PyStructSequence_Desc entry_info_desc = {
    "framehook.runtime.CacheEntryInfo",
    "One cache entry of a code object, as reported by cache_entries().",
    entry_info_fields,
    3,
};

PyObject *fh_entry_info(fh_entry *entry) {
    PyObject *info = PyStructSequence_New(&entry_info_type);
    if (info == NULL) {
        return NULL;
    }
    PyObject *hits = PyLong_FromSsize_t(entry->hits);
    if (hits == NULL) {
        Py_DECREF(info);
        return NULL;
    }
    PyStructSequence_SET_ITEM(info, 0, Py_NewRef(entry->code));
    PyStructSequence_SET_ITEM(info, 1, Py_NewRef(entry->check_fn));
    PyStructSequence_SET_ITEM(info, 2, hits);
    /* PyStructSequence_New leaves the object untracked, yet check_fn may lead back to it:
       a cycle through the info would never be collected */
    if (!PyObject_GC_IsTracked(info)) {
        PyObject_GC_Track(info);
    }
    return info;
}

int fh_types_init(PyObject *module) {
    if (PyType_Ready(&fh_GuardedCode_Type) < 0 || PyType_Ready(&fh_FrameView_Type) < 0 ||
        PyType_Ready(&fh_CallbackWrapper_Type) < 0 || PyType_Ready(&fh_CallbackScope_Type) < 0 ||
        fh_guard_checker_ready() < 0) {
        return -1;
    }
    if (PyStructSequence_InitType2(&entry_info_type, &entry_info_desc) < 0) {
        return -1;
    }
    Py_INCREF(&fh_GuardedCode_Type);
    if (PyModule_AddObject(module, "GuardedCode", (PyObject *)&fh_GuardedCode_Type) < 0) {
        Py_DECREF(&fh_GuardedCode_Type);
        return -1;
    }
    Py_INCREF(&entry_info_type);
    if (PyModule_AddObject(module, "CacheEntryInfo", (PyObject *)&entry_info_type) < 0) {
        Py_DECREF(&entry_info_type);
        return -1;
    }
    Py_INCREF(&fh_FrameView_Type);
    if (PyModule_AddObject(module, "FrameView", (PyObject *)&fh_FrameView_Type) < 0) {
        Py_DECREF(&fh_FrameView_Type);
        return -1;
    }
    Py_INCREF(&fh_CallbackWrapper_Type);
    if (PyModule_AddObject(module, "CallbackWrapper", (PyObject *)&fh_CallbackWrapper_Type) < 0) {
        Py_DECREF(&fh_CallbackWrapper_Type);
        return -1;
    }
    Py_INCREF(&fh_CallbackScope_Type);
    if (PyModule_AddObject(module, "CallbackScope", (PyObject *)&fh_CallbackScope_Type) < 0) {
        Py_DECREF(&fh_CallbackScope_Type);
        return -1;
    }
    Py_INCREF(&fh_GuardChecker_Type);
    if (PyModule_AddObject(module, "GuardChecker", (PyObject *)&fh_GuardChecker_Type) < 0) {
        Py_DECREF(&fh_GuardChecker_Type);
        return -1;
    }
    return 0;
}
