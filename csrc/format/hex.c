/*
 * format/hex.c — see hex.h.
 */
#include "format/hex.h"

void pcb_hex_encode(const uint8_t *in, size_t n, char *out)
{
    static const char digits[] = "0123456789abcdef";
    for (size_t i = 0; i < n; i++) {
        out[2 * i] = digits[in[i] >> 4];
        out[2 * i + 1] = digits[in[i] & 15];
    }
}

/* Hex digit values (both cases); 0 for anything else. */
static const uint8_t hex_value[256] = {
    ['0'] = 0, ['1'] = 1, ['2'] = 2, ['3'] = 3, ['4'] = 4, ['5'] = 5, ['6'] = 6, ['7'] = 7,
    ['8'] = 8, ['9'] = 9, ['a'] = 10, ['b'] = 11, ['c'] = 12, ['d'] = 13, ['e'] = 14,
    ['f'] = 15, ['A'] = 10, ['B'] = 11, ['C'] = 12, ['D'] = 13, ['E'] = 14, ['F'] = 15,
};

/* A table lookup per digit: the keysets are decoded at every open. */
int pcb_hex_decode(const char *in, size_t n, uint8_t *out)
{
    unsigned bad = 0;
    if (n % 2)
        return 0;
    for (size_t i = 0; i < n; i += 2) {
        unsigned char c0 = (unsigned char)in[i], c1 = (unsigned char)in[i + 1];
        unsigned hi = hex_value[c0], lo = hex_value[c1];
        /* a 0 entry is a digit only for '0' */
        bad |= (hi == 0 && c0 != '0') | (lo == 0 && c1 != '0');
        out[i / 2] = (uint8_t)(hi << 4 | lo);
    }
    return !bad;
}
