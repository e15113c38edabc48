/* The recording clock: raw ticks on the hot path, nanoseconds only after the fact.
 *
 * Reading the TSC (or the ARM virtual counter) costs a few cycles, where even the vDSO
 * clock_gettime costs tens of ns and may fall back to a system call on some VMs. Ticks
 * are mapped to CLOCK_MONOTONIC nanoseconds by a line through two (ticks, ns) pairs
 * taken at start and stop (see tick_anchor). */
#ifndef FRAMEHOOK_PROFILER_CLOCK_H
#define FRAMEHOOK_PROFILER_CLOCK_H

#include <stdint.h>
#include <time.h>

/* Build-time alternatives, for measuring what the clock costs (see BENCHMARKS.md):
 * -DFH_CLOCK_RDTSCP, -DFH_CLOCK_MONOTONIC (clock_gettime through the vDSO), and
 * -DFH_CLOCK_COUNTER (no clock at all: an event counter; durations are meaningless). */
#if defined(FH_CLOCK_COUNTER)
#define FH_CLOCK_NAME "counter"
#pragma GCC visibility push(hidden) /* internal to the extension: see profiler.h */
extern uint64_t fh_counter; /* (profile.c) */
#pragma GCC visibility pop
static inline uint64_t fh_ticks(void) { return fh_counter++; }
#elif defined(FH_CLOCK_RDTSCP) && (defined(__x86_64__) || defined(__i386__))
#include <x86intrin.h>
#define FH_CLOCK_NAME "tscp"
static inline uint64_t fh_ticks(void) {
    unsigned aux;
    return (uint64_t)__rdtscp(&aux);
}
#elif defined(FH_CLOCK_MONOTONIC)
#define FH_CLOCK_NAME "monotonic"
#define FH_TICKS_ARE_NS 1
#elif (defined(__x86_64__) || defined(__i386__)) && (defined(__GNUC__) || defined(__clang__))
#include <x86intrin.h>
#define FH_CLOCK_NAME "tsc"
static inline uint64_t fh_ticks(void) { return (uint64_t)__rdtsc(); }
#elif defined(__aarch64__) && (defined(__GNUC__) || defined(__clang__))
#define FH_CLOCK_NAME "cntvct"
static inline uint64_t fh_ticks(void) {
    uint64_t v;
    __asm__ __volatile__("mrs %0, cntvct_el0" : "=r"(v));
    return v;
}
#else
#define FH_CLOCK_NAME "monotonic"
#define FH_TICKS_ARE_NS 1
#endif

static inline int64_t fh_monotonic_ns(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

#ifdef FH_TICKS_ARE_NS
static inline uint64_t fh_ticks(void) { return (uint64_t)fh_monotonic_ns(); }
#endif

/* A (ticks, ns) pair read as close together as the two clocks allow: the ns read is
 * bracketed by two tick reads and paired with their midpoint. */
static inline void fh_tick_anchor(uint64_t *ticks, int64_t *ns) {
    uint64_t a = fh_ticks();
    int64_t n = fh_monotonic_ns();
    uint64_t b = fh_ticks();
    *ticks = a + (b - a) / 2;
    *ns = n;
}

#endif
