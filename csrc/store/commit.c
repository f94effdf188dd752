/*
 * store/commit.c — editors, commit and apply, and the background writer
 * (see store.h for the API and internal.h for the locking). Every write of
 * the file goes through txn.c, not here: this file builds a commit's change
 * and its undo, and txn.c decides whether it stays.
 *
 * An editor keeps a log of ops, in effect one per name (each time the log
 * doubles, ops replaced by a later put or remove of their name are dropped,
 * so a loop of puts to one key stays small), each with
 * its stored forms computed at put time (as ESP's Editor encrypts in
 * putString); its own mutex makes it safe to share between threads: commit
 * takes the whole log at once, and a put racing it lands in this commit or
 * the next, never nowhere.
 *
 * All-or-nothing: apply_ops reserves every byte and slot it (and its undo)
 * needs before it changes the map, and keeps an undo log. commit is one
 * transaction (txn.h): txn.c takes the locks and merges other writers'
 * changes, apply_ops applies under the store lock, txn.c writes and, on a
 * failed write, runs this file's undo (commit_undo) and then its own:
 * memory equals disk again and the error is raised. apply() applies and
 * wakes the writer; its writes are txn.c's too (pcb_txn_write_pending): a
 * failed background write stays pending (disk_gen is not advanced): the
 * writer retries at the next change, flush() retries itself, and every
 * flush/close raises until it is written. The map is replaced (a clear) and
 * its cache forgotten only through entries.h; the keys' generation
 * (key_gen: puts sealed again after a rotation) is keys.c's.
 */
#define _GNU_SOURCE
#include "store/store.h"

#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/bytes.h"
#include "store/codec.h"
#include "store/entries.h"
#include "store/internal.h"
#include "store/keys.h"
#include "store/txn.h"

/* Op record: kind(1) plain_len(4) sname_len(4) svalue_len(4) pt_len(4), then the bytes. */
#define OP_DEAD 0 /* replaced by a later op on the same name */
#define OP_PUT 1
#define OP_REMOVE 2
#define OP_HEADER 17

typedef struct {
    int kind;
    const uint8_t *name, *sname, *svalue, *pt;
    size_t nl, sl, vl, pl, size;
} op_view;

static op_view op_at(const pcb_buf *ops, size_t off)
{
    const uint8_t *p = (const uint8_t *)ops->data + off;
    op_view v;
    v.kind = p[0];
    v.nl = pcb_load_le32(p + 1);
    v.sl = pcb_load_le32(p + 5);
    v.vl = pcb_load_le32(p + 9);
    v.pl = pcb_load_le32(p + 13);
    v.name = p + OP_HEADER;
    v.sname = v.name + v.nl;
    v.svalue = v.sname + v.sl;
    v.pt = v.svalue + v.vl;
    v.size = OP_HEADER + v.nl + v.sl + v.vl + v.pl;
    return v;
}

/* ------------------------------------------------------------- editors */

pcb_edit *pcb_edit_new(pcb_store *s, pcb_status *st)
{
    pcb_edit *e = calloc(1, sizeof *e);
    if (e == NULL) {
        pcb_oom(st);
        return NULL;
    }
    int rc = pthread_mutex_init(&e->lock, NULL);
    if (rc != 0) {
        free(e);
        errno = rc;
        pcb_fail_os(st, "cannot create the editor's lock");
        return NULL;
    }
    e->s = s;
    pcb_store_lock(s);
    e->key_gen = pcb_keys_gen(s);
    e->seed = s->map.seed ^ ((uint64_t)(uintptr_t)e * 0x9e3779b97f4a7c15ULL);
    pcb_store_unlock(s);
    pcb_buf_init(&e->ops);
    pcb_store_register_edit(e);
    return e;
}

void pcb_edit_free(pcb_edit *e)
{
    if (e == NULL)
        return;
    pcb_store_unregister_edit(e);
    pcb_buf_free(&e->ops);
    pthread_mutex_destroy(&e->lock);
    free(e);
}

/* Appends one op, its stored forms computed under the current keys (lock held). */
int pcb_edit_encode_op(pcb_store *s, pcb_buf *ops, int kind, const char *name, size_t nl,
                     const uint8_t *pt, size_t pl, pcb_status *st)
{
    pcb_buf sname, svalue;
    int ok;
    pcb_buf_init(&sname);
    pcb_buf_init(&svalue);
    ok = pcb_codec_name(s, name, nl, &sname, st);
    if (ok && kind == OP_PUT) {
        size_t aad_len;
        STAGE_BEGIN(s);
        const uint8_t *aad = pcb_codec_value_aad(s, (const uint8_t *)sname.data, sname.len, &aad_len);
        STAGE_END(s, PCB_STAGE_BASE64);
        ok = aad != NULL ? pcb_codec_seal_value(s, aad, aad_len, pt, pl, &svalue, st) : pcb_oom(st);
    }
    if (ok) {
        char k = (char)kind;
        pcb_buf_append(ops, &k, 1);
        pcb_buf_put_le32(ops, (uint32_t)nl);
        pcb_buf_put_le32(ops, (uint32_t)sname.len);
        pcb_buf_put_le32(ops, (uint32_t)svalue.len);
        pcb_buf_put_le32(ops, kind == OP_PUT ? (uint32_t)pl : 0);
        pcb_buf_append(ops, name, nl);
        pcb_buf_append(ops, sname.data, sname.len);
        pcb_buf_append(ops, svalue.data, svalue.len);
        if (kind == OP_PUT)
            pcb_buf_append(ops, (const char *)pt, pl);
        ok = !ops->failed || pcb_oom(st);
    }
    pcb_buf_free(&sname);
    pcb_buf_free(&svalue);
    return ok;
}

/* Keeps one op per name: every op that a later op on the same name
 * replaces is marked dead (a valid log on its own), then the live ops are
 * copied into a new log if that allocation works (e->lock held). Run when
 * the log doubles, so a put costs nothing extra and a loop of puts to one
 * key stays small. */
static void dedup_log(pcb_edit *e)
{
    size_t n = 0;
    for (size_t off = 0; off < e->ops.len; off += op_at(&e->ops, off).size)
        n++;
    size_t cap = 16;
    while (cap < 2 * n)
        cap <<= 1;
    uint64_t *table = calloc(cap, sizeof *table); /* op offset + 1; 0: empty */
    if (table == NULL)
        return;
    for (size_t off = 0; off < e->ops.len;) {
        op_view v = op_at(&e->ops, off);
        if (v.kind != OP_DEAD) {
            size_t i = (size_t)pcb_map_hash(e->seed, v.name, v.nl) & (cap - 1);
            for (;; i = (i + 1) & (cap - 1)) {
                if (table[i] == 0) {
                    table[i] = off + 1;
                    break;
                }
                op_view o = op_at(&e->ops, table[i] - 1);
                if (o.nl == v.nl && memcmp(o.name, v.name, v.nl) == 0) {
                    e->ops.data[table[i] - 1] = OP_DEAD;
                    table[i] = off + 1;
                    break;
                }
            }
        }
        off += v.size;
    }
    free(table);
    pcb_buf live;
    pcb_buf_init(&live);
    for (size_t off = 0; off < e->ops.len;) {
        op_view v = op_at(&e->ops, off);
        if (v.kind != OP_DEAD)
            pcb_buf_append(&live, e->ops.data + off, v.size);
        off += v.size;
    }
    if (live.failed) {
        pcb_buf_free(&live);
        return;
    }
    pcb_buf_free(&e->ops);
    e->ops = live;
}

#define DEDUP_FIRST ((size_t)1 << 20) /* log bytes before the first dedup */

/* One put or remove into the log (the last op on a name wins); all or nothing. */
static int edit_add(pcb_edit *e, int kind, const char *name, size_t nl, const uint8_t *pt,
                    size_t pl, pcb_status *st)
{
    pcb_store *s = e->s;
    pcb_lock_mutex(&e->lock);
    size_t off = e->ops.len;
    pcb_store_lock(s);
    int ok = pcb_edit_encode_op(s, &e->ops, kind, name, nl, pt, pl, st);
    pcb_store_unlock(s);
    if (!ok && !e->ops.failed)
        e->ops.len = off; /* the op half appended goes */
    if (ok && e->ops.len >= (e->dedup_at ? e->dedup_at : DEDUP_FIRST)) {
        dedup_log(e);
        e->dedup_at = e->ops.len * 2 > DEDUP_FIRST ? e->ops.len * 2 : DEDUP_FIRST;
    }
    e->n_ops += ok;
    pthread_mutex_unlock(&e->lock);
    return ok;
}

int pcb_edit_put(pcb_edit *e, const char *name, size_t nl, const uint8_t *value, size_t vl,
                 pcb_status *st)
{
    if (!pcb_codec_check_put(e->s, name, nl, value, vl, st))
        return 0;
    if (nl > (1u << 28) || vl > (1u << 30))
        return pcb_fail(st, PCB_E_VALUE, "entry too large (names up to 256 MiB, values up to 1 GiB)");
    return edit_add(e, OP_PUT, name, nl, value, vl, st);
}

int pcb_edit_remove(pcb_edit *e, const char *name, size_t nl, pcb_status *st)
{
    if (!pcb_codec_check_name(e->s, name, nl, st))
        return 0;
    if (e->s->codec.xml_names && memchr(name, 0, nl) != NULL)
        return 1; /* no such entry can exist */
    return edit_add(e, OP_REMOVE, name, nl, NULL, 0, st); /* ESP encrypts the key */
}

/* e->clear: bit 1 clear(), bit 2 remove_unreadable() (both done first, as Android clears). */
void pcb_edit_clear(pcb_edit *e)
{
    pcb_lock_mutex(&e->lock);
    e->clear |= 1;
    pthread_mutex_unlock(&e->lock);
}

void pcb_edit_remove_unreadable(pcb_edit *e)
{
    pcb_lock_mutex(&e->lock);
    e->clear |= 2;
    pthread_mutex_unlock(&e->lock);
}

/* What one commit applies: the editor's log, taken whole. */
typedef struct {
    pcb_buf ops;
    int clear;
    uint64_t key_gen;
} edit_batch;

/* Takes the editor's changes, leaving it empty (e->lock, then the store's). */
static void take_batch(pcb_edit *e, edit_batch *b)
{
    pcb_lock_mutex(&e->lock);
    b->ops = e->ops;
    b->clear = e->clear;
    b->key_gen = e->key_gen;
    pcb_buf_init(&e->ops);
    e->clear = 0;
    e->n_ops = 0;
    e->dedup_at = 0;
    pcb_store_lock(e->s);
    e->key_gen = pcb_keys_gen(e->s);
    pcb_store_unlock(e->s);
    pthread_mutex_unlock(&e->lock);
}

/* ------------------------------------------------------- apply and undo */

/* How to put the map back as it was before one apply_ops. */
typedef struct {
    int cleared;
    pcb_map old_map;  /* cleared: the whole map before */
    pcb_buf log;      /* per op: had(1) flags(4) sname_len(4) value_len(4) sname old_value */
    pcb_buf offs;     /* offsets into log, walked backwards */
    pcb_buf notes;    /* per noted name: sname_len(4) previous generation(8) sname */
    pcb_buf note_offs;
    uint64_t clear_gen_before;
} undo_log;

static void undo_init(undo_log *u)
{
    memset(u, 0, sizeof *u);
    pcb_buf_init(&u->log);
    pcb_buf_init(&u->offs);
    pcb_buf_init(&u->notes);
    pcb_buf_init(&u->note_offs);
}

static void undo_free(undo_log *u)
{
    pcb_buf_free(&u->log);
    pcb_buf_free(&u->offs);
    pcb_buf_free(&u->notes);
    pcb_buf_free(&u->note_offs);
}

/* This batch changes stored name: noted for a merge with other writers
 * (merge.h), with what the note was before, for the undo. */
static int note_change(pcb_store *s, undo_log *u, const uint8_t *sname, size_t sl, pcb_status *st)
{
    uint64_t prev = pcb_share_noted(s, sname, sl);
    size_t at = u->notes.len;
    pcb_buf_put_le32(&u->notes, (uint32_t)sl);
    pcb_buf_put_le32(&u->notes, (uint32_t)prev);
    pcb_buf_put_le32(&u->notes, (uint32_t)(prev >> 32));
    pcb_buf_append(&u->notes, (const char *)sname, sl);
    pcb_buf_append(&u->note_offs, (const char *)&at, sizeof at);
    if (u->notes.failed || u->note_offs.failed)
        return pcb_oom(st);
    return pcb_share_note(s, sname, sl, pcb_txn_mem_gen(s) + 1, st);
}

/* The notes as they were (lock held), newest first: a name noted twice gets
 * its first previous value. */
static void undo_notes(pcb_store *s, undo_log *u)
{
    for (size_t i = u->note_offs.len / sizeof(size_t); i-- > 0;) {
        size_t off;
        memcpy(&off, u->note_offs.data + i * sizeof off, sizeof off);
        const uint8_t *p = (const uint8_t *)u->notes.data + off;
        uint64_t prev = pcb_load_le32(p + 4) | (uint64_t)pcb_load_le32(p + 8) << 32;
        pcb_share_unnote(s, p + 12, pcb_load_le32(p), prev);
    }
    pcb_share_restore_clear_gen(s, u->clear_gen_before);
}

/* The changes stay (lock held): drops the undo log, then compacts. */
static void undo_drop(pcb_store *s, undo_log *u)
{
    if (u->cleared)
        pcb_map_free(&u->old_map);
    u->cleared = 0;
    undo_free(u);
    (void)pcb_map_maybe_compact(&s->map); /* an optimization: failing leaves the map whole */
}

/* The changes go (lock held): the map and the merge notes as they
 * were. Every byte and slot this needs was reserved by apply_ops (unless a
 * merge replaced the map meanwhile: then the next write merges again, see
 * commit_sync). */
static void undo_apply(pcb_store *s, undo_log *u)
{
    PCB_ASSERT_LOCKED(s);
    if (u->cleared) {
        pcb_entries_replace(s, &u->old_map);
        u->cleared = 0;
    } else {
        for (size_t i = u->offs.len / sizeof(size_t); i-- > 0;) {
            size_t off;
            memcpy(&off, u->offs.data + i * sizeof off, sizeof off);
            const uint8_t *p = (const uint8_t *)u->log.data + off;
            uint32_t flags = pcb_load_le32(p + 1);
            size_t sl = pcb_load_le32(p + 5), vl = pcb_load_le32(p + 9);
            if (p[0])
                (void)pcb_map_put(&s->map, p + 13, sl, flags, p + 13 + sl, vl);
            else
                pcb_map_remove(&s->map, p + 13, sl);
        }
    }
    undo_notes(s, u);
    pcb_entries_forget_cache(s);
    undo_free(u);
}

/* Re-encrypts every live op under the current keys into out (lock held). */
static int reencode(pcb_store *s, const pcb_buf *ops, pcb_buf *out, pcb_status *st)
{
    for (size_t off = 0; off < ops->len;) {
        op_view v = op_at(ops, off);
        if (v.kind != OP_DEAD
            && !pcb_edit_encode_op(s, out, v.kind, (const char *)v.name, v.nl, v.pt, v.pl, st))
            return 0;
        off += v.size;
    }
    return 1;
}

/* The map a batch with clear bits starts from (lock held), into *fresh with
 * room for n more records of `bytes`: empty for clear() (bit 1); for
 * remove_unreadable() (bit 2) a copy without the records whose names do
 * not open, each dropped name noted. 1, or 0 with st set. */
static int start_map(pcb_store *s, int clear, size_t n, size_t bytes, pcb_map *fresh,
                     undo_log *u, pcb_status *st)
{
    const rec_header *r;
    size_t have = 0;
    if (!(clear & 1)) {
        PCB_MAP_FOREACH(&s->map, r) {
            have += rec_size(r->name_len, r->value_len);
        }
    }
    size_t cap = n + ((clear & 1) ? 0 : s->map.live);
    if (!pcb_map_init(fresh, cap, s->map.secret))
        return pcb_oom(st);
    if (!pcb_map_reserve(fresh, bytes + have)) {
        pcb_map_free(fresh);
        return pcb_oom(st);
    }
    if (clear & 1)
        return 1;
    pcb_buf name;
    pcb_buf_init(&name);
    int ok = 1;
    PCB_MAP_FOREACH(&s->map, r) {
        size_t nl = r->name_len & LEN_MASK;
        pcb_status why = {0};
        if (s->codec.names != PCB_NAMES_PLAIN && !pcb_codec_plain_name(s, r, &name, &why)) {
            if (why.code != PCB_E_DECRYPT) { /* out of memory or OpenSSL: not the entry's fault */
                *st = why;
                ok = 0;
                break;
            }
            if (!(ok = note_change(s, u, rec_name(r), nl, st)))
                break;
            continue; /* unreadable: dropped */
        }
        if (!(ok = pcb_map_put(fresh, rec_name(r), nl, r->name_len & ~LEN_MASK, rec_value(r),
                               r->value_len) || pcb_oom(st)))
            break;
    }
    pcb_buf_free(&name);
    if (!ok)
        pcb_map_free(fresh);
    return ok;
}

/* Applies a batch to memory (lock held), all or nothing: every byte and
 * slot the ops and their undo need is reserved, and every merge note made,
 * first, so once the map changes nothing can fail. u can put it back
 * (undo_apply) or let it stay (undo_drop). The caller counts the change
 * (mem_gen + 1, the generation its merge notes carry). 1, or 0 with st set
 * and nothing changed. */
static int apply_ops(pcb_store *s, const edit_batch *b, undo_log *u, pcb_status *st)
{
    PCB_ASSERT_LOCKED(s);
    PCB_ASSERT(!pcb_txn_writing(s));
    pcb_buf redone;
    const pcb_buf *ops = &b->ops;
    undo_init(u);
    u->clear_gen_before = pcb_share_clear_gen(s);
    pcb_buf_init(&redone);
    if (b->key_gen != pcb_keys_gen(s)) {
        /* Keys rotated since the puts were encrypted: encrypt them again. */
        if (!reencode(s, ops, &redone, st)) {
            pcb_buf_free(&redone);
            return 0;
        }
        ops = &redone;
    }
    size_t n = 0, bytes = 0;
    int ok = 1;
    if (b->clear & 1)
        pcb_share_note_clear(s, pcb_txn_mem_gen(s) + 1); /* other writers' entries go too (merge.h) */
    for (size_t off = 0; off < ops->len && ok;) {
        op_view v = op_at(ops, off);
        if (v.kind != OP_DEAD) {
            n++;
            if (v.kind == OP_PUT)
                bytes += rec_size((uint32_t)v.sl, (uint32_t)v.vl);
            if (!b->clear) {
                const rec_header *r = pcb_map_find(&s->map, v.sname, v.sl);
                size_t at = u->log.len;
                char had = r != NULL;
                size_t ovl = r ? r->value_len : 0;
                pcb_buf_append(&u->log, &had, 1);
                pcb_buf_put_le32(&u->log, r ? r->name_len & ~LEN_MASK : 0);
                pcb_buf_put_le32(&u->log, (uint32_t)v.sl);
                pcb_buf_put_le32(&u->log, (uint32_t)ovl);
                pcb_buf_append(&u->log, (const char *)v.sname, v.sl);
                if (r)
                    pcb_buf_append(&u->log, (const char *)rec_value(r), ovl);
                pcb_buf_append(&u->offs, (const char *)&at, sizeof at);
                if (r)
                    bytes += rec_size((uint32_t)v.sl, (uint32_t)ovl);
            }
            ok = note_change(s, u, v.sname, v.sl, st); /* merged over other writers' (merge.h) */
        }
        off += v.size;
    }
    if (ok && (u->log.failed || u->offs.failed))
        ok = pcb_oom(st);
    if (ok && b->clear) {
        pcb_map fresh;
        ok = start_map(s, b->clear, n, bytes, &fresh, u, st);
        if (ok) {
            pcb_entries_swap(s, &fresh);
            u->old_map = fresh; /* the map before */
            u->cleared = 1;
        }
    } else if (ok) {
        /* Each put or undo adds at most one used slot: room for 2n, then the bytes. */
        pcb_map *m = &s->map;
        if ((m->live + m->tombs + 2 * n) * 4 > (m->mask + 1) * 3)
            ok = pcb_map_rehash(m, m->live + 2 * n) || pcb_oom(st);
        ok = ok && (pcb_map_reserve(m, bytes) || pcb_oom(st));
    }
    if (!ok) {
        undo_notes(s, u);
        pcb_buf_free(&redone);
        undo_free(u);
        return 0;
    }
    for (size_t off = 0; off < ops->len && ok;) {
        op_view v = op_at(ops, off);
        if (v.kind == OP_PUT)
            ok = pcb_map_put(&s->map, v.sname, v.sl, 0, v.svalue, v.vl);
        else if (v.kind == OP_REMOVE)
            pcb_map_remove(&s->map, v.sname, v.sl);
        if (v.kind != OP_DEAD)
            pcb_entries_forget_cached(s, v.name, v.nl);
        off += v.size;
    }
    pcb_buf_free(&redone);
    if (!ok) { /* cannot happen with the room reserved; still all or nothing */
        undo_apply(s, u);
        return pcb_oom(st);
    }
    return 1;
}

/* ------------------------------------------------------ commit, apply */

static void *writer_main(void *arg);

static int start_writer(pcb_store *s, pcb_status *st)
{
    if (s->writer_started)
        return 1;
    sigset_t all, old;
    sigfillset(&all);
    pthread_sigmask(SIG_SETMASK, &all, &old); /* the writer never takes signals */
    int rc = pthread_create(&s->writer, NULL, writer_main, s);
    pthread_sigmask(SIG_SETMASK, &old, NULL);
    if (rc != 0) {
        errno = rc;
        return pcb_fail_os(st, "cannot start the background writer");
    }
    s->writer_started = 1;
    return 1;
}

/* A commit's change, for its transaction: the batch applied (or not yet)
 * and how to put it back. */
typedef struct {
    undo_log u;
    int applied;
} commit_change;

static void commit_publish(pcb_store *s, void *arg)
{
    commit_change *c = arg;
    if (c->applied)
        undo_drop(s, &c->u);
}

static void commit_undo(pcb_store *s, void *arg)
{
    commit_change *c = arg;
    if (c->applied)
        undo_apply(s, &c->u); /* memory equals disk again */
}

/* commit(): one transaction (txn.h): other writers' changes merged, the
 * batch applied, written; txn.c keeps or undoes it. */
static int commit_sync(pcb_store *s, const edit_batch *b, pcb_status *st)
{
    commit_change c = {.applied = 0};
    const pcb_txn_change change = {commit_publish, commit_undo, &c};
    pcb_txn t;
    if (!pcb_txn_begin(&t, s, &change, st))
        return 0;
    c.applied = apply_ops(s, b, &c.u, st);
    if (c.applied)
        (void)pcb_txn_write(&t, st); /* counts the change: mem_gen + 1 */
    return pcb_txn_end(&t);
}

/* apply(): memory now, the writer thread writes. */
static int commit_async(pcb_store *s, const edit_batch *b, pcb_status *st)
{
    undo_log u;
    pcb_store_lock(s);
    while (pcb_txn_writing(s)) /* a transaction's outcome decides what memory is */
        pcb_store_wait(s);
    int ok = start_writer(s, st) && apply_ops(s, b, &u, st);
    if (ok) {
        pcb_txn_applied(s); /* the writer's work */
        undo_drop(s, &u);
    }
    pthread_cond_broadcast(&s->cond);
    pcb_store_unlock(s);
    return ok;
}

/* An interrupted commit (the embedder gave up its wait for the file lock,
 * common/wait.h: nothing applied, nothing written) gives its batch back to
 * the editor, before what was put since, so commit() again writes it all
 * (e->lock). Its key generation is the older one: a
 * rotation since re-encrypts every op at the next commit. Out of memory for
 * the joined log, the batch goes, as a failed commit's does. */
static void give_back_batch(pcb_edit *e, edit_batch *b)
{
    pcb_lock_mutex(&e->lock);
    if (e->ops.len == 0 || (pcb_buf_append(&b->ops, e->ops.data, e->ops.len), !b->ops.failed)) {
        size_t n = 0;
        for (size_t off = 0; off < b->ops.len; off += op_at(&b->ops, off).size)
            n++;
        pcb_buf_free(&e->ops);
        e->ops = b->ops;
        pcb_buf_init(&b->ops);
        e->n_ops = n;
        e->clear |= b->clear;
        e->key_gen = b->key_gen;
    }
    pthread_mutex_unlock(&e->lock);
}

int pcb_edit_commit(pcb_edit *e, int sync, pcb_status *st)
{
    edit_batch b;
    take_batch(e, &b);
    int ok = sync ? commit_sync(e->s, &b, st) : commit_async(e->s, &b, st);
    if (!ok && st->code == PCB_E_INTERRUPTED)
        give_back_batch(e, &b);
    pcb_buf_free(&b.ops);
    return ok;
}

static void *writer_main(void *arg)
{
    pcb_store *s = arg;
    pcb_store_lock(s);
    for (;;) {
        while (!s->writer_stop && !pcb_txn_has_work(s))
            pcb_store_wait(s);
        if (!pcb_txn_has_work(s))
            break; /* stopping, with nothing left it could write */
        pcb_store_unlock(s);
        (void)pcb_txn_write_pending(s, 0, NULL); /* a failure is kept for flush/close */
        pcb_store_lock(s);
    }
    pcb_store_unlock(s);
    return NULL;
}
