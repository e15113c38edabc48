/* Per-thread append-only event storage: a chain of fixed-size blocks.
 *
 * Appending is a compare and a store; nothing is ever moved, so a full block costs one
 * allocation and no copy (or, as a ring, the reuse of the oldest block: fh_buffer_rotate). Blocks come from the raw allocator because they are plain
 * memory that never holds object references. */
#ifndef FRAMEHOOK_PROFILER_BUFFER_H
#define FRAMEHOOK_PROFILER_BUFFER_H

#include <Python.h>
#include <stdint.h>
#include <string.h>

#pragma GCC visibility push(hidden) /* internal to the extension: see profiler.h */

/* One recorded event: 16 bytes. `key` indexes the thread's site table (0 when the kind
 * needs none); `t` is in raw clock ticks. */
typedef struct {
    uint64_t t;
    uint32_t key;
    uint32_t kind;
} fh_event;

#define FH_BLOCK_EVENTS 2048

typedef struct fh_block {
    struct fh_block *next;
    fh_event ev[FH_BLOCK_EVENTS];
} fh_block;

typedef struct {
    fh_block *head;
    fh_block *tail;
    fh_event *cur; /* next free slot in tail */
    fh_event *end; /* one past tail's last slot */
    size_t nblocks;
} fh_buffer;

static inline void fh_buffer_init(fh_buffer *b) {
    b->head = b->tail = NULL;
    b->cur = b->end = NULL;
    b->nblocks = 0;
}

/* Blocks of finished recordings are kept for the next one (up to FH_POOL_MAX): memory
 * the process has already touched costs no page faults while recording, which otherwise
 * are a visible part of the overhead. Only used with the GIL held. */
#define FH_POOL_MAX 2048 /* 64 MiB */
#define FH_POOL_WARM 64  /* blocks made ready (and touched) before recording starts */

extern fh_block *fh_pool;    /* (blocks.c: only its functions use the pool) */
extern size_t fh_pool_size;

void fh_pool_warm(void); /* fills the pool up to FH_POOL_WARM blocks, touched */
/* The slot after a full buffer's last one, in a new block; NULL when memory ran out (no
 * exception set). */
fh_event *fh_buffer_grow(fh_buffer *b);
fh_event *fh_buffer_rotate(fh_buffer *b); /* the ring's step (see blocks.c) */
void fh_buffer_drop_head(fh_buffer *b);
void fh_buffer_free(fh_buffer *b);        /* its blocks go back to the pool */

static inline size_t fh_block_used(const fh_buffer *b, const fh_block *blk) {
    return blk == b->tail ? (size_t)(b->cur - blk->ev) : FH_BLOCK_EVENTS;
}

static inline size_t fh_buffer_count(const fh_buffer *b) {
    if (b->tail == NULL) {
        return 0;
    }
    return (b->nblocks - 1) * FH_BLOCK_EVENTS + fh_block_used(b, b->tail);
}

#pragma GCC visibility pop

#endif
