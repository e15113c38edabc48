/* The overhead floor: what CPython charges for a hook that does nothing.
 *
 * noop_profile is a C profile function that returns at once; noop is a C callable for
 * sys.monitoring (3.12+) that returns None. Built by bench_overhead.py at run time. */
#define PY_SSIZE_T_CLEAN
#include <Python.h>

static int noop_profile(PyObject *obj, PyFrameObject *frame, int what, PyObject *arg) {
    return 0;
}

static PyObject *set_profile(PyObject *self, PyObject *on) {
    if (PyObject_IsTrue(on)) {
        PyEval_SetProfile(noop_profile, NULL);
    } else {
        PyEval_SetProfile(NULL, NULL);
    }
    Py_RETURN_NONE;
}

static PyObject *noop(PyObject *self, PyObject *const *args, Py_ssize_t nargs) {
    Py_RETURN_NONE;
}

static PyMethodDef methods[] = {
    {"set_profile", set_profile, METH_O, "Install (True) or remove (False) the no-op profile function."},
    {"noop", (PyCFunction)(void (*)(void))noop, METH_FASTCALL, "A sys.monitoring callback doing nothing."},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {PyModuleDef_HEAD_INIT, "fh_bench_floor", NULL, -1, methods};

PyMODINIT_FUNC PyInit_fh_bench_floor(void) { return PyModule_Create(&module); }
