/*
 * store/commit.c — editors, commit and apply, and the background writer
 * (see store.h for the API and internal.h for the locking).
 *
 * An editor keeps a log of ops, each with its stored forms computed at put
 * time (as ESP's Editor encrypts in putString); commit applies the log to the
 * map under the lock, then writes the file (io_lock held throughout, so
 * commits are written in order); apply does the first half and wakes the
 * writer thread for the second.
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
#include "store/internal.h"
#include "store/persist.h"

/* Op record: kind(1) plain_len(4) sname_len(4) svalue_len(4) pt_len(4), then the bytes. */
#define OP_PUT 1
#define OP_REMOVE 2
#define OP_HEADER 17

pcb_edit *pcb_edit_new(pcb_store *s, pcb_status *st)
{
    pcb_edit *e = calloc(1, sizeof *e);
    if (e == NULL) {
        pcb_oom(st);
        return NULL;
    }
    e->s = s;
    pcb_store_lock(s);
    e->key_gen = s->key_gen;
    pcb_store_unlock(s);
    pcb_buf_init(&e->ops);
    return e;
}

void pcb_edit_free(pcb_edit *e)
{
    if (e == NULL)
        return;
    pcb_buf_free(&e->ops);
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

int pcb_edit_put(pcb_edit *e, const char *name, size_t nl, const uint8_t *value, size_t vl,
                 pcb_status *st)
{
    if (!pcb_codec_check_put(e->s, name, nl, value, vl, st))
        return 0;
    if (nl > (1u << 28) || vl > (1u << 30))
        return pcb_fail(st, PCB_E_VALUE, "entry too large (names up to 256 MiB, values up to 1 GiB)");
    pcb_store *s = e->s;
    pcb_store_lock(s);
    int ok = pcb_edit_encode_op(s, &e->ops, OP_PUT, name, nl, value, vl, st);
    pcb_store_unlock(s);
    e->n_ops += ok;
    return ok;
}

int pcb_edit_remove(pcb_edit *e, const char *name, size_t nl, pcb_status *st)
{
    if (!pcb_codec_check_name(e->s, name, nl, st))
        return 0;
    if (e->s->codec.xml_names && memchr(name, 0, nl) != NULL)
        return 1; /* no such entry can exist */
    pcb_store *s = e->s;
    pcb_store_lock(s);
    int ok = pcb_edit_encode_op(s, &e->ops, OP_REMOVE, name, nl, NULL, 0, st); /* ESP encrypts the key */
    pcb_store_unlock(s);
    e->n_ops += ok;
    return ok;
}

/* e->clear: bit 1 clear(), bit 2 remove_unreadable() (both done first, as Android clears). */
void pcb_edit_clear(pcb_edit *e)
{
    e->clear |= 1;
}

void pcb_edit_remove_unreadable(pcb_edit *e)
{
    e->clear |= 2;
}

static uint32_t get_u32_le(const char *p) { return pcb_load_le32((const uint8_t *)p); }

/* Applies the editor's ops to memory (lock held). */
static int apply_ops(pcb_store *s, pcb_edit *e, pcb_status *st)
{
    pcb_buf redone;
    const pcb_buf *ops = &e->ops;
    pcb_buf_init(&redone);
    if (e->key_gen != s->key_gen) {
        /* Keys rotated since the puts were encrypted: encrypt them again. */
        for (size_t off = 0; off < ops->len;) {
            const char *p = ops->data + off;
            size_t nl = get_u32_le(p + 1), sl = get_u32_le(p + 5), vl = get_u32_le(p + 9),
                   pl = get_u32_le(p + 13);
            if (!pcb_edit_encode_op(s, &redone, p[0], p + OP_HEADER, nl,
                           (const uint8_t *)p + OP_HEADER + nl + sl + vl, pl, st)) {
                pcb_buf_free(&redone);
                return 0;
            }
            off += OP_HEADER + nl + sl + vl + pl;
        }
        ops = &redone;
    }
    if (e->clear & 1) {
        pcb_share_note_clear(s); /* other writers' entries go too (merge.h) */
        pcb_map_clear(&s->map);
        if (s->opt.cache)
            pcb_map_clear(&s->plain_cache);
    } else if (e->clear & 2) {
        size_t dropped;
        if (!pcb_codec_drop_unreadable(s, &dropped, st)) {
            pcb_buf_free(&redone);
            return 0;
        }
    }
    int ok = 1;
    for (size_t off = 0; off < ops->len && ok;) {
        const char *p = ops->data + off;
        size_t nl = get_u32_le(p + 1), sl = get_u32_le(p + 5), vl = get_u32_le(p + 9),
               pl = get_u32_le(p + 13);
        const uint8_t *name = (const uint8_t *)p + OP_HEADER;
        const uint8_t *sname = name + nl, *svalue = sname + sl;
        if (p[0] == OP_PUT)
            ok = pcb_map_put(&s->map, sname, sl, 0, svalue, vl) || pcb_oom(st);
        else
            pcb_map_remove(&s->map, sname, sl);
        ok = ok && pcb_share_note(s, sname, sl, st); /* merged over other writers' (merge.h) */
        if (s->opt.cache)
            pcb_map_remove(&s->plain_cache, name, nl);
        off += OP_HEADER + nl + sl + vl + pl;
    }
    pcb_buf_free(&redone);
    if (ok)
        ok = pcb_map_maybe_compact(&s->map) || pcb_oom(st);
    s->mem_gen++;
    return ok;
}

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

int pcb_edit_commit(pcb_edit *e, int sync, pcb_status *st)
{
    pcb_store *s = e->s;
    int ok;
    if (sync) {
        uint64_t gen;
        pthread_mutex_lock(&s->io_lock);
        pcb_store_lock(s);
        ok = apply_ops(s, e, st);
        pcb_store_unlock(s);
        ok = ok && pcb_persist_write(s, &gen, st);
        if (ok) {
            pcb_store_lock(s);
            if (gen > s->disk_gen)
                s->disk_gen = gen;
            pthread_cond_broadcast(&s->cond);
            pcb_store_unlock(s);
        }
        pthread_mutex_unlock(&s->io_lock);
    } else {
        pcb_store_lock(s);
        ok = apply_ops(s, e, st) && start_writer(s, st);
        pthread_cond_broadcast(&s->cond);
        pcb_store_unlock(s);
    }
    e->ops.len = 0;
    e->n_ops = 0;
    e->clear = 0;
    e->key_gen = s->key_gen;
    return ok;
}

static void *writer_main(void *arg)
{
    pcb_store *s = arg;
    pcb_store_lock(s);
    for (;;) {
        while (!s->writer_stop && s->disk_gen >= s->mem_gen)
            pthread_cond_wait(&s->cond, &s->lock);
        if (s->disk_gen >= s->mem_gen && s->writer_stop)
            break;
        pcb_store_unlock(s);
        pcb_status st = {0};
        uint64_t gen;
        pthread_mutex_lock(&s->io_lock);
        int ok = pcb_persist_write(s, &gen, &st);
        pthread_mutex_unlock(&s->io_lock);
        pcb_store_lock(s);
        if (ok) {
            if (gen > s->disk_gen)
                s->disk_gen = gen;
        } else {
            /* Reported by the next flush/close; later changes retry. */
            s->writer_errno = st.code == PCB_E_OS ? st.os_errno : EIO;
            snprintf(s->writer_error, sizeof s->writer_error, "background write failed: %.200s", st.msg);
            s->disk_gen = s->mem_gen;
        }
        pthread_cond_broadcast(&s->cond);
    }
    pcb_store_unlock(s);
    return NULL;
}
