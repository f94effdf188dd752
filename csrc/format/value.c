/*
 * format/value.c — ESP's value serialization (see value.h).
 */
#include "format/value.h"

#include <stdlib.h>
#include <string.h>

#include "common/bytes.h"

int pcb_value_next_run(const uint8_t *v, size_t vl, size_t *off, const uint8_t **run,
                       size_t *len)
{
    if (*off >= vl)
        return 0;
    if (vl - *off < 4 || pcb_load_be32(v + *off) > vl - *off - 4)
        return -1;
    *len = pcb_load_be32(v + *off);
    *run = v + *off + 4;
    *off += 4 + *len;
    return 1;
}

int pcb_value_parse(const uint8_t *v, size_t vl, pcb_value *out)
{
    memset(out, 0, sizeof *out);
    if (vl < 4)
        return 0;
    const uint32_t type = pcb_load_be32(v);
    const uint8_t *p = v + 4;
    const size_t n = vl - 4;
    out->type = (pcb_pref_type)type;
    switch (type) {
    case PCB_PREF_STRING:
        if (n < 4 || pcb_load_be32(p) != n - 4)
            return 0;
        out->text = p + 4;
        out->text_len = n - 4;
        return 1;
    case PCB_PREF_STRING_SET: {
        const uint8_t *run;
        size_t off = 4, len;
        int rc;
        while ((rc = pcb_value_next_run(v, vl, &off, &run, &len)) == 1)
            out->n_members++;
        return rc == 0;
    }
    case PCB_PREF_INT:
        if (n != 4)
            return 0;
        out->i = (int32_t)pcb_load_be32(p);
        return 1;
    case PCB_PREF_LONG:
        if (n != 8)
            return 0;
        out->i = (int64_t)pcb_load_be64(p);
        return 1;
    case PCB_PREF_FLOAT: {
        if (n != 4)
            return 0;
        uint32_t bits = pcb_load_be32(p);
        memcpy(&out->f, &bits, 4);
        return 1;
    }
    case PCB_PREF_BOOLEAN:
        if (n != 1 || p[0] > 1)
            return 0;
        out->b = p[0];
        return 1;
    default:
        return 0;
    }
}

/* 1 if p[0..n) is valid UTF-8 (strict: shortest forms, no surrogates, at
 * most U+10FFFF). */
static int utf8_valid(const uint8_t *p, size_t n)
{
    size_t i = 0;
    while (i < n) {
        while (i + 8 <= n) { /* ASCII eight bytes at a time */
            uint64_t w;
            memcpy(&w, p + i, 8);
            if (w & 0x8080808080808080ULL)
                break;
            i += 8;
        }
        if (i >= n)
            break;
        uint8_t c = p[i];
        if (c < 0x80) {
            i++;
            continue;
        }
        size_t k = c >= 0xc2 && c <= 0xdf ? 1 : c >= 0xe0 && c <= 0xef ? 2
                 : c >= 0xf0 && c <= 0xf4 ? 3 : 0;
        if (k == 0 || n - i <= k)
            return 0;
        uint8_t lo = 0x80, hi = 0xbf; /* the second byte's range */
        if (c == 0xe0)
            lo = 0xa0; /* overlong */
        else if (c == 0xed)
            hi = 0x9f; /* surrogates */
        else if (c == 0xf0)
            lo = 0x90; /* overlong */
        else if (c == 0xf4)
            hi = 0x8f; /* past U+10FFFF */
        if (p[i + 1] < lo || p[i + 1] > hi)
            return 0;
        for (size_t j = 2; j <= k; j++)
            if ((p[i + j] & 0xc0) != 0x80)
                return 0;
        i += k + 1;
    }
    return 1;
}

int pcb_value_check(const uint8_t *v, size_t vl)
{
    pcb_value x;
    if (!pcb_value_parse(v, vl, &x))
        return 0;
    if (x.type == PCB_PREF_STRING)
        return utf8_valid(x.text, x.text_len);
    if (x.type == PCB_PREF_STRING_SET) {
        const uint8_t *run;
        size_t off = 4, len;
        while (pcb_value_next_run(v, vl, &off, &run, &len) == 1)
            if (!utf8_valid(run, len))
                return 0;
    }
    return 1;
}

int pcb_value_has_nul(const uint8_t *v, size_t vl)
{
    if (vl < 4)
        return 0;
    uint32_t type = pcb_load_be32(v);
    if (type != PCB_PREF_STRING && type != PCB_PREF_STRING_SET)
        return 0;
    const uint8_t *run;
    size_t off = 4, len;
    while (pcb_value_next_run(v, vl, &off, &run, &len) == 1)
        if (memchr(run, 0, len) != NULL)
            return 1;
    return 0;
}

static void put_be32(pcb_buf *b, uint32_t v)
{
    uint8_t x[4];
    pcb_store_be32(x, v);
    pcb_buf_append(b, (const char *)x, 4);
}

void pcb_value_begin(pcb_buf *b, pcb_pref_type type)
{
    b->len = 0;
    put_be32(b, (uint32_t)type);
}

void pcb_value_put_run(pcb_buf *b, const char *s, size_t n)
{
    put_be32(b, (uint32_t)n);
    pcb_buf_append(b, s, n);
}

void pcb_value_put_int(pcb_buf *b, int32_t v) { put_be32(b, (uint32_t)v); }

void pcb_value_put_long(pcb_buf *b, int64_t v)
{
    put_be32(b, (uint32_t)((uint64_t)v >> 32));
    put_be32(b, (uint32_t)v);
}

void pcb_value_put_float(pcb_buf *b, float v)
{
    uint32_t bits;
    memcpy(&bits, &v, 4);
    put_be32(b, bits);
}

void pcb_value_put_bool(pcb_buf *b, int v)
{
    char x = v ? 1 : 0;
    pcb_buf_append(b, &x, 1);
}

void pcb_value_from_entry(pcb_buf *b, const pcb_pref_entry *e)
{
    pcb_value_begin(b, e->type);
    switch (e->type) {
    case PCB_PREF_STRING:
        pcb_value_put_run(b, e->text, e->text_len);
        break;
    case PCB_PREF_STRING_SET:
        for (size_t i = 0; i < e->n_members; i++)
            pcb_value_put_run(b, e->members[i], e->member_lens[i]);
        break;
    case PCB_PREF_INT:
        pcb_value_put_int(b, (int32_t)e->i);
        break;
    case PCB_PREF_LONG:
        pcb_value_put_long(b, e->i);
        break;
    case PCB_PREF_FLOAT:
        pcb_value_put_float(b, e->f);
        break;
    case PCB_PREF_BOOLEAN:
        pcb_value_put_bool(b, e->b);
        break;
    }
}

/* A string set's members as the XML writer takes them. */
static void set_to_xml(pcb_buf *b, const char *name, size_t nl, const uint8_t *v, size_t vl,
                       size_t count)
{
    const uint8_t *run;
    size_t off = 4, len;
    const char **members = malloc((count ? count : 1) * sizeof *members);
    size_t *lens = malloc((count ? count : 1) * sizeof *lens);
    if (members == NULL || lens == NULL) {
        b->failed = 1;
    } else {
        for (size_t i = 0; pcb_value_next_run(v, vl, &off, &run, &len) == 1; i++) {
            members[i] = (const char *)run;
            lens[i] = len;
        }
        pcb_prefs_set(b, name, nl, count, members, lens);
    }
    free(members);
    free(lens);
}

int pcb_value_to_xml(pcb_buf *b, const char *name, size_t nl, const uint8_t *v, size_t vl)
{
    pcb_value x;
    if (!pcb_value_parse(v, vl, &x))
        return 0;
    switch (x.type) {
    case PCB_PREF_STRING:
        pcb_prefs_string(b, name, nl, (const char *)x.text, x.text_len);
        break;
    case PCB_PREF_INT:
        pcb_prefs_int(b, name, nl, (int32_t)x.i);
        break;
    case PCB_PREF_LONG:
        pcb_prefs_long(b, name, nl, x.i);
        break;
    case PCB_PREF_FLOAT:
        pcb_prefs_float(b, name, nl, x.f);
        break;
    case PCB_PREF_BOOLEAN:
        pcb_prefs_boolean(b, name, nl, x.b);
        break;
    case PCB_PREF_STRING_SET:
        set_to_xml(b, name, nl, v, vl, x.n_members);
        break;
    }
    return 1;
}
