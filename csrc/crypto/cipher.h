/*
 * pcb_kernels.h — the cipher kernels behind every transformation.
 *
 * Owns: the table of transformations (Java-style names, aliases), the cache
 * of fetched EVP ciphers (one library context with the default and legacy
 * providers, every cipher fetched once), argument validation shared by the
 * one-shot API and the benchmarks, and pcb_cipher: one keyed cipher that runs
 * whole messages (padding, IV, AAD, tag) or a stream of updates, over EVP,
 * our SIV (pcb_siv) or our TEA/XTEA (pcb_tea). No Python here: errors come
 * back in a pcb_status, so everything below runs without the GIL.
 */
#ifndef PCB_KERNELS_H
#define PCB_KERNELS_H

#include <stddef.h>
#include <stdint.h>
#include <openssl/evp.h>

#include "pcb_siv.h"
#include "pcb_tea.h"

typedef enum {
    PCB_FAM_AES, PCB_FAM_DES, PCB_FAM_DESEDE, PCB_FAM_CHACHA, PCB_FAM_TEA, PCB_FAM_XTEA
} pcb_family;

typedef enum {
    PCB_MODE_ECB, PCB_MODE_CBC, PCB_MODE_CTR, PCB_MODE_GCM, PCB_MODE_SIV, PCB_MODE_POLY1305
} pcb_mode;

typedef struct {
    const char *name; /* canonical name, e.g. "AES/CBC/PKCS5Padding" */
    pcb_family family;
    pcb_mode mode;
    uint8_t padding;   /* PKCS5Padding */
    uint8_t reference; /* TEA-ref / XTEA-ref: the one-block-at-a-time kernel */
} pcb_transform;

/* Error classes the module glue maps to Python exceptions. */
typedef enum {
    PCB_OK = 0,
    PCB_E_VALUE,       /* ValueError */
    PCB_E_TYPE,        /* TypeError */
    PCB_E_UNSUPPORTED, /* UnsupportedCipherError */
    PCB_E_DECRYPT,     /* DecryptionError */
    PCB_E_OPENSSL,     /* OpenSSLError, with OpenSSL's reason text */
    PCB_E_MEMORY,      /* MemoryError */
    PCB_E_OS,          /* OSError with os_errno */
    PCB_E_PERMISSION,  /* PermissionError */
    PCB_E_FORMAT,      /* store.StoreFormatError */
    PCB_E_RESERVED     /* store.ReservedNameError */
} pcb_err;

typedef struct {
    pcb_err code;
    int os_errno; /* PCB_E_OS */
    char msg[480];
} pcb_status;

/* Sets st and returns 0: `return pcb_fail(st, PCB_E_VALUE, "...", ...);` */
int pcb_fail(pcb_status *st, pcb_err code, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
/* Records OpenSSL's queued error (its reason text) with context; returns 0. */
int pcb_fail_openssl(pcb_status *st, const char *what);

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

const pcb_transform *pcb_transforms(size_t *count);
/* Case-insensitive, with aliases; NULL if unknown. */
const pcb_transform *pcb_find_transform(const char *name);
/* 1 if the transformation's ciphers were fetched (DES needs the legacy provider). */
int pcb_transform_available(const pcb_evp_cache *cache, const pcb_transform *t);

size_t pcb_block_size(const pcb_transform *t);   /* 1 for stream modes */
size_t pcb_default_key_len(const pcb_transform *t);
/* Key lengths allowed, as text for messages ("16, 24 or 32"). */
int pcb_check_key_len(const pcb_transform *t, size_t key_len, pcb_status *st);
/* iv_len: SIZE_MAX for "no IV given". */
int pcb_check_iv_len(const pcb_transform *t, size_t iv_len, pcb_status *st);
int pcb_is_aead(const pcb_transform *t);      /* GCM, ChaCha20-Poly1305, SIV */
int pcb_has_rounds(const pcb_transform *t);   /* TEA, XTEA */
/* Largest output a message of in_len bytes can produce. */
size_t pcb_max_output(const pcb_transform *t, int encrypt, size_t in_len);
/* Checks that a message of in_len bytes is possible for the mode. */
int pcb_check_length(const pcb_transform *t, int encrypt, size_t in_len, pcb_status *st);

typedef struct {
    const uint8_t *data;
    size_t len;
} pcb_bytes;

typedef struct {
    const pcb_transform *t;
    int encrypt;
    size_t key_len, iv_len;
    int has_iv; /* an empty SIV nonce is still a component */
    uint8_t key[64];
    uint8_t iv[128];
    uint32_t rounds;
    EVP_CIPHER_CTX *ctx; /* EVP families */
    pcb_siv siv;         /* SIV */
    int siv_ready;
    pcb_tea_key tea;     /* TEA/XTEA */
    pcb_tea_impl tea_impl;
    uint8_t chain[PCB_TEA_BLOCK]; /* TEA CBC stream state */
    pcb_tea_ctr_state tea_ctr;    /* TEA CTR stream state */
} pcb_cipher;

/*
 * Keys a cipher (lengths already validated). iv may be NULL where the mode
 * has none. tea_impl chooses the optimized TEA code (ignored for -ref).
 * Returns 1, or 0 with st set; pcb_cipher_close is safe either way.
 */
int pcb_cipher_open(pcb_cipher *c, const pcb_evp_cache *cache, const pcb_transform *t,
                    int encrypt, const uint8_t *key, size_t key_len,
                    const uint8_t *iv, size_t iv_len, uint32_t rounds,
                    pcb_tea_impl tea_impl, pcb_status *st);

/* Replaces the IV for the next message or stream reset (same length). */
void pcb_cipher_set_iv(pcb_cipher *c, const uint8_t *iv);

/*
 * One whole message with the current key and IV; rekey = set the key up
 * again first. aad: n_aad components (0 or 1 for GCM/ChaCha20-Poly1305, any
 * number for SIV, whose IV, if any, is appended as the last component).
 * out has room for pcb_max_output(); *out_len gets the bytes written.
 * Returns 1, or 0 with st set (PCB_E_DECRYPT for a failed check).
 */
int pcb_cipher_message(pcb_cipher *c, int rekey, const pcb_bytes *aad, size_t n_aad,
                       const uint8_t *in, size_t in_len, uint8_t *out,
                       size_t *out_len, pcb_status *st);

/* Stream scope: restart the stream at the current IV, then feed updates
 * (no padding, no tag). len must be whole blocks for ECB/CBC. */
int pcb_cipher_stream_reset(pcb_cipher *c, pcb_status *st);
int pcb_cipher_stream(pcb_cipher *c, const uint8_t *in, uint8_t *out, size_t len,
                      pcb_status *st);

/* Frees contexts and wipes keys. */
void pcb_cipher_close(pcb_cipher *c);

#endif /* PCB_KERNELS_H */
