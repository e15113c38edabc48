/* framehook-runtime's events (its capsule, when it is installed): cache lookups and
 * compiled regions, recorded on the thread they happen on. */
#include "profiler.h"

void fh_on_runtime_event(void *userdata, int event, PyObject *code) {
    if (event < FH_RUNTIME_LOOKUP_BEGIN || event > FH_RUNTIME_REGION_END || code == NULL) {
        return;
    }
    CtxObject *ctx = ctx_of_current_thread();
    if (ctx == NULL || (void *)ctx->tracer != userdata) {
        return;
    }
    uint64_t t = fh_ticks();
    fh_slot *slot = fh_intern_object(ctx, code, FH_SITE_CODE);
    if (slot == NULL) {
        fh_ctx_break(ctx);
        return;
    }
    ctx_push(ctx, FH_EV_RUNTIME + (uint32_t)event, slot->key1 - 1, t);
}

/* The runtime's event table, or NULL when framehook-runtime is absent or incompatible
 * (no exception is left set: the profiler simply records no runtime events). */
const fh_runtime_events_api *fh_runtime_api(void) {
    const fh_runtime_events_api *api =
        (const fh_runtime_events_api *)PyCapsule_Import(FH_RUNTIME_CAPSULE, 0);
    if (api == NULL) {
        PyErr_Clear();
        return NULL;
    }
    if (api->abi_version != FH_RUNTIME_EVENTS_ABI) {
        return NULL;
    }
    return api;
}
