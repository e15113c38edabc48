/* The site tables (sites.h): growing them, adding a site, and releasing what they own. */
#include "profiler.h"

int fh_sites_init(fh_sites *t) {
    t->slots = (fh_slot *)PyMem_Calloc(FH_SITES_INITIAL, sizeof(fh_slot));
    t->sites = (fh_site *)PyMem_Malloc(FH_SITES_INITIAL / 2 * sizeof(fh_site));
    if (t->slots == NULL || t->sites == NULL) {
        PyMem_Free(t->slots);
        PyMem_Free(t->sites);
        t->slots = NULL;
        t->sites = NULL;
        PyErr_NoMemory();
        return -1;
    }
    t->mask = FH_SITES_INITIAL - 1;
    t->used = 0;
    t->nsites = 0;
    t->cap = FH_SITES_INITIAL / 2;
    return 0;
}

static void fh_slot_place(fh_slot *slots, size_t mask, const fh_slot *src) {
    size_t i = fh_site_hash(src->a, src->b, src->kind) & mask;
    while (slots[i].key1 != 0) {
        i = (i + 1) & mask;
    }
    slots[i] = *src;
}

/* Doubles the slot table once it is half full, so probes stay short. */
static int fh_sites_rehash(fh_sites *t) {
    size_t ncap = (t->mask + 1) * 2;
    fh_slot *fresh = (fh_slot *)PyMem_Calloc(ncap, sizeof(fh_slot));
    if (fresh == NULL) {
        PyErr_NoMemory();
        return -1;
    }
    for (size_t i = 0; i <= t->mask; i++) {
        if (t->slots[i].key1 != 0) {
            fh_slot_place(fresh, ncap - 1, &t->slots[i]);
        }
    }
    PyMem_Free(t->slots);
    t->slots = fresh;
    t->mask = ncap - 1;
    return 0;
}

/* Adds a site that fh_sites_find did not find. a_obj, b_obj and info are borrowed; the
 * site takes its own references. Returns the slot, or NULL with MemoryError set. */
fh_slot *fh_sites_add(fh_sites *t, const void *a, const void *b, uint32_t kind,
                      uint32_t flags, PyObject *a_obj, PyObject *b_obj, PyObject *info) {
    if ((t->used + 1) * 2 > t->mask + 1 && fh_sites_rehash(t) < 0) {
        return NULL;
    }
    if (t->nsites == t->cap) {
        size_t ncap = t->cap * 2;
        fh_site *grown = (fh_site *)PyMem_Realloc(t->sites, ncap * sizeof(fh_site));
        if (grown == NULL) {
            PyErr_NoMemory();
            return NULL;
        }
        t->sites = grown;
        t->cap = ncap;
    }
    if (t->nsites >= UINT32_MAX - 1) {
        PyErr_SetString(PyExc_OverflowError, "too many distinct call sites on one thread");
        return NULL;
    }
    fh_site *site = &t->sites[t->nsites];
    site->a = a_obj;
    site->b = b_obj;
    site->info = info;
    Py_XINCREF(a_obj);
    Py_XINCREF(b_obj);
    Py_XINCREF(info);
    site->kind = kind;
    site->flags = flags;
    site->fid = FH_NO_FID;
    site->fid2 = FH_NO_FID;
    site->kid = FH_NO_FID;
    site->kid2 = FH_NO_FID;
    fh_slot slot = {a, b, (uint32_t)(t->nsites + 1), (uint16_t)kind, (uint16_t)flags};
    t->nsites++;
    t->used++;
    size_t i = fh_site_hash(a, b, kind) & t->mask;
    while (t->slots[i].key1 != 0) {
        i = (i + 1) & t->mask;
    }
    t->slots[i] = slot;
    return &t->slots[i];
}

int fh_sites_traverse(fh_sites *t, visitproc visit, void *arg) {
    for (size_t i = 0; i < t->nsites; i++) {
        Py_VISIT(t->sites[i].a);
        Py_VISIT(t->sites[i].b);
        Py_VISIT(t->sites[i].info);
    }
    return 0;
}

/* Drops every site and its references; the table stays usable (and empty). */
void fh_sites_clear(fh_sites *t) {
    size_t n = t->nsites;
    t->nsites = 0;
    t->used = 0;
    if (t->slots != NULL) {
        memset(t->slots, 0, (t->mask + 1) * sizeof(fh_slot));
    }
    for (size_t i = 0; i < n; i++) {
        Py_CLEAR(t->sites[i].a);
        Py_CLEAR(t->sites[i].b);
        Py_CLEAR(t->sites[i].info);
    }
}

void fh_sites_free(fh_sites *t) {
    fh_sites_clear(t);
    PyMem_Free(t->slots);
    PyMem_Free(t->sites);
    t->slots = NULL;
    t->sites = NULL;
    t->cap = 0;
    t->mask = 0;
}

size_t fh_sites_memory(const fh_sites *t) {
    return t->slots == NULL ? 0 : (t->mask + 1) * sizeof(fh_slot) + t->cap * sizeof(fh_site);
}
