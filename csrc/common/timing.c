/*
 * common/timing.c — the timing engine (see pcb_timing.h).
 *
 * Method: warm up for warmup_ns (at least one call), then grow the
 * operation count geometrically until one call lasts min_time_ns, then scale
 * it so a sample lands just above min_time_ns, then time `repeats` samples of
 * that many operations each. Only fn's work sits between the clock reads.
 */
#define _GNU_SOURCE
#include "common/timing.h"

#include <time.h>

#if defined(__x86_64__) || defined(__i386__)
#include <cpuid.h>
#include <x86intrin.h>
#define PCB_HAVE_TSC 1
#else
#define PCB_HAVE_TSC 0
#endif

uint64_t pcb_clock_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

int pcb_tsc_available(void)
{
#if PCB_HAVE_TSC
    unsigned a, b, c, d;
    /* CPUID 0x80000007 EDX bit 8: the TSC ticks at a constant rate. */
    if (__get_cpuid(0x80000007, &a, &b, &c, &d))
        return (d >> 8) & 1;
#endif
    return 0;
}

static inline uint64_t read_tsc(int have_tsc)
{
#if PCB_HAVE_TSC
    if (have_tsc) {
        /* lfence keeps earlier instructions from drifting past the read. */
        _mm_lfence();
        uint64_t t = __rdtsc();
        _mm_lfence();
        return t;
    }
#endif
    (void)have_tsc;
    return 0;
}

#define NOT_SELF_TIMED UINT64_MAX

/* One call of fn over n operations, wall-clock. Calibration sizes samples by
 * wall time even for self-timed functions: their untimed work (waiting for a
 * write to become durable, say) may dwarf the timed part, and a sample must
 * not run for hours because the timed part is short. */
static int timed_call(pcb_run_fn fn, void *arg, uint64_t n, uint64_t *dt)
{
    uint64_t self = NOT_SELF_TIMED;
    uint64_t t0 = pcb_clock_ns();
    int rc = fn(arg, n, &self);
    *dt = pcb_clock_ns() - t0;
    return rc;
}

int pcb_time_kernel(pcb_run_fn fn, void *arg, const pcb_timing_params *params,
                    pcb_timing_result *result)
{
    const int have_tsc = pcb_tsc_available();
    const uint64_t min_ns = params->min_time_ns ? params->min_time_ns : 1;
    uint64_t n = 1, t0, dt;

    /* Warm-up: caches, branch predictors, page faults, CPU frequency. */
    t0 = pcb_clock_ns();
    do {
        if (timed_call(fn, arg, 1, &dt) != 0)
            return -1;
    } while (pcb_clock_ns() - t0 < params->warmup_ns);

    /* Calibration: find n with one call of n operations >= min_ns. */
    for (;;) {
        if (timed_call(fn, arg, n, &dt) != 0)
            return -1;
        if (dt >= min_ns)
            break;
        /* Aim for 1.2x min_ns, growing at most 10x a step (timer noise on tiny dt). */
        uint64_t grow = dt ? (uint64_t)((double)n * 1.2 * (double)min_ns / (double)dt) : n * 10;
        if (grow > n * 10)
            grow = n * 10;
        n = grow > n ? grow : n + 1;
    }
    /* The last call already lasted >= min_ns with n; trim toward 1.05x min_ns. */
    if (dt > min_ns) {
        uint64_t fit = (uint64_t)((double)n * 1.05 * (double)min_ns / (double)dt);
        if (fit >= 1 && fit < n)
            n = fit;
    }

    result->iterations = n;
    result->repeats = params->repeats;
    for (uint32_t i = 0; i < params->repeats; i++) {
        uint64_t self = NOT_SELF_TIMED;
        uint64_t c0 = read_tsc(have_tsc);
        t0 = pcb_clock_ns();
        int rc = fn(arg, n, &self);
        dt = pcb_clock_ns() - t0;
        uint64_t c1 = read_tsc(have_tsc);
        if (rc != 0)
            return -1;
        if (self != NOT_SELF_TIMED) {
            /* Scale the ticks to the part fn timed itself. */
            c1 = c0 + (uint64_t)((double)(c1 - c0) * ((double)self / (double)(dt ? dt : 1)));
            dt = self;
        }
        result->elapsed_ns[i] = dt;
        result->tsc_ticks[i] = c1 - c0;
    }
    return 0;
}
