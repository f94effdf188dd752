/*
 * format/tinkpb.c — Tink's keyset messages in protobuf wire format (see
 * tinkpb.h).
 */
#include "format/tinkpb.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>


enum { WT_VARINT = 0, WT_I64 = 1, WT_LEN = 2, WT_SGROUP = 3, WT_EGROUP = 4, WT_I32 = 5 };

/* ------------------------------------------------------------ type URLs */

int pcb_tinkpb_key_value_field(const char *type_url)
{
    if (strcmp(type_url, PCB_TINK_AES_SIV) == 0 || strcmp(type_url, PCB_TINK_CHACHA) == 0)
        return 2;
    if (strcmp(type_url, PCB_TINK_AES_GCM) == 0)
        return 3;
    return 0;
}

const char *pcb_tinkpb_type_name(const char *type_url)
{
    const char *dot = strrchr(type_url, '.');
    return dot ? dot + 1 : type_url;
}

/* ------------------------------------------------------------- encoding */

static void put_varint(pcb_buf *b, uint64_t v)
{
    char tmp[10];
    size_t n = 0;
    do {
        tmp[n++] = (char)((v & 0x7f) | (v > 0x7f ? 0x80 : 0));
        v >>= 7;
    } while (v);
    pcb_buf_append(b, tmp, n);
}

static void put_uint(pcb_buf *b, unsigned field, uint64_t v)
{
    if (v == 0)
        return; /* proto3: defaults are not written */
    put_varint(b, (uint64_t)field << 3 | WT_VARINT);
    put_varint(b, v);
}

static void put_bytes(pcb_buf *b, unsigned field, const void *p, size_t n)
{
    put_varint(b, (uint64_t)field << 3 | WT_LEN);
    put_varint(b, n);
    pcb_buf_append(b, (const char *)p, n);
}

/* A nested message: its bytes in tmp (then reset). */
static void put_message(pcb_buf *b, unsigned field, pcb_buf *tmp)
{
    put_bytes(b, field, tmp->data ? tmp->data : "", tmp->len);
    if (tmp->failed)
        b->failed = 1;
    tmp->len = 0;
}

static void put_string(pcb_buf *b, unsigned field, const char *s)
{
    size_t n = strlen(s);
    if (n)
        put_bytes(b, field, s, n);
}

int pcb_tinkpb_keyset_encode(const pcb_tink_keyset *k, pcb_buf *out)
{
    pcb_buf key, data, inner;
    int ok = 1;
    pcb_buf_init(&key);
    pcb_buf_init(&data);
    pcb_buf_init(&inner);
    put_uint(out, 1, k->primary_key_id);
    for (size_t i = 0; ok && i < k->n; i++) {
        const pcb_tink_key *e = &k->key[i];
        int kv = pcb_tinkpb_key_value_field(e->type_url);
        if (kv == 0) {
            ok = 0;
            break;
        }
        put_uint(&inner, 1, e->version);
        if (e->key_len)
            put_bytes(&inner, (unsigned)kv, e->key_value, e->key_len);
        put_string(&data, 1, e->type_url);
        put_message(&data, 2, &inner);
        put_uint(&data, 3, e->material);
        put_message(&key, 1, &data);
        put_uint(&key, 2, e->status);
        put_uint(&key, 3, e->key_id);
        put_uint(&key, 4, e->output_prefix);
        put_message(out, 2, &key);
    }
    pcb_buf_free(&key);
    pcb_buf_free(&data);
    pcb_buf_free(&inner);
    return ok && !out->failed;
}

int pcb_tinkpb_encrypted_encode(const uint8_t *ct, size_t ct_len, const pcb_tink_keyset *k,
                                pcb_buf *out)
{
    pcb_buf info, ki;
    pcb_buf_init(&info);
    pcb_buf_init(&ki);
    put_bytes(out, 2, ct_len ? ct : (const uint8_t *)"", ct_len);
    put_uint(&info, 1, k->primary_key_id);
    for (size_t i = 0; i < k->n; i++) {
        const pcb_tink_key *e = &k->key[i];
        put_string(&ki, 1, e->type_url);
        put_uint(&ki, 2, e->status);
        put_uint(&ki, 3, e->key_id);
        put_uint(&ki, 4, e->output_prefix);
        put_message(&info, 2, &ki);
    }
    put_message(out, 3, &info);
    pcb_buf_free(&info);
    pcb_buf_free(&ki);
    return !out->failed;
}

/* ------------------------------------------------------------- decoding */

typedef struct {
    const uint8_t *p, *end;
    char *err;
    size_t cap;
} reader;

typedef struct {
    unsigned field;
    int wt;
    uint64_t v;          /* WT_VARINT */
    const uint8_t *data; /* WT_LEN */
    size_t len;
} field;

/* Where a decoder is, for messages: "Keyset.key[1].key_data". Built on the
 * stack as the decoders descend and formatted only when a message is due
 * (a keyset is decoded at every open). */
typedef struct where {
    const struct where *up;
    const char *name; /* ".key_data", or "Keyset" at the top */
    long index;       /* [index] after name, or -1 */
} where;

static size_t where_str(const where *w, char *out, size_t cap)
{
    size_t n = w->up ? where_str(w->up, out, cap) : 0;
    if (n < cap)
        n += (size_t)snprintf(out + n, cap - n, w->index >= 0 ? "%s[%ld]" : "%s", w->name,
                              w->index);
    return n < cap ? n : cap - 1;
}

static int fail(reader *r, const where *at, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static int fail(reader *r, const where *at, const char *fmt, ...)
{
    va_list ap;
    size_t n = where_str(at, r->err, r->cap);
    n += (size_t)snprintf(r->err + n, r->cap - n, ": ");
    if (n < r->cap) {
        va_start(ap, fmt);
        vsnprintf(r->err + n, r->cap - n, fmt, ap);
        va_end(ap);
    }
    return 0;
}

/* A varint of at most 10 bytes that fits 64 bits. 1, or 0 (err set). */
static int get_varint(reader *r, const where *where, uint64_t *out)
{
    uint64_t v = 0;
    for (int i = 0; i < 10; i++) {
        if (r->p >= r->end)
            return fail(r, where, "a varint runs past the end");
        uint8_t c = *r->p++;
        if (i == 9 && c > 1) /* more bits, or an 11th byte */
            return fail(r, where, "a varint is longer than 10 bytes or overflows 64 bits");
        v |= (uint64_t)(c & 0x7f) << (7 * i);
        if (!(c & 0x80)) {
            *out = v;
            return 1;
        }
    }
    return 0; /* not reached: the 10th byte either ends the varint or fails above */
}

/* The next field: 1, 0 at the end of the message, -1 malformed (err set). */
static int next_field(reader *r, const where *msg, field *f)
{
    uint64_t tag;
    f->data = NULL;
    f->len = 0;
    if (r->p == r->end)
        return 0;
    if (!get_varint(r, msg, &tag))
        return -1;
    f->wt = (int)(tag & 7);
    if (tag >> 3 == 0 || tag >> 3 > 0x1fffffff)
        return fail(r, msg, "field number %llu is out of range", (unsigned long long)(tag >> 3)) - 1;
    f->field = (unsigned)(tag >> 3);
    switch (f->wt) {
    case WT_VARINT:
        return get_varint(r, msg, &f->v) ? 1 : -1;
    case WT_LEN:
        if (!get_varint(r, msg, &f->v))
            return -1;
        if (f->v > (uint64_t)(r->end - r->p))
            return fail(r, msg, "field %u's length %llu runs past the end (%zu bytes left)", f->field, (unsigned long long)f->v, (size_t)(r->end - r->p)) - 1;
        f->data = r->p;
        f->len = (size_t)f->v;
        r->p += f->len;
        return 1;
    default:
        return fail(r, msg, "field %u has wire type %d, which no field of this message has", f->field, f->wt) - 1;
    }
}

/* Field f of msg is known, singular, and of wire type wt: 1, or 0. */
static int expect(reader *r, const where *msg, const field *f, int wt, unsigned *seen)
{
    static const char *const names[] = {"varint", "64-bit", "length-delimited", "group start",
                                        "group end", "32-bit"};
    if (f->wt != wt)
        return fail(r, msg, "field %u has wire type %s, expected %s", f->field,
                    names[f->wt], names[wt]);
    if (seen != NULL) {
        if (*seen & (1u << f->field))
            return fail(r, msg, "singular field %u appears twice", f->field);
        *seen |= 1u << f->field;
    }
    return 1;
}

static int unknown(reader *r, const where *msg, const field *f)
{
    return fail(r, msg, "unknown field %u (wire type %d)", f->field, f->wt);
}

static int get_u32(reader *r, const where *msg, const field *f, uint32_t *out)
{
    if (f->v > UINT32_MAX)
        return fail(r, msg, "field %u's value %llu does not fit 32 bits", f->field,
                    (unsigned long long)f->v);
    *out = (uint32_t)f->v;
    return 1;
}

/* A type URL: 1..PCB_TINK_URL_CAP printable ASCII characters. */
static int get_url(reader *r, const where *msg, const field *f, char *out)
{
    if (f->len == 0 || f->len > PCB_TINK_URL_CAP)
        return fail(r, msg, "type_url must hold 1 to %d characters, holds %zu", PCB_TINK_URL_CAP, f->len);
    for (size_t i = 0; i < f->len; i++)
        if (f->data[i] < 0x21 || f->data[i] > 0x7e)
            return fail(r, msg, "type_url holds a byte 0x%02x that no type URL has", f->data[i]);
    memcpy(out, f->data, f->len);
    out[f->len] = '\0';
    return 1;
}

/* The key proto inside KeyData.value (its type from the type URL). */
static int decode_key_proto(reader *up, const where *msg, const uint8_t *p, size_t n,
                            pcb_tink_key *e)
{
    reader r = {p, p + n, up->err, up->cap};
    int kv = pcb_tinkpb_key_value_field(e->type_url);
    unsigned seen = 0;
    field f;
    int rc;
    if (kv == 0)
        return fail(up, msg, "key type %s is not one this store knows (AesSivKey, AesGcmKey, "
                    "ChaCha20Poly1305Key)", e->type_url);
    while ((rc = next_field(&r, msg, &f)) > 0) {
        if (f.field == 1) {
            if (!expect(&r, msg, &f, WT_VARINT, &seen) || !get_u32(&r, msg, &f, &e->version))
                return 0;
        } else if (f.field == (unsigned)kv) {
            if (!expect(&r, msg, &f, WT_LEN, &seen))
                return 0;
            if (f.len > PCB_TINK_KEY_CAP)
                return fail(&r, msg, "key_value holds %zu bytes, more than any key of this type", f.len);
            memcpy(e->key_value, f.data, f.len);
            e->key_len = f.len;
        } else {
            return unknown(&r, msg, &f);
        }
    }
    return rc == 0;
}

static int decode_key_data(reader *up, const where *msg, const uint8_t *p, size_t n,
                           pcb_tink_key *e)
{
    reader r = {p, p + n, up->err, up->cap};
    unsigned seen = 0;
    const uint8_t *value = NULL;
    size_t value_len = 0;
    field f;
    int rc;
    while ((rc = next_field(&r, msg, &f)) > 0) {
        int ok;
        switch (f.field) {
        case 1:
            ok = expect(&r, msg, &f, WT_LEN, &seen) && get_url(&r, msg, &f, e->type_url);
            break;
        case 2:
            ok = expect(&r, msg, &f, WT_LEN, &seen);
            value = f.data;
            value_len = f.len;
            break;
        case 3:
            ok = expect(&r, msg, &f, WT_VARINT, &seen) && get_u32(&r, msg, &f, &e->material);
            break;
        default:
            ok = unknown(&r, msg, &f);
        }
        if (!ok)
            return 0;
    }
    if (rc < 0)
        return 0;
    if (!(seen & 2))
        return fail(&r, msg, "type_url is missing");
    const where sub = {msg, ".value", -1};
    return decode_key_proto(&r, &sub, value ? value : (const uint8_t *)"", value_len, e);
}

/* A Keyset.Key (with_data) or a KeysetInfo.KeyInfo (!with_data). */
static int decode_key(reader *up, const where *msg, const uint8_t *p, size_t n,
                      pcb_tink_key *e, int with_data)
{
    reader r = {p, p + n, up->err, up->cap};
    unsigned seen = 0;
    field f;
    int rc;
    while ((rc = next_field(&r, msg, &f)) > 0) {
        int ok;
        switch (f.field) {
        case 1:
            ok = expect(&r, msg, &f, WT_LEN, &seen);
            if (ok && with_data) {
                const where sub = {msg, ".key_data", -1};
                ok = decode_key_data(&r, &sub, f.data, f.len, e);
            } else if (ok) {
                ok = get_url(&r, msg, &f, e->type_url);
            }
            break;
        case 2:
            ok = expect(&r, msg, &f, WT_VARINT, &seen) && get_u32(&r, msg, &f, &e->status);
            break;
        case 3:
            ok = expect(&r, msg, &f, WT_VARINT, &seen) && get_u32(&r, msg, &f, &e->key_id);
            break;
        case 4:
            ok = expect(&r, msg, &f, WT_VARINT, &seen)
                 && get_u32(&r, msg, &f, &e->output_prefix);
            break;
        default:
            ok = unknown(&r, msg, &f);
        }
        if (!ok)
            return 0;
    }
    if (rc < 0)
        return 0;
    if (!(seen & 2))
        return fail(&r, msg, "%s is missing", with_data ? "key_data" : "type_url");
    if (e->status < PCB_TINK_ENABLED || e->status > PCB_TINK_DESTROYED)
        return fail(&r, msg, "status %u is not ENABLED, DISABLED or DESTROYED", e->status);
    if (e->output_prefix < PCB_TINK_PREFIX_TINK || e->output_prefix > PCB_TINK_PREFIX_CRUNCHY)
        return fail(&r, msg, "output_prefix_type %u is not TINK, LEGACY, RAW or CRUNCHY", e->output_prefix);
    return 1;
}

/* A Keyset (with_data) or a KeysetInfo (!with_data). */
static int decode_keyset(reader *r, const where *msg, pcb_tink_keyset *k, int with_data)
{
    unsigned seen = 0;
    field f;
    int rc;
    while ((rc = next_field(r, msg, &f)) > 0) {
        int ok;
        if (f.field == 1) {
            ok = expect(r, msg, &f, WT_VARINT, &seen) && get_u32(r, msg, &f, &k->primary_key_id);
        } else if (f.field == 2) {
            const where sub = {msg, with_data ? ".key" : ".key_info", (long)k->n};
            ok = expect(r, msg, &f, WT_LEN, NULL);
            if (ok && k->n == PCB_TINK_MAX_KEYS)
                ok = fail(r, msg, "more than %d keys", PCB_TINK_MAX_KEYS);
            if (ok) /* only the keys used are cleared: a keyset is large */
                memset(&k->key[k->n], 0, sizeof k->key[0]);
            ok = ok && decode_key(r, &sub, f.data, f.len, &k->key[k->n], with_data);
            k->n += ok;
        } else {
            ok = unknown(r, msg, &f);
        }
        if (!ok)
            return 0;
    }
    return rc == 0;
}

int pcb_tinkpb_keyset_decode(const uint8_t *p, size_t n, pcb_tink_keyset *k, char *err,
                             size_t cap)
{
    reader r = {p, p + n, err, cap};
    k->primary_key_id = 0;
    k->n = 0;
    const where top = {NULL, "Keyset", -1};
    if (!decode_keyset(&r, &top, k, 1))
        return 0;
    /* What Tink's keyset validation refuses. */
    if (k->n == 0)
        return fail(&r, &top, "holds no key");
    int primary = 0;
    for (size_t i = 0; i < k->n; i++) {
        for (size_t j = 0; j < i; j++)
            if (k->key[j].key_id == k->key[i].key_id)
                return fail(&r, &top, "key id %u appears twice", k->key[i].key_id);
        if (k->key[i].key_id == k->primary_key_id) {
            if (k->key[i].status != PCB_TINK_ENABLED)
                return fail(&r, &top, "the primary key %u is not ENABLED", k->primary_key_id);
            primary = 1;
        }
    }
    if (!primary)
        return fail(&r, &top, "the primary key id %u names no key", k->primary_key_id);
    return 1;
}

int pcb_tinkpb_encrypted_decode(const uint8_t *p, size_t n, const uint8_t **ct, size_t *ct_len,
                                pcb_tink_keyset *info, int *has_info, char *err, size_t cap)
{
    reader r = {p, p + n, err, cap};
    unsigned seen = 0;
    field f;
    int rc;
    info->primary_key_id = 0;
    info->n = 0;
    *has_info = 0;
    const where top = {NULL, "EncryptedKeyset", -1}, info_at = {&top, ".keyset_info", -1};
    while ((rc = next_field(&r, &top, &f)) > 0) {
        int ok;
        if (f.field == 2) {
            ok = expect(&r, &top, &f, WT_LEN, &seen);
            *ct = f.data;
            *ct_len = f.len;
        } else if (f.field == 3) {
            ok = expect(&r, &top, &f, WT_LEN, &seen);
            if (ok) {
                reader sub = {f.data, f.data + f.len, err, cap};
                ok = decode_keyset(&sub, &info_at, info, 0);
                *has_info = 1;
            }
        } else {
            ok = unknown(&r, &top, &f);
        }
        if (!ok)
            return 0;
    }
    if (rc < 0)
        return 0;
    if (!(seen & 4))
        return fail(&r, &top, "encrypted_keyset is missing");
    return 1;
}
