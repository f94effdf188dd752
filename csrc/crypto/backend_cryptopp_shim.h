/*
 * crypto/backend_cryptopp_shim.h — the C interface of the Crypto++ shim
 * (backend_cryptopp_shim.cpp, C++, compiled only where setup.py finds Crypto++;
 * the backend's ops are backend_cryptopp.c's, in C like every other).
 *
 * Owns: one keyed Crypto++ object per pcb_cryptopp (opaque: a mode object
 * over AES, DES, DES-EDE3, TEA or XTEA, or GCM<AES>, ChaCha20Poly1305,
 * XChaCha20Poly1305), and the rule that no C++ exception leaves the shim:
 * every call catches them all and returns 0 (open: -1) with the exception's
 * text in err. Crypto++ wipes its key schedules (SecBlock) when an object is
 * freed; the shim keeps no key bytes of its own.
 *
 * Thread safety: a pcb_cryptopp belongs to one thread; pcb_cryptopp_probe
 * runs once before any other call (Crypto++'s CPU detection). Lengths are
 * bytes; AEAD tags 16 bytes; family and mode are crypto/transform.h's values.
 */
#ifndef PCB_CRYPTO_BACKEND_CRYPTOPP_SHIM_H
#define PCB_CRYPTO_BACKEND_CRYPTOPP_SHIM_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef struct pcb_cryptopp pcb_cryptopp;

/* Runs Crypto++'s CPU detection; writes "8.7.0"-style version text. */
void pcb_cryptopp_probe(char *version, size_t version_len);
/* 1 AES instructions in use (AES-NI, ARMv8 AES), 0 not, -1 unknown. */
int pcb_cryptopp_hw_aes(void);
/* Keys *h for (family, mode, encrypt): made on the first call, keyed again
 * (the same object) on later ones. rounds: TEA/XTEA cycles, else ignored. */
int pcb_cryptopp_key(pcb_cryptopp **h, int family, int mode, int encrypt, const uint8_t *key,
                     size_t key_len, unsigned rounds, char *err, size_t err_len);
/* A new IV (CBC/CTR/GCM/ChaCha20-Poly1305): the next update starts a message. */
int pcb_cryptopp_reset(pcb_cryptopp *h, const uint8_t *iv, size_t iv_len, char *err,
                       size_t err_len);
/* ECB/CBC (whole blocks), CTR, and an AEAD's text without its tag. */
int pcb_cryptopp_update(pcb_cryptopp *h, const uint8_t *in, uint8_t *out, size_t len, char *err,
                        size_t err_len);
/* out = ct || tag. */
int pcb_cryptopp_seal(pcb_cryptopp *h, const uint8_t *iv, size_t iv_len, const uint8_t *aad,
                      size_t aad_len, const uint8_t *in, size_t len, uint8_t *out, char *err,
                      size_t err_len);
/* in = ct || tag (len counts both): 1 authentic, 0 not (out wiped), -1 error. */
int pcb_cryptopp_open(pcb_cryptopp *h, const uint8_t *iv, size_t iv_len, const uint8_t *aad,
                      size_t aad_len, const uint8_t *in, size_t len, uint8_t *out, char *err,
                      size_t err_len);
void pcb_cryptopp_free(pcb_cryptopp *h);

#ifdef __cplusplus
}
#endif

#endif /* PCB_CRYPTO_BACKEND_CRYPTOPP_SHIM_H */
