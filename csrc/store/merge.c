/*
 * store/merge.c — the file lock's use by a store, and the merge with other
 * writers' changes (see merge.h).
 */
#define _GNU_SOURCE
#include "store/merge.h"

#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/bytes.h"
#include "store/entries.h"
#include "store/fileio.h"
#include "store/internal.h"

struct pcb_share { /* zeroed: nothing held or seen */
    char *lock_path;        /* "<path>-lock", made on first use */
    int lock_fd, lock_held; /* the descriptor holding the file lock */
    uint64_t seen_counter;  /* the lock file's counter when last read or written */
    pcb_file_id seen_id;    /* the store file as last read or written */
    pcb_map dirty;          /* stored name -> 8-byte generation of the change */
    int dirty_ready;
    uint64_t clear_gen;     /* generation of a clear() not yet written, 0 none */
    int swept;              /* stale temp files looked for */
};

/* "<file>-lock" beside the store's file. s->path was fixed at open
 * (store.c: absolute, final links followed, canonical directory), so
 * writers that reach one file through different names (a symlink, a
 * relative path, another working directory) share one lock, and a chdir()
 * after open changes nothing. */
static const char *lock_path(pcb_store *s)
{
    pcb_share *sh = s->share;
    if (sh->lock_path == NULL) {
        size_t n = strlen(s->path);
        sh->lock_path = malloc(n + sizeof PCB_LOCK_SUFFIX);
        if (sh->lock_path != NULL) {
            memcpy(sh->lock_path, s->path, n);
            memcpy(sh->lock_path + n, PCB_LOCK_SUFFIX, sizeof PCB_LOCK_SUFFIX);
        }
    }
    return sh->lock_path;
}

int pcb_share_note(pcb_store *s, const uint8_t *sname, size_t len, uint64_t g, pcb_status *st)
{
    PCB_ASSERT_LOCKED(s);
    pcb_share *sh = s->share;
    if (!sh->dirty_ready) {
        if (!pcb_map_init(&sh->dirty, 16, 0))
            return pcb_oom(st);
        sh->dirty_ready = 1;
    }
    uint8_t gen[8];
    pcb_store_le32(gen, (uint32_t)g);
    pcb_store_le32(gen + 4, (uint32_t)(g >> 32));
    return pcb_map_put(&sh->dirty, sname, len, 0, gen, sizeof gen) || pcb_oom(st);
}

void pcb_share_note_clear(pcb_store *s, uint64_t gen)
{
    PCB_ASSERT_LOCKED(s);
    /* The notes of earlier changes stay (an undone clear needs them); while
     * clear_gen is set they are not used, and the write forgets them. */
    s->share->clear_gen = gen;
}

uint64_t pcb_share_noted(const pcb_store *s, const uint8_t *sname, size_t len)
{
    if (!s->share->dirty_ready)
        return 0;
    const rec_header *d = pcb_map_find(&s->share->dirty, sname, len);
    return d ? pcb_load_le64(rec_value(d)) : 0;
}

void pcb_share_unnote(pcb_store *s, const uint8_t *sname, size_t len, uint64_t prev)
{
    PCB_ASSERT_LOCKED(s);
    if (!s->share->dirty_ready)
        return;
    const rec_header *d = pcb_map_find(&s->share->dirty, sname, len);
    if (d == NULL)
        return;
    if (prev == 0) {
        pcb_map_remove(&s->share->dirty, sname, len);
    } else { /* in place: the record holds 8 bytes, as before */
        uint8_t *v = (uint8_t *)rec_value(d);
        pcb_store_le32(v, (uint32_t)prev);
        pcb_store_le32(v + 4, (uint32_t)(prev >> 32));
    }
}

void pcb_share_forget_seen(pcb_store *s)
{
    s->share->seen_counter = UINT64_MAX;
    memset(&s->share->seen_id, 0, sizeof s->share->seen_id);
}

void pcb_share_seen(pcb_store *s)
{
    const char *lp = lock_path(s);
    s->share->seen_counter = lp ? pcb_lock_peek_counter(lp) : 0;
    pcb_file_id_of(s->path, &s->share->seen_id); /* after the counter: see lock.h */
}

/* This store's changes since its last write put on top of fresh, the file
 * as another writer left it (store lock held). 1, or 0 out of memory. */
static int apply_dirty(pcb_store *s, pcb_map *fresh, pcb_status *st)
{
    const rec_header *d;
    PCB_ASSERT_LOCKED(s);
    if (!s->share->dirty_ready)
        return 1;
    PCB_MAP_FOREACH(&s->share->dirty, d) {
        const uint8_t *name = rec_name(d);
        size_t nl = d->name_len & LEN_MASK;
        const rec_header *r = pcb_map_find(&s->map, name, nl);
        if (r == NULL)
            pcb_map_remove(fresh, name, nl);
        else if (!pcb_map_put(fresh, name, nl, r->name_len & BAD_BIT, rec_value(r), r->value_len))
            return pcb_oom(st);
    }
    return pcb_map_maybe_compact(fresh) || pcb_oom(st);
}

int pcb_share_changed(pcb_store *s, uint64_t *counter, pcb_file_id *id)
{
    pcb_share *sh = s->share;
    PCB_ASSERT(sh->lock_held);
    *counter = pcb_lock_counter(sh->lock_fd);
    pcb_file_id_of(s->path, id); /* before the read: a later change shows next time */
    return !(*counter == sh->seen_counter && pcb_file_id_same(id, &sh->seen_id));
}

int pcb_share_merge(pcb_store *s, pcb_map *fresh, uint64_t counter, const pcb_file_id *id,
                    int *replaced, pcb_status *st)
{
    pcb_share *sh = s->share;
    int ok = 1;
    PCB_ASSERT(sh->lock_held);
    *replaced = 0;
    pcb_store_lock(s);
    if (sh->clear_gen == 0) { /* else the unwritten clear() wins: the map stays ours */
        ok = apply_dirty(s, fresh, st);
        if (ok) {
            pcb_entries_swap(s, fresh); /* *fresh: the map before */
            *replaced = 1;
        }
    }
    pcb_store_unlock(s);
    if (ok) {
        sh->seen_counter = counter;
        sh->seen_id = *id;
    }
    return ok;
}

/* Removes the temp files of writers that died (file lock held, once). */
static void sweep(pcb_store *s)
{
    if (!s->share->swept)
        pcb_remove_stale_tmp(s->path, s->dir);
    s->share->swept = 1;
}

int pcb_share_lock(pcb_store *s, pcb_status *st)
{
    pcb_share *sh = s->share;
    PCB_ASSERT(!sh->lock_held); /* one holder: the transaction, or the load */
    const char *lp = lock_path(s);
    if (lp == NULL)
        return pcb_oom(st);
    double t = s->opt.lock_timeout;
    t = t == 0 ? PCB_LOCK_DEFAULT_TIMEOUT : t < 0 ? 0 : t;
    if (!pcb_lock_acquire(lp, t, &sh->lock_fd, st))
        return 0;
    sh->lock_held = 1;
    sweep(s);
    return 1;
}

void pcb_share_unlock(pcb_store *s)
{
    pcb_share *sh = s->share;
    if (sh->lock_held)
        pcb_lock_release(sh->lock_fd);
    sh->lock_held = 0;
    sh->lock_fd = -1;
}

void pcb_share_written(pcb_store *s, uint64_t gen)
{
    pcb_share *sh = s->share;
    pcb_status ignored = {0};
    uint64_t now;
    /* A failed bump leaves the file's new identity for others to see. */
    if (sh->lock_held && pcb_lock_bump(sh->lock_fd, sh->lock_path, &now, &ignored))
        sh->seen_counter = now;
    pcb_file_id_of(s->path, &sh->seen_id);
    pcb_store_lock(s);
    if (sh->clear_gen != 0 && sh->clear_gen <= gen)
        sh->clear_gen = 0;
    if (sh->dirty_ready) {
        const rec_header *d;
        size_t kept = 0;
        PCB_MAP_FOREACH(&sh->dirty, d) {
            if (pcb_load_le64(rec_value(d)) > gen)
                kept++;
        }
        if (kept == 0) { /* the usual case: everything written; give the memory back */
            pcb_map_free(&sh->dirty);
            sh->dirty_ready = 0;
        } else {
            PCB_MAP_FOREACH(&sh->dirty, d) {
                if (pcb_load_le64(rec_value(d)) <= gen)
                    pcb_map_remove(&sh->dirty, rec_name(d), d->name_len & LEN_MASK);
            }
        }
    }
    pcb_store_unlock(s);
}

void pcb_share_after_fork_child(pcb_share *sh)
{
    /* The descriptor itself (held, or being acquired by a parent's thread
     * that does not exist here) was closed by pcb_lock_after_fork_child. */
    sh->lock_held = 0;
    sh->lock_fd = -1;
}

pcb_share *pcb_share_new(void)
{
    pcb_share *sh = calloc(1, sizeof *sh);
    if (sh != NULL)
        sh->lock_fd = -1;
    return sh;
}

int pcb_share_held(const pcb_store *s) { return s->share->lock_held; }

int pcb_share_file_unchanged(pcb_store *s)
{
    pcb_file_id now;
    pcb_file_id_of(s->path, &now);
    return pcb_file_id_same(&now, &s->share->seen_id);
}

uint64_t pcb_share_clear_gen(const pcb_store *s) { return s->share->clear_gen; }

void pcb_share_restore_clear_gen(pcb_store *s, uint64_t gen)
{
    PCB_ASSERT_LOCKED(s);
    s->share->clear_gen = gen;
}

void pcb_share_free(pcb_share *sh)
{
    if (sh == NULL)
        return;
    if (sh->lock_held)
        pcb_lock_release(sh->lock_fd);
    if (sh->dirty_ready)
        pcb_map_free(&sh->dirty);
    free(sh->lock_path);
    free(sh);
}
