/*
 * common/buf.c — pcb_buf (see buf.h).
 */
#include "common/buf.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <openssl/crypto.h>

#include "common/bytes.h"

void pcb_buf_init(pcb_buf *b)
{
    b->data = NULL;
    b->len = 0;
    b->cap = 0;
    b->failed = 0;
}

void pcb_buf_free(pcb_buf *b)
{
    if (b->data != NULL) {
        OPENSSL_cleanse(b->data, b->cap);
        free(b->data);
    }
    pcb_buf_init(b);
}

char *pcb_buf_grow(pcb_buf *b, size_t n)
{
    if (b->failed)
        return NULL;
    if (b->data != NULL && n <= b->cap - b->len)
        return b->data + b->len;
    if (n > (SIZE_MAX / 2) - b->len) {
        b->failed = 1;
        return NULL;
    }
    size_t need = b->len + n, cap = b->cap ? b->cap : 256;
    while (cap < need)
        cap *= 2; /* need <= SIZE_MAX / 2: cannot overflow */
    char *d = malloc(cap);
    if (d == NULL) {
        b->failed = 1;
        return NULL;
    }
    if (b->data != NULL) {
        memcpy(d, b->data, b->len);
        OPENSSL_cleanse(b->data, b->cap);
        free(b->data);
    }
    b->data = d;
    b->cap = cap;
    return d + b->len;
}

void pcb_buf_append(pcb_buf *b, const char *s, size_t n)
{
    if (n == 0)
        return;
    char *p = pcb_buf_reserve(b, n);
    if (p == NULL)
        return;
    memcpy(p, s, n);
    b->len += n;
}

void pcb_buf_put_le32(pcb_buf *b, uint32_t v)
{
    uint8_t x[4];
    pcb_store_le32(x, v);
    pcb_buf_append(b, (const char *)x, 4);
}
