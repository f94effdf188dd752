/*
 * crypto/floor_gcm.h — private to crypto/floor.c and crypto/floor_gcm512.c.
 * Owns the floor's AES-GCM key state (struct pcb_floor_gcm: round keys, the
 * GHASH powers, which long-message loop it runs), the GHASH field arithmetic
 * both files share, and the 512-bit loop's entry point.
 *
 * GHASH works on byte-reversed blocks (Intel's carry-less multiplication
 * white paper, algorithm 5: the 256-bit product shifted left one bit, then
 * reduced modulo x^128 + x^7 + x^2 + x + 1). Functions are static inline for
 * "aes,pclmul,sse4.1" (PCB_FLOOR_FN), x86 only; callers must have checked
 * pcb_floor_missing() == NULL. No state of their own: thread-safe; a key
 * state is read-only after pcb_floor_gcm_new. Lengths are bytes.
 */
#ifndef PCB_CRYPTO_FLOOR_GCM_H
#define PCB_CRYPTO_FLOOR_GCM_H

#include "crypto/floor.h"
#include "crypto/floor_aes.h"

#ifdef PCB_FLOOR_X86

/* The long-message loop a key state runs (chosen at key setup from the CPU
 * and PCB_FLOOR_VAES, see floor.h). */
enum { FLOOR_LOOP_AESNI = 128, FLOOR_LOOP_VAES256 = 256, FLOOR_LOOP_VAES512 = 512 };

struct pcb_floor_gcm {
    floor_aes aes;
    __m128i h[8];   /* H^1..H^8, byte-reversed */
    __m128i hd[32]; /* H^32, H^31, ..., H^1: lane order of the VAES loops (256: hd + 16);
                       H^17..H^32 only computed for the 512-bit loop */
    int loop;       /* FLOOR_LOOP_*: messages of 256 / 512 bytes and more use VAES */
};

PCB_FLOOR_FN void clmul_acc(__m128i a, __m128i b, __m128i *lo, __m128i *mid, __m128i *hi)
{
    *lo = _mm_xor_si128(*lo, _mm_clmulepi64_si128(a, b, 0x00));
    *hi = _mm_xor_si128(*hi, _mm_clmulepi64_si128(a, b, 0x11));
    *mid = _mm_xor_si128(*mid, _mm_xor_si128(_mm_clmulepi64_si128(a, b, 0x10),
                                             _mm_clmulepi64_si128(a, b, 0x01)));
}

/* The sum of products (lo, mid, hi) as one reduced field element. */
PCB_FLOOR_FN __m128i gf_reduce(__m128i lo, __m128i mid, __m128i hi)
{
    __m128i t3 = _mm_xor_si128(lo, _mm_slli_si128(mid, 8));
    __m128i t6 = _mm_xor_si128(hi, _mm_srli_si128(mid, 8));
    /* shift the 256-bit t6:t3 left by one bit */
    __m128i t7 = _mm_srli_epi32(t3, 31), t8 = _mm_srli_epi32(t6, 31);
    t3 = _mm_slli_epi32(t3, 1);
    t6 = _mm_slli_epi32(t6, 1);
    __m128i t9 = _mm_srli_si128(t7, 12);
    t8 = _mm_slli_si128(t8, 4);
    t7 = _mm_slli_si128(t7, 4);
    t3 = _mm_or_si128(t3, t7);
    t6 = _mm_or_si128(_mm_or_si128(t6, t8), t9);
    /* reduce */
    t7 = _mm_xor_si128(_mm_xor_si128(_mm_slli_epi32(t3, 31), _mm_slli_epi32(t3, 30)),
                       _mm_slli_epi32(t3, 25));
    t8 = _mm_srli_si128(t7, 4);
    t7 = _mm_slli_si128(t7, 12);
    t3 = _mm_xor_si128(t3, t7);
    __m128i t2 = _mm_xor_si128(_mm_xor_si128(_mm_srli_epi32(t3, 1), _mm_srli_epi32(t3, 2)),
                               _mm_xor_si128(_mm_srli_epi32(t3, 7), t8));
    return _mm_xor_si128(t6, _mm_xor_si128(t3, t2));
}

PCB_FLOOR_FN __m128i gf_mul(__m128i a, __m128i b)
{
    __m128i lo = _mm_setzero_si128(), mid = lo, hi = lo;
    clmul_acc(a, b, &lo, &mid, &hi);
    return gf_reduce(lo, mid, hi);
}

/* The rest of a message (32 blocks per pass, four per AVX-512 instruction;
 * the last partial pass masked) for a key state with loop ==
 * FLOOR_LOOP_VAES512: ctr (the last counter block used) and x (the GHASH
 * state), both byte-reversed, in and out. Returns len: all done.
 * floor_gcm512.c. */
size_t pcb_floor_gcm512(const pcb_floor_gcm *k, __m128i *ctr_io, __m128i *x_io,
                        const uint8_t *in, uint8_t *out, size_t len, int enc);

/* H^9..H^32 into hd from H^1..H^8 there, for a key state with loop ==
 * FLOOR_LOOP_VAES512 (four powers per 512-bit multiplication). */
void pcb_floor_gcm512_powers(pcb_floor_gcm *k);

#endif /* x86 */
#endif /* PCB_CRYPTO_FLOOR_GCM_H */
