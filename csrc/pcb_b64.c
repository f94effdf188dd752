/*
 * pcb_b64.c — standard Base64 with strict decoding (see pcb_b64.h).
 *
 * Encoding works on 3-byte groups through a 4096-entry table of character
 * pairs (one lookup per 12 bits). Decoding reads 4 characters at a time
 * through four pre-shifted tables whose entries for characters outside the
 * alphabet have bit 31 set, so one OR of the four lookups both assembles the
 * 24 bits and flags any bad character. The tables are built at compile time
 * by macros: no mutable state, no initialisation call.
 */
#include "pcb_b64.h"

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

size_t pcb_b64_encode(const uint8_t *in, size_t n, char *out)
{
    size_t i = 0;
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

/* ---- decoding ------------------------------------------------------------ */

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

size_t pcb_b64_decode(const char *in, size_t n, uint8_t *out)
{
    const unsigned char *s = (const unsigned char *)in;
    uint8_t *o = out;
    if (n % 4 != 0)
        return (size_t)-1;
    if (n == 0)
        return 0;
    size_t full = n - 4; /* the last quad may carry padding */
    for (size_t i = 0; i < full; i += 4) {
        uint32_t v = d0[s[i]] | d1[s[i + 1]] | d2[s[i + 2]] | d3[s[i + 3]];
        if (v & BAD)
            return (size_t)-1;
        o[0] = (uint8_t)(v >> 16);
        o[1] = (uint8_t)(v >> 8);
        o[2] = (uint8_t)v;
        o += 3;
    }
    s += full;
    if (s[3] != '=') {
        uint32_t v = d0[s[0]] | d1[s[1]] | d2[s[2]] | d3[s[3]];
        if (v & BAD)
            return (size_t)-1;
        o[0] = (uint8_t)(v >> 16);
        o[1] = (uint8_t)(v >> 8);
        o[2] = (uint8_t)v;
        o += 3;
    } else if (s[2] != '=') {
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
