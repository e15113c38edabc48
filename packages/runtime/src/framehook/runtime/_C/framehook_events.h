/* framehook-runtime's C event interface, ABI 1.
 *
 * Another extension (the profiler) obtains the table with
 *     PyCapsule_Import(FRAMEHOOK_EVENTS_CAPSULE, 0)
 * and registers listeners. Listeners run on the thread of the event with the GIL held;
 * `code` is borrowed: the intercepted code object for LOOKUP events, the replacement
 * code for REGION events. A listener must not raise or run Python code. */
#ifndef FRAMEHOOK_EVENTS_H
#define FRAMEHOOK_EVENTS_H

#define FRAMEHOOK_EVENTS_CAPSULE "framehook.runtime._C._events_api"
#define FRAMEHOOK_EVENTS_ABI 1

enum {
    FRAMEHOOK_EV_LOOKUP_BEGIN = 1,
    FRAMEHOOK_EV_LOOKUP_END = 2,
    FRAMEHOOK_EV_REGION_BEGIN = 3,
    FRAMEHOOK_EV_REGION_END = 4
};

typedef void (*framehook_listener)(void *userdata, int event, PyObject *code);

typedef struct {
    int abi_version;
    int (*add_listener)(framehook_listener fn, void *userdata);
    int (*remove_listener)(framehook_listener fn, void *userdata);
} framehook_events_api;

#endif
