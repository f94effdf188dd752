/*
 * crypto/backend_floor.c — pycipherbench's own kernels (crypto/floor.h) as
 * the backend "floor": AES-128/256-GCM with a 12-byte IV and at most one
 * associated-data component, and AES-SIV-CMAC with 32- or 64-byte keys and
 * any number of components (the IV, when given, is the last). Whole
 * messages only; usable only where the CPU has AES-NI and PCLMULQDQ (init
 * fails elsewhere, naming what is missing).
 */
#include "crypto/backend.h"

#include <string.h>

#include "crypto/floor.h"

typedef struct {
    const pcb_transform *t;
    pcb_floor_gcm *gcm;
    pcb_floor_siv *siv;
} floor_ctx;

static int f_init(pcb_status *st)
{
    const char *missing = pcb_floor_missing();
    if (missing)
        return pcb_fail(st, PCB_E_UNSUPPORTED, "this CPU lacks %s, which pycipherbench's floor "
                        "kernels need", missing);
    return 1;
}

/* Names the widest GCM loop a key would run now (CPU, PCB_FLOOR_VAES). */
static const char *f_version(void)
{
    switch (pcb_floor_gcm_loop_bits()) {
    case 512: return "AES-NI+PCLMULQDQ, VAES-512";
    case 256: return "AES-NI+PCLMULQDQ, VAES-256";
    default: return "AES-NI+PCLMULQDQ";
    }
}

static int f_hw_aes(void)
{
    return 1;
}

static int f_supports(const pcb_transform *t, size_t key_len)
{
    if (t->family != PCB_FAM_AES)
        return 0;
    if (t->mode == PCB_MODE_GCM)
        return key_len == 0 || key_len == 16 || key_len == 32;
    if (t->mode == PCB_MODE_SIV)
        return key_len == 0 || key_len == 32 || key_len == 64;
    return 0;
}

static int f_check(const pcb_transform *t, size_t iv_len, size_t n_aad, int has_iv, pcb_status *st)
{
    if (t->mode != PCB_MODE_GCM)
        return 1;
    if (has_iv && iv_len != PCB_FLOOR_GCM_IV)
        return pcb_fail(st, PCB_E_VALUE, "the floor's AES-GCM takes a 12-byte IV only, got %zu "
                        "bytes (openssl, nettle and gcrypt take other lengths)", iv_len);
    if (n_aad != SIZE_MAX && n_aad > 1)
        return pcb_fail(st, PCB_E_VALUE, "the floor's AES-GCM takes at most one associated-data "
                        "component, got %zu", n_aad);
    return 1;
}

static void f_release(void *p)
{
    floor_ctx *c = p;
    pcb_floor_gcm_free(c->gcm);
    pcb_floor_siv_free(c->siv);
    c->gcm = NULL, c->siv = NULL;
}

static int f_setkey(void *p, const pcb_transform *t, int encrypt, const uint8_t *key,
                    size_t key_len, pcb_status *st)
{
    floor_ctx *c = p;
    (void)encrypt;
    f_release(c);
    c->t = t;
    if (t->mode == PCB_MODE_GCM)
        c->gcm = pcb_floor_gcm_new(key, key_len);
    else
        c->siv = pcb_floor_siv_new(key, key_len);
    if (c->gcm == NULL && c->siv == NULL)
        return pcb_oom(st);
    return 1;
}

static int f_reset(void *p, const uint8_t *iv, size_t iv_len, pcb_status *st)
{
    (void)iv, (void)iv_len;
    return pcb_fail(st, PCB_E_VALUE, "%s on the floor has no stream scope (its kernels take whole "
                    "messages); use scope='message'", ((floor_ctx *)p)->t->name);
}

static int f_update(void *p, const uint8_t *in, uint8_t *out, size_t len, pcb_status *st)
{
    (void)in, (void)out, (void)len;
    return f_reset(p, NULL, 0, st);
}

/* S2V over the components: aad[], then the IV when there is one. */
static void s2v_parts(const floor_ctx *c, const uint8_t *iv, size_t iv_len, const pcb_bytes *aad,
                      size_t n_aad, uint8_t d[16])
{
    pcb_floor_s2v_start(c->siv, d);
    for (size_t i = 0; i < n_aad; i++)
        pcb_floor_s2v_add(c->siv, d, aad[i].data, aad[i].len);
    if (iv)
        pcb_floor_s2v_add(c->siv, d, iv, iv_len);
}

static int f_seal(void *p, const uint8_t *iv, size_t iv_len, const pcb_bytes *aad, size_t n_aad,
                  const uint8_t *in, size_t len, uint8_t *out, pcb_status *st)
{
    floor_ctx *c = p;
    if (c->gcm) {
        if (!f_check(c->t, iv_len, n_aad, 1, st))
            return 0;
        pcb_floor_gcm_seal(c->gcm, iv, n_aad ? aad[0].data : NULL, n_aad ? aad[0].len : 0, in,
                           len, out);
        return 1;
    }
    uint8_t d[16];
    s2v_parts(c, iv, iv_len, aad, n_aad, d);
    pcb_floor_siv_seal(c->siv, d, in, len, out);
    return 1;
}

static int f_open(void *p, const uint8_t *iv, size_t iv_len, const pcb_bytes *aad, size_t n_aad,
                  const uint8_t *in, size_t len, uint8_t *out, pcb_status *st)
{
    floor_ctx *c = p;
    if (c->gcm) {
        if (!f_check(c->t, iv_len, n_aad, 1, st))
            return -1;
        return pcb_floor_gcm_open(c->gcm, iv, n_aad ? aad[0].data : NULL, n_aad ? aad[0].len : 0,
                                  in, len - PCB_FLOOR_TAG, in + len - PCB_FLOOR_TAG, out);
    }
    uint8_t d[16];
    s2v_parts(c, iv, iv_len, aad, n_aad, d);
    return pcb_floor_siv_open(c->siv, d, in, len, out);
}

static const pcb_backend_ops ops = {
    .stream_aead = 0,
    .ctx_size = sizeof(floor_ctx),
    .init = f_init,
    .version = f_version,
    .hw_aes = f_hw_aes,
    .supports = f_supports,
    .check = f_check,
    .setkey = f_setkey,
    .reset = f_reset,
    .update = f_update,
    .seal = f_seal,
    .open = f_open,
    .release = f_release,
};
const pcb_backend_ops *const pcb_ops_FLOOR = &ops;
