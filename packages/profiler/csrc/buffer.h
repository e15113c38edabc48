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

static fh_block *fh_pool = NULL;
static size_t fh_pool_size = 0;

static fh_block *fh_block_take(void) {
    fh_block *blk = fh_pool;
    if (blk != NULL) {
        fh_pool = blk->next;
        fh_pool_size--;
        return blk;
    }
    return (fh_block *)PyMem_RawMalloc(sizeof(fh_block));
}

static void fh_block_give(fh_block *blk) {
    if (fh_pool_size < FH_POOL_MAX) {
        blk->next = fh_pool;
        fh_pool = blk;
        fh_pool_size++;
    } else {
        PyMem_RawFree(blk);
    }
}

/* Fills the pool up to FH_POOL_WARM blocks, writing every page (best effort). */
static void fh_pool_warm(void) {
    while (fh_pool_size < FH_POOL_WARM) {
        fh_block *blk = (fh_block *)PyMem_RawMalloc(sizeof(fh_block));
        if (blk == NULL) {
            return;
        }
        memset(blk, 0, sizeof(fh_block));
        fh_block_give(blk);
    }
}

/* Returns the new slot or NULL when memory ran out (no exception is set: the caller is
 * the profile function, which must not raise). */
static fh_event *fh_buffer_grow(fh_buffer *b) {
    fh_block *blk = fh_block_take();
    if (blk == NULL) {
        return NULL;
    }
    blk->next = NULL;
    if (b->tail != NULL) {
        b->tail->next = blk;
    } else {
        b->head = blk;
    }
    b->tail = blk;
    b->nblocks++;
    b->cur = blk->ev + 1;
    b->end = blk->ev + FH_BLOCK_EVENTS;
    return blk->ev;
}

/* The ring's step: the head block (already read) becomes the empty tail; returns its first
 * slot. The buffer must hold at least one block. */
static fh_event *fh_buffer_rotate(fh_buffer *b) {
    fh_block *blk = b->head;
    if (blk != b->tail) {
        b->head = blk->next;
        blk->next = NULL;
        b->tail->next = blk;
        b->tail = blk;
    }
    b->cur = blk->ev + 1;
    b->end = blk->ev + FH_BLOCK_EVENTS;
    return blk->ev;
}

/* Drops the head block (given back to the pool); the buffer keeps at least its tail. */
static void fh_buffer_drop_head(fh_buffer *b) {
    fh_block *blk = b->head;
    if (blk == NULL || blk == b->tail) {
        return;
    }
    b->head = blk->next;
    b->nblocks--;
    fh_block_give(blk);
}

static inline size_t fh_block_used(const fh_buffer *b, const fh_block *blk) {
    return blk == b->tail ? (size_t)(b->cur - blk->ev) : FH_BLOCK_EVENTS;
}

static inline size_t fh_buffer_count(const fh_buffer *b) {
    if (b->tail == NULL) {
        return 0;
    }
    return (b->nblocks - 1) * FH_BLOCK_EVENTS + fh_block_used(b, b->tail);
}

static void fh_buffer_free(fh_buffer *b) {
    fh_block *blk = b->head;
    while (blk != NULL) {
        fh_block *next = blk->next;
        fh_block_give(blk);
        blk = next;
    }
    fh_buffer_init(b);
}

#endif
