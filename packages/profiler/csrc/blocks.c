/* Per-thread event storage (buffer.h): the chain of blocks, and the pool of blocks kept
 * from one recording for the next. */
#include "profiler.h"

fh_block *fh_pool = NULL;
size_t fh_pool_size = 0;

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
void fh_pool_warm(void) {
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
fh_event *fh_buffer_grow(fh_buffer *b) {
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
fh_event *fh_buffer_rotate(fh_buffer *b) {
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
void fh_buffer_drop_head(fh_buffer *b) {
    fh_block *blk = b->head;
    if (blk == NULL || blk == b->tail) {
        return;
    }
    b->head = blk->next;
    b->nblocks--;
    fh_block_give(blk);
}

void fh_buffer_free(fh_buffer *b) {
    fh_block *blk = b->head;
    while (blk != NULL) {
        fh_block *next = blk->next;
        fh_block_give(blk);
        blk = next;
    }
    fh_buffer_init(b);
}
