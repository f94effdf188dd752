/*
 * store/keyset.h — the store's two keysets as Tink and ESP write them.
 *
 * Owns: a keyset's text in the file (lowercase hex of a serialized Tink
 * EncryptedKeyset: encrypted_keyset = the master key's AES-256-GCM output
 * IV(12) || ciphertext || tag(16) over the serialized Keyset with empty
 * associated data, the AndroidKeystoreAesGcm layout; keyset_info in the
 * clear), sealing and opening it, the pre-Tink text of earlier releases
 * (read, never written), which key type each keyset must hold for the
 * store's options, fresh keys (random 31-bit ids, unique in the keyset),
 * and finding a key by the id of a ciphertext's prefix. Called with the
 * store's lock held (or before the store is shared); the inspection
 * functions take no store and are pure. Lengths are bytes.
 */
#ifndef PCB_STORE_KEYSET_H
#define PCB_STORE_KEYSET_H

#include "format/tinkpb.h"
#include "store/internal.h"

/* Which keyset: the names' (AES-SIV) or the values' (AEAD). */
enum { PCB_KS_KEY = 0, PCB_KS_VALUE = 1 };

/* The file's text for s->keyset[which], sealed under the master key, into
 * out (reset). 1, or 0 with st set. */
int pcb_keyset_seal(pcb_store *s, int which, pcb_buf *out, pcb_status *st);
/* Opens a keyset's text into s->keyset[which] and checks it fits the store
 * (pcb_keyset_check). 1 ok, 2 ok but in the pre-Tink text (to be written
 * again as Tink's), 0 not authentic under the master key (st not set), -1
 * malformed or unfit (st set: StoreFormatError naming the keyset). */
int pcb_keyset_open(pcb_store *s, int which, const char *hex, size_t len, pcb_status *st);
/* Refuses a keyset (its keys or its keyset_info) that does not fit the
 * store's options: a type URL of another algorithm, a key length, version,
 * material or output prefix this store does not implement. 1, or 0 with st
 * set (naming both the keyset's type and the option). */
int pcb_keyset_check(pcb_store *s, int which, const pcb_tink_keyset *k, int with_keys,
                     pcb_status *st);
/* A fresh key for s->keyset[which]: with replace, the keyset becomes that
 * one key; else it is added as the new primary. Copies the primary into the
 * store's key fields. 1, or 0 with st set. */
int pcb_keyset_fresh(pcb_store *s, int which, int replace, pcb_status *st);
/* Copies s->keyset[which]'s primary into siv_key/siv_kid or
 * value_key/value_kid. */
void pcb_keyset_use_primary(pcb_store *s, int which);
/* The enabled key of k whose id is kid (4 bytes, big-endian, as in a
 * ciphertext's prefix), or NULL. */
const pcb_tink_key *pcb_keyset_find(const pcb_tink_keyset *k, const uint8_t kid[4]);

/* Without a key: the keyset_info of a keyset's text into *info. 1 with
 * info, 0 when the text holds none (the pre-Tink text, or Tink's optional
 * field absent), -1 malformed (err set). */
int pcb_keyset_info(const char *hex, size_t len, pcb_tink_keyset *info, char *err, size_t cap);

#endif /* PCB_STORE_KEYSET_H */
