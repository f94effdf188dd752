/*
 * pcb_value.h — ESP's plaintext serialization of a value, shared by the
 * store (files, checks), its Python types and its benchmarks.
 *
 * Owns: the big-endian field helpers and the walk over length-prefixed
 * runs (a string is one run after the type id, a string set one run per
 * member). Header-only: every user gets the same rules for what is
 * well-formed.
 */
#ifndef PCB_VALUE_H
#define PCB_VALUE_H

#include <stddef.h>
#include <stdint.h>

#include "pcb_prefs_xml.h"

static inline uint32_t pcb_be32(const uint8_t *p)
{
    return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3];
}

static inline uint64_t pcb_be64(const uint8_t *p)
{
    return (uint64_t)pcb_be32(p) << 32 | pcb_be32(p + 4);
}

static inline void pcb_store_be32(uint8_t *p, uint32_t v)
{
    p[0] = (uint8_t)(v >> 24);
    p[1] = (uint8_t)(v >> 16);
    p[2] = (uint8_t)(v >> 8);
    p[3] = (uint8_t)v;
}

static inline void pcb_buf_put_be32(pcb_buf *b, uint32_t v)
{
    uint8_t x[4];
    pcb_store_be32(x, v);
    pcb_buf_append(b, (const char *)x, 4);
}

/*
 * Next length-prefixed run of v[0..vl) at *off (start at 4, after the type
 * id): 1 with run and len set and off advanced, 0 at the end, -1 if a length
 * runs past the end.
 */
static inline int pcb_value_next_run(const uint8_t *v, size_t vl, size_t *off,
                                     const uint8_t **run, size_t *len)
{
    if (*off >= vl)
        return 0;
    if (vl - *off < 4 || pcb_be32(v + *off) > vl - *off - 4)
        return -1;
    *len = pcb_be32(v + *off);
    *run = v + *off + 4;
    *off += 4 + *len;
    return 1;
}

#endif /* PCB_VALUE_H */
