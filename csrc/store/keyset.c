/*
 * store/keyset.c — the store's keysets as Tink writes them (see keyset.h).
 */
#include "store/keyset.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <openssl/crypto.h>
#include <openssl/rand.h>

#include "common/bytes.h"
#include "format/hex.h"
#include "store/aead.h"

static const char *const ks_entry[2] = {KEY_KEYSET, VALUE_KEYSET};
static const char *const ks_what[2] = {"key", "value"};

/* --------------------------------------------------------------- types */

/* The type URL and key length a keyset of this store must hold. */
static const char *want_type(const pcb_store *s, int which, size_t *key_len)
{
    *key_len = which == PCB_KS_KEY ? SIV_KEY_LEN : VALUE_KEY_LEN;
    if (which == PCB_KS_KEY)
        return PCB_TINK_AES_SIV;
    return s->opt.value_enc == PCB_VALENC_CHACHA ? PCB_TINK_CHACHA : PCB_TINK_AES_GCM;
}

/* The option that chooses a type URL, for messages. */
static const char *option_for(const char *type_url)
{
    if (strcmp(type_url, PCB_TINK_AES_SIV) == 0)
        return "key_encryption='siv'";
    if (strcmp(type_url, PCB_TINK_CHACHA) == 0)
        return "value_encryption='chacha20-poly1305'";
    if (strcmp(type_url, PCB_TINK_AES_GCM) == 0)
        return "value_encryption='gcm'";
    return NULL;
}

/* The other value AEAD this store knows, for a type URL (NULL: none). */
static const char *other_aead(const char *want)
{
    return strcmp(want, PCB_TINK_CHACHA) == 0 ? PCB_TINK_AES_GCM
           : strcmp(want, PCB_TINK_AES_GCM) == 0 ? PCB_TINK_CHACHA : NULL;
}

static const char *prefix_name(uint32_t p)
{
    static const char *const names[] = {"UNKNOWN", "TINK", "LEGACY", "RAW", "CRUNCHY"};
    return p <= PCB_TINK_PREFIX_CRUNCHY ? names[p] : names[0];
}

int pcb_keyset_check(pcb_store *s, int which, const pcb_tink_keyset *k, int with_keys,
                     pcb_status *st)
{
    size_t want_len;
    const char *want = want_type(s, which, &want_len);
    const char *other = which == PCB_KS_VALUE ? other_aead(want) : NULL;
    for (size_t i = 0; i < k->n; i++) {
        const pcb_tink_key *e = &k->key[i];
        const int primary = e->key_id == k->primary_key_id;
        /* A non-primary key of the other AEAD decrypts (as Tink's AeadConfig);
         * the primary decides what the store writes: the option's type. */
        const int type_ok = strcmp(e->type_url, want) == 0
                            || (!primary && other && strcmp(e->type_url, other) == 0);
        if (!type_ok) {
            const char *opt = option_for(e->type_url);
            return pcb_fail(st, PCB_E_FORMAT,
                            "%s: the %s keyset ('%s') holds a key of type %s (id %u%s), but the "
                            "store was opened with %s, which needs %s%s%s", s->path, ks_what[which],
                            ks_entry[which], pcb_tinkpb_type_name(e->type_url), e->key_id,
                            primary ? ", the primary" : "", option_for(want),
                            pcb_tinkpb_type_name(want),
                            opt ? "; open it with " : " (this store reads only AesSivKey, "
                            "AesGcmKey and ChaCha20Poly1305Key)", opt ? opt : "");
        }
        if (e->status != PCB_TINK_ENABLED)
            continue; /* never used: Tink leaves them out of its primitive */
        if (primary && e->output_prefix != PCB_TINK_PREFIX_TINK)
            return pcb_fail(st, PCB_E_FORMAT, "%s: the %s keyset ('%s'): its primary key %u has "
                            "output prefix type %s (%u); this store writes every entry under the "
                            "primary with Tink's TINK prefix, as ESP does: make a TINK key the "
                            "primary (non-primary keys of any prefix type are read)", s->path,
                            ks_what[which], ks_entry[which], e->key_id,
                            prefix_name(e->output_prefix), e->output_prefix);
        if (with_keys && (e->key_len != want_len || e->version != 0
                          || e->material != PCB_TINK_SYMMETRIC))
            return pcb_fail(st, PCB_E_FORMAT, "%s: the %s keyset ('%s'): key %u is a %s of %zu "
                            "bytes, version %u, key material type %u; this store needs %zu "
                            "bytes, version 0, SYMMETRIC (1)", s->path, ks_what[which],
                            ks_entry[which], e->key_id, pcb_tinkpb_type_name(e->type_url),
                            e->key_len, e->version, e->material, want_len);
    }
    return 1;
}

/* -------------------------------------------------------------- sealing */

int pcb_keyset_seal(pcb_store *s, const pcb_tink_keyset *k, EVP_CIPHER_CTX *master_enc,
                    pcb_buf *out, pcb_status *st)
{
    pcb_buf pt, enc;
    uint8_t nonce[NONCE_LEN];
    uint8_t *sealed = NULL;
    size_t sl = 0;
    pcb_buf_init(&pt);
    pcb_buf_init(&enc);
    int ok = pcb_tinkpb_keyset_encode(k, &pt) || pcb_oom(st);
    if (ok) {
        sl = NONCE_LEN + pt.len + TAG_LEN;
        sealed = malloc(sl);
        ok = sealed != NULL || pcb_oom(st);
    }
    /* AndroidKeystoreAesGcm: IV || ciphertext || tag, empty associated data. */
    ok = ok && (RAND_bytes_ex(s->libctx, nonce, NONCE_LEN, 0) == 1
                || pcb_fail_openssl(st, "drawing a keyset nonce"))
         && pcb_store_seal(master_enc, NULL, nonce, NULL, 0, (const uint8_t *)pt.data,
                           pt.len, sealed, st);
    ok = ok && (pcb_tinkpb_encrypted_encode(sealed, sl, k, &enc) || pcb_oom(st));
    if (ok) {
        out->len = 0;
        char *p = pcb_buf_reserve(out, 2 * enc.len);
        if (p == NULL) {
            ok = pcb_oom(st);
        } else {
            pcb_hex_encode((const uint8_t *)enc.data, enc.len, p);
            out->len = 2 * enc.len;
        }
    }
    free(sealed);
    pcb_buf_free(&pt); /* wiped: it held the keys */
    pcb_buf_free(&enc);
    return ok;
}

/* The text earlier releases wrote: hex(nonce || GCM(master, kid || key) ||
 * tag). 1 opened into *k, 0 not authentic. */
static int open_pre_tink(pcb_store *s, int which, pcb_tink_keyset *k, EVP_CIPHER_CTX *master_dec,
                         const uint8_t *sealed, size_t sl, pcb_status *st)
{
    size_t key_len = sl - NONCE_LEN - 4 - TAG_LEN;
    uint8_t pt[4 + SIV_KEY_LEN];
    int rc = pcb_store_unseal(master_dec, NULL, NULL, 0, sealed, sl, pt, st);
    if (rc == 1) {
        size_t want_len;
        OPENSSL_cleanse(k, sizeof *k);
        k->n = 1;
        strcpy(k->key[0].type_url, want_type(s, which, &want_len));
        k->key[0].key_id = k->primary_key_id = pcb_load_be32(pt);
        k->key[0].status = PCB_TINK_ENABLED;
        k->key[0].output_prefix = PCB_TINK_PREFIX_TINK;
        k->key[0].material = PCB_TINK_SYMMETRIC;
        memcpy(k->key[0].key_value, pt + 4, key_len);
        k->key[0].key_len = key_len;
    }
    OPENSSL_cleanse(pt, sizeof pt);
    return rc;
}

int pcb_keyset_open(pcb_store *s, int which, pcb_tink_keyset *into, EVP_CIPHER_CTX *master_dec,
                    const char *hex, size_t len, pcb_status *st)
{
    char err[200];
    const uint8_t *ct = NULL;
    size_t ct_len = 0, n = len / 2;
    int has_info, rc = -1;
    pcb_tink_keyset info;
    uint8_t *bytes = malloc(n ? n : 1), *pt = NULL;
    if (bytes == NULL)
        return pcb_oom(st) - 1;
    if (!pcb_hex_decode(hex, len, bytes)) {
        pcb_fail(st, PCB_E_FORMAT, "%s: entry '%s' (the %s keyset) is not hexadecimal text, as "
                 "Tink's SharedPrefKeysetWriter writes", s->path, ks_entry[which], ks_what[which]);
        goto out;
    }
    if (!pcb_tinkpb_encrypted_decode(bytes, n, &ct, &ct_len, &info, &has_info, err, sizeof err)) {
        size_t key_len = which == PCB_KS_KEY ? SIV_KEY_LEN : VALUE_KEY_LEN;
        if (n == NONCE_LEN + 4 + key_len + TAG_LEN) { /* an earlier release's text */
            rc = open_pre_tink(s, which, into, master_dec, bytes, n, st);
            rc = rc == 1 ? 2 : rc;
            goto out;
        }
        pcb_fail(st, PCB_E_FORMAT, "%s: entry '%s' (the %s keyset) is not a Tink "
                 "EncryptedKeyset: %s", s->path, ks_entry[which], ks_what[which], err);
        goto out;
    }
    if (has_info && !pcb_keyset_check(s, which, &info, 0, st))
        goto out;
    if (ct_len < NONCE_LEN + TAG_LEN) {
        pcb_fail(st, PCB_E_FORMAT, "%s: entry '%s' (the %s keyset): encrypted_keyset holds %zu "
                 "bytes, fewer than the master key's IV and tag (28)", s->path,
                 ks_entry[which], ks_what[which], ct_len);
        goto out;
    }
    pt = malloc(ct_len - NONCE_LEN - TAG_LEN + 1);
    if (pt == NULL) {
        rc = pcb_oom(st) - 1;
        goto out;
    }
    rc = pcb_store_unseal(master_dec, NULL, NULL, 0, ct, ct_len, pt, st);
    if (rc == 1 && !pcb_tinkpb_keyset_decode(pt, ct_len - NONCE_LEN - TAG_LEN, into,
                                             err, sizeof err))
        rc = pcb_fail(st, PCB_E_FORMAT, "%s: entry '%s' (the %s keyset) decrypts, but not to a "
                      "valid Tink Keyset: %s", s->path, ks_entry[which], ks_what[which], err) - 1;
    if (rc == 1 && !pcb_keyset_check(s, which, into, 1, st))
        rc = -1;
    if (rc == 0 && n == NONCE_LEN + 4 + (which == PCB_KS_KEY ? SIV_KEY_LEN : VALUE_KEY_LEN) + TAG_LEN
        && open_pre_tink(s, which, into, master_dec, bytes, n, st) == 1)
        rc = 2; /* an earlier release's text that happens to parse as an EncryptedKeyset */
    if (rc < 1)
        OPENSSL_cleanse(into, sizeof *into);
    OPENSSL_cleanse(pt, ct_len - NONCE_LEN - TAG_LEN + 1);
out:
    free(pt);
    free(bytes);
    return rc;
}

/* ----------------------------------------------------------------- keys */

const pcb_tink_key *pcb_keyset_next(const pcb_tink_keyset *k, const uint8_t *ct, size_t len,
                                    size_t *pos, size_t *skip)
{
    /* *pos in [0, n): the prefixed keys; [n, 2n): the RAW keys. */
    for (; *pos < 2 * k->n; (*pos)++) {
        const pcb_tink_key *e = &k->key[*pos % k->n];
        const int raw_phase = *pos >= k->n;
        if (e->status != PCB_TINK_ENABLED || (e->output_prefix == PCB_TINK_PREFIX_RAW) != raw_phase)
            continue;
        if (!raw_phase) {
            const uint8_t lead = e->output_prefix == PCB_TINK_PREFIX_TINK ? 0x01 : 0x00;
            if (len < PREFIX_LEN || ct[0] != lead || pcb_load_be32(ct + 1) != e->key_id)
                continue;
        }
        *skip = raw_phase ? 0 : PREFIX_LEN;
        (*pos)++;
        return e;
    }
    return NULL;
}

int pcb_keyset_is_other_type(const pcb_store *s, int which, const pcb_tink_key *e)
{
    size_t key_len;
    return strcmp(e->type_url, want_type(s, which, &key_len)) != 0;
}

const pcb_tink_key *pcb_keyset_primary(const pcb_tink_keyset *k)
{
    for (size_t i = 0; i < k->n; i++)
        if (k->key[i].key_id == k->primary_key_id)
            return &k->key[i];
    return NULL;
}

int pcb_keyset_fresh(pcb_store *s, int which, pcb_tink_keyset *k, int replace, pcb_status *st)
{
    if (replace)
        OPENSSL_cleanse(k, sizeof *k);
    if (k->n == PCB_TINK_MAX_KEYS)
        return pcb_fail(st, PCB_E_VALUE, "%s: the %s keyset already holds %d keys, the most "
                        "this store keeps; rotate with lazy=False to start a new keyset",
                        s->path, ks_what[which], PCB_TINK_MAX_KEYS);
    pcb_tink_key *e = &k->key[k->n];
    uint32_t id;
    size_t key_len;
    for (;;) { /* as Tink: a random id, unique in the keyset (31 bits: Java's int) */
        uint8_t r[4];
        if (RAND_bytes_ex(s->libctx, r, 4, 0) != 1)
            return pcb_fail_openssl(st, "drawing a key id");
        id = pcb_load_be32(r) & 0x7fffffffu;
        int clash = id == 0;
        for (size_t i = 0; i < k->n; i++)
            clash |= k->key[i].key_id == id;
        if (!clash)
            break;
    }
    memset(e, 0, sizeof *e);
    strcpy(e->type_url, want_type(s, which, &key_len));
    if (RAND_priv_bytes_ex(s->libctx, e->key_value, key_len, 0) != 1)
        return pcb_fail_openssl(st, "generating a key");
    e->key_len = key_len;
    e->key_id = id;
    e->status = PCB_TINK_ENABLED;
    e->output_prefix = PCB_TINK_PREFIX_TINK;
    e->material = PCB_TINK_SYMMETRIC;
    k->n++;
    k->primary_key_id = id;
    return 1;
}

/* ----------------------------------------------------------- inspection */

int pcb_keyset_info(const char *hex, size_t len, pcb_tink_keyset *info, char *err, size_t cap)
{
    size_t n = len / 2;
    uint8_t *bytes = malloc(n ? n : 1);
    const uint8_t *ct;
    size_t ct_len;
    int has_info = 0, rc = -1;
    info->n = 0;
    if (bytes == NULL) {
        snprintf(err, cap, "out of memory");
        return -1;
    }
    if (!pcb_hex_decode(hex, len, bytes))
        snprintf(err, cap, "not hexadecimal text");
    else if (pcb_tinkpb_encrypted_decode(bytes, n, &ct, &ct_len, info, &has_info, err, cap))
        rc = has_info;
    else if (n == NONCE_LEN + 4 + SIV_KEY_LEN + TAG_LEN || n == NONCE_LEN + 4 + VALUE_KEY_LEN + TAG_LEN)
        rc = 0; /* the pre-Tink text: no plaintext metadata */
    free(bytes);
    return rc;
}
