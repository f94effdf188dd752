/*
 * common/buf.h — a growable byte buffer that wipes what it held.
 *
 * Owns: pcb_buf, the one growable buffer of the C core (XML output, stored
 * names and values, editor op logs, scratch). Memory it releases is wiped
 * first (OPENSSL_cleanse), so it may hold keys and plaintext. An allocation
 * failure sets `failed`; later appends then do nothing, so a writer can
 * append freely and check once at the end. Sizes are bytes. Not
 * thread-safe: one owner at a time.
 */
#ifndef PCB_COMMON_BUF_H
#define PCB_COMMON_BUF_H

#include <stddef.h>
#include <stdint.h>

typedef struct {
    char *data;
    size_t len, cap;
    int failed; /* set on allocation failure; later appends do nothing */
} pcb_buf;

void pcb_buf_init(pcb_buf *b);
void pcb_buf_free(pcb_buf *b); /* wipes (OPENSSL_cleanse) then frees */
void pcb_buf_append(pcb_buf *b, const char *s, size_t n);
/* pcb_buf_reserve when the room is not there yet (or b failed): grows b. */
char *pcb_buf_grow(pcb_buf *b, size_t n);
/* Reserves room for n more bytes and returns where they go (NULL on failure);
 * the caller then adds n to b->len. Inline when the room is there (a get
 * reserves several times into buffers kept between calls). */
static inline char *pcb_buf_reserve(pcb_buf *b, size_t n)
{
    if (!b->failed && b->data != NULL && n <= b->cap - b->len)
        return b->data + b->len;
    return pcb_buf_grow(b, n);
}
/* Appends v as 4 little-endian bytes (internal logs; read with pcb_load_le32). */
void pcb_buf_put_le32(pcb_buf *b, uint32_t v);

#endif /* PCB_COMMON_BUF_H */
