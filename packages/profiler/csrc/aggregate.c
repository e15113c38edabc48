/* Running aggregates of one thread's calls (aggregate.h): the index maps, the growable
 * tables, the replay sink that updates them, and their conversion to Python lists. */
#include "profiler.h"

static inline size_t fh_map_hash(uint64_t k) {
    k *= 0x9E3779B97F4A7C15ull;
    return (size_t)(k ^ (k >> 29));
}

void fh_map_free(fh_map *m) {
    PyMem_RawFree(m->keys);
    PyMem_RawFree(m->vals);
    memset(m, 0, sizeof(*m));
}

static int fh_map_grow(fh_map *m) {
    size_t ncap = m->keys == NULL ? 64 : (m->mask + 1) * 2;
    uint64_t *keys = (uint64_t *)PyMem_RawCalloc(ncap, sizeof(uint64_t));
    uint32_t *vals = (uint32_t *)PyMem_RawCalloc(ncap, sizeof(uint32_t));
    if (keys == NULL || vals == NULL) {
        PyMem_RawFree(keys);
        PyMem_RawFree(vals);
        PyErr_NoMemory();
        return -1;
    }
    for (size_t i = 0; m->keys != NULL && i <= m->mask; i++) {
        if (m->vals[i] != 0) {
            size_t j = fh_map_hash(m->keys[i]) & (ncap - 1);
            while (vals[j] != 0) {
                j = (j + 1) & (ncap - 1);
            }
            keys[j] = m->keys[i];
            vals[j] = m->vals[i];
        }
    }
    PyMem_RawFree(m->keys);
    PyMem_RawFree(m->vals);
    m->keys = keys;
    m->vals = vals;
    m->mask = ncap - 1;
    return 0;
}

uint32_t fh_map_get(fh_map *m, uint64_t key, uint32_t next, int *added) {
    *added = 0;
    if (m->keys == NULL || (m->used + 1) * 2 > m->mask + 1) {
        if (fh_map_grow(m) < 0) {
            return FH_NONE;
        }
    }
    size_t i = fh_map_hash(key) & m->mask;
    while (m->vals[i] != 0) {
        if (m->keys[i] == key) {
            return m->vals[i] - 1;
        }
        i = (i + 1) & m->mask;
    }
    m->keys[i] = key;
    m->vals[i] = next + 1;
    m->used++;
    *added = 1;
    return next;
}

int fh_vec_reserve(fh_vec *v, size_t i) {
    if (i < v->cap) {
        if (i >= v->n) {
            v->n = i + 1;
        }
        return 0;
    }
    size_t ncap = v->cap ? v->cap : 64;
    while (ncap <= i) {
        ncap *= 2;
    }
    char *grown = (char *)PyMem_RawRealloc(v->items, ncap * v->size);
    if (grown == NULL) {
        PyErr_NoMemory();
        return -1;
    }
    memset(grown + v->cap * v->size, 0, (ncap - v->cap) * v->size);
    v->items = grown;
    v->cap = ncap;
    v->n = i + 1;
    return 0;
}

int fh_agg_init(fh_agg *a) {
    memset(a, 0, sizeof(*a));
    a->funcs.size = sizeof(fh_stat);
    a->keys.size = sizeof(fh_stat);
    a->pairs.size = sizeof(fh_pair);
    a->paths.size = sizeof(fh_path);
    fh_replay_init(&a->stack);
    if (fh_vec_reserve(&a->paths, 0) < 0) {
        return -1;
    }
    fh_path *root = (fh_path *)fh_vec_at(&a->paths, 0);
    root->parent = FH_NONE;
    root->fid = FH_NONE;
    return 0;
}

void fh_agg_free(fh_agg *a) {
    PyMem_RawFree(a->funcs.items);
    PyMem_RawFree(a->keys.items);
    PyMem_RawFree(a->pairs.items);
    PyMem_RawFree(a->paths.items);
    fh_map_free(&a->pair_index);
    fh_map_free(&a->path_index);
    fh_replay_free(&a->stack);
    memset(a, 0, sizeof(*a));
}

size_t fh_agg_memory(const fh_agg *a) {
    return a->funcs.cap * a->funcs.size + a->keys.cap * a->keys.size + a->pairs.cap * a->pairs.size +
           a->paths.cap * a->paths.size + (a->pair_index.mask + 1) * 12 +
           (a->path_index.mask + 1) * 12 + a->stack.cap * sizeof(fh_frame);
}

static int fh_agg_open(void *arg, fh_replay *r, fh_frame *f) {
    fh_agg *a = (fh_agg *)arg;
    if (fh_vec_reserve(&a->funcs, f->fid) < 0) {
        return -1;
    }
    fh_stat *s = (fh_stat *)fh_vec_at(&a->funcs, f->fid);
    s->nc++;
    f->outer = s->active == 0;
    s->cc += f->outer;
    s->active++;
    if (fh_vec_reserve(&a->keys, f->kid) < 0) {
        return -1;
    }
    fh_stat *k = (fh_stat *)fh_vec_at(&a->keys, f->kid);
    k->nc++;
    f->key_outer = k->active == 0;
    k->cc += f->key_outer;
    k->active++;
    fh_frame *caller = f->vparent >= 0 ? &r->frames[f->vparent] : NULL;
    uint32_t p, node;
    if (caller != NULL && caller->last_fid == f->fid) {
        p = caller->last_pair;
        node = caller->last_path;
    } else {
        p = FH_NONE;
        if (caller != NULL) {
            int added;
            uint32_t next = (uint32_t)a->pairs.n;
            p = fh_map_get(&a->pair_index, ((uint64_t)caller->kid << 32) | f->kid, next, &added);
            if (p == FH_NONE || (added && fh_vec_reserve(&a->pairs, next) < 0)) {
                return -1;
            }
            if (added) {
                fh_pair *pair = (fh_pair *)fh_vec_at(&a->pairs, p);
                pair->caller = caller->kid;
                pair->callee = f->kid;
            }
        }
        uint32_t parent_path = caller != NULL ? caller->path : 0;
        int added;
        uint32_t next = (uint32_t)a->paths.n;
        node = fh_map_get(&a->path_index, ((uint64_t)parent_path << 32) | f->fid, next, &added);
        if (node == FH_NONE || (added && fh_vec_reserve(&a->paths, next) < 0)) {
            return -1;
        }
        if (added) {
            fh_path *path = (fh_path *)fh_vec_at(&a->paths, node);
            path->parent = parent_path;
            path->fid = f->fid;
        }
        if (caller != NULL) {
            caller->last_fid = f->fid;
            caller->last_pair = p;
            caller->last_path = node;
        }
    }
    if (p != FH_NONE) {
        fh_pair *pair = (fh_pair *)fh_vec_at(&a->pairs, p);
        pair->s.nc++;
        f->pair = p;
        f->pair_outer = pair->s.active == 0;
        pair->s.cc += f->pair_outer;
        pair->s.active++;
    }
    fh_path *path = (fh_path *)fh_vec_at(&a->paths, node);
    path->count++;
    f->path = node;
    return 0;
}

static int fh_agg_close(void *arg, fh_replay *r, fh_frame *f, int64_t end_ns) {
    fh_agg *a = (fh_agg *)arg;
    int64_t dur = end_ns - f->start_ns;
    int64_t own = dur - f->child_ns;
    if (f->vparent >= 0) {
        r->frames[f->vparent].child_ns += dur;
    }
    fh_stat *s = (fh_stat *)fh_vec_at(&a->funcs, f->fid);
    s->tt += own;
    if (f->outer) {
        s->ct += dur;
    }
    s->active--;
    fh_stat *k = (fh_stat *)fh_vec_at(&a->keys, f->kid);
    k->tt += own;
    if (f->key_outer) {
        k->ct += dur;
    }
    k->active--;
    if (f->pair != FH_NONE) {
        fh_pair *pair = (fh_pair *)fh_vec_at(&a->pairs, f->pair);
        pair->s.tt += own;
        if (f->pair_outer) {
            pair->s.ct += dur;
        }
        pair->s.active--;
    }
    fh_path *path = (fh_path *)fh_vec_at(&a->paths, f->path);
    path->self_ns += own;
    path->total_ns += dur;
    return 0;
}

const fh_sink fh_agg_sink = {fh_agg_open, fh_agg_close};

/* Folds events into the aggregates; 0 or -1 with an exception set. */
int fh_agg_fold(fh_agg *a, const fh_event *ev, size_t n, const fh_sites *sites,
                const fh_clockmap *clock) {
    for (size_t i = 0; i < n; i++) {
        if (fh_replay_event(&a->stack, &ev[i], sites, clock, &fh_agg_sink, a) < 0) {
            return -1;
        }
    }
    return 0;
}

static PyObject *fh_stat_tuple(const fh_stat *s) {
    return Py_BuildValue("(KKLL)", (unsigned long long)s->nc, (unsigned long long)s->cc,
                         (long long)s->tt, (long long)s->ct);
}

/* A table of fh_stat as a list of (nc, cc, tt, ct). */
static PyObject *fh_stats_list(const fh_vec *v) {
    PyObject *out = PyList_New((Py_ssize_t)v->n);
    for (size_t i = 0; out != NULL && i < v->n; i++) {
        PyObject *item = fh_stat_tuple((const fh_stat *)fh_vec_at(v, i));
        if (item == NULL) {
            Py_CLEAR(out);
            break;
        }
        PyList_SET_ITEM(out, (Py_ssize_t)i, item);
    }
    return out;
}

/* The tables as Python lists: functions and keys [(nc, cc, tt, ct) by id], pairs
 * [(caller key, callee key, nc, cc, tt, ct)], paths [(parent, fid, count, self, total)]
 * (path 0, the thread, left out: parents index the full list, so the first path listed
 * is 1). */
PyObject *fh_agg_tables(const fh_agg *a) {
    PyObject *funcs = fh_stats_list(&a->funcs);
    PyObject *keys = funcs != NULL ? fh_stats_list(&a->keys) : NULL;
    PyObject *pairs = PyList_New((Py_ssize_t)a->pairs.n);
    PyObject *paths = PyList_New(a->paths.n > 0 ? (Py_ssize_t)a->paths.n - 1 : 0);
    if (funcs == NULL || keys == NULL || pairs == NULL || paths == NULL) {
        goto error;
    }
    for (size_t i = 0; i < a->pairs.n; i++) {
        const fh_pair *p = (const fh_pair *)fh_vec_at(&a->pairs, i);
        PyObject *item = Py_BuildValue("(IIKKLL)", p->caller, p->callee,
                                       (unsigned long long)p->s.nc, (unsigned long long)p->s.cc,
                                       (long long)p->s.tt, (long long)p->s.ct);
        if (item == NULL) {
            goto error;
        }
        PyList_SET_ITEM(pairs, (Py_ssize_t)i, item);
    }
    for (size_t i = 1; i < a->paths.n; i++) {
        const fh_path *p = (const fh_path *)fh_vec_at(&a->paths, i);
        PyObject *item = Py_BuildValue("(IIKLL)", p->parent, p->fid, (unsigned long long)p->count,
                                       (long long)p->self_ns, (long long)p->total_ns);
        if (item == NULL) {
            goto error;
        }
        PyList_SET_ITEM(paths, (Py_ssize_t)i - 1, item);
    }
    return Py_BuildValue("{s:N,s:N,s:N,s:N}", "functions", funcs, "keys", keys, "pairs", pairs,
                         "paths", paths);

error:
    Py_XDECREF(funcs);
    Py_XDECREF(keys);
    Py_XDECREF(pairs);
    Py_XDECREF(paths);
    return NULL;
}
