/*
 * crypto/backend.h — the crypto libraries other than OpenSSL's EVP that can
 * run a transformation, each a row of crypto/backends.def (the one list of
 * them: names, labels, Debian packages, build probes), among them the floor
 * (pycipherbench's own AES-NI GCM/SIV, always compiled; usable where the CPU
 * has AES-NI and PCLMULQDQ).
 *
 * Owns: the backend table read from backends.def (which are compiled in:
 * PCB_HAVE_<ID> from setup.py's probe of the row), what each supports, each library's own limits (IV
 * lengths, associated-data components: PCB_E_VALUE naming the library), and
 * the one padding/message sequence over a backend's raw calls. OpenSSL itself
 * stays in crypto/cipher + crypto/evp; crypto/cipher dispatches here. Each
 * backend_<lib>.c compiles to an empty table entry when its library is absent.
 *
 * Thread safety: pcb_backends_init runs once at module start-up (before any
 * other thread uses a backend); afterwards the table is read-only and a
 * backend context belongs to one thread, as a pcb_cipher does. Lengths are
 * bytes; AEAD tags are PCB_AEAD_TAG_LEN bytes.
 */
#ifndef PCB_CRYPTO_BACKEND_H
#define PCB_CRYPTO_BACKEND_H

#include <stddef.h>
#include <stdint.h>

#include "common/status.h"
#include "crypto/evp.h"
#include "crypto/transform.h"

/* PCB_BK_OPENSSL, PCB_BK_SODIUM, ...: backends.def's rows in order. */
typedef enum {
#define PCB_BACKEND(ID, ...) PCB_BK_##ID,
#include "crypto/backends.def"
#undef PCB_BACKEND
    PCB_BK_COUNT
} pcb_backend;

/*
 * A library's raw calls. ctx is ctx_size zeroed bytes owned by the caller
 * (crypto/cipher), one per keyed cipher.
 *   setkey: key schedule for t (supports() and check() already passed).
 *   reset/update: ECB/CBC/CTR (whole blocks for ECB/CBC, any length for CTR)
 *     and, where stream_aead is set, GCM/ChaCha20-Poly1305 without the tag.
 *   seal: out = ct || tag (GCM, ChaCha20-Poly1305, XChaCha20) or V || C
 *     (SIV, whose nonce is the last S2V component); open: the reverse,
 *     1 authentic, 0 not (out wiped), -1 a library failure (st set).
 *   release: frees what the library allocated inside ctx.
 *   set_rounds (optional): TEA/XTEA's cycles (1..1024), called before setkey.
 * Backends fill it with designated initializers; the name, label and package
 * are the backends.def row's (pcb_backend_name, pcb_backend_label).
 */
typedef struct {
    int stream_aead;       /* reset/update also serve GCM / ChaCha20-Poly1305 */
    size_t ctx_size;
    int (*init)(pcb_status *st);
    const char *(*version)(void);
    int (*hw_aes)(void);   /* 1 AES instructions in use, 0 not, -1 unknown */
    int (*supports)(const pcb_transform *t, size_t key_len); /* key_len 0: any size */
    int (*check)(const pcb_transform *t, size_t iv_len, size_t n_aad, int has_iv,
                 pcb_status *st);
    int (*setkey)(void *ctx, const pcb_transform *t, int encrypt, const uint8_t *key,
                  size_t key_len, pcb_status *st);
    int (*reset)(void *ctx, const uint8_t *iv, size_t iv_len, pcb_status *st);
    int (*update)(void *ctx, const uint8_t *in, uint8_t *out, size_t len, pcb_status *st);
    int (*seal)(void *ctx, const uint8_t *iv, size_t iv_len, const pcb_bytes *aad,
                size_t n_aad, const uint8_t *in, size_t len, uint8_t *out, pcb_status *st);
    int (*open)(void *ctx, const uint8_t *iv, size_t iv_len, const pcb_bytes *aad,
                size_t n_aad, const uint8_t *in, size_t len, uint8_t *out, pcb_status *st);
    void (*release)(void *ctx);
    void (*set_rounds)(void *ctx, uint32_t rounds);
} pcb_backend_ops;

/* The compiled-in backends' ops, pcb_ops_<ID> (crypto/backend_<id>.c; NULL for an
 * absent one; OpenSSL's is NULL: it stays in crypto/cipher). */
#define PCB_BACKEND(ID, ...) extern const pcb_backend_ops *const pcb_ops_##ID;
#include "crypto/backends.def"
#undef PCB_BACKEND

const char *pcb_backend_name(pcb_backend b);
/* The library's own name in messages ("libsodium", "Crypto++", ...). */
const char *pcb_backend_label(pcb_backend b);
/* The Debian package that adds b ("libsodium-dev", ...); "" for the floor. */
const char *pcb_backend_apt(pcb_backend b);
/* Case-sensitive lookup by name; -1 if unknown. */
int pcb_backend_find(const char *name);
/* The ops of a compiled-in, initialised backend other than OpenSSL; NULL otherwise. */
const pcb_backend_ops *pcb_backend_get(pcb_backend b);
/* Initialises every compiled-in library; one that fails is left out (its
 * reason kept for pcb_backend_absent_reason). Never fails as a whole. */
void pcb_backends_init(void);
/* Why b is not usable ("not compiled in: ..."); NULL if it is. */
const char *pcb_backend_absent_reason(pcb_backend b);

/* 1 if b runs t at key_len (0: at its default key and any other it has). */
int pcb_backend_supports(pcb_backend b, const pcb_evp_cache *cache, const pcb_transform *t,
                         size_t key_len);
/* PCB_E_UNSUPPORTED naming the backends that do have t (at key_len); returns 0. */
int pcb_backend_lacks(pcb_backend b, const pcb_evp_cache *cache, const pcb_transform *t,
                      size_t key_len, pcb_status *st);

/*
 * One whole non-AEAD message (ECB/CBC with or without PKCS5 padding, CTR)
 * over a backend's reset/update: the padding and its constant-time check
 * are here, once for every backend. out has room for pcb_max_output().
 */
/* PKCS#5/7 padding of a decrypted message of in_len bytes (blocks of b)
 * checked without branching on secret data (the one home of that check:
 * TEA's messages in cipher.c use it too); *out_len without it, or
 * PCB_E_DECRYPT with out wiped. */
int pcb_pkcs7_unpad(const pcb_transform *t, uint8_t *out, size_t in_len, size_t b,
                    size_t *out_len, pcb_status *st);
int pcb_backend_block_message(const pcb_backend_ops *ops, void *ctx, const pcb_transform *t,
                              int encrypt, const uint8_t *iv, size_t iv_len,
                              const uint8_t *in, size_t in_len, uint8_t *out,
                              size_t *out_len, pcb_status *st);

/* 2-key 3DES as 3-key (k1 k2 k1) for libraries that take 24 bytes only;
 * out has 24 bytes. Returns the key length to use (24, or key_len as is). */
size_t pcb_des3_key(const uint8_t *key, size_t key_len, uint8_t out[24]);

#endif /* PCB_CRYPTO_BACKEND_H */
