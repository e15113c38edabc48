/* Call paths merged across threads by how they read (Tracer.write_folded): collapsed
 * stacks and the HTML flame graph's tree, written from the aggregates' path tables
 * (aggregate.c), which stay exact when max_events dropped events.
 *
 * Each thread's paths (parents before children) are folded into one tree whose nodes are
 * keyed by (parent node, label): paths merge when their frames read alike (code objects
 * made alike; two threads of one name and id), as a flame graph draws them. Python numbers
 * the labels once per function and hands over their text pre-encoded, so no Python object
 * is made per path or per node.
 *
 * Collapsed: a line per node of nonzero weight (self time or calls), in the order of the
 * first path that weighed on it: the frames' text joined by ';', a space, the weight.
 * Flame: nested JSON arrays [name, kind, total ns, colour, children]; children widest
 * first, ties by label (Python numbers labels in name order); a node of no time is left
 * out with everything under it; a thread's time is the sum of its children's. */
#include "writer.h"

enum { FOLD_TIME, FOLD_CALLS, FOLD_FLAME };

typedef struct {
    uint32_t parent, label, style;
    uint32_t order; /* collapsed: the node's line, FH_NONE while it weighs nothing */
    int64_t value;
} fold_node;

typedef struct {
    int mode;
    fh_vec nodes; /* [0]: above the threads, never written */
    fh_map index; /* (parent, label) -> node */
    uint32_t *lines; /* collapsed: nodes by line */
    size_t nlines, caplines;
} fold_tree;

static void fold_free(fold_tree *t) {
    PyMem_RawFree(t->nodes.items);
    fh_map_free(&t->index);
    PyMem_Free(t->lines);
}

/* The child of `parent` labelled `label` (made with `style` if new); FH_NONE on error. */
static uint32_t fold_child(fold_tree *t, uint32_t parent, uint32_t label, uint32_t style) {
    int added;
    uint32_t next = (uint32_t)t->nodes.n;
    uint32_t node = fh_map_get(&t->index, (uint64_t)parent << 32 | label, next, &added);
    if (node == FH_NONE || (added && fh_vec_reserve(&t->nodes, next) < 0)) {
        return FH_NONE;
    }
    if (added) {
        fold_node *n = (fold_node *)fh_vec_at(&t->nodes, node);
        n->parent = parent;
        n->label = label;
        n->style = style;
        n->order = FH_NONE;
    }
    return node;
}

static int fold_weigh(fold_tree *t, uint32_t node, int64_t value) {
    fold_node *n = (fold_node *)fh_vec_at(&t->nodes, node);
    if (t->mode == FOLD_FLAME) {
        n->value += value;
        return 0;
    }
    if (value <= 0) {
        return 0;
    }
    n->value += value;
    if (n->order == FH_NONE) {
        if (t->nlines == t->caplines) {
            size_t cap = t->caplines ? t->caplines * 2 : 256;
            uint32_t *grown = (uint32_t *)PyMem_Realloc(t->lines, cap * sizeof(uint32_t));
            if (grown == NULL) {
                PyErr_NoMemory();
                return -1;
            }
            t->lines = grown;
            t->caplines = cap;
        }
        n->order = (uint32_t)t->nlines;
        t->lines[t->nlines++] = node;
    }
    return 0;
}

/* A bytes argument read as native uint32 numbers (the arrays Python hands over). */
static int fold_numbers(PyObject *obj, const char *what, Py_ssize_t index, const uint32_t **out,
                        size_t *n) {
    if (!PyBytes_Check(obj) || PyBytes_GET_SIZE(obj) % sizeof(uint32_t) != 0) {
        PyErr_Format(PyExc_TypeError, "threads[%zd]: %s must be bytes of uint32 numbers", index,
                     what);
        return -1;
    }
    *out = (const uint32_t *)PyBytes_AS_STRING(obj);
    *n = (size_t)PyBytes_GET_SIZE(obj) / sizeof(uint32_t);
    return 0;
}

/* Folds one thread's paths under its root (labelled `spec`'s first item). */
static int fold_thread(fold_tree *t, CtxObject *ctx, PyObject *spec, Py_ssize_t index,
                       size_t nfragments) {
    unsigned int root_label, root_style;
    PyObject *label_bytes, *style_bytes;
    if (!PyTuple_Check(spec) || PyTuple_GET_SIZE(spec) != 4) {
        PyErr_Format(PyExc_TypeError, "threads[%zd]: expected (root label, root style, labels, "
                                      "styles)",
                     index);
        return -1;
    }
    if (!PyArg_ParseTuple(spec, "IIOO", &root_label, &root_style, &label_bytes, &style_bytes)) {
        return -1;
    }
    if (t->mode == FOLD_FLAME ? 2 * (size_t)root_style + 1 >= nfragments
                              : root_label >= nfragments) {
        PyErr_Format(PyExc_ValueError, "threads[%zd]: the root's text is past fragments", index);
        return -1;
    }
    const uint32_t *labels, *styles;
    size_t nlabels, nstyles;
    if (fold_numbers(label_bytes, "labels", index, &labels, &nlabels) < 0 ||
        fold_numbers(style_bytes, "styles", index, &styles, &nstyles) < 0) {
        return -1;
    }
    if (ctx->agg_broken || ctx->agg == NULL) {
        PyErr_SetString(PyExc_MemoryError, "memory ran out while a thread's events were "
                                           "aggregated: its aggregates are not exact");
        return -1;
    }
    const fh_vec *paths = &ctx->agg->paths;
    uint32_t *node_of = (uint32_t *)PyMem_Malloc(paths->n * sizeof(uint32_t));
    if (node_of == NULL) {
        PyErr_NoMemory();
        return -1;
    }
    int rc = -1;
    node_of[0] = fold_child(t, 0, root_label, root_style);
    if (node_of[0] == FH_NONE) {
        goto done;
    }
    for (size_t i = 1; i < paths->n; i++) {
        const fh_path *p = (const fh_path *)fh_vec_at(paths, i);
        if (p->fid >= nlabels || p->fid >= nstyles) {
            PyErr_Format(PyExc_ValueError, "threads[%zd]: no label or style for function %u",
                         index, p->fid);
            goto done;
        }
        uint32_t label = labels[p->fid], style = styles[p->fid];
        if (t->mode == FOLD_FLAME ? 2 * (size_t)style + 1 >= nfragments : label >= nfragments) {
            PyErr_Format(PyExc_ValueError, "threads[%zd]: function %u's text is past fragments",
                         index, p->fid);
            goto done;
        }
        uint32_t node = fold_child(t, node_of[p->parent], label, style);
        if (node == FH_NONE) {
            goto done;
        }
        node_of[i] = node;
        int64_t value = t->mode == FOLD_TIME    ? p->self_ns
                        : t->mode == FOLD_CALLS ? (int64_t)p->count
                                                : p->total_ns;
        if (fold_weigh(t, node, value) < 0) {
            goto done;
        }
    }
    rc = 0;
done:
    PyMem_Free(node_of);
    return rc;
}

static int write_collapsed(fold_tree *t, fh_out *o, PyObject *fragments) {
    uint32_t *chain = NULL;
    size_t capchain = 0;
    int rc = -1;
    for (size_t line = 0; line < t->nlines; line++) {
        const fold_node *n = (const fold_node *)fh_vec_at(&t->nodes, t->lines[line]);
        size_t depth = 0;
        for (uint32_t at = t->lines[line]; at != 0;
             at = ((const fold_node *)fh_vec_at(&t->nodes, at))->parent) {
            if (depth == capchain) {
                capchain = capchain ? capchain * 2 : 64;
                uint32_t *grown = (uint32_t *)PyMem_Realloc(chain, capchain * sizeof(uint32_t));
                if (grown == NULL) {
                    PyErr_NoMemory();
                    goto done;
                }
                chain = grown;
            }
            chain[depth++] = ((const fold_node *)fh_vec_at(&t->nodes, at))->label;
        }
        while (depth-- > 0) {
            if (fh_out_obj(o, PyList_GET_ITEM(fragments, chain[depth])) < 0 ||
                fh_out_str(o, depth > 0 ? ";" : " ") < 0) {
                goto done;
            }
        }
        if (fh_out_i64(o, n->value) < 0 || fh_out_str(o, "\n") < 0) {
            goto done;
        }
    }
    rc = 0;
done:
    PyMem_Free(chain);
    return rc;
}

typedef struct {
    int64_t value;
    uint32_t label, node;
} fold_kid;

static int kid_order(const void *a, const void *b) {
    const fold_kid *x = (const fold_kid *)a, *y = (const fold_kid *)b;
    if (x->value != y->value) {
        return x->value > y->value ? -1 : 1;
    }
    return x->label < y->label ? -1 : x->label > y->label;
}

static int write_node_head(fh_out *o, PyObject *fragments, const fold_node *n) {
    return fh_out_obj(o, PyList_GET_ITEM(fragments, 2 * (Py_ssize_t)n->style)) < 0 ||
                   fh_out_i64(o, n->value) < 0 ||
                   fh_out_obj(o, PyList_GET_ITEM(fragments, 2 * (Py_ssize_t)n->style + 1)) < 0
               ? -1
               : 0;
}

/* The tree as nested JSON, without recursion (call paths can be deep): each node's kept
 * children, sorted, in one array, and a stack of (node, next child). */
static int write_flame(fold_tree *t, fh_out *o, PyObject *fragments) {
    size_t n = t->nodes.n;
    fold_node *nodes = (fold_node *)t->nodes.items;
    for (size_t i = 1; i < n; i++) { /* a thread's time: its children's */
        uint32_t up = nodes[i].parent;
        if (up != 0 && nodes[up].parent == 0) {
            nodes[up].value += nodes[i].value;
        }
    }
    for (size_t i = 1; i < n; i++) {
        if (nodes[i].parent == 0) {
            nodes[0].value += nodes[i].value;
        }
    }
    size_t *first = (size_t *)PyMem_Calloc(n + 1, sizeof(size_t));
    fold_kid *kids = (fold_kid *)PyMem_Malloc((n > 1 ? n - 1 : 1) * sizeof(fold_kid));
    size_t *stack = (size_t *)PyMem_Malloc(2 * n * sizeof(size_t));
    int rc = -1;
    if (first == NULL || kids == NULL || stack == NULL) {
        PyErr_NoMemory();
        goto done;
    }
    for (size_t i = 1; i < n; i++) {
        first[nodes[i].parent + 1] += nodes[i].value > 0;
    }
    for (size_t i = 0; i < n; i++) {
        first[i + 1] += first[i];
    }
    size_t *fill = stack; /* (borrowed as each node's next free slot while filling) */
    memcpy(fill, first, n * sizeof(size_t));
    for (size_t i = 1; i < n; i++) {
        if (nodes[i].value > 0) {
            fold_kid *k = &kids[fill[nodes[i].parent]++];
            k->value = nodes[i].value;
            k->label = nodes[i].label;
            k->node = (uint32_t)i;
        }
    }
    for (size_t i = 0; i < n; i++) {
        if (first[i + 1] - first[i] > 1) {
            qsort(kids + first[i], first[i + 1] - first[i], sizeof(fold_kid), kid_order);
        }
    }
    size_t depth = 0;
    if (write_node_head(o, fragments, &nodes[0]) < 0) {
        goto done;
    }
    stack[0] = 0;
    stack[1] = first[0];
    depth = 1;
    while (depth > 0) {
        size_t node = stack[2 * (depth - 1)], *next = &stack[2 * (depth - 1) + 1];
        if (*next == first[node + 1]) {
            if (fh_out_str(o, "]]") < 0) {
                goto done;
            }
            depth--;
            continue;
        }
        uint32_t child = kids[(*next)++].node;
        if ((*next - 1 > first[node] && fh_out_str(o, ",") < 0) ||
            write_node_head(o, fragments, &nodes[child]) < 0) {
            goto done;
        }
        stack[2 * depth] = child;
        stack[2 * depth + 1] = first[child];
        depth++;
    }
    rc = 0;
done:
    PyMem_Free(first);
    PyMem_Free(kids);
    PyMem_Free(stack);
    return rc;
}

/* write_folded(write, mode, threads, fragments, root_style): mode 0 collapsed by self time,
 * 1 collapsed by calls, 2 the flame graph's JSON. `threads`, one entry per recorded thread:
 * (root label, root style, labels, styles), labels and styles being bytes of native uint32
 * per function id. `fragments` (bytes): per label, its frame text (collapsed); per style
 * s, at 2s and 2s+1, the JSON before and after a node's time (flame). */
PyObject *fh_tracer_write_folded(TracerObject *self, PyObject *args) {
    PyObject *write, *threads, *fragments;
    int mode;
    unsigned int root_style;
    if (!PyArg_ParseTuple(args, "OiO!O!I:write_folded", &write, &mode, &PyList_Type, &threads,
                          &PyList_Type, &fragments, &root_style)) {
        return NULL;
    }
    if (mode < FOLD_TIME || mode > FOLD_FLAME) {
        PyErr_Format(PyExc_ValueError, "mode: expected 0, 1 or 2, got %d", mode);
        return NULL;
    }
    Py_ssize_t nfragments = PyList_GET_SIZE(fragments);
    for (Py_ssize_t i = 0; i < nfragments; i++) {
        if (!PyBytes_Check(PyList_GET_ITEM(fragments, i))) {
            PyErr_Format(PyExc_TypeError, "fragments[%zd]: expected bytes", i);
            return NULL;
        }
    }
    if (mode == FOLD_FLAME && 2 * (Py_ssize_t)root_style + 1 >= nfragments) {
        PyErr_SetString(PyExc_ValueError, "root_style: past fragments");
        return NULL;
    }
    PyObject *ctxs = fh_tracer_finished_contexts(self);
    if (ctxs == NULL) {
        return NULL;
    }
    if (PyList_GET_SIZE(threads) != PyList_GET_SIZE(ctxs)) {
        PyErr_Format(PyExc_ValueError, "threads: expected one entry per recorded thread (%zd), "
                                       "got %zd",
                     PyList_GET_SIZE(ctxs), PyList_GET_SIZE(threads));
        Py_DECREF(ctxs);
        return NULL;
    }
    fold_tree t;
    memset(&t, 0, sizeof(t));
    t.mode = mode;
    t.nodes.size = sizeof(fold_node);
    fh_out o;
    memset(&o, 0, sizeof(o));
    o.write = write;
    o.buf = (char *)PyMem_Malloc(FH_OUT_CHUNK);
    PyObject *result = NULL;
    if (o.buf == NULL) {
        PyErr_NoMemory();
        goto done;
    }
    if (fh_vec_reserve(&t.nodes, 0) < 0) {
        goto done;
    }
    ((fold_node *)t.nodes.items)->style = root_style;
    for (Py_ssize_t i = 0; i < PyList_GET_SIZE(ctxs); i++) {
        if (fold_thread(&t, (CtxObject *)PyList_GET_ITEM(ctxs, i), PyList_GET_ITEM(threads, i), i,
                        (size_t)nfragments) < 0) {
            goto done;
        }
    }
    if ((mode == FOLD_FLAME ? write_flame(&t, &o, fragments) : write_collapsed(&t, &o, fragments)) <
            0 ||
        fh_out_flush(&o) < 0) {
        goto done;
    }
    result = PyLong_FromSize_t(mode == FOLD_FLAME ? t.nodes.n - 1 : t.nlines);
done:
    fold_free(&t);
    PyMem_Free(o.buf);
    Py_DECREF(ctxs);
    return result;
}
