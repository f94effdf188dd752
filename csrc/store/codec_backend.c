/*
 * store/codec_backend.c — a store's per-entry crypto on another library
 * (see codec_backend.h). The floor (crypto/floor.h) is called directly, not
 * through its backend ops: its keys are set up once per primary key, with
 * the S2V state after the store name folded in, so a name or value costs one
 * kernel call; "auto" (the default) picks it where it serves the options.
 */
#include "store/codec_backend.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <openssl/crypto.h>

#include "crypto/backend.h"
#include "crypto/cipher.h"
#include "crypto/floor.h"
#include "format/b64.h"

struct pcb_codec_bk {
    pcb_cipher venc, vdec, senc, sdec;
    int values, names;            /* which of them run on the backend */
    int vkeyed, skeyed;           /* the contexts hold vkey / skey */
    uint8_t vkey[VALUE_KEY_LEN], skey[SIV_KEY_LEN];
    int floor;                    /* the floor: fgcm / fsiv instead of the pcb_ciphers */
    pcb_floor_gcm *fgcm;          /* under vkey */
    pcb_floor_siv *fsiv;          /* under skey */
    uint8_t fs_d[16];             /* S2V state after the store name, under skey */
};

static const pcb_transform *value_t(pcb_value_encryption v)
{
    return pcb_find_transform(v == PCB_VALENC_CHACHA ? "ChaCha20-Poly1305" : "AES/GCM/NoPadding");
}

static const pcb_transform *siv_t(void) { return pcb_find_transform("AES/SIV/NoPadding"); }

/* b runs the store's AES-SIV: a 64-byte key, one component, no nonce. */
static int has_store_siv(pcb_backend b, const pcb_evp_cache *cache)
{
    const pcb_backend_ops *ops = pcb_backend_get(b);
    pcb_status ignored = {0};
    return ops && pcb_backend_supports(b, cache, siv_t(), SIV_KEY_LEN)
           && ops->check(siv_t(), 0, 1, 0, &ignored);
}

/* The backends (other than OpenSSL) that have what has() asks, listed. */
static void list_backends(const pcb_evp_cache *cache, const pcb_transform *t, char *out,
                          size_t cap)
{
    size_t n = (size_t)snprintf(out, cap, "'openssl'");
    for (int i = 1; i < PCB_BK_COUNT && n < cap; i++)
        if (t ? pcb_backend_supports((pcb_backend)i, cache, t, 32)
              : has_store_siv((pcb_backend)i, cache))
            n += (size_t)snprintf(out + n, cap - n, ", '%s'", pcb_backend_name((pcb_backend)i));
}

static int uses_values(const pcb_store_options *o)
{
    return o->encrypted && o->layout == PCB_LAYOUT_ENTRIES && o->value_enc != PCB_VALENC_NONE;
}

static int uses_names(const pcb_store_options *o)
{
    return o->encrypted && o->layout == PCB_LAYOUT_ENTRIES && o->key_enc == PCB_KEYENC_SIV;
}

/* The library of the per-entry crypto: crypto_backend, with "auto" resolved:
 * the floor where this CPU runs it and it serves every per-entry cipher of
 * these options (lean: encrypted entries, not faithful, AES-GCM values or
 * none), else OpenSSL. */
static pcb_backend effective(const pcb_store_options *o)
{
    if (o->crypto_backend != PCB_STORE_BK_AUTO)
        return (pcb_backend)o->crypto_backend;
    if (!o->encrypted || o->layout != PCB_LAYOUT_ENTRIES || o->faithful
        || pcb_backend_get(PCB_BK_FLOOR) == NULL || o->value_enc == PCB_VALENC_CHACHA
        || (!uses_values(o) && !uses_names(o)))
        return PCB_BK_OPENSSL;
    return PCB_BK_FLOOR;
}

int pcb_codec_bk_check(const pcb_store_options *o, const pcb_evp_cache *cache, pcb_status *st)
{
    pcb_backend b = effective(o);
    char have[160];
    if (b == PCB_BK_OPENSSL)
        return 1;
    if (b <= PCB_BK_OPENSSL || b >= PCB_BK_COUNT)
        return pcb_fail(st, PCB_E_VALUE, "unknown crypto_backend");
    const char *name = pcb_backend_name(b);
    if (!o->encrypted || o->layout != PCB_LAYOUT_ENTRIES)
        return pcb_fail(st, PCB_E_VALUE, "crypto_backend='%s' applies to the per-entry crypto "
                        "of encrypted stores with layout='entries'; use crypto_backend='openssl' "
                        "here", name);
    if (o->faithful)
        return pcb_fail(st, PCB_E_VALUE, "crypto_backend='%s' with faithful=True: faithful mode "
                        "repeats ESP's per-call set-up on OpenSSL only; use "
                        "crypto_backend='openssl' or faithful=False", name);
    if (pcb_backend_get(b) == NULL)
        return pcb_fail(st, PCB_E_VALUE, "crypto_backend='%s' is unavailable: %s", name,
                        pcb_backend_absent_reason(b));
    if (uses_values(o)) {
        const pcb_transform *t = value_t(o->value_enc);
        if (!pcb_backend_supports(b, cache, t, VALUE_KEY_LEN)) {
            list_backends(cache, t, have, sizeof have);
            return pcb_fail(st, PCB_E_VALUE, "crypto_backend='%s' has no %s with a 32-byte key "
                            "(value_encryption=%s); backends that have it: %s", name, t->name,
                            o->value_enc == PCB_VALENC_CHACHA ? "'chacha20-poly1305'" : "'gcm'",
                            have);
        }
    } else if (uses_names(o) && !has_store_siv(b, cache)) {
        /* Nothing of these options would run on the backend. */
        list_backends(cache, NULL, have, sizeof have);
        return pcb_fail(st, PCB_E_VALUE, "crypto_backend='%s' has no AES-SIV in the store's shape "
                        "(64-byte key, one associated-data component, no nonce) and "
                        "value_encryption='none' leaves it nothing else to run; backends that "
                        "have it: %s", name, have);
    } else if (!uses_names(o)) {
        return pcb_fail(st, PCB_E_VALUE, "crypto_backend='%s': this store encrypts nothing per "
                        "entry; use crypto_backend='openssl'", name);
    }
    return 1;
}

int pcb_store_check_backend(const pcb_store_options *opt, const pcb_evp_cache *cache,
                            pcb_status *st)
{
    return pcb_codec_bk_check(opt, cache, st);
}

/* The store's backend state, set up at first use (NULL with st set). */
static struct pcb_codec_bk *bk_of(pcb_store *s, pcb_status *st)
{
    if (s->bk == NULL) {
        s->bk = calloc(1, sizeof *s->bk);
        if (s->bk == NULL)
            return pcb_oom(st), NULL;
        s->bk->values = uses_values(&s->opt);
        s->bk->names = uses_names(&s->opt) && has_store_siv(effective(&s->opt), s->cache);
        s->bk->floor = effective(&s->opt) == PCB_BK_FLOOR;
    }
    return s->bk;
}

int pcb_codec_bk_values(const pcb_store *s)
{
    return effective(&s->opt) != PCB_BK_OPENSSL && uses_values(&s->opt);
}

int pcb_codec_bk_names(const pcb_store *s)
{
    return effective(&s->opt) != PCB_BK_OPENSSL && uses_names(&s->opt)
           && has_store_siv(effective(&s->opt), s->cache);
}

static const uint8_t zero_nonce[NONCE_LEN];

/* 1 if the n-byte keys a and b (n a multiple of 8) are equal, in constant
 * time: a word-wise XOR-OR, a few instructions where CRYPTO_memcmp's byte
 * loop cost ~700 instructions per get (the contexts are checked against the
 * store's primary keys on every call, since rotate changes them). */
static int same_key(const uint8_t *a, const uint8_t *b, size_t n)
{
    uint64_t diff = 0;
    for (size_t i = 0; i < n; i += 8) {
        uint64_t x, y;
        memcpy(&x, a + i, 8);
        memcpy(&y, b + i, 8);
        diff |= x ^ y;
    }
    return diff == 0;
}

/* c keyed with key for t (closing what it held). */
static int key_cipher(pcb_store *s, pcb_cipher *c, const pcb_transform *t, int encrypt,
                      const uint8_t *key, size_t key_len, pcb_status *st)
{
    pcb_cipher_close(c);
    memset(c, 0, sizeof *c);
    const int siv = t->mode == PCB_MODE_SIV;
    return pcb_cipher_open_backend(c, effective(&s->opt), s->cache, t, encrypt,
                                   key, key_len, siv ? NULL : zero_nonce, siv ? 0 : NONCE_LEN, 0,
                                   PCB_TEA_IMPL_REF, st);
}

/* The value contexts hold the primary value key (rotate changes it). */
static struct pcb_codec_bk *values_ready(pcb_store *s, pcb_status *st)
{
    struct pcb_codec_bk *k = bk_of(s, st);
    if (k == NULL)
        return NULL;
    if (k->vkeyed && same_key(k->vkey, s->ek->value_key, VALUE_KEY_LEN))
        return k;
    const pcb_transform *t = value_t(s->opt.value_enc);
    k->vkeyed = 0;
    if (k->floor) {
        pcb_floor_gcm_free(k->fgcm);
        if ((k->fgcm = pcb_floor_gcm_new(s->ek->value_key, VALUE_KEY_LEN)) == NULL)
            return pcb_oom(st), NULL;
    } else if (!key_cipher(s, &k->venc, t, 1, s->ek->value_key, VALUE_KEY_LEN, st)
        || !key_cipher(s, &k->vdec, t, 0, s->ek->value_key, VALUE_KEY_LEN, st))
        return NULL;
    memcpy(k->vkey, s->ek->value_key, VALUE_KEY_LEN);
    k->vkeyed = 1;
    return k;
}

static struct pcb_codec_bk *names_ready(pcb_store *s, pcb_status *st)
{
    struct pcb_codec_bk *k = bk_of(s, st);
    if (k == NULL)
        return NULL;
    if (k->skeyed && same_key(k->skey, s->ek->siv_key, SIV_KEY_LEN))
        return k;
    k->skeyed = 0;
    if (k->floor) {
        pcb_floor_siv_free(k->fsiv);
        if ((k->fsiv = pcb_floor_siv_new(s->ek->siv_key, SIV_KEY_LEN)) == NULL)
            return pcb_oom(st), NULL;
        pcb_floor_s2v_start(k->fsiv, k->fs_d);
        pcb_floor_s2v_add(k->fsiv, k->fs_d, (const uint8_t *)s->store_name, s->store_name_len);
    } else if (!key_cipher(s, &k->senc, siv_t(), 1, s->ek->siv_key, SIV_KEY_LEN, st)
        || !key_cipher(s, &k->sdec, siv_t(), 0, s->ek->siv_key, SIV_KEY_LEN, st))
        return NULL;
    memcpy(k->skey, s->ek->siv_key, SIV_KEY_LEN);
    k->skeyed = 1;
    return k;
}

int pcb_codec_bk_seal(pcb_store *s, const uint8_t nonce[NONCE_LEN], const uint8_t *aad,
                      size_t aad_len, const uint8_t *in, size_t len, uint8_t *out,
                      pcb_status *st)
{
    struct pcb_codec_bk *k = values_ready(s, st);
    const pcb_bytes ad = {aad, aad_len};
    if (k == NULL)
        return 0;
    memcpy(out, nonce, NONCE_LEN);
    if (k->floor) {
        pcb_floor_gcm_seal(k->fgcm, nonce, aad, aad_len, in, len, out + NONCE_LEN);
        return 1;
    }
    return k->venc.bk->seal(k->venc.bctx, nonce, NONCE_LEN, &ad, 1, in, len, out + NONCE_LEN, st);
}

/* One message opened by c, or by a temporary context for another key. */
static int open_with(pcb_store *s, pcb_cipher *c, const pcb_transform *t, const uint8_t *key,
                     size_t key_len, const uint8_t *iv, size_t iv_len, const pcb_bytes *ad,
                     const uint8_t *in, size_t len, uint8_t *out, pcb_status *st)
{
    pcb_cipher tmp;
    memset(&tmp, 0, sizeof tmp);
    if (key != NULL) {
        if (!key_cipher(s, &tmp, t, 0, key, key_len, st)) {
            pcb_cipher_close(&tmp);
            return -1;
        }
        c = &tmp;
    }
    int rc = c->bk->open(c->bctx, iv, iv_len, ad, 1, in, len, out, st);
    if (key != NULL)
        pcb_cipher_close(&tmp);
    return rc;
}

int pcb_codec_bk_unseal(pcb_store *s, const uint8_t *key, const uint8_t *aad, size_t aad_len,
                        const uint8_t *in, size_t len, uint8_t *out, pcb_status *st)
{
    struct pcb_codec_bk *k = values_ready(s, st);
    const pcb_bytes ad = {aad, aad_len};
    if (k == NULL)
        return -1;
    if (k->floor) {
        const size_t m = len - NONCE_LEN - TAG_LEN;
        pcb_floor_gcm *g = key ? pcb_floor_gcm_new(key, VALUE_KEY_LEN) : k->fgcm;
        if (g == NULL)
            return pcb_oom(st) - 1;
        int rc = pcb_floor_gcm_open(g, in, aad, aad_len, in + NONCE_LEN, m, in + NONCE_LEN + m, out);
        if (key)
            pcb_floor_gcm_free(g);
        return rc;
    }
    return open_with(s, &k->vdec, value_t(s->opt.value_enc), key, VALUE_KEY_LEN, in, NONCE_LEN,
                     &ad, in + NONCE_LEN, len - NONCE_LEN, out, st);
}

int pcb_codec_bk_siv_seal(pcb_store *s, const uint8_t *in, size_t len, uint8_t *out,
                          pcb_status *st)
{
    struct pcb_codec_bk *k = names_ready(s, st);
    const pcb_bytes ad = {(const uint8_t *)s->store_name, s->store_name_len};
    if (k == NULL)
        return 0;
    if (k->floor) {
        pcb_floor_siv_seal(k->fsiv, k->fs_d, in, len, out);
        return 1;
    }
    return k->senc.bk->seal(k->senc.bctx, NULL, 0, &ad, 1, in, len, out, st);
}

int pcb_codec_bk_siv_open(pcb_store *s, const uint8_t *key, const uint8_t *in, size_t len,
                          uint8_t *out, pcb_status *st)
{
    struct pcb_codec_bk *k = names_ready(s, st);
    const pcb_bytes ad = {(const uint8_t *)s->store_name, s->store_name_len};
    if (k == NULL)
        return -1;
    if (k->floor && key == NULL)
        return pcb_floor_siv_open(k->fsiv, k->fs_d, in, len, out);
    if (k->floor) { /* another key of the keyset: its own state */
        pcb_floor_siv *o = pcb_floor_siv_new(key, SIV_KEY_LEN);
        uint8_t d[16];
        if (o == NULL)
            return pcb_oom(st) - 1;
        pcb_floor_s2v_start(o, d);
        pcb_floor_s2v_add(o, d, (const uint8_t *)s->store_name, s->store_name_len);
        int rc = pcb_floor_siv_open(o, d, in, len, out);
        pcb_floor_siv_free(o);
        return rc;
    }
    return open_with(s, &k->sdec, siv_t(), key, SIV_KEY_LEN, NULL, 0, &ad, in, len, out, st);
}

void pcb_codec_bk_free(pcb_store *s)
{
    if (s->bk == NULL)
        return;
    pcb_cipher_close(&s->bk->venc);
    pcb_cipher_close(&s->bk->vdec);
    pcb_cipher_close(&s->bk->senc);
    pcb_cipher_close(&s->bk->sdec);
    pcb_floor_gcm_free(s->bk->fgcm);
    pcb_floor_siv_free(s->bk->fsiv);
    OPENSSL_cleanse(s->bk, sizeof *s->bk);
    free(s->bk);
    s->bk = NULL;
}

void pcb_store_crypto_libraries(const pcb_store *s, const char **names, const char **values)
{
    const pcb_store_options *o = &s->opt;
    const char *whole = o->encrypted && o->layout != PCB_LAYOUT_ENTRIES ? "openssl" : "none";
    const char *bk = pcb_backend_name(effective(o));
    *names = !uses_names(o) ? whole : pcb_codec_bk_names(s) ? bk : "openssl";
    *values = !uses_values(o) ? whole : pcb_codec_bk_values(s) ? bk : "openssl";
}

/* ------------------------------------------------------ the stages' floor */

#define FLOOR_SLICES 5

/* Least mean ns per call over the slices of one bare loop (which: 0 SIV
 * seal, 1 GCM seal, 2 GCM open). */
static uint64_t floor_loop(int which, const pcb_floor_siv *fs, const uint8_t d[16],
                           const pcb_floor_gcm *g, const uint8_t *aad, size_t aad_len,
                           const uint8_t *in, size_t len, uint8_t *out, uint64_t n)
{
    static const uint8_t iv[NONCE_LEN] = {1};
    const uint64_t per = n / FLOOR_SLICES ? n / FLOOR_SLICES : 1;
    uint64_t best = UINT64_MAX;
    for (int k = 0; k < FLOOR_SLICES; k++) {
        uint64_t t0 = pcb_clock_ns();
        for (uint64_t i = 0; i < per; i++) {
            if (which == 0)
                pcb_floor_siv_seal(fs, d, in, len, out);
            else if (which == 1)
                pcb_floor_gcm_seal(g, iv, aad, aad_len, in, len, out);
            else
                (void)pcb_floor_gcm_open(g, iv, aad, aad_len, in + len + TAG_LEN, len,
                                         in + 2 * len + TAG_LEN, out);
        }
        uint64_t mean = (pcb_clock_ns() - t0) / per;
        best = mean < best ? mean : best;
    }
    return best ? best : 1;
}

int pcb_store_stage_floor(pcb_store *s, int put, size_t name_len, size_t value_len, uint64_t n,
                          uint64_t *siv_ns, uint64_t *aead_ns, pcb_status *st)
{
    uint8_t siv_key[SIV_KEY_LEN], value_key[VALUE_KEY_LEN], d[16];
    *siv_ns = *aead_ns = 0;
    if (pcb_floor_missing() != NULL)
        return 1;
    pcb_store_lock(s);
    const int names = s->codec.names != PCB_NAMES_PLAIN;
    const int values = (s->codec.values == PCB_VALUES_AEAD || s->codec.values == PCB_VALUES_AEAD_TEXT)
                       && s->opt.value_enc == PCB_VALENC_GCM;
    memcpy(siv_key, s->ek->siv_key, SIV_KEY_LEN);
    memcpy(value_key, s->ek->value_key, VALUE_KEY_LEN);
    const size_t sn_len = s->store_name_len;
    char *sn = malloc(sn_len + 1);
    if (sn != NULL)
        memcpy(sn, s->store_name, sn_len);
    pcb_store_unlock(s);
    /* The value's associated data: the Base64 text of the sealed name, or the plain name. */
    const size_t aad_len = names ? pcb_b64_encoded_len(PREFIX_LEN + 16 + name_len) : name_len;
    const size_t len = name_len > value_len ? name_len : value_len;
    /* buf: input (len) | sealed value (len + tag) | spare tag; out: len + 16 */
    uint8_t *buf = calloc(1, 3 * len + 2 * TAG_LEN + aad_len + 16), *out = malloc(len + 16);
    pcb_floor_siv *fs = names ? pcb_floor_siv_new(siv_key, SIV_KEY_LEN) : NULL;
    pcb_floor_gcm *g = values ? pcb_floor_gcm_new(value_key, VALUE_KEY_LEN) : NULL;
    int ok = sn != NULL && buf != NULL && out != NULL && (!names || fs != NULL)
             && (!values || g != NULL);
    if (ok) {
        uint8_t *aad = buf + 3 * len + 2 * TAG_LEN;
        memset(aad, 'A', aad_len);
        for (size_t i = 0; i < len; i++)
            buf[i] = (uint8_t)('a' + i % 26);
        if (fs != NULL) {
            pcb_floor_s2v_start(fs, d);
            pcb_floor_s2v_add(fs, d, (const uint8_t *)sn, sn_len);
            *siv_ns = floor_loop(0, fs, d, NULL, NULL, 0, buf, name_len, out, n);
        }
        if (g != NULL) {
            static const uint8_t iv[NONCE_LEN] = {1};
            /* a sealed value to open: ct at buf + len + tag, its tag after it */
            pcb_floor_gcm_seal(g, iv, aad, aad_len, buf, value_len, buf + value_len + TAG_LEN);
            *aead_ns = floor_loop(put ? 1 : 2, NULL, NULL, g, aad, aad_len, buf, value_len, out, n);
        }
    }
    pcb_floor_siv_free(fs);
    pcb_floor_gcm_free(g);
    OPENSSL_cleanse(siv_key, sizeof siv_key);
    OPENSSL_cleanse(value_key, sizeof value_key);
    OPENSSL_cleanse(d, sizeof d);
    free(sn);
    free(buf);
    free(out);
    return ok || pcb_oom(st);
}
