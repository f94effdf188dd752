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
 * without the GIL. Thread-safe (no state). Units: ns; TSC ticks are
 * reference ticks at a constant rate, not core cycles.
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
 * caches, branch predictors, page faults, the CPU's clock. 0, or -1 if fn failed. */
int pcb_timing_warmup(pcb_run_fn fn, void *arg, uint64_t warmup_ns);

/* The operation count that makes one call last at least min_time_ns (and
 * not much more), into *iterations. 0, or -1 if fn failed. */
int pcb_timing_calibrate(pcb_run_fn fn, void *arg, uint64_t min_time_ns, uint64_t *iterations);

/* One sample of n operations. cpu_ns and nivcsw cover the whole call: for a
 * self-timed fn (see pcb_run_fn) compare them with call_ns, not elapsed_ns.
 * 0, or -1 if fn failed. */
int pcb_timing_sample(pcb_run_fn fn, void *arg, uint64_t n, pcb_sample *out);

/* The canary: n additions in one dependent chain (about one core cycle each
 * when the core runs at full speed), as one sample. A round whose canary runs
 * slower than the best this process has seen ran on a slowed machine (host
 * contention, frequency drop) whatever the kernel's own numbers say. */
void pcb_timing_canary(uint64_t n, pcb_sample *out);

#endif /* PCB_COMMON_TIMING_H */
