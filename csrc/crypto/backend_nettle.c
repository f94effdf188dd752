/*
 * crypto/backend_nettle.c — Nettle as a backend (see backend.h): AES
 * ECB/CBC/CTR/GCM (any GCM IV length), AES-SIV-CMAC (RFC 5297 with 256- or
 * 512-bit keys; Nettle's message call takes exactly one associated-data
 * component and a non-empty nonce), ChaCha20-Poly1305 (12-byte nonce), DES
 * and 3DES (2-key keys run as k1 k2 k1). Empty without PCB_HAVE_NETTLE.
 */
#include "crypto/backend.h"

#ifdef PCB_HAVE_NETTLE
#include <stdio.h>
#include <string.h>
#include <nettle/aes.h>
#include <nettle/cbc.h>
#include <nettle/chacha-poly1305.h>
#include <nettle/ctr.h>
#include <nettle/des.h>
#include <nettle/gcm.h>
#include <nettle/memops.h>
#include <nettle/siv-cmac.h>
#include <nettle/version.h>

typedef struct {
    union {
        struct aes128_ctx a128;
        struct aes192_ctx a192;
        struct aes256_ctx a256;
        struct des_ctx des;
        struct des3_ctx des3;
        struct gcm_aes128_ctx g128;
        struct gcm_aes192_ctx g192;
        struct gcm_aes256_ctx g256;
        struct chacha_poly1305_ctx cp;
        struct siv_cmac_aes128_ctx s128;
        struct siv_cmac_aes256_ctx s256;
    } k;
    const pcb_transform *t;
    size_t key_len, block;
    int encrypt;
    nettle_cipher_func *fn; /* the block function: decrypt for ECB/CBC decryption */
    uint8_t iv[16];         /* CBC chain / CTR counter */
} nettle_ctx;

static char version[32];

static int n_init(pcb_status *st)
{
    (void)st;
    snprintf(version, sizeof version, "%d.%d", nettle_version_major(), nettle_version_minor());
    return 1;
}

static const char *n_version(void)
{
    return version;
}

static int n_hw_aes(void)
{
#if defined(__x86_64__) || defined(__i386__)
    /* Nettle's fat build picks AES-NI whenever the CPU has it. */
    return __builtin_cpu_supports("aes") ? 1 : 0;
#else
    return -1;
#endif
}

static int n_supports(const pcb_transform *t, size_t key_len)
{
    switch (t->family) {
    case PCB_FAM_AES:
        if (t->mode == PCB_MODE_SIV)
            return key_len == 0 || key_len == 32 || key_len == 64;
        return 1;
    case PCB_FAM_CHACHA: case PCB_FAM_DES: case PCB_FAM_DESEDE:
        return 1;
    default:
        return 0;
    }
}

static int n_check(const pcb_transform *t, size_t iv_len, size_t n_aad, int has_iv, pcb_status *st)
{
    if (t->mode != PCB_MODE_SIV || n_aad == SIZE_MAX)
        return 1;
    /* Nettle's S2V is always (associated data, nonce, plaintext). */
    size_t parts = n_aad + (has_iv ? 1 : 0);
    if (parts != 2 || (has_iv && iv_len == 0))
        return pcb_fail(st, PCB_E_VALUE,
                        "Nettle's SIV-CMAC takes exactly one associated-data component and a "
                        "non-empty nonce (aad=[ad] with iv, or aad=[ad, nonce]); got %zu "
                        "component(s)%s", n_aad, has_iv ? " and an IV" : " and no IV");
    return 1;
}

static int n_setkey(void *p, const pcb_transform *t, int encrypt, const uint8_t *key,
                    size_t key_len, pcb_status *st)
{
    nettle_ctx *c = p;
    uint8_t k3[24];
    (void)st;
    c->t = t, c->key_len = key_len, c->encrypt = encrypt;
    c->block = t->family == PCB_FAM_AES ? 16 : 8;
    const int dec = !encrypt && (t->mode == PCB_MODE_ECB || t->mode == PCB_MODE_CBC);
    switch (t->family) {
    case PCB_FAM_AES:
        if (t->mode == PCB_MODE_SIV) {
            if (key_len == 32)
                siv_cmac_aes128_set_key(&c->k.s128, key);
            else
                siv_cmac_aes256_set_key(&c->k.s256, key);
        } else if (t->mode == PCB_MODE_GCM) {
            if (key_len == 16) gcm_aes128_set_key(&c->k.g128, key);
            else if (key_len == 24) gcm_aes192_set_key(&c->k.g192, key);
            else gcm_aes256_set_key(&c->k.g256, key);
        } else if (key_len == 16) {
            (dec ? aes128_set_decrypt_key : aes128_set_encrypt_key)(&c->k.a128, key);
            c->fn = (nettle_cipher_func *)(dec ? aes128_decrypt : aes128_encrypt);
        } else if (key_len == 24) {
            (dec ? aes192_set_decrypt_key : aes192_set_encrypt_key)(&c->k.a192, key);
            c->fn = (nettle_cipher_func *)(dec ? aes192_decrypt : aes192_encrypt);
        } else {
            (dec ? aes256_set_decrypt_key : aes256_set_encrypt_key)(&c->k.a256, key);
            c->fn = (nettle_cipher_func *)(dec ? aes256_decrypt : aes256_encrypt);
        }
        return 1;
    case PCB_FAM_CHACHA:
        chacha_poly1305_set_key(&c->k.cp, key);
        return 1;
    case PCB_FAM_DES:
        des_set_key(&c->k.des, key); /* 0 for a weak key, which is still set */
        c->fn = (nettle_cipher_func *)(dec ? des_decrypt : des_encrypt);
        return 1;
    default:
        pcb_des3_key(key, key_len, k3);
        des3_set_key(&c->k.des3, key_len == 16 ? k3 : key);
        memset(k3, 0, sizeof k3);
        c->fn = (nettle_cipher_func *)(dec ? des3_decrypt : des3_encrypt);
        return 1;
    }
}

static void gcm_set_iv_(nettle_ctx *c, const uint8_t *iv, size_t iv_len)
{
    if (c->key_len == 16) gcm_aes128_set_iv(&c->k.g128, iv_len, iv);
    else if (c->key_len == 24) gcm_aes192_set_iv(&c->k.g192, iv_len, iv);
    else gcm_aes256_set_iv(&c->k.g256, iv_len, iv);
}

static void gcm_aad(nettle_ctx *c, const uint8_t *a, size_t n)
{
    if (c->key_len == 16) gcm_aes128_update(&c->k.g128, n, a);
    else if (c->key_len == 24) gcm_aes192_update(&c->k.g192, n, a);
    else gcm_aes256_update(&c->k.g256, n, a);
}

static void gcm_crypt(nettle_ctx *c, int enc, const uint8_t *in, uint8_t *out, size_t n)
{
    if (c->key_len == 16)
        (enc ? gcm_aes128_encrypt : gcm_aes128_decrypt)(&c->k.g128, n, out, in);
    else if (c->key_len == 24)
        (enc ? gcm_aes192_encrypt : gcm_aes192_decrypt)(&c->k.g192, n, out, in);
    else
        (enc ? gcm_aes256_encrypt : gcm_aes256_decrypt)(&c->k.g256, n, out, in);
}

static void gcm_tag(nettle_ctx *c, uint8_t *tag)
{
    if (c->key_len == 16) gcm_aes128_digest(&c->k.g128, 16, tag);
    else if (c->key_len == 24) gcm_aes192_digest(&c->k.g192, 16, tag);
    else gcm_aes256_digest(&c->k.g256, 16, tag);
}

static int n_reset(void *p, const uint8_t *iv, size_t iv_len, pcb_status *st)
{
    nettle_ctx *c = p;
    (void)st;
    if (c->t->mode == PCB_MODE_GCM)
        gcm_set_iv_(c, iv, iv_len);
    else if (c->t->mode == PCB_MODE_POLY1305)
        chacha_poly1305_set_nonce(&c->k.cp, iv);
    else if (iv)
        memcpy(c->iv, iv, c->block);
    return 1;
}

static int n_update(void *p, const uint8_t *in, uint8_t *out, size_t len, pcb_status *st)
{
    nettle_ctx *c = p;
    (void)st;
    switch (c->t->mode) {
    case PCB_MODE_ECB: c->fn(&c->k, len, out, in); break;
    case PCB_MODE_CBC:
        if (c->encrypt)
            cbc_encrypt(&c->k, c->fn, c->block, c->iv, len, out, in);
        else
            cbc_decrypt(&c->k, c->fn, c->block, c->iv, len, out, in);
        break;
    case PCB_MODE_CTR: ctr_crypt(&c->k, c->fn, 16, c->iv, len, out, in); break;
    case PCB_MODE_GCM: gcm_crypt(c, c->encrypt, in, out, len); break;
    default:
        (c->encrypt ? chacha_poly1305_encrypt : chacha_poly1305_decrypt)(&c->k.cp, len, out, in);
        break;
    }
    return 1;
}

/* SIV's two components: (aad[0], iv) or (aad[0], aad[1]); n_check ran. */
static void siv_parts(const uint8_t *iv, size_t iv_len, const pcb_bytes *aad, size_t n_aad,
                      pcb_bytes *ad, pcb_bytes *nonce)
{
    *ad = aad[0];
    if (n_aad == 2)
        *nonce = aad[1];
    else
        nonce->data = iv, nonce->len = iv_len;
}

static int n_seal(void *p, const uint8_t *iv, size_t iv_len, const pcb_bytes *aad, size_t n_aad,
                  const uint8_t *in, size_t len, uint8_t *out, pcb_status *st)
{
    nettle_ctx *c = p;
    if (c->t->mode == PCB_MODE_SIV) {
        pcb_bytes ad, nonce;
        if (!n_check(c->t, iv_len, n_aad, iv != NULL, st))
            return 0;
        siv_parts(iv, iv_len, aad, n_aad, &ad, &nonce);
        if (c->key_len == 32)
            siv_cmac_aes128_encrypt_message(&c->k.s128, nonce.len, nonce.data, ad.len, ad.data,
                                            len + 16, out, in);
        else
            siv_cmac_aes256_encrypt_message(&c->k.s256, nonce.len, nonce.data, ad.len, ad.data,
                                            len + 16, out, in);
        return 1;
    }
    n_reset(c, iv, iv_len, st);
    if (c->t->mode == PCB_MODE_GCM) {
        if (n_aad)
            gcm_aad(c, aad[0].data, aad[0].len);
        gcm_crypt(c, 1, in, out, len);
        gcm_tag(c, out + len);
    } else {
        if (n_aad)
            chacha_poly1305_update(&c->k.cp, aad[0].len, aad[0].data);
        chacha_poly1305_encrypt(&c->k.cp, len, out, in);
        chacha_poly1305_digest(&c->k.cp, 16, out + len);
    }
    return 1;
}

static int n_open(void *p, const uint8_t *iv, size_t iv_len, const pcb_bytes *aad, size_t n_aad,
                  const uint8_t *in, size_t len, uint8_t *out, pcb_status *st)
{
    nettle_ctx *c = p;
    uint8_t tag[16];
    size_t m = len - 16;
    int ok;
    if (c->t->mode == PCB_MODE_SIV) {
        pcb_bytes ad, nonce;
        if (!n_check(c->t, iv_len, n_aad, iv != NULL, st))
            return -1;
        siv_parts(iv, iv_len, aad, n_aad, &ad, &nonce);
        if (c->key_len == 32)
            ok = siv_cmac_aes128_decrypt_message(&c->k.s128, nonce.len, nonce.data, ad.len,
                                                 ad.data, m, out, in);
        else
            ok = siv_cmac_aes256_decrypt_message(&c->k.s256, nonce.len, nonce.data, ad.len,
                                                 ad.data, m, out, in);
    } else {
        n_reset(c, iv, iv_len, st);
        if (c->t->mode == PCB_MODE_GCM) {
            if (n_aad)
                gcm_aad(c, aad[0].data, aad[0].len);
            gcm_crypt(c, 0, in, out, m);
            gcm_tag(c, tag);
        } else {
            if (n_aad)
                chacha_poly1305_update(&c->k.cp, aad[0].len, aad[0].data);
            chacha_poly1305_decrypt(&c->k.cp, m, out, in);
            chacha_poly1305_digest(&c->k.cp, 16, tag);
        }
        ok = memeql_sec(tag, in + m, 16);
    }
    if (!ok)
        memset(out, 0, m);
    return ok ? 1 : 0;
}

static void n_release(void *p)
{
    (void)p;
}

static const pcb_backend_ops ops = {
    .stream_aead = 1,
    .ctx_size = sizeof(nettle_ctx),
    .init = n_init,
    .version = n_version,
    .hw_aes = n_hw_aes,
    .supports = n_supports,
    .check = n_check,
    .setkey = n_setkey,
    .reset = n_reset,
    .update = n_update,
    .seal = n_seal,
    .open = n_open,
    .release = n_release,
};
const pcb_backend_ops *const pcb_ops_NETTLE = &ops;
#else
const pcb_backend_ops *const pcb_ops_NETTLE = NULL;
#endif
