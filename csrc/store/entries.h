/*
 * store/entries.h — the store's entries in memory: the map (struct
 * pcb_store's `map`) and the plain cache (`plain_cache`, opt.cache: plain
 * name -> plaintext, filled by reads), and their one owner.
 *
 * Owns: every replacement of the map and every forgetting of the cache.
 * The map is replaced in one place only, pcb_entries_swap (a merge, a
 * clear's fresh map, a rotation's re-encrypted map, and the undo of each),
 * which forgets the plain cache with it, so no file can swap a map and
 * leave the cache describing the old one; entries changed in place (a
 * commit's puts and removes, their undo) forget their cached plaintext
 * through pcb_entries_forget_cached / _forget_cache. The cache is empty
 * whenever opt.cache is 0 (assert_store_ok checks it).
 *
 * Thread safety: the store's lock held (PCB_ASSERT_LOCKED), except
 * pcb_entries_reset, which runs at open before the store is shared. Sizes
 * are bytes; all inline: the get path pays no call for the cache.
 */
#ifndef PCB_STORE_ENTRIES_H
#define PCB_STORE_ENTRIES_H

#include "store/internal.h"

/* Every cached plaintext forgotten (a no-op unless opt.cache). */
static inline void pcb_entries_forget_cache(pcb_store *s)
{
    PCB_ASSERT_LOCKED(s);
    if (s->opt.cache)
        pcb_map_clear(&s->plain_cache);
}

/* The cached plaintext of plain name forgotten (its entry changed). */
static inline void pcb_entries_forget_cached(pcb_store *s, const uint8_t *name, size_t nl)
{
    PCB_ASSERT_LOCKED(s);
    if (s->opt.cache)
        pcb_map_remove(&s->plain_cache, name, nl);
}

/* THE replacement of the map: s->map and *m trade places (*m then holds
 * the map before, for the caller to keep for an undo or free), and the
 * plain cache is forgotten. Cannot fail. */
static inline void pcb_entries_swap(pcb_store *s, pcb_map *m)
{
    PCB_ASSERT_LOCKED(s);
    PCB_ASSERT(m->secret == s->map.secret);
    pcb_map old = s->map;
    s->map = *m;
    *m = old;
    pcb_entries_forget_cache(s);
}

/* *m becomes the map (taken: *m is left empty) and the map before is
 * freed; the cache forgotten. */
static inline void pcb_entries_replace(pcb_store *s, pcb_map *m)
{
    pcb_entries_swap(s, m);
    pcb_map_free(m);
}

/* At open, before the store is shared: the map emptied to be loaded again. */
static inline void pcb_entries_reset(pcb_store *s)
{
    pcb_map_clear(&s->map);
    if (s->opt.cache)
        pcb_map_clear(&s->plain_cache);
}

/* The cached record of plain name, or NULL (opt.cache only). */
static inline const rec_header *pcb_entries_cached(const pcb_store *s, const char *name,
                                                   size_t len)
{
    return pcb_map_find(&s->plain_cache, (const uint8_t *)name, len);
}

/* Caches plain name's plaintext after a read (opt.cache only); 1, or 0
 * out of memory. */
static inline int pcb_entries_cache_put(pcb_store *s, const char *name, size_t len,
                                        const uint8_t *pt, size_t pl)
{
    PCB_ASSERT_LOCKED(s);
    return pcb_map_put(&s->plain_cache, (const uint8_t *)name, len, 0, pt, pl);
}

#endif /* PCB_STORE_ENTRIES_H */
