/*
 * fuzz_tink_keyset.c — libFuzzer target for the Tink keyset codec
 * (format/tinkpb.h): the strict decoders of Keyset and EncryptedKeyset and
 * their encoders.
 *
 * Input layout: byte [0] picks the decoder (even: Keyset, odd:
 * EncryptedKeyset); the rest, copied to an exact-size buffer (any read past
 * it is an ASan report), is the message.
 *
 * Properties (abort() on violation):
 *   - decoding never reads outside the message and, when it fails, leaves a
 *     NUL-terminated, non-empty message;
 *   - a Keyset that decodes holds at least one key, unique key ids, and an
 *     ENABLED primary; it encodes, the encoding decodes to the same keyset,
 *     and encoding that again gives the same bytes (canonical form);
 *   - an EncryptedKeyset that decodes points encrypted_keyset inside the
 *     message; encoded again (with its keyset_info when it had one) it
 *     decodes to the same ciphertext bytes and the same keyset_info.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/buf.h"
#include "format/tinkpb.h"

#define DIE(...)                                                              \
    do {                                                                      \
        fprintf(stderr, "fuzz_tink_keyset: PROPERTY VIOLATED: " __VA_ARGS__); \
        fputc('\n', stderr);                                                  \
        abort();                                                              \
    } while (0)

static pcb_tink_keyset a, b; /* large: not on the stack */

static int same_keyset(const pcb_tink_keyset *x, const pcb_tink_keyset *y)
{
    if (x->primary_key_id != y->primary_key_id || x->n != y->n)
        return 0;
    for (size_t i = 0; i < x->n; i++) {
        const pcb_tink_key *p = &x->key[i], *q = &y->key[i];
        if (strcmp(p->type_url, q->type_url) != 0 || p->key_id != q->key_id
            || p->status != q->status || p->output_prefix != q->output_prefix
            || p->material != q->material || p->version != q->version
            || p->key_len != q->key_len || memcmp(p->key_value, q->key_value, p->key_len) != 0)
            return 0;
    }
    return 1;
}

static void check_error(const char *err)
{
    if (err[0] == '\0' || memchr(err, '\0', 200) == NULL)
        DIE("a failed decode left no message");
}

static void keyset_case(const uint8_t *m, size_t n)
{
    char err[200];
    memset(err, 0, sizeof err);
    if (!pcb_tinkpb_keyset_decode(m, n, &a, err, sizeof err)) {
        check_error(err);
        return;
    }
    if (a.n == 0 || a.n > PCB_TINK_MAX_KEYS)
        DIE("a decoded keyset holds %zu keys", a.n);
    int primary = 0;
    for (size_t i = 0; i < a.n; i++) {
        for (size_t j = 0; j < i; j++)
            if (a.key[i].key_id == a.key[j].key_id)
                DIE("key id %u twice", a.key[i].key_id);
        primary |= a.key[i].key_id == a.primary_key_id && a.key[i].status == PCB_TINK_ENABLED;
        if (pcb_tinkpb_key_value_field(a.key[i].type_url) == 0)
            DIE("a key of unknown type %s decoded", a.key[i].type_url);
    }
    if (!primary)
        DIE("no enabled primary");
    pcb_buf e1, e2;
    pcb_buf_init(&e1);
    pcb_buf_init(&e2);
    if (!pcb_tinkpb_keyset_encode(&a, &e1))
        DIE("a decoded keyset does not encode");
    if (!pcb_tinkpb_keyset_decode((const uint8_t *)e1.data, e1.len, &b, err, sizeof err))
        DIE("its encoding does not decode: %s", err);
    if (!same_keyset(&a, &b))
        DIE("decode(encode(keyset)) differs");
    if (!pcb_tinkpb_keyset_encode(&b, &e2) || e1.len != e2.len || memcmp(e1.data, e2.data, e1.len))
        DIE("the encoding is not canonical");
    pcb_buf_free(&e1);
    pcb_buf_free(&e2);
}

static void encrypted_case(const uint8_t *m, size_t n)
{
    char err[200];
    const uint8_t *ct = NULL, *ct2 = NULL;
    size_t ct_len = 0, ct2_len = 0;
    int has, has2;
    memset(err, 0, sizeof err);
    if (!pcb_tinkpb_encrypted_decode(m, n, &ct, &ct_len, &a, &has, err, sizeof err)) {
        check_error(err);
        return;
    }
    if (ct == NULL || ct < m || ct_len > n || ct + ct_len > m + n)
        DIE("encrypted_keyset points outside the message");
    if (!has && a.n != 0)
        DIE("keys without keyset_info");
    pcb_buf e;
    pcb_buf_init(&e);
    if (!pcb_tinkpb_encrypted_encode(ct, ct_len, &a, &e))
        DIE("a decoded EncryptedKeyset does not encode");
    if (!pcb_tinkpb_encrypted_decode((const uint8_t *)e.data, e.len, &ct2, &ct2_len, &b, &has2, err,
                                     sizeof err))
        DIE("its encoding does not decode: %s", err);
    if (ct2_len != ct_len || memcmp(ct, ct2, ct_len) != 0)
        DIE("encrypted_keyset changed");
    if (has && !same_keyset(&a, &b))
        DIE("keyset_info changed");
    pcb_buf_free(&e);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size == 0)
        return 0;
    size_t n = size - 1;
    uint8_t *m = malloc(n ? n : 1);
    if (m == NULL)
        return 0;
    memcpy(m, data + 1, n);
    if (data[0] & 1)
        encrypted_case(m, n);
    else
        keyset_case(m, n);
    free(m);
    return 0;
}
