/* framehook.profiler._tracer: the SIGTERM guard of a followed child (declared in
 * sigterm.h; used by framehook.profiler._follow only while following children).
 *
 * Why: a followed child writes its part from a Python SIGTERM handler (Pool.terminate()
 * sends SIGTERM to its workers). CPython's C handler only sets a flag; the main thread
 * runs the Python handler at its next check. A SIGTERM that arrives after the last check
 * and before the main thread blocks (SemLock.acquire's sem_trywait, then sem_wait; or
 * just before read()), or one delivered to another thread while the main thread is
 * blocked, interrupts nothing: the handler never runs and the process waits for good,
 * and so does Pool.terminate(), which joins it.
 *
 * How: our C handler replaces CPython's and first calls it (the flag is set as before),
 * then, unless the Python handler said it began (sigterm_seen), arms a one-shot POSIX
 * timer that sends SIGTERM to the main thread 50 ms later. That signal interrupts the
 * blocking call (sem_wait is never restarted after a handler; read() is not either, as
 * CPython installs its handlers without SA_RESTART), whose EINTR loop then checks the
 * signals and runs the Python handler. Each re-delivered SIGTERM re-arms the timer, at
 * twice the delay, a few times at most: one that finds the main thread running again
 * (in C code that checks no signal, then blocks) is followed by another.
 *
 * Forks: a fork inherits the handler but not the timer, and the handler re-delivers only
 * in the process that installed it; a followed fork installs its own (_Child.start, in
 * its after-fork hook). Before that a SIGTERM can be lost another way: one that reaches
 * the new process before os.fork() returns there (Pool.terminate() before a worker forked
 * late ever ran) sets the flag, which PyOS_AfterFork_Child then clears (bpo-9535: lest a
 * signal meant for the parent run in both), and the worker goes on to wait for a task for
 * good. So the inherited handler notes a SIGTERM that came before this process's guard,
 * and the guard, once installed, re-delivers it at once.
 *
 * A later signal.signal(SIGTERM, ...) replaces our handler, which is then simply gone.
 * Only async-signal-safe calls run in the handler (getpid, timer_settime), and it keeps
 * errno.
 *
 * Linux only (SIGEV_THREAD_ID sends the timer's signal to one thread); elsewhere
 * sigterm_guard() installs nothing and returns False. */
#define PY_SSIZE_T_CLEAN
#include <Python.h>

#include <errno.h>
#include <signal.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#ifdef __linux__
#include <sys/syscall.h>
#endif

#include "sigterm.h"

#if defined(__linux__) && defined(SIGEV_THREAD_ID) && defined(SYS_gettid) && \
    defined(_POSIX_TIMERS) && _POSIX_TIMERS > 0 && defined(SA_SIGINFO)
#define FH_SIGTERM_GUARD 1
#ifndef sigev_notify_thread_id /* (older glibc names only the union member) */
#define sigev_notify_thread_id _sigev_un._tid
#endif
#else
#define FH_SIGTERM_GUARD 0
#endif

const char fh_sigterm_guard_doc[] =
    "sigterm_guard(on): on, SIGTERM goes first to CPython's handler, then, until "
    "sigterm_seen(), is re-delivered to the main thread after 50 ms (a SIGTERM that came "
    "just before a blocking call would otherwise never run the Python handler), and one "
    "that came before (to a fork, through the handler it inherited) is re-delivered at "
    "once; off, CPython's handler is put back. Call it from the main thread, after "
    "signal.signal. Returns whether SIGTERM is guarded (False where there is no Python "
    "handler to chain to, and on platforms other than Linux).";

const char fh_sigterm_seen_doc[] =
    "sigterm_seen(): the Python SIGTERM handler has begun: the guard re-delivers no more.";

#if FH_SIGTERM_GUARD

#define FH_REDELIVER_FIRST_NS 50000000LL /* the first re-delivery's delay: 50 ms */
#define FH_REDELIVER_MAX 6               /* re-deliveries at most (3.15 s in all) */
#define FH_REDELIVER_NOW_NS 1000000LL    /* a SIGTERM that came before the guard: 1 ms */

/* The handler ours calls first (CPython's), as it was installed. Written only while ours
 * is not installed, so never while the handler may read it. */
static struct sigaction fh_chained;
/* The process whose handler re-delivers (0: none). A fork inherits our handler with the
 * parent's pid here: it chains and notes the signal (fh_unguarded_pid), having no timer. */
static volatile sig_atomic_t fh_guard_pid = 0;
static volatile sig_atomic_t fh_seen = 0;        /* the Python handler has begun */
/* The process that a SIGTERM reached while our handler did not guard it (a fork of the
 * guarded process, before its own guard), or 0 */
static volatile sig_atomic_t fh_unguarded_pid = 0;
static volatile sig_atomic_t fh_redelivered = 0; /* timer armings since the guard began */
static timer_t fh_timer;
static pid_t fh_timer_pid = 0; /* the process fh_timer was created in (0: none) */

/* Arms the timer: SIGTERM to the main thread once, delay_ns from now (async-signal-safe). */
static int fh_arm(long long delay_ns) {
    struct itimerspec when = {{0, 0}, {0, 0}};
    when.it_value.tv_sec = (time_t)(delay_ns / 1000000000LL);
    when.it_value.tv_nsec = (long)(delay_ns % 1000000000LL);
    return timer_settime(fh_timer, 0, &when, NULL);
}

static void fh_sigterm_handler(int sig, siginfo_t *info, void *context) {
    int saved_errno = errno;
    if (fh_chained.sa_flags & SA_SIGINFO) {
        fh_chained.sa_sigaction(sig, info, context);
    } else if (fh_chained.sa_handler != SIG_DFL && fh_chained.sa_handler != SIG_IGN) {
        fh_chained.sa_handler(sig);
    }
    pid_t pid = getpid();
    int armed = fh_redelivered;
    if (fh_guard_pid != pid) {
        fh_unguarded_pid = pid; /* (re-delivered by this process's guard, if it comes) */
    } else if (!fh_seen && armed < FH_REDELIVER_MAX) {
        fh_redelivered = armed + 1;
        if (fh_arm(FH_REDELIVER_FIRST_NS << armed) != 0) {
            /* nothing to be done here: this SIGTERM has set the flag all the same */
        }
    }
    errno = saved_errno;
}

static int fh_is_ours(const struct sigaction *act) {
    return (act->sa_flags & SA_SIGINFO) && act->sa_sigaction == fh_sigterm_handler;
}

static PyObject *fh_guard_on(void) {
    struct sigaction current;
    pid_t pid = getpid();
    if (sigaction(SIGTERM, NULL, &current) != 0) {
        return PyErr_SetFromErrno(PyExc_OSError);
    }
    if (!fh_is_ours(&current)) {
        /* nothing to chain to (no Python handler), or a handler reset at its first
         * signal, after which a re-delivered SIGTERM would end the process at once */
        if ((!(current.sa_flags & SA_SIGINFO) &&
             (current.sa_handler == SIG_DFL || current.sa_handler == SIG_IGN)) ||
            (current.sa_flags & SA_RESETHAND)) {
            Py_RETURN_FALSE;
        }
    }
    fh_guard_pid = 0; /* (no re-delivery while the timer is made) */
    if (fh_timer_pid != pid) { /* none yet, or the parent's (timers are not inherited) */
        struct sigevent event;
        memset(&event, 0, sizeof event);
        event.sigev_notify = SIGEV_THREAD_ID;
        event.sigev_signo = SIGTERM;
        event.sigev_notify_thread_id = (pid_t)syscall(SYS_gettid); /* the main thread */
        if (timer_create(CLOCK_MONOTONIC, &event, &fh_timer) != 0) {
            fh_timer_pid = 0;
            return PyErr_SetFromErrno(PyExc_OSError);
        }
        fh_timer_pid = pid;
    }
    fh_seen = 0;
    fh_redelivered = 0;
    if (!fh_is_ours(&current)) {
        struct sigaction ours;
        memset(&ours, 0, sizeof ours);
        ours.sa_sigaction = fh_sigterm_handler;
        ours.sa_mask = current.sa_mask;
        ours.sa_flags = current.sa_flags | SA_SIGINFO; /* (CPython's: no SA_RESTART) */
        fh_chained = current;
        if (sigaction(SIGTERM, &ours, NULL) != 0) {
            return PyErr_SetFromErrno(PyExc_OSError);
        }
    }
    fh_guard_pid = pid;
    if (fh_unguarded_pid == pid) { /* a SIGTERM came before: its flag may be gone */
        fh_unguarded_pid = 0;
        if (fh_arm(FH_REDELIVER_NOW_NS) != 0) {
            return PyErr_SetFromErrno(PyExc_OSError);
        }
    }
    Py_RETURN_TRUE;
}

static PyObject *fh_guard_off(void) {
    struct sigaction current;
    fh_guard_pid = 0;
    if (sigaction(SIGTERM, NULL, &current) != 0) {
        return PyErr_SetFromErrno(PyExc_OSError);
    }
    if (fh_is_ours(&current) && sigaction(SIGTERM, &fh_chained, NULL) != 0) {
        return PyErr_SetFromErrno(PyExc_OSError);
    }
    if (fh_timer_pid == getpid()) {
        fh_timer_pid = 0;
        if (timer_delete(fh_timer) != 0) {
            return PyErr_SetFromErrno(PyExc_OSError);
        }
    }
    Py_RETURN_FALSE;
}

#endif /* FH_SIGTERM_GUARD */

PyObject *fh_sigterm_guard(PyObject *module, PyObject *on) {
    int enable = PyObject_IsTrue(on);
    if (enable < 0) {
        return NULL;
    }
#if FH_SIGTERM_GUARD
    return enable ? fh_guard_on() : fh_guard_off();
#else
    Py_RETURN_FALSE;
#endif
}

PyObject *fh_sigterm_seen(PyObject *module, PyObject *ignored) {
#if FH_SIGTERM_GUARD
    fh_seen = 1;
    if (fh_timer_pid == getpid()) {
        struct itimerspec never = {{0, 0}, {0, 0}};
        if (timer_settime(fh_timer, 0, &never, NULL) != 0) {
            return PyErr_SetFromErrno(PyExc_OSError);
        }
    }
#endif
    Py_RETURN_NONE;
}
