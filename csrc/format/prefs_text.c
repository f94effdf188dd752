/*
 * format/prefs_text.c — the Java number text of SharedPreferences files (see
 * prefs_text.h).
 *
 * Numbers: int/long are Java's parseInt/parseLong syntax ([+-]?[0-9]+, range
 * checked without overflow). Floats accept the decimal syntax Java writes
 * (and the usual variations: "1", ".5", "5.", "1e5", a leading '+'), "NaN"
 * and "Infinity" with an optional sign; no hex floats, suffixes or spaces.
 * The value is converted by strtof() on a rebuilt string of digits and an
 * exponent without a radix character, which makes the conversion
 * independent of the C locale while keeping glibc's correct rounding.
 */
#include "format/prefs_text.h"

#include <float.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int is_digit(unsigned char c) { return c >= '0' && c <= '9'; }

/* Decimal digits of v (no sign) written backwards from end; returns start. */
static char *utoa_rev(uint64_t v, char *end)
{
    do {
        *--end = (char)('0' + v % 10);
        v /= 10;
    } while (v != 0);
    return end;
}

/* Writes v in decimal to out (at least 21 bytes); returns the length. */
size_t pcb_i64_to_str(int64_t v, char *out)
{
    char tmp[24], *e = tmp + sizeof tmp, *s;
    uint64_t u = v < 0 ? (uint64_t)0 - (uint64_t)v : (uint64_t)v;
    s = utoa_rev(u, e);
    if (v < 0)
        *--s = '-';
    size_t n = (size_t)(e - s);
    memcpy(out, s, n);
    return n;
}

/* Java's Integer/Long.parseLong syntax: [+-]?[0-9]+, magnitude at most
 * neg_max for negatives and pos_max for the others. */
int pcb_parse_java_int(const char *s, size_t n, uint64_t pos_max, uint64_t neg_max, int64_t *out)
{
    size_t i = 0;
    int neg = 0;
    if (n > 0 && (s[0] == '+' || s[0] == '-')) {
        neg = s[0] == '-';
        i = 1;
    }
    if (i == n)
        return -1;
    uint64_t lim = neg ? neg_max : pos_max, acc = 0;
    for (; i < n; i++) {
        unsigned char c = (unsigned char)s[i];
        if (!is_digit(c))
            return -1;
        uint64_t dgt = (uint64_t)(c - '0');
        if (acc > (lim - dgt) / 10)
            return -1;
        acc = acc * 10 + dgt;
    }
    if (neg)
        *out = acc == ((uint64_t)1 << 63) ? INT64_MIN : -(int64_t)acc;
    else
        *out = (int64_t)acc;
    return 0;
}

#define FLT_KEEP_DIGITS 200 /* more than any float rounding decision needs */

/*
 * Float.parseFloat for the syntax described at the top. Digits beyond the
 * 200th are folded into one sticky '1' (exactness of the rounding decision
 * only needs ~112 significant digits), values certainly out of range become
 * +-inf / +-0, and the rest goes to strtof() as "[-]DIGITSe[-]EXP".
 * (Long on purpose: one left-to-right pass over the grammar whose state --
 * sign, digit buffer, exponent -- every step shares; split, it would pass
 * that state around without being any easier to check.)
 */
int pcb_parse_java_float(const char *s, size_t n, float *out)
{
    size_t i = 0;
    int neg = 0;
    if (n > 0 && (s[0] == '+' || s[0] == '-')) {
        neg = s[0] == '-';
        i = 1;
    }
    if (n - i == 3 && memcmp(s + i, "NaN", 3) == 0) {
        *out = NAN;
        return 0;
    }
    if (n - i == 8 && memcmp(s + i, "Infinity", 8) == 0) {
        *out = neg ? -INFINITY : INFINITY;
        return 0;
    }
    char buf[FLT_KEEP_DIGITS + 48];
    size_t bl = 0, nd = 0;
    int seen_digit = 0, seen_nonzero = 0, sticky = 0;
    int64_t adj = 0; /* value = DIGITS * 10^(exp + adj) */
    if (neg)
        buf[bl++] = '-';
    for (int frac = 0; frac < 2; frac++) {
        if (frac) {
            if (i < n && s[i] == '.')
                i++;
            else
                break;
        }
        for (; i < n && is_digit((unsigned char)s[i]); i++) {
            char c = s[i];
            seen_digit = 1;
            if (c == '0' && !seen_nonzero) {
                if (frac)
                    adj--;
                continue;
            }
            seen_nonzero = 1;
            if (nd < FLT_KEEP_DIGITS) {
                buf[bl++] = c;
                nd++;
                if (frac)
                    adj--;
            } else {
                if (c != '0')
                    sticky = 1;
                if (!frac)
                    adj++;
            }
        }
    }
    if (!seen_digit)
        return -1;
    int64_t e = 0;
    if (i < n && (s[i] == 'e' || s[i] == 'E')) {
        int eneg = 0;
        i++;
        if (i < n && (s[i] == '+' || s[i] == '-')) {
            eneg = s[i] == '-';
            i++;
        }
        if (i >= n || !is_digit((unsigned char)s[i]))
            return -1;
        for (; i < n && is_digit((unsigned char)s[i]); i++)
            if (e < 1000000000000000LL) /* saturate: far beyond any float */
                e = e * 10 + (s[i] - '0');
        if (eneg)
            e = -e;
    }
    if (i != n)
        return -1;
    if (!seen_nonzero) {
        *out = neg ? -0.0f : 0.0f;
        return 0;
    }
    if (sticky) {
        buf[bl++] = '1';
        nd++;
        adj--;
    }
    int64_t ex = e + adj, mag = ex + (int64_t)nd; /* value < 10^mag, >= 10^(mag-1) */
    if (mag > 40) {
        *out = neg ? -INFINITY : INFINITY;
        return 0;
    }
    if (mag < -46) {
        *out = neg ? -0.0f : 0.0f;
        return 0;
    }
    buf[bl++] = 'e';
    bl += pcb_i64_to_str(ex, buf + bl); /* |ex| <= 250 here */
    buf[bl] = '\0';
    char *end;
    float f = strtof(buf, &end);
    if (end != buf + bl)
        return -1; /* cannot happen: the syntax was checked */
    *out = f;
    return 0;
}

/* Digits and decimal exponent of the shortest decimal (>= 2 digits, as Java
 * prints "1.4E-45" for the smallest subnormal) that parses back to a (a
 * finite positive float). Returns the digit count (trailing zeros stripped). */
static size_t shortest_digits(float a, char dig[12], int *exp10)
{
    /* For normal floats no decimal of 2..6 digits can be closer than the
     * correctly rounded 6-digit one (the 6-digit grid is coarser than float
     * spacing), so start at 6; subnormals are coarser and start at 2. */
    int p = a < FLT_MIN ? 2 : 6;
    size_t nd = 0;
    int x = 0;
    for (; p <= 9; p++) {
        char tmp[64], chk[40];
        snprintf(tmp, sizeof tmp, "%.*e", p - 1, (double)a);
        /* Locale-proof extraction: digits up to 'e' (whatever the radix
         * character is), then the exponent. */
        const char *t = tmp;
        nd = 0;
        for (; *t && *t != 'e'; t++)
            if (is_digit((unsigned char)*t) && nd < 9)
                dig[nd++] = *t;
        x = 0;
        if (*t == 'e') {
            int xneg = 0;
            t++;
            if (*t == '+' || *t == '-')
                xneg = *t++ == '-';
            for (; is_digit((unsigned char)*t); t++)
                x = x * 10 + (*t - '0');
            if (xneg)
                x = -x;
        }
        memcpy(chk, dig, nd);
        size_t cl = nd;
        chk[cl++] = 'e';
        cl += pcb_i64_to_str((int64_t)x - (int64_t)(nd - 1), chk + cl);
        float back;
        if (pcb_parse_java_float(chk, cl, &back) == 0 && back == a)
            break;
    }
    while (nd > 1 && dig[nd - 1] == '0')
        nd--;
    *exp10 = x;
    return nd;
}

/* Float.toString: "NaN", "Infinity", "-0.0", plain notation for
 * 1e-3 <= |v| < 1e7 ("0.001", "1234567.0"), else "1.0E10" / "1.4E-45".
 * out needs 32 bytes. Returns the length. */
size_t pcb_format_java_float(float v, char *out)
{
    size_t o = 0;
    if (isnan(v)) {
        memcpy(out, "NaN", 3);
        return 3;
    }
    if (signbit(v))
        out[o++] = '-';
    if (isinf(v)) {
        memcpy(out + o, "Infinity", 8);
        return o + 8;
    }
    if (v == 0.0f) {
        memcpy(out + o, "0.0", 3);
        return o + 3;
    }
    char dig[12];
    int x;
    size_t nd = shortest_digits(fabsf(v), dig, &x);
    if (x >= -3 && x < 7) {
        if (x >= 0) {
            for (size_t k = 0; k <= (size_t)x; k++)
                out[o++] = k < nd ? dig[k] : '0';
            out[o++] = '.';
            if ((size_t)x + 1 < nd) {
                memcpy(out + o, dig + x + 1, nd - (size_t)x - 1);
                o += nd - (size_t)x - 1;
            } else {
                out[o++] = '0';
            }
        } else {
            out[o++] = '0';
            out[o++] = '.';
            for (int k = 0; k < -x - 1; k++)
                out[o++] = '0';
            memcpy(out + o, dig, nd);
            o += nd;
        }
    } else {
        out[o++] = dig[0];
        out[o++] = '.';
        if (nd > 1) {
            memcpy(out + o, dig + 1, nd - 1);
            o += nd - 1;
        } else {
            out[o++] = '0';
        }
        out[o++] = 'E';
        o += pcb_i64_to_str(x, out + o);
    }
    return o;
}

