/*
 * common/mem.h — allocations that may hold secrets or be large.
 *
 * Owns: wiping frees, and "big" allocations: at or above PCB_BIG_ALLOC bytes
 * they come straight from mmap with transparent huge pages requested where
 * the platform has them (Linux MADV_HUGEPAGE), so that the store's hash table
 * and arena at 10^6 entries do not also pay a page-table walk per random
 * access; smaller ones from calloc. Both are zeroed. Sizes are bytes.
 * Thread-safe (no state).
 */
#ifndef PCB_COMMON_MEM_H
#define PCB_COMMON_MEM_H

#include <stddef.h>

#define PCB_BIG_ALLOC ((size_t)4 << 20)

/* Wipes (OPENSSL_cleanse) n bytes at p, then frees it; NULL is fine. */
void pcb_wipe_free(void *p, size_t n);

/* Zeroed memory of n bytes (see above); NULL on failure. */
void *pcb_big_alloc(size_t n);
/* Frees what pcb_big_alloc(n) returned, wiping it first if asked. */
void pcb_big_free(void *p, size_t n, int wipe);
/* Shrinks a big allocation of *cap bytes in place to at least `want` bytes
 * (rounded to pages, and never below PCB_BIG_ALLOC, so pcb_big_free still
 * knows it by its size). Returns 1 if *cap changed; small ones are left. */
int pcb_big_shrink(void *p, size_t *cap, size_t want);

#endif /* PCB_COMMON_MEM_H */
