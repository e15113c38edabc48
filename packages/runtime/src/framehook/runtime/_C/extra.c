/* Per-code-object state, kept in the code object's extra slot so that it lives
 * exactly as long as the code: freed by CPython through free_extra. */
#include "runtime.h"

Py_ssize_t fh_extra_index = -1;

Py_ssize_t fh_inits_with_entries;

static void free_entries(fh_extra *ex) {
    if (ex->init_counted) {
        ex->init_counted = 0;
        fh_inits_with_entries--; /* the hook notices at its next call (hook.c) */
    }
    fh_entry *e = ex->head;
    ex->head = NULL;
    ex->epoch++;
    while (e != NULL) {
        fh_entry *next = e->next;
        Py_DECREF(e->code);
        Py_DECREF(e->check_fn);
        PyMem_Free(e);
        e = next;
    }
}

static void free_extra(void *p) {
    fh_extra *ex = (fh_extra *)p;
    if (ex == NULL) {
        return;
    }
    free_entries(ex);
    Py_CLEAR(ex->frame_state);
    PyMem_Free(ex);
}

int fh_extra_init(void) {
    fh_extra_index = fh_request_extra_index(free_extra);
    if (fh_extra_index < 0) {
        PyErr_SetString(PyExc_RuntimeError, "framehook: no code extra slot is available");
        return -1;
    }
    return 0;
}

fh_extra *fh_extra_ensure(PyCodeObject *co) {
    fh_extra *ex = fh_extra_get(co);
    if (ex != NULL) {
        return ex;
    }
    ex = (fh_extra *)PyMem_Calloc(1, sizeof(fh_extra));
    if (ex == NULL) {
        PyErr_NoMemory();
        return NULL;
    }
    if (fh_code_set_extra((PyObject *)co, fh_extra_index, ex) < 0) {
        PyMem_Free(ex);
        return NULL;
    }
    return ex;
}

int fh_extra_reset(PyCodeObject *co) {
    fh_extra *ex = fh_extra_get(co);
    if (ex != NULL) {
        /* Clear in place: the slot keeps its (now empty) state, which avoids relying
         * on whether this CPython frees a replaced extra value. */
        free_entries(ex);
        Py_CLEAR(ex->frame_state);
        ex->skip = 0;
    }
    return 0;
}

int fh_extra_add_entry(fh_extra *ex, PyObject *code, PyObject *check_fn) {
    fh_entry *e = (fh_entry *)PyMem_Malloc(sizeof(fh_entry));
    if (e == NULL) {
        PyErr_NoMemory();
        return -1;
    }
    e->code = Py_NewRef(code);
    e->check_fn = Py_NewRef(check_fn);
    e->hits = 0;
    e->next = ex->head;
    ex->head = e;
    ex->epoch++;
    return 0;
}

void fh_extra_move_to_front(fh_extra *ex, fh_entry *prev, fh_entry *entry) {
    if (prev == NULL) {
        return;
    }
    prev->next = entry->next;
    entry->next = ex->head;
    ex->head = entry;
    ex->epoch++;
}

PyObject *fh_extra_frame_state(fh_extra *ex) {
    if (ex->frame_state == NULL) {
        ex->frame_state = PyDict_New();
    }
    return ex->frame_state;
}
