/*
 * store/scrypt.h — the scrypt parameter file ("<store>.scrypt") of a
 * passphrase store: its format and rules, over parameters the caller owns.
 *
 * Owns: the file's JSON text (version 2: salt, n, r, p and a tag; version 1,
 * untagged, still read), parsing it strictly, the bounds checked before any
 * work (N a power of two up to 2^22, r <= 32, p <= 16, at most 1 GiB of
 * memory and 2^24 of N r p, a salt of 16 to 64 bytes not all zero), the
 * derivation (scrypt of the store's passphrase), and the tag: HMAC-SHA256
 * keyed with HMAC-SHA256(master, label) over the parameters' text. It holds
 * no state: the parameters in use are keys.c's (struct pcb_keys), passed in;
 * when the file is created, rewritten or adopted is keys.c's decision
 * (keys.h). The store gives only its scrypt path (messages), library
 * context and passphrase.
 *
 * Thread safety: pure functions of their arguments (the caller holds the
 * store's lock, or the store is not shared yet). Lengths are bytes.
 */
#ifndef PCB_STORE_SCRYPT_H
#define PCB_STORE_SCRYPT_H

#include "store/internal.h"

/* The scrypt parameters, as the .scrypt file holds them. */
typedef struct {
    uint8_t salt[64], mac[32];
    size_t salt_len;
    uint64_t n, r, p;
    int version; /* 1: untagged (mac unused), 2: tagged */
} pcb_kdf_params;

/* Parses the file's text into *p (no bounds checked yet). 1, or 0 with st set. */
int pcb_scrypt_parse(pcb_store *s, pcb_kdf_params *p, const char *data, size_t len,
                     pcb_status *st);
/* The bounds, and n >= min_n, checked before any work. 1, or 0 with st set. */
int pcb_scrypt_check(pcb_store *s, const pcb_kdf_params *p, uint64_t min_n, pcb_status *st);
/* The master key scrypt derives from the store's passphrase under p. */
int pcb_scrypt_derive(pcb_store *s, const pcb_kdf_params *p, uint8_t key[MASTER_KEY_LEN],
                      pcb_status *st);
/* Whether p's tag authenticates under master: 1 / 0 (an untagged file: 0);
 * -1 with st set. */
int pcb_scrypt_verify(pcb_store *s, const pcb_kdf_params *p, const uint8_t master[MASTER_KEY_LEN],
                      pcb_status *st);
/* The file's text for p, tagged under master (p's mac and version set),
 * into out[0..cap) (*len bytes). 1, or 0 with st set. */
int pcb_scrypt_text(pcb_store *s, pcb_kdf_params *p, const uint8_t master[MASTER_KEY_LEN],
                    char *out, size_t cap, size_t *len, pcb_status *st);

#endif /* PCB_STORE_SCRYPT_H */
