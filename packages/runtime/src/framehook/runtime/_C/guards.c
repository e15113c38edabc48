/* GuardChecker: a guard set compiled once from a declarative list, evaluated in C.
 *
 *     checker = GuardChecker(guards, globals=None, *, ndarray_type=None)
 *     checker(f_locals) -> bool             # every guard holds (usable as a check_fn)
 *     checker.first_failure(f_locals) -> int | None   # index of the first failing guard
 *
 * Each guard is a tuple (path, kind, *args). A path is a tuple of steps applied from the
 * frame's entry locals: it starts with ("local", name) or ("global", name) (read from the
 * globals dict captured at build time; its contents are read live), followed by any of
 * ("attr", name), ("item", key), ("index", i), ("len",), ("type",). Paths are compiled
 * into a table of nodes shared by common prefixes, so a value read by several guards is
 * read once per call. Kinds:
 *
 *     TYPE_MATCH t          type(v) is t
 *     ID_MATCH obj          v is obj
 *     EQUALS_MATCH c        v is c or v == c  (a float NaN constant matches any float NaN)
 *     CONSTANT_MATCH c      the same as EQUALS_MATCH
 *     LENGTH_CHECK n        len(v) == n
 *     DICT_KEYS keys        list(v.keys()) == list(keys), order included
 *     IS_NONE / NOT_NONE    v is None / v is not None
 *     IS_TRUE / IS_FALSE    v is True / v is False
 *     TRUTH b               bool(v) == b
 *     SAME_AS other_path    v is <other path's value>
 *     NOT_SAME_AS other_path  v is not <other path's value> (either value missing: fails)
 *     NDARRAY_MATCH spec    numpy array: exact type, dtype, shape (None: dynamic), strides or
 *                           contiguity, writeable, read from numpy's public struct (no numpy
 *                           build dependency; see fh_ndarray_fields)
 *     CONTEXTVAR_IS var token fallback   (empty path) var.get() is token, else fallback()
 *     CALL fn               (empty path) fn() is true: the only kinds that may call Python
 *
 * GuardChecker.KINDS is the frozenset of these names, for callers that must work with
 * runtimes that predate a kind.
 *
 * As in the translator's generated check functions, anything that raises an Exception
 * while a guard is evaluated (a missing key, a vanished attribute, a failing ==) makes that
 * guard fail; BaseExceptions that are not Exceptions (KeyboardInterrupt) propagate. */
#include "runtime.h"
#include <math.h>
#include <stddef.h>
#include <string.h>

/* ---- numpy's array struct ------------------------------------------------------------
 * A mirror of the leading fields of numpy's PyArrayObject_fields (numpy/ndarraytypes.h).
 * This prefix is part of numpy's ABI in 1.x and 2.x (extensions compiled against one
 * numpy 1.x/2.x release run on later ones and read these fields through macros such as
 * PyArray_NDIM). It is only read after an exact type check against a subtype of the
 * numpy.ndarray type given at build time. npy_intp is Py_intptr_t. */
typedef struct {
    PyObject_HEAD
    char *data;
    int nd;
    Py_intptr_t *dimensions;
    Py_intptr_t *strides;
    PyObject *base;
    PyObject *descr;
    int flags;
    PyObject *weakreflist;
} fh_ndarray_fields;

#define FH_NPY_C_CONTIGUOUS 0x0001
#define FH_NPY_F_CONTIGUOUS 0x0002
#define FH_NPY_WRITEABLE 0x0400

/* ---- compiled form ----------------------------------------------------------------- */
enum { OP_LOCAL, OP_GLOBAL, OP_ATTR, OP_ITEM, OP_INDEX, OP_LEN, OP_TYPE };
static const char *op_names[] = {"local", "global", "attr", "item", "index", "len", "type"};
#define N_OPS 7

enum {
    K_TYPE_MATCH, K_ID_MATCH, K_EQUALS_MATCH, K_CONSTANT_MATCH, K_LENGTH_CHECK, K_DICT_KEYS,
    K_IS_NONE, K_NOT_NONE, K_IS_TRUE, K_IS_FALSE, K_TRUTH, K_SAME_AS, K_NOT_SAME_AS, K_NDARRAY_MATCH,
    K_CONTEXTVAR_IS, K_CALL,
};
static const struct { const char *name; int nargs; } kind_info[] = {
    {"TYPE_MATCH", 1}, {"ID_MATCH", 1}, {"EQUALS_MATCH", 1}, {"CONSTANT_MATCH", 1}, {"LENGTH_CHECK", 1},
    {"DICT_KEYS", 1}, {"IS_NONE", 0}, {"NOT_NONE", 0}, {"IS_TRUE", 0}, {"IS_FALSE", 0}, {"TRUTH", 1},
    {"SAME_AS", 1}, {"NOT_SAME_AS", 1}, {"NDARRAY_MATCH", 1}, {"CONTEXTVAR_IS", 3}, {"CALL", 1},
};
#define N_KINDS ((int)(sizeof(kind_info) / sizeof(kind_info[0])))

typedef struct {
    int parent;     /* node index, -1 for a root (local/global) */
    int op;
    PyObject *arg;  /* name, key or index object (owned), NULL for len/type */
    Py_ssize_t index;
} fh_node;

enum { CONTIG_ANY, CONTIG_C, CONTIG_F, CONTIG_NEITHER };

typedef struct {
    int kind;
    int node;        /* value the guard reads, -1 for none */
    int other;       /* SAME_AS, NOT_SAME_AS: the other node */
    int nan;         /* EQUALS_MATCH against a float NaN */
    int truth;       /* TRUTH: expected truth value */
    Py_ssize_t n;    /* LENGTH_CHECK length; NDARRAY_MATCH ndim */
    PyObject *a;     /* type / object / constant / keys tuple / array type / contextvar / callable */
    PyObject *b;     /* NDARRAY_MATCH dtype; CONTEXTVAR_IS token */
    PyObject *c;     /* CONTEXTVAR_IS fallback */
    /* NDARRAY_MATCH */
    Py_intptr_t *shape;    /* n entries, -1 = dynamic */
    Py_intptr_t *strides;  /* n entries, or NULL */
    int contiguity;
    int writeable;         /* -1: not checked */
} fh_guard;

typedef struct {
    PyObject_HEAD
    Py_ssize_t n_guards, n_nodes;
    fh_guard *guards;
    fh_node *nodes;
    PyObject *globals;       /* owned, may be NULL */
    PyObject *ndarray_type;  /* owned, may be NULL */
    PyObject *dict;          /* instance __dict__ */
    PyObject *weakreflist;
    vectorcallfunc vectorcall;
    int cleared;
} fh_GuardChecker;

#define STACK_VALUES 64

/* Where ("local", name) steps read: the mapping a caller passed (checker(f_locals)) or,
 * on the runtime's cache-hit path, the fresh frame itself, so that no locals dict is
 * built per call. */
typedef struct {
    PyObject *mapping; /* borrowed; NULL: read the frame */
    fh_frame *frame;
} fh_locals_src;

/* ---- evaluation -------------------------------------------------------------------- */
/* A guard's failure to evaluate: Exceptions make the guard fail (returns 0), anything
 * else propagates (returns -1). */
static int swallow(void) {
    if (PyErr_ExceptionMatches(PyExc_Exception)) {
        PyErr_Clear();
        return 0;
    }
    return -1;
}

/* Computes vals[i] (a new reference) unless already there. 0 on success, -1 with an
 * exception set. */

/* mapping[key] as a new reference; exact dicts without the generic protocol's overhead */
static PyObject *get_item(PyObject *mapping, PyObject *key) {
    if (!PyDict_CheckExact(mapping)) {
        return PyObject_GetItem(mapping, key);
    }
    PyObject *v = PyDict_GetItemWithError(mapping, key);
    if (v == NULL) {
        if (!PyErr_Occurred()) {
            PyErr_SetObject(PyExc_KeyError, key);
        }
        return NULL;
    }
    return Py_NewRef(v);
}

static int eval_node(fh_GuardChecker *self, const fh_locals_src *locals, PyObject **vals, int i) {
    if (vals[i] != NULL) {
        return 0;
    }
    fh_node *nd = &self->nodes[i];
    PyObject *base = NULL, *v = NULL;
    if (nd->parent >= 0) {
        if (eval_node(self, locals, vals, nd->parent) < 0) {
            return -1;
        }
        base = vals[nd->parent];
    }
    switch (nd->op) {
    case OP_LOCAL:
        v = locals->mapping ? get_item(locals->mapping, nd->arg) : fh_entry_local(locals->frame, nd->arg);
        break;
    case OP_GLOBAL:
        v = get_item(self->globals, nd->arg);
        break;
    case OP_ATTR:
        v = PyObject_GetAttr(base, nd->arg);
        break;
    case OP_ITEM:
        v = get_item(base, nd->arg);
        break;
    case OP_INDEX:
        if (PyList_CheckExact(base) || PyTuple_CheckExact(base)) {
            Py_ssize_t size = Py_SIZE(base), k = nd->index < 0 ? nd->index + size : nd->index;
            if (k < 0 || k >= size) {
                PyErr_SetString(PyExc_IndexError, "index out of range");
                return -1;
            }
            v = Py_NewRef(PyList_CheckExact(base) ? PyList_GET_ITEM(base, k) : PyTuple_GET_ITEM(base, k));
        } else {
            v = PyObject_GetItem(base, nd->arg);
        }
        break;
    case OP_LEN: {
        Py_ssize_t n = PyObject_Length(base);
        v = n < 0 ? NULL : PyLong_FromSsize_t(n);
        break;
    }
    default: /* OP_TYPE */
        v = Py_NewRef((PyObject *)Py_TYPE(base));
        break;
    }
    if (v == NULL) {
        return -1;
    }
    vals[i] = v;
    return 0;
}

static int eq(PyObject *a, PyObject *b) {
    return a == b ? 1 : PyObject_RichCompareBool(a, b, Py_EQ);
}

static int check_dict_keys(PyObject *v, PyObject *keys) {
    Py_ssize_t n = PyTuple_GET_SIZE(keys);
    if (PyDict_CheckExact(v)) {
        if (PyDict_GET_SIZE(v) != n) {
            return 0;
        }
        Py_ssize_t pos = 0, i = 0;
        PyObject *key, *value;
        while (i < n && PyDict_Next(v, &pos, &key, &value)) {
            Py_INCREF(key);
            int r = eq(key, PyTuple_GET_ITEM(keys, i));
            Py_DECREF(key);
            if (r <= 0) {
                return r;
            }
            i++;
        }
        return i == n && PyDict_GET_SIZE(v) == n;
    }
    PyObject *list = PyMapping_Keys(v);
    if (list == NULL) {
        return -1;
    }
    int r = PyList_GET_SIZE(list) == n;
    for (Py_ssize_t i = 0; r == 1 && i < n && i < PyList_GET_SIZE(list); i++) {
        PyObject *key = Py_NewRef(PyList_GET_ITEM(list, i));
        r = eq(key, PyTuple_GET_ITEM(keys, i));
        Py_DECREF(key);
    }
    Py_DECREF(list);
    return r;
}

static int check_ndarray(fh_guard *g, PyObject *v) {
    if ((PyObject *)Py_TYPE(v) != g->a) {
        return 0;
    }
    fh_ndarray_fields *arr = (fh_ndarray_fields *)v;
    if (arr->nd != g->n) {
        return 0;
    }
    if (arr->descr != g->b) {
        int r = PyObject_RichCompareBool(arr->descr, g->b, Py_EQ);
        if (r <= 0) {
            return r;
        }
    }
    for (Py_ssize_t i = 0; i < g->n; i++) {
        if (g->shape[i] >= 0 && arr->dimensions[i] != g->shape[i]) {
            return 0;
        }
    }
    if (g->strides != NULL) {
        for (Py_ssize_t i = 0; i < g->n; i++) {
            if (arr->strides[i] != g->strides[i]) {
                return 0;
            }
        }
    }
    int flags = arr->flags;
    switch (g->contiguity) {
    case CONTIG_C:
        if (!(flags & FH_NPY_C_CONTIGUOUS)) return 0;
        break;
    case CONTIG_F:
        if (!(flags & FH_NPY_F_CONTIGUOUS)) return 0;
        break;
    case CONTIG_NEITHER:
        if (flags & (FH_NPY_C_CONTIGUOUS | FH_NPY_F_CONTIGUOUS)) return 0;
        break;
    default:
        break;
    }
    if (g->writeable >= 0 && (!!(flags & FH_NPY_WRITEABLE)) != g->writeable) {
        return 0;
    }
    return 1;
}

/* 1 pass, 0 fail, -1 error (exception set). */
static int check_guard(fh_GuardChecker *self, fh_guard *g, const fh_locals_src *locals, PyObject **vals) {
    PyObject *v = NULL;
    if (g->node >= 0) {
        if (eval_node(self, locals, vals, g->node) < 0) {
            return -1;
        }
        v = vals[g->node];
    }
    switch (g->kind) {
    case K_TYPE_MATCH:
        return (PyObject *)Py_TYPE(v) == g->a;
    case K_ID_MATCH:
        return v == g->a;
    case K_EQUALS_MATCH:
    case K_CONSTANT_MATCH:
        if (g->nan) {
            return PyFloat_Check(v) && isnan(PyFloat_AS_DOUBLE(v));
        }
        return eq(v, g->a);
    case K_LENGTH_CHECK: {
        Py_ssize_t n = PyObject_Length(v);
        return n < 0 ? -1 : n == g->n;
    }
    case K_DICT_KEYS:
        return check_dict_keys(v, g->a);
    case K_IS_NONE:
        return v == Py_None;
    case K_NOT_NONE:
        return v != Py_None;
    case K_IS_TRUE:
        return v == Py_True;
    case K_IS_FALSE:
        return v == Py_False;
    case K_TRUTH: {
        int t = PyObject_IsTrue(v);
        return t < 0 ? -1 : t == g->truth;
    }
    case K_SAME_AS:
    case K_NOT_SAME_AS:
        if (eval_node(self, locals, vals, g->other) < 0) {
            return -1;
        }
        return (v == vals[g->other]) == (g->kind == K_SAME_AS);
    case K_NDARRAY_MATCH:
        return check_ndarray(g, v);
    case K_CONTEXTVAR_IS: {
        PyObject *now = NULL;
        if (PyContextVar_Get(g->a, NULL, &now) < 0) {
            return -1;
        }
        Py_XDECREF(now); /* only its identity is compared */
        if (now == g->b) {
            return 1;
        }
    } /* fall through: the fallback decides */
    /* fall through */
    default: { /* K_CALL and CONTEXTVAR_IS's fallback */
        PyObject *r = PyObject_CallNoArgs(g->kind == K_CALL ? g->a : g->c);
        if (r == NULL) {
            return -1;
        }
        int t = PyObject_IsTrue(r);
        Py_DECREF(r);
        return t;
    }
    }
}

/* Index of the first failing guard, n_guards when all pass, -1 with an exception set. */
static Py_ssize_t run(fh_GuardChecker *self, const fh_locals_src *locals) {
    if (self->cleared) {
        PyErr_SetString(PyExc_RuntimeError, "GuardChecker: called after it was cleared by the garbage collector");
        return -1;
    }
    PyObject *stack[STACK_VALUES];
    PyObject **vals = stack;
    if (self->n_nodes > STACK_VALUES) {
        vals = PyMem_Calloc((size_t)self->n_nodes, sizeof(PyObject *));
        if (vals == NULL) {
            PyErr_NoMemory();
            return -1;
        }
    } else {
        memset(stack, 0, sizeof(PyObject *) * (size_t)self->n_nodes);
    }
    Py_ssize_t i = 0;
    for (; i < self->n_guards; i++) {
        int r = check_guard(self, &self->guards[i], locals, vals);
        if (r < 0) {
            r = swallow();
            if (r < 0) {
                i = -1;
                break;
            }
        }
        if (r == 0) {
            break;
        }
    }
    for (Py_ssize_t k = 0; k < self->n_nodes; k++) {
        Py_XDECREF(vals[k]);
    }
    if (vals != stack) {
        PyMem_Free(vals);
    }
    return i;
}

static PyObject *checker_vectorcall(PyObject *callable, PyObject *const *args, size_t nargsf, PyObject *kwnames) {
    Py_ssize_t nargs = PyVectorcall_NARGS(nargsf);
    if (nargs != 1 || (kwnames != NULL && PyTuple_GET_SIZE(kwnames) > 0)) {
        PyErr_Format(PyExc_TypeError, "GuardChecker() takes exactly one positional argument (f_locals), %zd given",
                     nargs);
        return NULL;
    }
    fh_GuardChecker *self = (fh_GuardChecker *)callable;
    fh_locals_src src = {args[0], NULL};
    Py_ssize_t i = run(self, &src);
    if (i < 0) {
        return NULL;
    }
    return Py_NewRef(i == self->n_guards ? Py_True : Py_False);
}

int fh_guard_checker_check_frame(PyObject *checker, fh_frame *f) {
    fh_GuardChecker *self = (fh_GuardChecker *)checker;
    fh_locals_src src = {NULL, f};
    Py_ssize_t i = run(self, &src);
    return i < 0 ? -1 : i == self->n_guards;
}

static PyObject *checker_first_failure(fh_GuardChecker *self, PyObject *locals) {
    fh_locals_src src = {locals, NULL};
    Py_ssize_t i = run(self, &src);
    if (i < 0) {
        return NULL;
    }
    if (i == self->n_guards) {
        Py_RETURN_NONE;
    }
    return PyLong_FromSsize_t(i);
}

/* ---- construction ------------------------------------------------------------------ */
static int find_kind(PyObject *name) {
    for (int k = 0; k < N_KINDS; k++) {
        if (PyUnicode_CompareWithASCIIString(name, kind_info[k].name) == 0) {
            return k;
        }
    }
    return -1;
}

/* Adds (or finds) the node for `path`; returns its index, -1 for an empty path (when
 * allowed), -2 with an exception set. */
static int compile_path(fh_GuardChecker *self, PyObject *path, Py_ssize_t gi, const char *what, int allow_empty,
                        Py_ssize_t *cap) {
    if (!PyTuple_Check(path) && !PyList_Check(path)) {
        PyErr_Format(PyExc_TypeError, "GuardChecker() argument 'guards': guard %zd: %s must be a tuple of steps, not %.200s",
                     gi, what, Py_TYPE(path)->tp_name);
        return -2;
    }
    Py_ssize_t len = PySequence_Fast_GET_SIZE(path);
    if (len == 0) {
        if (allow_empty) {
            return -1;
        }
        PyErr_Format(PyExc_ValueError, "GuardChecker() argument 'guards': guard %zd: %s is empty", gi, what);
        return -2;
    }
    int parent = -1;
    for (Py_ssize_t s = 0; s < len; s++) {
        PyObject *step = PySequence_Fast_GET_ITEM(path, s);
        if (!PyTuple_Check(step) || PyTuple_GET_SIZE(step) < 1 || !PyUnicode_Check(PyTuple_GET_ITEM(step, 0))) {
            PyErr_Format(PyExc_TypeError,
                         "GuardChecker() argument 'guards': guard %zd: %s step %zd must be a tuple (op, ...) "
                         "with op a str, not %R", gi, what, s, step);
            return -2;
        }
        int op = -1;
        for (int k = 0; k < N_OPS; k++) {
            if (PyUnicode_CompareWithASCIIString(PyTuple_GET_ITEM(step, 0), op_names[k]) == 0) {
                op = k;
            }
        }
        if (op < 0) {
            PyErr_Format(PyExc_ValueError,
                         "GuardChecker() argument 'guards': guard %zd: %s step %zd: unknown op %R (known: local, "
                         "global, attr, item, index, len, type)", gi, what, s, PyTuple_GET_ITEM(step, 0));
            return -2;
        }
        int is_root = op == OP_LOCAL || op == OP_GLOBAL;
        if (is_root != (s == 0)) {
            PyErr_Format(PyExc_ValueError,
                         "GuardChecker() argument 'guards': guard %zd: %s step %zd: %s; a path starts with "
                         "'local' or 'global' and only there", gi, what, s,
                         s == 0 ? "the first step must be 'local' or 'global'" : "a root op inside a path");
            return -2;
        }
        int nargs = (op == OP_LEN || op == OP_TYPE) ? 0 : 1;
        if (PyTuple_GET_SIZE(step) != 1 + nargs) {
            PyErr_Format(PyExc_ValueError, "GuardChecker() argument 'guards': guard %zd: %s step %zd: '%s' takes %d "
                         "operand(s), got %zd", gi, what, s, op_names[op], nargs, PyTuple_GET_SIZE(step) - 1);
            return -2;
        }
        PyObject *arg = nargs ? PyTuple_GET_ITEM(step, 1) : NULL;
        Py_ssize_t index = 0;
        if ((op == OP_LOCAL || op == OP_GLOBAL || op == OP_ATTR) && !PyUnicode_Check(arg)) {
            PyErr_Format(PyExc_TypeError, "GuardChecker() argument 'guards': guard %zd: %s step %zd: '%s' needs a "
                         "str name, not %.200s", gi, what, s, op_names[op], Py_TYPE(arg)->tp_name);
            return -2;
        }
        if (op == OP_GLOBAL && self->globals == NULL) {
            PyErr_Format(PyExc_ValueError, "GuardChecker() argument 'guards': guard %zd: %s reads a global but no "
                         "'globals' dict was given", gi, what);
            return -2;
        }
        if (op == OP_INDEX) {
            if (!PyLong_Check(arg) || PyBool_Check(arg)) {
                PyErr_Format(PyExc_TypeError, "GuardChecker() argument 'guards': guard %zd: %s step %zd: 'index' "
                             "needs an int, not %.200s", gi, what, s, Py_TYPE(arg)->tp_name);
                return -2;
            }
            index = PyLong_AsSsize_t(arg);
            if (index == -1 && PyErr_Occurred()) {
                return -2;
            }
        }
        if (op == OP_ITEM && PyObject_Hash(arg) == -1) {
            /* an unhashable key could never be found in a dict; say so now */
            if (PyErr_ExceptionMatches(PyExc_TypeError)) {
                PyErr_Clear();
                PyErr_Format(PyExc_TypeError, "GuardChecker() argument 'guards': guard %zd: %s step %zd: 'item' "
                             "key must be hashable, not %.200s", gi, what, s, Py_TYPE(arg)->tp_name);
            }
            return -2;
        }
        /* share the node with an earlier path with the same prefix */
        int found = -1;
        for (Py_ssize_t k = 0; k < self->n_nodes && found < 0; k++) {
            fh_node *nd = &self->nodes[k];
            if (nd->parent != parent || nd->op != op) {
                continue;
            }
            if (arg == NULL || nd->arg == arg) {
                found = (int)k;
                continue;
            }
            if (Py_TYPE(nd->arg) != Py_TYPE(arg)) {
                continue;
            }
            int r = PyObject_RichCompareBool(nd->arg, arg, Py_EQ);
            if (r < 0) {
                return -2;
            }
            if (r) {
                found = (int)k;
            }
        }
        if (found >= 0) {
            parent = found;
            continue;
        }
        if (self->n_nodes == *cap) {
            Py_ssize_t ncap = *cap ? *cap * 2 : 16;
            if (ncap > INT_MAX) {
                PyErr_SetString(PyExc_OverflowError, "GuardChecker(): too many path steps");
                return -2;
            }
            fh_node *nodes = PyMem_Realloc(self->nodes, (size_t)ncap * sizeof(fh_node));
            if (nodes == NULL) {
                PyErr_NoMemory();
                return -2;
            }
            self->nodes = nodes;
            *cap = ncap;
        }
        fh_node *nd = &self->nodes[self->n_nodes];
        nd->parent = parent;
        nd->op = op;
        nd->index = index;
        nd->arg = NULL;
        if (arg != NULL) {
            if (PyUnicode_CheckExact(arg)) {
                Py_INCREF(arg);
                PyUnicode_InternInPlace(&arg); /* dict lookups by identity of the interned key */
                nd->arg = arg;
            } else {
                nd->arg = Py_NewRef(arg);
            }
        }
        parent = (int)self->n_nodes++;
    }
    return parent;
}

static int seq_to_intp(PyObject *seq, Py_ssize_t n, int allow_none, Py_intptr_t **out, Py_ssize_t gi,
                       const char *key) {
    if (!PyTuple_Check(seq) && !PyList_Check(seq)) {
        PyErr_Format(PyExc_TypeError, "GuardChecker() argument 'guards': guard %zd: NDARRAY_MATCH '%s' must be a "
                     "tuple, not %.200s", gi, key, Py_TYPE(seq)->tp_name);
        return -1;
    }
    if (n >= 0 && PySequence_Fast_GET_SIZE(seq) != n) {
        PyErr_Format(PyExc_ValueError, "GuardChecker() argument 'guards': guard %zd: NDARRAY_MATCH '%s' has %zd "
                     "entries for %zd dimensions", gi, key, PySequence_Fast_GET_SIZE(seq), n);
        return -1;
    }
    Py_ssize_t len = PySequence_Fast_GET_SIZE(seq);
    Py_intptr_t *arr = PyMem_Malloc(sizeof(Py_intptr_t) * (size_t)(len ? len : 1));
    if (arr == NULL) {
        PyErr_NoMemory();
        return -1;
    }
    for (Py_ssize_t i = 0; i < len; i++) {
        PyObject *item = PySequence_Fast_GET_ITEM(seq, i);
        if (item == Py_None && allow_none) {
            arr[i] = -1;
            continue;
        }
        Py_ssize_t x = (PyLong_Check(item) && !PyBool_Check(item)) ? PyLong_AsSsize_t(item) : -1;
        if (x == -1 && PyErr_Occurred()) {
            PyMem_Free(arr);
            return -1;
        }
        if (!PyLong_Check(item) || PyBool_Check(item) || (allow_none && x < 0)) {
            PyErr_Format(PyExc_ValueError, "GuardChecker() argument 'guards': guard %zd: NDARRAY_MATCH '%s'[%zd] "
                         "must be %s, not %R", gi, key, i, allow_none ? "a size >= 0 or None" : "an int", item);
            PyMem_Free(arr);
            return -1;
        }
        arr[i] = (Py_intptr_t)x;
    }
    *out = arr;
    return 0;
}

static int compile_ndarray(fh_GuardChecker *self, fh_guard *g, PyObject *spec, Py_ssize_t gi) {
#define NDERR(exc, ...) (PyErr_Format(exc, "GuardChecker() argument 'guards': guard %zd: NDARRAY_MATCH " __VA_ARGS__), -1)
    if (!PyDict_Check(spec)) {
        return NDERR(PyExc_TypeError, "needs a dict spec, not %.200s", gi, Py_TYPE(spec)->tp_name);
    }
    if (self->ndarray_type == NULL) {
        return NDERR(PyExc_ValueError, "needs the 'ndarray_type' argument (numpy.ndarray)", gi);
    }
    static const char *known[] = {"type", "dtype", "shape", "strides", "contiguity", "writeable"};
    PyObject *key, *value;
    Py_ssize_t pos = 0;
    while (PyDict_Next(spec, &pos, &key, &value)) {
        int ok = 0;
        for (int k = 0; k < 6 && PyUnicode_Check(key); k++) {
            ok |= PyUnicode_CompareWithASCIIString(key, known[k]) == 0;
        }
        if (!ok) {
            return NDERR(PyExc_ValueError, "unknown spec key %R (known: type, dtype, shape, strides, contiguity, "
                         "writeable)", gi, key);
        }
    }
    PyObject *type = PyDict_GetItemString(spec, "type");
    if (type == NULL) {
        type = self->ndarray_type;
    }
    if (!PyType_Check(type) || !PyType_IsSubtype((PyTypeObject *)type, (PyTypeObject *)self->ndarray_type)) {
        return NDERR(PyExc_TypeError, "'type' must be ndarray_type or a subclass of it, not %R", gi, type);
    }
    PyObject *dtype = PyDict_GetItemString(spec, "dtype");
    PyObject *shape = PyDict_GetItemString(spec, "shape");
    if (dtype == NULL || shape == NULL) {
        return NDERR(PyExc_ValueError, "spec needs 'dtype' and 'shape'", gi);
    }
    g->a = Py_NewRef(type);
    g->b = Py_NewRef(dtype);
    if (seq_to_intp(shape, -1, 1, &g->shape, gi, "shape") < 0) {
        return -1;
    }
    g->n = PySequence_Fast_GET_SIZE(shape);
    PyObject *strides = PyDict_GetItemString(spec, "strides");
    if (strides != NULL && strides != Py_None && seq_to_intp(strides, g->n, 0, &g->strides, gi, "strides") < 0) {
        return -1;
    }
    PyObject *contig = PyDict_GetItemString(spec, "contiguity");
    g->contiguity = CONTIG_ANY;
    if (contig != NULL && contig != Py_None) {
        const char *names[] = {"C", "F", "neither"};
        int found = -1;
        for (int k = 0; k < 3 && PyUnicode_Check(contig); k++) {
            if (PyUnicode_CompareWithASCIIString(contig, names[k]) == 0) {
                found = k;
            }
        }
        if (found < 0) {
            return NDERR(PyExc_ValueError, "'contiguity' must be None, 'C', 'F' or 'neither', not %R", gi, contig);
        }
        g->contiguity = CONTIG_C + found;
    }
    PyObject *writeable = PyDict_GetItemString(spec, "writeable");
    g->writeable = -1;
    if (writeable != NULL && writeable != Py_None) {
        if (!PyBool_Check(writeable)) {
            return NDERR(PyExc_TypeError, "'writeable' must be a bool or None, not %.200s", gi,
                         Py_TYPE(writeable)->tp_name);
        }
        g->writeable = writeable == Py_True;
    }
    return 0;
#undef NDERR
}

static int compile_guard(fh_GuardChecker *self, fh_guard *g, PyObject *spec, Py_ssize_t gi, Py_ssize_t *cap) {
    if (!PyTuple_Check(spec) || PyTuple_GET_SIZE(spec) < 2) {
        PyErr_Format(PyExc_TypeError, "GuardChecker() argument 'guards': guard %zd must be a tuple (path, kind, "
                     "*args), not %R", gi, spec);
        return -1;
    }
    PyObject *kind_name = PyTuple_GET_ITEM(spec, 1);
    int kind = PyUnicode_Check(kind_name) ? find_kind(kind_name) : -1;
    if (kind < 0) {
        PyErr_Format(PyExc_ValueError, "GuardChecker() argument 'guards': guard %zd: unknown kind %R", gi, kind_name);
        return -1;
    }
    g->kind = kind;
    Py_ssize_t nargs = PyTuple_GET_SIZE(spec) - 2;
    if (nargs != kind_info[kind].nargs) {
        PyErr_Format(PyExc_ValueError, "GuardChecker() argument 'guards': guard %zd: %s takes %d argument(s), got %zd",
                     gi, kind_info[kind].name, kind_info[kind].nargs, nargs);
        return -1;
    }
    int pathless = kind == K_CONTEXTVAR_IS || kind == K_CALL;
    PyObject *path = PyTuple_GET_ITEM(spec, 0);
    if (pathless && path == Py_None) {
        g->node = -1;
    } else {
        int node = compile_path(self, path, gi, "path", pathless, cap);
        if (node == -2) {
            return -1;
        }
        if (pathless && node >= 0) {
            PyErr_Format(PyExc_ValueError, "GuardChecker() argument 'guards': guard %zd: %s takes an empty path",
                         gi, kind_info[kind].name);
            return -1;
        }
        g->node = node;
    }
    PyObject *arg = nargs ? PyTuple_GET_ITEM(spec, 2) : NULL;
    switch (kind) {
    case K_TYPE_MATCH:
        if (!PyType_Check(arg)) {
            PyErr_Format(PyExc_TypeError, "GuardChecker() argument 'guards': guard %zd: TYPE_MATCH needs a type, "
                         "not %.200s", gi, Py_TYPE(arg)->tp_name);
            return -1;
        }
        break;
    case K_EQUALS_MATCH:
    case K_CONSTANT_MATCH:
        g->nan = PyFloat_Check(arg) && isnan(PyFloat_AS_DOUBLE(arg));
        break;
    case K_LENGTH_CHECK:
        g->n = (PyLong_Check(arg) && !PyBool_Check(arg)) ? PyLong_AsSsize_t(arg) : -1;
        if (g->n == -1 && PyErr_Occurred()) {
            return -1;
        }
        if (g->n < 0) {
            PyErr_Format(PyExc_ValueError, "GuardChecker() argument 'guards': guard %zd: LENGTH_CHECK needs an int "
                         ">= 0, not %R", gi, arg);
            return -1;
        }
        break;
    case K_DICT_KEYS:
        if (!PyTuple_Check(arg) && !PyList_Check(arg)) {
            PyErr_Format(PyExc_TypeError, "GuardChecker() argument 'guards': guard %zd: DICT_KEYS needs a tuple or "
                         "list of keys, not %.200s", gi, Py_TYPE(arg)->tp_name);
            return -1;
        }
        g->a = PySequence_Tuple(arg); /* a private copy: later changes to the list do not move the guard */
        return g->a == NULL ? -1 : 0;
    case K_TRUTH:
        if (!PyBool_Check(arg)) {
            PyErr_Format(PyExc_TypeError, "GuardChecker() argument 'guards': guard %zd: TRUTH needs a bool, not "
                         "%.200s", gi, Py_TYPE(arg)->tp_name);
            return -1;
        }
        g->truth = arg == Py_True;
        return 0;
    case K_SAME_AS:
    case K_NOT_SAME_AS: {
        int other = compile_path(self, arg, gi, kind == K_SAME_AS ? "SAME_AS other path" : "NOT_SAME_AS other path",
                                 0, cap);
        if (other == -2) {
            return -1;
        }
        if (kind == K_NOT_SAME_AS && other == g->node) {
            /* equal paths share their node: `v is not v` could never hold */
            PyErr_Format(PyExc_ValueError, "GuardChecker() argument 'guards': guard %zd: NOT_SAME_AS other path "
                         "is the guard's own path (the guard could never hold)", gi);
            return -1;
        }
        g->other = other;
        return 0;
    }
    case K_NDARRAY_MATCH:
        return compile_ndarray(self, g, arg, gi);
    case K_CONTEXTVAR_IS:
        if (!PyContextVar_CheckExact(arg) || !PyCallable_Check(PyTuple_GET_ITEM(spec, 4))) {
            PyErr_Format(PyExc_TypeError, "GuardChecker() argument 'guards': guard %zd: CONTEXTVAR_IS needs "
                         "(contextvars.ContextVar, token, callable fallback)", gi);
            return -1;
        }
        g->b = Py_NewRef(PyTuple_GET_ITEM(spec, 3));
        g->c = Py_NewRef(PyTuple_GET_ITEM(spec, 4));
        break;
    case K_CALL:
        if (!PyCallable_Check(arg)) {
            PyErr_Format(PyExc_TypeError, "GuardChecker() argument 'guards': guard %zd: CALL needs a callable, "
                         "not %.200s", gi, Py_TYPE(arg)->tp_name);
            return -1;
        }
        break;
    default:
        break;
    }
    g->a = Py_XNewRef(arg);
    return 0;
}

static int checker_clear(fh_GuardChecker *self);

static PyObject *checker_new(PyTypeObject *type, PyObject *args, PyObject *kwds) {
    static char *kwlist[] = {"guards", "globals", "ndarray_type", NULL};
    PyObject *guards, *globals = Py_None, *ndarray_type = Py_None;
    if (!PyArg_ParseTupleAndKeywords(args, kwds, "O|O$O:GuardChecker", kwlist, &guards, &globals, &ndarray_type)) {
        return NULL;
    }
    if (globals != Py_None && !PyDict_Check(globals)) {
        PyErr_Format(PyExc_TypeError, "GuardChecker() argument 'globals' must be a dict or None, not %.200s",
                     Py_TYPE(globals)->tp_name);
        return NULL;
    }
    if (ndarray_type != Py_None) {
        if (!PyType_Check(ndarray_type) || strcmp(((PyTypeObject *)ndarray_type)->tp_name, "numpy.ndarray") != 0) {
            PyErr_Format(PyExc_TypeError, "GuardChecker() argument 'ndarray_type' must be numpy.ndarray or None, "
                         "not %R", ndarray_type);
            return NULL;
        }
        if (((PyTypeObject *)ndarray_type)->tp_basicsize < (Py_ssize_t)sizeof(fh_ndarray_fields)) {
            PyErr_SetString(PyExc_ValueError, "GuardChecker() argument 'ndarray_type': its instances are smaller "
                            "than numpy's array struct; unsupported numpy");
            return NULL;
        }
    }
    PyObject *seq = PySequence_Fast(guards, "GuardChecker() argument 'guards' must be a sequence of guard tuples");
    if (seq == NULL) {
        return NULL;
    }
    fh_GuardChecker *self = (fh_GuardChecker *)type->tp_alloc(type, 0);
    if (self == NULL) {
        Py_DECREF(seq);
        return NULL;
    }
    self->vectorcall = checker_vectorcall;
    self->globals = globals == Py_None ? NULL : Py_NewRef(globals);
    self->ndarray_type = ndarray_type == Py_None ? NULL : Py_NewRef(ndarray_type);
    Py_ssize_t n = PySequence_Fast_GET_SIZE(seq);
    self->guards = PyMem_Calloc((size_t)(n ? n : 1), sizeof(fh_guard));
    if (self->guards == NULL) {
        PyErr_NoMemory();
        goto error;
    }
    Py_ssize_t cap = 0;
    for (Py_ssize_t i = 0; i < n; i++) {
        fh_guard *g = &self->guards[i];
        g->node = g->other = -1;
        self->n_guards = i + 1; /* so that a partly built guard is released */
        if (compile_guard(self, g, PySequence_Fast_GET_ITEM(seq, i), i, &cap) < 0) {
            goto error;
        }
    }
    Py_DECREF(seq);
    return (PyObject *)self;
error:
    Py_DECREF(seq);
    Py_DECREF(self);
    return NULL;
}

static int checker_traverse(fh_GuardChecker *self, visitproc visit, void *arg) {
    for (Py_ssize_t i = 0; i < self->n_guards; i++) {
        Py_VISIT(self->guards[i].a);
        Py_VISIT(self->guards[i].b);
        Py_VISIT(self->guards[i].c);
    }
    for (Py_ssize_t i = 0; i < self->n_nodes; i++) {
        Py_VISIT(self->nodes[i].arg);
    }
    Py_VISIT(self->globals);
    Py_VISIT(self->ndarray_type);
    Py_VISIT(self->dict);
    return 0;
}

static int checker_clear(fh_GuardChecker *self) {
    if (self->n_guards || self->n_nodes || self->globals || self->dict) {
        self->cleared = 1;
    }
    for (Py_ssize_t i = 0; i < self->n_guards; i++) {
        Py_CLEAR(self->guards[i].a);
        Py_CLEAR(self->guards[i].b);
        Py_CLEAR(self->guards[i].c);
    }
    for (Py_ssize_t i = 0; i < self->n_nodes; i++) {
        Py_CLEAR(self->nodes[i].arg);
    }
    Py_CLEAR(self->globals);
    Py_CLEAR(self->ndarray_type);
    Py_CLEAR(self->dict);
    return 0;
}

static void checker_dealloc(fh_GuardChecker *self) {
    PyObject_GC_UnTrack(self);
    if (self->weakreflist != NULL) {
        PyObject_ClearWeakRefs((PyObject *)self);
    }
    checker_clear(self);
    if (self->guards != NULL) {
        for (Py_ssize_t i = 0; i < self->n_guards; i++) {
            PyMem_Free(self->guards[i].shape);
            PyMem_Free(self->guards[i].strides);
        }
        PyMem_Free(self->guards);
    }
    PyMem_Free(self->nodes);
    Py_TYPE(self)->tp_free((PyObject *)self);
}

/* Readies the type with its KINDS class attribute: a dict given to tp_dict before
 * PyType_Ready is the type's namespace (static types cannot take attributes afterwards). */
int fh_guard_checker_ready(void) {
    if (fh_GuardChecker_Type.tp_flags & Py_TPFLAGS_READY) {
        return 0;
    }
    if (fh_GuardChecker_Type.tp_dict == NULL) {
        PyObject *dict = PyDict_New();
        if (dict == NULL) {
            return -1;
        }
        PyObject *kinds = PyFrozenSet_New(NULL);
        int r = kinds == NULL ? -1 : 0;
        for (int k = 0; r == 0 && k < N_KINDS; k++) {
            PyObject *name = PyUnicode_InternFromString(kind_info[k].name);
            /* PySet_Add may fill a frozenset nobody else has seen yet */
            r = name == NULL ? -1 : PySet_Add(kinds, name);
            Py_XDECREF(name);
        }
        if (r == 0) {
            r = PyDict_SetItemString(dict, "KINDS", kinds);
        }
        Py_XDECREF(kinds);
        if (r < 0) {
            Py_DECREF(dict);
            return -1;
        }
        fh_GuardChecker_Type.tp_dict = dict; /* owned by the type from now on */
    }
    return PyType_Ready(&fh_GuardChecker_Type);
}

static Py_ssize_t checker_len(fh_GuardChecker *self) {
    return self->n_guards;
}

static PyObject *checker_repr(fh_GuardChecker *self) {
    return PyUnicode_FromFormat("<framehook.runtime.GuardChecker with %zd guards on %zd values>", self->n_guards,
                                self->n_nodes);
}

static PyMethodDef checker_methods[] = {
    {"first_failure", (PyCFunction)checker_first_failure, METH_O,
     "first_failure(f_locals)\n--\n\nIndex of the first guard that fails for f_locals, or None when all hold."},
    {NULL, NULL, 0, NULL},
};

static PyGetSetDef checker_getset[] = {
    {"__dict__", PyObject_GenericGetDict, PyObject_GenericSetDict, NULL, NULL},
    {NULL},
};

static PySequenceMethods checker_as_sequence = {
    .sq_length = (lenfunc)checker_len,
};

PyTypeObject fh_GuardChecker_Type = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "framehook.runtime.GuardChecker",
    .tp_basicsize = sizeof(fh_GuardChecker),
    .tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_HAVE_GC | Py_TPFLAGS_HAVE_VECTORCALL,
    .tp_doc = "GuardChecker(guards, globals=None, *, ndarray_type=None)\n--\n\n"
              "A guard set compiled once and evaluated in C: checker(f_locals) is True when every guard "
              "holds. Each guard is (path, kind, *args); see the package README.",
    .tp_new = checker_new,
    .tp_dealloc = (destructor)checker_dealloc,
    .tp_traverse = (traverseproc)checker_traverse,
    .tp_clear = (inquiry)checker_clear,
    .tp_repr = (reprfunc)checker_repr,
    .tp_call = PyVectorcall_Call,
    .tp_vectorcall_offset = offsetof(fh_GuardChecker, vectorcall),
    .tp_dictoffset = offsetof(fh_GuardChecker, dict),
    .tp_weaklistoffset = offsetof(fh_GuardChecker, weakreflist),
    .tp_methods = checker_methods,
    .tp_getset = checker_getset,
    .tp_as_sequence = &checker_as_sequence,
};
