/*
 * fuzz_b64.c — differential libFuzzer target for pcb_b64_decode: every
 * decoder implementation this CPU runs (scalar, SSSE3, AVX2, AVX-512 VBMI,
 * see pcb_b64.h) against a plain reference decoder written here, one
 * character at a time with no tables, from RFC 4648's rules plus the strict
 * ones of pcb_b64.h.
 *
 * Input layout: byte [0] picks how the Base64 text is made from the rest:
 *   mode 0  the rest as text, as is (any length, any bytes)
 *   mode 1  the rest as text, cut to a multiple of 4
 *   mode 2  the rest mapped to mostly alphabet characters (bytes < 0xF0), the
 *           others to '=' or characters at the alphabet's edges ('@' '['
 *           '`' '{' ':' '.' ',' ...), cut to a multiple of 4: long texts
 *           that are nearly valid, with bad characters and padding anywhere
 *   mode 3  pcb_b64_encode of the rest (must decode back to the rest)
 *   mode 4+ pcb_b64_encode of input[4..], then the character at position
 *           input[1..2] (big-endian, mod the length) replaced by input[3]
 *
 * Properties (abort() on violation):
 *   - every available implementation, and pcb_b64_decode itself, returns
 *     what the reference returns, and on success the same bytes;
 *   - text the reference accepts is the encoding of what it decodes to
 *     (checks the reference against the encoder);
 *   - mode 3 decodes to exactly the encoded bytes.
 * The text is an exact-size malloc'ed copy (no NUL, no slack) and each
 * output buffer exactly pcb_b64_decoded_max(n) bytes, so any read past the
 * text or write past the bound is an ASan report.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "format/b64.h"

#define DIE(...)                                                           \
    do {                                                                   \
        fprintf(stderr, "fuzz_b64: PROPERTY VIOLATED: " __VA_ARGS__);      \
        fputc('\n', stderr);                                               \
        abort();                                                           \
    } while (0)

#define FAIL ((size_t)-1)
#define SIGNED(r) ((r) == FAIL ? -1LL : (long long)(r))

/* ------------------------------------------------------------ reference */

static int ref_value(unsigned char c)
{
    if (c >= 'A' && c <= 'Z')
        return c - 'A';
    if (c >= 'a' && c <= 'z')
        return c - 'a' + 26;
    if (c >= '0' && c <= '9')
        return c - '0' + 52;
    if (c == '+')
        return 62;
    if (c == '/')
        return 63;
    return -1;
}

/* Bit accumulator over the characters before the padding; the bits left
 * over at the end (2 after "xxx=", 4 after "xx==") must be zero. */
static size_t ref_decode(const unsigned char *s, size_t n, uint8_t *out)
{
    if (n % 4 != 0)
        return FAIL;
    size_t pad = 0;
    if (n > 0 && s[n - 1] == '=')
        pad = s[n - 2] == '=' ? 2 : 1;
    uint32_t acc = 0;
    unsigned bits = 0;
    size_t len = 0;
    for (size_t i = 0; i < n - pad; i++) {
        int v = ref_value(s[i]);
        if (v < 0)
            return FAIL; /* includes '=' anywhere but the padding */
        acc = acc << 6 | (uint32_t)v;
        bits += 6;
        if (bits >= 8) {
            bits -= 8;
            out[len++] = (uint8_t)(acc >> bits);
            acc &= (1u << bits) - 1;
        }
    }
    return acc == 0 ? len : FAIL;
}

/* ----------------------------------------------------------------- check */

static const char alphabet[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
/* Mode 2's bad characters: '=', NUL, bytes >= 0x80 and the neighbours of
 * the alphabet's ranges, where a nibble-lookup validator would slip. */
static const unsigned char specials[16] = { '=', '=', '=', 0, 0x80, 0xFF, '@', '[',
                                            '`', '{', ':', '.', ',', '*', '-', '_' };

static void check(const unsigned char *text, size_t n, const uint8_t *expect, size_t expect_len)
{
    /* exact-size copies: ASan sees any access past either bound */
    unsigned char *s = malloc(n ? n : 1);
    size_t cap = pcb_b64_decoded_max(n);
    uint8_t *ref = malloc(cap), *out = malloc(cap);
    if (s == NULL || ref == NULL || out == NULL)
        abort();
    memcpy(s, text, n);

    size_t want = ref_decode(s, n, ref);
    if (want != FAIL) {
        if (want > cap)
            DIE("reference decoded %zu bytes, more than decoded_max %zu", want, cap);
        size_t el = pcb_b64_encoded_len(want);
        char *back = malloc(el ? el : 1);
        if (back == NULL)
            abort();
        if (pcb_b64_encode(ref, want, back) != n || memcmp(back, s, n) != 0)
            DIE("reference accepted %zu characters that are not the encoding of its output", n);
        if (pcb_b64_encode_scalar(ref, want, back) != n || memcmp(back, s, n) != 0)
            DIE("the scalar encoder differs from the active one for %zu bytes", want);
        free(back);
    }
    if (expect != NULL && (want != expect_len || memcmp(ref, expect, expect_len) != 0))
        DIE("reference: decode(encode(x)) != x for %zu bytes", expect_len);

    for (int k = 0; k <= PCB_B64_IMPL_COUNT; k++) {
        const char *name = k < PCB_B64_IMPL_COUNT ? pcb_b64_impl_name((pcb_b64_impl)k) : "pcb_b64_decode";
        if (k < PCB_B64_IMPL_COUNT && !pcb_b64_impl_available((pcb_b64_impl)k))
            continue;
        memset(out, 0xA5, cap);
        size_t got = k < PCB_B64_IMPL_COUNT ? pcb_b64_decode_with((pcb_b64_impl)k, (const char *)s, n, out)
                                            : pcb_b64_decode((const char *)s, n, out);
        if (got != want)
            DIE("%s returned %lld, the reference %lld, for %zu characters '%.*s'", name,
                SIGNED(got), SIGNED(want), n, (int)(n < 300 ? n : 300), (const char *)s);
        if (want != FAIL && memcmp(out, ref, want) != 0) {
            size_t at = 0;
            while (out[at] == ref[at])
                at++;
            DIE("%s: output byte %zu of %zu differs from the reference (%u vs %u), %zu characters",
                name, at, want, out[at], ref[at], n);
        }
    }
    free(out);
    free(ref);
    free(s);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size == 0)
        return 0;
    unsigned mode = data[0];
    const uint8_t *rest = data + 1;
    size_t rn = size - 1;
    if (mode == 0 || mode == 1) {
        check(rest, mode == 1 ? rn & ~(size_t)3 : rn, NULL, 0);
    } else if (mode == 2) {
        size_t n = rn & ~(size_t)3;
        unsigned char *t = malloc(n ? n : 1);
        if (t == NULL)
            abort();
        for (size_t i = 0; i < n; i++)
            t[i] = rest[i] < 0xF0 ? (unsigned char)alphabet[rest[i] & 63] : specials[rest[i] & 15];
        check(t, n, NULL, 0);
        free(t);
    } else {
        size_t pos = 0;
        unsigned char with = 0;
        if (mode > 3) { /* header: position (2 bytes), replacement */
            if (rn < 3)
                return 0;
            pos = (size_t)rest[0] << 8 | rest[1];
            with = rest[2];
            rest += 3;
            rn -= 3;
        }
        size_t n = pcb_b64_encoded_len(rn);
        char *t = malloc(n ? n : 1);
        if (t == NULL)
            abort();
        if (pcb_b64_encode(rest, rn, t) != n)
            DIE("pcb_b64_encode of %zu bytes did not give %zu characters", rn, n);
        if (mode > 3 && n > 0)
            t[pos % n] = (char)with;
        check((const unsigned char *)t, n, mode == 3 ? rest : NULL, rn);
        free(t);
    }
    return 0;
}
