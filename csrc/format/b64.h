/*
 * format/b64.h — standard Base64 (RFC 4648 section 4: '+', '/', '=' padding, no
 * line breaks), as java.util.Base64 / android.util.Base64.NO_WRAP write it.
 *
 * Owns: encoding and strict decoding. Pure C, no allocation, thread-safe.
 * Decoding runs SIMD kernels on x86-64 (SSSE3, AVX2, AVX-512 VBMI), picked
 * at run time on first use (elsewhere, ARM included, the scalar decoder:
 * b64.c says why); every kernel accepts and produces exactly what the scalar
 * decoder does. PCB_B64_SCALAR=1 in the environment at first use
 * forces the scalar decoder (for tests and comparisons).
 */
#ifndef PCB_FORMAT_B64_H
#define PCB_FORMAT_B64_H

#include <stddef.h>
#include <stdint.h>

/* Characters needed to encode n bytes (no NUL). */
static inline size_t pcb_b64_encoded_len(size_t n) { return (n + 2) / 3 * 4; }
/* Upper bound of the bytes decoded from n characters. */
static inline size_t pcb_b64_decoded_max(size_t n) { return n / 4 * 3 + 3; }

/* Writes pcb_b64_encoded_len(n) characters to out (no NUL); returns that count.
 * SSSE3 steps where the decoder's SIMD level is active (PCB_B64_SCALAR=1: none);
 * _scalar: the table code alone (tests compare the two). */
size_t pcb_b64_encode(const uint8_t *in, size_t n, char *out);
size_t pcb_b64_encode_scalar(const uint8_t *in, size_t n, char *out);

/*
 * Strict decode: length must be a multiple of 4, only the standard alphabet,
 * '=' only as one or two final padding characters, and the unused bits of the
 * last symbol must be zero (so every byte string has exactly one encoding).
 * Returns the decoded length, or (size_t)-1 if the text is not valid Base64.
 * out must have room for pcb_b64_decoded_max(n) bytes; the decoder may use
 * all of them as scratch, and leaves out unspecified when it fails. Reads
 * exactly in[0..n) (in needs no padding); in and out must not overlap.
 */
size_t pcb_b64_decode(const char *in, size_t n, uint8_t *out);

/* Decoder implementations, for tests and benchmarks. */
typedef enum {
    PCB_B64_IMPL_SCALAR,
    PCB_B64_IMPL_SSSE3,      /* 16 characters per step */
    PCB_B64_IMPL_AVX2,       /* 32 per step (then one 16 step) */
    PCB_B64_IMPL_AVX512VBMI, /* 64 per step, the rest in one masked step */
    PCB_B64_IMPL_COUNT
} pcb_b64_impl;

/* 1 if impl can run on this CPU (SCALAR always can). */
int pcb_b64_impl_available(pcb_b64_impl impl);
/* "scalar", "ssse3", "avx2", "avx512vbmi". */
const char *pcb_b64_impl_name(pcb_b64_impl impl);
/* The implementation pcb_b64_decode uses (resolved on first call). */
pcb_b64_impl pcb_b64_active_impl(void);
/* pcb_b64_decode with a given implementation (SCALAR if impl is unavailable). */
size_t pcb_b64_decode_with(pcb_b64_impl impl, const char *in, size_t n, uint8_t *out);

#endif /* PCB_FORMAT_B64_H */
