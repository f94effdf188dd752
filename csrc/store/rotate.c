/*
 * store/rotate.c — key rotation (see store.h): every entry decrypted under
 * the old keys, new keysets (and a new master key when asked), every entry
 * encrypted again into a fresh map, written atomically in one transaction
 * (txn.h); on failure the old keys and map are put back.
 */
#include "store/store.h"

#include <stdlib.h>
#include <string.h>

#include <openssl/crypto.h>

#include "common/bytes.h"
#include "common/mem.h"
#include "store/codec.h"
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

/* What a failed rotation puts back: the keys, the options naming the
 * master key, the sealed keyset texts, and the crypto contexts themselves
 * (moved aside, not rebuilt, so that putting them back cannot fail). */
typedef struct {
    uint8_t siv_key[SIV_KEY_LEN], value_key[VALUE_KEY_LEN], siv_kid[4], value_kid[4];
    uint8_t master[MASTER_KEY_LEN];
    pcb_tink_keyset keyset[2]; /* every key, as a lazy rotation may have left several */
    uint8_t s2v_store[16];
    pcb_store_options opt;
    pcb_buf text[2];
    pcb_siv siv;
    int siv_ready;
    pcb_aead_pair value, master_ctx;
    int new_master;     /* s->opt now owns new strings; opt holds the old ones */
    int moved_master;   /* master_ctx holds the old master context */
} saved_keys;

static void save_keys(pcb_store *s, saved_keys *k)
{
    memcpy(k->siv_key, s->siv_key, SIV_KEY_LEN);
    memcpy(k->value_key, s->value_key, VALUE_KEY_LEN);
    memcpy(k->siv_kid, s->siv_kid, 4);
    memcpy(k->value_kid, s->value_kid, 4);
    memcpy(k->master, s->master, MASTER_KEY_LEN);
    memcpy(k->keyset, s->keyset, sizeof k->keyset);
    memcpy(k->s2v_store, s->s2v_store, 16);
    k->opt = s->opt;
    k->new_master = 0;
    k->moved_master = 0;
    for (int i = 0; i < 2; i++) {
        k->text[i] = s->keyset_text[i];
        pcb_buf_init(&s->keyset_text[i]);
    }
    /* The entry contexts move aside: pcb_keys_new builds new ones. */
    k->siv = s->siv;
    k->siv_ready = s->siv_ready;
    s->siv_ready = 0;
    memset(&s->siv, 0, sizeof s->siv);
    k->value = s->value;
    s->value.enc = s->value.dec = NULL;
}

static void free_options(pcb_store_options *o)
{
    free((void *)o->master_key_file);
    if (o->passphrase)
        pcb_wipe_free((void *)o->passphrase, o->passphrase_len + 1);
}

/* Nothing changed on disk: the old keys, options and contexts come back
 * (moved back, so this cannot fail). */
static void restore_keys(pcb_store *s, saved_keys *k)
{
    memcpy(s->siv_key, k->siv_key, SIV_KEY_LEN);
    memcpy(s->value_key, k->value_key, VALUE_KEY_LEN);
    memcpy(s->siv_kid, k->siv_kid, 4);
    memcpy(s->value_kid, k->value_kid, 4);
    memcpy(s->master, k->master, MASTER_KEY_LEN);
    memcpy(s->keyset, k->keyset, sizeof s->keyset);
    memcpy(s->s2v_store, k->s2v_store, 16);
    if (k->new_master) {
        free_options(&s->opt);
        s->opt = k->opt;
        k->new_master = 0;
    }
    for (int i = 0; i < 2; i++) {
        pcb_buf_free(&s->keyset_text[i]);
        s->keyset_text[i] = k->text[i];
        pcb_buf_init(&k->text[i]);
    }
    if (k->moved_master) {
        pcb_aead_pair_free(&s->master_ctx);
        s->master_ctx = k->master_ctx;
        k->master_ctx.enc = k->master_ctx.dec = NULL;
        k->moved_master = 0;
    }
    if (s->siv_ready)
        pcb_siv_free(&s->siv);
    s->siv = k->siv;
    s->siv_ready = k->siv_ready;
    k->siv_ready = 0;
    pcb_aead_pair_free(&s->value);
    s->value = k->value;
    k->value.enc = k->value.dec = NULL;
    s->key_gen++; /* editors encrypt their puts again, under these keys */
}

/* Drops what save_keys kept (after success, or after restore_keys). */
static void drop_saved(saved_keys *k)
{
    if (k->new_master)
        free_options(&k->opt);
    pcb_buf_free(&k->text[0]);
    pcb_buf_free(&k->text[1]);
    if (k->siv_ready)
        pcb_siv_free(&k->siv);
    pcb_aead_pair_free(&k->value);
    if (k->moved_master)
        pcb_aead_pair_free(&k->master_ctx);
    OPENSSL_cleanse(k, sizeof *k);
}

/* A new master key from a new key file or passphrase. A new passphrase
 * keeps the store's salt and costs (a salt need only be unique per store),
 * so no second file must change atomically with the store. */
static int new_master(pcb_store *s, const pcb_store_options *new_opt, saved_keys *k,
                      pcb_status *st)
{
    pcb_store_options o = s->opt;
    o.master_key_file = new_opt->master_key_file;
    o.passphrase = new_opt->passphrase;
    o.passphrase_len = new_opt->passphrase_len;
    o.scrypt_n = new_opt->scrypt_n;
    if (!pcb_store_own_options(&s->opt, &o)) /* all or nothing: s->opt as it was */
        return pcb_oom(st);
    int created;
    k->new_master = 1;
    k->master_ctx = s->master_ctx; /* kept whole for a rollback */
    s->master_ctx.enc = s->master_ctx.dec = NULL;
    k->moved_master = 1;
    s->rekeying = 1;
    int ok = pcb_keys_load_master(s, 1, &created, st);
    s->rekeying = 0;
    return ok;
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
    saved_keys k;
    int saved, swapped;
    pcb_map old;
} rotate_change;

static void rotate_publish(pcb_store *s, void *arg)
{
    rotate_change *c = arg;
    (void)s;
    if (c->swapped)
        pcb_map_free(&c->old);
    c->swapped = 0;
    if (c->saved)
        drop_saved(&c->k);
    c->saved = 0;
}

static void rotate_undo(pcb_store *s, void *arg)
{
    rotate_change *c = arg;
    if (c->swapped) {
        pcb_map_free(&s->map);
        s->map = c->old;
        if (s->opt.cache)
            pcb_map_clear(&s->plain_cache);
    }
    c->swapped = 0;
    if (c->saved) {
        restore_keys(s, &c->k);
        drop_saved(&c->k);
    }
    c->saved = 0;
}

int pcb_store_rotate(pcb_store *s, const pcb_store_options *new_opt, pcb_status *st)
{
    if (s->codec.file == PCB_FILE_NATIVE)
        return pcb_fail(st, PCB_E_VALUE, "a plain store has no keys to rotate");
    if (!pcb_store_flush(s, st))
        return 0;
    plain_dump d;
    rotate_change c = {.saved = 0, .swapped = 0};
    const pcb_txn_change change = {rotate_publish, rotate_undo, &c};
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
    save_keys(s, &c.k);
    c.saved = 1;
    /* 2. A new master key when asked; 3. new keysets, every entry again. */
    if (ok && new_opt != NULL && (new_opt->master_key_file || new_opt->passphrase))
        ok = new_master(s, new_opt, &c.k, st);
    have_fresh = ok && pcb_map_init(&fresh, s->map.live, s->map.secret);
    ok = ok && (have_fresh || pcb_oom(st)) && pcb_keys_new(s, st) && reencrypt(s, &d, &fresh, st);
    /* 4. Into place and onto disk; txn.c keeps it or puts everything back. */
    if (ok) {
        c.old = s->map;
        s->map = fresh;
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
