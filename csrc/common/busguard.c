/*
 * common/busguard.c — the SIGBUS handler and the thread's recovery point
 * (see busguard.h).
 */
#define _GNU_SOURCE
#include "common/busguard.h"

#include <pthread.h>
#include <signal.h>
#include <stddef.h>
#include <string.h>

#if defined(__ELF__) && (defined(__GNUC__) || defined(__clang__))
#define PCB_BUS_TLS_IE __attribute__((tls_model("initial-exec")))
#else
#define PCB_BUS_TLS_IE
#endif
static __thread pcb_bus_guard *armed PCB_BUS_TLS_IE;
static struct sigaction prev; /* written under mu, before ours is installed */
static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;

/* The default action: a sent signal is raised again (SA_NODEFER: delivered
 * at once); a fault is left to re-run and kill with its own address. */
static void to_default(int sig, const siginfo_t *info)
{
    struct sigaction dfl;
    memset(&dfl, 0, sizeof dfl);
    dfl.sa_handler = SIG_DFL;
    sigemptyset(&dfl.sa_mask);
    sigaction(sig, &dfl, NULL);
    if (info == NULL || info->si_code <= 0)
        raise(sig);
}

static void handler(int sig, siginfo_t *info, void *ctx)
{
    pcb_bus_guard *g = armed;
    int fault = info != NULL && info->si_code > 0;
    if (g != NULL && fault && g->owns(g->ctx, info->si_addr)) {
        armed = NULL;
        siglongjmp(g->env, 1);
    }
    const struct sigaction *p = &prev;
    if (p->sa_flags & SA_SIGINFO) {
        if (p->sa_sigaction != NULL) {
            p->sa_sigaction(sig, info, ctx);
            return;
        }
    } else if (p->sa_handler == SIG_IGN && !fault) {
        return; /* ignored, as before (a fault cannot be ignored: the kernel kills) */
    } else if (p->sa_handler != SIG_DFL && p->sa_handler != SIG_IGN) {
        p->sa_handler(sig);
        return;
    }
    to_default(sig, info);
}

void pcb_bus_install(void)
{
    pthread_mutex_lock(&mu);
    struct sigaction cur;
    if (sigaction(SIGBUS, NULL, &cur) == 0 && !((cur.sa_flags & SA_SIGINFO) && cur.sa_sigaction == handler)) {
        struct sigaction sa;
        memset(&sa, 0, sizeof sa);
        sa.sa_sigaction = handler;
        sa.sa_flags = SA_SIGINFO | SA_ONSTACK | SA_NODEFER | SA_RESTART;
        sigemptyset(&sa.sa_mask);
        prev = cur;
        sigaction(SIGBUS, &sa, NULL);
    }
    pthread_mutex_unlock(&mu);
}

void pcb_bus_arm(pcb_bus_guard *g)
{
    armed = g;
    __atomic_signal_fence(__ATOMIC_SEQ_CST);
}

void pcb_bus_disarm(void)
{
    __atomic_signal_fence(__ATOMIC_SEQ_CST);
    armed = NULL;
}
