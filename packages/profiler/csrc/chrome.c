/* write_chrome: the Chrome trace's events, begin and end per call, numbered by start
 * time across threads (the threads are replayed side by side, the earliest pending call
 * written next, by a min-heap of the threads). */
#include "writer.h"

static int chrome_open(void *arg, fh_replay *r, fh_frame *f) {
    ((fh_wthread *)arg)->pending = f - r->frames;
    return 0;
}

static int chrome_close(void *arg, fh_replay *r, fh_frame *f, int64_t end_ns) {
    fh_wthread *wt = (fh_wthread *)arg;
    fh_out *o = &wt->w->out;
    if (fh_out_str(o, ",\n{\"ph\":\"E\",\"ts\":") < 0 || fh_out_us(o, track_time(wt, end_ns)) < 0 ||
        fh_out_str(o, ",\"pid\":") < 0 || fh_out_i64(o, wt->w->pid) < 0 ||
        fh_out_str(o, ",\"tid\":") < 0 || fh_out_i64(o, wt->tid) < 0) {
        return -1;
    }
    return fh_out_str(o, f->exception ? ",\"args\":{\"exception\":true}}" : "}");
}

static const fh_sink chrome_sink = {chrome_open, chrome_close};

/* Writes the begin event of a thread's pending call, numbered next. */
static int chrome_begin(fh_wthread *wt) {
    fh_wctx *w = wt->w;
    fh_out *o = &w->out;
    /* a tagged call's instance is the event right after it */
    const fh_event *next = fh_cursor_peek(&wt->cur, wt->ctx->skip);
    if (next != NULL && next->kind == FH_EV_TAG) {
        next = fh_cursor_next(&wt->cur, wt->ctx->skip); /* (the event peeked) */
        if (fh_replay_event(&wt->st, next, &wt->ctx->sites, &w->clock, &chrome_sink, wt) < 0) {
            return -1;
        }
    }
    fh_frame *f = &wt->st.frames[wt->pending];
    wt->pending = -1;
    f->id = ++w->next_id;
    PyObject *names = PyList_GET_ITEM(wt->names, f->fid);
    if (fh_out_str(o, ",\n{\"ph\":\"B\",") < 0 || fh_out_obj(o, PyTuple_GET_ITEM(names, 0)) < 0 ||
        fh_out_str(o, ",\"ts\":") < 0 || fh_out_us(o, track_time(wt, f->start_ns)) < 0 ||
        fh_out_str(o, ",\"pid\":") < 0 || fh_out_i64(o, w->pid) < 0 ||
        fh_out_str(o, ",\"tid\":") < 0 || fh_out_i64(o, wt->tid) < 0 ||
        fh_out_str(o, ",\"args\":{\"id\":") < 0 || fh_out_i64(o, (int64_t)f->id) < 0) {
        return -1;
    }
    if (f->vparent >= 0 && (fh_out_str(o, ",\"parent\":") < 0 ||
                            fh_out_i64(o, (int64_t)wt->st.frames[f->vparent].id) < 0)) {
        return -1;
    }
    if (fh_out_obj(o, PyTuple_GET_ITEM(names, 1)) < 0 ||
        (f->start_frame && fh_out_str(o, ",\"start_frame\":true") < 0)) {
        return -1;
    }
    if (f->tag != 0 && w->tag != NULL) {
        PyObject *desc = PyObject_CallFunction(w->tag, "nI", wt->index, f->tag - 1);
        if (desc == NULL) {
            return -1;
        }
        int rc = PyBytes_Check(desc) ? 0 : -1;
        if (rc < 0) {
            PyErr_SetString(PyExc_TypeError, "tag() must return bytes");
        } else {
            rc = fh_out_str(o, ",\"instance\":") < 0 || fh_out_obj(o, desc) < 0 ? -1 : 0;
        }
        Py_DECREF(desc);
        if (rc < 0) {
            return -1;
        }
    }
    o->written_events++;
    return fh_out_str(o, "}}");
}

/* Whether thread a's pending call goes before thread b's: earlier start, then the thread
 * listed first (the trees' numbering sorts stably by start). */
static inline int pending_before(const fh_wthread *wts, Py_ssize_t a, Py_ssize_t b) {
    int64_t ta = wts[a].st.frames[wts[a].pending].start_ns;
    int64_t tb = wts[b].st.frames[wts[b].pending].start_ns;
    return ta < tb || (ta == tb && a < b);
}

static void heap_push(const fh_wthread *wts, Py_ssize_t *heap, Py_ssize_t *size, Py_ssize_t i) {
    Py_ssize_t at = (*size)++;
    while (at > 0 && pending_before(wts, i, heap[(at - 1) / 2])) {
        heap[at] = heap[(at - 1) / 2];
        at = (at - 1) / 2;
    }
    heap[at] = i;
}

static Py_ssize_t heap_pop(const fh_wthread *wts, Py_ssize_t *heap, Py_ssize_t *size) {
    Py_ssize_t top = heap[0];
    Py_ssize_t last = heap[--(*size)];
    Py_ssize_t at = 0;
    for (;;) {
        Py_ssize_t child = 2 * at + 1;
        if (child >= *size) {
            break;
        }
        if (child + 1 < *size && pending_before(wts, heap[child + 1], heap[child])) {
            child++;
        }
        if (!pending_before(wts, heap[child], last)) {
            break;
        }
        heap[at] = heap[child];
        at = child;
    }
    if (*size > 0) {
        heap[at] = last;
    }
    return top;
}

/* write_chrome(write, pid, threads, tag, progress=None): the events of a Chrome trace,
 * each preceded by a comma (the caller writes the document around them). Returns the
 * calls written. */
PyObject *fh_tracer_write_chrome(TracerObject *self, PyObject *args) {
    PyObject *write, *threads, *tag, *progress = Py_None;
    long long pid;
    if (!PyArg_ParseTuple(args, "OLOO|O:write_chrome", &write, &pid, &threads, &tag,
                          &progress)) {
        return NULL;
    }
    fh_wctx w;
    memset(&w, 0, sizeof(w));
    w.out.progress = progress == Py_None ? NULL : progress;
    w.pid = pid;
    w.tag = tag == Py_None ? NULL : tag;
    fh_wthread *wts = NULL;
    PyObject *ctxs = fh_writer_setup(self, &w, write, threads, &wts, 1);
    if (ctxs == NULL) {
        return NULL;
    }
    Py_ssize_t n = PyList_GET_SIZE(ctxs);
    /* the threads with a pending call, in a min-heap by (start, thread index) */
    Py_ssize_t *heap = (Py_ssize_t *)PyMem_Malloc(((size_t)n + 1) * sizeof(Py_ssize_t));
    int rc = heap == NULL ? (PyErr_NoMemory(), -1) : 0;
    Py_ssize_t size = 0;
    for (Py_ssize_t i = 0; i < n && rc == 0; i++) {
        rc = fh_wthread_advance(&wts[i], &chrome_sink);
        if (rc == 0 && wts[i].pending >= 0) {
            heap_push(wts, heap, &size, i);
        }
    }
    while (rc == 0 && size > 0) {
        Py_ssize_t i = heap_pop(wts, heap, &size);
        rc = chrome_begin(&wts[i]);
        if (rc == 0) {
            rc = fh_wthread_advance(&wts[i], &chrome_sink);
        }
        if (rc == 0 && wts[i].pending >= 0) {
            heap_push(wts, heap, &size, i);
        }
    }
    PyMem_Free(heap);
    if (rc == 0) {
        rc = fh_out_flush(&w.out);
    }
    uint64_t written = w.out.written_events;
    fh_writer_teardown(&w, wts, ctxs);
    return rc < 0 ? NULL : PyLong_FromUnsignedLongLong(written);
}
