/*
 * common/bytes.h — fixed-width integers to and from bytes.
 *
 * Owns: big-endian loads and stores (the TEA vectors' words, ESP's value
 * serialization, Tink's key ids) and little-endian ones (internal logs),
 * assembled byte by byte so there is no alignment or aliasing UB; the
 * compiler turns them into single moves. Header-only, no state: thread-safe.
 */
#ifndef PCB_COMMON_BYTES_H
#define PCB_COMMON_BYTES_H

#include <stdint.h>
#include <string.h>

static inline uint32_t pcb_load_be32(const uint8_t *p)
{
    return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3];
}

static inline uint64_t pcb_load_be64(const uint8_t *p)
{
    return (uint64_t)pcb_load_be32(p) << 32 | pcb_load_be32(p + 4);
}

static inline void pcb_store_be32(uint8_t *p, uint32_t v)
{
    p[0] = (uint8_t)(v >> 24);
    p[1] = (uint8_t)(v >> 16);
    p[2] = (uint8_t)(v >> 8);
    p[3] = (uint8_t)v;
}

static inline void pcb_store_be64(uint8_t *p, uint64_t v)
{
    pcb_store_be32(p, (uint32_t)(v >> 32));
    pcb_store_be32(p + 4, (uint32_t)v);
}

static inline uint32_t pcb_load_le32(const uint8_t *p)
{
    return (uint32_t)p[3] << 24 | (uint32_t)p[2] << 16 | (uint32_t)p[1] << 8 | p[0];
}

static inline uint64_t pcb_load_le64(const uint8_t *p)
{
    return (uint64_t)pcb_load_le32(p + 4) << 32 | pcb_load_le32(p);
}

static inline void pcb_store_le32(uint8_t *p, uint32_t v)
{
    p[0] = (uint8_t)v;
    p[1] = (uint8_t)(v >> 8);
    p[2] = (uint8_t)(v >> 16);
    p[3] = (uint8_t)(v >> 24);
}

#endif /* PCB_COMMON_BYTES_H */
