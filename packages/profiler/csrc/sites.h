/* Per-thread interning of call sites into small integer keys.
 *
 * The hot path hashes two pointers (what was called, and the code that called it) into
 * an open-addressing table and gets back a key; only a miss builds anything. Each site
 * owns references to the objects its pointers came from, so an address can never be
 * reused by another object while the profile data is alive. */
#ifndef FRAMEHOOK_PROFILER_SITES_H
#define FRAMEHOOK_PROFILER_SITES_H

#include <Python.h>
#include <stdint.h>

#pragma GCC visibility push(hidden) /* internal to the extension: see profiler.h */

enum {
    FH_SITE_PY = 1,       /* a: code object, b: caller's code object or NULL */
    FH_SITE_C = 2,        /* a: PyMethodDef* (or callable type), b: caller's code */
    FH_SITE_INSTANCE = 3, /* a: the tagged instance */
    FH_SITE_CODE = 4,     /* a: code object of a runtime event */
    FH_SITE_NAME = 5,     /* a: annotation name (str) */
    FH_SITE_TASK = 6      /* a: an asyncio task's name, or "await" (str) */
};

#define FH_FLAG_TAGGED 1u /* a Python site whose code is registered with tag_calls */
#define FH_FLAG_SPAWN 2u  /* a C site of a function that starts a thread (_thread) */
#define FH_FLAG_HIDDEN 4u /* a Python site of the profiler's own code: left out of outputs */
#define FH_FLAG_MUTED 8u  /* a Python site whose calls are left out with all they call */

#define FH_NO_FID UINT32_MAX

typedef struct {
    const void *a;
    const void *b;
    uint32_t key1; /* key + 1; 0 marks an empty slot */
    uint16_t kind;
    uint16_t flags;
} fh_slot;

typedef struct {
    PyObject *a;    /* owned: keeps the pointer identity of the site valid */
    PyObject *b;    /* owned or NULL */
    PyObject *info; /* owned or NULL: names computed once, at intern time */
    uint32_t kind;
    uint32_t flags;
    /* The function called, numbered per thread (the replay aggregates by it): many sites
     * (one per caller) share one. fid2 is a runtime code site's compiled-region function
     * (fid its cache-lookup one). In a table of functions rather than sites, fid holds the
     * key of the first site of the function instead. */
    uint32_t fid;
    uint32_t fid2;
    /* The same for the function's pstats label (kid2: the compiled region's), by which
     * pstats merges functions and counts their recursion. In a table of functions, fid2
     * holds the function's kid. */
    uint32_t kid;
    uint32_t kid2;
} fh_site;

typedef struct {
    fh_slot *slots;
    size_t mask;
    size_t used;
    fh_site *sites;
    size_t nsites;
    size_t cap;
} fh_sites;

#define FH_SITES_INITIAL 256

static inline size_t fh_site_hash(const void *a, const void *b, uint32_t kind) {
    uint64_t h = (uint64_t)(uintptr_t)a * 0x9E3779B97F4A7C15ull;
    h ^= ((uint64_t)(uintptr_t)b + kind) * 0xC2B2AE3D27D4EB4Full;
    return (size_t)(h ^ (h >> 31));
}

static inline fh_slot *fh_sites_find(fh_sites *t, const void *a, const void *b, uint32_t kind) {
    size_t i = fh_site_hash(a, b, kind) & t->mask;
    for (;;) {
        fh_slot *s = &t->slots[i];
        if (s->key1 == 0) {
            return NULL;
        }
        if (s->a == a && s->b == b && s->kind == kind) {
            return s;
        }
        i = (i + 1) & t->mask;
    }
}

int fh_sites_init(fh_sites *t); /* 0, or -1 with MemoryError */
/* Adds a site that fh_sites_find did not find. a_obj, b_obj and info are borrowed; the
 * site takes its own references. Returns the slot, or NULL with an exception set. */
fh_slot *fh_sites_add(fh_sites *t, const void *a, const void *b, uint32_t kind, uint32_t flags,
                      PyObject *a_obj, PyObject *b_obj, PyObject *info);
int fh_sites_traverse(fh_sites *t, visitproc visit, void *arg);
void fh_sites_clear(fh_sites *t); /* drops every site; the table stays usable */
void fh_sites_free(fh_sites *t);
size_t fh_sites_memory(const fh_sites *t);

#pragma GCC visibility pop

#endif
