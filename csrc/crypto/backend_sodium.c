/*
 * crypto/backend_sodium.c — libsodium as a backend (see backend.h):
 * AES-256-GCM (12-byte IV; only where the CPU has AES-NI and PCLMULQDQ,
 * libsodium's own rule), ChaCha20-Poly1305 (IETF, 12-byte nonce) and
 * XChaCha20-Poly1305 (24-byte nonce). Whole messages only: libsodium has no
 * incremental AEAD call, so stream scope is refused. Empty without
 * PCB_HAVE_SODIUM.
 */
#include "crypto/backend.h"

#ifdef PCB_HAVE_SODIUM
#include <string.h>
#include <sodium.h>

typedef struct {
    crypto_aead_aes256gcm_state gcm; /* 16-byte aligned: first, in a malloc'd block */
    const pcb_transform *t;
    uint8_t key[32];
} sodium_ctx;

static int s_init(pcb_status *st)
{
    if (sodium_init() < 0)
        return pcb_fail(st, PCB_E_OPENSSL, "sodium_init failed");
    return 1;
}

static const char *s_version(void)
{
    return sodium_version_string();
}

static int s_hw_aes(void)
{
    return crypto_aead_aes256gcm_is_available();
}

static int s_supports(const pcb_transform *t, size_t key_len)
{
    if (t->mode == PCB_MODE_GCM)
        return crypto_aead_aes256gcm_is_available() && (key_len == 0 || key_len == 32);
    return t->mode == PCB_MODE_POLY1305;
}

static int s_check(const pcb_transform *t, size_t iv_len, size_t n_aad, int has_iv, pcb_status *st)
{
    (void)n_aad;
    if (t->mode == PCB_MODE_GCM && has_iv && iv_len != crypto_aead_aes256gcm_NPUBBYTES)
        return pcb_fail(st, PCB_E_VALUE, "libsodium's AES-256-GCM takes a 12-byte IV only, got "
                        "%zu bytes (other backends take 1 to 128)", iv_len);
    return 1;
}

static int s_setkey(void *p, const pcb_transform *t, int encrypt, const uint8_t *key,
                    size_t key_len, pcb_status *st)
{
    sodium_ctx *c = p;
    (void)encrypt;
    c->t = t;
    memcpy(c->key, key, key_len);
    if (t->mode == PCB_MODE_GCM && crypto_aead_aes256gcm_beforenm(&c->gcm, key) != 0)
        return pcb_fail(st, PCB_E_OPENSSL, "libsodium: AES-256-GCM key setup failed");
    return 1;
}

static int s_reset(void *p, const uint8_t *iv, size_t iv_len, pcb_status *st)
{
    (void)iv, (void)iv_len;
    return pcb_fail(st, PCB_E_VALUE, "%s on libsodium has no stream scope: libsodium has no "
                    "incremental AEAD call; use scope='message'", ((sodium_ctx *)p)->t->name);
}

static int s_update(void *p, const uint8_t *in, uint8_t *out, size_t len, pcb_status *st)
{
    (void)in, (void)out, (void)len;
    return s_reset(p, NULL, 0, st);
}

static int s_seal(void *p, const uint8_t *iv, size_t iv_len, const pcb_bytes *aad, size_t n_aad,
                  const uint8_t *in, size_t len, uint8_t *out, pcb_status *st)
{
    sodium_ctx *c = p;
    const uint8_t *ad = n_aad ? aad[0].data : NULL;
    unsigned long long adlen = n_aad ? aad[0].len : 0, clen;
    int rc;
    (void)iv_len;
    if (c->t->mode == PCB_MODE_GCM)
        rc = crypto_aead_aes256gcm_encrypt_afternm(out, &clen, in, len, ad, adlen, NULL, iv, &c->gcm);
    else if (c->t->family == PCB_FAM_XCHACHA)
        rc = crypto_aead_xchacha20poly1305_ietf_encrypt(out, &clen, in, len, ad, adlen, NULL, iv, c->key);
    else
        rc = crypto_aead_chacha20poly1305_ietf_encrypt(out, &clen, in, len, ad, adlen, NULL, iv, c->key);
    if (rc != 0)
        return pcb_fail(st, PCB_E_VALUE, "libsodium refused to encrypt %s (%zu bytes)", c->t->name, len);
    return 1;
}

static int s_open(void *p, const uint8_t *iv, size_t iv_len, const pcb_bytes *aad, size_t n_aad,
                  const uint8_t *in, size_t len, uint8_t *out, pcb_status *st)
{
    sodium_ctx *c = p;
    const uint8_t *ad = n_aad ? aad[0].data : NULL;
    unsigned long long adlen = n_aad ? aad[0].len : 0, mlen;
    int rc;
    (void)iv_len, (void)st;
    if (c->t->mode == PCB_MODE_GCM)
        rc = crypto_aead_aes256gcm_decrypt_afternm(out, &mlen, NULL, in, len, ad, adlen, iv, &c->gcm);
    else if (c->t->family == PCB_FAM_XCHACHA)
        rc = crypto_aead_xchacha20poly1305_ietf_decrypt(out, &mlen, NULL, in, len, ad, adlen, iv, c->key);
    else
        rc = crypto_aead_chacha20poly1305_ietf_decrypt(out, &mlen, NULL, in, len, ad, adlen, iv, c->key);
    if (rc != 0) {
        sodium_memzero(out, len - PCB_AEAD_TAG_LEN);
        return 0;
    }
    return 1;
}

static void s_release(void *p)
{
    (void)p;
}

static const pcb_backend_ops ops = {
    .stream_aead = 0,
    .ctx_size = sizeof(sodium_ctx),
    .init = s_init,
    .version = s_version,
    .hw_aes = s_hw_aes,
    .supports = s_supports,
    .check = s_check,
    .setkey = s_setkey,
    .reset = s_reset,
    .update = s_update,
    .seal = s_seal,
    .open = s_open,
    .release = s_release,
};
const pcb_backend_ops *const pcb_ops_SODIUM = &ops;
#else
const pcb_backend_ops *const pcb_ops_SODIUM = NULL;
#endif
