/*
 * crypto/evp.h — OpenSSL's EVP layer as the rest of the C core uses it.
 *
 * Owns: the cache of fetched ciphers (one private library context with the
 * default and legacy providers; every cipher fetched once, at module
 * start-up, never per call), EVP updates over any size_t length, and the one
 * AEAD message sequence (IV, tag, associated data, update, final) that the
 * cipher kernels, the store's values and its keysets all run.
 *
 * Thread safety: the cache is read-only once initialised and may be shared;
 * an EVP_CIPHER_CTX belongs to one thread (or lock) at a time. Lengths are
 * bytes; AEAD tags are PCB_AEAD_TAG_LEN bytes.
 */
#ifndef PCB_CRYPTO_EVP_H
#define PCB_CRYPTO_EVP_H

#include <stddef.h>
#include <stdint.h>
#include <openssl/evp.h>

#include "common/status.h"

#define PCB_AEAD_TAG_LEN 16

enum {
    PCB_EVP_AES128_ECB, PCB_EVP_AES192_ECB, PCB_EVP_AES256_ECB,
    PCB_EVP_AES128_CBC, PCB_EVP_AES192_CBC, PCB_EVP_AES256_CBC,
    PCB_EVP_AES128_CTR, PCB_EVP_AES192_CTR, PCB_EVP_AES256_CTR,
    PCB_EVP_AES128_GCM, PCB_EVP_AES192_GCM, PCB_EVP_AES256_GCM,
    PCB_EVP_CHACHA20_POLY1305,
    PCB_EVP_DES_ECB, PCB_EVP_DES_CBC,
    PCB_EVP_DES_EDE_ECB, PCB_EVP_DES_EDE_CBC,
    PCB_EVP_DES_EDE3_ECB, PCB_EVP_DES_EDE3_CBC,
    PCB_EVP_COUNT
};

typedef struct {
    OSSL_LIB_CTX *libctx;
    OSSL_PROVIDER *default_provider;
    OSSL_PROVIDER *legacy_provider;   /* NULL if it could not be loaded */
    EVP_CIPHER *cipher[PCB_EVP_COUNT]; /* NULL where the fetch failed */
    char legacy_error[200];
} pcb_evp_cache;

/* Creates the library context, loads the providers, fetches every cipher. */
int pcb_evp_cache_init(pcb_evp_cache *cache, pcb_status *st);
void pcb_evp_cache_free(pcb_evp_cache *cache);

/* OpenSSL's name of cipher i ("AES-128-GCM"), for messages. */
const char *pcb_evp_name(int i);

/* A byte string that is not ours (an associated-data component, say). */
typedef struct {
    const uint8_t *data;
    size_t len;
} pcb_bytes;

/* EVP update over any size_t length (EVP takes int lengths); *written (may
 * be NULL) gets the bytes output. Returns 1/0 (OpenSSL's error queued). */
int pcb_evp_update(EVP_CIPHER_CTX *ctx, uint8_t *out, size_t *written,
                   const uint8_t *in, size_t len);

/*
 * One AEAD message (GCM or ChaCha20-Poly1305) on a context initialised with
 * its cipher and key. key: set the key up again first (NULL keeps the
 * schedule); iv: the context's IV length (12 unless set otherwise); aad:
 * n_aad components, fed in order.
 *
 * pcb_aead_seal writes ciphertext || tag (len + 16 bytes) to out; returns 1,
 * or 0 with st set. pcb_aead_open reads in = ciphertext || tag (len >= 16),
 * writes len - 16 bytes to out; returns 1 if authentic, 0 if not (out wiped,
 * st untouched, OpenSSL's queue cleared), -1 on an OpenSSL failure (st set).
 */
int pcb_aead_seal(EVP_CIPHER_CTX *ctx, const uint8_t *key, const uint8_t *iv,
                  const pcb_bytes *aad, size_t n_aad, const uint8_t *in, size_t len,
                  uint8_t *out, pcb_status *st);
int pcb_aead_open(EVP_CIPHER_CTX *ctx, const uint8_t *key, const uint8_t *iv,
                  const pcb_bytes *aad, size_t n_aad, const uint8_t *in, size_t len,
                  uint8_t *out, pcb_status *st);

#endif /* PCB_CRYPTO_EVP_H */
