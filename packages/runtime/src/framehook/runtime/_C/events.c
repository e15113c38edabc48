/* The C event interface: other extensions register listeners for cache-lookup and
 * compiled-region events. With no listener the hook pays one branch per event. */
#include "runtime.h"

#define MAX_LISTENERS 8

typedef struct {
    framehook_listener fn;
    void *userdata;
} listener;

static listener listeners[MAX_LISTENERS];
int fh_listener_count;

void fh_emit(int event, PyObject *code) {
    for (int i = 0; i < fh_listener_count; i++) {
        listeners[i].fn(listeners[i].userdata, event, code);
    }
}

static int add_listener(framehook_listener fn, void *userdata) {
    if (fn == NULL) {
        PyErr_SetString(PyExc_ValueError, "framehook events: listener function is NULL");
        return -1;
    }
    for (int i = 0; i < fh_listener_count; i++) {
        if (listeners[i].fn == fn && listeners[i].userdata == userdata) {
            PyErr_SetString(PyExc_ValueError, "framehook events: listener is already registered");
            return -1;
        }
    }
    if (fh_listener_count == MAX_LISTENERS) {
        PyErr_Format(PyExc_RuntimeError, "framehook events: at most %d listeners can be registered", MAX_LISTENERS);
        return -1;
    }
    listeners[fh_listener_count].fn = fn;
    listeners[fh_listener_count].userdata = userdata;
    fh_listener_count++;
    return 0;
}

static int remove_listener(framehook_listener fn, void *userdata) {
    for (int i = 0; i < fh_listener_count; i++) {
        if (listeners[i].fn == fn && listeners[i].userdata == userdata) {
            for (int j = i + 1; j < fh_listener_count; j++) {
                listeners[j - 1] = listeners[j];
            }
            fh_listener_count--;
            return 0;
        }
    }
    PyErr_SetString(PyExc_ValueError, "framehook events: listener is not registered");
    return -1;
}

static framehook_events_api api = {FRAMEHOOK_EVENTS_ABI, add_listener, remove_listener};

PyObject *fh_events_capsule(void) {
    return PyCapsule_New(&api, FRAMEHOOK_EVENTS_CAPSULE, NULL);
}
