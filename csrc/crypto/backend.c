/*
 * crypto/backend.c — the backend table, lookups, the "who has it" error and
 * the padded-message sequence shared by every library (see backend.h).
 */
#include "crypto/backend.h"

#include <stdio.h>
#include <string.h>
#include <openssl/crypto.h>

/* backends.def's columns: name, label, build, pkg-config, libs, apt, arm64, probe */
#define PCB_BACKEND(ID, name, label, build, pc, libs, apt, arm64, probe) name,
static const char *const names[PCB_BK_COUNT] = {
#include "crypto/backends.def"
};
#undef PCB_BACKEND
#define PCB_BACKEND(ID, name, label, build, pc, libs, apt, arm64, probe) label,
static const char *const labels[PCB_BK_COUNT] = {
#include "crypto/backends.def"
};
#undef PCB_BACKEND
#define PCB_BACKEND(ID, name, label, build, pc, libs, apt, arm64, probe) apt,
static const char *const apt[PCB_BK_COUNT] = {
#include "crypto/backends.def"
};
#undef PCB_BACKEND
/* OpenSSL's row has no ops here (crypto/cipher runs it): its pcb_ops_OPENSSL is NULL. */
const pcb_backend_ops *const pcb_ops_OPENSSL = NULL;
#define PCB_BACKEND(ID, ...) &pcb_ops_##ID,
static const pcb_backend_ops *const *const compiled_ops[PCB_BK_COUNT] = {
#include "crypto/backends.def"
};
#undef PCB_BACKEND

static const pcb_backend_ops *ready[PCB_BK_COUNT]; /* set once by pcb_backends_init */
static char absent[PCB_BK_COUNT][200];

const char *pcb_backend_name(pcb_backend b)
{
    return (unsigned)b < PCB_BK_COUNT ? names[b] : "?";
}

const char *pcb_backend_label(pcb_backend b)
{
    return (unsigned)b < PCB_BK_COUNT ? labels[b] : "?";
}

const char *pcb_backend_apt(pcb_backend b)
{
    return (unsigned)b < PCB_BK_COUNT ? apt[b] : "";
}

int pcb_backend_find(const char *name)
{
    for (int i = 0; i < PCB_BK_COUNT; i++)
        if (strcmp(name, names[i]) == 0)
            return i;
    return -1;
}

void pcb_backends_init(void)
{
    for (int b = 0; b < PCB_BK_COUNT; b++) {
        if (b == PCB_BK_OPENSSL)
            continue;
        const pcb_backend_ops *ops = *compiled_ops[b];
        pcb_status st = {0};
        if (ops == NULL) {
            snprintf(absent[b], sizeof absent[b],
                     "not compiled in (install %s and pkg-config, then rebuild)", apt[b]);
        } else if (ops->init && !ops->init(&st)) {
            snprintf(absent[b], sizeof absent[b], "%s%.170s",
                     b == PCB_BK_FLOOR ? "" : "failed to initialise: ", st.msg);
        } else {
            ready[b] = ops;
        }
    }
}

const pcb_backend_ops *pcb_backend_get(pcb_backend b)
{
    return (unsigned)b < PCB_BK_COUNT ? ready[b] : NULL;
}

const char *pcb_backend_absent_reason(pcb_backend b)
{
    if (b == PCB_BK_OPENSSL || ((unsigned)b < PCB_BK_COUNT && ready[b]))
        return NULL;
    return (unsigned)b < PCB_BK_COUNT ? absent[b] : "unknown backend";
}

int pcb_backend_supports(pcb_backend b, const pcb_evp_cache *cache, const pcb_transform *t,
                         size_t key_len)
{
    if (b == PCB_BK_OPENSSL) {
        if (!pcb_transform_available(cache, t))
            return 0;
        if (key_len == 0 || t->family == PCB_FAM_TEA || t->family == PCB_FAM_XTEA)
            return 1;
        int i = pcb_evp_index(t, key_len);
        return i >= 0 && cache->cipher[i] != NULL;
    }
    const pcb_backend_ops *ops = pcb_backend_get(b);
    return ops != NULL && ops->supports(t, key_len);
}

int pcb_backend_lacks(pcb_backend b, const pcb_evp_cache *cache, const pcb_transform *t,
                      size_t key_len, pcb_status *st)
{
    char have[160] = "";
    size_t n = 0;
    if ((unsigned)b >= PCB_BK_COUNT) /* (also keeps aarch64 GCC 12's -Warray-bounds quiet) */
        return pcb_fail(st, PCB_E_UNSUPPORTED, "unknown backend %d", (int)b);
    for (int i = 0; i < PCB_BK_COUNT; i++)
        if (pcb_backend_supports((pcb_backend)i, cache, t, key_len) && n + 12 < sizeof have)
            n += (size_t)snprintf(have + n, sizeof have - n, "%s%s", n ? ", " : "", names[i]);
    char size[48] = "";
    if (key_len)
        snprintf(size, sizeof size, " with a %zu-byte key", key_len);
    if (b != PCB_BK_OPENSSL && pcb_backend_get(b) == NULL)
        return pcb_fail(st, PCB_E_UNSUPPORTED, "backend '%s' is unavailable: %s",
                        pcb_backend_name(b), pcb_backend_absent_reason(b)); /* no -Warray-bounds */
    return pcb_fail(st, PCB_E_UNSUPPORTED, "backend '%s' has no %s%s; %s%s", names[b], t->name,
                    size, n ? "backends that have it: " : "no backend of this build has it",
                    have);
}

size_t pcb_des3_key(const uint8_t *key, size_t key_len, uint8_t out[24])
{
    if (key_len != 16)
        return key_len;
    memcpy(out, key, 16);
    memcpy(out + 16, key, 8);
    return 24;
}

int pcb_backend_block_message(const pcb_backend_ops *ops, void *ctx, const pcb_transform *t,
                              int encrypt, const uint8_t *iv, size_t iv_len,
                              const uint8_t *in, size_t in_len, uint8_t *out,
                              size_t *out_len, pcb_status *st)
{
    const size_t b = t->family == PCB_FAM_AES ? 16 : 8;
    uint8_t last[16];
    if (!ops->reset(ctx, iv, iv_len, st))
        return 0;
    if (t->mode == PCB_MODE_CTR || !t->padding) {
        if (in_len && !ops->update(ctx, in, out, in_len, st))
            return 0;
        *out_len = in_len;
        return 1;
    }
    if (encrypt) {
        size_t full = in_len / b * b, rem = in_len - full;
        if (full && !ops->update(ctx, in, out, full, st))
            return 0;
        memcpy(last, in + full, rem);
        memset(last + rem, (int)(b - rem), b - rem);
        if (!ops->update(ctx, last, out + full, b, st))
            return 0;
        *out_len = full + b;
        return 1;
    }
    if (!ops->update(ctx, in, out, in_len, st))
        return 0;
    return pcb_pkcs7_unpad(t, out, in_len, b, out_len, st);
}

int pcb_pkcs7_unpad(const pcb_transform *t, uint8_t *out, size_t in_len, size_t b,
                    size_t *out_len, pcb_status *st)
{
    /* Check every pad byte without branching on secret data. */
    uint8_t pad = out[in_len - 1];
    unsigned bad = (unsigned)(pad == 0) | (unsigned)(pad > b);
    for (size_t i = 1; i <= b; i++) {
        unsigned in_pad = i <= pad;
        bad |= in_pad & (unsigned)(out[in_len - i] != pad);
    }
    if (bad) {
        OPENSSL_cleanse(out, in_len);
        return pcb_fail(st, PCB_E_DECRYPT, "%s: bad padding (wrong key, IV or corrupted data)",
                        t->name);
    }
    *out_len = in_len - pad;
    return 1;
}
