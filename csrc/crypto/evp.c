/*
 * crypto/evp.c — the EVP cipher cache, long updates and the AEAD sequence
 * (see evp.h).
 */
#include "crypto/evp.h"

#include <stdio.h>
#include <string.h>
#include <openssl/crypto.h>
#include <openssl/err.h>
#include <openssl/provider.h>


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
        char buf[200];
        snprintf(cache->legacy_error, sizeof cache->legacy_error,
                 "OpenSSL's legacy provider could not be loaded (%s); single DES needs it",
                 pcb_openssl_reason(buf, sizeof buf));
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

const char *pcb_evp_name(int i)
{
    return i >= 0 && i < PCB_EVP_COUNT ? evp_names[i] : "unknown";
}

int pcb_evp_update(EVP_CIPHER_CTX *ctx, uint8_t *out, size_t *written,
                   const uint8_t *in, size_t len)
{
    /* EVP counts in int; feed whole-block multiples of 1 GiB at a time. */
    const size_t step = (size_t)1 << 30;
    size_t total = 0;
    if (written)
        *written = 0;
    while (len > 0) {
        size_t n = len < step ? len : step;
        int outl = 0;
        if (!EVP_CipherUpdate(ctx, out, &outl, in, (int)n))
            return 0;
        if (out != NULL)
            out += outl;
        total += (size_t)outl;
        in += n;
        len -= n;
    }
    if (written)
        *written = total;
    return 1;
}

/* The associated data components, in order (empty ones skipped). */
static int aead_aad(EVP_CIPHER_CTX *ctx, const pcb_bytes *aad, size_t n_aad)
{
    for (size_t i = 0; i < n_aad; i++)
        if (aad[i].len && !pcb_evp_update(ctx, NULL, NULL, aad[i].data, aad[i].len))
            return 0;
    return 1;
}

int pcb_aead_seal(EVP_CIPHER_CTX *ctx, const uint8_t *key, const uint8_t *iv,
                  const pcb_bytes *aad, size_t n_aad, const uint8_t *in, size_t len,
                  uint8_t *out, pcb_status *st)
{
    int outl;
    if (!EVP_EncryptInit_ex2(ctx, NULL, key, iv, NULL) || !aead_aad(ctx, aad, n_aad)
        || (len && !pcb_evp_update(ctx, out, NULL, in, len))
        || !EVP_EncryptFinal_ex(ctx, out + len, &outl)
        || EVP_CIPHER_CTX_ctrl(ctx, EVP_CTRL_AEAD_GET_TAG, PCB_AEAD_TAG_LEN, out + len) <= 0)
        return pcb_fail_openssl(st, "AEAD encryption");
    return 1;
}

int pcb_aead_open(EVP_CIPHER_CTX *ctx, const uint8_t *key, const uint8_t *iv,
                  const pcb_bytes *aad, size_t n_aad, const uint8_t *in, size_t len,
                  uint8_t *out, pcb_status *st)
{
    int outl;
    size_t body = len - PCB_AEAD_TAG_LEN;
    if (!EVP_DecryptInit_ex2(ctx, NULL, key, iv, NULL)
        || EVP_CIPHER_CTX_ctrl(ctx, EVP_CTRL_AEAD_SET_TAG, PCB_AEAD_TAG_LEN, (void *)(in + body)) <= 0
        || !aead_aad(ctx, aad, n_aad) || (body && !pcb_evp_update(ctx, out, NULL, in, body))) {
        pcb_fail_openssl(st, "AEAD decryption");
        return -1;
    }
    if (!EVP_DecryptFinal_ex(ctx, out + body, &outl)) {
        ERR_clear_error();
        OPENSSL_cleanse(out, body);
        return 0;
    }
    return 1;
}
