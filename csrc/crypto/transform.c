/*
 * crypto/transform.c — the transformation table, its EVP ciphers and the
 * argument rules (see transform.h).
 */
#include "crypto/transform.h"

#include <ctype.h>
#include <string.h>

#define TAG_LEN PCB_AEAD_TAG_LEN


#define T(name, fam, mode, pad, ref) {name, PCB_FAM_##fam, PCB_MODE_##mode, pad, ref}
#define BLOCK_MODES(alg, fam, ref)                                   \
    T(alg "/ECB/NoPadding", fam, ECB, 0, ref),                       \
    T(alg "/ECB/PKCS5Padding", fam, ECB, 1, ref),                    \
    T(alg "/CBC/NoPadding", fam, CBC, 0, ref),                       \
    T(alg "/CBC/PKCS5Padding", fam, CBC, 1, ref)

static const pcb_transform transforms[] = {
    BLOCK_MODES("AES", AES, 0),
    T("AES/CTR/NoPadding", AES, CTR, 0, 0),
    T("AES/GCM/NoPadding", AES, GCM, 0, 0),
    T("AES/SIV/NoPadding", AES, SIV, 0, 0),
    T("ChaCha20-Poly1305", CHACHA, POLY1305, 0, 0),
    T("XChaCha20-Poly1305", XCHACHA, POLY1305, 0, 0),
    BLOCK_MODES("DES", DES, 0),
    BLOCK_MODES("DESede", DESEDE, 0),
    BLOCK_MODES("TEA", TEA, 0),
    T("TEA/CTR/NoPadding", TEA, CTR, 0, 0),
    BLOCK_MODES("XTEA", XTEA, 0),
    T("XTEA/CTR/NoPadding", XTEA, CTR, 0, 0),
    BLOCK_MODES("TEA-ref", TEA, 1),
    T("TEA-ref/CTR/NoPadding", TEA, CTR, 0, 1),
    BLOCK_MODES("XTEA-ref", XTEA, 1),
    T("XTEA-ref/CTR/NoPadding", XTEA, CTR, 0, 1),
};
#undef T
#undef BLOCK_MODES

#define N_TRANSFORMS (sizeof transforms / sizeof transforms[0])

const pcb_transform *pcb_transforms(size_t *count)
{
    *count = N_TRANSFORMS;
    return transforms;
}

/* Replaces the first occurrence of `from` in buf (upper case) by `to`. */
static void replace(char *buf, size_t cap, const char *from, const char *to)
{
    char *p = strstr(buf, from);
    size_t fl = strlen(from), tl = strlen(to), bl = strlen(buf);
    if (p == NULL || bl - fl + tl + 1 > cap)
        return;
    memmove(p + tl, p + fl, bl - (size_t)(p - buf) - fl + 1);
    memcpy(p, to, tl);
}

const pcb_transform *pcb_find_transform(const char *name)
{
    char want[96], have[96];
    size_t n = strlen(name);
    if (n == 0 || n >= sizeof want)
        return NULL;
    for (size_t i = 0; i <= n; i++)
        want[i] = (char)toupper((unsigned char)name[i]);
    /* Aliases: Java's PKCS7 spelling, 3DES, JCE's ChaCha20 name. */
    replace(want, sizeof want, "PKCS7PADDING", "PKCS5PADDING");
    if ((strncmp(want, "3DES/", 5) == 0 || strncmp(want, "TRIPLEDES/", 10) == 0)
        && n + 2 < sizeof want) { /* "3DES" -> "DESEDE" grows the name by 2 */
        memmove(want, strchr(want, '/'), strlen(strchr(want, '/')) + 1);
        memmove(want + 6, want, strlen(want) + 1);
        memcpy(want, "DESEDE", 6);
    }
    if (strcmp(want, "CHACHA20-POLY1305/NONE/NOPADDING") == 0)
        want[strlen("CHACHA20-POLY1305")] = '\0';
    for (size_t i = 0; i < N_TRANSFORMS; i++) {
        size_t m = strlen(transforms[i].name);
        for (size_t j = 0; j <= m; j++)
            have[j] = (char)toupper((unsigned char)transforms[i].name[j]);
        if (strcmp(want, have) == 0)
            return &transforms[i];
    }
    return NULL;
}

/* ------------------------------------------------------- EVP ciphers */

/* The EVP cipher for a transformation and key length; -1 if none. */
int pcb_evp_index(const pcb_transform *t, size_t key_len)
{
    int size = key_len == 16 ? 0 : key_len == 24 ? 1 : key_len == 32 ? 2 : -1;
    switch (t->family) {
    case PCB_FAM_AES:
        if (t->mode == PCB_MODE_SIV) /* SIV keys are two AES keys */
            size = key_len == 32 ? 0 : key_len == 48 ? 1 : key_len == 64 ? 2 : -1;
        if (size < 0)
            return -1;
        switch (t->mode) {
        case PCB_MODE_ECB: return PCB_EVP_AES128_ECB + size;
        case PCB_MODE_CBC: case PCB_MODE_SIV: return PCB_EVP_AES128_CBC + size;
        case PCB_MODE_CTR: return PCB_EVP_AES128_CTR + size;
        case PCB_MODE_GCM: return PCB_EVP_AES128_GCM + size;
        default: return -1;
        }
    case PCB_FAM_CHACHA:
        return PCB_EVP_CHACHA20_POLY1305;
    case PCB_FAM_DES:
        return t->mode == PCB_MODE_ECB ? PCB_EVP_DES_ECB : PCB_EVP_DES_CBC;
    case PCB_FAM_DESEDE:
        if (key_len == 16)
            return t->mode == PCB_MODE_ECB ? PCB_EVP_DES_EDE_ECB : PCB_EVP_DES_EDE_CBC;
        return t->mode == PCB_MODE_ECB ? PCB_EVP_DES_EDE3_ECB : PCB_EVP_DES_EDE3_CBC;
    default:
        return -1;
    }
}

int pcb_transform_available(const pcb_evp_cache *cache, const pcb_transform *t)
{
    switch (t->family) {
    case PCB_FAM_TEA: case PCB_FAM_XTEA:
        return 1;
    case PCB_FAM_AES: {
        /* every key size must be there; SIV also needs CTR */
        size_t base = t->mode == PCB_MODE_SIV ? 32 : 16, step = base / 2;
        for (size_t k = base; k <= 2 * base; k += step) {
            int i = pcb_evp_index(t, k);
            if (i < 0 || cache->cipher[i] == NULL)
                return 0;
            if (t->mode == PCB_MODE_SIV
                && cache->cipher[PCB_EVP_AES128_CTR + (i - PCB_EVP_AES128_CBC)] == NULL)
                return 0;
        }
        return 1;
    }
    case PCB_FAM_DESEDE:
        return cache->cipher[pcb_evp_index(t, 16)] != NULL && cache->cipher[pcb_evp_index(t, 24)] != NULL;
    case PCB_FAM_XCHACHA:
        return 0;
    default:
        return cache->cipher[pcb_evp_index(t, 8)] != NULL;
    }
}

/* ------------------------------------------------------------ validation */

static size_t cipher_block(const pcb_transform *t)
{
    switch (t->family) {
    case PCB_FAM_AES: return 16;
    case PCB_FAM_CHACHA: case PCB_FAM_XCHACHA: return 1;
    default: return 8;
    }
}

size_t pcb_block_size(const pcb_transform *t)
{
    return (t->mode == PCB_MODE_ECB || t->mode == PCB_MODE_CBC) ? cipher_block(t) : 1;
}

size_t pcb_default_key_len(const pcb_transform *t)
{
    switch (t->family) {
    case PCB_FAM_AES: return t->mode == PCB_MODE_SIV ? 32 : 16;
    case PCB_FAM_DES: return 8;
    case PCB_FAM_DESEDE: return 24;
    case PCB_FAM_CHACHA: case PCB_FAM_XCHACHA: return 32;
    default: return 16;
    }
}

int pcb_check_key_len(const pcb_transform *t, size_t key_len, pcb_status *st)
{
    const char *allowed;
    int ok;
    switch (t->family) {
    case PCB_FAM_AES:
        if (t->mode == PCB_MODE_SIV) {
            ok = key_len == 32 || key_len == 48 || key_len == 64;
            allowed = "32, 48 or 64 bytes (AES-SIV-256/384/512)";
        } else {
            ok = key_len == 16 || key_len == 24 || key_len == 32;
            allowed = "16, 24 or 32 bytes (AES-128/192/256)";
        }
        break;
    case PCB_FAM_DES: ok = key_len == 8; allowed = "8 bytes"; break;
    case PCB_FAM_DESEDE:
        ok = key_len == 16 || key_len == 24;
        allowed = "16 bytes (two-key) or 24 bytes (three-key)";
        break;
    case PCB_FAM_CHACHA: case PCB_FAM_XCHACHA: ok = key_len == 32; allowed = "32 bytes"; break;
    default: ok = key_len == 16; allowed = "16 bytes"; break;
    }
    if (!ok)
        return pcb_fail(st, PCB_E_VALUE, "%s takes a key of %s, got %zu bytes",
                        t->name, allowed, key_len);
    return 1;
}

static size_t required_iv_len(const pcb_transform *t)
{
    switch (t->mode) {
    case PCB_MODE_CBC: case PCB_MODE_CTR: return cipher_block(t);
    case PCB_MODE_POLY1305: return t->family == PCB_FAM_XCHACHA ? 24 : 12;
    default: return 0;
    }
}

int pcb_check_iv_len(const pcb_transform *t, size_t iv_len, pcb_status *st)
{
    const int given = iv_len != SIZE_MAX;
    switch (t->mode) {
    case PCB_MODE_ECB:
        if (given)
            return pcb_fail(st, PCB_E_VALUE, "%s takes no IV (ECB has none); pass iv=None", t->name);
        return 1;
    case PCB_MODE_SIV:
        /* optional nonce (one more associated-data component), up to 128 bytes */
        if (given && iv_len > 128)
            return pcb_fail(st, PCB_E_VALUE, "%s takes a nonce (iv) of at most 128 bytes, got %zu bytes",
                            t->name, iv_len);
        return 1;
    case PCB_MODE_GCM:
        if (!given)
            return pcb_fail(st, PCB_E_VALUE, "%s needs an IV of 1 to 128 bytes (12 is standard)", t->name);
        if (iv_len < 1 || iv_len > 128)
            return pcb_fail(st, PCB_E_VALUE,
                            "%s takes an IV of 1 to 128 bytes (12 is standard), got %zu bytes",
                            t->name, iv_len);
        return 1;
    default: {
        size_t want = required_iv_len(t);
        if (!given)
            return pcb_fail(st, PCB_E_VALUE, "%s needs an IV of %zu bytes", t->name, want);
        if (iv_len != want)
            return pcb_fail(st, PCB_E_VALUE, "%s takes an IV of %zu bytes, got %zu bytes",
                            t->name, want, iv_len);
        return 1;
    }
    }
}

int pcb_is_aead(const pcb_transform *t)
{
    return t->mode == PCB_MODE_GCM || t->mode == PCB_MODE_POLY1305 || t->mode == PCB_MODE_SIV;
}

int pcb_has_rounds(const pcb_transform *t)
{
    return t->family == PCB_FAM_TEA || t->family == PCB_FAM_XTEA;
}

size_t pcb_max_output(const pcb_transform *t, int encrypt, size_t in_len)
{
    if (pcb_is_aead(t))
        return encrypt ? in_len + TAG_LEN : in_len;
    /* EVP wants room for one extra block on both directions. */
    return in_len + cipher_block(t);
}

int pcb_check_length(const pcb_transform *t, int encrypt, size_t in_len, pcb_status *st)
{
    size_t b = cipher_block(t);
    if (pcb_is_aead(t)) {
        if (!encrypt && in_len < TAG_LEN)
            return pcb_fail(st, PCB_E_DECRYPT,
                            "%s ciphertext must hold at least the 16-byte %s, got %zu bytes",
                            t->name, t->mode == PCB_MODE_SIV ? "synthetic IV" : "tag", in_len);
        return 1;
    }
    if (t->mode != PCB_MODE_ECB && t->mode != PCB_MODE_CBC)
        return 1;
    if (encrypt) {
        if (!t->padding && in_len % b != 0)
            return pcb_fail(st, PCB_E_VALUE,
                            "%s needs data that is a whole number of %zu-byte blocks, got %zu bytes "
                            "(use PKCS5Padding for other lengths)", t->name, b, in_len);
        return 1;
    }
    if (in_len % b != 0 || (t->padding && in_len == 0))
        return pcb_fail(st, PCB_E_DECRYPT,
                        "%s ciphertext must be a %swhole number of %zu-byte blocks, got %zu bytes",
                        t->name, t->padding ? "non-zero " : "", b, in_len);
    return 1;
}

