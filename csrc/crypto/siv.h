/*
 * crypto/siv.h — AES-SIV (RFC 5297): S2V on AES-CMAC, then AES-CTR.
 *
 * Owns: the SIV key state (two EVP contexts with their key schedules kept, the
 * CMAC subkeys, and CMAC(K, 0^128), which S2V always starts from), S2V as an
 * accumulator so that callers with constant associated data (the encrypted
 * store) can fold it in once and reuse the result, and whole-message SIV
 * encryption and decryption. Built on EVP AES-CBC (as the CMAC chain), AES-ECB
 * (the CTR keystream of short messages) and AES-CTR (long ones), because
 * OpenSSL 3.0's EVP AES-SIV refuses empty plaintexts; no per-message IV is
 * set for short messages (see pcb_siv.c).
 * Not thread-safe per object: one pcb_siv per thread or lock.
 */
#ifndef PCB_CRYPTO_SIV_H
#define PCB_CRYPTO_SIV_H

#include <stddef.h>
#include <stdint.h>
#include <openssl/evp.h>

#define PCB_SIV_BLOCK 16

typedef struct {
    EVP_CIPHER_CTX *mac; /* AES-CBC under K1: the CMAC chain */
    EVP_CIPHER_CTX *ecb; /* AES-ECB under K2: counter blocks of short messages */
    EVP_CIPHER_CTX *ctr; /* AES-CTR under K2: long messages */
    uint8_t chain[16];   /* mac's CBC state: XORed into a CMAC's first block */
    int chain_lost;      /* a failed update: re-IV mac before the next CMAC */
    uint8_t sub1[16];    /* CMAC subkeys K1 = dbl(L), K2 = dbl(K1), L = AES(K1, 0) */
    uint8_t sub2[16];
    uint8_t d0[16];      /* CMAC(K1, 0^128) */
    size_t key_len;      /* 32, 48 or 64 */
} pcb_siv;

/* Allocates the contexts for the AES-CBC, AES-ECB and AES-CTR of one key size
 * (all must match key_len/2). Returns 1 on success, 0 on OpenSSL failure. */
int pcb_siv_new(pcb_siv *s, const EVP_CIPHER *cbc, const EVP_CIPHER *ecb, const EVP_CIPHER *ctr);

/* Keys both halves (first half S2V/CMAC, second half CTR, as RFC 5297);
 * key_len must be the one the contexts were made for. Returns 1/0. */
int pcb_siv_set_key(pcb_siv *s, const uint8_t *key, size_t key_len);

/* Frees the contexts and wipes the subkeys. Safe on a zeroed struct. */
void pcb_siv_free(pcb_siv *s);

/* S2V: d starts as a copy of s->d0; fold in each associated-data component
 * with pcb_s2v_add (1/0); pcb_s2v_final folds in the plaintext and yields V. */
int pcb_s2v_add(pcb_siv *s, uint8_t d[16], const uint8_t *ad, size_t len);
int pcb_s2v_final(pcb_siv *s, const uint8_t d[16], const uint8_t *p, size_t len,
                  uint8_t v[16]);

/* out = V || CTR(p) (len + 16 bytes); d = S2V state after the AD components.
 * Returns 1, or 0 on OpenSSL failure. */
int pcb_siv_encrypt(pcb_siv *s, const uint8_t d[16], const uint8_t *p,
                    size_t len, uint8_t *out);

/* in = V || C (len >= 16); out gets len - 16 bytes. Returns 1 if authentic,
 * 0 if not (out wiped), -1 on OpenSSL failure. */
int pcb_siv_decrypt(pcb_siv *s, const uint8_t d[16], const uint8_t *in,
                    size_t len, uint8_t *out);

#endif /* PCB_CRYPTO_SIV_H */
