/*
 * common/mem.c — wiping frees and big allocations (see mem.h).
 */
#define _GNU_SOURCE
#include "common/mem.h"

#include <stdint.h>
#include <stdlib.h>
#include <sys/mman.h>

#include <openssl/crypto.h>

/* Older BSDs spell it MAP_ANON. */
#if !defined(MAP_ANONYMOUS) && defined(MAP_ANON)
#define MAP_ANONYMOUS MAP_ANON
#endif

void pcb_wipe_free(void *p, size_t n)
{
    if (p) {
        OPENSSL_cleanse(p, n);
        free(p);
    }
}

void *pcb_big_alloc(size_t n)
{
    if (n < PCB_BIG_ALLOC)
        return calloc(1, n);
    void *p = mmap(NULL, n, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (p == MAP_FAILED)
        return NULL;
#if defined(__linux__) && defined(MADV_HUGEPAGE) && !defined(PCB_FORCE_FALLBACKS)
    madvise(p, n, MADV_HUGEPAGE); /* a hint: failure changes nothing */
#endif
    return p;
}

void pcb_big_free(void *p, size_t n, int wipe)
{
    if (p == NULL)
        return;
    if (wipe)
        OPENSSL_cleanse(p, n);
    if (n < PCB_BIG_ALLOC)
        free(p);
    else
        munmap(p, n);
}

int pcb_big_shrink(void *p, size_t *cap, size_t want)
{
    want = (want + 4095) & ~(size_t)4095;
    if (*cap < PCB_BIG_ALLOC)
        return 0;
    if (want < PCB_BIG_ALLOC)
        want = PCB_BIG_ALLOC;
    if (want >= *cap || munmap((uint8_t *)p + want, *cap - want) != 0)
        return 0;
    *cap = want;
    return 1;
}
