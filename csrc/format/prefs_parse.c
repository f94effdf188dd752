/*
 * format/prefs_parse.c — the strict SharedPreferences XML parser (see
 * prefs_xml.h).
 *
 * Parser design. The grammar is fixed-depth (declaration, <map>, entries, set
 * members), so the parser is a plain loop with no recursion. Character data
 * (text, attribute values, comments) goes through one scanning loop driven by
 * a 256-entry class table per context: ordinary bytes are skipped in a tight
 * loop and copied to the scratch buffer as one run; only '&', CR, attribute
 * whitespace (normalised as XML requires), bytes >= 0x80 (validated as UTF-8
 * in place, no copy break) and forbidden bytes interrupt it. Every string
 * handed to the callback lives in one reusable scratch buffer (so it can be
 * NUL-terminated without touching the input): decoding only ever shrinks the
 * text and every string has at least one delimiter byte in the input, so the
 * scratch never grows beyond the input length plus a small constant.
 * Duplicate names are found with an open-addressing table keyed by SipHash-1-3
 * under a per-call random key (hash flooding cannot make it quadratic); names
 * that decode to their raw bytes are referenced in the input, the others are
 * copied to an arena bounded by the input size. No allocation per entry: all
 * buffers grow by doubling and are reused.
 *
 */
#include "format/prefs_xml.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#if defined(__SSE2__)
#include <emmintrin.h>
#endif
#include <openssl/crypto.h>

#include "format/prefs_names.h"
#include "format/prefs_text.h"

/* ======================================================================== */
/* Parser: character classes                                                */
/* ======================================================================== */

enum {
    K_PLAIN = 0, /* copied as is */
    K_END,       /* terminator of the context ('<', the quote, '-' in comments) */
    K_AMP,       /* '&': entity or character reference */
    K_CR,        /* CR (and CR LF): LF in text, space in attributes */
    K_SPACE,     /* LF or TAB in an attribute value: becomes a space */
    K_UTF8,      /* lead byte of a multi-byte sequence (validated) */
    K_CTRL,      /* control character XML forbids */
    K_RBR,       /* ']' in text: "]]>" is forbidden */
    K_LT         /* '<' in an attribute value */
};

#define BADCTRL(c) ((c) < 0x20 && (c) != '\t' && (c) != '\n' && (c) != '\r')
#define CL_TEXT(c) ((c) == '<' ? K_END : (c) == '&' ? K_AMP : (c) == '\r' ? K_CR : (c) == ']' ? K_RBR \
                    : (c) >= 0x80 ? K_UTF8 : BADCTRL(c) ? K_CTRL : K_PLAIN)
#define CL_ATTR(c, q) ((c) == (q) ? K_END : (c) == '&' ? K_AMP : (c) == '\r' ? K_CR \
                       : ((c) == '\n' || (c) == '\t') ? K_SPACE : (c) == '<' ? K_LT \
                       : (c) >= 0x80 ? K_UTF8 : BADCTRL(c) ? K_CTRL : K_PLAIN)
#define CL_DQ(c) CL_ATTR(c, '"')
#define CL_SQ(c) CL_ATTR(c, '\'')
#define CL_COMMENT(c) ((c) == '-' ? K_END : (c) >= 0x80 ? K_UTF8 : BADCTRL(c) ? K_CTRL : K_PLAIN)
static const unsigned char cls_text[256] = E256(CL_TEXT);
static const unsigned char cls_dq[256] = E256(CL_DQ);
static const unsigned char cls_sq[256] = E256(CL_SQ);
static const unsigned char cls_comment[256] = E256(CL_COMMENT);

/* Length of the valid UTF-8 sequence (2..4 bytes) starting at s, or 0.
 * Rejects overlongs, surrogates and code points above U+10FFFF. */
static size_t utf8_seq(const unsigned char *s, size_t avail)
{
    unsigned c = s[0];
    if (c < 0xC2)
        return 0;
    if (c < 0xE0)
        return avail >= 2 && (s[1] & 0xC0) == 0x80 ? 2 : 0;
    if (c < 0xF0) {
        unsigned lo = c == 0xE0 ? 0xA0 : 0x80, hi = c == 0xED ? 0x9F : 0xBF;
        return avail >= 3 && s[1] >= lo && s[1] <= hi && (s[2] & 0xC0) == 0x80 ? 3 : 0;
    }
    if (c < 0xF5) {
        unsigned lo = c == 0xF0 ? 0x90 : 0x80, hi = c == 0xF4 ? 0x8F : 0xBF;
        return avail >= 4 && s[1] >= lo && s[1] <= hi && (s[2] & 0xC0) == 0x80 && (s[3] & 0xC0) == 0x80
                   ? 4 : 0;
    }
    return 0;
}

/* ======================================================================== */
/* Parser state                                                             */
/* ======================================================================== */

typedef struct {
    const unsigned char *d;
    size_t len, pos;
    char *err;
    size_t err_len;
    /* scratch: the current entry's decoded strings */
    char *scr;
    size_t scr_len, scr_cap, scr_limit;
    /* set members of the current entry */
    const char **mptr;
    size_t *mlen;
    size_t mcap;
    pcb_name_set names; /* names seen so far */
    int check_duplicates;
} parser;

static int fail(parser *p, size_t at, const char *fmt, ...)
{
    if (p->err == NULL || p->err_len == 0)
        return -1;
    if (at > p->len)
        at = p->len;
    size_t line = 1;
    const unsigned char *s = p->d, *e = p->d + at;
    while (s < e && (s = memchr(s, '\n', (size_t)(e - s))) != NULL) {
        line++;
        s++;
    }
    int k = snprintf(p->err, p->err_len, "line %zu, byte %zu: ", line, at);
    if (k >= 0 && (size_t)k < p->err_len) {
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(p->err + k, p->err_len - (size_t)k, fmt, ap);
        va_end(ap);
    }
    return -1;
}

static int oom(parser *p) { return fail(p, p->pos, "out of memory"); }

/* Room for n more scratch bytes. Growth doubles but is capped at scr_limit
 * (input length + a constant), which the content never exceeds. */
static char *scr_room(parser *p, size_t n)
{
    if (n <= p->scr_cap - p->scr_len)
        return p->scr + p->scr_len;
    char *s = pcb_grow_capped(&p->scr, &p->scr_cap, p->scr_len, n, p->scr_limit);
    return s ? s + p->scr_len : NULL;
}

static int scr_put(parser *p, const void *s, size_t n)
{
    if (n == 0)
        return 0;
    char *d = scr_room(p, n);
    if (d == NULL)
        return oom(p);
    memcpy(d, s, n);
    p->scr_len += n;
    return 0;
}

static int scr_byte(parser *p, char c)
{
    if (p->scr_len < p->scr_cap) {
        p->scr[p->scr_len++] = c;
        return 0;
    }
    return scr_put(p, &c, 1);
}

/* Records the name; 1 if seen before, 0 if new, -1 with the error set. */
static int name_add(parser *p, const char *name, size_t len, size_t raw_off, size_t at)
{
    int rc = pcb_name_set_add(&p->names, name, len, raw_off);
    if (rc == -2)
        return fail(p, at, "too many entries");
    return rc == -1 ? oom(p) : rc;
}

/* ======================================================================== */
/* Parser: lexical pieces                                                   */
/* ======================================================================== */

static int is_ws(unsigned char c) { return c == ' ' || c == '\n' || c == '\t' || c == '\r'; }

/* Skips whitespace; returns how many bytes were skipped. */
static size_t skip_ws(parser *p)
{
    size_t start = p->pos;
    while (p->pos < p->len && is_ws(p->d[p->pos]))
        p->pos++;
    return p->pos - start;
}

static int at_str(const parser *p, const char *s, size_t n)
{
    return p->len - p->pos >= n && memcmp(p->d + p->pos, s, n) == 0;
}
#define AT(p, lit) at_str((p), (lit), sizeof(lit) - 1)

/* Appends the character reference or entity at p->d[i] == '&' to the
 * scratch and returns the index after its ';' in *next. */
static int decode_ref(parser *p, size_t i, size_t *next)
{
    static const struct { const char *s; size_t n; char c; } named[] = {
        { "&amp;", 5, '&' }, { "&lt;", 4, '<' }, { "&gt;", 4, '>' },
        { "&quot;", 6, '"' }, { "&apos;", 6, '\'' },
    };
    const unsigned char *d = p->d;
    size_t rem = p->len - i;
    for (size_t k = 0; k < sizeof named / sizeof named[0]; k++) {
        if (rem >= named[k].n && memcmp(d + i, named[k].s, named[k].n) == 0) {
            *next = i + named[k].n;
            return scr_byte(p, named[k].c);
        }
    }
    if (rem < 2 || d[i + 1] != '#')
        return fail(p, i, "unknown entity (only &amp; &lt; &gt; &quot; &apos; and &#N; are allowed)");
    size_t j = i + 2;
    unsigned base = 10;
    if (j < p->len && d[j] == 'x') {
        base = 16;
        j++;
    }
    uint32_t v = 0;
    size_t nd = 0;
    for (; j < p->len; j++, nd++) {
        unsigned c = d[j], dv;
        if (c >= '0' && c <= '9')
            dv = c - '0';
        else if (base == 16 && c >= 'a' && c <= 'f')
            dv = c - 'a' + 10;
        else if (base == 16 && c >= 'A' && c <= 'F')
            dv = c - 'A' + 10;
        else
            break;
        v = v * base + dv; /* v <= 0x10FFFF before: no overflow */
        if (v > 0x10FFFF)
            return fail(p, i, "character reference above U+10FFFF");
    }
    if (nd == 0 || j >= p->len || d[j] != ';')
        return fail(p, i, "malformed character reference");
    if (v == 0)
        return fail(p, i, "character reference to U+0000");
    if (v >= 0xD800 && v <= 0xDFFF)
        return fail(p, i, "character reference to a surrogate");
    char u[4];
    size_t n;
    if (v < 0x80) {
        u[0] = (char)v;
        n = 1;
    } else if (v < 0x800) {
        u[0] = (char)(0xC0 | v >> 6);
        u[1] = (char)(0x80 | (v & 0x3F));
        n = 2;
    } else if (v < 0x10000) {
        u[0] = (char)(0xE0 | v >> 12);
        u[1] = (char)(0x80 | (v >> 6 & 0x3F));
        u[2] = (char)(0x80 | (v & 0x3F));
        n = 3;
    } else {
        u[0] = (char)(0xF0 | v >> 18);
        u[1] = (char)(0x80 | (v >> 12 & 0x3F));
        u[2] = (char)(0x80 | (v >> 6 & 0x3F));
        u[3] = (char)(0x80 | (v & 0x3F));
        n = 4;
    }
    *next = j + 1;
    return scr_put(p, u, n);
}

/*
 * Decodes character data from p->pos up to the context's terminator (cls:
 * cls_text, cls_dq or cls_sq), appending it to the scratch. Leaves p->pos on
 * the terminator. *changed is set when the decoded bytes differ from the raw
 * ones (a reference or a normalised line end / whitespace). (One hot loop
 * with its rare cases inline, on purpose: it is most of a load's time.)
 */
static int scan_chars(parser *p, const unsigned char *cls, int *changed)
{
    const unsigned char *d = p->d;
    const size_t len = p->len;
    const char cr_to = cls == cls_text ? '\n' : ' ';
    size_t i = p->pos, run = i;
    for (;;) {
#if defined(__SSE2__)
        /* 16 bytes a step while none can be special in text or attributes:
         * a superset of the non-plain classes (controls, bytes >= 0x80,
         * < & ] and both quotes); the table below decides on a hit. Store
         * files are mostly Base64, which this skips at memory speed. */
        while (len - i >= 16) {
            const __m128i v = _mm_loadu_si128((const __m128i *)(const void *)(d + i));
            __m128i hit = _mm_cmplt_epi8(v, _mm_set1_epi8(0x20)); /* signed: also >= 0x80 */
            hit = _mm_or_si128(hit, _mm_cmpeq_epi8(v, _mm_set1_epi8('<')));
            hit = _mm_or_si128(hit, _mm_cmpeq_epi8(v, _mm_set1_epi8('&')));
            hit = _mm_or_si128(hit, _mm_cmpeq_epi8(v, _mm_set1_epi8(']')));
            hit = _mm_or_si128(hit, _mm_cmpeq_epi8(v, _mm_set1_epi8('"')));
            hit = _mm_or_si128(hit, _mm_cmpeq_epi8(v, _mm_set1_epi8('\'')));
            unsigned mask = (unsigned)_mm_movemask_epi8(hit);
            if (mask != 0) {
                i += (size_t)__builtin_ctz(mask);
                break;
            }
            i += 16;
        }
#endif
        while (len - i >= 4) {
            if (cls[d[i]]) break;
            if (cls[d[i + 1]]) { i += 1; break; }
            if (cls[d[i + 2]]) { i += 2; break; }
            if (cls[d[i + 3]]) { i += 3; break; }
            i += 4;
        }
        while (i < len && cls[d[i]] == K_PLAIN)
            i++;
        if (i >= len)
            return fail(p, len, cls == cls_text ? "unexpected end of file in text"
                                                : "unexpected end of file in attribute value");
        switch (cls[d[i]]) {
        case K_END:
            p->pos = i;
            return scr_put(p, d + run, i - run);
        case K_UTF8: {
            size_t n = utf8_seq(d + i, len - i);
            if (n == 0)
                return fail(p, i, "invalid UTF-8");
            i += n;
            continue;
        }
        case K_RBR:
            if (len - i >= 3 && d[i + 1] == ']' && d[i + 2] == '>')
                return fail(p, i, "']]>' is not allowed in text");
            i++;
            continue;
        case K_AMP:
            if (scr_put(p, d + run, i - run) != 0 || decode_ref(p, i, &i) != 0)
                return -1;
            break;
        case K_CR:
            if (scr_put(p, d + run, i - run) != 0 || scr_byte(p, cr_to) != 0)
                return -1;
            i++;
            if (i < len && d[i] == '\n')
                i++;
            break;
        case K_SPACE:
            if (scr_put(p, d + run, i - run) != 0 || scr_byte(p, ' ') != 0)
                return -1;
            i++;
            break;
        case K_LT:
            return fail(p, i, "'<' is not allowed in an attribute value");
        default: /* K_CTRL */
            return fail(p, i, "control character 0x%02X is not allowed", (unsigned)d[i]);
        }
        *changed = 1;
        run = i;
    }
}

/* At "<!--": skips the comment (contents validated, no "--" inside). */
static int skip_comment(parser *p)
{
    const unsigned char *d = p->d;
    const size_t len = p->len, start = p->pos;
    size_t i = start + 4;
    for (;;) {
        while (i < len && cls_comment[d[i]] == K_PLAIN)
            i++;
        if (i >= len)
            return fail(p, start, "unterminated comment");
        switch (cls_comment[d[i]]) {
        case K_END: /* '-' */
            if (len - i >= 2 && d[i + 1] == '-') {
                if (len - i >= 3 && d[i + 2] == '>') {
                    p->pos = i + 3;
                    return 0;
                }
                return fail(p, i, "'--' is not allowed inside a comment");
            }
            i++;
            break;
        case K_UTF8: {
            size_t n = utf8_seq(d + i, len - i);
            if (n == 0)
                return fail(p, i, "invalid UTF-8");
            i += n;
            break;
        }
        default:
            return fail(p, i, "control character 0x%02X is not allowed", (unsigned)d[i]);
        }
    }
}

/* Skips whitespace and comments. Stops at anything else (or the end). */
static int skip_misc(parser *p)
{
    for (;;) {
        skip_ws(p);
        if (AT(p, "<!--")) {
            if (skip_comment(p) != 0)
                return -1;
            continue;
        }
        return 0;
    }
}

enum { EL_UNKNOWN = -1, EL_STRING = 0, EL_SET, EL_INT, EL_LONG, EL_FLOAT, EL_BOOLEAN, EL_MAP };
static const char *const el_names[] = { "string", "set", "int", "long", "float", "boolean", "map" };

static int is_name_byte(unsigned char c)
{
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' ||
           c == ':' || c == '-' || c == '.' || c >= 0x80;
}

/* Reads an element name at p->pos (just after '<' or '</'). */
static int read_element(parser *p)
{
    size_t start = p->pos;
    while (p->pos < p->len && is_name_byte(p->d[p->pos]))
        p->pos++;
    size_t n = p->pos - start;
    for (int k = 0; k < (int)(sizeof el_names / sizeof el_names[0]); k++)
        if (strlen(el_names[k]) == n && memcmp(p->d + start, el_names[k], n) == 0)
            return k;
    return EL_UNKNOWN;
}

/* Error for an unknown element starting at `at` (its name after '<'). */
static int fail_element(parser *p, size_t at, const char *where)
{
    size_t n = 0;
    while (at + n < p->len && n < 32 && is_name_byte(p->d[at + n]) && p->d[at + n] < 0x80)
        n++;
    if (n == 0)
        return fail(p, at, "expected an element name %s", where);
    return fail(p, at, "unexpected element <%.*s> %s", (int)n, (const char *)p->d + at, where);
}

/* After "</": the name must be el, then optional whitespace and '>'. */
static int end_tag(parser *p, int el)
{
    size_t at = p->pos;
    if (read_element(p) != el)
        return fail(p, at, "expected </%s>", el_names[el]);
    skip_ws(p);
    if (p->pos >= p->len || p->d[p->pos] != '>')
        return fail(p, p->pos, "expected '>' to end </%s>", el_names[el]);
    p->pos++;
    return 0;
}

enum { AT_NAME = 1, AT_VALUE = 2 };

typedef struct {
    int have;
    size_t name_off, name_len, name_raw; /* name_raw: input offset, or SIZE_MAX if decoded != raw */
    size_t value_off, value_len, value_at;
} attrs;

/* Parses the attributes of element el (allowed: mask of AT_*), decoding the
 * values into the scratch (NUL-terminated). Returns 1 for "/>", 0 for ">". */
static int parse_attrs(parser *p, int el, int allowed, attrs *a)
{
    const unsigned char *d = p->d;
    a->have = 0;
    for (;;) {
        size_t ws = skip_ws(p);
        if (p->pos >= p->len)
            return fail(p, p->pos, "unexpected end of file in <%s> tag", el_names[el]);
        unsigned char c = d[p->pos];
        if (c == '>') {
            p->pos++;
            return 0;
        }
        if (c == '/') {
            if (p->len - p->pos >= 2 && d[p->pos + 1] == '>') {
                p->pos += 2;
                return 1;
            }
            return fail(p, p->pos, "expected '>' after '/' in <%s> tag", el_names[el]);
        }
        if (ws == 0)
            return fail(p, p->pos, "expected whitespace, '>' or '/>' in <%s> tag", el_names[el]);
        size_t at = p->pos;
        while (p->pos < p->len && is_name_byte(d[p->pos]))
            p->pos++;
        size_t n = p->pos - at;
        int which = (n == 4 && memcmp(d + at, "name", 4) == 0)    ? AT_NAME
                    : (n == 5 && memcmp(d + at, "value", 5) == 0) ? AT_VALUE
                                                                  : 0;
        if (n == 0)
            return fail(p, at, "expected an attribute name in <%s> tag", el_names[el]);
        if ((which & allowed) == 0)
            return fail(p, at, "unexpected attribute in <%s> tag", el_names[el]);
        if (a->have & which)
            return fail(p, at, "duplicate attribute in <%s> tag", el_names[el]);
        skip_ws(p);
        if (p->pos >= p->len || d[p->pos] != '=')
            return fail(p, p->pos, "expected '=' after attribute name");
        p->pos++;
        skip_ws(p);
        if (p->pos >= p->len || (d[p->pos] != '"' && d[p->pos] != '\''))
            return fail(p, p->pos, "expected a quoted attribute value");
        const unsigned char *cls = d[p->pos] == '"' ? cls_dq : cls_sq;
        p->pos++;
        size_t raw = p->pos, off = p->scr_len;
        int changed = 0;
        if (scan_chars(p, cls, &changed) != 0)
            return -1;
        p->pos++; /* the closing quote */
        size_t vlen = p->scr_len - off;
        if (scr_byte(p, '\0') != 0)
            return -1;
        a->have |= which;
        if (which == AT_NAME) {
            a->name_off = off;
            a->name_len = vlen;
            a->name_raw = changed ? SIZE_MAX : raw;
        } else {
            a->value_off = off;
            a->value_len = vlen;
            a->value_at = raw;
        }
    }
}

/* After the '>' of <string>: text (with comments) up to </el>, decoded and
 * NUL-terminated in the scratch. */
static int text_content(parser *p, int el)
{
    int changed = 0;
    for (;;) {
        if (scan_chars(p, cls_text, &changed) != 0)
            return -1;
        /* at '<' */
        if (AT(p, "<!--")) {
            if (skip_comment(p) != 0)
                return -1;
            continue;
        }
        if (AT(p, "</")) {
            p->pos += 2;
            if (end_tag(p, el) != 0)
                return -1;
            return scr_byte(p, '\0');
        }
        return fail(p, p->pos, "markup is not allowed inside <%s>", el_names[el]);
    }
}

/* After the '>' of a value element: only comments, then </el>. */
static int empty_content(parser *p, int el)
{
    for (;;) {
        if (AT(p, "<!--")) {
            if (skip_comment(p) != 0)
                return -1;
            continue;
        }
        if (AT(p, "</")) {
            p->pos += 2;
            return end_tag(p, el);
        }
        if (p->pos >= p->len)
            return fail(p, p->pos, "unexpected end of file in <%s>", el_names[el]);
        return fail(p, p->pos, "text or markup is not allowed inside <%s>", el_names[el]);
    }
}

/* After the '>' of <set>: <string> members up to </set>. Fills the member
 * arrays (pointers set once the scratch stops moving). */
static int set_content(parser *p, size_t *count)
{
    size_t n = 0;
    for (;;) {
        if (skip_misc(p) != 0)
            return -1;
        if (p->pos >= p->len)
            return fail(p, p->pos, "unexpected end of file in <set>");
        if (p->d[p->pos] != '<')
            return fail(p, p->pos, "text is not allowed inside <set>");
        if (AT(p, "</")) {
            p->pos += 2;
            if (end_tag(p, EL_SET) != 0)
                return -1;
            break;
        }
        size_t at = ++p->pos;
        if (read_element(p) != EL_STRING)
            return fail_element(p, at, "in <set> (only <string>)");
        attrs a;
        int self = parse_attrs(p, EL_STRING, 0, &a);
        if (self < 0)
            return -1;
        size_t off = p->scr_len;
        if (self ? scr_byte(p, '\0') : text_content(p, EL_STRING))
            return -1;
        if (n == p->mcap) {
            size_t cap = p->mcap ? p->mcap * 2 : 64;
            if (cap > SIZE_MAX / sizeof(size_t))
                return oom(p);
            size_t *ml = realloc(p->mlen, cap * sizeof(size_t));
            if (ml == NULL)
                return oom(p);
            p->mlen = ml;
            const char **mp = realloc(p->mptr, cap * sizeof(const char *));
            if (mp == NULL)
                return oom(p);
            p->mptr = mp;
            p->mcap = cap;
        }
        p->mlen[n++] = p->scr_len - off - 1;
    }
    *count = n;
    return 0;
}

/* XML declaration at p->pos ("<?xml" + whitespace): version, then optional
 * encoding (UTF-8) and standalone, in that order. */
static int xml_decl(parser *p)
{
    static const char *const pseudo[] = { "version", "encoding", "standalone" };
    const unsigned char *d = p->d;
    int next = 0; /* index of the first pseudo-attribute still allowed */
    p->pos += 5;
    for (;;) {
        size_t ws = skip_ws(p);
        if (AT(p, "?>")) {
            if (next == 0)
                return fail(p, p->pos, "XML declaration without version");
            p->pos += 2;
            return 0;
        }
        if (p->pos >= p->len)
            return fail(p, p->pos, "unterminated XML declaration");
        if (ws == 0)
            return fail(p, p->pos, "expected whitespace in XML declaration");
        size_t at = p->pos;
        while (p->pos < p->len && is_name_byte(d[p->pos]))
            p->pos++;
        size_t n = p->pos - at;
        int k = next;
        while (k < 3 && !(strlen(pseudo[k]) == n && memcmp(d + at, pseudo[k], n) == 0))
            k++;
        if (k == 3 || (next == 0 && k != 0))
            return fail(p, at, "unexpected attribute in XML declaration");
        next = k + 1;
        skip_ws(p);
        if (p->pos >= p->len || d[p->pos] != '=')
            return fail(p, p->pos, "expected '=' in XML declaration");
        p->pos++;
        skip_ws(p);
        if (p->pos >= p->len || (d[p->pos] != '"' && d[p->pos] != '\''))
            return fail(p, p->pos, "expected a quoted value in XML declaration");
        unsigned char q = d[p->pos++];
        size_t vs = p->pos;
        while (p->pos < p->len && d[p->pos] != q && d[p->pos] >= 0x20 && d[p->pos] < 0x7F)
            p->pos++;
        if (p->pos >= p->len || d[p->pos] != q)
            return fail(p, p->pos, "bad value in XML declaration");
        const char *v = (const char *)d + vs;
        size_t vn = p->pos - vs;
        p->pos++;
        int ok;
        if (k == 0) {
            ok = vn == 3 && memcmp(v, "1.0", 3) == 0;
        } else if (k == 1) {
            static const char utf8[] = "utf-8";
            ok = vn == 5;
            for (size_t j = 0; ok && j < 5; j++)
                ok = (v[j] | (v[j] >= 'A' && v[j] <= 'Z' ? 0x20 : 0)) == utf8[j];
        } else {
            ok = (vn == 3 && memcmp(v, "yes", 3) == 0) || (vn == 2 && memcmp(v, "no", 2) == 0);
        }
        if (!ok)
            return fail(p, vs, "unsupported %s in XML declaration", pseudo[k]);
    }
}

/* One entry element (the '<' and name already read); calls fn. Returns 0,
 * -1 or the callback's non-zero value. */
static int parse_entry(parser *p, int el, size_t at, pcb_pref_entry_fn fn, void *arg)
{
    pcb_pref_entry e;
    attrs a;
    memset(&e, 0, sizeof e);
    p->scr_len = 0;
    int prim = el != EL_STRING && el != EL_SET;
    int self = parse_attrs(p, el, prim ? AT_NAME | AT_VALUE : AT_NAME, &a);
    if (self < 0)
        return -1;
    if (!(a.have & AT_NAME))
        return fail(p, at, "<%s> without a name attribute", el_names[el]);
    if (prim && !(a.have & AT_VALUE))
        return fail(p, at, "<%s> without a value attribute", el_names[el]);
    size_t text_off = p->scr_len, n_members = 0;
    if (el == EL_STRING) {
        e.type = PCB_PREF_STRING;
        if (self ? scr_byte(p, '\0') : text_content(p, EL_STRING))
            return -1;
        e.text_len = p->scr_len - text_off - 1;
    } else if (el == EL_SET) {
        e.type = PCB_PREF_STRING_SET;
        if (!self && set_content(p, &n_members) != 0)
            return -1;
    } else {
        const char *v = p->scr + a.value_off;
        size_t vn = a.value_len;
        int bad;
        if (el == EL_INT) {
            e.type = PCB_PREF_INT;
            bad = pcb_parse_java_int(v, vn, INT32_MAX, (uint64_t)INT32_MAX + 1, &e.i);
        } else if (el == EL_LONG) {
            e.type = PCB_PREF_LONG;
            bad = pcb_parse_java_int(v, vn, INT64_MAX, (uint64_t)INT64_MAX + 1, &e.i);
        } else if (el == EL_FLOAT) {
            e.type = PCB_PREF_FLOAT;
            bad = pcb_parse_java_float(v, vn, &e.f);
        } else {
            e.type = PCB_PREF_BOOLEAN;
            bad = 0;
            if (vn == 4 && memcmp(v, "true", 4) == 0)
                e.b = 1;
            else if (vn == 5 && memcmp(v, "false", 5) == 0)
                e.b = 0;
            else
                bad = -1;
        }
        if (bad)
            return fail(p, a.value_at, "invalid <%s> value", el_names[el]);
        if (!self && empty_content(p, el) != 0)
            return -1;
    }
    const char *name = p->scr + a.name_off;
    int dup = p->check_duplicates ? name_add(p, name, a.name_len, a.name_raw, at) : 0;
    if (dup < 0)
        return -1;
    if (dup)
        return fail(p, a.name_raw != SIZE_MAX ? a.name_raw : at, "duplicate name");
    e.name = name;
    e.name_len = a.name_len;
    if (el == EL_STRING)
        e.text = p->scr + text_off;
    if (el == EL_SET) {
        const char *m = p->scr + text_off;
        for (size_t k = 0; k < n_members; k++) {
            p->mptr[k] = m;
            m += p->mlen[k] + 1;
        }
        e.n_members = n_members;
        e.members = n_members ? p->mptr : NULL;
        e.member_lens = n_members ? p->mlen : NULL;
    }
    return fn(arg, &e);
}

static int parse_doc(parser *p, pcb_pref_entry_fn fn, void *arg)
{
    const unsigned char *d = p->d;
    if (AT(p, "\xEF\xBB\xBF"))
        p->pos = 3;
    if (AT(p, "<?xml") && p->len - p->pos > 5 && is_ws(d[p->pos + 5]))
        if (xml_decl(p) != 0)
            return -1;
    if (skip_misc(p) != 0)
        return -1;
    if (!AT(p, "<map"))
        return fail(p, p->pos, p->pos >= p->len ? "unexpected end of file: expected <map>" : "expected <map>");
    p->pos++;
    size_t at = p->pos;
    if (read_element(p) != EL_MAP)
        return fail(p, at, "expected <map>");
    attrs a;
    int self = parse_attrs(p, EL_MAP, 0, &a);
    if (self < 0)
        return -1;
    while (!self) {
        if (skip_misc(p) != 0)
            return -1;
        if (p->pos >= p->len)
            return fail(p, p->pos, "unexpected end of file: expected </map>");
        if (d[p->pos] != '<')
            return fail(p, p->pos, "text is not allowed inside <map>");
        if (AT(p, "</")) {
            p->pos += 2;
            if (end_tag(p, EL_MAP) != 0)
                return -1;
            break;
        }
        at = ++p->pos;
        int el = read_element(p);
        if (el == EL_UNKNOWN || el == EL_MAP)
            return fail_element(p, at, "in <map>");
        int r = parse_entry(p, el, at - 1, fn, arg);
        if (r != 0)
            return r;
    }
    if (skip_misc(p) != 0)
        return -1;
    if (p->pos != p->len)
        return fail(p, p->pos, "unexpected content after </map>");
    return 0;
}

int pcb_prefs_parse(const char *data, size_t len, pcb_pref_entry_fn fn, void *arg,
                    char *err, size_t err_len)
{
    return pcb_prefs_parse_flags(data, len, 0, fn, arg, err, err_len);
}

int pcb_prefs_parse_flags(const char *data, size_t len, unsigned flags, pcb_pref_entry_fn fn,
                          void *arg, char *err, size_t err_len)
{
    parser p;
    memset(&p, 0, sizeof p);
    p.check_duplicates = !(flags & PCB_PREFS_ALLOW_DUPLICATES);
    p.d = (const unsigned char *)(data != NULL ? data : "");
    p.len = data != NULL ? len : 0;
    p.err = err;
    p.err_len = err_len;
    if (err != NULL && err_len > 0)
        err[0] = '\0';
    p.scr_limit = p.len + 256;
    if (p.len > SIZE_MAX / 8)
        return fail(&p, 0, "input too large");
    if (p.check_duplicates)
        pcb_name_set_init(&p.names, p.d, p.len);
    int r = parse_doc(&p, fn, arg);
    if (p.scr != NULL) {
        OPENSSL_cleanse(p.scr, p.scr_cap);
        free(p.scr);
    }
    pcb_name_set_free(&p.names);
    free(p.mptr);
    free(p.mlen);
    return r;
}

