/*
 * common/timing.c — the timing engine (see timing.h).
 *
 * Method: warm up for warmup_ns (at least one call), then grow the
 * operation count geometrically until one call lasts min_time_ns, then scale
 * it so a sample lands just above min_time_ns. A sample times that many
 * operations; only fn's work sits between the clock reads. With a slicer the
 * operations run as slices, every clock summed over the slices only (the
 * boundaries, where stop() runs, are untimed).
 */
#define _GNU_SOURCE
#include "common/timing.h"

#include <sys/resource.h>
#include <time.h>

#if defined(__x86_64__) || defined(__i386__)
#include <cpuid.h>
#include <x86intrin.h>
#define PCB_HAVE_TSC 1
#elif defined(__aarch64__)
/* aarch64's "TSC": the generic timer's virtual count, CNTVCT_EL0. Like an
 * invariant TSC it ticks at a fixed rate (CNTFRQ_EL0, commonly 19.2 MHz to
 * 1 GHz: reference ticks, not core cycles) whatever the core's clock does;
 * Linux lets EL0 read it (the vDSO's clock does). */
#define PCB_HAVE_TSC 2
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
#if PCB_HAVE_TSC == 2
    return 1;
#elif PCB_HAVE_TSC
    unsigned a, b, c, d;
    /* CPUID 0x80000007 EDX bit 8: the TSC ticks at a constant rate. */
    if (__get_cpuid(0x80000007, &a, &b, &c, &d))
        return (d >> 8) & 1;
#endif
    return 0;
}

/* Involuntary context switches per thread: Linux's getrusage(RUSAGE_THREAD).
 * Elsewhere (and with -DPCB_FORCE_FALLBACKS) there is no per-thread count, so
 * nivcsw stays 0 and the warnings that read it cannot fire: pcb_timing_has_nivcsw()
 * says so, and the fingerprint records it. */
#if defined(__linux__) && defined(RUSAGE_THREAD) && !defined(PCB_FORCE_FALLBACKS)
#define PCB_HAVE_THREAD_SWITCHES 1
#else
#define PCB_HAVE_THREAD_SWITCHES 0
#endif

int pcb_timing_has_nivcsw(void)
{
    return PCB_HAVE_THREAD_SWITCHES;
}

const char *pcb_tsc_name(void)
{
    return PCB_HAVE_TSC == 2 ? "cntvct_el0" : PCB_HAVE_TSC && pcb_tsc_available() ? "tsc" : "";
}

uint64_t pcb_tsc_hz(void)
{
#if PCB_HAVE_TSC == 2
    uint64_t f;
    __asm__ volatile("mrs %0, cntfrq_el0" : "=r"(f));
    return f;
#else
    return 0; /* x86: the TSC's rate is not architecturally readable */
#endif
}

static inline uint64_t read_tsc(int have_tsc)
{
#if PCB_HAVE_TSC == 2
    if (have_tsc) {
        /* isb keeps the read from being taken early or late (ARM ARM D11.2.2). */
        uint64_t t;
        __asm__ volatile("isb\n\tmrs %0, cntvct_el0\n\tisb" : "=r"(t) : : "memory");
        return t;
    }
#elif PCB_HAVE_TSC
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

/* This thread's CPU time (ns) and involuntary context switches so far. */
static void thread_usage(uint64_t *cpu_ns, uint64_t *nivcsw)
{
#ifdef CLOCK_THREAD_CPUTIME_ID
    struct timespec ts;
    *cpu_ns = clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts) == 0
              ? (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec : 0;
#else
    *cpu_ns = 0;
#endif
    *nivcsw = 0;
#if PCB_HAVE_THREAD_SWITCHES
    struct rusage ru;
    if (getrusage(RUSAGE_THREAD, &ru) == 0)
        *nivcsw = (uint64_t)ru.ru_nivcsw;
#endif
}

/* One call of fn over n operations: every clock read around it. */
static int sample_once(pcb_run_fn fn, void *arg, uint64_t n, pcb_sample *out)
{
    const int have_tsc = pcb_tsc_available();
    uint64_t self = NOT_SELF_TIMED, cpu0, cpu1, sw0, sw1;
    thread_usage(&cpu0, &sw0);
    uint64_t c0 = read_tsc(have_tsc);
    uint64_t t0 = pcb_clock_ns();
    int rc = fn(arg, n, &self);
    uint64_t dt = pcb_clock_ns() - t0;
    uint64_t c1 = read_tsc(have_tsc);
    thread_usage(&cpu1, &sw1);
    if (rc != 0)
        return -1;
    out->call_ns = dt;
    out->cpu_ns = cpu1 >= cpu0 ? cpu1 - cpu0 : 0;
    out->nivcsw = sw1 >= sw0 ? sw1 - sw0 : 0;
    if (self != NOT_SELF_TIMED) {
        /* Scale the ticks to the part fn timed itself. */
        c1 = c0 + (uint64_t)((double)(c1 - c0) * ((double)self / (double)(dt ? dt : 1)));
        dt = self;
    }
    out->elapsed_ns = dt;
    out->tsc_ticks = c1 - c0;
    return 0;
}

/* The next slice's operation count: about slice_ns at the rate seen, growing
 * at most 16x a slice (a first slice of 1 operation says little). */
static uint64_t next_slice(const pcb_slicer *sl, uint64_t m)
{
    uint64_t cap = m > UINT64_MAX / 16 ? UINT64_MAX : m * 16;
    if (sl->ns_per_op <= 0.0)
        return cap;
    double want = (double)sl->slice_ns / sl->ns_per_op;
    uint64_t next = want < 1.0 ? 1 : want >= (double)cap ? cap : (uint64_t)want;
    return next;
}

int pcb_timing_sample(pcb_run_fn fn, void *arg, uint64_t n, pcb_sample *out, pcb_slicer *sl)
{
    if (sl == NULL || sl->slice_ns == 0) {
        int rc = sample_once(fn, arg, n, out);
        if (sl != NULL) {
            sl->done = rc == 0 ? n : 0;
            sl->slices = 1;
            if (rc == 0 && n) {
                sl->ns_per_op = (double)out->call_ns / (double)n;
                sl->last = *out;
                sl->last_n = n;
            }
        }
        return rc;
    }
    *out = (pcb_sample){0, 0, 0, 0, 0};
    sl->done = sl->slices = 0;
    uint64_t m = sl->ns_per_op > 0.0 ? next_slice(sl, UINT64_MAX / 16) : 1;
    for (;;) {
        pcb_sample s;
        if (m > n - sl->done)
            m = n - sl->done;
        if (sample_once(fn, arg, m, &s) != 0)
            return -1;
        out->elapsed_ns += s.elapsed_ns;
        out->tsc_ticks += s.tsc_ticks;
        out->cpu_ns += s.cpu_ns;
        out->nivcsw += s.nivcsw;
        out->call_ns += s.call_ns;
        sl->done += m;
        sl->slices++;
        sl->ns_per_op = (double)s.call_ns / (double)m;
        if (sl->done >= n) {
            sl->last = *out;
            sl->last_n = n;
            return 0;
        }
        /* The slice boundary: no clock of the sample runs here. */
        if (sl->stop != NULL && sl->stop(sl->stop_arg))
            return PCB_TIMING_STOPPED;
        m = next_slice(sl, m);
    }
}

/* Wall time of n operations (calibration sizes samples by wall time even for
 * self-timed functions: their untimed work -- waiting for a write to become
 * durable, say -- may dwarf the timed part, and a sample must not run for
 * hours because the timed part is short). 0, -1 or PCB_TIMING_STOPPED. */
static int timed_call(pcb_run_fn fn, void *arg, uint64_t n, uint64_t *dt, pcb_slicer *sl)
{
    pcb_sample s;
    int rc = pcb_timing_sample(fn, arg, n, &s, sl);
    *dt = rc == 0 ? s.call_ns : 0;
    return rc;
}

int pcb_timing_warmup(pcb_run_fn fn, void *arg, uint64_t warmup_ns, pcb_slicer *sl)
{
    uint64_t t0 = pcb_clock_ns(), checked = t0, dt, now;
    do {
        int rc = timed_call(fn, arg, 1, &dt, NULL);
        if (rc != 0)
            return rc;
        now = pcb_clock_ns();
        if (sl != NULL && sl->slice_ns && sl->stop != NULL && now - checked >= sl->slice_ns) {
            if (sl->stop(sl->stop_arg))
                return PCB_TIMING_STOPPED;
            checked = now;
        }
    } while (now - t0 < warmup_ns);
    return 0;
}

int pcb_timing_calibrate(pcb_run_fn fn, void *arg, uint64_t min_time_ns, uint64_t *iterations,
                         pcb_slicer *sl)
{
    const uint64_t min_ns = min_time_ns ? min_time_ns : 1;
    uint64_t n = 1, dt;
    for (;;) {
        int rc = timed_call(fn, arg, n, &dt, sl);
        if (rc != 0)
            return rc;
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
    *iterations = n;
    return 0;
}

void pcb_timing_canary(uint64_t n, pcb_sample *out)
{
    const int have_tsc = pcb_tsc_available();
    uint64_t cpu0, cpu1, sw0, sw1, x = 1;
    thread_usage(&cpu0, &sw0);
    uint64_t c0 = read_tsc(have_tsc);
    uint64_t t0 = pcb_clock_ns();
    for (uint64_t i = 0; i < n; i++) {
        x += i;
        __asm__ volatile("" : "+r"(x)); /* one dependent add per step, not folded */
    }
    uint64_t dt = pcb_clock_ns() - t0;
    uint64_t c1 = read_tsc(have_tsc);
    thread_usage(&cpu1, &sw1);
    out->elapsed_ns = out->call_ns = dt;
    out->tsc_ticks = c1 - c0;
    out->cpu_ns = cpu1 >= cpu0 ? cpu1 - cpu0 : 0;
    out->nivcsw = sw1 >= sw0 ? sw1 - sw0 : 0;
}
