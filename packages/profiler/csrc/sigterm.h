/* framehook.profiler._tracer: the SIGTERM guard of a followed child (sigterm.c).
 *
 * A followed child's Python SIGTERM handler writes its part. CPython's C handler only
 * sets a flag that the main thread acts on at its next check; a SIGTERM that comes after
 * the last check and before a blocking call that it does not interrupt (sem_wait, read)
 * would leave the handler never run and the process blocked for good; so would one that
 * reaches a fork before os.fork() returns there (its flag is cleared). The guard
 * re-delivers the signal to the main thread until the Python handler says it began.
 * Declarations only: the module functions are registered in tracer.c's fh_methods. */
#ifndef FH_SIGTERM_H
#define FH_SIGTERM_H

#include <Python.h>

/* (shared between this module's translation units only, not exported by the .so) */
#if defined(__GNUC__) && !defined(_WIN32)
#define FH_SIGTERM_INTERNAL __attribute__((visibility("hidden")))
#else
#define FH_SIGTERM_INTERNAL
#endif

/* sigterm_guard(on): on, installs the C handler that chains to the current one (CPython's)
 * and re-delivers; off, puts the chained handler back. Whether it guards now. */
FH_SIGTERM_INTERNAL PyObject *fh_sigterm_guard(PyObject *module, PyObject *on);
/* sigterm_seen(): the Python handler has begun; no re-delivery from now on. */
FH_SIGTERM_INTERNAL PyObject *fh_sigterm_seen(PyObject *module, PyObject *ignored);

FH_SIGTERM_INTERNAL extern const char fh_sigterm_guard_doc[];
FH_SIGTERM_INTERNAL extern const char fh_sigterm_seen_doc[];

#endif /* FH_SIGTERM_H */
