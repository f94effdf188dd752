/*
 * store/check.c — assert_store_ok: the store's cross-field invariants,
 * checked at every release of the store's lock in PCB_ASSERTS builds (see
 * internal.h), as SQLite's assert_pager_state checks the pager's.
 *
 * Each owner answers for its own state through a getter that calls no
 * further (txn.c: the generations; keys.c: the keys; merge.c: the clear
 * noted); this file ties them together and checks what spans owners. It is
 * a leaf: nothing it calls takes a lock or calls back. Release builds
 * compile it to nothing.
 */
#include "store/internal.h"

#ifdef PCB_ASSERTS
#include "store/keys.h"
#include "store/merge.h"
#include "store/txn.h"

void pcb_assert_store_ok(const pcb_store *s)
{
    /* Generations: mem_gen >= disk_gen, a failure recorded only for a
     * generation beyond disk and not beyond memory (txn.c). */
    assert(s->gens == NULL || pcb_txn_gens_ok(s));
    /* `writing` (a transaction's outcome unknown) only under io_lock and
     * the file lock, which its transaction holds until it ends. */
    assert(s->gens == NULL || !pcb_txn_writing(s) || (s->io_owned && pcb_share_held(s)));
    /* A clear() noted for the merge belongs to a change already counted. */
    assert(s->gens == NULL || s->share == NULL || pcb_share_clear_gen(s) <= pcb_txn_mem_gen(s));
    /* The plain cache holds nothing unless cache=1 (entries.h). */
    assert(s->opt.cache || s->plain_cache.live == 0);
    /* The map holds plaintext exactly when the codec says so (it is wiped when freed). */
    assert(s->map.slots == NULL || s->map.secret == s->codec.plaintext_in_map);
    /* Keys loaded <=> the entry contexts the codec needs are set up, and
     * no rotation step is half done (keys.c). */
    assert(s->keys == NULL || pcb_keys_ok(s));
    assert(s->keys == NULL || s->ek == pcb_keys_entry(s->keys));
}
#else
typedef int pcb_check_unused; /* ISO C: a translation unit is not empty */
#endif
