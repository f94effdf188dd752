/*
 * store/codec_backend.h — the per-entry crypto of a store opened with
 * crypto_backend other than "openssl": the values' AEAD (AES-256-GCM or
 * ChaCha20-Poly1305) and, where the library has AES-SIV in the store's
 * shape (64-byte key, one associated-data component, no nonce), the names'
 * AES-SIV, run by another library (crypto/backend) instead of OpenSSL.
 *
 * Owns: which options a backend can serve (the check at open: PCB_E_VALUE
 * naming the backends that have what is missing), the backend's keyed
 * contexts (re-keyed lazily when the store's primary keys change, so
 * rotate and its undo need not know of them) and sealing/opening through
 * them. crypto_backend="auto" (PCB_STORE_BK_AUTO) resolves here, at open:
 * the floor kernels (crypto/floor.h, called directly with their keys and
 * the store name's S2V state prepared once) where the CPU has them and they
 * serve the options, else OpenSSL. The bytes are the same as OpenSSL's: the
 * file format does not depend on the backend. Keysets and the master key stay on OpenSSL.
 * All with the store's lock held (the contexts are the store's). Lengths
 * are bytes. Also defined in codec_backend.c: pcb_store_stage_floor
 * (store.h), the floor of put/get's crypto stages (its own floor contexts,
 * keyed from a copy of the store's keys taken under the lock; timed in ns
 * without it).
 */
#ifndef PCB_STORE_CODEC_BACKEND_H
#define PCB_STORE_CODEC_BACKEND_H

#include "store/internal.h"

/* 1 if opt can run on its crypto_backend (always for "openssl"), else 0 with
 * st set (PCB_E_VALUE naming the backends that have what opt needs). */
int pcb_codec_bk_check(const pcb_store_options *opt, const pcb_evp_cache *cache,
                       pcb_status *st);
/* 1 if the store seals values / names on its backend. */
int pcb_codec_bk_values(const pcb_store *s);
int pcb_codec_bk_names(const pcb_store *s);

/* out = nonce || ct || tag, as pcb_store_seal, under the primary value key. */
int pcb_codec_bk_seal(pcb_store *s, const uint8_t nonce[NONCE_LEN], const uint8_t *aad,
                      size_t aad_len, const uint8_t *in, size_t len, uint8_t *out,
                      pcb_status *st);
/* As pcb_store_unseal, under key (NULL: the primary). 1 ok, 0 not authentic
 * (st not set), -1 a failure (st set). */
int pcb_codec_bk_unseal(pcb_store *s, const uint8_t *key, const uint8_t *aad, size_t aad_len,
                        const uint8_t *in, size_t len, uint8_t *out, pcb_status *st);
/* AES-SIV of a name with the store name as its one component: out = V || C
 * (len + 16 bytes) under the primary key; open: key NULL for the primary,
 * 1 ok, 0 not authentic, -1 a failure (st set). */
int pcb_codec_bk_siv_seal(pcb_store *s, const uint8_t *in, size_t len, uint8_t *out,
                          pcb_status *st);
int pcb_codec_bk_siv_open(pcb_store *s, const uint8_t *key, const uint8_t *in, size_t len,
                          uint8_t *out, pcb_status *st);

/* Frees the backend contexts and wipes their keys (store_free). */
void pcb_codec_bk_free(pcb_store *s);

#endif /* PCB_STORE_CODEC_BACKEND_H */
