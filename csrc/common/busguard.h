/*
 * common/busguard.h — SIGBUS from a mapped file turned into an error: a
 * recovery point per thread, armed around the loads and stores into a
 * MAP_SHARED mapping, that the SIGBUS handler jumps back to.
 *
 * Owns: the process's SIGBUS handler (installed over the previous one by
 * pcb_bus_install, which each user calls before arming; it puts itself back
 * on top when another was installed since) and the thread-local recovery
 * point. A load from or a store into a page that the file no longer backs
 * raises SIGBUS (another process truncated the file; or a file system that
 * cannot reserve blocks found the disk full). The handler jumps to the
 * faulting thread's armed point when the signal is a hardware fault
 * (si_code > 0) at an address the point's `owns` callback accepts; every
 * other SIGBUS goes where it went before: to the previous handler (called
 * with its own SA_SIGINFO convention: Python's faulthandler is one), or to
 * the default action (a fault re-runs and kills with its own address; a
 * sent signal is raised again). SA_ONSTACK (the alternate stack where one
 * is set), SA_NODEFER (the jump, sigsetjmp without the mask: no system
 * call per section, leaves SIGBUS unblocked).
 *
 * A guarded section's rules: only the mapping's bytes may fault (malloc
 * and OpenSSL never run ON a mapped page, so a jump never leaves them mid-
 * call holding their locks); whatever the section allocates must be
 * reachable for the fault path to free (a jump skips the section's own
 * frees); locals changed in the section are not read after a jump; `owns`
 * only compares addresses (it runs in the handler). Sections do not nest.
 *
 * Thread safety: the point is thread-local (initial-exec TLS on ELF, so the
 * handler's read is a plain load); a fault in a thread with nothing armed
 * chains, whatever other threads have armed. Residual risk: where TLS is
 * not initial-exec (non-ELF), the handler's first read of the variable in a
 * thread that never armed may allocate. A SIGBUS handler installed after
 * the last pcb_bus_install (signal.signal, faulthandler.enable) sits on top
 * until the next one.
 */
#ifndef PCB_COMMON_BUSGUARD_H
#define PCB_COMMON_BUSGUARD_H

#include <setjmp.h>

typedef struct {
    sigjmp_buf env;
    /* Whether addr is one of the section's mapped bytes (the handler's test). */
    int (*owns)(const void *ctx, const void *addr);
    const void *ctx;
} pcb_bus_guard;

/* Puts the handler on top of SIGBUS unless it is there. */
void pcb_bus_install(void);
/* Arms g for this thread / disarms (the calls are compiler barriers: no
 * access moves out of the section). */
void pcb_bus_arm(pcb_bus_guard *g);
void pcb_bus_disarm(void);

/* The recovery point, in the frame that stays alive through the section:
 *   pcb_bus_guard g;
 *   if (PCB_BUS_GUARD(g, owns, ctx)) { the fault path (disarmed) }
 *   else { pcb_bus_arm(&g); ... accesses ...; pcb_bus_disarm(); }  */
#define PCB_BUS_GUARD(g, owns_fn, ctx_ptr) \
    ((g).owns = (owns_fn), (g).ctx = (ctx_ptr), sigsetjmp((g).env, 0) != 0)

#endif /* PCB_COMMON_BUSGUARD_H */
