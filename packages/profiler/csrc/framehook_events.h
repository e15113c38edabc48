/* The runtime's event interface, ABI 1, as specified in docs/runtime-api.md.
 *
 * Declared here rather than included from framehook-runtime: the profiler builds and
 * runs without the runtime installed, and this struct layout is the contract between
 * the two packages (a mismatch is caught by the abi_version check at import time). */
#ifndef FRAMEHOOK_PROFILER_EVENTS_ABI_H
#define FRAMEHOOK_PROFILER_EVENTS_ABI_H

#include <Python.h>

#define FH_RUNTIME_CAPSULE "framehook.runtime._C._events_api"
#define FH_RUNTIME_EVENTS_ABI 1

enum {
    FH_RUNTIME_LOOKUP_BEGIN = 1,
    FH_RUNTIME_LOOKUP_END = 2,
    FH_RUNTIME_REGION_BEGIN = 3,
    FH_RUNTIME_REGION_END = 4
};

typedef void (*fh_runtime_listener)(void *userdata, int event, PyObject *code);

typedef struct {
    int abi_version;
    int (*add_listener)(fh_runtime_listener fn, void *userdata);
    int (*remove_listener)(fh_runtime_listener fn, void *userdata);
} fh_runtime_events_api;

#endif
