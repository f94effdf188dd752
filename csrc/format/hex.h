/*
 * format/hex.h — hexadecimal text of bytes, as the store's files hold it
 * (Tink's SharedPrefKeysetWriter writes keysets as lowercase hex; the
 * .scrypt file holds its salt and tag as hex).
 *
 * Owns: encoding (lowercase) and strict decoding (either case, as Java's
 * Hex.decode). Pure C, no allocation, thread-safe. Lengths are in bytes of
 * text or data, as named.
 */
#ifndef PCB_FORMAT_HEX_H
#define PCB_FORMAT_HEX_H

#include <stddef.h>
#include <stdint.h>

/* n bytes -> 2n lowercase hex digits in out (no NUL). */
void pcb_hex_encode(const uint8_t *in, size_t n, char *out);
/* n hex digits -> n / 2 bytes in out; 0 if n is odd or a character is not
 * a hex digit (out's contents are then unspecified). */
int pcb_hex_decode(const char *in, size_t n, uint8_t *out);

#endif /* PCB_FORMAT_HEX_H */
