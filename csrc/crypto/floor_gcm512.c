/*
 * crypto/floor_gcm512.c — the floor's AES-GCM loop on 512-bit VAES and
 * VPCLMULQDQ (see floor_gcm.h; chosen by crypto/floor.c at key setup where
 * the CPU has AVX-512 F, BW, VL with VAES and VPCLMULQDQ and the OS saves
 * the zmm state: PCB_CPU_VAES512).
 *
 * A pass is FLOOR512_W zmm registers of four counter blocks each (32 blocks,
 * 512 bytes): enough in flight to cover the AES rounds' latency on a core
 * that issues two VAESENC zmm per cycle (16 blocks per pass measured 1.25x
 * slower at 16 KiB on Zen 5). The GHASH of the pass's 32 blocks
 * (decryption: the ciphertext it reads; encryption: the previous pass's
 * output) is multiplied by H^32..H^1 lane by lane between the first rounds
 * and summed, then reduced once. The bytes after the last whole pass (under
 * 512) take one more pass with masked loads and stores, their n blocks
 * times H^n..H^1 (the last block zero-padded, as GCM pads it). Compiled with per-function target
 * attributes: the rest of the build needs no flags, and off x86 this file
 * is empty.
 */
#include "crypto/floor_gcm.h"

#ifdef PCB_FLOOR_X86
#include <immintrin.h>

#define FLOOR512 __attribute__((target("avx512f,avx512bw,avx512vl,vaes,vpclmulqdq,avx2,aes,pclmul,sse4.1")))
#define FLOOR512_FN static inline FLOOR512 __attribute__((always_inline))
#define FLOOR512_W 8 /* zmm per pass */

/* The four 128-bit lanes of v XORed together. */
FLOOR512_FN __m128i fold4(__m512i v)
{
    __m256i t = _mm256_xor_si256(_mm512_castsi512_si256(v), _mm512_extracti64x4_epi64(v, 1));
    return _mm_xor_si128(_mm256_castsi256_si128(t), _mm256_extracti128_si256(t, 1));
}

/* lo, mid, hi += the four lane products of c and h (not reduced). */
FLOOR512_FN void clmul4(__m512i c, __m512i h, __m512i *lo, __m512i *mid, __m512i *hi)
{
    *lo = _mm512_xor_si512(*lo, _mm512_clmulepi64_epi128(c, h, 0x00));
    *hi = _mm512_xor_si512(*hi, _mm512_clmulepi64_epi128(c, h, 0x11));
    *mid = _mm512_ternarylogic_epi64(*mid, _mm512_clmulepi64_epi128(c, h, 0x10),
                                     _mm512_clmulepi64_epi128(c, h, 0x01), 0x96);
}

/* gf_reduce (floor_gcm.h) lane by lane: four field elements at once. */
FLOOR512_FN __m512i gf_reduce4(__m512i lo, __m512i mid, __m512i hi)
{
    __m512i t3 = _mm512_xor_si512(lo, _mm512_bslli_epi128(mid, 8));
    __m512i t6 = _mm512_xor_si512(hi, _mm512_bsrli_epi128(mid, 8));
    __m512i t7 = _mm512_srli_epi32(t3, 31), t8 = _mm512_srli_epi32(t6, 31);
    t3 = _mm512_or_si512(_mm512_slli_epi32(t3, 1), _mm512_bslli_epi128(t7, 4));
    t6 = _mm512_ternarylogic_epi64(_mm512_slli_epi32(t6, 1), _mm512_bslli_epi128(t8, 4),
                                   _mm512_bsrli_epi128(t7, 12), 0xfe); /* a | b | c */
    t7 = _mm512_ternarylogic_epi64(_mm512_slli_epi32(t3, 31), _mm512_slli_epi32(t3, 30),
                                   _mm512_slli_epi32(t3, 25), 0x96); /* a ^ b ^ c */
    t8 = _mm512_bsrli_epi128(t7, 4);
    t3 = _mm512_xor_si512(t3, _mm512_bslli_epi128(t7, 12));
    __m512i t2 = _mm512_ternarylogic_epi64(_mm512_srli_epi32(t3, 1), _mm512_srli_epi32(t3, 2),
                                           _mm512_srli_epi32(t3, 7), 0x96);
    return _mm512_ternarylogic_epi64(t6, t3, _mm512_xor_si512(t2, t8), 0x96);
}

FLOOR512 void pcb_floor_gcm512_powers(pcb_floor_gcm *k)
{
    /* hd[32 - i] = H^i: from H^1..H^8, each H^(top + i) = H^i H^top, four per
     * multiplication (the key setup of a rekeyed short message pays for these). */
    for (int top = 8; top < 32; top *= 2) {
        const __m512i ht = _mm512_broadcast_i32x4(k->hd[32 - top]);
        for (int j = 0; j < top; j += 4) { /* H^(top+j+4)..H^(top+j+1) from H^(j+4)..H^(j+1) */
            __m512i a = _mm512_loadu_si512((const void *)&k->hd[32 - j - 4]);
            __m512i lo = _mm512_setzero_si512(), mid = lo, hi = lo;
            clmul4(a, ht, &lo, &mid, &hi);
            _mm512_storeu_si512((void *)&k->hd[32 - top - j - 4], gf_reduce4(lo, mid, hi));
        }
    }
    _mm256_zeroupper();
}

FLOOR512 size_t pcb_floor_gcm512(const pcb_floor_gcm *k, __m128i *ctr_io, __m128i *x_io,
                                 const uint8_t *in, uint8_t *out, size_t len, int enc)
{
    enum { W = FLOOR512_W, PASS = 64 * FLOOR512_W };
    const __m512i rev = _mm512_broadcast_i32x4(
        _mm_set_epi8(0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15));
    const __m512i four = _mm512_broadcast_i32x4(_mm_set_epi32(0, 0, 0, 4));
    const int rounds = k->aes.rounds;
    __m512i rk[15], hp[W], c[W], b[W];
    for (int r = 0; r <= rounds; r++)
        rk[r] = _mm512_broadcast_i32x4(k->aes.rk[r]);
#pragma GCC unroll 8
    for (int i = 0; i < W; i++)
        hp[i] = _mm512_loadu_si512((const void *)&k->hd[32 - 4 * W + 4 * i]);
    __m512i ctr = _mm512_add_epi32(_mm512_broadcast_i32x4(*ctr_io),
                                   _mm512_set_epi32(0, 0, 0, 4, 0, 0, 0, 3, 0, 0, 0, 2, 0, 0, 0, 1));
    __m128i x = *x_io;
    size_t done = 0;
    int pending = 0; /* c holds blocks not yet hashed */
    while (len - done >= PASS) {
        const uint8_t *src = in + done;
#pragma GCC unroll 8
        for (int i = 0; i < W; i++) {
            b[i] = _mm512_xor_si512(_mm512_shuffle_epi8(ctr, rev), rk[0]);
            ctr = _mm512_add_epi32(ctr, four);
        }
        if (!enc) {
#pragma GCC unroll 8
            for (int i = 0; i < W; i++)
                c[i] = _mm512_shuffle_epi8(_mm512_loadu_si512((const void *)(src + 64 * i)), rev);
            pending = 1;
        }
        __m512i lo = _mm512_setzero_si512(), mid = lo, hi = lo;
        if (pending)
            c[0] = _mm512_xor_si512(c[0], _mm512_zextsi128_si512(x));
        /* rounds 1..W, each beside one register's GHASH products (W <= 9) */
#pragma GCC unroll 8
        for (int r = 1; r <= W; r++) {
#pragma GCC unroll 8
            for (int i = 0; i < W; i++)
                b[i] = _mm512_aesenc_epi128(b[i], rk[r]);
            if (pending)
                clmul4(c[r - 1], hp[r - 1], &lo, &mid, &hi);
        }
        if (pending)
            x = gf_reduce(fold4(lo), fold4(mid), fold4(hi));
        for (int r = W + 1; r < rounds; r++)
#pragma GCC unroll 8
            for (int i = 0; i < W; i++)
                b[i] = _mm512_aesenc_epi128(b[i], rk[r]);
#pragma GCC unroll 8
        for (int i = 0; i < W; i++) {
            __m512i o = _mm512_xor_si512(_mm512_aesenclast_epi128(b[i], rk[rounds]),
                                         _mm512_loadu_si512((const void *)(src + 64 * i)));
            _mm512_storeu_si512((void *)(out + done + 64 * i), o);
            if (enc)
                c[i] = _mm512_shuffle_epi8(o, rev);
        }
        pending = enc;
        done += PASS;
    }
    if (pending) {
        __m512i lo = _mm512_setzero_si512(), mid = lo, hi = lo;
        c[0] = _mm512_xor_si512(c[0], _mm512_zextsi128_si512(x));
#pragma GCC unroll 8
        for (int i = 0; i < W; i++)
            clmul4(c[i], hp[i], &lo, &mid, &hi);
        x = gf_reduce(fold4(lo), fold4(mid), fold4(hi));
    }
    /* the last counter used: the low lane of ctr minus one step */
    __m128i last = _mm_sub_epi32(_mm512_castsi512_si128(ctr), _mm_set_epi32(0, 0, 0, 1));
    const size_t rem = len - done;
    if (rem) { /* one pass more, loads and stores masked to the rem < 512 bytes left */
        const uint8_t *src = in + done;
        const int nb = (int)((rem + 15) / 16); /* blocks: times H^nb..H^1 */
#pragma GCC unroll 8
        for (int i = 0; i < W; i++) {
            b[i] = _mm512_xor_si512(_mm512_shuffle_epi8(ctr, rev), rk[0]);
            ctr = _mm512_add_epi32(ctr, four);
        }
        for (int r = 1; r < rounds; r++)
#pragma GCC unroll 8
            for (int i = 0; i < W; i++)
                b[i] = _mm512_aesenc_epi128(b[i], rk[r]);
        __m512i lo = _mm512_setzero_si512(), mid = lo, hi = lo;
#pragma GCC unroll 8
        for (int i = 0; i < W; i++) {
            if (64 * (size_t)i >= rem)
                continue;
            const size_t v = rem - 64 * (size_t)i; /* bytes in this register */
            const __mmask64 m = v >= 64 ? ~(__mmask64)0 : ((__mmask64)1 << v) - 1;
            const int lanes = nb - 4 * i; /* blocks in it (the last zero-padded) */
            __m512i d = _mm512_maskz_loadu_epi8(m, src + 64 * i);
            __m512i o = _mm512_maskz_mov_epi8(
                m, _mm512_xor_si512(_mm512_aesenclast_epi128(b[i], rk[rounds]), d));
            _mm512_mask_storeu_epi8(out + done + 64 * i, m, o);
            __m512i ci = _mm512_shuffle_epi8(enc ? o : d, rev);
            if (i == 0)
                ci = _mm512_xor_si512(ci, _mm512_zextsi128_si512(x));
            /* lanes past the message get no power (zero), and are not read */
            __m512i h = _mm512_maskz_loadu_epi64(lanes >= 4 ? 0xff : (__mmask8)((1u << (2 * lanes)) - 1),
                                                 &k->hd[32 - nb + 4 * i]);
            clmul4(ci, h, &lo, &mid, &hi);
        }
        x = gf_reduce(fold4(lo), fold4(mid), fold4(hi));
        last = _mm_add_epi32(last, _mm_set_epi32(0, 0, 0, nb));
        done = len;
    }
    *ctr_io = last;
    *x_io = x;
    _mm256_zeroupper();
    return done;
}

#else
typedef int floor_gcm512_empty; /* ISO C wants a translation unit to declare something */
#endif
