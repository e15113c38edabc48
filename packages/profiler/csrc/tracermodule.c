/* framehook.profiler._tracer: the module's own functions, the one method table of every
 * type (fh_methods, by which the hot path tells the profiler's own calls), and module
 * init. */
#include "profiler.h"
#include "sigterm.h"

static PyObject *fh_get_clock_name(PyObject *module, PyObject *Py_UNUSED(ignored)) {
    return PyUnicode_FromString(FH_CLOCK_NAME);
}

static PyObject *fh_get_active(PyObject *module, PyObject *Py_UNUSED(ignored)) {
    PyObject *active = fh_active != NULL ? (PyObject *)fh_active : Py_None;
    Py_INCREF(active);
    return active;
}

static PyObject *fh_is_recording_thread(PyObject *module, PyObject *Py_UNUSED(ignored)) {
    return PyBool_FromLong(ctx_of_current_thread() != NULL);
}

static PyObject *fh_runtime_available(PyObject *module, PyObject *Py_UNUSED(ignored)) {
    return PyBool_FromLong(fh_runtime_api() != NULL);
}

static PyObject *fh_get_idle_calls(PyObject *module, PyObject *Py_UNUSED(ignored)) {
    return PyLong_FromSsize_t(fh_idle_calls);
}

static PyObject *fh_profile_function_installed(PyObject *module, PyObject *Py_UNUSED(ignored)) {
    return PyBool_FromLong(is_fh_profile(PyThreadState_Get()->c_profilefunc));
}

/* Every method of the module's types, in one array (see fh_is_internal). */
PyMethodDef fh_methods[FH_N_METHODS] = {
    /* 0: Tracer */
    {"start", (PyCFunction)fh_tracer_start, METH_NOARGS,
     "Start recording on every thread; False (recording nothing) if another tracer records."},
    {"stop", (PyCFunction)fh_tracer_stop, METH_NOARGS, "Stop recording on every thread."},
    {"thread_hook", (PyCFunction)(void (*)(void))fh_tracer_thread_hook, METH_FASTCALL,
     "threading.setprofile hook that moves a new thread onto the C profile function."},
    {"collect", (PyCFunction)fh_tracer_collect, METH_NOARGS,
     "The raw recording: clock anchors and, per thread, events (bytes) and sites."},
    {"aggregate", (PyCFunction)fh_tracer_aggregate, METH_NOARGS,
     "Per thread, the calls aggregated per function, caller/callee pair and call path."},
    {"write_chrome", (PyCFunction)fh_tracer_write_chrome, METH_VARARGS,
     "write_chrome(write, pid, threads, tag, progress=None): writes the Chrome trace "
     "events; progress(calls written) after each chunk."},
    {"write_gecko_samples", (PyCFunction)fh_tracer_write_gecko_samples, METH_VARARGS,
     "write_gecko_samples(write, index): writes one thread's Firefox Profiler samples; "
     "returns its stack table (prefixes, fids) and marked calls"},
    {"write_folded", (PyCFunction)fh_tracer_write_folded, METH_VARARGS,
     "write_folded(write, mode, threads, fragments, root_style): writes the call paths "
     "merged across threads, as collapsed stacks or the flame graph's JSON."},
    {"write_speedscope", (PyCFunction)fh_tracer_write_speedscope, METH_VARARGS,
     "write_speedscope(write, threads, progress=None): writes the speedscope profiles; "
     "progress(calls written) after each chunk."},
    {"retag", (PyCFunction)fh_tracer_retag, METH_O,
     "Replace the tagged code objects (takes effect at once, also while recording)."},
    {NULL, NULL, 0, NULL},
    /* 11: record_function */
    {"__enter__", (PyCFunction)fh_recfn_enter, METH_NOARGS, NULL},
    {"__exit__", (PyCFunction)(void (*)(void))fh_recfn_exit, METH_FASTCALL, NULL},
    {NULL, NULL, 0, NULL},
    /* 14: module */
    {"clock_name", fh_get_clock_name, METH_NOARGS, "Name of the recording clock."},
    {"active", fh_get_active, METH_NOARGS, "The tracer that is recording, or None."},
    {"is_recording_thread", fh_is_recording_thread, METH_NOARGS,
     "Whether the calling thread is being recorded."},
    {"runtime_available", fh_runtime_available, METH_NOARGS,
     "Whether framehook-runtime's event interface (ABI 1) can be imported."},
    {"profile_function_installed", fh_profile_function_installed, METH_NOARGS,
     "Whether the calling thread runs this module's profile function (recording or not)."},
    {"idle_calls", fh_get_idle_calls, METH_NOARGS,
     "How many times this module's profile function was called for a thread that records "
     "nothing (stopped or broken), in this process."},
    {"sigterm_guard", fh_sigterm_guard, METH_O, fh_sigterm_guard_doc},
    {"sigterm_seen", fh_sigterm_seen, METH_NOARGS, fh_sigterm_seen_doc},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef fh_module = {
    PyModuleDef_HEAD_INIT,
    .m_name = "framehook.profiler._tracer",
    .m_doc = "C recording core of framehook.profiler.",
    .m_size = -1, /* one recorder per process: the state is the global fh_active */
    .m_methods = FH_MODULE_METHODS,
};

static int add_int(PyObject *m, const char *name, long value) {
    return PyModule_AddIntConstant(m, name, value);
}

PyMODINIT_FUNC PyInit__tracer(void) {
    if (PyType_Ready(&fh_CtxType) < 0 || PyType_Ready(&fh_TracerType) < 0 ||
        PyType_Ready(&fh_RecordFunctionType) < 0 || PyType_Ready(&fh_AnnotatedType) < 0) {
        return NULL;
    }
    if (fh_find_spawn_functions() < 0) {
        return NULL;
    }
    if (fh_await_name == NULL && (fh_await_name = PyUnicode_InternFromString("await")) == NULL) {
        return NULL;
    }
    PyObject *m = PyModule_Create(&fh_module);
    if (m == NULL) {
        return NULL;
    }
    Py_INCREF(&fh_TracerType);
    if (PyModule_AddObject(m, "Tracer", (PyObject *)&fh_TracerType) < 0) {
        Py_DECREF(&fh_TracerType);
        goto error;
    }
    Py_INCREF(&fh_RecordFunctionType);
    if (PyModule_AddObject(m, "record_function", (PyObject *)&fh_RecordFunctionType) < 0) {
        Py_DECREF(&fh_RecordFunctionType);
        goto error;
    }
    if (add_int(m, "EV_PY_CALL", FH_EV_PY_CALL) < 0 ||
        add_int(m, "EV_PY_RETURN", FH_EV_PY_RETURN) < 0 ||
        add_int(m, "EV_PY_UNWIND", FH_EV_PY_UNWIND) < 0 ||
        add_int(m, "EV_C_CALL", FH_EV_C_CALL) < 0 ||
        add_int(m, "EV_C_RETURN", FH_EV_C_RETURN) < 0 ||
        add_int(m, "EV_C_RAISE", FH_EV_C_RAISE) < 0 ||
        add_int(m, "EV_START_FRAME", FH_EV_START_FRAME) < 0 ||
        add_int(m, "EV_TAG", FH_EV_TAG) < 0 ||
        add_int(m, "EV_ANNOT_BEGIN", FH_EV_ANNOT_BEGIN) < 0 ||
        add_int(m, "EV_ANNOT_END", FH_EV_ANNOT_END) < 0 ||
        add_int(m, "EV_TASK_BEGIN", FH_EV_TASK_BEGIN) < 0 ||
        add_int(m, "EV_TASK_END", FH_EV_TASK_END) < 0 ||
        add_int(m, "EV_RUNTIME", FH_EV_RUNTIME) < 0 ||
        add_int(m, "SITE_PY", FH_SITE_PY) < 0 || add_int(m, "SITE_C", FH_SITE_C) < 0 ||
        add_int(m, "SITE_INSTANCE", FH_SITE_INSTANCE) < 0 ||
        add_int(m, "SITE_CODE", FH_SITE_CODE) < 0 || add_int(m, "SITE_NAME", FH_SITE_NAME) < 0 ||
        add_int(m, "SITE_TASK", FH_SITE_TASK) < 0 || add_int(m, "CLS_TASK", FH_CLS_TASK) < 0 ||
        add_int(m, "FLAG_TAGGED", FH_FLAG_TAGGED) < 0 ||
        add_int(m, "FLAG_HIDDEN", FH_FLAG_HIDDEN) < 0 ||
        add_int(m, "FLAG_MUTED", FH_FLAG_MUTED) < 0 ||
        add_int(m, "CLS_PY", FH_CLS_PY) < 0 || add_int(m, "CLS_C", FH_CLS_C) < 0 ||
        add_int(m, "CLS_ANNOT", FH_CLS_ANNOT) < 0 ||
        add_int(m, "CLS_LOOKUP", FH_CLS_LOOKUP) < 0 ||
        add_int(m, "CLS_REGION", FH_CLS_REGION) < 0 ||
        add_int(m, "BLOCK_EVENTS", FH_BLOCK_EVENTS) < 0 ||
        add_int(m, "MAX_START_DEPTH", FH_MAX_START_DEPTH) < 0 ||
        add_int(m, "EVENT_SIZE", (long)sizeof(fh_event)) < 0 ||
        add_int(m, "HAVE_MONITORING", FH_HAVE_MONITORING) < 0) {
        goto error;
    }
    return m;

error:
    Py_DECREF(m);
    return NULL;
}
