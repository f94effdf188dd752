/*
 * crypto/cipher.c — pcb_cipher: one keyed transformation running whole
 * messages or a stream, over EVP, our SIV or our TEA/XTEA (see cipher.h).
 */
#include "crypto/cipher.h"

#include <stdlib.h>
#include <string.h>
#include <openssl/crypto.h>
#include <openssl/err.h>

#define TAG_LEN PCB_AEAD_TAG_LEN

/* --------------------------------------------------------------- ciphers */

static int evp_init(pcb_cipher *c, const uint8_t *key, pcb_status *st)
{
    const uint8_t *iv = c->has_iv ? c->iv : NULL;
    if (!EVP_CipherInit_ex2(c->ctx, NULL, key, iv, c->encrypt, NULL))
        return pcb_fail_openssl(st, c->t->name);
    return 1;
}

static void tea_key(pcb_cipher *c)
{
    pcb_tea_set_key(&c->tea, c->key,
                    c->t->family == PCB_FAM_TEA ? PCB_TEA : PCB_XTEA, c->rounds,
                    c->t->reference ? PCB_TEA_IMPL_REF : c->tea_impl);
}

int pcb_cipher_open(pcb_cipher *c, const pcb_evp_cache *cache, const pcb_transform *t,
                    int encrypt, const uint8_t *key, size_t key_len,
                    const uint8_t *iv, size_t iv_len, uint32_t rounds,
                    pcb_tea_impl tea_impl, pcb_status *st)
{
    memset(c, 0, sizeof *c);
    c->t = t;
    c->encrypt = encrypt ? 1 : 0;
    c->key_len = key_len;
    c->has_iv = iv != NULL;
    c->iv_len = iv ? iv_len : 0;
    c->rounds = rounds;
    c->tea_impl = tea_impl;
    memcpy(c->key, key, key_len);
    if (iv)
        memcpy(c->iv, iv, iv_len);

    if (t->family == PCB_FAM_TEA || t->family == PCB_FAM_XTEA) {
        tea_key(c);
        return pcb_cipher_stream_reset(c, st);
    }
    int idx = pcb_evp_index(t, key_len);
    if (idx < 0 || cache->cipher[idx] == NULL) {
        if (t->family == PCB_FAM_DES && cache->legacy_error[0])
            return pcb_fail(st, PCB_E_UNSUPPORTED, "%s is unavailable: %s", t->name,
                            cache->legacy_error);
        return pcb_fail(st, PCB_E_UNSUPPORTED, "%s is unavailable in this OpenSSL (%s)",
                        t->name, idx < 0 ? "no such key size" : pcb_evp_name(idx));
    }
    if (t->mode == PCB_MODE_SIV) {
        const EVP_CIPHER *ctr = cache->cipher[PCB_EVP_AES128_CTR + (idx - PCB_EVP_AES128_CBC)];
        const EVP_CIPHER *ecb = cache->cipher[PCB_EVP_AES128_ECB + (idx - PCB_EVP_AES128_CBC)];
        if (ctr == NULL || ecb == NULL || !pcb_siv_new(&c->siv, cache->cipher[idx], ecb, ctr))
            return pcb_fail_openssl(st, "AES-SIV setup");
        c->siv_ready = 1;
        if (!pcb_siv_set_key(&c->siv, key, key_len))
            return pcb_fail_openssl(st, "AES-SIV key setup");
        return 1;
    }
    c->ctx = EVP_CIPHER_CTX_new();
    if (c->ctx == NULL)
        return pcb_fail_openssl(st, "EVP_CIPHER_CTX_new");
    if (!EVP_CipherInit_ex2(c->ctx, cache->cipher[idx], NULL, NULL, c->encrypt, NULL))
        return pcb_fail_openssl(st, t->name);
    if (t->mode == PCB_MODE_GCM && c->iv_len != 12
        && EVP_CIPHER_CTX_ctrl(c->ctx, EVP_CTRL_AEAD_SET_IVLEN, (int)c->iv_len, NULL) <= 0)
        return pcb_fail_openssl(st, "setting the GCM IV length");
    if ((t->mode == PCB_MODE_ECB || t->mode == PCB_MODE_CBC)
        && !EVP_CIPHER_CTX_set_padding(c->ctx, t->padding))
        return pcb_fail_openssl(st, "setting the padding");
    return evp_init(c, c->key, st);
}

/* Another library: its context allocated here, keyed by it. */
int pcb_cipher_open_backend(pcb_cipher *c, pcb_backend backend, const pcb_evp_cache *cache,
                            const pcb_transform *t, int encrypt, const uint8_t *key,
                            size_t key_len, const uint8_t *iv, size_t iv_len, uint32_t rounds,
                            pcb_tea_impl tea_impl, pcb_status *st)
{
    if (backend == PCB_BK_OPENSSL)
        return pcb_cipher_open(c, cache, t, encrypt, key, key_len, iv, iv_len, rounds, tea_impl, st);
    memset(c, 0, sizeof *c);
    c->t = t;
    c->backend = backend;
    if (!pcb_backend_supports(backend, cache, t, key_len))
        return pcb_backend_lacks(backend, cache, t, key_len, st);
    const pcb_backend_ops *ops = pcb_backend_get(backend);
    if (!ops->check(t, iv ? iv_len : 0, SIZE_MAX, iv != NULL, st))
        return 0;
    c->encrypt = encrypt ? 1 : 0;
    c->key_len = key_len;
    c->has_iv = iv != NULL;
    c->iv_len = iv ? iv_len : 0;
    memcpy(c->key, key, key_len);
    if (iv)
        memcpy(c->iv, iv, iv_len);
    if ((c->bctx = calloc(1, ops->ctx_size)) == NULL)
        return pcb_oom(st);
    c->bk = ops;
    if (ops->set_rounds && pcb_has_rounds(t))
        ops->set_rounds(c->bctx, rounds);
    return ops->setkey(c->bctx, t, c->encrypt, key, key_len, st);
}

void pcb_cipher_set_iv(pcb_cipher *c, const uint8_t *iv)
{
    memcpy(c->iv, iv, c->iv_len);
}

void pcb_cipher_close(pcb_cipher *c)
{
    if (c->bctx) {
        c->bk->release(c->bctx);
        OPENSSL_cleanse(c->bctx, c->bk->ctx_size);
        free(c->bctx);
    }
    EVP_CIPHER_CTX_free(c->ctx);
    if (c->siv_ready)
        pcb_siv_free(&c->siv);
    OPENSSL_cleanse(c, sizeof *c);
}

/* TEA/XTEA whole message: PKCS5 padding is ours. */
static int tea_message(pcb_cipher *c, const uint8_t *in, size_t in_len, uint8_t *out,
                       size_t *out_len, pcb_status *st)
{
    const pcb_transform *t = c->t;
    const size_t b = PCB_TEA_BLOCK;
    uint8_t chain[PCB_TEA_BLOCK], last[PCB_TEA_BLOCK];

    if (t->mode == PCB_MODE_CTR) {
        pcb_tea_ctr_state ctr;
        pcb_tea_ctr_init(&ctr, c->iv);
        pcb_tea_ctr(&c->tea, &ctr, in, out, in_len);
        *out_len = in_len;
        return 1;
    }
    memcpy(chain, c->iv, b); /* unused by ECB */
    size_t full = in_len / b;
    if (c->encrypt) {
        if (t->padding) {
            size_t rem = in_len - full * b;
            memcpy(last, in + full * b, rem);
            memset(last + rem, (int)(b - rem), b - rem);
        }
        if (t->mode == PCB_MODE_CBC)
            pcb_tea_cbc(&c->tea, 1, chain, in, out, full);
        else
            pcb_tea_ecb(&c->tea, 1, in, out, full);
        *out_len = full * b;
        if (t->padding) {
            if (t->mode == PCB_MODE_CBC)
                pcb_tea_cbc(&c->tea, 1, chain, last, out + full * b, 1);
            else
                pcb_tea_ecb(&c->tea, 1, last, out + full * b, 1);
            *out_len += b;
        }
        return 1;
    }
    if (t->mode == PCB_MODE_CBC)
        pcb_tea_cbc(&c->tea, 0, chain, in, out, full);
    else
        pcb_tea_ecb(&c->tea, 0, in, out, full);
    *out_len = in_len;
    return !t->padding || pcb_pkcs7_unpad(t, out, in_len, b, out_len, st);
}

static int siv_message(pcb_cipher *c, int rekey, const pcb_bytes *aad, size_t n_aad,
                       const uint8_t *in, size_t in_len, uint8_t *out, size_t *out_len,
                       pcb_status *st)
{
    uint8_t d[16];
    if (rekey && !pcb_siv_set_key(&c->siv, c->key, c->key_len))
        return pcb_fail_openssl(st, "AES-SIV key setup");
    memcpy(d, c->siv.d0, 16);
    for (size_t i = 0; i < n_aad; i++)
        if (!pcb_s2v_add(&c->siv, d, aad[i].data, aad[i].len))
            return pcb_fail_openssl(st, "AES-SIV S2V");
    if (c->has_iv && !pcb_s2v_add(&c->siv, d, c->iv, c->iv_len))
        return pcb_fail_openssl(st, "AES-SIV S2V");
    if (c->encrypt) {
        if (!pcb_siv_encrypt(&c->siv, d, in, in_len, out))
            return pcb_fail_openssl(st, "AES-SIV encryption");
        *out_len = in_len + 16;
        return 1;
    }
    int r = pcb_siv_decrypt(&c->siv, d, in, in_len, out);
    if (r < 0)
        return pcb_fail_openssl(st, "AES-SIV decryption");
    if (r == 0)
        return pcb_fail(st, PCB_E_DECRYPT,
                        "%s: authentication failed (wrong key, associated data or corrupted data)",
                        c->t->name);
    *out_len = in_len - 16;
    return 1;
}

/* GCM / ChaCha20-Poly1305: the shared AEAD sequence; a failed check is a
 * DecryptionError naming the transformation. */
static int aead_message(pcb_cipher *c, int rekey, const pcb_bytes *aad, size_t n_aad,
                        const uint8_t *in, size_t in_len, uint8_t *out, size_t *out_len,
                        pcb_status *st)
{
    const uint8_t *key = rekey ? c->key : NULL;
    if (c->encrypt) {
        if (!pcb_aead_seal(c->ctx, key, c->iv, aad, n_aad, in, in_len, out, st))
            return 0;
        *out_len = in_len + TAG_LEN;
        return 1;
    }
    int rc = pcb_aead_open(c->ctx, key, c->iv, aad, n_aad, in, in_len, out, st);
    if (rc == 0)
        return pcb_fail(st, PCB_E_DECRYPT, "%s: authentication failed (wrong key, IV, "
                        "associated data or corrupted data)", c->t->name);
    *out_len = in_len - TAG_LEN;
    return rc > 0;
}

/* Block and stream modes over EVP: update, then final (padding). */
static int evp_message(pcb_cipher *c, int rekey, const uint8_t *in, size_t in_len,
                       uint8_t *out, size_t *out_len, pcb_status *st)
{
    const pcb_transform *t = c->t;
    size_t done = 0; /* padding holds a block back until final */
    int outl = 0;
    if (!evp_init(c, rekey ? c->key : NULL, st))
        return 0;
    if (!pcb_evp_update(c->ctx, out, &done, in, in_len))
        return pcb_fail_openssl(st, t->name);
    if (!EVP_CipherFinal_ex(c->ctx, out + done, &outl)) {
        ERR_clear_error();
        if (t->padding) {
            OPENSSL_cleanse(out, done);
            return pcb_fail(st, PCB_E_DECRYPT, "%s: bad padding (wrong key, IV or corrupted data)",
                            t->name);
        }
        return pcb_fail(st, PCB_E_OPENSSL, "%s: finishing the message failed", t->name);
    }
    *out_len = done + (size_t)outl;
    return 1;
}

/* Another library's whole message: its AEAD call, or the shared padding
 * sequence over its block calls. */
static int backend_message(pcb_cipher *c, int rekey, const pcb_bytes *aad, size_t n_aad,
                           const uint8_t *in, size_t in_len, uint8_t *out, size_t *out_len,
                           pcb_status *st)
{
    const pcb_backend_ops *ops = c->bk;
    const pcb_transform *t = c->t;
    const uint8_t *iv = c->has_iv ? c->iv : NULL;
    if (rekey && !ops->setkey(c->bctx, t, c->encrypt, c->key, c->key_len, st))
        return 0;
    if (t->mode == PCB_MODE_SIV && !ops->check(t, c->iv_len, n_aad, c->has_iv, st))
        return 0;
    if (!pcb_is_aead(t))
        return pcb_backend_block_message(ops, c->bctx, t, c->encrypt, iv, c->iv_len, in, in_len,
                                         out, out_len, st);
    if (c->encrypt) {
        if (!ops->seal(c->bctx, iv, c->iv_len, aad, n_aad, in, in_len, out, st))
            return 0;
        *out_len = in_len + TAG_LEN;
        return 1;
    }
    int rc = ops->open(c->bctx, iv, c->iv_len, aad, n_aad, in, in_len, out, st);
    if (rc == 0)
        return pcb_fail(st, PCB_E_DECRYPT, "%s: authentication failed on %s (wrong key, IV, "
                        "associated data or corrupted data)", t->name, pcb_backend_name(c->backend));
    *out_len = in_len - TAG_LEN;
    return rc > 0;
}

int pcb_cipher_message(pcb_cipher *c, int rekey, const pcb_bytes *aad, size_t n_aad,
                       const uint8_t *in, size_t in_len, uint8_t *out,
                       size_t *out_len, pcb_status *st)
{
    const pcb_transform *t = c->t;
    if (!pcb_check_length(t, c->encrypt, in_len, st))
        return 0;
    if (c->bk)
        return backend_message(c, rekey, aad, n_aad, in, in_len, out, out_len, st);
    if (t->mode == PCB_MODE_SIV)
        return siv_message(c, rekey, aad, n_aad, in, in_len, out, out_len, st);
    if (t->family == PCB_FAM_TEA || t->family == PCB_FAM_XTEA) {
        if (rekey)
            tea_key(c);
        return tea_message(c, in, in_len, out, out_len, st);
    }
    if (pcb_is_aead(t))
        return aead_message(c, rekey, aad, n_aad, in, in_len, out, out_len, st);
    return evp_message(c, rekey, in, in_len, out, out_len, st);
}

int pcb_cipher_stream_reset(pcb_cipher *c, pcb_status *st)
{
    const pcb_transform *t = c->t;
    if (t->mode == PCB_MODE_SIV)
        return pcb_fail(st, PCB_E_VALUE, "%s has no stream scope: SIV must see the whole "
                        "message before it can encrypt; use scope='message'", t->name);
    if (c->bk)
        return c->bk->reset(c->bctx, c->has_iv ? c->iv : NULL, c->iv_len, st);
    if (t->family == PCB_FAM_TEA || t->family == PCB_FAM_XTEA) {
        memcpy(c->chain, c->iv, PCB_TEA_BLOCK);
        pcb_tea_ctr_init(&c->tea_ctr, c->iv);
        return 1;
    }
    if (!evp_init(c, NULL, st))
        return 0;
    /* Stream updates never pad: padding only exists at a message's end. */
    if ((t->mode == PCB_MODE_ECB || t->mode == PCB_MODE_CBC) && !EVP_CIPHER_CTX_set_padding(c->ctx, 0))
        return pcb_fail_openssl(st, "setting the padding");
    return 1;
}

int pcb_cipher_stream(pcb_cipher *c, const uint8_t *in, uint8_t *out, size_t len,
                      pcb_status *st)
{
    const pcb_transform *t = c->t;
    if (c->bk)
        return c->bk->update(c->bctx, in, out, len, st);
    if (t->family == PCB_FAM_TEA || t->family == PCB_FAM_XTEA) {
        switch (t->mode) {
        case PCB_MODE_ECB: pcb_tea_ecb(&c->tea, c->encrypt, in, out, len / PCB_TEA_BLOCK); break;
        case PCB_MODE_CBC: pcb_tea_cbc(&c->tea, c->encrypt, c->chain, in, out, len / PCB_TEA_BLOCK); break;
        default: pcb_tea_ctr(&c->tea, &c->tea_ctr, in, out, len); break;
        }
        return 1;
    }
    if (!pcb_evp_update(c->ctx, out, NULL, in, len)) {
        /* As openssl speed does: a stream that hit its limit (GCM's 64 GiB
         * per IV) starts over at the same IV. */
        ERR_clear_error();
        if (!pcb_cipher_stream_reset(c, st) || !pcb_evp_update(c->ctx, out, NULL, in, len))
            return pcb_fail_openssl(st, t->name);
    }
    return 1;
}

