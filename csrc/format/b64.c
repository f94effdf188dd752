/*
 * format/b64.c — standard Base64 with strict decoding (see b64.h).
 *
 * Encoding works on 3-byte groups through a 4096-entry table of character
 * pairs (one lookup per 12 bits); with SSSE3 (any SIMD level chosen below)
 * 12-byte steps run first (encode_ssse3). Scalar decoding reads 4 characters at a
 * time through four pre-shifted tables whose entries for characters outside
 * the alphabet have bit 31 set, so one OR of the four lookups both assembles
 * the 24 bits and flags any bad character. The tables are built at compile
 * time by macros.
 *
 * SIMD decoding (x86): a kernel decodes whole vector steps of the quads
 * before the last one, which carries any padding and goes, with the quads
 * the kernel leaves, through the scalar code, so the padding and unused-bit
 * rules live in one place. Kernels (Muła & Lemire, "Faster Base64 encoding
 * and decoding using AVX2 instructions", 2018; "Base64 encoding and decoding
 * at almost the speed of a memory copy", 2019):
 *  - SSSE3 / AVX2: 16 / 32 characters per step; validation by two nibble
 *    lookups (vpshufb), translation by a third, packing with
 *    vpmaddubsw + vpmaddwd, then a byte shuffle (and, for AVX2, a dword
 *    permute) to 12 / 24 contiguous bytes. AVX2 ends with one 16 step.
 *  - AVX-512 VBMI: 64 characters per step through a 128-entry vpermi2b
 *    table, the rest (4..60 characters) in one masked step.
 * They never read past in[n-1] and never write past pcb_b64_decoded_max(n).
 * Compiled with function target attributes (the file builds with the
 * baseline -march) and chosen once, on first use, by CPU detection;
 * PCB_B64_SCALAR=1 in the environment at that point forces scalar.
 *
 * ARM (aarch64) decodes and encodes with the scalar code, on purpose: no
 * NEON kernel. Decoding is off the put/get path (the store keeps its entries
 * decoded in memory; a get only encodes the value's associated data, in SSSE3
 * steps on x86-64, ~200 instructions a lean get under callgrind against ~478
 * scalar); it runs when a file is read (open, inspect). How much a kernel can
 * save there, measured on x86-64 with callgrind (instructions, not time;
 * opening a 1000-entry store of 32-character names and values, default
 * options): the scalar decoder is 19.5 % of
 * pcb_store_open's instructions (892 per entry, name and value), AVX2 8.8 %
 * (354). Whether a NEON kernel turns a like cut into time on a real core
 * (in-order Cortex-A55 or a big out-of-order one) is unknown: no ARM board
 * has run one here, and qemu's timings say nothing about one. Without that
 * measurement a NEON path would be untested speed and a second decoder to
 * keep exact; the x86 kernels above show where one would go (bulk_fn).
 */
#include "format/b64.h"

#include "common/cpu.h"

#include <stdlib.h>
#include <string.h>

#if defined(__x86_64__) || defined(__i386__)
#define PCB_B64_X86 1
#include <immintrin.h>
#else
#define PCB_B64_X86 0
#endif

static const char alphabet[64] =
    "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";

/* ---- encoding ------------------------------------------------------------ */

/* Character for a 6-bit value (as a constant expression, for the tables). */
#define ENC(v) ((v) < 26 ? 'A' + (v) : (v) < 52 ? 'a' + (v) - 26 : (v) < 62 ? '0' + (v) - 52 : (v) == 62 ? '+' : '/')

/* pair[x] = the two characters for the 12-bit value x, first in the low byte
 * when read back as bytes: stored as char[2]. */
#define P1(x) { (char)ENC((x) >> 6), (char)ENC((x) & 63) }
#define P4(x) P1(x), P1((x) + 1), P1((x) + 2), P1((x) + 3)
#define P16(x) P4(x), P4((x) + 4), P4((x) + 8), P4((x) + 12)
#define P64(x) P16(x), P16((x) + 16), P16((x) + 32), P16((x) + 48)
#define P256(x) P64(x), P64((x) + 64), P64((x) + 128), P64((x) + 192)
#define P1024(x) P256(x), P256((x) + 256), P256((x) + 512), P256((x) + 768)
static const char pair[4096][2] = { P1024(0), P1024(1024), P1024(2048), P1024(3072) };

/* Scalar encoding from in[i..n) on; out is where in[i] goes. */
static size_t encode_from(const uint8_t *in, size_t i, size_t n, char *out)
{
    char *o = out;
    while (n - i >= 3) {
        uint32_t v = (uint32_t)in[i] << 16 | (uint32_t)in[i + 1] << 8 | in[i + 2];
        const char *a = pair[v >> 12], *b = pair[v & 4095];
        o[0] = a[0];
        o[1] = a[1];
        o[2] = b[0];
        o[3] = b[1];
        o += 4;
        i += 3;
    }
    if (n - i == 1) {
        uint32_t v = in[i];
        o[0] = alphabet[v >> 2];
        o[1] = alphabet[(v & 3) << 4];
        o[2] = '=';
        o[3] = '=';
        o += 4;
    } else if (n - i == 2) {
        uint32_t v = (uint32_t)in[i] << 8 | in[i + 1];
        o[0] = alphabet[v >> 10];
        o[1] = alphabet[(v >> 4) & 63];
        o[2] = alphabet[(v & 15) << 2];
        o[3] = '=';
        o += 4;
    }
    return (size_t)(o - out);
}

/* ---- decoding: scalar --------------------------------------------------- */

#define BAD 0x80000000u
/* 6-bit value of character c, or BAD (constant expression). */
#define DEC(c) ((c) >= 'A' && (c) <= 'Z' ? (uint32_t)((c) - 'A') \
              : (c) >= 'a' && (c) <= 'z' ? (uint32_t)((c) - 'a' + 26) \
              : (c) >= '0' && (c) <= '9' ? (uint32_t)((c) - '0' + 52) \
              : (c) == '+' ? 62u : (c) == '/' ? 63u : BAD)
#define SH(c, s) (DEC(c) == BAD ? BAD : DEC(c) << (s))
#define D4(c, s) SH(c, s), SH((c) + 1, s), SH((c) + 2, s), SH((c) + 3, s)
#define D16(c, s) D4(c, s), D4((c) + 4, s), D4((c) + 8, s), D4((c) + 12, s)
#define D64(c, s) D16(c, s), D16((c) + 16, s), D16((c) + 32, s), D16((c) + 48, s)
#define D256(s) { D64(0, s), D64(64, s), D64(128, s), D64(192, s) }
static const uint32_t d0[256] = D256(18);
static const uint32_t d1[256] = D256(12);
static const uint32_t d2[256] = D256(6);
static const uint32_t d3[256] = D256(0);

/* A kernel decodes a prefix of s[0..m) (m: the characters before the last
 * quad, a multiple of 4) in whole steps and returns its length (a multiple
 * of 4), or BULK_BAD if it met a character outside the alphabet. o has room
 * for m / 4 * 3 + 6 bytes (pcb_b64_decoded_max(m + 4)). */
typedef size_t (*bulk_fn)(const unsigned char *s, size_t m, uint8_t *o);
#define BULK_BAD ((size_t)-1)

static size_t decode(bulk_fn bulk, const char *in, size_t n, uint8_t *out)
{
    const unsigned char *s = (const unsigned char *)in;
    uint8_t *o = out;
    if (n % 4 != 0)
        return (size_t)-1;
    if (n == 0)
        return 0;
    size_t full = n - 4, i = 0; /* the last quad may carry padding */
    if (bulk != NULL && full >= 16) { /* every kernel steps >= 16 characters */
        i = bulk(s, full, o);
        if (i == BULK_BAD)
            return (size_t)-1;
        o += i / 4 * 3;
    }
    /* An unpadded last quad is an ordinary one ('=' is BAD in the tables). */
    const size_t whole = s[n - 1] == '=' ? full : n;
    for (; i < whole; i += 4) {
        uint32_t v = d0[s[i]] | d1[s[i + 1]] | d2[s[i + 2]] | d3[s[i + 3]];
        if (v & BAD)
            return (size_t)-1;
        o[0] = (uint8_t)(v >> 16);
        o[1] = (uint8_t)(v >> 8);
        o[2] = (uint8_t)v;
        o += 3;
    }
    if (whole == n)
        return (size_t)(o - out);
    s += full;
    if (s[2] != '=') {
        /* "xxx=": 16 bits, the low 2 bits of the third symbol must be zero */
        uint32_t v = d0[s[0]] | d1[s[1]] | d2[s[2]];
        if ((v & BAD) || (v & 0xFF))
            return (size_t)-1;
        o[0] = (uint8_t)(v >> 16);
        o[1] = (uint8_t)(v >> 8);
        o += 2;
    } else {
        /* "xx==": 8 bits, the low 4 bits of the second symbol must be zero */
        uint32_t v = d0[s[0]] | d1[s[1]];
        if ((v & BAD) || (v & 0xFFFF))
            return (size_t)-1;
        o[0] = (uint8_t)(v >> 16);
        o += 1;
    }
    return (size_t)(o - out);
}

/* ---- decoding: SIMD kernels ---------------------------------------------- */

#if PCB_B64_X86

#define AI static inline __attribute__((always_inline))
#define T_SSSE3 __attribute__((target("ssse3")))
#define T_AVX2 __attribute__((target("avx2")))
#define T_VBMI __attribute__((target("avx512f,avx512bw,avx512vbmi")))

/*
 * Nibble lookups, per 16-byte lane. Validation: the high nibble's class bit
 * (lut_hi: 0x01 for 0x2_, 0x02 for 0x3_, 0x04 for 0x4_/0x6_, 0x08 for
 * 0x5_/0x7_, 0x10 for everything else, 0x80-0xFF included) ANDed with the
 * low nibble's set of classes in which it is NOT a Base64 character
 * (lut_lo, always including 0x10) is non-zero exactly for bad characters.
 * Translation: the character plus lut_roll[high nibble] is its 6-bit value,
 * with '/' (the one character whose high nibble 2 it shares with '+' but
 * needs another offset) moved to index 1 by adding its compare mask (-1).
 * The nibbles are masked with 0x2F rather than 0x0F (one constant less,
 * also the compare value for '/'): vpshufb ignores bit 5 of an index, and
 * bit 7, which would zero the result, is clear.
 */
#define LUT_LO 0x15, 0x11, 0x11, 0x11, 0x11, 0x11, 0x11, 0x11, \
               0x11, 0x11, 0x13, 0x1A, 0x1B, 0x1B, 0x1B, 0x1A
#define LUT_HI 0x10, 0x10, 0x01, 0x02, 0x04, 0x08, 0x04, 0x08, \
               0x10, 0x10, 0x10, 0x10, 0x10, 0x10, 0x10, 0x10
#define LUT_ROLL 0, 16, 19, 4, -65, -65, -71, -71, 0, 0, 0, 0, 0, 0, 0, 0
/* After packing, each dword holds a quad's 24 bits little-endian in its low
 * 3 bytes: gather them big-endian into the lane's first 12 bytes. */
#define PACK12 2, 1, 0, 6, 5, 4, 10, 9, 8, 14, 13, 12, -1, -1, -1, -1
/* vpmaddubsw weights (per quad a b c d: a*64 + b, c*64 + d), then vpmaddwd
 * weights (ab * 4096 + cd): the 24 bits of each quad in its dword. */
#define MERGE_AB 0x01400140
#define MERGE_ABCD 0x00011000

/* 16 characters at s to 12 bytes at o (16 written); 0 if one is bad. */
T_SSSE3 AI int step16(const unsigned char *s, uint8_t *o)
{
    const __m128i m2f = _mm_set1_epi8(0x2F);
    __m128i c = _mm_loadu_si128((const __m128i *)(const void *)s);
    __m128i hi_n = _mm_and_si128(_mm_srli_epi32(c, 4), m2f);
    __m128i lo_n = _mm_and_si128(c, m2f);
    __m128i bad = _mm_and_si128(_mm_shuffle_epi8(_mm_setr_epi8(LUT_LO), lo_n),
                                _mm_shuffle_epi8(_mm_setr_epi8(LUT_HI), hi_n));
    if (_mm_movemask_epi8(_mm_cmpgt_epi8(bad, _mm_setzero_si128())) != 0) /* no SSE4.1 ptest */
        return 0;
    __m128i roll = _mm_shuffle_epi8(_mm_setr_epi8(LUT_ROLL), _mm_add_epi8(_mm_cmpeq_epi8(c, m2f), hi_n));
    __m128i v = _mm_add_epi8(c, roll);
    v = _mm_maddubs_epi16(v, _mm_set1_epi32(MERGE_AB));
    v = _mm_madd_epi16(v, _mm_set1_epi32(MERGE_ABCD));
    v = _mm_shuffle_epi8(v, _mm_setr_epi8(PACK12));
    _mm_storeu_si128((__m128i *)(void *)o, v);
    return 1;
}

/* A 16-byte store at o + i/4*3 stays within m/4*3 + 6 whenever the step
 * reads s[i..i+16) <= m: no bound check needed. */
T_SSSE3 static size_t bulk_ssse3(const unsigned char *s, size_t m, uint8_t *o)
{
    size_t i = 0;
    for (; m - i >= 16; i += 16, o += 12)
        if (!step16(s + i, o))
            return BULK_BAD;
    return i;
}

/* 32 characters at s to 24 bytes in the low 24 bytes of *out; 0 if one is bad. */
T_AVX2 AI int step32(const unsigned char *s, __m256i *out)
{
    const __m256i m2f = _mm256_set1_epi8(0x2F);
    __m256i c = _mm256_loadu_si256((const __m256i *)(const void *)s);
    __m256i hi_n = _mm256_and_si256(_mm256_srli_epi32(c, 4), m2f);
    __m256i lo_n = _mm256_and_si256(c, m2f);
    if (!_mm256_testz_si256(_mm256_shuffle_epi8(_mm256_setr_epi8(LUT_LO, LUT_LO), lo_n),
                            _mm256_shuffle_epi8(_mm256_setr_epi8(LUT_HI, LUT_HI), hi_n)))
        return 0;
    __m256i roll = _mm256_shuffle_epi8(_mm256_setr_epi8(LUT_ROLL, LUT_ROLL),
                                       _mm256_add_epi8(_mm256_cmpeq_epi8(c, m2f), hi_n));
    __m256i v = _mm256_add_epi8(c, roll);
    v = _mm256_maddubs_epi16(v, _mm256_set1_epi32(MERGE_AB));
    v = _mm256_madd_epi16(v, _mm256_set1_epi32(MERGE_ABCD));
    v = _mm256_shuffle_epi8(v, _mm256_setr_epi8(PACK12, PACK12));
    /* lane 0's 12 bytes, then lane 1's (dwords 4-6) */
    *out = _mm256_permutevar8x32_epi32(v, _mm256_setr_epi32(0, 1, 2, 4, 5, 6, 3, 7));
    return 1;
}

/* A 32-byte store at o + i/4*3 stays within m/4*3 + 6 if m - i >= 36; the
 * last step before that (m - i == 32, e.g. 100-character values) stores its
 * 24 bytes exactly. Then one 16 step for 16..28 characters left. */
T_AVX2 static size_t bulk_avx2(const unsigned char *s, size_t m, uint8_t *o)
{
    size_t i = 0;
    for (; m - i >= 32; i += 32, o += 24) {
        __m256i v;
        if (!step32(s + i, &v))
            goto bad;
        if (m - i >= 36) {
            _mm256_storeu_si256((__m256i *)(void *)o, v);
        } else {
            _mm_storeu_si128((__m128i *)(void *)o, _mm256_castsi256_si128(v));
            _mm_storel_epi64((__m128i *)(void *)(o + 16), _mm256_extracti128_si256(v, 1));
        }
    }
    if (m - i >= 16) {
        if (!step16(s + i, o))
            goto bad;
        i += 16;
    }
    _mm256_zeroupper(); /* see the VZEROUPPER note in pcb_tea.c */
    return i;
bad:
    _mm256_zeroupper();
    return BULK_BAD;
}

/* dec7[c]: the 6-bit value of ASCII character c, or 0x80 (not in the
 * alphabet); vpermi2b indexes it with the low 7 bits of each character. */
#define V1(c) (uint8_t)(DEC(c) == BAD ? 0x80 : DEC(c))
#define V4(c) V1(c), V1((c) + 1), V1((c) + 2), V1((c) + 3)
#define V16(c) V4(c), V4((c) + 4), V4((c) + 8), V4((c) + 12)
#define V64(c) V16(c), V16((c) + 16), V16((c) + 32), V16((c) + 48)
static const uint8_t dec7[128] = { V64(0), V64(64) };
/* Byte j of the 48 output bytes from the packed dwords (as PACK12). */
#define PK(q) 4 * (q) + 2, 4 * (q) + 1, 4 * (q)
static const uint8_t pack48[64] = { PK(0), PK(1), PK(2), PK(3), PK(4), PK(5), PK(6), PK(7),
                                    PK(8), PK(9), PK(10), PK(11), PK(12), PK(13), PK(14), PK(15) };

/* Translate (a character with bit 7 set, or one dec7 maps to 0x80, is bad),
 * pack, and store the quads' bytes through mask k. */
T_VBMI AI int step64(__m512i c, __m512i lut0, __m512i lut1, __m512i pack, uint8_t *o, __mmask64 k)
{
    __m512i v = _mm512_permutex2var_epi8(lut0, c, lut1);
    if (_mm512_movepi8_mask(_mm512_or_si512(v, c)) != 0)
        return 0;
    v = _mm512_maddubs_epi16(v, _mm512_set1_epi32(MERGE_AB));
    v = _mm512_madd_epi16(v, _mm512_set1_epi32(MERGE_ABCD));
    _mm512_mask_storeu_epi8(o, k, _mm512_permutexvar_epi8(pack, v));
    return 1;
}

/* Masked stores write exactly the decoded bytes; the last 4..60 characters
 * are one masked load (masked-off bytes are neither read nor faulted on),
 * padded with 'A' (which decodes to zero bits). */
T_VBMI static size_t bulk_avx512vbmi(const unsigned char *s, size_t m, uint8_t *o)
{
    const __m512i lut0 = _mm512_loadu_si512(dec7), lut1 = _mm512_loadu_si512(dec7 + 64);
    const __m512i pack = _mm512_loadu_si512(pack48);
    size_t i = 0;
    for (; m - i >= 64; i += 64, o += 48)
        if (!step64(_mm512_loadu_si512(s + i), lut0, lut1, pack, o, 0xFFFFFFFFFFFFull))
            goto bad;
    if (i < m) {
        size_t left = m - i; /* 4..60 */
        __m512i c = _mm512_mask_loadu_epi8(_mm512_set1_epi8('A'), ((__mmask64)1 << left) - 1, s + i);
        if (!step64(c, lut0, lut1, pack, o, ((__mmask64)1 << (left / 4 * 3)) - 1))
            goto bad;
        i = m;
    }
    _mm256_zeroupper();
    return i;
bad:
    _mm256_zeroupper();
    return BULK_BAD;
}

static const bulk_fn bulk_of[PCB_B64_IMPL_COUNT] = { NULL, bulk_ssse3, bulk_avx2, bulk_avx512vbmi };

/* ---- encoding: SSSE3 ------------------------------------------------------ */

/*
 * 12 bytes to 16 characters per step (Muła & Lemire's SSE encoder): a byte
 * shuffle puts each 3-byte group in a dword as b1 b0 b2 b1, two multiplies
 * move the four 6-bit fields each into its own byte, and the character is
 * the field plus an offset looked up (vpshufb) by the field's range: 0-25
 * 'A', 26-51 'a' - 26, 52-61 '0' - 52, 62 '+' - 62, 63 '/' - 63. Each step
 * reads 16 bytes, so steps run while 16 remain; the scalar code does the rest
 * (and the padding). The store's value AAD (the Base64 of a 53-byte sealed
 * name) is encoded on every get: this is 4 steps instead of 17 table rounds.
 */
T_SSSE3 static size_t encode_ssse3(const uint8_t *in, size_t n, char *out)
{
    size_t i = 0;
    char *o = out;
    const __m128i split = _mm_set_epi8(10, 11, 9, 10, 7, 8, 6, 7, 4, 5, 3, 4, 1, 2, 0, 1);
    const __m128i shift_lut = _mm_setr_epi8('a' - 26, '0' - 52, '0' - 52, '0' - 52, '0' - 52,
                                            '0' - 52, '0' - 52, '0' - 52, '0' - 52, '0' - 52,
                                            '0' - 52, '+' - 62, '/' - 63, 'A', 0, 0);
    for (; n - i >= 16; i += 12, o += 16) {
        __m128i v = _mm_shuffle_epi8(_mm_loadu_si128((const __m128i *)(const void *)(in + i)), split);
        __m128i hi = _mm_mulhi_epu16(_mm_and_si128(v, _mm_set1_epi32(0x0fc0fc00)),
                                     _mm_set1_epi32(0x04000040));
        __m128i lo = _mm_mullo_epi16(_mm_and_si128(v, _mm_set1_epi32(0x003f03f0)),
                                     _mm_set1_epi32(0x01000010));
        __m128i idx = _mm_or_si128(hi, lo); /* one 6-bit field per byte */
        __m128i r = _mm_subs_epu8(idx, _mm_set1_epi8(51));
        r = _mm_or_si128(r, _mm_and_si128(_mm_cmpgt_epi8(_mm_set1_epi8(26), idx), _mm_set1_epi8(13)));
        r = _mm_add_epi8(_mm_shuffle_epi8(shift_lut, r), idx);
        _mm_storeu_si128((__m128i *)(void *)o, r);
    }
    return (size_t)(o - out) + encode_from(in, i, n, o);
}

#else
static const bulk_fn bulk_of[PCB_B64_IMPL_COUNT] = { NULL };
#endif /* PCB_B64_X86 */

/* ---- decoding: dispatch -------------------------------------------------- */

/* 0 until resolved; then bit k set if impl k is available (bit 0 always)
 * and the active impl in bits 8-15. One word, so a reader sees all or
 * nothing; racing first calls compute and store the same value. */
static int g_state;

static int state(void)
{
    int st = __atomic_load_n(&g_state, __ATOMIC_RELAXED);
    if (st != 0)
        return st;
    int avail = 1 << PCB_B64_IMPL_SCALAR;
    unsigned f = pcb_cpu_features();
    if (f & PCB_CPU_SSSE3)
        avail |= 1 << PCB_B64_IMPL_SSSE3;
    if (f & PCB_CPU_AVX2)
        avail |= 1 << PCB_B64_IMPL_AVX2;
    if (f & PCB_CPU_AVX512VBMI)
        avail |= 1 << PCB_B64_IMPL_AVX512VBMI;
    int active = PCB_B64_IMPL_SCALAR;
    const char *force = getenv("PCB_B64_SCALAR");
    if (force == NULL || strcmp(force, "1") != 0) {
        for (int k = PCB_B64_IMPL_COUNT - 1; k > 0; k--) {
            if (avail & (1 << k)) {
                active = k;
                break;
            }
        }
    }
    st = avail | active << 8;
    __atomic_store_n(&g_state, st, __ATOMIC_RELAXED);
    return st;
}

int pcb_b64_impl_available(pcb_b64_impl impl)
{
    return (unsigned)impl < PCB_B64_IMPL_COUNT && (state() & (1 << impl)) != 0;
}

const char *pcb_b64_impl_name(pcb_b64_impl impl)
{
    static const char *const names[PCB_B64_IMPL_COUNT] = { "scalar", "ssse3", "avx2", "avx512vbmi" };
    return (unsigned)impl < PCB_B64_IMPL_COUNT ? names[impl] : "unknown";
}

pcb_b64_impl pcb_b64_active_impl(void)
{
    return (pcb_b64_impl)(state() >> 8);
}

size_t pcb_b64_encode(const uint8_t *in, size_t n, char *out)
{
#if PCB_B64_X86
    if ((state() >> 8) != PCB_B64_IMPL_SCALAR) /* every SIMD level has SSSE3 */
        return encode_ssse3(in, n, out);
#endif
    return encode_from(in, 0, n, out);
}

size_t pcb_b64_encode_scalar(const uint8_t *in, size_t n, char *out)
{
    return encode_from(in, 0, n, out);
}

size_t pcb_b64_decode(const char *in, size_t n, uint8_t *out)
{
    return decode(bulk_of[state() >> 8], in, n, out);
}

size_t pcb_b64_decode_with(pcb_b64_impl impl, const char *in, size_t n, uint8_t *out)
{
    return decode(pcb_b64_impl_available(impl) ? bulk_of[impl] : NULL, in, n, out);
}
