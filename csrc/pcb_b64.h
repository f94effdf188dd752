/*
 * pcb_b64.h — standard Base64 (RFC 4648 section 4: '+', '/', '=' padding, no
 * line breaks), as java.util.Base64 / android.util.Base64.NO_WRAP write it.
 *
 * Owns: encoding and strict decoding. Pure C, no allocation, thread-safe.
 */
#ifndef PCB_B64_H
#define PCB_B64_H

#include <stddef.h>
#include <stdint.h>

/* Characters needed to encode n bytes (no NUL). */
static inline size_t pcb_b64_encoded_len(size_t n) { return (n + 2) / 3 * 4; }
/* Upper bound of the bytes decoded from n characters. */
static inline size_t pcb_b64_decoded_max(size_t n) { return n / 4 * 3 + 3; }

/* Writes pcb_b64_encoded_len(n) characters to out (no NUL); returns that count. */
size_t pcb_b64_encode(const uint8_t *in, size_t n, char *out);

/*
 * Strict decode: length must be a multiple of 4, only the standard alphabet,
 * '=' only as one or two final padding characters, and the unused bits of the
 * last symbol must be zero (so every byte string has exactly one encoding).
 * Returns the decoded length, or (size_t)-1 if the text is not valid Base64.
 */
size_t pcb_b64_decode(const char *in, size_t n, uint8_t *out);

#endif /* PCB_B64_H */
