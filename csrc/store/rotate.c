/*
 * store/rotate.c — key rotation (see store.h): every entry decrypted under
 * the old keys, new keysets (and a new master key when asked), every entry
 * encrypted again into a fresh map, written atomically; on failure the old
 * keys and map are put back.
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
#include "store/persist.h"

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

int pcb_store_rotate(pcb_store *s, const pcb_store_options *new_opt, pcb_status *st)
{
    if (!s->opt.encrypted)
        return pcb_fail(st, PCB_E_VALUE, "a plain store has no keys to rotate");
    if (!pcb_store_flush(s, st))
        return 0;
    plain_dump d;
    pcb_buf_init(&d.names);
    pcb_buf_init(&d.values);
    pthread_mutex_lock(&s->io_lock);
    pcb_store_lock(s);
    /* 1. Every entry decrypted under the old keys (the seed's migration). */
    int ok = pcb_store_all_locked(s, dump_entry, &d, st) || (st->code ? 0 : pcb_oom(st));
    struct {
        uint8_t siv_key[SIV_KEY_LEN], value_key[VALUE_KEY_LEN], siv_kid[4], value_kid[4];
        uint8_t master[MASTER_KEY_LEN];
    } saved_keys; /* the old keys, restored on failure */
    memcpy(saved_keys.siv_key, s->siv_key, SIV_KEY_LEN);
    memcpy(saved_keys.value_key, s->value_key, VALUE_KEY_LEN);
    memcpy(saved_keys.siv_kid, s->siv_kid, 4);
    memcpy(saved_keys.value_kid, s->value_kid, 4);
    memcpy(saved_keys.master, s->master, MASTER_KEY_LEN);
    pcb_store_options old_opt = s->opt;
    pcb_buf old_text[2] = {s->keyset_text[0], s->keyset_text[1]};
    pcb_buf_init(&s->keyset_text[0]);
    pcb_buf_init(&s->keyset_text[1]);
    int new_master = 0;
    if (ok && new_opt != NULL && (new_opt->master_key_file || new_opt->passphrase)) {
        /* 2. A new master key, from a new file or passphrase. */
        pcb_store_options o = s->opt;
        o.master_key_file = new_opt->master_key_file;
        o.passphrase = new_opt->passphrase;
        o.passphrase_len = new_opt->passphrase_len;
        o.scrypt_n = new_opt->scrypt_n;
        ok = pcb_store_own_options(&s->opt, &o) || pcb_oom(st);
        if (ok) {
            /* A new passphrase keeps the store's salt and costs (a salt need
             * only be unique per store), so no second file must change
             * atomically with the store. */
            int created;
            new_master = 1;
            ok = pcb_keys_load_master(s, 1, &created, st);
        }
    }
    /* 3. New keysets; every entry encrypted again into a fresh map. */
    pcb_map fresh;
    rotate_ctx rc = {&fresh, s, st, {0}, {0}};
    pcb_buf_init(&rc.sname);
    pcb_buf_init(&rc.svalue);
    int have_fresh = ok && pcb_map_init(&fresh, s->map.live, s->map.secret);
    ok = ok && (have_fresh || pcb_oom(st)) && pcb_keys_new(s, st);
    for (size_t no = 0, vo = 0; ok && no < d.names.len;) {
        size_t nl = pcb_load_le32((const uint8_t *)d.names.data + no), vl = pcb_load_le32((const uint8_t *)d.values.data + vo);
        ok = rotate_entry(&rc, d.names.data + no + 4, nl, (const uint8_t *)d.values.data + vo + 4, vl) == 0;
        no += 4 + nl;
        vo += 4 + vl;
    }
    if (ok) {
        pcb_map old = s->map;
        s->map = fresh;
        have_fresh = 0;
        s->mem_gen++;
        pcb_store_unlock(s);
        uint64_t gen;
        ok = pcb_persist_write(s, &gen, st);
        pcb_store_lock(s);
        if (ok) {
            pcb_map_free(&old);
            s->disk_gen = gen;
        } else {
            fresh = s->map;
            have_fresh = 1;
            s->map = old;
        }
    }
    if (!ok) {
        /* Nothing changed on disk: put the old keys back. */
        memcpy(s->siv_key, saved_keys.siv_key, SIV_KEY_LEN);
        memcpy(s->value_key, saved_keys.value_key, VALUE_KEY_LEN);
        memcpy(s->siv_kid, saved_keys.siv_kid, 4);
        memcpy(s->value_kid, saved_keys.value_kid, 4);
        memcpy(s->master, saved_keys.master, MASTER_KEY_LEN);
        if (new_master) {
            free((void *)s->opt.master_key_file);
            if (s->opt.passphrase)
                pcb_wipe_free((void *)s->opt.passphrase, s->opt.passphrase_len + 1);
            s->opt = old_opt;
        }
        for (int k = 0; k < 2; k++) {
            pcb_buf_free(&s->keyset_text[k]);
            s->keyset_text[k] = old_text[k];
            pcb_buf_init(&old_text[k]);
        }
        pcb_status ignored = {0};
        pcb_aead_pair_free(&s->master_ctx);
        pcb_aead_pair_new(&s->master_ctx, s->master_cipher, s->master, &ignored);
        s->key_gen++;
        pcb_keys_contexts(s, &ignored);
    } else if (new_master) {
        free((void *)old_opt.master_key_file);
        if (old_opt.passphrase)
            pcb_wipe_free((void *)old_opt.passphrase, old_opt.passphrase_len + 1);
    }
    if (have_fresh)
        pcb_map_free(&fresh);
    pcb_buf_free(&old_text[0]);
    pcb_buf_free(&old_text[1]);
    OPENSSL_cleanse(&saved_keys, sizeof saved_keys);
    pcb_store_unlock(s);
    pthread_mutex_unlock(&s->io_lock);
    pcb_buf_free(&rc.sname);
    pcb_buf_free(&rc.svalue);
    pcb_buf_free(&d.names);
    pcb_buf_free(&d.values);
    return ok;
}
