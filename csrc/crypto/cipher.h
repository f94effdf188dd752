/*
 * crypto/cipher.h — one keyed cipher, whatever implements it.
 *
 * Owns: pcb_cipher, which runs whole messages (padding, IV, AAD, tag) or a
 * stream of updates for any transformation of crypto/transform.h, over EVP
 * (crypto/evp), our AES-SIV (crypto/siv), our TEA/XTEA (crypto/tea) or
 * another library (crypto/backend: the one place that dispatches to it). The
 * one-shot API and the timed kernels both run through it. No Python: errors
 * come back in a pcb_status, so everything here runs without the GIL.
 * Not thread-safe per object: one pcb_cipher per thread. Lengths are bytes.
 */
#ifndef PCB_CRYPTO_CIPHER_H
#define PCB_CRYPTO_CIPHER_H

#include <stddef.h>
#include <stdint.h>

#include "common/status.h"
#include "crypto/backend.h"
#include "crypto/evp.h"
#include "crypto/siv.h"
#include "crypto/tea.h"
#include "crypto/transform.h"

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
    pcb_backend backend;          /* PCB_BK_OPENSSL: the fields above */
    const pcb_backend_ops *bk;    /* another library: its calls and context */
    void *bctx;
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

/* The same on another library's backend (PCB_BK_OPENSSL: pcb_cipher_open).
 * A transformation or key size the backend lacks is PCB_E_UNSUPPORTED naming
 * the backends that have it; a limit of its own (IV length) PCB_E_VALUE. */
int pcb_cipher_open_backend(pcb_cipher *c, pcb_backend backend, const pcb_evp_cache *cache,
                            const pcb_transform *t, int encrypt, const uint8_t *key,
                            size_t key_len, const uint8_t *iv, size_t iv_len, uint32_t rounds,
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

#endif /* PCB_CRYPTO_CIPHER_H */
