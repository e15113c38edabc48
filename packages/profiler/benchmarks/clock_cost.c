/* Per-event cost of candidate clocks inside a loop shaped like the tracer's append
 * (read a clock, store a 16-byte event into a 2048-slot block), interleaved rounds,
 * medians. Also: how stale a "software clock" (a thread publishing rdtsc into a shared
 * word) is when a reader uses it. x86-64 only. Figures: BENCHMARKS.md.
 *
 *     gcc -O2 -o clock_cost clock_cost.c -lpthread && ./clock_cost [rounds]
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <x86intrin.h>

typedef struct { uint64_t t; uint32_t key, kind; } ev_t;
static ev_t block[2048];
static volatile uint64_t soft_now;
static volatile int stop_writer;
static uint64_t counter;

static inline int64_t now_ns(void) {
    struct timespec ts; clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}
static inline uint64_t c_counter(void) { return counter++; }
static inline uint64_t c_rdtsc(void) { return __rdtsc(); }
static inline uint64_t c_rdtscp(void) { unsigned a; return __rdtscp(&a); }
static inline uint64_t c_mono(void) { return (uint64_t)now_ns(); }
static inline uint64_t c_coarse(void) {
    struct timespec ts; clock_gettime(CLOCK_MONOTONIC_COARSE, &ts);
    return (uint64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}
static inline uint64_t c_soft(void) { return __atomic_load_n(&soft_now, __ATOMIC_RELAXED); }

#define N 2000000
#define LOOP(name, fn) static double run_##name(void) { \
    int64_t a = now_ns(); \
    for (uint32_t i = 0; i < N; i++) { ev_t *e = &block[i & 2047]; e->t = fn(); e->key = i; e->kind = 1; __asm__ __volatile__("" ::: "memory"); } \
    __asm__ __volatile__("" ::: "memory"); \
    return (double)(now_ns() - a) / N; }
LOOP(counter, c_counter) LOOP(rdtsc, c_rdtsc) LOOP(rdtscp, c_rdtscp) LOOP(mono, c_mono)
LOOP(coarse, c_coarse) LOOP(soft, c_soft)

static void *writer_spin(void *arg) { while (!stop_writer) soft_now = __rdtsc(); return NULL; }
static void *writer_sleep(void *arg) {
    struct timespec d = {0, 1000};
    while (!stop_writer) { soft_now = __rdtsc(); nanosleep(&d, NULL); }
    return NULL;
}

static int cmp(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b; return (x > y) - (x < y);
}
static double median(double *v, int n) { qsort(v, n, sizeof *v, cmp); return v[n / 2]; }

/* staleness of the software clock seen by a reader, in ns: median and 99th percentile */
static void staleness(void *(*writer)(void *), const char *label, double ns_per_tick) {
    pthread_t th; stop_writer = 0; soft_now = __rdtsc();
    pthread_create(&th, NULL, writer, NULL);
    struct timespec warm = {0, 20000000}; nanosleep(&warm, NULL);
    enum { S = 200000 };
    static double st[S];
    for (int i = 0; i < S; i++) {
        uint64_t s = c_soft(), t = __rdtsc();
        st[i] = t > s ? (double)(t - s) * ns_per_tick : 0;
        for (volatile int k = 0; k < 50; k++) {}
    }
    double r[15]; for (int k = 0; k < 15; k++) r[k] = run_soft();
    stop_writer = 1; pthread_join(th, NULL);
    qsort(st, S, sizeof *st, cmp);
    printf("software clock (%s): read %.1f ns (median of 15); staleness median %.0f ns, p99 %.0f ns, max %.0f ns\n",
           label, median(r, 15), st[S / 2], st[S * 99 / 100], st[S - 1]);
}

int main(int argc, char **argv) {
    int rounds = argc > 1 ? atoi(argv[1]) : 21;
    uint64_t t0 = __rdtsc(); int64_t n0 = now_ns();
    struct timespec d = {0, 50000000}; nanosleep(&d, NULL);
    double ns_per_tick = (double)(now_ns() - n0) / (double)(__rdtsc() - t0);
    const char *names[] = {"counter (a global increment)", "rdtsc", "rdtscp", "clock_gettime MONOTONIC (vDSO)",
                           "clock_gettime MONOTONIC_COARSE", "shared word, no writer (a load)"};
    double (*fns[])(void) = {run_counter, run_rdtsc, run_rdtscp, run_mono, run_coarse, run_soft};
    enum { K = 6 };
    double res[K][64];
    for (int r = 0; r < rounds; r++)
        for (int k = 0; k < K; k++) res[k][r] = fns[k]();
    double base = median(res[5], rounds); /* the append with a plain load: no clock at all */
    printf("%d interleaved rounds of %d appends, median ns per append (and minus the plain-load loop):\n", rounds, N);
    for (int k = 0; k < K; k++) {
        double m = median(res[k], rounds);
        printf("  %-34s %6.2f  (%+.2f)\n", names[k], m, m - base);
    }
    struct timespec res_c; clock_getres(CLOCK_MONOTONIC_COARSE, &res_c);
    printf("CLOCK_MONOTONIC_COARSE resolution: %ld ns\n", res_c.tv_nsec);
    staleness(writer_spin, "writer thread spinning on rdtsc: burns a core", ns_per_tick);
    staleness(writer_sleep, "writer thread sleeping 1 us between updates", ns_per_tick);
    return 0;
}
