/* Running aggregates of one thread's calls: per function, per pstats label, per
 * caller/callee pair (of labels) and per call path, fed by the replay (replay.c). A label
 * (file, line, name) may cover several functions (code objects made alike): pstats counts
 * recursion by label, the summary by function, hence both tables. Memory grows with the distinct functions, pairs
 * and paths, never with the number of calls, so a recording can be folded into them block
 * by block (the ring of max_events) and still give exact counts.
 *
 * Recursion is counted as cProfile counts it: a call is primitive ("cc") when no frame of
 * the same function is open below it, and only primitive calls add to the cumulative time,
 * so recursive frames are not counted twice; pairs likewise per (caller, callee). Times are
 * integer nanoseconds; the outputs convert once, at the end. */
#ifndef FRAMEHOOK_PROFILER_AGGREGATE_H
#define FRAMEHOOK_PROFILER_AGGREGATE_H

#include <Python.h>
#include <stdint.h>
#include <string.h>

#include "replay.h"

#pragma GCC visibility push(hidden) /* internal to the extension: see profiler.h */

/* uint64 key -> uint32 index, open addressing; keys are never removed. */
typedef struct {
    uint64_t *keys;
    uint32_t *vals; /* index + 1; 0 marks an empty slot */
    size_t mask;
    size_t used;
} fh_map;

typedef struct {
    uint64_t nc, cc;
    int64_t tt, ct;
    uint64_t active; /* open frames of this entry on the stack */
} fh_stat;

typedef struct {
    uint32_t caller, callee;
    fh_stat s;
} fh_pair;

typedef struct {
    uint32_t parent; /* path node index; 0 is the thread itself */
    uint32_t fid;
    uint64_t count;
    int64_t self_ns, total_ns;
} fh_path;

/* A growable array of fixed-size items. */
typedef struct {
    char *items;
    size_t n, cap, size;
} fh_vec;

/* The index of `key`; a miss stores `next` and sets *added. FH_NONE with MemoryError. */
uint32_t fh_map_get(fh_map *m, uint64_t key, uint32_t next, int *added);
void fh_map_free(fh_map *m);
/* Makes room for index i (zero-filled); -1 with MemoryError. */
int fh_vec_reserve(fh_vec *v, size_t i);
static inline void *fh_vec_at(const fh_vec *v, size_t i) { return v->items + i * v->size; }

typedef struct {
    fh_vec funcs; /* fh_stat by function id */
    fh_vec keys;  /* fh_stat by pstats label id */
    fh_vec pairs; /* fh_pair */
    fh_vec paths; /* fh_path; [0] is the thread's root */
    fh_map pair_index;
    fh_map path_index;
    fh_replay stack;
} fh_agg;

int fh_agg_init(fh_agg *a); /* 0, or -1 with MemoryError */
void fh_agg_free(fh_agg *a);
size_t fh_agg_memory(const fh_agg *a);
/* The sink of the replay that feeds the aggregates (its argument: the fh_agg). */
extern const fh_sink fh_agg_sink;
/* Folds events into the aggregates; 0 or -1 with an exception set. */
int fh_agg_fold(fh_agg *a, const fh_event *ev, size_t n, const fh_sites *sites,
                const fh_clockmap *clock);
/* The tables as Python lists (a new dict; see aggregate.c). */
PyObject *fh_agg_tables(const fh_agg *a);

#pragma GCC visibility pop

#endif
