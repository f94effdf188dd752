/*
 * crypto/tea.c — TEA and XTEA (see tea.h).
 *
 * Two families of code:
 *  - reference: Wheeler & Needham's routines transcribed literally, one block
 *    at a time, computing sum (and XTEA's key index) on the fly;
 *  - optimized: the per-cycle constants (TEA's sum; XTEA's sum + k[...]) are
 *    precomputed per call into a small stack table, and many independent
 *    blocks run through the rounds side by side: 4 in plain C (ILP), 8 per
 *    AVX2 vector, 16 per AVX-512 vector, several vectors at a time so that
 *    the serial v0 -> v1 -> v0 dependency chain does not starve the ALUs.
 *    AVX2/AVX-512 are compiled with function target attributes and selected
 *    at run time, so the file builds with the baseline -march; on aarch64,
 *    4 blocks per NEON vector (Advanced SIMD is baseline there; chosen when
 *    HWCAP says ASIMD).
 * Every optimized path must produce exactly the reference output.
 *
 * Unsigned 32-bit arithmetic throughout (wrapping is the cipher's intent);
 * bytes are assembled explicitly (big-endian) so there is no aliasing or
 * alignment UB.
 */
#include "crypto/tea.h"

#include "common/bytes.h"
#include "common/cpu.h"

#include <string.h>

#include <openssl/crypto.h>

#if defined(__x86_64__) || defined(__i386__)
#define PCB_TEA_X86 1
#include <immintrin.h>
#else
#define PCB_TEA_X86 0
#endif

#if defined(__aarch64__) && defined(__ARM_NEON)
#define PCB_TEA_NEON 1
#include <arm_neon.h>
#else
#define PCB_TEA_NEON 0
#endif

#define TEA_DELTA 0x9E3779B9u

#define AI static inline __attribute__((always_inline))

/* ---------------------------------------------------------------- bytes */

/* out = in ^ ks over n bytes; in may equal out. */
static void xor_bytes(uint8_t *out, const uint8_t *in, const uint8_t *ks, size_t n)
{
    size_t i = 0;
    for (; i + 8 <= n; i += 8) {
        uint64_t a, b;
        memcpy(&a, in + i, 8);
        memcpy(&b, ks + i, 8);
        a ^= b;
        memcpy(out + i, &a, 8);
    }
    for (; i < n; i++)
        out[i] = (uint8_t)(in[i] ^ ks[i]);
}

/* ---------------------------------------------------- reference kernels */

/* Wheeler & Needham, "TEA, a Tiny Encryption Algorithm" (1994). Every shift
 * is parenthesised: in C and Java `v1 << 4 + k0` would mean v1 << (4 + k0),
 * the precedence bug of the seed's Java port. */
static void ref_tea_encrypt(uint32_t v[2], const uint32_t k[4], uint32_t rounds)
{
    uint32_t v0 = v[0], v1 = v[1], sum = 0, i;
    for (i = 0; i < rounds; i++) {
        sum += TEA_DELTA;
        v0 += ((v1 << 4) + k[0]) ^ (v1 + sum) ^ ((v1 >> 5) + k[1]);
        v1 += ((v0 << 4) + k[2]) ^ (v0 + sum) ^ ((v0 >> 5) + k[3]);
    }
    v[0] = v0;
    v[1] = v1;
}

static void ref_tea_decrypt(uint32_t v[2], const uint32_t k[4], uint32_t rounds)
{
    uint32_t v0 = v[0], v1 = v[1], sum = TEA_DELTA * rounds, i; /* mod 2^32 */
    for (i = 0; i < rounds; i++) {
        v1 -= ((v0 << 4) + k[2]) ^ (v0 + sum) ^ ((v0 >> 5) + k[3]);
        v0 -= ((v1 << 4) + k[0]) ^ (v1 + sum) ^ ((v1 >> 5) + k[1]);
        sum -= TEA_DELTA;
    }
    v[0] = v0;
    v[1] = v1;
}

/* Needham & Wheeler, "Tea extensions" (1997). */
static void ref_xtea_encrypt(uint32_t v[2], const uint32_t k[4], uint32_t rounds)
{
    uint32_t v0 = v[0], v1 = v[1], sum = 0, i;
    for (i = 0; i < rounds; i++) {
        v0 += (((v1 << 4) ^ (v1 >> 5)) + v1) ^ (sum + k[sum & 3]);
        sum += TEA_DELTA;
        v1 += (((v0 << 4) ^ (v0 >> 5)) + v0) ^ (sum + k[(sum >> 11) & 3]);
    }
    v[0] = v0;
    v[1] = v1;
}

static void ref_xtea_decrypt(uint32_t v[2], const uint32_t k[4], uint32_t rounds)
{
    uint32_t v0 = v[0], v1 = v[1], sum = TEA_DELTA * rounds, i;
    for (i = 0; i < rounds; i++) {
        v1 -= (((v0 << 4) ^ (v0 >> 5)) + v0) ^ (sum + k[(sum >> 11) & 3]);
        sum -= TEA_DELTA;
        v0 -= (((v1 << 4) ^ (v1 >> 5)) + v1) ^ (sum + k[sum & 3]);
    }
    v[0] = v0;
    v[1] = v1;
}

static void ref_block(const pcb_tea_key *tk, int enc, uint32_t v[2])
{
    if (tk->variant == PCB_XTEA) {
        if (enc)
            ref_xtea_encrypt(v, tk->k, tk->rounds);
        else
            ref_xtea_decrypt(v, tk->k, tk->rounds);
    } else {
        if (enc)
            ref_tea_encrypt(v, tk->k, tk->rounds);
        else
            ref_tea_decrypt(v, tk->k, tk->rounds);
    }
}

/* One block, bytes in -> bytes out (in may equal out). */
static void ref_block_bytes(const pcb_tea_key *tk, int enc, const uint8_t *in, uint8_t *out)
{
    uint32_t v[2];
    v[0] = pcb_load_be32(in);
    v[1] = pcb_load_be32(in + 4);
    ref_block(tk, enc, v);
    pcb_store_be32(out, v[0]);
    pcb_store_be32(out + 4, v[1]);
}

/* ---------------------------------------------------- optimized kernels */

/* Per-call parameters of the optimized kernels. rk holds the per-cycle
 * constants: TEA: rk[i] = delta * (i + 1), the sum of cycle i; XTEA:
 * rk[2i] = s_i + k[s_i & 3] and rk[2i+1] = s_{i+1} + k[(s_{i+1} >> 11) & 3]
 * with s_i = delta * i. Decryption walks the same table backwards. */
typedef struct {
    const uint32_t *k;
    const uint32_t *rk;
    uint32_t rounds;
    pcb_tea_variant variant;
    int enc;
} tea_run;

/* Room for the largest table (XTEA, 1024 cycles): 8 KiB of stack. */
#define RK_MAX (2 * PCB_TEA_MAX_ROUNDS)

static void run_init(tea_run *r, const pcb_tea_key *tk, int enc, uint32_t *rk)
{
    uint32_t i, s = 0;
    if (tk->variant == PCB_XTEA) {
        for (i = 0; i < tk->rounds; i++) {
            rk[2 * i] = s + tk->k[s & 3];
            s += TEA_DELTA;
            rk[2 * i + 1] = s + tk->k[(s >> 11) & 3];
        }
    } else {
        for (i = 0; i < tk->rounds; i++) {
            s += TEA_DELTA;
            rk[i] = s;
        }
    }
    r->k = tk->k;
    r->rk = rk;
    r->rounds = tk->rounds;
    r->variant = tk->variant;
    r->enc = enc;
}

/*
 * The round loops are written once, as macros over an "ops prefix" P
 * (sc_ = uint32_t, v8_ = AVX2, v16_ = AVX-512) that supplies P##t (the type),
 * P##set1, P##add, P##sub, P##teaf (TEA's F with sum and two key words) and
 * P##xteaf (XTEA's F xored with the table constant). EACHn repeats a
 * statement for lanes 0..n-1 so that every lane lives in its own named
 * variable (register) — no arrays the compiler might leave in memory.
 */
#define EACH1(M, P) M(P, 0)
#define EACH2(M, P) M(P, 0) M(P, 1)
#define EACH4(M, P) M(P, 0) M(P, 1) M(P, 2) M(P, 3)
#define EACH8(M, P) EACH4(M, P) M(P, 4) M(P, 5) M(P, 6) M(P, 7)

#define LANE_LOAD(P, j) P##t a##j = va[j], b##j = vb[j];
#define LANE_STORE(P, j) va[j] = a##j; vb[j] = b##j;
#define TEA_EA(P, j) a##j = P##add(a##j, P##teaf(b##j, s, k0, k1));
#define TEA_EB(P, j) b##j = P##add(b##j, P##teaf(a##j, s, k2, k3));
#define TEA_DB(P, j) b##j = P##sub(b##j, P##teaf(a##j, s, k2, k3));
#define TEA_DA(P, j) a##j = P##sub(a##j, P##teaf(b##j, s, k0, k1));
#define XTEA_EA(P, j) a##j = P##add(a##j, P##xteaf(b##j, s0));
#define XTEA_EB(P, j) b##j = P##add(b##j, P##xteaf(a##j, s1));
#define XTEA_DB(P, j) b##j = P##sub(b##j, P##xteaf(a##j, s1));
#define XTEA_DA(P, j) a##j = P##sub(a##j, P##xteaf(b##j, s0));

/* NAME(r, va, vb): run all cycles on lanes va[j] (v0 words), vb[j] (v1). */
#define DEF_ROUNDS(P, ATTR, NAME, EACH)                                        \
    ATTR static void NAME(const tea_run *r, P##t *va, P##t *vb)               \
    {                                                                          \
        EACH(LANE_LOAD, P)                                                     \
        const P##t k0 = P##set1(r->k[0]), k1 = P##set1(r->k[1]);               \
        const P##t k2 = P##set1(r->k[2]), k3 = P##set1(r->k[3]);               \
        const uint32_t *rk = r->rk;                                            \
        uint32_t i, n = r->rounds;                                             \
        if (r->variant == PCB_TEA) {                                           \
            if (r->enc) {                                                      \
                for (i = 0; i < n; i++) {                                      \
                    const P##t s = P##set1(rk[i]);                             \
                    EACH(TEA_EA, P) EACH(TEA_EB, P)                            \
                }                                                              \
            } else {                                                           \
                for (i = n; i-- > 0;) {                                        \
                    const P##t s = P##set1(rk[i]);                             \
                    EACH(TEA_DB, P) EACH(TEA_DA, P)                            \
                }                                                              \
            }                                                                  \
        } else if (r->enc) {                                                   \
            for (i = 0; i < n; i++) {                                          \
                const P##t s0 = P##set1(rk[2 * i]), s1 = P##set1(rk[2 * i + 1]); \
                EACH(XTEA_EA, P) EACH(XTEA_EB, P)                              \
            }                                                                  \
        } else {                                                               \
            for (i = n; i-- > 0;) {                                            \
                const P##t s0 = P##set1(rk[2 * i]), s1 = P##set1(rk[2 * i + 1]); \
                EACH(XTEA_DB, P) EACH(XTEA_DA, P)                              \
            }                                                                  \
        }                                                                      \
        EACH(LANE_STORE, P)                                                    \
    }

/* ---- portable scalar ops */
typedef uint32_t sc_t;
AI sc_t sc_set1(uint32_t x) { return x; }
AI sc_t sc_add(sc_t a, sc_t b) { return a + b; }
AI sc_t sc_sub(sc_t a, sc_t b) { return a - b; }
AI sc_t sc_teaf(sc_t x, sc_t s, sc_t ka, sc_t kb)
{
    return ((x << 4) + ka) ^ (x + s) ^ ((x >> 5) + kb);
}
AI sc_t sc_xteaf(sc_t x, sc_t rk) { return (((x << 4) ^ (x >> 5)) + x) ^ rk; }

DEF_ROUNDS(sc_, , sc_rounds1, EACH1)
DEF_ROUNDS(sc_, , sc_rounds4, EACH4)

/* One block through the table-driven scalar path (CBC encryption). */
static void sc_block(const tea_run *r, uint32_t *v0, uint32_t *v1)
{
    sc_rounds1(r, v0, v1);
}

/* Optional final xor: with x non-NULL every kernel writes out[j] = E(in[j]) ^ x[j]
 * (the CTR keystream xor and the CBC-decryption chaining xor, fused so the
 * data makes one pass). Each group of blocks is fully read (in, x) before it
 * is written, so out may equal in or x; no other overlap. */
static inline uint32_t xw(const uint8_t *x, size_t off)
{
    return x ? pcb_load_be32(x + off) : 0;
}

/* nblocks whole blocks, in -> out: 4 at a time, then 1. */
static void blocks_scalar(const tea_run *r, const uint8_t *in, uint8_t *out, size_t n,
                          const uint8_t *x)
{
    uint32_t a[4], b[4];
    int j;
    for (; n >= 4; n -= 4, in += 32, out += 32) {
        for (j = 0; j < 4; j++) {
            a[j] = pcb_load_be32(in + 8 * j);
            b[j] = pcb_load_be32(in + 8 * j + 4);
        }
        sc_rounds4(r, a, b);
        for (j = 0; j < 4; j++) {
            a[j] ^= xw(x, 8 * (size_t)j);
            b[j] ^= xw(x, 8 * (size_t)j + 4);
        }
        for (j = 0; j < 4; j++) {
            pcb_store_be32(out + 8 * j, a[j]);
            pcb_store_be32(out + 8 * j + 4, b[j]);
        }
        if (x)
            x += 32;
    }
    for (; n > 0; n--, in += 8, out += 8) {
        a[0] = pcb_load_be32(in);
        b[0] = pcb_load_be32(in + 4);
        sc_rounds1(r, a, b);
        pcb_store_be32(out, a[0] ^ xw(x, 0));
        pcb_store_be32(out + 4, b[0] ^ xw(x, 4));
        if (x)
            x += 8;
    }
}

#if PCB_TEA_X86

#define T_AVX2 __attribute__((target("avx2")))
#define T_AVX512 __attribute__((target("avx512f,avx512bw")))

/*
 * Layout trick shared by both vector widths: within each 128-bit lane (two
 * blocks, words v0 v1 v0' v1'), one byte shuffle both byte-swaps the words
 * and reorders them to v0 v0' v1 v1'; then unpacklo/hi_epi64 of two such
 * registers gather all v0 words into one register and all v1 words into the
 * other. The lane order that results is permuted, which does not matter
 * since all lanes are independent, and the exact inverse (unpack, then the
 * same shuffle, which is an involution) restores it on the way out.
 */

/*
 * VZEROUPPER note: GCC emits no vzeroupper for these target("avx...")
 * functions (checked with GCC 12), and legacy-SSE code that runs afterwards
 * with dirty upper register halves is slowed down (measured: the SSE code
 * GCC makes of the 4-block scalar kernel ran 1/3 slower after an AVX-512
 * call on Zen 4). The same would hit the caller (Python, OpenSSL) and skew
 * every later benchmark, so each vector kernel clears the upper halves
 * before it leaves.
 */

/* ---- AVX2: 8 blocks (64 bytes) per register pair */
typedef __m256i v8_t;
T_AVX2 AI v8_t v8_set1(uint32_t x) { return _mm256_set1_epi32((int)x); }
T_AVX2 AI v8_t v8_add(v8_t a, v8_t b) { return _mm256_add_epi32(a, b); }
T_AVX2 AI v8_t v8_sub(v8_t a, v8_t b) { return _mm256_sub_epi32(a, b); }
T_AVX2 AI v8_t v8_teaf(v8_t x, v8_t s, v8_t ka, v8_t kb)
{
    return _mm256_xor_si256(
        _mm256_xor_si256(_mm256_add_epi32(_mm256_slli_epi32(x, 4), ka), _mm256_add_epi32(x, s)),
        _mm256_add_epi32(_mm256_srli_epi32(x, 5), kb));
}
T_AVX2 AI v8_t v8_xteaf(v8_t x, v8_t rk)
{
    v8_t t = _mm256_xor_si256(_mm256_slli_epi32(x, 4), _mm256_srli_epi32(x, 5));
    return _mm256_xor_si256(_mm256_add_epi32(t, x), rk);
}
T_AVX2 AI v8_t v8_shuf(void)
{
    return _mm256_setr_epi8(3, 2, 1, 0, 11, 10, 9, 8, 7, 6, 5, 4, 15, 14, 13, 12,
                            3, 2, 1, 0, 11, 10, 9, 8, 7, 6, 5, 4, 15, 14, 13, 12);
}
T_AVX2 AI void v8_load(const uint8_t *p, v8_t *a, v8_t *b)
{
    const v8_t m = v8_shuf();
    v8_t x = _mm256_shuffle_epi8(_mm256_loadu_si256((const __m256i *)(const void *)p), m);
    v8_t y = _mm256_shuffle_epi8(_mm256_loadu_si256((const __m256i *)(const void *)(p + 32)), m);
    *a = _mm256_unpacklo_epi64(x, y);
    *b = _mm256_unpackhi_epi64(x, y);
}
T_AVX2 AI void v8_store(uint8_t *p, v8_t a, v8_t b, const uint8_t *x)
{
    const v8_t m = v8_shuf();
    v8_t lo = _mm256_shuffle_epi8(_mm256_unpacklo_epi64(a, b), m);
    v8_t hi = _mm256_shuffle_epi8(_mm256_unpackhi_epi64(a, b), m);
    if (x) {
        lo = _mm256_xor_si256(lo, _mm256_loadu_si256((const __m256i *)(const void *)x));
        hi = _mm256_xor_si256(hi, _mm256_loadu_si256((const __m256i *)(const void *)(x + 32)));
    }
    _mm256_storeu_si256((__m256i *)(void *)p, lo);
    _mm256_storeu_si256((__m256i *)(void *)(p + 32), hi);
}

DEF_ROUNDS(v8_, T_AVX2, v8_rounds1, EACH1)
DEF_ROUNDS(v8_, T_AVX2, v8_rounds2, EACH2)
DEF_ROUNDS(v8_, T_AVX2, v8_rounds4, EACH4)

/* Vector kernels take the widest group that fits (more independent
 * chains hide the round latency: 4 AVX2 vector pairs measured ~35% faster
 * than 2 on Zen 4; more would spill the 16 ymm registers), then narrower
 * groups for the remainder, then the scalar code for the last < 8 blocks. */
T_AVX2 static void blocks_avx2(const tea_run *r, const uint8_t *in, uint8_t *out, size_t n,
                        const uint8_t *x)
{
    v8_t a[4], b[4];
    while (n >= 8) {
        size_t nv = n >= 32 ? 4 : n >= 16 ? 2 : 1, g;
        for (g = 0; g < nv; g++)
            v8_load(in + 64 * g, &a[g], &b[g]);
        if (nv == 4)
            v8_rounds4(r, a, b);
        else if (nv == 2)
            v8_rounds2(r, a, b);
        else
            v8_rounds1(r, a, b);
        for (g = 0; g < nv; g++)
            v8_store(out + 64 * g, a[g], b[g], x ? x + 64 * g : NULL);
        in += 64 * nv;
        out += 64 * nv;
        if (x)
            x += 64 * nv;
        n -= 8 * nv;
    }
    _mm256_zeroupper(); /* see VZEROUPPER note above */
    blocks_scalar(r, in, out, n, x);
}

/* ---- AVX-512: 16 blocks (128 bytes) per register pair */
typedef __m512i v16_t;
T_AVX512 AI v16_t v16_set1(uint32_t x) { return _mm512_set1_epi32((int)x); }
T_AVX512 AI v16_t v16_add(v16_t a, v16_t b) { return _mm512_add_epi32(a, b); }
T_AVX512 AI v16_t v16_sub(v16_t a, v16_t b) { return _mm512_sub_epi32(a, b); }
T_AVX512 AI v16_t v16_teaf(v16_t x, v16_t s, v16_t ka, v16_t kb)
{
    /* 0x96 = three-way xor in one vpternlogd */
    return _mm512_ternarylogic_epi32(_mm512_add_epi32(_mm512_slli_epi32(x, 4), ka),
                                     _mm512_add_epi32(x, s),
                                     _mm512_add_epi32(_mm512_srli_epi32(x, 5), kb), 0x96);
}
T_AVX512 AI v16_t v16_xteaf(v16_t x, v16_t rk)
{
    v16_t t = _mm512_xor_si512(_mm512_slli_epi32(x, 4), _mm512_srli_epi32(x, 5));
    return _mm512_xor_si512(_mm512_add_epi32(t, x), rk);
}
T_AVX512 AI v16_t v16_shuf(void)
{
    return _mm512_broadcast_i32x4(
        _mm_setr_epi8(3, 2, 1, 0, 11, 10, 9, 8, 7, 6, 5, 4, 15, 14, 13, 12));
}
T_AVX512 AI void v16_load(const uint8_t *p, v16_t *a, v16_t *b)
{
    const v16_t m = v16_shuf();
    v16_t x = _mm512_shuffle_epi8(_mm512_loadu_si512((const void *)p), m);
    v16_t y = _mm512_shuffle_epi8(_mm512_loadu_si512((const void *)(p + 64)), m);
    *a = _mm512_unpacklo_epi64(x, y);
    *b = _mm512_unpackhi_epi64(x, y);
}
T_AVX512 AI void v16_store(uint8_t *p, v16_t a, v16_t b, const uint8_t *x)
{
    const v16_t m = v16_shuf();
    v16_t lo = _mm512_shuffle_epi8(_mm512_unpacklo_epi64(a, b), m);
    v16_t hi = _mm512_shuffle_epi8(_mm512_unpackhi_epi64(a, b), m);
    if (x) {
        lo = _mm512_xor_si512(lo, _mm512_loadu_si512((const void *)x));
        hi = _mm512_xor_si512(hi, _mm512_loadu_si512((const void *)(x + 64)));
    }
    _mm512_storeu_si512((void *)p, lo);
    _mm512_storeu_si512((void *)(p + 64), hi);
}

DEF_ROUNDS(v16_, T_AVX512, v16_rounds1, EACH1)
DEF_ROUNDS(v16_, T_AVX512, v16_rounds2, EACH2)
DEF_ROUNDS(v16_, T_AVX512, v16_rounds4, EACH4)
DEF_ROUNDS(v16_, T_AVX512, v16_rounds8, EACH8)

/* As blocks_avx2; 32 zmm registers leave room for 8 vector pairs (128
 * blocks), measured ~20% faster than 2 pairs on Zen 4. */
T_AVX512 static void blocks_avx512(const tea_run *r, const uint8_t *in, uint8_t *out, size_t n,
                          const uint8_t *x)
{
    v16_t a[8], b[8];
    while (n >= 16) {
        size_t nv = n >= 128 ? 8 : n >= 64 ? 4 : n >= 32 ? 2 : 1, g;
        for (g = 0; g < nv; g++)
            v16_load(in + 128 * g, &a[g], &b[g]);
        if (nv == 8)
            v16_rounds8(r, a, b);
        else if (nv == 4)
            v16_rounds4(r, a, b);
        else if (nv == 2)
            v16_rounds2(r, a, b);
        else
            v16_rounds1(r, a, b);
        for (g = 0; g < nv; g++)
            v16_store(out + 128 * g, a[g], b[g], x ? x + 128 * g : NULL);
        in += 128 * nv;
        out += 128 * nv;
        if (x)
            x += 128 * nv;
        n -= 16 * nv;
    }
    _mm256_zeroupper(); /* see VZEROUPPER note above */
    blocks_scalar(r, in, out, n, x);
}

#endif /* PCB_TEA_X86 */

#if PCB_TEA_NEON

/*
 * NEON: 4 blocks (32 bytes) per register pair. vld2q_u32 de-interleaves the
 * words of 4 consecutive blocks into all-v0 and all-v1 registers in block
 * order, and vrev32q_u8 byte-swaps each (big-endian) word; vst2q_u32 and the
 * same swap undo it. 32 vector registers leave room for 8 pairs (32 blocks,
 * 16 registers) beside the key and round constants, as AVX-512's 32 zmm do;
 * the group sizes are AVX-512's, not tuned on ARM hardware (under qemu
 * timings say nothing about a real core).
 */
typedef uint32x4_t n4_t;
AI n4_t n4_set1(uint32_t x) { return vdupq_n_u32(x); }
AI n4_t n4_add(n4_t a, n4_t b) { return vaddq_u32(a, b); }
AI n4_t n4_sub(n4_t a, n4_t b) { return vsubq_u32(a, b); }
AI n4_t n4_teaf(n4_t x, n4_t s, n4_t ka, n4_t kb)
{
    return veorq_u32(veorq_u32(vaddq_u32(vshlq_n_u32(x, 4), ka), vaddq_u32(x, s)),
                     vaddq_u32(vshrq_n_u32(x, 5), kb));
}
AI n4_t n4_xteaf(n4_t x, n4_t rk)
{
    n4_t t = veorq_u32(vshlq_n_u32(x, 4), vshrq_n_u32(x, 5));
    return veorq_u32(vaddq_u32(t, x), rk);
}
AI n4_t n4_bswap(n4_t x) { return vreinterpretq_u32_u8(vrev32q_u8(vreinterpretq_u8_u32(x))); }
AI void n4_load(const uint8_t *p, n4_t *a, n4_t *b)
{
    uint32x4x2_t w = vld2q_u32((const uint32_t *)(const void *)p);
    *a = n4_bswap(w.val[0]);
    *b = n4_bswap(w.val[1]);
}
AI void n4_store(uint8_t *p, n4_t a, n4_t b, const uint8_t *x)
{
    uint32x4x2_t w;
    w.val[0] = n4_bswap(a);
    w.val[1] = n4_bswap(b);
    if (x) { /* the xor words in the same de-interleaved byte order */
        uint32x4x2_t m = vld2q_u32((const uint32_t *)(const void *)x);
        w.val[0] = veorq_u32(w.val[0], m.val[0]);
        w.val[1] = veorq_u32(w.val[1], m.val[1]);
    }
    vst2q_u32((uint32_t *)(void *)p, w);
}

DEF_ROUNDS(n4_, , n4_rounds1, EACH1)
DEF_ROUNDS(n4_, , n4_rounds2, EACH2)
DEF_ROUNDS(n4_, , n4_rounds4, EACH4)
DEF_ROUNDS(n4_, , n4_rounds8, EACH8)

/* As blocks_avx512: the widest group that fits, narrower ones, then scalar
 * for the last < 4 blocks. */
static void blocks_neon(const tea_run *r, const uint8_t *in, uint8_t *out, size_t n,
                        const uint8_t *x)
{
    n4_t a[8], b[8];
    while (n >= 4) {
        size_t nv = n >= 32 ? 8 : n >= 16 ? 4 : n >= 8 ? 2 : 1, g;
        for (g = 0; g < nv; g++)
            n4_load(in + 32 * g, &a[g], &b[g]);
        if (nv == 8)
            n4_rounds8(r, a, b);
        else if (nv == 4)
            n4_rounds4(r, a, b);
        else if (nv == 2)
            n4_rounds2(r, a, b);
        else
            n4_rounds1(r, a, b);
        for (g = 0; g < nv; g++)
            n4_store(out + 32 * g, a[g], b[g], x ? x + 32 * g : NULL);
        in += 32 * nv;
        out += 32 * nv;
        if (x)
            x += 32 * nv;
        n -= 4 * nv;
    }
    blocks_scalar(r, in, out, n, x);
}

#endif /* PCB_TEA_NEON */

/* ------------------------------------------------------ CPU dispatch */

pcb_tea_impl pcb_tea_best_impl(void)
{
    unsigned f = pcb_cpu_features();
    if (f & PCB_CPU_AVX512)
        return PCB_TEA_IMPL_AVX512;
    if (f & PCB_CPU_AVX2)
        return PCB_TEA_IMPL_AVX2;
    if (PCB_TEA_NEON && (f & PCB_CPU_ASIMD))
        return PCB_TEA_IMPL_NEON;
    return PCB_TEA_IMPL_SCALAR;
}

int pcb_tea_impl_available(pcb_tea_impl impl)
{
    switch (impl) {
    case PCB_TEA_IMPL_REF:
    case PCB_TEA_IMPL_SCALAR:
        return 1;
    case PCB_TEA_IMPL_AVX2:
        return (pcb_cpu_features() & PCB_CPU_AVX2) != 0;
    case PCB_TEA_IMPL_AVX512:
        return (pcb_cpu_features() & PCB_CPU_AVX512) != 0;
    case PCB_TEA_IMPL_NEON:
        return PCB_TEA_NEON && (pcb_cpu_features() & PCB_CPU_ASIMD) != 0;
    default:
        return 0;
    }
}

const char *pcb_tea_impl_name(pcb_tea_impl impl)
{
    switch (impl) {
    case PCB_TEA_IMPL_REF:
        return "ref";
    case PCB_TEA_IMPL_SCALAR:
        return "scalar";
    case PCB_TEA_IMPL_AVX2:
        return "avx2";
    case PCB_TEA_IMPL_AVX512:
        return "avx512";
    case PCB_TEA_IMPL_NEON:
        return "neon";
    case PCB_TEA_IMPL_AUTO:
        return "auto";
    default:
        return "unknown";
    }
}

typedef void (*blocks_fn)(const tea_run *, const uint8_t *, uint8_t *, size_t, const uint8_t *);

/* The multi-block kernel for an impl; re-checks availability so a
 * hand-filled key can never run an instruction set the CPU lacks. */
static blocks_fn pick_blocks(pcb_tea_impl impl)
{
#if PCB_TEA_X86
    if (impl == PCB_TEA_IMPL_AVX512 && pcb_tea_impl_available(impl))
        return blocks_avx512;
    if (impl == PCB_TEA_IMPL_AVX2 && pcb_tea_impl_available(impl))
        return blocks_avx2;
#elif PCB_TEA_NEON
    if (impl == PCB_TEA_IMPL_NEON && pcb_tea_impl_available(impl))
        return blocks_neon;
#else
    (void)impl;
#endif
    return blocks_scalar;
}

/* ------------------------------------------------------------- keys */

void pcb_tea_set_key(pcb_tea_key *tk, const uint8_t key[PCB_TEA_KEY],
                     pcb_tea_variant variant, uint32_t rounds, pcb_tea_impl impl)
{
    int i;
    for (i = 0; i < 4; i++)
        tk->k[i] = pcb_load_be32(key + 4 * i);
    tk->rounds = rounds;
    tk->variant = variant;
    if (impl == PCB_TEA_IMPL_AUTO || !pcb_tea_impl_available(impl))
        impl = pcb_tea_best_impl();
    tk->impl = impl;
}

void pcb_tea_clear_key(pcb_tea_key *tk)
{
    OPENSSL_cleanse(tk, sizeof(*tk));
}

/* Wipes the part of a round-key table run_init filled (rounds entries for
 * TEA, 2 x rounds for XTEA): it is an image of the key. */
static void run_wipe(uint32_t *rk, const pcb_tea_key *tk)
{
    OPENSSL_cleanse(rk, 2 * (size_t)tk->rounds * sizeof *rk);
}

/* The optimized paths pay a table setup of ~rounds steps and gain nothing
 * until 4 blocks fill the interleaved kernel (measured: 2 blocks ran ~10%
 * slower than the reference), so smaller calls use the reference routine. */
static int use_fast(const pcb_tea_key *tk, size_t nblocks)
{
    return tk->impl != PCB_TEA_IMPL_REF && nblocks >= 4;
}

/* -------------------------------------------------------------- ECB */

void pcb_tea_ecb(const pcb_tea_key *tk, int encrypt, const uint8_t *in,
                 uint8_t *out, size_t nblocks)
{
    size_t i;
    if (use_fast(tk, nblocks)) {
        uint32_t rk[RK_MAX];
        tea_run r;
        run_init(&r, tk, encrypt, rk);
        pick_blocks(tk->impl)(&r, in, out, nblocks, NULL);
        run_wipe(rk, tk);
        return;
    }
    for (i = 0; i < nblocks; i++)
        ref_block_bytes(tk, encrypt, in + 8 * i, out + 8 * i);
}

/* -------------------------------------------------------------- CBC */

/* Blocks per chunk for the parallel CBC-decrypt and CTR paths (a multiple
 * of the largest vector group, 128 blocks; 4 KiB of stack). */
#define CHUNK 512

static void cbc_decrypt_fast(const pcb_tea_key *tk, uint8_t iv[PCB_TEA_BLOCK],
                             const uint8_t *in, uint8_t *out, size_t nblocks)
{
    uint32_t rk[RK_MAX];
    /* save = previous ciphertext block, then this chunk's ciphertext: the
     * kernel decrypts save[1..n] and xors with save[0..n-1]. The copy is
     * what makes in-place operation safe (out overwrites the ciphertext the
     * next block chains from); it costs far less than the rounds. */
    uint8_t save[(CHUNK + 1) * PCB_TEA_BLOCK];
    tea_run r;
    blocks_fn fn = pick_blocks(tk->impl);
    run_init(&r, tk, 0, rk);
    memcpy(save, iv, 8);
    while (nblocks > 0) {
        size_t n = nblocks < CHUNK ? nblocks : CHUNK;
        memcpy(save + 8, in, 8 * n);
        fn(&r, save + 8, out, n, save);
        memcpy(save, save + 8 * n, 8); /* chains into the next chunk */
        in += 8 * n;
        out += 8 * n;
        nblocks -= n;
    }
    memcpy(iv, save, 8);
    run_wipe(rk, tk);
}

void pcb_tea_cbc(const pcb_tea_key *tk, int encrypt, uint8_t iv[PCB_TEA_BLOCK],
                 const uint8_t *in, uint8_t *out, size_t nblocks)
{
    size_t i;
    if (!encrypt && use_fast(tk, nblocks)) {
        cbc_decrypt_fast(tk, iv, in, out, nblocks);
        return;
    }
    if (encrypt && use_fast(tk, nblocks)) {
        /* Serial by nature: one block at a time, chain kept in registers. */
        uint32_t rk[RK_MAX];
        tea_run r;
        uint32_t c0 = pcb_load_be32(iv), c1 = pcb_load_be32(iv + 4);
        run_init(&r, tk, 1, rk);
        for (i = 0; i < nblocks; i++, in += 8, out += 8) {
            c0 ^= pcb_load_be32(in);
            c1 ^= pcb_load_be32(in + 4);
            sc_block(&r, &c0, &c1);
            pcb_store_be32(out, c0);
            pcb_store_be32(out + 4, c1);
        }
        pcb_store_be32(iv, c0);
        pcb_store_be32(iv + 4, c1);
        run_wipe(rk, tk);
        return;
    }
    /* Reference path (and single blocks). */
    for (i = 0; i < nblocks; i++, in += 8, out += 8) {
        uint32_t v[2];
        if (encrypt) {
            v[0] = pcb_load_be32(in) ^ pcb_load_be32(iv);
            v[1] = pcb_load_be32(in + 4) ^ pcb_load_be32(iv + 4);
            ref_block(tk, 1, v);
            pcb_store_be32(out, v[0]);
            pcb_store_be32(out + 4, v[1]);
            memcpy(iv, out, 8);
        } else {
            uint8_t c[PCB_TEA_BLOCK];
            memcpy(c, in, 8); /* in may be out */
            v[0] = pcb_load_be32(c);
            v[1] = pcb_load_be32(c + 4);
            ref_block(tk, 0, v);
            pcb_store_be32(out, v[0] ^ pcb_load_be32(iv));
            pcb_store_be32(out + 4, v[1] ^ pcb_load_be32(iv + 4));
            memcpy(iv, c, 8);
        }
    }
}

/* -------------------------------------------------------------- CTR */

void pcb_tea_ctr_init(pcb_tea_ctr_state *st, const uint8_t iv[PCB_TEA_BLOCK])
{
    memcpy(st->counter, iv, PCB_TEA_BLOCK);
    memset(st->keystream, 0, PCB_TEA_BLOCK);
    st->used = PCB_TEA_BLOCK;
}

void pcb_tea_ctr(const pcb_tea_key *tk, pcb_tea_ctr_state *st,
                 const uint8_t *in, uint8_t *out, size_t len)
{
    uint64_t ctr;
    size_t nfull, rem;

    /* Finish the keystream block left over by the previous call. */
    while (len > 0 && st->used < PCB_TEA_BLOCK) {
        *out++ = (uint8_t)(*in++ ^ st->keystream[st->used++]);
        len--;
    }
    if (len == 0)
        return;

    ctr = pcb_load_be64(st->counter);
    nfull = len / PCB_TEA_BLOCK;
    rem = len % PCB_TEA_BLOCK;

    if (use_fast(tk, nfull)) {
        uint32_t rk[RK_MAX];
        uint8_t buf[CHUNK * PCB_TEA_BLOCK];
        tea_run r;
        blocks_fn fn = pick_blocks(tk->impl);
        run_init(&r, tk, 1, rk);
        while (nfull > 0) {
            size_t n = nfull < CHUNK ? nfull : CHUNK, j;
            for (j = 0; j < n; j++)
                pcb_store_be64(buf + 8 * j, ctr++); /* wraps mod 2^64 */
            fn(&r, buf, out, n, in);
            in += 8 * n;
            out += 8 * n;
            nfull -= n;
        }
        run_wipe(rk, tk);
    } else if (nfull > 0) {
        uint8_t ks[PCB_TEA_BLOCK];
        for (; nfull > 0; nfull--, in += 8, out += 8) {
            pcb_store_be64(ks, ctr++);
            ref_block_bytes(tk, 1, ks, ks);
            xor_bytes(out, in, ks, 8);
        }
        OPENSSL_cleanse(ks, sizeof ks); /* keystream */
    }

    if (rem > 0) {
        /* Keep the rest of this keystream block for the next call. */
        pcb_store_be64(st->keystream, ctr++);
        ref_block_bytes(tk, 1, st->keystream, st->keystream);
        xor_bytes(out, in, st->keystream, rem);
        st->used = (unsigned)rem;
    }
    pcb_store_be64(st->counter, ctr);
}
