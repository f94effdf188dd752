/*
 * common/parallel.h — one timed kernel run on N threads at once.
 *
 * Owns: starting N-1 threads per call (the caller is the first of the N),
 * releasing them together at a barrier, and reading each one's elapsed time,
 * as `openssl speed -multi` runs N copies. The kernels are the caller's: N
 * independent arguments to one pcb_run_fn, none shared. It knows nothing of
 * ciphers or Python and is called without the GIL. Thread safety: one
 * pcb_parallel per call at a time (the Kernel that owns it serialises).
 * Units: ns.
 */
#ifndef PCB_COMMON_PARALLEL_H
#define PCB_COMMON_PARALLEL_H

#include <stdint.h>

#include "common/timing.h"

#define PCB_MAX_THREADS 256

typedef struct {
    pcb_run_fn fn;
    void **args;           /* n_threads independent arguments */
    unsigned n_threads;
    uint64_t thread_ns[PCB_MAX_THREADS]; /* the last call: each thread's n operations */
    uint64_t stagger_ns;   /* the last call: the latest thread's start after the earliest's */
    int failed;            /* the last call: index of a thread whose fn failed, or -1 */
} pcb_parallel;

/*
 * A pcb_run_fn over a pcb_parallel: every thread runs fn(args[i], n, NULL)
 * from the same instant; *self_ns gets the wall time from that instant to
 * the last thread's end (so the engine's samples time all N * n operations).
 * 0, or -1 if a thread could not start (errno) or some fn failed (failed set).
 */
int pcb_parallel_run(void *p, uint64_t n, uint64_t *self_ns);

#endif /* PCB_COMMON_PARALLEL_H */
