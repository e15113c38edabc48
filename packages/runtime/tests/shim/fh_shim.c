/* A do-nothing eval-frame function: installs itself and calls whatever evaluator was
 * there before. Used by the tests (another extension's hook that framehook must chain
 * to and restore) and by the benchmark (the cost floor of any PEP 523 hook). */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <frameobject.h>

#if PY_VERSION_HEX >= 0x030B0000
#define Py_BUILD_CORE
#include <internal/pycore_frame.h>
#undef Py_BUILD_CORE
typedef _PyInterpreterFrame shim_frame;
#else
typedef PyFrameObject shim_frame;
#endif

static _PyFrameEvalFunction previous;
static long calls;

static PyObject *shim_eval(PyThreadState *ts, shim_frame *f, int throw_flag) {
    calls++;
    return previous ? previous(ts, f, throw_flag) : _PyEval_EvalFrameDefault(ts, f, throw_flag);
}

static PyObject *install(PyObject *self, PyObject *unused) {
    PyInterpreterState *interp = PyInterpreterState_Get();
    _PyFrameEvalFunction current = _PyInterpreterState_GetEvalFrameFunc(interp);
    if (current != shim_eval) {
        previous = current == _PyEval_EvalFrameDefault ? NULL : current;
        _PyInterpreterState_SetEvalFrameFunc(interp, shim_eval);
    }
    Py_RETURN_NONE;
}

static PyObject *uninstall(PyObject *self, PyObject *unused) {
    PyInterpreterState *interp = PyInterpreterState_Get();
    if (_PyInterpreterState_GetEvalFrameFunc(interp) == shim_eval) {
        _PyInterpreterState_SetEvalFrameFunc(interp, previous ? previous : _PyEval_EvalFrameDefault);
    }
    Py_RETURN_NONE;
}

static PyObject *installed(PyObject *self, PyObject *unused) {
    return PyBool_FromLong(_PyInterpreterState_GetEvalFrameFunc(PyInterpreterState_Get()) == shim_eval);
}

static PyObject *is_default(PyObject *self, PyObject *unused) {
    return PyBool_FromLong(_PyInterpreterState_GetEvalFrameFunc(PyInterpreterState_Get()) == _PyEval_EvalFrameDefault);
}

static PyObject *get_calls(PyObject *self, PyObject *unused) {
    return PyLong_FromLong(calls);
}

static PyMethodDef methods[] = {
    {"install", install, METH_NOARGS, NULL},
    {"uninstall", uninstall, METH_NOARGS, NULL},
    {"installed", installed, METH_NOARGS, NULL},
    {"is_default", is_default, METH_NOARGS, NULL},
    {"calls", get_calls, METH_NOARGS, NULL},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef moduledef = {PyModuleDef_HEAD_INIT, "fh_shim", NULL, -1, methods};

PyMODINIT_FUNC PyInit_fh_shim(void) { return PyModule_Create(&moduledef); }
