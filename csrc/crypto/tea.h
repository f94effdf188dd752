/*
 * crypto/tea.h — TEA and XTEA block ciphers and their ECB/CBC/CTR modes.
 *
 * Owns: the reference kernels (straight transcriptions of Wheeler & Needham's
 * code, one block at a time) and the optimized kernels (many blocks at once:
 * portable interleaved scalar code, AVX2 and AVX-512 variants on x86 and
 * NEON on aarch64, chosen at run time), plus the mode loops. Pure C: no Python, no OpenSSL except
 * OPENSSL_cleanse for wiping keys. Thread-safe: no mutable state (the CPU
 * probe is common/cpu's).
 *
 * Conventions (those of the published reference vectors): an 8-byte block is
 * two big-endian 32-bit words (v0, v1); the 16-byte key is four big-endian
 * words; `rounds` counts cycles (two Feistel rounds each), 1..1024, the
 * standard being 32. CTR's counter is the whole 8-byte block read as one
 * big-endian 64-bit integer, incremented by one per block and wrapping.
 * All functions accept in == out (in place); partial overlap is not allowed.
 */
#ifndef PCB_CRYPTO_TEA_H
#define PCB_CRYPTO_TEA_H

#include <stddef.h>
#include <stdint.h>

#define PCB_TEA_BLOCK 8
#define PCB_TEA_KEY 16
#define PCB_TEA_MIN_ROUNDS 1
#define PCB_TEA_MAX_ROUNDS 1024

typedef enum { PCB_TEA = 0, PCB_XTEA = 1 } pcb_tea_variant;

/* Which code runs the blocks. AUTO resolves to the best the CPU supports. */
typedef enum {
    PCB_TEA_IMPL_REF = 0,    /* reference: one block at a time, as published */
    PCB_TEA_IMPL_SCALAR = 1, /* several blocks interleaved, plain C */
    PCB_TEA_IMPL_AVX2 = 2,   /* 8 blocks per vector */
    PCB_TEA_IMPL_AVX512 = 3, /* 16 blocks per vector */
    PCB_TEA_IMPL_NEON = 4,   /* aarch64 Advanced SIMD: 4 blocks per vector */
    PCB_TEA_IMPL_AUTO = 5
} pcb_tea_impl;

/* The last named implementation (loops over SCALAR..PCB_TEA_IMPL_LAST). */
#define PCB_TEA_IMPL_LAST PCB_TEA_IMPL_NEON

typedef struct {
    uint32_t k[4];
    uint32_t rounds;
    pcb_tea_variant variant;
    pcb_tea_impl impl; /* never AUTO once set: resolved by pcb_tea_set_key */
} pcb_tea_key;

/* CTR state carried across calls, so a stream can be fed in pieces of any length. */
typedef struct {
    uint8_t counter[PCB_TEA_BLOCK]; /* next counter block to encrypt */
    uint8_t keystream[PCB_TEA_BLOCK];
    unsigned used; /* bytes of keystream[] already consumed; 8 = none left */
} pcb_tea_ctr_state;

/* The best optimized implementation this CPU runs (SCALAR, AVX2, AVX512 or NEON). */
pcb_tea_impl pcb_tea_best_impl(void);

/* 1 if `impl` can run on this CPU (REF and SCALAR always can). */
int pcb_tea_impl_available(pcb_tea_impl impl);

/* "ref", "scalar", "avx2", "avx512", "neon". */
const char *pcb_tea_impl_name(pcb_tea_impl impl);

/* Sets up a key. rounds must be in [1, 1024] (the caller validates); impl AUTO
 * picks pcb_tea_best_impl(); an impl the CPU lacks falls back to the best one. */
void pcb_tea_set_key(pcb_tea_key *tk, const uint8_t key[PCB_TEA_KEY],
                     pcb_tea_variant variant, uint32_t rounds, pcb_tea_impl impl);

/* Wipes the key material (OPENSSL_cleanse). */
void pcb_tea_clear_key(pcb_tea_key *tk);

/* ECB over nblocks whole blocks. */
void pcb_tea_ecb(const pcb_tea_key *tk, int encrypt, const uint8_t *in,
                 uint8_t *out, size_t nblocks);

/* CBC over nblocks whole blocks; iv is updated to the last ciphertext block so
 * that consecutive calls continue one chain. */
void pcb_tea_cbc(const pcb_tea_key *tk, int encrypt, uint8_t iv[PCB_TEA_BLOCK],
                 const uint8_t *in, uint8_t *out, size_t nblocks);

/* CTR state from an initial counter block. */
void pcb_tea_ctr_init(pcb_tea_ctr_state *st, const uint8_t iv[PCB_TEA_BLOCK]);

/* CTR over len bytes (any length); encryption and decryption are the same. */
void pcb_tea_ctr(const pcb_tea_key *tk, pcb_tea_ctr_state *st,
                 const uint8_t *in, uint8_t *out, size_t len);

#endif /* PCB_CRYPTO_TEA_H */
