/*
 * crypto/backend_gcrypt.c — libgcrypt as a backend (see backend.h): AES
 * ECB/CBC/CTR/GCM/SIV (any GCM IV length, every SIV key size and any number
 * of associated-data components), ChaCha20-Poly1305 (12-byte nonce), DES and
 * 3DES (2-key keys run as k1 k2 k1; weak DES keys allowed, as elsewhere).
 * Empty without PCB_HAVE_GCRYPT.
 */
#define _POSIX_C_SOURCE 200809L /* open_memstream */
#include "crypto/backend.h"

#ifdef PCB_HAVE_GCRYPT
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <gcrypt.h>

typedef struct {
    gcry_cipher_hd_t h;
    const pcb_transform *t;
    int encrypt;
} gcrypt_ctx;

static int hw = -1;

static int g_init(pcb_status *st)
{
    if (!gcry_check_version("1.9.0"))
        return pcb_fail(st, PCB_E_UNSUPPORTED, "libgcrypt %s is older than 1.9 (no AES-SIV)",
                        gcry_check_version(NULL));
    if (!gcry_control(GCRYCTL_INITIALIZATION_FINISHED_P)) {
        gcry_control(GCRYCTL_DISABLE_SECMEM, 0);
        gcry_control(GCRYCTL_INITIALIZATION_FINISHED, 0);
    }
    /* Its configuration lists the hardware features in use ("hwflist:..."). */
    char *text = NULL;
    size_t n = 0;
    FILE *f = open_memstream(&text, &n);
    if (f != NULL) {
        gcry_control(GCRYCTL_PRINT_CONFIG, f);
        fclose(f);
        if (text) {
            const char *line = strstr(text, "hwflist:");
            if (line) {
                const char *end = strchr(line, '\n');
                size_t len = end ? (size_t)(end - line) : strlen(line);
                char buf[512];
                snprintf(buf, sizeof buf, "%.*s", (int)(len < 511 ? len : 511), line);
                hw = strstr(buf, "aesni") || strstr(buf, "arm-aes") || strstr(buf, "vcrypto")
                     || strstr(buf, "cpacf");
            }
        }
        free(text);
    }
    return 1;
}

static const char *g_version(void)
{
    return gcry_check_version(NULL);
}

static int g_hw_aes(void)
{
    return hw;
}

static int g_supports(const pcb_transform *t, size_t key_len)
{
    (void)key_len;
    switch (t->family) {
    case PCB_FAM_AES: case PCB_FAM_CHACHA: case PCB_FAM_DES: case PCB_FAM_DESEDE:
        return 1;
    default:
        return 0;
    }
}

static int g_check(const pcb_transform *t, size_t iv_len, size_t n_aad, int has_iv, pcb_status *st)
{
    (void)n_aad;
    if (t->mode == PCB_MODE_SIV && has_iv && iv_len == 0)
        return pcb_fail(st, PCB_E_VALUE, "libgcrypt's AES-SIV takes no empty nonce: pass iv=None "
                        "or a non-empty one");
    return 1;
}

static int fail(pcb_status *st, const char *what, gcry_error_t e)
{
    return pcb_fail(st, PCB_E_OPENSSL, "libgcrypt: %s: %s", what, gcry_strerror(e));
}

static int g_setkey(void *p, const pcb_transform *t, int encrypt, const uint8_t *key,
                    size_t key_len, pcb_status *st)
{
    gcrypt_ctx *c = p;
    uint8_t k3[24];
    gcry_error_t e;
    c->t = t, c->encrypt = encrypt;
    if (c->h == NULL) {
        int algo, mode;
        size_t aes = t->mode == PCB_MODE_SIV ? key_len / 2 : key_len;
        switch (t->family) {
        case PCB_FAM_AES:
            algo = aes == 16 ? GCRY_CIPHER_AES128 : aes == 24 ? GCRY_CIPHER_AES192 : GCRY_CIPHER_AES256;
            break;
        case PCB_FAM_CHACHA: algo = GCRY_CIPHER_CHACHA20; break;
        case PCB_FAM_DES: algo = GCRY_CIPHER_DES; break;
        default: algo = GCRY_CIPHER_3DES; break;
        }
        switch (t->mode) {
        case PCB_MODE_ECB: mode = GCRY_CIPHER_MODE_ECB; break;
        case PCB_MODE_CBC: mode = GCRY_CIPHER_MODE_CBC; break;
        case PCB_MODE_CTR: mode = GCRY_CIPHER_MODE_CTR; break;
        case PCB_MODE_GCM: mode = GCRY_CIPHER_MODE_GCM; break;
        case PCB_MODE_SIV: mode = GCRY_CIPHER_MODE_SIV; break;
        default: mode = GCRY_CIPHER_MODE_POLY1305; break;
        }
        if ((e = gcry_cipher_open(&c->h, algo, mode, 0)) != 0)
            return fail(st, t->name, e);
        if (t->family == PCB_FAM_DES || t->family == PCB_FAM_DESEDE)
            gcry_cipher_ctl(c->h, GCRYCTL_SET_ALLOW_WEAK_KEY, NULL, 1);
    }
    if (t->family == PCB_FAM_DESEDE && key_len == 16) /* two-key: k1 k2 k1 */
        key_len = pcb_des3_key(key, key_len, k3), key = k3;
    e = gcry_cipher_setkey(c->h, key, key_len);
    memset(k3, 0, sizeof k3);
    if (e && gcry_err_code(e) != GPG_ERR_WEAK_KEY)
        return fail(st, "setting the key", e);
    return 1;
}

static int g_reset(void *p, const uint8_t *iv, size_t iv_len, pcb_status *st)
{
    gcrypt_ctx *c = p;
    gcry_error_t e = gcry_cipher_reset(c->h);
    if (!e && iv)
        e = c->t->mode == PCB_MODE_CTR ? gcry_cipher_setctr(c->h, iv, iv_len)
                                       : gcry_cipher_setiv(c->h, iv, iv_len);
    return e ? fail(st, "setting the IV", e) : 1;
}

static int g_update(void *p, const uint8_t *in, uint8_t *out, size_t len, pcb_status *st)
{
    gcrypt_ctx *c = p;
    gcry_error_t e = c->encrypt ? gcry_cipher_encrypt(c->h, out, len, in, len)
                                : gcry_cipher_decrypt(c->h, out, len, in, len);
    return e ? fail(st, c->t->name, e) : 1;
}

/* Associated data and the IV, in the order each mode wants them. */
static int start(gcrypt_ctx *c, const uint8_t *iv, size_t iv_len, const pcb_bytes *aad,
                 size_t n_aad, pcb_status *st)
{
    gcry_error_t e = gcry_cipher_reset(c->h);
    const int siv = c->t->mode == PCB_MODE_SIV;
    if (!e && !siv)
        e = gcry_cipher_setiv(c->h, iv, iv_len);
    for (size_t i = 0; !e && i < n_aad; i++)
        e = gcry_cipher_authenticate(c->h, aad[i].data, aad[i].len);
    if (!e && siv && iv) /* SIV's nonce: the last S2V component */
        e = gcry_cipher_setiv(c->h, iv, iv_len);
    return e ? fail(st, "setting the IV and associated data", e) : 1;
}

static int g_seal(void *p, const uint8_t *iv, size_t iv_len, const pcb_bytes *aad, size_t n_aad,
                  const uint8_t *in, size_t len, uint8_t *out, pcb_status *st)
{
    gcrypt_ctx *c = p;
    uint8_t dummy[16];
    const int siv = c->t->mode == PCB_MODE_SIV;
    uint8_t *ct = siv ? out + 16 : out, *tag = siv ? out : out + len;
    if (!start(c, iv, iv_len, aad, n_aad, st))
        return 0;
    gcry_cipher_final(c->h);
    gcry_error_t e = gcry_cipher_encrypt(c->h, len ? ct : dummy, len, len ? in : dummy, len);
    if (!e)
        e = gcry_cipher_gettag(c->h, tag, 16);
    return e ? fail(st, c->t->name, e) : 1;
}

static int g_open(void *p, const uint8_t *iv, size_t iv_len, const pcb_bytes *aad, size_t n_aad,
                  const uint8_t *in, size_t len, uint8_t *out, pcb_status *st)
{
    gcrypt_ctx *c = p;
    uint8_t dummy[16];
    size_t m = len - 16;
    const int siv = c->t->mode == PCB_MODE_SIV;
    const uint8_t *ct = siv ? in + 16 : in, *tag = siv ? in : in + m;
    gcry_error_t e;
    if (!start(c, iv, iv_len, aad, n_aad, st))
        return -1;
    if (siv && (e = gcry_cipher_set_decryption_tag(c->h, tag, 16)) != 0)
        return fail(st, "setting the SIV tag", e), -1;
    gcry_cipher_final(c->h);
    e = gcry_cipher_decrypt(c->h, m ? out : dummy, m, m ? ct : dummy, m);
    if (!e)
        e = gcry_cipher_checktag(c->h, tag, 16);
    if (gcry_err_code(e) == GPG_ERR_CHECKSUM) {
        memset(out, 0, m);
        return 0;
    }
    return e ? fail(st, c->t->name, e), -1 : 1;
}

static void g_release(void *p)
{
    gcrypt_ctx *c = p;
    if (c->h)
        gcry_cipher_close(c->h);
    c->h = NULL;
}

static const pcb_backend_ops ops = {
    .stream_aead = 1,
    .ctx_size = sizeof(gcrypt_ctx),
    .init = g_init,
    .version = g_version,
    .hw_aes = g_hw_aes,
    .supports = g_supports,
    .check = g_check,
    .setkey = g_setkey,
    .reset = g_reset,
    .update = g_update,
    .seal = g_seal,
    .open = g_open,
    .release = g_release,
};
const pcb_backend_ops *const pcb_ops_GCRYPT = &ops;
#else
const pcb_backend_ops *const pcb_ops_GCRYPT = NULL;
#endif
