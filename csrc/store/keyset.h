/*
 * store/keyset.h — the store's two keysets as Tink and ESP write them.
 *
 * Owns: a keyset's text in the file (lowercase hex of a serialized Tink
 * EncryptedKeyset: encrypted_keyset = the master key's AES-256-GCM output
 * IV(12) || ciphertext || tag(16) over the serialized Keyset with empty
 * associated data, the AndroidKeystoreAesGcm layout; keyset_info in the
 * clear), sealing and opening it, the pre-Tink text of earlier releases
 * (read, never written), which key type each keyset must hold for the
 * store's options (the rules on prefixes and types: pcb_keyset_check),
 * fresh keys (random 31-bit ids, unique in the keyset), and the keys that
 * may open a ciphertext, found by its output prefix as Tink does. It holds
 * no state: the keysets and the master key's contexts are keys.c's (struct
 * pcb_keys), passed in; the store gives only its options, path and library
 * context. Called with the store's lock held (or before the store is
 * shared); the inspection functions take no store and are pure. Lengths are
 * bytes.
 */
#ifndef PCB_STORE_KEYSET_H
#define PCB_STORE_KEYSET_H

#include "format/tinkpb.h"
#include "store/internal.h"

/* Which keyset: the names' (AES-SIV) or the values' (AEAD). */
enum { PCB_KS_KEY = 0, PCB_KS_VALUE = 1 };

/* The file's text for keyset k, sealed under the master key's context
 * master_enc, into out (reset). 1, or 0 with st set. */
int pcb_keyset_seal(pcb_store *s, const pcb_tink_keyset *k, EVP_CIPHER_CTX *master_enc,
                    pcb_buf *out, pcb_status *st);
/* Opens a keyset's text (keyset `which`) with the master key's context
 * master_dec into *into and checks it fits the store (pcb_keyset_check). 1
 * ok, 2 ok but in the pre-Tink text (to be written again as Tink's), 0 not
 * authentic under the master key (st not set), -1 malformed or unfit (st
 * set: StoreFormatError naming the keyset); *into wiped unless >= 1. */
int pcb_keyset_open(pcb_store *s, int which, pcb_tink_keyset *into, EVP_CIPHER_CTX *master_dec,
                    const char *hex, size_t len, pcb_status *st);
/* Refuses a keyset (its keys or its keyset_info) that does not fit the
 * store's options: a type URL of another algorithm, a key length, version,
 * material or output prefix this store does not implement. 1, or 0 with st
 * set (naming both the keyset's type and the option).
 *
 * What is accepted, as Tink's primitive set over such a keyset would:
 *  - the primary: ENABLED (tinkpb), the option's type (AesSivKey; AesGcmKey
 *    or ChaCha20Poly1305Key) and output prefix TINK. A primary with another
 *    prefix (LEGACY, RAW, CRUNCHY) is refused naming it: Tink allows it, ESP
 *    never makes it, and everything this store writes (names, values, the
 *    sealed map) carries TINK's prefix 0x01 || primary id; make a TINK key
 *    primary to open such a keyset;
 *  - non-primary ENABLED keys of any output prefix: TINK (0x01 || id),
 *    LEGACY and CRUNCHY (0x00 || id, and no byte appended to the data: that
 *    is LEGACY's rule for MACs, not AEADs), RAW (no prefix). They decrypt
 *    what carries their prefix (pcb_keyset_next) and are kept in the keyset;
 *  - in the value keyset, a non-primary ENABLED key of the other AEAD this
 *    store knows (AesGcmKey in a ChaCha20-Poly1305 store and back): its
 *    entries decrypt with that AEAD on OpenSSL, as Tink's AeadConfig would;
 *    new values go under the primary;
 *  - DISABLED and DESTROYED keys of those types, whatever their prefix,
 *    length or version: kept, never used to decrypt (as Tink).
 * Refused: any key of a type this store does not implement (XChaCha, EAX,
 * KMS...; Tink too fails unless that key type is registered; its material
 * could not be written back either), a non-primary AesGcmKey or ChaCha key
 * in the key keyset, an ENABLED key whose length is not the store's (so an
 * AES-128-GCM key, even non-primary). */
int pcb_keyset_check(pcb_store *s, int which, const pcb_tink_keyset *k, int with_keys,
                     pcb_status *st);
/* A fresh key for *k (keyset `which`): with replace, the keyset becomes
 * that one key; else it is added as the new primary. 1, or 0 with st set. */
int pcb_keyset_fresh(pcb_store *s, int which, pcb_tink_keyset *k, int replace, pcb_status *st);
/* k's primary key, NULL if it has none. */
const pcb_tink_key *pcb_keyset_primary(const pcb_tink_keyset *k);
/* The keys that may have sealed ct[0..len), in Tink's order: first the
 * ENABLED keys whose 5-byte output prefix ct starts with (TINK: 0x01 || id;
 * LEGACY, CRUNCHY: 0x00 || id; ids big-endian), then the ENABLED RAW keys
 * (the whole ct). *pos is 0 for the first call; each call returns the next
 * key and sets *skip to the prefix bytes to skip (5 or 0), or NULL when no
 * key is left. */
const pcb_tink_key *pcb_keyset_next(const pcb_tink_keyset *k, const uint8_t *ct, size_t len,
                                    size_t *pos, size_t *skip);
/* 1 if e (a key of the store's keyset `which`) is not of the type the store's
 * contexts run (a value key of the other AEAD, see pcb_keyset_check). */
int pcb_keyset_is_other_type(const pcb_store *s, int which, const pcb_tink_key *e);

/* Without a key: the keyset_info of a keyset's text into *info. 1 with
 * info, 0 when the text holds none (the pre-Tink text, or Tink's optional
 * field absent), -1 malformed (err set). */
int pcb_keyset_info(const char *hex, size_t len, pcb_tink_keyset *info, char *err, size_t cap);

#endif /* PCB_STORE_KEYSET_H */
