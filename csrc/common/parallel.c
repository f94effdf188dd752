/*
 * common/parallel.c — N threads released together, each timing its own run
 * of a kernel (see parallel.h). The release is a flag under a mutex and a
 * condition: a thread that fails to start aborts the others cleanly.
 */
#define _POSIX_C_SOURCE 200809L
#include "common/parallel.h"

#include <pthread.h>

typedef struct {
    pthread_mutex_t lock;
    pthread_cond_t cond;
    int go; /* 0 wait, 1 run, -1 abort */
} gate;

typedef struct {
    pcb_parallel *par;
    gate *g;
    unsigned index;
    uint64_t n, start, end;
    int rc;
} worker;

static void run(worker *w)
{
    w->start = pcb_clock_ns();
    w->rc = w->par->fn(w->par->args[w->index], w->n, NULL);
    w->end = pcb_clock_ns();
}

static void *work(void *p)
{
    worker *w = p;
    pthread_mutex_lock(&w->g->lock);
    while (w->g->go == 0)
        pthread_cond_wait(&w->g->cond, &w->g->lock);
    int go = w->g->go;
    pthread_mutex_unlock(&w->g->lock);
    if (go > 0)
        run(w);
    else
        w->rc = -1;
    return NULL;
}

int pcb_parallel_run(void *p, uint64_t n, uint64_t *self_ns)
{
    pcb_parallel *par = p;
    unsigned count = par->n_threads, started;
    worker w[PCB_MAX_THREADS];
    pthread_t tid[PCB_MAX_THREADS];
    gate g = {PTHREAD_MUTEX_INITIALIZER, PTHREAD_COND_INITIALIZER, 0};

    par->failed = -1;
    if (count < 1 || count > PCB_MAX_THREADS)
        return -1;
    for (unsigned i = 0; i < count; i++)
        w[i] = (worker){par, &g, i, n, 0, 0, 0};
    for (started = 1; started < count; started++)
        if (pthread_create(&tid[started], NULL, work, &w[started]) != 0)
            break;
    pthread_mutex_lock(&g.lock);
    g.go = started == count ? 1 : -1;
    pthread_cond_broadcast(&g.cond);
    pthread_mutex_unlock(&g.lock);
    if (started == count)
        run(&w[0]);
    for (unsigned i = 1; i < started; i++)
        pthread_join(tid[i], NULL);
    pthread_cond_destroy(&g.cond);
    pthread_mutex_destroy(&g.lock);
    if (started < count)
        return -1;
    uint64_t first = w[0].start, last = w[0].end, latest = w[0].start;
    for (unsigned i = 0; i < count; i++) {
        par->thread_ns[i] = w[i].end - w[i].start;
        if (w[i].start < first)
            first = w[i].start;
        if (w[i].start > latest)
            latest = w[i].start;
        if (w[i].end > last)
            last = w[i].end;
        if (w[i].rc != 0 && par->failed < 0)
            par->failed = (int)i;
    }
    par->stagger_ns = latest - first;
    if (self_ns)
        *self_ns = last - first;
    return par->failed < 0 ? 0 : -1;
}
