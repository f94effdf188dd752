/*
 * common/wait.h — the embedder's hooks around a thread's wait, and the
 * question a long wait asks between two slices: give up?
 *
 * Owns: three process-wide hooks the embedder sets once, before any store
 * opens (py/ sets them at import: release the GIL around a wait, and run
 * Python's signal handlers between two slices of a long one):
 *   begin()        before blocking: a token (NULL: nothing to undo)
 *   end(token)     after the wait, with begin's token (only if non-NULL)
 *   interrupted()  between two slices of a long wait (no lock of the
 *                  waiter's held but its own): nonzero to give up. The
 *                  embedder keeps the reason (py/: the signal handler's
 *                  exception, KeyboardInterrupt, set on the caller's thread);
 *                  the waiter fails with PCB_E_INTERRUPTED and undoes nothing
 *                  more than a timeout would.
 * Every hook may be NULL (plain C, the fuzzers: nothing to do, never
 * interrupted). The layers above call pcb_wait_begin / _end / _interrupted,
 * never the embedder: the store does not call up into py/, and py/ installs
 * its hooks here, below both.
 *
 * A long wait sleeps in slices of at most PCB_WAIT_SLICE_NS and asks
 * interrupted() at least every PCB_WAIT_CHECK_NS (and at once after a
 * signal woke its sleep), so Ctrl-C acts within about 0.1 s.
 *
 * Thread safety: the hooks are written once before any other thread uses
 * them and only read afterwards; each hook runs on the waiting thread.
 * Units: ns.
 */
#ifndef PCB_COMMON_WAIT_H
#define PCB_COMMON_WAIT_H

#include <pthread.h>
#include <stdint.h>
#include <time.h>

#define PCB_WAIT_SLICE_NS 100000000L /* the longest sleep of a long wait: 0.1 s */
#define PCB_WAIT_CHECK_NS 50000000L  /* interrupted() asked at least this often */

typedef struct {
    void *(*begin)(void);
    void (*end)(void *token);
    int (*interrupted)(void);
} pcb_wait_hooks;

/* Sets the hooks (copied; process-wide; once, before any wait). */
void pcb_wait_set_hooks(const pcb_wait_hooks *hooks);

/* The hooks, or nothing where unset. */
void *pcb_wait_begin(void);
void pcb_wait_end(void *token);
int pcb_wait_interrupted(void);

/* *until = now + ns (ns < 1 s) on CLOCK_MONOTONIC (monotonic) or
 * CLOCK_REALTIME: a slice's deadline for pthread_cond_timedwait, on the
 * clock the condition was made with. */
void pcb_wait_deadline(struct timespec *until, int monotonic, long ns);

/* One slice of a long wait on a condition variable (m held, and held again
 * on return): at most PCB_WAIT_CHECK_NS on c (a CLOCK_REALTIME condition,
 * the default attribute). 1 if the slice ran out, 0 if c was signalled (or
 * woke spuriously); the caller checks its predicate either way, and asks
 * pcb_wait_interrupted() (without m) after a slice that ran out. */
int pcb_wait_cond_slice(pthread_cond_t *c, pthread_mutex_t *m);

#endif /* PCB_COMMON_WAIT_H */
