/*
 * common/timing.h — the timing engine: clocks, warm-up, calibration, samples.
 *
 * Owns: reading CLOCK_MONOTONIC (ns), the time-stamp counter, this thread's
 * CPU time and involuntary context switches (Linux getrusage RUSAGE_THREAD;
 * zeros elsewhere), warming a kernel up, calibrating how many operations make
 * one sample last at least a minimum time, taking one sample, and the canary.
 * Rounds and their statistics are the caller's (the Python layer interleaves
 * the points of a sweep sample by sample). It knows nothing of ciphers or
 * Python: callers hand it a function that runs n operations, and call it
 * without the GIL. Thread-safe (no state but the caller's pcb_slicer).
 * Units: ns; TSC ticks are reference ticks at a constant rate, not core cycles.
 *
 * Slices (Ctrl-C within a fraction of a second in a long sample): with a
 * pcb_slicer, warm-up, calibration and samples run their n operations as
 * consecutive calls of fn ("slices") sized to last about slice_ns each, and
 * call stop() between slices. Every clock (wall, TSC, thread CPU time,
 * context switches) is read around each slice and summed, so the slice
 * boundaries and stop() lie outside the timed region: a sample times the
 * same n operations; what it adds is one fn call per slice (for a stream
 * kernel, one context reset) -- with slices of slice_ns (100 ms in the
 * Python layer) against operations of at most a second that is <= 1e-5 of
 * the time. stop() returning nonzero cuts the call; `done` says how many
 * operations ran.
 */
#ifndef PCB_COMMON_TIMING_H
#define PCB_COMMON_TIMING_H

#include <stddef.h>
#include <stdint.h>

/*
 * Runs n operations; returns 0, or -1 after recording its own error.
 * A function whose operations need untimed set-up between them (deleting a
 * file before each cold open, say) times itself: it sets *self_ns to the
 * nanoseconds spent in the operations proper. Others leave it alone and the
 * engine's clock reads around the call count.
 */
typedef int (*pcb_run_fn)(void *arg, uint64_t n, uint64_t *self_ns);

/* One sample: `iterations` operations timed together. */
typedef struct {
    uint64_t elapsed_ns; /* wall clock (CLOCK_MONOTONIC) of the timed operations */
    uint64_t tsc_ticks;  /* time-stamp counter over the same span; 0 without a TSC */
    uint64_t cpu_ns;     /* this thread's CPU time over the call (0 if unknown) */
    uint64_t nivcsw;     /* involuntary context switches of this thread during the call */
    uint64_t call_ns;    /* wall clock of the whole call (= elapsed_ns unless self-timed) */
} pcb_sample;

/* How a call is cut into slices (see the top). NULL: one call of fn, no checks. */
typedef struct {
    uint64_t slice_ns;          /* wall time a slice aims at (0: one slice) */
    int (*stop)(void *stop_arg); /* between slices, outside the clocks; nonzero stops */
    void *stop_arg;
    double ns_per_op;           /* wall ns per operation seen last (0: unknown): sizes
                                 * the first slice; updated by every call */
    uint64_t done;              /* operations the last call ran (< n when stopped) */
    uint64_t slices;            /* slices the last call ran */
    pcb_sample last;            /* the last call that ran to the end (calibration: its */
    uint64_t last_n;            /* final, longest call), and its operations (0: none) */
} pcb_slicer;

/* What warm-up, calibration and samples return when stop() cut them. */
#define PCB_TIMING_STOPPED 1


uint64_t pcb_clock_ns(void);

/* 1 if the CPU has a fixed-rate cycle counter we read: x86's invariant TSC,
 * aarch64's CNTVCT_EL0 (the generic timer, CNTFRQ_EL0 ticks per second). */
int pcb_tsc_available(void);

/* 1 if pcb_sample.nivcsw counts (Linux RUSAGE_THREAD); 0: always 0 here. */
int pcb_timing_has_nivcsw(void);

/* "tsc", "cntvct_el0", or "" without one. */
const char *pcb_tsc_name(void);

/* The counter's ticks per second where the architecture says (aarch64's
 * CNTFRQ_EL0), else 0. */
uint64_t pcb_tsc_hz(void);

/* Runs fn for at least warmup_ns (at least one call of one operation):
 * caches, branch predictors, page faults, the CPU's clock. 0, -1 if fn
 * failed, or PCB_TIMING_STOPPED. sl may be NULL (here and below). */
int pcb_timing_warmup(pcb_run_fn fn, void *arg, uint64_t warmup_ns, pcb_slicer *sl);

/* The operation count that makes one call last at least min_time_ns (and
 * not much more), into *iterations. 0, -1 if fn failed, or PCB_TIMING_STOPPED. */
int pcb_timing_calibrate(pcb_run_fn fn, void *arg, uint64_t min_time_ns, uint64_t *iterations,
                         pcb_slicer *sl);

/* One sample of n operations (in slices with sl; every field the sum over
 * the slices). cpu_ns and nivcsw cover the calls of fn: for a self-timed fn
 * (see pcb_run_fn) compare them with call_ns, not elapsed_ns. 0, -1 if fn
 * failed, or PCB_TIMING_STOPPED (out then covers sl->done operations). */
int pcb_timing_sample(pcb_run_fn fn, void *arg, uint64_t n, pcb_sample *out, pcb_slicer *sl);

/* The canary: n additions in one dependent chain (about one core cycle each
 * when the core runs at full speed), as one sample. A round whose canary runs
 * slower than the best this process has seen ran on a slowed machine (host
 * contention, frequency drop) whatever the kernel's own numbers say. */
void pcb_timing_canary(uint64_t n, pcb_sample *out);

#endif /* PCB_COMMON_TIMING_H */
