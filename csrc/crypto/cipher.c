/*
 * pcb_kernels.c — transformations, the EVP cipher cache and pcb_cipher
 * (see pcb_kernels.h).
 */
#include "pcb_kernels.h"

#include <ctype.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <openssl/core_names.h>
#include <openssl/crypto.h>
#include <openssl/err.h>
#include <openssl/provider.h>

#define TAG_LEN 16

/* ---------------------------------------------------------------- errors */

int pcb_fail(pcb_status *st, pcb_err code, const char *fmt, ...)
{
    va_list ap;
    st->code = code;
    va_start(ap, fmt);
    vsnprintf(st->msg, sizeof st->msg, fmt, ap);
    va_end(ap);
    return 0;
}

int pcb_fail_openssl(pcb_status *st, const char *what)
{
    unsigned long e = ERR_peek_last_error();
    const char *reason = e ? ERR_reason_error_string(e) : NULL;
    char buf[256];
    if (reason == NULL && e != 0) {
        ERR_error_string_n(e, buf, sizeof buf);
        reason = buf;
    }
    pcb_fail(st, PCB_E_OPENSSL, "%s failed: %s", what,
             reason ? reason : "no reason given by OpenSSL");
    ERR_clear_error();
    return 0;
}

/* ------------------------------------------------------- transformations */

#define T(name, fam, mode, pad, ref) {name, PCB_FAM_##fam, PCB_MODE_##mode, pad, ref}
#define BLOCK_MODES(alg, fam, ref)                                   \
    T(alg "/ECB/NoPadding", fam, ECB, 0, ref),                       \
    T(alg "/ECB/PKCS5Padding", fam, ECB, 1, ref),                    \
    T(alg "/CBC/NoPadding", fam, CBC, 0, ref),                       \
    T(alg "/CBC/PKCS5Padding", fam, CBC, 1, ref)

static const pcb_transform transforms[] = {
    BLOCK_MODES("AES", AES, 0),
    T("AES/CTR/NoPadding", AES, CTR, 0, 0),
    T("AES/GCM/NoPadding", AES, GCM, 0, 0),
    T("AES/SIV/NoPadding", AES, SIV, 0, 0),
    T("ChaCha20-Poly1305", CHACHA, POLY1305, 0, 0),
    BLOCK_MODES("DES", DES, 0),
    BLOCK_MODES("DESede", DESEDE, 0),
    BLOCK_MODES("TEA", TEA, 0),
    T("TEA/CTR/NoPadding", TEA, CTR, 0, 0),
    BLOCK_MODES("XTEA", XTEA, 0),
    T("XTEA/CTR/NoPadding", XTEA, CTR, 0, 0),
    BLOCK_MODES("TEA-ref", TEA, 1),
    T("TEA-ref/CTR/NoPadding", TEA, CTR, 0, 1),
    BLOCK_MODES("XTEA-ref", XTEA, 1),
    T("XTEA-ref/CTR/NoPadding", XTEA, CTR, 0, 1),
};
#undef T
#undef BLOCK_MODES

#define N_TRANSFORMS (sizeof transforms / sizeof transforms[0])

const pcb_transform *pcb_transforms(size_t *count)
{
    *count = N_TRANSFORMS;
    return transforms;
}

/* Replaces the first occurrence of `from` in buf (upper case) by `to`. */
static void replace(char *buf, size_t cap, const char *from, const char *to)
{
    char *p = strstr(buf, from);
    size_t fl = strlen(from), tl = strlen(to), bl = strlen(buf);
    if (p == NULL || bl - fl + tl + 1 > cap)
        return;
    memmove(p + tl, p + fl, bl - (size_t)(p - buf) - fl + 1);
    memcpy(p, to, tl);
}

const pcb_transform *pcb_find_transform(const char *name)
{
    char want[96], have[96];
    size_t n = strlen(name);
    if (n == 0 || n >= sizeof want)
        return NULL;
    for (size_t i = 0; i <= n; i++)
        want[i] = (char)toupper((unsigned char)name[i]);
    /* Aliases: Java's PKCS7 spelling, 3DES, JCE's ChaCha20 name. */
    replace(want, sizeof want, "PKCS7PADDING", "PKCS5PADDING");
    if ((strncmp(want, "3DES/", 5) == 0 || strncmp(want, "TRIPLEDES/", 10) == 0)
        && n + 2 < sizeof want) { /* "3DES" -> "DESEDE" grows the name by 2 */
        memmove(want, strchr(want, '/'), strlen(strchr(want, '/')) + 1);
        memmove(want + 6, want, strlen(want) + 1);
        memcpy(want, "DESEDE", 6);
    }
    if (strcmp(want, "CHACHA20-POLY1305/NONE/NOPADDING") == 0)
        want[strlen("CHACHA20-POLY1305")] = '\0';
    for (size_t i = 0; i < N_TRANSFORMS; i++) {
        size_t m = strlen(transforms[i].name);
        for (size_t j = 0; j <= m; j++)
            have[j] = (char)toupper((unsigned char)transforms[i].name[j]);
        if (strcmp(want, have) == 0)
            return &transforms[i];
    }
    return NULL;
}

/* ------------------------------------------------------------ EVP cache */

static const char *const evp_names[PCB_EVP_COUNT] = {
    "AES-128-ECB", "AES-192-ECB", "AES-256-ECB",
    "AES-128-CBC", "AES-192-CBC", "AES-256-CBC",
    "AES-128-CTR", "AES-192-CTR", "AES-256-CTR",
    "AES-128-GCM", "AES-192-GCM", "AES-256-GCM",
    "ChaCha20-Poly1305",
    "DES-ECB", "DES-CBC",
    "DES-EDE-ECB", "DES-EDE-CBC",
    "DES-EDE3-ECB", "DES-EDE3-CBC",
};

int pcb_evp_cache_init(pcb_evp_cache *cache, pcb_status *st)
{
    memset(cache, 0, sizeof *cache);
    /* A private library context: loading the legacy provider (for single
     * DES) must not change what the rest of the process gets from OpenSSL. */
    cache->libctx = OSSL_LIB_CTX_new();
    if (cache->libctx == NULL)
        return pcb_fail_openssl(st, "OSSL_LIB_CTX_new");
    cache->default_provider = OSSL_PROVIDER_load(cache->libctx, "default");
    if (cache->default_provider == NULL)
        return pcb_fail_openssl(st, "loading OpenSSL's default provider");
    cache->legacy_provider = OSSL_PROVIDER_load(cache->libctx, "legacy");
    if (cache->legacy_provider == NULL) {
        unsigned long e = ERR_peek_last_error();
        snprintf(cache->legacy_error, sizeof cache->legacy_error,
                 "OpenSSL's legacy provider could not be loaded (%s); single DES needs it",
                 e ? ERR_reason_error_string(e) : "unknown reason");
        ERR_clear_error();
    }
    for (int i = 0; i < PCB_EVP_COUNT; i++) {
        cache->cipher[i] = EVP_CIPHER_fetch(cache->libctx, evp_names[i], NULL);
        if (cache->cipher[i] == NULL)
            ERR_clear_error(); /* reported per transformation when used */
    }
    return 1;
}

void pcb_evp_cache_free(pcb_evp_cache *cache)
{
    for (int i = 0; i < PCB_EVP_COUNT; i++)
        EVP_CIPHER_free(cache->cipher[i]);
    if (cache->legacy_provider)
        OSSL_PROVIDER_unload(cache->legacy_provider);
    if (cache->default_provider)
        OSSL_PROVIDER_unload(cache->default_provider);
    OSSL_LIB_CTX_free(cache->libctx);
    memset(cache, 0, sizeof *cache);
}

/* The EVP cipher for a transformation and key length; -1 if none. */
static int evp_index(const pcb_transform *t, size_t key_len)
{
    int size = key_len == 16 ? 0 : key_len == 24 ? 1 : key_len == 32 ? 2 : -1;
    switch (t->family) {
    case PCB_FAM_AES:
        if (t->mode == PCB_MODE_SIV) /* SIV keys are two AES keys */
            size = key_len == 32 ? 0 : key_len == 48 ? 1 : key_len == 64 ? 2 : -1;
        if (size < 0)
            return -1;
        switch (t->mode) {
        case PCB_MODE_ECB: return PCB_EVP_AES128_ECB + size;
        case PCB_MODE_CBC: case PCB_MODE_SIV: return PCB_EVP_AES128_CBC + size;
        case PCB_MODE_CTR: return PCB_EVP_AES128_CTR + size;
        case PCB_MODE_GCM: return PCB_EVP_AES128_GCM + size;
        default: return -1;
        }
    case PCB_FAM_CHACHA:
        return PCB_EVP_CHACHA20_POLY1305;
    case PCB_FAM_DES:
        return t->mode == PCB_MODE_ECB ? PCB_EVP_DES_ECB : PCB_EVP_DES_CBC;
    case PCB_FAM_DESEDE:
        if (key_len == 16)
            return t->mode == PCB_MODE_ECB ? PCB_EVP_DES_EDE_ECB : PCB_EVP_DES_EDE_CBC;
        return t->mode == PCB_MODE_ECB ? PCB_EVP_DES_EDE3_ECB : PCB_EVP_DES_EDE3_CBC;
    default:
        return -1;
    }
}

int pcb_transform_available(const pcb_evp_cache *cache, const pcb_transform *t)
{
    switch (t->family) {
    case PCB_FAM_TEA: case PCB_FAM_XTEA:
        return 1;
    case PCB_FAM_AES: {
        /* every key size must be there; SIV also needs CTR */
        size_t base = t->mode == PCB_MODE_SIV ? 32 : 16, step = base / 2;
        for (size_t k = base; k <= 2 * base; k += step) {
            int i = evp_index(t, k);
            if (i < 0 || cache->cipher[i] == NULL)
                return 0;
            if (t->mode == PCB_MODE_SIV
                && cache->cipher[PCB_EVP_AES128_CTR + (i - PCB_EVP_AES128_CBC)] == NULL)
                return 0;
        }
        return 1;
    }
    case PCB_FAM_DESEDE:
        return cache->cipher[evp_index(t, 16)] != NULL && cache->cipher[evp_index(t, 24)] != NULL;
    default:
        return cache->cipher[evp_index(t, 8)] != NULL;
    }
}

/* ------------------------------------------------------------ validation */

static size_t cipher_block(const pcb_transform *t)
{
    switch (t->family) {
    case PCB_FAM_AES: return 16;
    case PCB_FAM_CHACHA: return 1;
    default: return 8;
    }
}

size_t pcb_block_size(const pcb_transform *t)
{
    return (t->mode == PCB_MODE_ECB || t->mode == PCB_MODE_CBC) ? cipher_block(t) : 1;
}

size_t pcb_default_key_len(const pcb_transform *t)
{
    switch (t->family) {
    case PCB_FAM_AES: return t->mode == PCB_MODE_SIV ? 32 : 16;
    case PCB_FAM_DES: return 8;
    case PCB_FAM_DESEDE: return 24;
    case PCB_FAM_CHACHA: return 32;
    default: return 16;
    }
}

int pcb_check_key_len(const pcb_transform *t, size_t key_len, pcb_status *st)
{
    const char *allowed;
    int ok;
    switch (t->family) {
    case PCB_FAM_AES:
        if (t->mode == PCB_MODE_SIV) {
            ok = key_len == 32 || key_len == 48 || key_len == 64;
            allowed = "32, 48 or 64 bytes (AES-SIV-256/384/512)";
        } else {
            ok = key_len == 16 || key_len == 24 || key_len == 32;
            allowed = "16, 24 or 32 bytes (AES-128/192/256)";
        }
        break;
    case PCB_FAM_DES: ok = key_len == 8; allowed = "8 bytes"; break;
    case PCB_FAM_DESEDE:
        ok = key_len == 16 || key_len == 24;
        allowed = "16 bytes (two-key) or 24 bytes (three-key)";
        break;
    case PCB_FAM_CHACHA: ok = key_len == 32; allowed = "32 bytes"; break;
    default: ok = key_len == 16; allowed = "16 bytes"; break;
    }
    if (!ok)
        return pcb_fail(st, PCB_E_VALUE, "%s takes a key of %s, got %zu bytes",
                        t->name, allowed, key_len);
    return 1;
}

static size_t required_iv_len(const pcb_transform *t)
{
    switch (t->mode) {
    case PCB_MODE_CBC: case PCB_MODE_CTR: return cipher_block(t);
    case PCB_MODE_POLY1305: return 12;
    default: return 0;
    }
}

int pcb_check_iv_len(const pcb_transform *t, size_t iv_len, pcb_status *st)
{
    const int given = iv_len != SIZE_MAX;
    switch (t->mode) {
    case PCB_MODE_ECB:
        if (given)
            return pcb_fail(st, PCB_E_VALUE, "%s takes no IV (ECB has none); pass iv=None", t->name);
        return 1;
    case PCB_MODE_SIV:
        /* optional nonce (one more associated-data component), up to 128 bytes */
        if (given && iv_len > 128)
            return pcb_fail(st, PCB_E_VALUE, "%s takes a nonce (iv) of at most 128 bytes, got %zu bytes",
                            t->name, iv_len);
        return 1;
    case PCB_MODE_GCM:
        if (!given)
            return pcb_fail(st, PCB_E_VALUE, "%s needs an IV of 1 to 128 bytes (12 is standard)", t->name);
        if (iv_len < 1 || iv_len > 128)
            return pcb_fail(st, PCB_E_VALUE,
                            "%s takes an IV of 1 to 128 bytes (12 is standard), got %zu bytes",
                            t->name, iv_len);
        return 1;
    default: {
        size_t want = required_iv_len(t);
        if (!given)
            return pcb_fail(st, PCB_E_VALUE, "%s needs an IV of %zu bytes", t->name, want);
        if (iv_len != want)
            return pcb_fail(st, PCB_E_VALUE, "%s takes an IV of %zu bytes, got %zu bytes",
                            t->name, want, iv_len);
        return 1;
    }
    }
}

int pcb_is_aead(const pcb_transform *t)
{
    return t->mode == PCB_MODE_GCM || t->mode == PCB_MODE_POLY1305 || t->mode == PCB_MODE_SIV;
}

int pcb_has_rounds(const pcb_transform *t)
{
    return t->family == PCB_FAM_TEA || t->family == PCB_FAM_XTEA;
}

size_t pcb_max_output(const pcb_transform *t, int encrypt, size_t in_len)
{
    if (pcb_is_aead(t))
        return encrypt ? in_len + TAG_LEN : in_len;
    /* EVP wants room for one extra block on both directions. */
    return in_len + cipher_block(t);
}

int pcb_check_length(const pcb_transform *t, int encrypt, size_t in_len, pcb_status *st)
{
    size_t b = cipher_block(t);
    if (pcb_is_aead(t)) {
        if (!encrypt && in_len < TAG_LEN)
            return pcb_fail(st, PCB_E_DECRYPT,
                            "%s ciphertext must hold at least the 16-byte %s, got %zu bytes",
                            t->name, t->mode == PCB_MODE_SIV ? "synthetic IV" : "tag", in_len);
        return 1;
    }
    if (t->mode != PCB_MODE_ECB && t->mode != PCB_MODE_CBC)
        return 1;
    if (encrypt) {
        if (!t->padding && in_len % b != 0)
            return pcb_fail(st, PCB_E_VALUE,
                            "%s needs data that is a whole number of %zu-byte blocks, got %zu bytes "
                            "(use PKCS5Padding for other lengths)", t->name, b, in_len);
        return 1;
    }
    if (in_len % b != 0 || (t->padding && in_len == 0))
        return pcb_fail(st, PCB_E_DECRYPT,
                        "%s ciphertext must be a %swhole number of %zu-byte blocks, got %zu bytes",
                        t->name, t->padding ? "non-zero " : "", b, in_len);
    return 1;
}

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
    int idx = evp_index(t, key_len);
    if (idx < 0 || cache->cipher[idx] == NULL) {
        if (t->family == PCB_FAM_DES && cache->legacy_error[0])
            return pcb_fail(st, PCB_E_UNSUPPORTED, "%s is unavailable: %s", t->name,
                            cache->legacy_error);
        return pcb_fail(st, PCB_E_UNSUPPORTED, "%s is unavailable in this OpenSSL (%s)",
                        t->name, idx < 0 ? "no such key size" : evp_names[idx]);
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

void pcb_cipher_set_iv(pcb_cipher *c, const uint8_t *iv)
{
    memcpy(c->iv, iv, c->iv_len);
}

void pcb_cipher_close(pcb_cipher *c)
{
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
    if (t->padding) {
        /* Check every pad byte without branching on secret data. */
        uint8_t pad = out[in_len - 1];
        unsigned bad = (unsigned)(pad == 0) | (unsigned)(pad > b);
        for (size_t i = 1; i <= b; i++) {
            unsigned in_pad = i <= pad;
            bad |= in_pad & (unsigned)(out[in_len - i] != pad);
        }
        if (bad) {
            OPENSSL_cleanse(out, in_len);
            return pcb_fail(st, PCB_E_DECRYPT, "%s: bad padding (wrong key, IV or corrupted data)",
                            t->name);
        }
        *out_len = in_len - pad;
    }
    return 1;
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

static int evp_message(pcb_cipher *c, int rekey, const pcb_bytes *aad, size_t n_aad,
                       const uint8_t *in, size_t in_len, uint8_t *out, size_t *out_len,
                       pcb_status *st)
{
    const pcb_transform *t = c->t;
    const int aead = t->mode == PCB_MODE_GCM || t->mode == PCB_MODE_POLY1305;
    size_t body = in_len;
    int outl = 0;

    if (!evp_init(c, rekey ? c->key : NULL, st))
        return 0;
    if (aead) {
        if (!c->encrypt) {
            body = in_len - TAG_LEN;
            if (EVP_CIPHER_CTX_ctrl(c->ctx, EVP_CTRL_AEAD_SET_TAG, TAG_LEN,
                                    (void *)(in + body)) <= 0)
                return pcb_fail_openssl(st, "setting the tag");
        }
        for (size_t i = 0; i < n_aad; i++)
            if (aad[i].len && !pcb_evp_update(c->ctx, NULL, NULL, aad[i].data, aad[i].len))
                return pcb_fail_openssl(st, "adding associated data");
    }
    size_t done = 0; /* padding holds a block back until final */
    if (!pcb_evp_update(c->ctx, out, &done, in, body))
        return pcb_fail_openssl(st, t->name);
    if (!EVP_CipherFinal_ex(c->ctx, out + done, &outl)) {
        ERR_clear_error();
        if (aead || t->padding) {
            OPENSSL_cleanse(out, done);
            return pcb_fail(st, PCB_E_DECRYPT, aead
                            ? "%s: authentication failed (wrong key, IV, associated data or corrupted data)"
                            : "%s: bad padding (wrong key, IV or corrupted data)", t->name);
        }
        return pcb_fail(st, PCB_E_OPENSSL, "%s: finishing the message failed", t->name);
    }
    *out_len = done + (size_t)outl;
    if (aead && c->encrypt) {
        if (EVP_CIPHER_CTX_ctrl(c->ctx, EVP_CTRL_AEAD_GET_TAG, TAG_LEN, out + *out_len) <= 0)
            return pcb_fail_openssl(st, "reading the tag");
        *out_len += TAG_LEN;
    }
    return 1;
}

int pcb_cipher_message(pcb_cipher *c, int rekey, const pcb_bytes *aad, size_t n_aad,
                       const uint8_t *in, size_t in_len, uint8_t *out,
                       size_t *out_len, pcb_status *st)
{
    const pcb_transform *t = c->t;
    if (!pcb_check_length(t, c->encrypt, in_len, st))
        return 0;
    if (t->mode == PCB_MODE_SIV)
        return siv_message(c, rekey, aad, n_aad, in, in_len, out, out_len, st);
    if (t->family == PCB_FAM_TEA || t->family == PCB_FAM_XTEA) {
        if (rekey)
            tea_key(c);
        return tea_message(c, in, in_len, out, out_len, st);
    }
    return evp_message(c, rekey, aad, n_aad, in, in_len, out, out_len, st);
}

int pcb_cipher_stream_reset(pcb_cipher *c, pcb_status *st)
{
    const pcb_transform *t = c->t;
    if (t->mode == PCB_MODE_SIV)
        return pcb_fail(st, PCB_E_VALUE, "%s has no stream scope: SIV must see the whole "
                        "message before it can encrypt; use scope='message'", t->name);
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
