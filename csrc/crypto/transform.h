/*
 * crypto/transform.h — the transformations this package knows, by name.
 *
 * Owns: the table of transformations (Java-style ALG/MODE/PADDING names and
 * their aliases), which EVP cipher serves each at a key length, and every
 * rule about their arguments: key, IV and message lengths, padding, rounds,
 * output sizes. The one-shot API, the benchmarks and the fuzzers validate
 * through these functions only. Pure and thread-safe (the table is const).
 * Lengths are bytes.
 */
#ifndef PCB_CRYPTO_TRANSFORM_H
#define PCB_CRYPTO_TRANSFORM_H

#include <stddef.h>
#include <stdint.h>

#include "common/status.h"
#include "crypto/evp.h"

typedef enum {
    PCB_FAM_AES, PCB_FAM_DES, PCB_FAM_DESEDE, PCB_FAM_CHACHA, PCB_FAM_TEA, PCB_FAM_XTEA,
    PCB_FAM_XCHACHA /* XChaCha20-Poly1305: no EVP cipher, other backends only */
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

const pcb_transform *pcb_transforms(size_t *count);
/* Case-insensitive, with aliases; NULL if unknown. */
const pcb_transform *pcb_find_transform(const char *name);
/* The pcb_evp_cache index of the cipher serving t at key_len; -1 if none
 * (TEA/XTEA, a key size the family lacks). SIV: its AES-CBC. */
int pcb_evp_index(const pcb_transform *t, size_t key_len);
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

#endif /* PCB_CRYPTO_TRANSFORM_H */
