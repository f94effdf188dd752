/*
 * common/timing.h — the timing engine: clocks, warm-up, calibration, samples.
 *
 * Owns: reading CLOCK_MONOTONIC (ns) and the time-stamp counter, and the loop
 * that warms a kernel up, calibrates how many operations make one sample last
 * at least `min_time_ns`, then takes `repeats` samples. It knows nothing of
 * ciphers or Python: callers hand it a function that runs n operations, and
 * call it without the GIL. TSC ticks are reference ticks at a constant rate,
 * not core cycles (the core may run faster or slower than the TSC).
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

typedef struct {
    uint64_t min_time_ns; /* a sample lasts at least this long */
    uint64_t warmup_ns;   /* run the kernel this long before calibrating */
    uint32_t repeats;     /* number of samples */
} pcb_timing_params;

typedef struct {
    uint64_t iterations;  /* operations per sample */
    uint32_t repeats;
    uint64_t *elapsed_ns; /* [repeats], caller-allocated */
    uint64_t *tsc_ticks;  /* [repeats], caller-allocated; zeros without a TSC */
} pcb_timing_result;

uint64_t pcb_clock_ns(void);

/* 1 if the CPU has an invariant time-stamp counter we read. */
int pcb_tsc_available(void);

/* Calibrates and samples `fn`; 0 on success, -1 if fn failed. Never holds
 * Python objects: call it with the GIL released. */
int pcb_time_kernel(pcb_run_fn fn, void *arg, const pcb_timing_params *params,
                    pcb_timing_result *result);

#endif /* PCB_COMMON_TIMING_H */
