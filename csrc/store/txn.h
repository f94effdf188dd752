/*
 * store/txn.h — every change of the store's file is one transaction, and
 * this is its one path.
 *
 * Owns: the order of a write (io_lock -> the writers' file lock -> other
 * writers' changes read and merged -> the caller builds its new state with
 * an undo -> the file written without the store lock -> published or
 * dropped), the store's generations (mem_gen: changes in memory; disk_gen:
 * the latest on disk), the `writing` state that keeps every other change
 * out of memory while a write's outcome is unknown, and the record of a
 * failed write of applied changes (write_errno, fail_gen, write_error) that
 * flush/close/commit report until the changes are out.
 *
 * Who uses it: the creation write at open (store.c, pcb_txn_create),
 * commit (commit.c), apply's background writer and flush
 * (pcb_txn_write_pending), rotate (rotate.c) and lazy rotation
 * (rotate_lazy.c). This file alone decides whether a change was published
 * and, when it was not, puts memory back (pcb_txn_end): the caller's
 * change through its undo (commit: its undo log; rotate: saved keys and
 * the old map; lazy rotation: the old value keyset), then what the
 * transaction itself changed (mem_gen, `writing`, the merge's map). So
 * after a failed write, or a caller that gives up before writing, memory,
 * keyset text, generations and pending list are exactly as before
 * pcb_txn_begin.
 *
 * Thread safety: begin takes io_lock, the file lock and the store's lock,
 * in that order (internal.h); end releases them. Never called with the
 * GIL held: the file lock may wait up to lock_timeout seconds.
 */
#ifndef PCB_STORE_TXN_H
#define PCB_STORE_TXN_H

#include <stdint.h>

#include "common/status.h"
#include "store/map.h"
#include "store/store.h"

/* What a transaction's caller changes in memory, and how to let it stay
 * or put it back (each in the caller's own file: the state is theirs).
 * publish and undo run with the store's lock held, once, from pcb_txn_end;
 * undo cannot fail (what it needs was kept or reserved when the change was
 * built) and must cope with a change built only in part. after_write (may
 * be NULL) writes the side files that follow the published state (a
 * passphrase rotation's .scrypt tag, keys.h): once the store's file is on
 * disk, io_lock and the file lock still held, the store lock not; so a
 * change that fails never touched them. It is best effort: the publish
 * point is behind it. */
typedef struct {
    void (*publish)(pcb_store *s, void *arg); /* the file holds it: drop the undo */
    void (*undo)(pcb_store *s, void *arg);    /* it was not published: memory as before */
    void *arg;
    void (*after_write)(pcb_store *s, void *arg); /* side files, after the publish point */
} pcb_txn_change;

typedef struct {
    pcb_store *s;
    const pcb_txn_change *change; /* NULL: nothing new in memory (pending writes) */
    uint64_t gen_before; /* mem_gen at begin */
    uint64_t gen;        /* the generation the write put on disk */
    int held;            /* io_lock, file lock and store lock held */
    int wrote, failed;   /* pcb_txn_write ran; and failed */
    int unsure;          /* written and in place, but its durability unknown (st says so) */
    int read_others;     /* another writer's file was read and merged (or lost to a clear) */
    int merged;          /* the merge replaced the map: `before` is the map before it */
    pcb_map before;
} pcb_txn;

/* Begins: io_lock, the file lock (waiting at most lock_timeout), other
 * writers' changes merged into memory when the file changed since this
 * store saw it, then the store's lock. Returns 1 with all three held (the
 * caller then builds its change beside the old state and calls
 * pcb_txn_write, or gives up; either way pcb_txn_end), or 0 with st set,
 * nothing held, memory unchanged and change not called. */
int pcb_txn_begin(pcb_txn *t, pcb_store *s, const pcb_txn_change *change, pcb_status *st);

/* The caller has changed memory (store lock held): mem_gen advances, the
 * store enters `writing` (no apply() or other change lands until the
 * outcome is known), the file is written with the store lock released, and
 * the lock is taken again. 1 if the file is on disk (disk_gen advanced);
 * else 0 with st set. */
int pcb_txn_write(pcb_txn *t, pcb_status *st);

/* Ends it (store lock held), and decides: if the write published the
 * change, change->publish; otherwise (never written, or the write failed)
 * change->undo, mem_gen back, and the map from before the merge back, so
 * memory is exactly as at pcb_txn_begin. Then `writing` is left, waiters
 * woken, and the store's lock, the file lock and io_lock released.
 * Returns 1 if the change was published; 0 if it was not, or if it was but
 * the write failed after the new file was in place (the directory's sync:
 * the change stays, published, and pcb_txn_write's st says its durability
 * is unknown). */
int pcb_txn_end(pcb_txn *t);

/* The writes of applied changes (apply's writer, flush): whatever memory
 * holds beyond disk is written in a transaction of its own, unless the last
 * write failed at this very generation and not retry_failed (the writer:
 * it waits for a new change instead). 1 if nothing was pending or it is
 * written; else 0 with st set (st may be NULL) and the changes still
 * pending (write_errno, fail_gen), reported by every later flush/close. */
int pcb_txn_write_pending(pcb_store *s, int retry_failed, pcb_status *st);

/* A new store's first write at open (persist.h: the load created its
 * keysets and kept the file lock, so no other writer got in between; no
 * other thread can reach the store yet): the file written at generation 0,
 * nothing to merge; io_lock taken inside the file lock, the one exception
 * to the order (merge.h). The file lock is released either way. 1, or 0
 * with st set (the open fails). */
int pcb_txn_create(pcb_store *s, pcb_status *st);

/* 1 if applied changes wait for a write that has not failed at this
 * generation yet (store lock held). */
int pcb_txn_has_work(const pcb_store *s);

/* The generations' state, made and freed with the store (store.c). */
struct pcb_gens *pcb_txn_gens_new(void);
void pcb_txn_gens_free(struct pcb_gens *g);
/* The store lock held for each: changes applied to memory so far (a merge
 * note's change belongs to mem_gen + 1); whether a transaction's write is
 * in flight (nothing else may change memory then); apply()'s change counted
 * (the writer's work); 1 while target is not on disk and the writer may
 * still get it there (no failure at target yet); 1 once target is on disk. */
uint64_t pcb_txn_mem_gen(const pcb_store *s);
int pcb_txn_writing(const pcb_store *s);
void pcb_txn_applied(pcb_store *s);
int pcb_txn_flushing(const pcb_store *s, uint64_t target);
int pcb_txn_on_disk(const pcb_store *s, uint64_t target);
/* assert_store_ok's part (check.c): mem_gen >= disk_gen, and a failed
 * write recorded only for a generation beyond disk and not beyond memory. */
int pcb_txn_gens_ok(const pcb_store *s);
/* In a forked child: no write is in flight there. */
void pcb_txn_after_fork_child(pcb_store *s);

#endif /* PCB_STORE_TXN_H */
