/* Interning: the slow paths of the hot path, each run once per distinct site and thread.
 * A site's key comes with its function's number (fid) and pstats label's number (kid),
 * by which the aggregates and the outputs merge what the profile shows as one. */
#include "profiler.h"

int fh_code_is_tagged(TracerObject *tracer, PyCodeObject *code) {
    if (tracer == NULL || tracer->tagged == NULL) {
        return 0;
    }
    Py_ssize_t n = PyTuple_GET_SIZE(tracer->tagged);
    for (Py_ssize_t i = 0; i < n; i++) {
        if (PyTuple_GET_ITEM(tracer->tagged, i) == (PyObject *)code) {
            return 1;
        }
    }
    return 0;
}

static int code_in(PyObject *codes, PyCodeObject *code) {
    for (Py_ssize_t i = 0; codes != NULL && i < PyTuple_GET_SIZE(codes); i++) {
        if (PyTuple_GET_ITEM(codes, i) == (PyObject *)code) {
            return 1;
        }
    }
    return 0;
}

/* What two functions share when the outputs merge them, as a new tuple (or NULL with an
 * exception set). pstats merges by (file, first line, name) as cProfile labels code; the
 * summary by the function itself: its code object, or the description of a C function,
 * or an annotation's name. `by_key` picks the first; NULL is returned with no exception
 * when the function's pointer identity is its only identity (its code object). */
static PyObject *function_value(uint32_t cls, PyObject *obj, PyObject *info, int by_key) {
    static const char *tags[FH_N_CLS] = {"py", "c", "annotation", "lookup", "region", "task"};
    if (cls == FH_CLS_C) {
        return Py_BuildValue("(sO)", tags[cls], info != NULL ? info : Py_None);
    }
    if (cls == FH_CLS_ANNOT || cls == FH_CLS_TASK) {
        return Py_BuildValue("(sO)", tags[cls], obj);
    }
    if (!by_key) {
        return NULL;
    }
    PyObject *file = PyObject_GetAttrString(obj, "co_filename");
    PyObject *line = file != NULL ? PyObject_GetAttrString(obj, "co_firstlineno") : NULL;
    PyObject *name = line != NULL ? PyObject_GetAttrString(obj, "co_name") : NULL;
    PyObject *value = name != NULL ? Py_BuildValue("(sOOO)", tags[cls], file, line, name) : NULL;
    Py_XDECREF(file);
    Py_XDECREF(line);
    Py_XDECREF(name);
    return value;
}

/* The number `value` has in `index` (a dict made on first use), given `next` if it has
 * none yet (*added set). FH_NO_FID with an exception set. */
static uint32_t index_of(PyObject **index, PyObject *value, uint32_t next, int *added) {
    *added = 0;
    if (*index == NULL && (*index = PyDict_New()) == NULL) {
        return FH_NO_FID;
    }
    PyObject *found = PyDict_GetItemWithError(*index, value);
    if (found != NULL) {
        return (uint32_t)PyLong_AsUnsignedLong(found);
    }
    if (PyErr_Occurred()) {
        return FH_NO_FID;
    }
    PyObject *number = PyLong_FromUnsignedLong(next);
    if (number == NULL || PyDict_SetItem(*index, value, number) < 0) {
        Py_XDECREF(number);
        return FH_NO_FID;
    }
    Py_DECREF(number);
    *added = 1;
    return next;
}

/* The pstats number of function `fid` (made with it). FH_NO_FID with an exception set. */
static uint32_t intern_kid(CtxObject *ctx, uint32_t cls, PyObject *obj, PyObject *info,
                           uint32_t fid) {
    PyObject *value = function_value(cls, obj, info, 1);
    if (value == NULL) {
        return FH_NO_FID;
    }
    int added;
    uint32_t kid = index_of(&ctx->kid_index, value, (uint32_t)ctx->nkids, &added);
    Py_DECREF(value);
    if (kid == FH_NO_FID || !added) {
        return kid;
    }
    if (ctx->nkids == ctx->kid_cap) {
        size_t ncap = ctx->kid_cap ? ctx->kid_cap * 2 : 64;
        uint32_t *grown = (uint32_t *)PyMem_Realloc(ctx->kid_fid, ncap * sizeof(uint32_t));
        if (grown == NULL) {
            PyErr_NoMemory();
            return FH_NO_FID;
        }
        ctx->kid_fid = grown;
        ctx->kid_cap = ncap;
    }
    ctx->kid_fid[ctx->nkids++] = fid;
    return kid;
}

/* The number of the function (class `cls`; `a` and `b` its pointers, `obj` its object,
 * `info` a C function's description) on this thread, made at its first site (`site_key`)
 * with its pstats number (in the function's fid2). FH_NO_FID with an exception set. */
static uint32_t intern_fid(CtxObject *ctx, uint32_t cls, const void *a, const void *b,
                           PyObject *obj, PyObject *info, uint32_t site_key) {
    uint32_t kind = cls + 1;
    fh_slot *slot = fh_sites_find(&ctx->funcs, a, b, kind);
    if (slot != NULL) {
        return slot->key1 - 1;
    }
    /* other pointers, the same function (a C function bound elsewhere, a name) */
    PyObject *value = function_value(cls, obj, info, 0);
    if (value == NULL && PyErr_Occurred()) {
        return FH_NO_FID;
    }
    int added = 1;
    uint32_t fid = (uint32_t)ctx->funcs.nsites;
    if (value != NULL) {
        fid = index_of(&ctx->fid_index, value, fid, &added);
        Py_DECREF(value);
        if (fid == FH_NO_FID || !added) {
            return fid;
        }
    }
    uint32_t kid = intern_kid(ctx, cls, obj, info, fid);
    if (kid == FH_NO_FID) {
        return FH_NO_FID;
    }
    slot = fh_sites_add(&ctx->funcs, a, b, kind, 0, obj, NULL, NULL);
    if (slot == NULL) {
        return FH_NO_FID;
    }
    ctx->funcs.sites[slot->key1 - 1].fid = site_key;
    ctx->funcs.sites[slot->key1 - 1].fid2 = kid;
    return slot->key1 - 1;
}

/* Gives the site just added (`slot`) its function; NULL (exception set) on failure. */
static fh_slot *site_function(CtxObject *ctx, fh_slot *slot, uint32_t cls, const void *a,
                              const void *b, PyObject *obj) {
    if (slot == NULL) {
        return NULL;
    }
    uint32_t key = slot->key1 - 1;
    fh_site *site = &ctx->sites.sites[key];
    uint32_t fid = intern_fid(ctx, cls, a, b, obj, site->info, key);
    if (fid == FH_NO_FID) {
        return NULL;
    }
    site = &ctx->sites.sites[key]; /* (interning ran Python code: nothing moved, but) */
    site->fid = fid;
    site->kid = ctx->funcs.sites[fid].fid2;
    if (cls == FH_CLS_LOOKUP) {
        fid = intern_fid(ctx, FH_CLS_REGION, a, b, obj, NULL, key);
        if (fid == FH_NO_FID) {
            return NULL;
        }
        site = &ctx->sites.sites[key];
        site->fid2 = fid;
        site->kid2 = ctx->funcs.sites[fid].fid2;
    }
    return slot;
}

static uint32_t py_site_flags(TracerObject *tracer, PyCodeObject *code) {
    if (tracer == NULL) {
        return 0;
    }
    return (fh_code_is_tagged(tracer, code) ? FH_FLAG_TAGGED : 0) |
           (code_in(tracer->hidden, code) ? FH_FLAG_HIDDEN : 0) |
           (code_in(tracer->muted, code) ? FH_FLAG_MUTED : 0);
}

fh_slot *fh_intern_py(CtxObject *ctx, PyCodeObject *code, PyCodeObject *caller) {
    fh_slot *slot = fh_sites_find(&ctx->sites, code, caller, FH_SITE_PY);
    if (slot != NULL) {
        return slot;
    }
    slot = fh_sites_add(&ctx->sites, code, caller, FH_SITE_PY, py_site_flags(ctx->tracer, code),
                        (PyObject *)code, (PyObject *)caller, NULL);
    return site_function(ctx, slot, FH_CLS_PY, code, NULL, (PyObject *)code);
}

/* Names a C callable once: (owner name or None, function name, how it is bound), where
 * "how" is 0 for a function of a module, 1 for a method of an instance's type and 2 for a
 * method bound to a type. The owner object is kept so that the PyMethodDef stays alive. */
fh_slot *fh_intern_c_slow(CtxObject *ctx, PyObject *fn, const void *ident,
                          PyCodeObject *caller) {
    PyObject *owner;
    PyObject *info;
    if (PyCFunction_Check(fn)) {
        PyCFunctionObject *f = (PyCFunctionObject *)fn;
        PyObject *self = f->m_self;
        const char *name = f->m_ml->ml_name;
        if (self == NULL || PyModule_Check(self)) {
            owner = self != NULL ? self : Py_None;
            PyObject *module = f->m_module;
            if (module == NULL || !PyUnicode_Check(module)) {
                module = Py_None;
            }
            info = Py_BuildValue("(Osi)", module, name, 0);
        } else if (PyType_Check(self)) {
            owner = self;
            info = Py_BuildValue("(ssi)", ((PyTypeObject *)self)->tp_name, name, 2);
        } else {
            owner = (PyObject *)Py_TYPE(self);
            info = Py_BuildValue("(ssi)", Py_TYPE(self)->tp_name, name, 1);
        }
    } else {
        owner = (PyObject *)Py_TYPE(fn);
        info = Py_BuildValue("(ssi)", Py_TYPE(fn)->tp_name, "__call__", 1);
    }
    if (info == NULL) {
        return NULL;
    }
    fh_slot *slot = fh_sites_add(&ctx->sites, ident, caller, FH_SITE_C,
                                 fh_is_spawn(fn) ? FH_FLAG_SPAWN : 0, owner,
                                 (PyObject *)caller, info);
    Py_DECREF(info);
    return site_function(ctx, slot, FH_CLS_C, ident, owner, owner);
}

/* A site keyed by one object (runtime code objects, annotation names). */
fh_slot *fh_intern_object(CtxObject *ctx, PyObject *obj, uint32_t kind) {
    fh_slot *slot = fh_sites_find(&ctx->sites, obj, NULL, kind);
    if (slot != NULL) {
        return slot;
    }
    slot = fh_sites_add(&ctx->sites, obj, NULL, kind, 0, obj, NULL, NULL);
    uint32_t cls = kind == FH_SITE_NAME   ? FH_CLS_ANNOT
                   : kind == FH_SITE_TASK ? FH_CLS_TASK
                                          : FH_CLS_LOOKUP;
    return site_function(ctx, slot, cls, obj, NULL, obj);
}

/* Records which instance a tagged call went through. The description (class name, array
 * attributes) is taken the first time the instance is seen on this thread; describe may
 * run Python code, which the interpreter does not profile while we are in a callback. */
void fh_record_tag(CtxObject *ctx, PyFrameObject *frame, uint64_t t) {
    if (frame == NULL) {
        return;
    }
    PyObject *exc_type, *exc_value, *exc_tb;
    PyErr_Fetch(&exc_type, &exc_value, &exc_tb);
    PyObject *self = fh_first_argument(frame);
    if (self == NULL) {
        PyErr_Clear();
        PyErr_Restore(exc_type, exc_value, exc_tb);
        return;
    }
    fh_slot *slot = fh_sites_find(&ctx->sites, self, NULL, FH_SITE_INSTANCE);
    if (slot == NULL) {
        PyObject *info = NULL;
        TracerObject *tracer = ctx->tracer;
        if (tracer != NULL && tracer->describe != NULL) {
            info = PyObject_CallOneArg(tracer->describe, self);
            if (info == NULL) {
                PyErr_Clear();
            }
        }
        slot = fh_sites_add(&ctx->sites, self, NULL, FH_SITE_INSTANCE, 0, self, NULL, info);
        Py_XDECREF(info);
    }
    Py_DECREF(self);
    if (slot == NULL) {
        fh_ctx_break(ctx);
    } else {
        ctx_push(ctx, FH_EV_TAG, slot->key1 - 1, t);
    }
    PyErr_Restore(exc_type, exc_value, exc_tb);
}
