/*
 * store/aead.h — the store's AEAD blobs.
 *
 * Owns: a context pair for one key, and nonce(12) || ciphertext || tag(16)
 * sealed and opened (the values', the sealed map's and the keysets' layout,
 * over crypto/evp's one AEAD call sequence). A leaf of the store layer: it
 * calls nothing of store/.
 *
 * Thread safety: a context pair is used by one thread at a time (the
 * store's lock, or before the store is shared). Lengths are bytes.
 */
#ifndef PCB_STORE_AEAD_H
#define PCB_STORE_AEAD_H

#include "store/internal.h"

/* AEAD contexts for one key (both directions); 1, or 0 with st set. */
int pcb_aead_pair_new(pcb_aead_pair *a, const EVP_CIPHER *c, const uint8_t *key, pcb_status *st);
void pcb_aead_pair_free(pcb_aead_pair *a);
/* out = nonce || ct || tag (len + 28 bytes). key: set up again first (NULL
 * keeps it). 1, or 0 with st set. */
int pcb_store_seal(EVP_CIPHER_CTX *ctx, const uint8_t *key, const uint8_t nonce[NONCE_LEN],
                   const uint8_t *aad, size_t aad_len, const uint8_t *in, size_t len,
                   uint8_t *out, pcb_status *st);
/* in = nonce || ct || tag (len >= 28); out gets len - 28 bytes. 1 ok, 0 not
 * authentic (out wiped, st not set), -1 OpenSSL failure (st set). */
int pcb_store_unseal(EVP_CIPHER_CTX *ctx, const uint8_t *key, const uint8_t *aad, size_t aad_len,
                     const uint8_t *in, size_t len, uint8_t *out, pcb_status *st);

#endif /* PCB_STORE_AEAD_H */
