/*
 * crypto/backend_mbedtls.c — Mbed TLS 2.28+ (its crypto library) as a
 * backend (see backend.h): AES ECB/CBC/CTR/GCM (any GCM IV length),
 * ChaCha20-Poly1305 (12-byte nonce), DES and 3DES (2-key and 3-key). Mbed
 * TLS 2.x and 3.x share these calls but for GCM's incremental ones (3.0
 * moved the associated data out of gcm_starts and gave gcm_update an output
 * size): both are spelled out below. Empty without PCB_HAVE_MBEDTLS.
 */
#include "crypto/backend.h"

#ifdef PCB_HAVE_MBEDTLS
#include <string.h>
#include <mbedtls/aes.h>
#include <mbedtls/chachapoly.h>
#include <mbedtls/des.h>
#include <mbedtls/gcm.h>
#include <mbedtls/version.h>
#if MBEDTLS_VERSION_MAJOR < 3
#include <mbedtls/aesni.h>
#endif

typedef struct {
    union {
        mbedtls_aes_context aes;
        mbedtls_gcm_context gcm;
        mbedtls_chachapoly_context cp;
        mbedtls_des_context des;
        mbedtls_des3_context des3;
    } k;
    const pcb_transform *t;
    int encrypt, inited;
    uint8_t iv[16], ks[16]; /* CBC chain / CTR counter and keystream */
    size_t ctr_off;
} mbed_ctx;

static const char *m_version(void)
{
    return MBEDTLS_VERSION_STRING;
}

static int m_hw_aes(void)
{
#if MBEDTLS_VERSION_MAJOR < 3 && defined(MBEDTLS_AESNI_C) && defined(MBEDTLS_AESNI_HAVE_CODE)
    return mbedtls_aesni_has_support(MBEDTLS_AESNI_AES);
#else
    return -1;
#endif
}

static int m_supports(const pcb_transform *t, size_t key_len)
{
    (void)key_len;
    switch (t->family) {
    case PCB_FAM_AES: return t->mode != PCB_MODE_SIV;
    case PCB_FAM_CHACHA: case PCB_FAM_DES: case PCB_FAM_DESEDE: return 1;
    default: return 0;
    }
}

static int m_check(const pcb_transform *t, size_t iv_len, size_t n_aad, int has_iv, pcb_status *st)
{
    (void)t, (void)iv_len, (void)n_aad, (void)has_iv, (void)st;
    return 1;
}

static int fail(pcb_status *st, const char *what, int rc)
{
    return pcb_fail(st, PCB_E_OPENSSL, "Mbed TLS: %s failed (error -0x%04x)", what, (unsigned)-rc);
}

static void m_release(void *p)
{
    mbed_ctx *c = p;
    if (!c->inited)
        return;
    switch (c->t->family) {
    case PCB_FAM_AES:
        if (c->t->mode == PCB_MODE_GCM)
            mbedtls_gcm_free(&c->k.gcm);
        else
            mbedtls_aes_free(&c->k.aes);
        break;
    case PCB_FAM_CHACHA: mbedtls_chachapoly_free(&c->k.cp); break;
    case PCB_FAM_DES: mbedtls_des_free(&c->k.des); break;
    default: mbedtls_des3_free(&c->k.des3); break;
    }
    c->inited = 0;
}

static int m_setkey(void *p, const pcb_transform *t, int encrypt, const uint8_t *key,
                    size_t key_len, pcb_status *st)
{
    mbed_ctx *c = p;
    const int dec = !encrypt && (t->mode == PCB_MODE_ECB || t->mode == PCB_MODE_CBC);
    int rc;
    m_release(c);
    c->t = t, c->encrypt = encrypt, c->inited = 1;
    switch (t->family) {
    case PCB_FAM_AES:
        if (t->mode == PCB_MODE_GCM) {
            mbedtls_gcm_init(&c->k.gcm);
            rc = mbedtls_gcm_setkey(&c->k.gcm, MBEDTLS_CIPHER_ID_AES, key, (unsigned)key_len * 8);
        } else {
            mbedtls_aes_init(&c->k.aes);
            rc = (dec ? mbedtls_aes_setkey_dec : mbedtls_aes_setkey_enc)(&c->k.aes, key,
                                                                         (unsigned)key_len * 8);
        }
        break;
    case PCB_FAM_CHACHA:
        mbedtls_chachapoly_init(&c->k.cp);
        rc = mbedtls_chachapoly_setkey(&c->k.cp, key);
        break;
    case PCB_FAM_DES:
        mbedtls_des_init(&c->k.des);
        rc = (dec ? mbedtls_des_setkey_dec : mbedtls_des_setkey_enc)(&c->k.des, key);
        break;
    default:
        mbedtls_des3_init(&c->k.des3);
        if (key_len == 16)
            rc = (dec ? mbedtls_des3_set2key_dec : mbedtls_des3_set2key_enc)(&c->k.des3, key);
        else
            rc = (dec ? mbedtls_des3_set3key_dec : mbedtls_des3_set3key_enc)(&c->k.des3, key);
        break;
    }
    return rc ? fail(st, "setting the key", rc) : 1;
}

static int m_reset(void *p, const uint8_t *iv, size_t iv_len, pcb_status *st)
{
    mbed_ctx *c = p;
    int rc = 0;
    if (c->t->mode == PCB_MODE_GCM)
#if MBEDTLS_VERSION_MAJOR >= 3 /* 3.x: associated data has its own call */
        rc = mbedtls_gcm_starts(&c->k.gcm, c->encrypt ? MBEDTLS_GCM_ENCRYPT : MBEDTLS_GCM_DECRYPT,
                                iv, iv_len);
#else
        rc = mbedtls_gcm_starts(&c->k.gcm, c->encrypt ? MBEDTLS_GCM_ENCRYPT : MBEDTLS_GCM_DECRYPT,
                                iv, iv_len, NULL, 0);
#endif
    else if (c->t->mode == PCB_MODE_POLY1305)
        rc = mbedtls_chachapoly_starts(&c->k.cp, iv, c->encrypt ? MBEDTLS_CHACHAPOLY_ENCRYPT
                                                                : MBEDTLS_CHACHAPOLY_DECRYPT);
    else if (iv)
        memcpy(c->iv, iv, iv_len);
    c->ctr_off = 0;
    return rc ? fail(st, "starting a message", rc) : 1;
}

static int m_update(void *p, const uint8_t *in, uint8_t *out, size_t len, pcb_status *st)
{
    mbed_ctx *c = p;
    const int aes = c->t->family == PCB_FAM_AES, des3 = c->t->family == PCB_FAM_DESEDE;
    const size_t b = aes ? 16 : 8;
    int rc = 0;
    switch (c->t->mode) {
    case PCB_MODE_ECB:
        for (size_t i = 0; rc == 0 && i < len; i += b)
            rc = aes ? mbedtls_aes_crypt_ecb(&c->k.aes, c->encrypt, in + i, out + i)
                 : des3 ? mbedtls_des3_crypt_ecb(&c->k.des3, in + i, out + i)
                        : mbedtls_des_crypt_ecb(&c->k.des, in + i, out + i);
        break;
    case PCB_MODE_CBC:
        rc = aes ? mbedtls_aes_crypt_cbc(&c->k.aes, c->encrypt, len, c->iv, in, out)
             : des3 ? mbedtls_des3_crypt_cbc(&c->k.des3, c->encrypt, len, c->iv, in, out)
                    : mbedtls_des_crypt_cbc(&c->k.des, c->encrypt, len, c->iv, in, out);
        break;
    case PCB_MODE_CTR:
        rc = mbedtls_aes_crypt_ctr(&c->k.aes, len, &c->ctr_off, c->iv, c->ks, in, out);
        break;
    case PCB_MODE_GCM: {
#if MBEDTLS_VERSION_MAJOR >= 3 /* 3.x may hold back a partial block: whole blocks here */
        size_t done = 0;
        rc = mbedtls_gcm_update(&c->k.gcm, in, len, out, len, &done);
#else
        rc = mbedtls_gcm_update(&c->k.gcm, len, in, out);
#endif
        break;
    }
    default:
        rc = mbedtls_chachapoly_update(&c->k.cp, len, in, out);
        break;
    }
    return rc ? fail(st, c->t->name, rc) : 1;
}

static int m_seal(void *p, const uint8_t *iv, size_t iv_len, const pcb_bytes *aad, size_t n_aad,
                  const uint8_t *in, size_t len, uint8_t *out, pcb_status *st)
{
    mbed_ctx *c = p;
    const uint8_t *ad = n_aad ? aad[0].data : NULL;
    size_t adlen = n_aad ? aad[0].len : 0;
    int rc;
    if (c->t->mode == PCB_MODE_GCM)
        rc = mbedtls_gcm_crypt_and_tag(&c->k.gcm, MBEDTLS_GCM_ENCRYPT, len, iv, iv_len, ad, adlen,
                                       in, out, 16, out + len);
    else
        rc = mbedtls_chachapoly_encrypt_and_tag(&c->k.cp, len, iv, ad, adlen, in, out, out + len);
    return rc ? fail(st, c->t->name, rc) : 1;
}

static int m_open(void *p, const uint8_t *iv, size_t iv_len, const pcb_bytes *aad, size_t n_aad,
                  const uint8_t *in, size_t len, uint8_t *out, pcb_status *st)
{
    mbed_ctx *c = p;
    const uint8_t *ad = n_aad ? aad[0].data : NULL;
    size_t adlen = n_aad ? aad[0].len : 0, m = len - 16;
    int rc;
    if (c->t->mode == PCB_MODE_GCM) {
        rc = mbedtls_gcm_auth_decrypt(&c->k.gcm, m, iv, iv_len, ad, adlen, in + m, 16, in, out);
        if (rc == MBEDTLS_ERR_GCM_AUTH_FAILED)
            rc = 1;
    } else {
        rc = mbedtls_chachapoly_auth_decrypt(&c->k.cp, m, iv, ad, adlen, in + m, in, out);
        if (rc == MBEDTLS_ERR_CHACHAPOLY_AUTH_FAILED)
            rc = 1;
    }
    if (rc == 1) {
        memset(out, 0, m);
        return 0;
    }
    return rc ? fail(st, c->t->name, rc), -1 : 1;
}

static const pcb_backend_ops ops = {
    .stream_aead = 1,
    .ctx_size = sizeof(mbed_ctx),
    .version = m_version,
    .hw_aes = m_hw_aes,
    .supports = m_supports,
    .check = m_check,
    .setkey = m_setkey,
    .reset = m_reset,
    .update = m_update,
    .seal = m_seal,
    .open = m_open,
    .release = m_release,
};
const pcb_backend_ops *const pcb_ops_MBEDTLS = &ops;
#else
const pcb_backend_ops *const pcb_ops_MBEDTLS = NULL;
#endif
