/* framehook.runtime._C: the Python-facing functions. */
#include "runtime.h"

int fh_is_installed(void);
int fh_hook_init(void);

static PyCodeObject *code_arg(PyObject *arg, const char *func) {
    if (!PyCode_Check(arg)) {
        PyErr_Format(PyExc_TypeError, "%s() argument 'code' must be a code object, not %.200s", func,
                     Py_TYPE(arg)->tp_name);
        return NULL;
    }
    return (PyCodeObject *)arg;
}

static PyObject *set_eval_frame(PyObject *self, PyObject *callback) {
    if (callback != Py_None && callback != Py_False && !PyCallable_Check(callback)) {
        PyErr_Format(PyExc_TypeError,
                     "set_eval_frame() argument 'callback' must be None, False or a callable, not %.200s",
                     Py_TYPE(callback)->tp_name);
        return NULL;
    }
    return fh_set_callback(callback);
}

/* fn(*args, **kwargs) with this thread's callback set, restored afterwards (callwith.c). */
static PyObject *call_with(PyObject *self, PyObject *const *args, Py_ssize_t nargs, PyObject *kwnames) {
    if (nargs < 2) {
        PyErr_SetString(PyExc_TypeError, "call_with() takes a callback and a function, then the function's arguments");
        return NULL;
    }
    if (fh_check_call_args("call_with", args[0], args[1]) < 0) {
        return NULL;
    }
    return fh_call_with(args[0], args[1], args + 2, (size_t)(nargs - 2), kwnames);
}

static PyObject *get_eval_frame(PyObject *self, PyObject *unused) {
    return fh_get_callback();
}

static PyObject *reset_code(PyObject *self, PyObject *arg) {
    PyCodeObject *co = code_arg(arg, "reset_code");
    if (co == NULL) {
        return NULL;
    }
#if FH_HOOK_ARMED_BY_FUNCTION_MARKS
    fh_extra *ex = fh_extra_get(co);
    int was_skipped = ex != NULL && ex->skip;
#endif
    if (fh_extra_reset(co) < 0) {
        return NULL;
    }
#if FH_HOOK_ARMED_BY_FUNCTION_MARKS
    if (fh_marks_code_reset(co, was_skipped) < 0) {
        return NULL;
    }
#endif
    Py_RETURN_NONE;
}

static PyObject *skip_code(PyObject *self, PyObject *arg) {
    PyCodeObject *co = code_arg(arg, "skip_code");
    if (co == NULL) {
        return NULL;
    }
    fh_extra *ex = fh_extra_ensure(co);
    if (ex == NULL) {
        return NULL;
    }
    ex->skip = 1;
#if FH_HOOK_ARMED_BY_FUNCTION_MARKS
    fh_marks_code_skipped(co); /* its functions are unmarked at their next call */
#endif
    Py_RETURN_NONE;
}

static PyObject *is_skipped(PyObject *self, PyObject *arg) {
    PyCodeObject *co = code_arg(arg, "is_skipped");
    if (co == NULL) {
        return NULL;
    }
    fh_extra *ex = fh_extra_get(co);
    return PyBool_FromLong(ex != NULL && ex->skip);
}

static PyObject *cache_entries(PyObject *self, PyObject *arg) {
    PyCodeObject *co = code_arg(arg, "cache_entries");
    if (co == NULL) {
        return NULL;
    }
    PyObject *list = PyList_New(0);
    if (list == NULL) {
        return NULL;
    }
    fh_extra *ex = fh_extra_get(co);
    for (fh_entry *e = ex ? ex->head : NULL; e != NULL; e = e->next) {
        PyObject *info = fh_entry_info(e);
        if (info == NULL || PyList_Append(list, info) < 0) {
            Py_XDECREF(info);
            Py_DECREF(list);
            return NULL;
        }
        Py_DECREF(info);
    }
    return list;
}

static PyObject *frame_state(PyObject *self, PyObject *arg) {
    PyCodeObject *co = code_arg(arg, "frame_state");
    if (co == NULL) {
        return NULL;
    }
    fh_extra *ex = fh_extra_get(co);
    PyObject *state = ex ? ex->frame_state : NULL;
    return Py_NewRef(state ? state : Py_None);
}

static PyObject *set_guard_error_hook(PyObject *self, PyObject *fn) {
    if (fn != Py_None && !PyCallable_Check(fn)) {
        PyErr_Format(PyExc_TypeError, "set_guard_error_hook() argument 'fn' must be None or a callable, not %.200s",
                     Py_TYPE(fn)->tp_name);
        return NULL;
    }
    PyObject *previous = fh_guard_error_hook ? fh_guard_error_hook : Py_NewRef(Py_None);
    fh_guard_error_hook = fn == Py_None ? NULL : Py_NewRef(fn);
    return previous;
}

static PyObject *set_trace_callbacks(PyObject *self, PyObject *flag) {
    if (!PyBool_Check(flag)) {
        PyErr_Format(PyExc_TypeError, "set_trace_callbacks() argument 'enabled' must be a bool, not %.200s",
                     Py_TYPE(flag)->tp_name);
        return NULL;
    }
    PyObject *previous = PyBool_FromLong(fh_trace_callbacks);
    fh_trace_callbacks = flag == Py_True;
    return previous;
}

static PyObject *eval_frame_installed(PyObject *self, PyObject *unused) {
    return PyBool_FromLong(fh_is_installed());
}

/* Function marks (3.15): counters, and whether a function's calls arm the hook; None and
 * False where the hook is installed for every frame instead. */
static PyObject *marks_stats(PyObject *self, PyObject *unused) {
#if FH_HOOK_ARMED_BY_FUNCTION_MARKS
    return fh_marks_stats();
#else
    Py_RETURN_NONE;
#endif
}

static PyObject *is_marked(PyObject *self, PyObject *fn) {
    if (!PyFunction_Check(fn)) {
        PyErr_Format(PyExc_TypeError, "_is_marked() argument must be a function, not %.200s", Py_TYPE(fn)->tp_name);
        return NULL;
    }
#if FH_HOOK_ARMED_BY_FUNCTION_MARKS
    return PyBool_FromLong(((PyFunctionObject *)fn)->vectorcall == fh_marked_call);
#else
    Py_RETURN_FALSE;
#endif
}

static PyObject *shadow_stats(PyObject *self, PyObject *unused) {
    return Py_BuildValue("{snsn}", "in_frame", fh_runs_in_frame, "as_call", fh_runs_as_call);
}

/* ---- an in-module event recorder, registered through the public capsule -------- */
static PyObject *event_log; /* list of (event, code) while recording */

static void log_event(void *userdata, int event, PyObject *code) {
    PyObject *item = Py_BuildValue("(iO)", event, code);
    if (item == NULL || PyList_Append((PyObject *)userdata, item) < 0) {
        PyErr_Clear(); /* listeners must not raise */
    }
    Py_XDECREF(item);
}

static framehook_events_api *events_api(void) {
    framehook_events_api *api = (framehook_events_api *)PyCapsule_Import(FRAMEHOOK_EVENTS_CAPSULE, 0);
    if (api != NULL && api->abi_version != FRAMEHOOK_EVENTS_ABI) {
        PyErr_SetString(PyExc_RuntimeError, "framehook events: ABI mismatch");
        return NULL;
    }
    return api;
}

static PyObject *start_event_log(PyObject *self, PyObject *unused) {
    if (event_log != NULL) {
        PyErr_SetString(PyExc_RuntimeError, "_start_event_log(): already recording");
        return NULL;
    }
    framehook_events_api *api = events_api();
    if (api == NULL) {
        return NULL;
    }
    event_log = PyList_New(0);
    if (event_log == NULL) {
        return NULL;
    }
    if (api->add_listener(log_event, event_log) < 0) {
        Py_CLEAR(event_log);
        return NULL;
    }
    Py_RETURN_NONE;
}

static PyObject *stop_event_log(PyObject *self, PyObject *unused) {
    if (event_log == NULL) {
        PyErr_SetString(PyExc_RuntimeError, "_stop_event_log(): not recording");
        return NULL;
    }
    framehook_events_api *api = events_api();
    if (api == NULL || api->remove_listener(log_event, event_log) < 0) {
        return NULL;
    }
    PyObject *log = event_log;
    event_log = NULL;
    return log;
}

static PyMethodDef methods[] = {
    {"set_eval_frame", set_eval_frame, METH_O,
     "set_eval_frame(callback)\n--\n\nSet this thread's callback (None: off, False: run-only, or a callable); "
     "return the previous one."},
    {"get_eval_frame", get_eval_frame, METH_NOARGS, "Return this thread's callback."},
    {"call_with", (PyCFunction)(void (*)(void))call_with, METH_FASTCALL | METH_KEYWORDS,
     "call_with(callback, fn, /, *args, **kwargs)\n--\n\nCall fn with this thread's callback set to callback; "
     "restore the previous callback afterwards, also when fn raises."},
    {"reset_code", reset_code, METH_O, "reset_code(code)\n--\n\nDrop the code's cache entries, frame state and skip mark."},
    {"skip_code", skip_code, METH_O, "skip_code(code)\n--\n\nNever intercept this code object again."},
    {"is_skipped", is_skipped, METH_O, "is_skipped(code)\n--\n\nWhether the code is marked to run unmodified."},
    {"cache_entries", cache_entries, METH_O,
     "cache_entries(code)\n--\n\nThe code's cache entries, most recently hit first."},
    {"frame_state", frame_state, METH_O, "frame_state(code)\n--\n\nThe frame_state dict of the code, or None."},
    {"set_guard_error_hook", set_guard_error_hook, METH_O,
     "set_guard_error_hook(fn)\n--\n\nCall fn(check_fn, code, f_locals, index, is_last) when a guard raises; "
     "return the previous hook."},
    {"set_trace_callbacks", set_trace_callbacks, METH_O,
     "set_trace_callbacks(enabled)\n--\n\nLet trace and profile functions see callbacks and guards; "
     "return the previous setting."},
    {"eval_frame_installed", eval_frame_installed, METH_NOARGS,
     "Whether framehook's eval function is the interpreter's current one."},
    {"_marks_stats", marks_stats, METH_NOARGS, "Function-mark counters (3.15), or None."},
    {"_is_marked", is_marked, METH_O, "Whether the function's calls arm the hook (3.15)."},
    {"_shadow_stats", shadow_stats, METH_NOARGS, "How many replacements ran in a frame and as a call."},
    {"_start_event_log", start_event_log, METH_NOARGS, "Record runtime events (testing aid)."},
    {"_stop_event_log", stop_event_log, METH_NOARGS, "Stop recording; return [(event, code), ...]."},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef moduledef = {
    PyModuleDef_HEAD_INIT, "framehook.runtime._C", "framehook's PEP 523 frame-evaluation hook.", -1, methods,
};

PyMODINIT_FUNC PyInit__C(void) {
    PyObject *m = PyModule_Create(&moduledef);
    if (m == NULL) {
        return NULL;
    }
    if (fh_extra_init() < 0 || fh_hook_init() < 0 || fh_types_init(m) < 0) {
        Py_DECREF(m);
        return NULL;
    }
    PyObject *capsule = fh_events_capsule();
    if (capsule == NULL || PyModule_AddObject(m, "_events_api", capsule) < 0) {
        Py_XDECREF(capsule);
        Py_DECREF(m);
        return NULL;
    }
    if (PyModule_AddIntConstant(m, "EV_LOOKUP_BEGIN", FRAMEHOOK_EV_LOOKUP_BEGIN) < 0 ||
        PyModule_AddIntConstant(m, "EV_LOOKUP_END", FRAMEHOOK_EV_LOOKUP_END) < 0 ||
        PyModule_AddIntConstant(m, "EV_REGION_BEGIN", FRAMEHOOK_EV_REGION_BEGIN) < 0 ||
        PyModule_AddIntConstant(m, "EV_REGION_END", FRAMEHOOK_EV_REGION_END) < 0) {
        Py_DECREF(m);
        return NULL;
    }
    return m;
}
