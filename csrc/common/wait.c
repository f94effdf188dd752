/*
 * common/wait.c — the embedder's wait hooks (see wait.h).
 */
#define _GNU_SOURCE
#include "common/wait.h"

#include <errno.h>
#include <stddef.h>
#include <time.h>

static pcb_wait_hooks hooks;

void pcb_wait_set_hooks(const pcb_wait_hooks *h)
{
    hooks = *h;
}

void *pcb_wait_begin(void)
{
    return hooks.begin != NULL ? hooks.begin() : NULL;
}

void pcb_wait_end(void *token)
{
    if (token != NULL && hooks.end != NULL)
        hooks.end(token);
}

int pcb_wait_interrupted(void)
{
    return hooks.interrupted != NULL && hooks.interrupted();
}

void pcb_wait_deadline(struct timespec *until, int monotonic, long ns)
{
    clock_gettime(monotonic ? CLOCK_MONOTONIC : CLOCK_REALTIME, until);
    until->tv_nsec += ns;
    if (until->tv_nsec >= 1000000000L) {
        until->tv_sec++;
        until->tv_nsec -= 1000000000L;
    }
}

int pcb_wait_cond_slice(pthread_cond_t *c, pthread_mutex_t *m)
{
    struct timespec until;
    pcb_wait_deadline(&until, 0, PCB_WAIT_CHECK_NS);
    return pthread_cond_timedwait(c, m, &until) == ETIMEDOUT;
}
