/*
 * common/siphash.h — SipHash-1-3, a keyed hash for tables fed by untrusted
 * input (a per-call random key makes hash flooding useless).
 *
 * Owns: the hash only. Header-only, no state, thread-safe.
 */
#ifndef PCB_COMMON_SIPHASH_H
#define PCB_COMMON_SIPHASH_H

#include <stddef.h>
#include <stdint.h>

#include "common/bytes.h"

#define ROTL(x, b) (uint64_t)(((x) << (b)) | ((x) >> (64 - (b))))
#define SIPROUND                                                                                   \
    do {                                                                                           \
        v0 += v1; v1 = ROTL(v1, 13); v1 ^= v0; v0 = ROTL(v0, 32);                                  \
        v2 += v3; v3 = ROTL(v3, 16); v3 ^= v2;                                                     \
        v0 += v3; v3 = ROTL(v3, 21); v3 ^= v0;                                                     \
        v2 += v1; v1 = ROTL(v1, 17); v1 ^= v2; v2 = ROTL(v2, 32);                                  \
    } while (0)

static inline uint64_t pcb_siphash13(uint64_t k0, uint64_t k1, const unsigned char *m, size_t n)
{
    uint64_t v0 = k0 ^ 0x736f6d6570736575ULL, v1 = k1 ^ 0x646f72616e646f6dULL;
    uint64_t v2 = k0 ^ 0x6c7967656e657261ULL, v3 = k1 ^ 0x7465646279746573ULL;
    size_t full = n & ~(size_t)7;
    for (size_t i = 0; i < full; i += 8) {
        uint64_t w = pcb_load_le64(m + i);
        v3 ^= w;
        SIPROUND;
        v0 ^= w;
    }
    uint64_t last = (uint64_t)n << 56;
    for (size_t i = 0; i < (n & 7); i++)
        last |= (uint64_t)m[full + i] << (8 * i);
    v3 ^= last;
    SIPROUND;
    v0 ^= last;
    v2 ^= 0xff;
    SIPROUND;
    SIPROUND;
    SIPROUND;
    return v0 ^ v1 ^ v2 ^ v3;
}

#undef SIPROUND
#undef ROTL

#endif /* PCB_COMMON_SIPHASH_H */
