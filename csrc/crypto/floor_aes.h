/*
 * crypto/floor_aes.h — private to crypto/floor*.c. Owns the AES-NI block
 * cipher the floor kernels share (key expansion for 128- and 256-bit keys, n blocks
 * through the rounds at once), the byte-reversal shuffle, and the key-state
 * allocation (64-byte aligned, wiped on free).
 *
 * Every function is static inline and compiled for "aes,pclmul,sse4.1"
 * through PCB_FLOOR_FN, so only the floor files, and only on x86, see
 * intrinsics; callers must have checked pcb_floor_missing() == NULL. No
 * state: thread-safe. Round keys are 11 (AES-128) or 15 (AES-256) __m128i.
 */
#ifndef PCB_CRYPTO_FLOOR_AES_H
#define PCB_CRYPTO_FLOOR_AES_H

#if defined(__x86_64__) || defined(__i386__)
#define PCB_FLOOR_X86 1
#include <stdlib.h>
#include <string.h>
#include <openssl/crypto.h>
#include <wmmintrin.h>
#include <smmintrin.h>

#define PCB_FLOOR_FN static inline __attribute__((target("aes,pclmul,sse4.1"), always_inline))
#define PCB_FLOOR_API __attribute__((target("aes,pclmul,sse4.1")))

typedef struct {
    __m128i rk[15];
    int rounds; /* 10 or 14 */
} floor_aes;

PCB_FLOOR_FN __m128i floor_bswap(__m128i x)
{
    return _mm_shuffle_epi8(x, _mm_set_epi8(0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15));
}

PCB_FLOOR_FN __m128i floor_expand_step(__m128i k, __m128i assist)
{
    k = _mm_xor_si128(k, _mm_slli_si128(k, 4));
    k = _mm_xor_si128(k, _mm_slli_si128(k, 4));
    k = _mm_xor_si128(k, _mm_slli_si128(k, 4));
    return _mm_xor_si128(k, assist);
}

#define FLOOR_K128(i, rcon) \
    a->rk[i] = floor_expand_step(a->rk[i - 1], \
                                 _mm_shuffle_epi32(_mm_aeskeygenassist_si128(a->rk[i - 1], rcon), 0xff))
#define FLOOR_K256(i, rcon) \
    a->rk[i] = floor_expand_step(a->rk[i - 2], \
                                 _mm_shuffle_epi32(_mm_aeskeygenassist_si128(a->rk[i - 1], rcon), 0xff)); \
    if (i + 1 < 15) \
        a->rk[i + 1] = floor_expand_step(a->rk[i - 1], \
                                         _mm_shuffle_epi32(_mm_aeskeygenassist_si128(a->rk[i], 0), 0xaa))

/* key_len 16 or 32 (checked by the caller). */
PCB_FLOOR_FN void floor_aes_key(floor_aes *a, const uint8_t *key, size_t key_len)
{
    a->rk[0] = _mm_loadu_si128((const __m128i *)key);
    if (key_len == 16) {
        a->rounds = 10;
        FLOOR_K128(1, 0x01); FLOOR_K128(2, 0x02); FLOOR_K128(3, 0x04); FLOOR_K128(4, 0x08);
        FLOOR_K128(5, 0x10); FLOOR_K128(6, 0x20); FLOOR_K128(7, 0x40); FLOOR_K128(8, 0x80);
        FLOOR_K128(9, 0x1b); FLOOR_K128(10, 0x36);
        return;
    }
    a->rounds = 14;
    a->rk[1] = _mm_loadu_si128((const __m128i *)(key + 16));
    FLOOR_K256(2, 0x01); FLOOR_K256(4, 0x02); FLOOR_K256(6, 0x04); FLOOR_K256(8, 0x08);
    FLOOR_K256(10, 0x10); FLOOR_K256(12, 0x20); FLOOR_K256(14, 0x40);
}

PCB_FLOOR_FN __m128i floor_aes1(const floor_aes *a, __m128i b)
{
    b = _mm_xor_si128(b, a->rk[0]);
    for (int r = 1; r < a->rounds; r++)
        b = _mm_aesenc_si128(b, a->rk[r]);
    return _mm_aesenclast_si128(b, a->rk[a->rounds]);
}

/* n blocks through the rounds side by side; n is a constant in each caller
 * (floor_aesn's cases), so the blocks stay in registers. */
PCB_FLOOR_FN void floor_aes_k(const floor_aes *a, __m128i *b, const int n)
{
#pragma GCC unroll 8
    for (int i = 0; i < n; i++)
        b[i] = _mm_xor_si128(b[i], a->rk[0]);
    for (int r = 1; r < a->rounds; r++) {
        const __m128i k = a->rk[r];
#pragma GCC unroll 8
        for (int i = 0; i < n; i++)
            b[i] = _mm_aesenc_si128(b[i], k);
    }
    const __m128i k = a->rk[a->rounds];
#pragma GCC unroll 8
    for (int i = 0; i < n; i++)
        b[i] = _mm_aesenclast_si128(b[i], k);
}

/* n (1..8) blocks through the rounds side by side. */
PCB_FLOOR_FN void floor_aesn(const floor_aes *a, __m128i *b, int n)
{
    switch (n) {
    case 1: floor_aes_k(a, b, 1); break;
    case 2: floor_aes_k(a, b, 2); break;
    case 3: floor_aes_k(a, b, 3); break;
    case 4: floor_aes_k(a, b, 4); break;
    case 5: floor_aes_k(a, b, 5); break;
    case 6: floor_aes_k(a, b, 6); break;
    case 7: floor_aes_k(a, b, 7); break;
    default: floor_aes_k(a, b, 8); break;
    }
}

/* Eight blocks, unrolled (the stream loops). */
PCB_FLOOR_FN void floor_aes8(const floor_aes *a, __m128i b[8])
{
    __m128i k = a->rk[0];
    __m128i b0 = _mm_xor_si128(b[0], k), b1 = _mm_xor_si128(b[1], k), b2 = _mm_xor_si128(b[2], k),
            b3 = _mm_xor_si128(b[3], k), b4 = _mm_xor_si128(b[4], k), b5 = _mm_xor_si128(b[5], k),
            b6 = _mm_xor_si128(b[6], k), b7 = _mm_xor_si128(b[7], k);
    for (int r = 1; r < a->rounds; r++) {
        k = a->rk[r];
        b0 = _mm_aesenc_si128(b0, k); b1 = _mm_aesenc_si128(b1, k);
        b2 = _mm_aesenc_si128(b2, k); b3 = _mm_aesenc_si128(b3, k);
        b4 = _mm_aesenc_si128(b4, k); b5 = _mm_aesenc_si128(b5, k);
        b6 = _mm_aesenc_si128(b6, k); b7 = _mm_aesenc_si128(b7, k);
    }
    k = a->rk[a->rounds];
    b[0] = _mm_aesenclast_si128(b0, k); b[1] = _mm_aesenclast_si128(b1, k);
    b[2] = _mm_aesenclast_si128(b2, k); b[3] = _mm_aesenclast_si128(b3, k);
    b[4] = _mm_aesenclast_si128(b4, k); b[5] = _mm_aesenclast_si128(b5, k);
    b[6] = _mm_aesenclast_si128(b6, k); b[7] = _mm_aesenclast_si128(b7, k);
}

/* Loads / stores of n < 16 bytes through a zeroed block. */
PCB_FLOOR_FN __m128i floor_load_partial(const uint8_t *p, size_t n)
{
    uint8_t b[16] = {0};
    memcpy(b, p, n);
    return _mm_loadu_si128((const __m128i *)b);
}

PCB_FLOOR_FN void floor_store_partial(uint8_t *p, __m128i x, size_t n)
{
    uint8_t b[16];
    _mm_storeu_si128((__m128i *)b, x);
    memcpy(p, b, n);
}

static inline void *floor_alloc(size_t size)
{
    void *p = NULL;
    if (posix_memalign(&p, 64, size) != 0)
        return NULL;
    memset(p, 0, size);
    return p;
}

static inline void floor_release(void *p, size_t size)
{
    if (p) {
        OPENSSL_cleanse(p, size);
        free(p);
    }
}

#endif /* x86 */
#endif /* PCB_CRYPTO_FLOOR_AES_H */
