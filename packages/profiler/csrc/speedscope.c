/* write_speedscope: one evented speedscope profile per thread, open ("O") and close ("C")
 * events. */
#include "writer.h"

static int speedscope_event(fh_wthread *wt, const char *type, uint32_t fid, int64_t ns) {
    fh_out *o = &wt->w->out;
    int64_t at = ns - wt->w->origin;
    at = at < wt->last ? wt->last : at; /* speedscope needs time never to go back */
    wt->last = at;
    long long frame = PyLong_AsLongLong(PyList_GET_ITEM(wt->names, fid));
    if (frame == -1 && PyErr_Occurred()) {
        return -1;
    }
    int rc = fh_out_str(o, wt->first ? "\n{\"type\":\"" : ",\n{\"type\":\"");
    wt->first = 0;
    if (rc < 0 || fh_out_str(o, type) < 0 || fh_out_str(o, "\",\"frame\":") < 0 ||
        fh_out_i64(o, frame) < 0 || fh_out_str(o, ",\"at\":") < 0 ||
        fh_out_i64(o, at) < 0 || fh_out_str(o, "}") < 0) {
        return -1;
    }
    wt->w->out.written_events += type[0] == 'O';
    return 0;
}

static int speedscope_open(void *arg, fh_replay *r, fh_frame *f) {
    return speedscope_event((fh_wthread *)arg, "O", f->fid, f->start_ns);
}

static int speedscope_close(void *arg, fh_replay *r, fh_frame *f, int64_t end_ns) {
    return speedscope_event((fh_wthread *)arg, "C", f->fid, end_ns);
}

static const fh_sink speedscope_sink = {speedscope_open, speedscope_close};

/* write_speedscope(write, threads, progress=None): per thread, its header (bytes, up to
 * the events list) and frame indices; writes the profiles, comma-separated. Returns the
 * calls written. */
PyObject *fh_tracer_write_speedscope(TracerObject *self, PyObject *args) {
    PyObject *write, *threads, *progress = Py_None;
    if (!PyArg_ParseTuple(args, "OO|O:write_speedscope", &write, &threads, &progress)) {
        return NULL;
    }
    fh_wctx w;
    memset(&w, 0, sizeof(w));
    w.out.progress = progress == Py_None ? NULL : progress;
    fh_wthread *wts = NULL;
    PyObject *ctxs = fh_writer_setup(self, &w, write, threads, &wts, 0);
    if (ctxs == NULL) {
        return NULL;
    }
    int rc = 0;
    for (Py_ssize_t i = 0; i < PyList_GET_SIZE(ctxs) && rc == 0; i++) {
        fh_wthread *wt = &wts[i];
        fh_out *o = &w.out;
        if ((i > 0 && fh_out_str(o, ",\n") < 0) ||
            fh_out_obj(o, PyTuple_GET_ITEM(PyList_GET_ITEM(threads, i), 0)) < 0 ||
            fh_wthread_advance(wt, &speedscope_sink) < 0) {
            rc = -1;
            break;
        }
        int64_t end = w.end_ns - w.origin;
        rc = fh_out_str(o, "],\"endValue\":") < 0 || fh_out_i64(o, end > wt->last ? end : wt->last) < 0 ||
             fh_out_str(o, "}") < 0 ? -1 : 0;
    }
    if (rc == 0) {
        rc = fh_out_flush(&w.out);
    }
    uint64_t written = w.out.written_events;
    fh_writer_teardown(&w, wts, ctxs);
    return rc < 0 ? NULL : PyLong_FromUnsignedLongLong(written);
}
