/*
 * crypto/backend_cryptopp.c — Crypto++ as a backend (see backend.h), over
 * the C++ shim backend_cryptopp_shim.cpp: AES ECB/CBC/CTR/GCM (any GCM IV
 * length), DES and 3DES (2-key keys run as k1 k2 k1), TEA and XTEA
 * ECB/CBC/CTR with their rounds (Crypto++'s Rounds parameter counts cycles,
 * as ours does; the optimized kernels of ours, not the -ref ones),
 * ChaCha20-Poly1305 and XChaCha20-Poly1305. Empty without PCB_HAVE_CRYPTOPP.
 */
#include "crypto/backend.h"

#ifdef PCB_HAVE_CRYPTOPP
#include <string.h>
#include <openssl/crypto.h>

#include "crypto/backend_cryptopp_shim.h"

typedef struct {
    pcb_cryptopp *h;
    const pcb_transform *t;
    uint32_t rounds;
} cpp_ctx;

static char version[32];

static int c_fail(pcb_status *st, const char *err)
{
    return pcb_fail(st, PCB_E_OPENSSL, "%s", err);
}

static int c_init(pcb_status *st)
{
    (void)st;
    pcb_cryptopp_probe(version, sizeof version);
    return 1;
}

static const char *c_version(void)
{
    return version;
}

static int c_supports(const pcb_transform *t, size_t key_len)
{
    (void)key_len; /* every key size of every family it has */
    switch (t->family) {
    case PCB_FAM_AES:
        return t->mode != PCB_MODE_SIV;
    case PCB_FAM_TEA: case PCB_FAM_XTEA:
        return !t->reference;
    default:
        return 1;
    }
}

static int c_check(const pcb_transform *t, size_t iv_len, size_t n_aad, int has_iv,
                   pcb_status *st)
{
    (void)t, (void)iv_len, (void)n_aad, (void)has_iv, (void)st;
    return 1;
}

static void c_set_rounds(void *p, uint32_t rounds)
{
    ((cpp_ctx *)p)->rounds = rounds;
}

static int c_setkey(void *p, const pcb_transform *t, int encrypt, const uint8_t *key,
                    size_t key_len, pcb_status *st)
{
    cpp_ctx *c = p;
    char err[200];
    uint8_t k3[24];
    c->t = t;
    if (t->family == PCB_FAM_DESEDE && key_len == 16) {
        key_len = pcb_des3_key(key, key_len, k3);
        key = k3;
    }
    int ok = pcb_cryptopp_key(&c->h, (int)t->family, (int)t->mode, encrypt, key, key_len,
                              c->rounds ? c->rounds : 32, err, sizeof err);
    OPENSSL_cleanse(k3, sizeof k3);
    return ok ? 1 : c_fail(st, err);
}

static int c_reset(void *p, const uint8_t *iv, size_t iv_len, pcb_status *st)
{
    cpp_ctx *c = p;
    char err[200];
    return pcb_cryptopp_reset(c->h, iv, iv_len, err, sizeof err) ? 1 : c_fail(st, err);
}

static int c_update(void *p, const uint8_t *in, uint8_t *out, size_t len, pcb_status *st)
{
    cpp_ctx *c = p;
    char err[200];
    return pcb_cryptopp_update(c->h, in, out, len, err, sizeof err) ? 1 : c_fail(st, err);
}

static int c_seal(void *p, const uint8_t *iv, size_t iv_len, const pcb_bytes *aad, size_t n_aad,
                  const uint8_t *in, size_t len, uint8_t *out, pcb_status *st)
{
    cpp_ctx *c = p;
    char err[200];
    return pcb_cryptopp_seal(c->h, iv, iv_len, n_aad ? aad[0].data : NULL, n_aad ? aad[0].len : 0,
                             in, len, out, err, sizeof err) ? 1 : c_fail(st, err);
}

static int c_open(void *p, const uint8_t *iv, size_t iv_len, const pcb_bytes *aad, size_t n_aad,
                  const uint8_t *in, size_t len, uint8_t *out, pcb_status *st)
{
    cpp_ctx *c = p;
    char err[200];
    int rc = pcb_cryptopp_open(c->h, iv, iv_len, n_aad ? aad[0].data : NULL,
                               n_aad ? aad[0].len : 0, in, len, out, err, sizeof err);
    return rc < 0 ? (c_fail(st, err), -1) : rc;
}

static void c_release(void *p)
{
    cpp_ctx *c = p;
    pcb_cryptopp_free(c->h);
    c->h = NULL;
}

static const pcb_backend_ops ops = {
    .stream_aead = 1,
    .ctx_size = sizeof(cpp_ctx),
    .init = c_init,
    .version = c_version,
    .hw_aes = pcb_cryptopp_hw_aes,
    .supports = c_supports,
    .check = c_check,
    .setkey = c_setkey,
    .reset = c_reset,
    .update = c_update,
    .seal = c_seal,
    .open = c_open,
    .release = c_release,
    .set_rounds = c_set_rounds,
};
const pcb_backend_ops *const pcb_ops_CRYPTOPP = &ops;
#else
const pcb_backend_ops *const pcb_ops_CRYPTOPP = NULL;
#endif
