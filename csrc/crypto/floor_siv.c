/*
 * crypto/floor_siv.c — the floor's AES-SIV (RFC 5297; see floor.h): S2V on
 * AES-CMAC under the key's first half, CTR under the second, both on AES-NI.
 * CMAC(K1, 0^128), with which every S2V starts, and the CMAC subkeys are
 * computed at key setup. The CTR counter is V with bits 63 and 31 cleared,
 * incremented as a 64-bit big-endian number in its low half (which cannot
 * carry further: bit 63 starts clear). Seal's out must not overlap p.
 */
#include "crypto/floor.h"
#include "crypto/floor_aes.h"

#ifdef PCB_FLOOR_X86
#include "common/bytes.h"

struct pcb_floor_siv {
    floor_aes mac, ctr;
    __m128i sub1, sub2, d0; /* CMAC subkeys, CMAC(K1, 0^128); normal byte order */
};

/* dbl(): multiplication by x in GF(2^128), big-endian, without a branch. */
static void dbl(uint8_t d[16])
{
    uint64_t hi = pcb_load_be64(d), lo = pcb_load_be64(d + 8);
    uint64_t mask = (uint64_t)0 - (hi >> 63);
    hi = hi << 1 | lo >> 63;
    lo = lo << 1 ^ (mask & 0x87);
    pcb_store_be64(d, hi);
    pcb_store_be64(d + 8, lo);
}

/* CMAC of nblocks whole blocks at head followed by tail_len (0..32) bytes. */
PCB_FLOOR_FN __m128i cmac_run(const pcb_floor_siv *k, const uint8_t *head, size_t nblocks,
                              const uint8_t *tail, size_t tail_len)
{
    __m128i x = _mm_setzero_si128();
    for (size_t i = 0; i < nblocks; i++)
        x = floor_aes1(&k->mac, _mm_xor_si128(x, _mm_loadu_si128((const __m128i *)(head + 16 * i))));
    while (tail_len > 16) {
        x = floor_aes1(&k->mac, _mm_xor_si128(x, _mm_loadu_si128((const __m128i *)tail)));
        tail += 16, tail_len -= 16;
    }
    __m128i last;
    if (tail_len == 16) {
        last = _mm_xor_si128(_mm_loadu_si128((const __m128i *)tail), k->sub1);
    } else {
        uint8_t b[16] = {0};
        memcpy(b, tail, tail_len);
        b[tail_len] = 0x80;
        last = _mm_xor_si128(_mm_loadu_si128((const __m128i *)b), k->sub2);
    }
    return floor_aes1(&k->mac, _mm_xor_si128(x, last));
}

/* dbl() on a block in registers (big-endian bytes). */
PCB_FLOOR_FN __m128i dbl_v(__m128i x)
{
    __m128i v = floor_bswap(x);
    __m128i top = _mm_srli_epi64(v, 63);
    __m128i red = _mm_and_si128(_mm_sub_epi64(_mm_setzero_si128(), _mm_srli_si128(top, 8)),
                                _mm_set_epi64x(0, 0x87));
    v = _mm_or_si128(_mm_slli_epi64(v, 1), _mm_slli_si128(top, 8));
    return floor_bswap(_mm_xor_si128(v, red));
}

/* CMAC of nblocks (>= 1) whole blocks, dx XORed into the last: S2V's
 * "xorend" when the plaintext is a multiple of 16 bytes. */
PCB_FLOOR_FN __m128i cmac_full(const pcb_floor_siv *k, const uint8_t *m, size_t nblocks,
                               __m128i dx)
{
    __m128i x = _mm_setzero_si128();
    for (size_t i = 0; i + 1 < nblocks; i++)
        x = floor_aes1(&k->mac, _mm_xor_si128(x, _mm_loadu_si128((const __m128i *)(m + 16 * i))));
    __m128i last = _mm_xor_si128(_mm_loadu_si128((const __m128i *)(m + 16 * (nblocks - 1))),
                                 _mm_xor_si128(dx, k->sub1));
    return floor_aes1(&k->mac, _mm_xor_si128(x, last));
}

PCB_FLOOR_FN __m128i cmac(const pcb_floor_siv *k, const uint8_t *m, size_t len)
{
    size_t h = len > 16 ? (len - 1) / 16 * 16 : 0;
    return cmac_run(k, m, h / 16, m + h, len - h);
}

PCB_FLOOR_API pcb_floor_siv *pcb_floor_siv_new(const uint8_t *key, size_t key_len)
{
    if (key_len != 32 && key_len != 64)
        return NULL;
    pcb_floor_siv *k = floor_alloc(sizeof *k);
    if (k == NULL)
        return NULL;
    floor_aes_key(&k->mac, key, key_len / 2);
    floor_aes_key(&k->ctr, key + key_len / 2, key_len / 2);
    uint8_t l[16];
    _mm_storeu_si128((__m128i *)l, floor_aes1(&k->mac, _mm_setzero_si128()));
    dbl(l);
    k->sub1 = _mm_loadu_si128((const __m128i *)l);
    dbl(l);
    k->sub2 = _mm_loadu_si128((const __m128i *)l);
    OPENSSL_cleanse(l, sizeof l);
    static const uint8_t zero[16];
    k->d0 = cmac(k, zero, 16);
    return k;
}

void pcb_floor_siv_free(pcb_floor_siv *k)
{
    floor_release(k, sizeof *k);
}

PCB_FLOOR_API void pcb_floor_s2v_start(const pcb_floor_siv *k, uint8_t d[16])
{
    _mm_storeu_si128((__m128i *)d, k->d0);
}

PCB_FLOOR_API void pcb_floor_s2v_add(const pcb_floor_siv *k, uint8_t d[16], const uint8_t *ad,
                                     size_t len)
{
    dbl(d);
    __m128i x = _mm_xor_si128(_mm_loadu_si128((const __m128i *)d), cmac(k, ad, len));
    _mm_storeu_si128((__m128i *)d, x);
}

/* V = S2V's last step over the plaintext p. */
PCB_FLOOR_FN __m128i s2v_final(const pcb_floor_siv *k, const uint8_t d[16], const uint8_t *p,
                               size_t len)
{
    uint8_t t[32];
    __m128i v, dv = _mm_loadu_si128((const __m128i *)d);
    if (len >= 16 && len % 16 == 0) /* p xorend d, in registers */
        return cmac_full(k, p, len / 16, dv);
    if (len >= 16) { /* p xorend d */
        size_t h = (len - 16) & ~(size_t)15, n = len - h;
        memcpy(t, p + h, n);
        for (int i = 0; i < 16; i++)
            t[n - 16 + i] ^= d[i];
        v = cmac_run(k, p, h / 16, t, n);
    } else { /* dbl(d) xor pad(p) */
        memset(t, 0, 16);
        memcpy(t, p, len);
        t[len] = 0x80;
        __m128i last = _mm_xor_si128(_mm_xor_si128(dbl_v(dv), _mm_loadu_si128((const __m128i *)t)),
                                     k->sub1);
        v = floor_aes1(&k->mac, last); /* one whole block: CMAC's K1 case */
    }
    OPENSSL_cleanse(t, sizeof t);
    return v;
}

/* CTR under K2 from Q = V with bits 63 and 31 cleared. */
PCB_FLOOR_FN void siv_ctr(const pcb_floor_siv *k, __m128i v, const uint8_t *in, size_t len,
                          uint8_t *out)
{
    const __m128i one = _mm_set_epi64x(0, 1);
    __m128i ctr = floor_bswap(_mm_and_si128(v, _mm_set_epi8(-1, -1, -1, 0x7f, -1, -1, -1, 0x7f,
                                                             -1, -1, -1, -1, -1, -1, -1, -1)));
    __m128i b[8];
    size_t done = 0;
    while (len - done >= 128) {
        for (int i = 0; i < 8; i++) {
            b[i] = floor_bswap(ctr);
            ctr = _mm_add_epi64(ctr, one);
        }
        floor_aes8(&k->ctr, b);
        for (int i = 0; i < 8; i++) {
            __m128i m = _mm_loadu_si128((const __m128i *)(in + done + 16 * i));
            _mm_storeu_si128((__m128i *)(out + done + 16 * i), _mm_xor_si128(b[i], m));
        }
        done += 128;
    }
    size_t rem = len - done;
    if (rem == 0)
        return;
    int n = (int)((rem + 15) / 16);
    for (int i = 0; i < n; i++) {
        b[i] = floor_bswap(ctr);
        ctr = _mm_add_epi64(ctr, one);
    }
    floor_aesn(&k->ctr, b, n);
    for (int i = 0; i < n; i++) {
        size_t off = done + 16 * (size_t)i, m = len - off < 16 ? len - off : 16;
        if (m == 16)
            _mm_storeu_si128((__m128i *)(out + off),
                             _mm_xor_si128(b[i], _mm_loadu_si128((const __m128i *)(in + off))));
        else
            floor_store_partial(out + off, _mm_xor_si128(b[i], floor_load_partial(in + off, m)), m);
    }
}

PCB_FLOOR_API void pcb_floor_siv_seal(const pcb_floor_siv *k, const uint8_t d[16],
                                      const uint8_t *p, size_t len, uint8_t *out)
{
    __m128i v = s2v_final(k, d, p, len);
    siv_ctr(k, v, p, len, out + 16);
    _mm_storeu_si128((__m128i *)out, v);
}

PCB_FLOOR_API int pcb_floor_siv_open(const pcb_floor_siv *k, const uint8_t d[16],
                                     const uint8_t *in, size_t len, uint8_t *out)
{
    uint8_t want[16], given[16];
    size_t m = len - 16;
    memcpy(given, in, 16);
    siv_ctr(k, _mm_loadu_si128((const __m128i *)given), in + 16, m, out);
    _mm_storeu_si128((__m128i *)want, s2v_final(k, d, out, m));
    int ok = CRYPTO_memcmp(want, given, 16) == 0;
    if (!ok)
        OPENSSL_cleanse(out, m);
    return ok;
}

#else /* not x86: floor.h's pcb_floor_missing() says why these are never called */

pcb_floor_siv *pcb_floor_siv_new(const uint8_t *key, size_t key_len)
{
    (void)key, (void)key_len;
    return NULL;
}

void pcb_floor_siv_free(pcb_floor_siv *k)
{
    (void)k;
}

void pcb_floor_s2v_start(const pcb_floor_siv *k, uint8_t d[16])
{
    (void)k, (void)d;
}

void pcb_floor_s2v_add(const pcb_floor_siv *k, uint8_t d[16], const uint8_t *ad, size_t len)
{
    (void)k, (void)d, (void)ad, (void)len;
}

void pcb_floor_siv_seal(const pcb_floor_siv *k, const uint8_t d[16], const uint8_t *p,
                        size_t len, uint8_t *out)
{
    (void)k, (void)d, (void)p, (void)len, (void)out;
}

int pcb_floor_siv_open(const pcb_floor_siv *k, const uint8_t d[16], const uint8_t *in,
                       size_t len, uint8_t *out)
{
    (void)k, (void)d, (void)in, (void)len, (void)out;
    return 0;
}

#endif
