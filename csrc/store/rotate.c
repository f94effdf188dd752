/*
 * store/rotate.c — key rotation (see store.h): every entry decrypted under
 * the old keys, new keysets (and a new master key when asked), every entry
 * encrypted again into a fresh map, written atomically in one transaction
 * (txn.h); on failure the old keys (keys.c keeps the whole key state, the
 * scrypt parameters included) and map are put back. A new passphrase's
 * .scrypt tag is written after the store's file (the transaction's
 * after_write); a .scrypt the rotation had to create is removed by the undo.
 */
#include "store/store.h"

#include <stdlib.h>
#include <string.h>

#include <openssl/crypto.h>

#include "common/bytes.h"
#include "common/mem.h"
#include "store/codec.h"
#include "store/entries.h"
#include "store/internal.h"
#include "store/keys.h"
#include "store/txn.h"

typedef struct {
    pcb_map *fresh;
    pcb_store *s; /* already holding the new keys */
    pcb_status *st;
    pcb_buf sname, svalue;
} rotate_ctx;

static int rotate_entry(void *arg, const char *name, size_t nl, const uint8_t *v, size_t vl)
{
    rotate_ctx *c = arg;
    size_t aad_len;
    if (!pcb_codec_name(c->s, name, nl, &c->sname, c->st))
        return 1;
    const uint8_t *aad = pcb_codec_value_aad(c->s, (const uint8_t *)c->sname.data, c->sname.len, &aad_len);
    if (aad == NULL || !pcb_codec_seal_value(c->s, aad, aad_len, v, vl, &c->svalue, c->st)
        || !pcb_map_put(c->fresh, (const uint8_t *)c->sname.data, c->sname.len, 0,
                    (const uint8_t *)c->svalue.data, c->svalue.len))
        return c->st->code ? 1 : (pcb_oom(c->st), 1);
    return 0;
}

typedef struct {
    pcb_buf names, values; /* concatenated, with lengths */
} plain_dump;

static int dump_entry(void *arg, const char *name, size_t nl, const uint8_t *v, size_t vl)
{
    plain_dump *d = arg;
    pcb_buf_put_le32(&d->names, (uint32_t)nl);
    pcb_buf_append(&d->names, name, nl);
    pcb_buf_put_le32(&d->values, (uint32_t)vl);
    pcb_buf_append(&d->values, (const char *)v, vl);
    return d->names.failed || d->values.failed;
}


/* Every dumped entry encrypted under the store's (new) keys into fresh. */
static int reencrypt(pcb_store *s, const plain_dump *d, pcb_map *fresh, pcb_status *st)
{
    rotate_ctx rc = {fresh, s, st, {0}, {0}};
    int ok = 1;
    pcb_buf_init(&rc.sname);
    pcb_buf_init(&rc.svalue);
    for (size_t no = 0, vo = 0; ok && no < d->names.len;) {
        size_t nl = pcb_load_le32((const uint8_t *)d->names.data + no);
        size_t vl = pcb_load_le32((const uint8_t *)d->values.data + vo);
        ok = rotate_entry(&rc, d->names.data + no + 4, nl,
                          (const uint8_t *)d->values.data + vo + 4, vl) == 0;
        no += 4 + nl;
        vo += 4 + vl;
    }
    pcb_buf_free(&rc.sname);
    pcb_buf_free(&rc.svalue);
    return ok;
}

/* A rotation's change, for its transaction: the keys saved, the map
 * before the re-encrypted one swapped in. */
typedef struct {
    pcb_keys_saved *k; /* keys.c: the old keys, NULL until saved */
    int swapped;
    pcb_map old;
} rotate_change;

static void rotate_publish(pcb_store *s, void *arg)
{
    rotate_change *c = arg;
    if (c->swapped)
        pcb_map_free(&c->old);
    c->swapped = 0;
    pcb_keys_end_saved(s, c->k, 0);
    c->k = NULL;
}

static void rotate_after_write(pcb_store *s, void *arg)
{
    rotate_change *c = arg;
    pcb_keys_write_side(s, c->k); /* a new passphrase's .scrypt tag, now that the file is out */
}

static void rotate_undo(pcb_store *s, void *arg)
{
    rotate_change *c = arg;
    if (c->swapped)
        pcb_entries_replace(s, &c->old);
    c->swapped = 0;
    pcb_keys_end_saved(s, c->k, 1);
    c->k = NULL;
}

int pcb_store_rotate(pcb_store *s, const pcb_store_options *new_opt, pcb_status *st)
{
    if (s->codec.file == PCB_FILE_NATIVE)
        return pcb_fail(st, PCB_E_VALUE, "a plain store has no keys to rotate");
    if (!pcb_store_flush(s, st))
        return 0;
    plain_dump d;
    rotate_change c = {.k = NULL, .swapped = 0};
    const pcb_txn_change change = {rotate_publish, rotate_undo, &c, rotate_after_write};
    pcb_map fresh;
    int have_fresh = 0;
    pcb_buf_init(&d.names);
    pcb_buf_init(&d.values);
    /* One transaction: other writers wait until the new file is in place;
     * their changes so far are merged first. */
    pcb_txn t;
    if (!pcb_txn_begin(&t, s, &change, st))
        return 0;
    /* 1. Every entry decrypted under the old keys (the seed's migration). */
    int ok = pcb_store_all_locked(s, dump_entry, &d, st) || (st->code ? 0 : pcb_oom(st));
    if (ok && (c.k = pcb_keys_save(s, st)) == NULL)
        ok = 0;
    /* 2. A new master key when asked; 3. new keysets, every entry again. */
    if (ok && new_opt != NULL && (new_opt->master_key_file || new_opt->passphrase))
        ok = pcb_keys_new_master(s, new_opt, c.k, st);
    have_fresh = ok && pcb_map_init(&fresh, s->map.live, s->map.secret);
    ok = ok && (have_fresh || pcb_oom(st)) && pcb_keys_new(s, st) && reencrypt(s, &d, &fresh, st);
    /* 4. Into place and onto disk; txn.c keeps it or puts everything back. */
    if (ok) {
        pcb_entries_swap(s, &fresh);
        c.old = fresh; /* the map before */
        c.swapped = 1;
        have_fresh = 0;
        (void)pcb_txn_write(&t, st);
    }
    if (have_fresh)
        pcb_map_free(&fresh);
    ok = pcb_txn_end(&t);
    pcb_buf_free(&d.names);
    pcb_buf_free(&d.values);
    return ok;
}
