/*
 * store/txn.c — the one path of every change of the store's file, and the
 * generations it keeps (see txn.h; the locking is internal.h's).
 */
#include "store/txn.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>

#include "store/entries.h"
#include "store/fileio.h"
#include "store/internal.h"
#include "store/merge.h"
#include "store/persist.h"

/* The store's generations and write state (struct pcb_store's `gens`). */
struct pcb_gens {
    uint64_t mem_gen, disk_gen; /* changes applied / changes on disk */
    int writing;                /* a transaction writes; memory is its own */
    int write_errno;            /* the last failed write of applied changes (0: none) */
    uint64_t fail_gen;          /* the generation it tried to write */
    uint64_t in_place_gen;      /* the latest one in the file with its durability unknown */
    char write_error[480];
};

struct pcb_gens *pcb_txn_gens_new(void) { return calloc(1, sizeof(struct pcb_gens)); }
void pcb_txn_gens_free(struct pcb_gens *g) { free(g); }

uint64_t pcb_txn_mem_gen(const pcb_store *s) { return s->gens->mem_gen; }

int pcb_txn_writing(const pcb_store *s) { return s->gens->writing; }

void pcb_txn_applied(pcb_store *s)
{
    PCB_ASSERT_LOCKED(s);
    PCB_ASSERT(!s->gens->writing);
    s->gens->mem_gen++;
}

int pcb_txn_flushing(const pcb_store *s, uint64_t target)
{
    const struct pcb_gens *g = s->gens;
    return g->disk_gen < target && !(g->write_errno != 0 && g->fail_gen >= target);
}

int pcb_txn_on_disk(const pcb_store *s, uint64_t target) { return s->gens->disk_gen >= target; }

void pcb_txn_after_fork_child(pcb_store *s) { s->gens->writing = 0; }

int pcb_txn_gens_ok(const pcb_store *s)
{
    const struct pcb_gens *g = s->gens;
    return g->mem_gen >= g->disk_gen
           && (g->write_errno == 0 || (g->fail_gen > g->disk_gen && g->fail_gen <= g->mem_gen));
}

/* Other writers' changes since this store last read or wrote the file,
 * merged into memory (file lock held, store lock not). 1, or 0 with st set
 * and memory unchanged. */
static int merge_others(pcb_txn *t, pcb_status *st)
{
    pcb_store *s = t->s;
    uint64_t counter;
    pcb_file_id id;
    if (!pcb_share_changed(s, &counter, &id))
        return 1;
    pcb_map fresh;
    int replaced = 0;
    if (!pcb_map_init(&fresh, 16, s->map.secret))
        return pcb_oom(st);
    if (!pcb_persist_read_map(s, &fresh, st)
        || !pcb_share_merge(s, &fresh, counter, &id, &replaced, st)) {
        pcb_map_free(&fresh);
        return 0;
    }
    t->read_others = 1;
    if (!replaced) { /* an unwritten clear() won: memory is as it was, fresh is their file */
        pcb_map_free(&fresh);
        return 1;
    }
    t->before = fresh; /* the map before the merge, until the outcome is known */
    t->merged = 1;
    return 1;
}

/* pcb_txn_begin after io_lock. */
static int begin_io_held(pcb_txn *t, pcb_store *s, const pcb_txn_change *change,
                         pcb_status *st)
{
    PCB_ASSERT_IO(s);
    t->s = s;
    t->change = change;
    t->gen_before = t->gen = 0;
    t->held = t->wrote = t->failed = t->merged = t->read_others = t->unsure = 0;
    /* Other writers wait until this change is in place; what they wrote
     * so far is merged into memory first, so the caller builds on it. */
    if (!pcb_share_lock(s, st))
        return 0;
    if (!merge_others(t, st)) {
        pcb_share_unlock(s);
        return 0;
    }
    pcb_store_lock(s);
    /* No transaction is half done: a failed one put everything back. */
    PCB_ASSERT(!s->gens->writing);
    t->gen_before = s->gens->mem_gen;
    t->held = 1;
    return 1;
}

int pcb_txn_begin(pcb_txn *t, pcb_store *s, const pcb_txn_change *change, pcb_status *st)
{
    pcb_io_lock(s);
    if (begin_io_held(t, s, change, st))
        return 1;
    pcb_io_unlock(s);
    return 0;
}

/* The file as memory holds it now, and what the other writers see of it
 * (io_lock and the file lock held, the store's lock not): serialized under
 * the lock (*gen: the generation it holds), written without it. 1 written;
 * 2 in place but failed after the rename (the directory's sync: st set,
 * the file holds *gen, its durability unknown); 0 not written (st set, the
 * file as it was). */
static int write_file(pcb_store *s, uint64_t *gen, pcb_status *st)
{
    PCB_ASSERT_IO(s);
    PCB_ASSERT_UNLOCKED(s);
    pcb_buf b;
    pcb_buf_init(&b);
    pcb_store_lock(s);
    int ok = pcb_persist_serialize(s, &b, st);
    *gen = s->gens->mem_gen;
    pcb_store_unlock(s);
    int tried = ok;
    ok = ok && pcb_persist_write_bytes(s, &b, st);
    pcb_buf_free(&b);
    if (!ok && tried && pcb_atomic_write_in_place())
        ok = 2; /* the other writers see it: it is the file */
    if (ok)
        pcb_share_written(s, *gen);
    return ok;
}

/* gen is on disk (lock held): disk_gen advanced, a failure it covers
 * forgotten, waiters woken. */
static void note_written(pcb_store *s, uint64_t gen)
{
    PCB_ASSERT_LOCKED(s);
    if (gen > s->gens->disk_gen)
        s->gens->disk_gen = gen;
    if (s->gens->write_errno != 0 && s->gens->disk_gen >= s->gens->fail_gen)
        s->gens->write_errno = 0;
    pthread_cond_broadcast(&s->cond);
}

int pcb_txn_write(pcb_txn *t, pcb_status *st)
{
    pcb_store *s = t->s;
    PCB_ASSERT(t->held && !t->wrote);
    PCB_ASSERT_LOCKED(s);
    t->wrote = 1;
    s->gens->mem_gen++;
    s->gens->writing = 1; /* open -> writing: memory is this transaction's */
    t->gen = s->gens->mem_gen;
    pcb_store_unlock(s);
    int ok = write_file(s, &t->gen, st);
    if (ok && t->change != NULL && t->change->after_write != NULL)
        t->change->after_write(s, t->change->arg); /* the side files follow the published file */
    pcb_store_lock(s);
    PCB_ASSERT(s->gens->writing && s->gens->mem_gen == t->gen_before + 1);
    if (ok)
        note_written(s, t->gen); /* in place (2) too: the file holds the change */
    t->failed = !ok;
    t->unsure = ok == 2;
    return ok == 1;
}

int pcb_txn_end(pcb_txn *t)
{
    pcb_store *s = t->s;
    PCB_ASSERT(t->held);
    PCB_ASSERT_LOCKED(s);
    int published = t->wrote && !t->failed;
    if (published) {
        if (t->change != NULL)
            t->change->publish(s, t->change->arg);
    } else {
        if (t->change != NULL)
            t->change->undo(s, t->change->arg);
        if (t->wrote && t->change != NULL)
            s->gens->mem_gen = t->gen_before;
        if (t->merged) {
            /* Memory as it was before the merge too. */
            pcb_entries_swap(s, &t->before);
        }
        if (t->read_others) /* the next transaction reads the file again and merges */
            pcb_share_forget_seen(s);
    }
    PCB_ASSERT(published || t->change == NULL || s->gens->mem_gen == t->gen_before);
    if (t->merged)
        pcb_map_free(&t->before);
    t->merged = t->read_others = 0;
    s->gens->writing = 0; /* writing -> open */
    /* The file lock goes before the waiters wake: a flush() that returns has
     * its write over, and another writer trying the lock once gets it. */
    pcb_share_unlock(s);
    pthread_cond_broadcast(&s->cond);
    pcb_store_unlock(s);
    pcb_io_unlock(s);
    t->held = 0;
    return published && !t->unsure;
}

/* A write of applied changes failed (lock held): they stay pending. */
static void note_failed(pcb_store *s, uint64_t gen, const pcb_status *st)
{
    PCB_ASSERT_LOCKED(s);
    s->gens->write_errno = st->code == PCB_E_OS && st->os_errno ? st->os_errno : EIO;
    s->gens->fail_gen = gen;
    snprintf(s->gens->write_error, sizeof s->gens->write_error,
             "writing applied changes failed (%s): %.300s",
             s->gens->in_place_gen >= gen ? "they are in the file, but its durability is unknown: "
             "they stay pending until a write syncs it" : "they stay pending", st->msg);
    pthread_cond_broadcast(&s->cond);
}

int pcb_txn_create(pcb_store *s, pcb_status *st)
{
    PCB_ASSERT(pcb_share_held(s));
    uint64_t gen;
    pcb_io_lock(s); /* inside the file lock: only here, before the store is shared */
    int ok = write_file(s, &gen, st); /* generation 0: nothing applied yet */
    if (ok) {
        pcb_store_lock(s);
        note_written(s, gen);
        pcb_store_unlock(s);
    }
    pcb_share_unlock(s);
    pcb_io_unlock(s);
    return ok == 1; /* in place (2) but not synced: st says so, and the open fails */
}

int pcb_txn_has_work(const pcb_store *s)
{
    return s->gens->disk_gen < s->gens->mem_gen && !(s->gens->write_errno != 0 && s->gens->fail_gen >= s->gens->mem_gen);
}

int pcb_txn_write_pending(pcb_store *s, int retry_failed, pcb_status *st)
{
    pcb_io_lock(s);
    pcb_store_lock(s);
    uint64_t gen = s->gens->mem_gen;
    int pending = retry_failed ? s->gens->disk_gen < gen : pcb_txn_has_work(s);
    pcb_store_unlock(s);
    if (!pending) { /* nothing to write: no file lock taken */
        pcb_io_unlock(s);
        return 1;
    }
    pcb_status local = {0};
    pcb_txn t;
    int ok = begin_io_held(&t, s, NULL, &local);
    if (ok) {
        /* Nothing new in memory: the changes already applied go out. */
        gen = s->gens->mem_gen;
        pcb_store_unlock(s); /* apply() may go on meanwhile: its change is the next write's */
        ok = write_file(s, &gen, &local);
        pcb_store_lock(s);
        t.wrote = 1;
        t.failed = !ok; /* in place (2): the merge stays, the file holds it */
        if (ok == 2)
            s->gens->in_place_gen = gen;
        if (ok == 1)
            note_written(s, gen);
        else /* in place with its durability unknown too: pending until a write syncs */
            note_failed(s, gen, &local);
        pcb_txn_end(&t);
        ok = ok == 1;
    } else { /* the file lock or the merge: the changes stay pending */
        pcb_store_lock(s);
        note_failed(s, gen, &local);
        pcb_store_unlock(s);
        pcb_io_unlock(s);
    }
    if (!ok && st != NULL) {
        *st = local;
        snprintf(st->msg, sizeof st->msg, "%s", s->gens->write_error);
    }
    return ok;
}
