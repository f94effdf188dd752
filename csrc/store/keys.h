/*
 * store/keys.h — the store's keys: the master key and the two keysets.
 *
 * Owns: the master key (a 32-byte 0600 key file standing in for the Android
 * Keystore, created exclusively when absent, refused unless the user's own
 * and private and distinct from the store's files; or scrypt from a
 * passphrase with its salt and costs in "<store>.scrypt"), the rules of
 * that file (created exclusively; tagged with HMAC-SHA256 under a key
 * derived from the scrypt output; bounded before any work; a new store or
 * a rotation adopts an existing one only if it authenticates under the
 * derived key, or under the old master key for a rotation, and is no weaker
 * than asked; an existing store's file may be an old untagged one, tagged
 * once its keysets open), the keysets (a key id and
 * key for the names' AES-SIV and one for the values' AEAD) sealed under the
 * master key with AES-256-GCM as the file stores them, opening them again,
 * fresh keysets for a new store or a rotation, and setting up the entry
 * crypto contexts from them. Called with the store's lock held (or before
 * the store is shared). Lengths are bytes.
 */
#ifndef PCB_STORE_KEYS_H
#define PCB_STORE_KEYS_H

#include "store/internal.h"

/* The keyset entries a file held: [0] key keyset, [1] value keyset (NULL
 * where absent), as the file's text. */
typedef struct {
    char *hex[2];
    size_t len[2];
} pcb_keyset_text;

/* Loads the master key (may_create: create a key file or scrypt file when
 * absent; *created then says it did) and its AEAD contexts. */
int pcb_keys_load_master(pcb_store *s, int may_create, int *created, pcb_status *st);
/* Refuses a file whose keysets do not fit the options, before a master key
 * may be created for it (a failed open leaves no new file behind). */
int pcb_keys_check_present(pcb_store *s, const pcb_keyset_text *k, int file_has_entries,
                           pcb_status *st);
/* Opens the file's keysets with the master key, or creates keysets for a
 * new store (*created = 1); then sets up the entry crypto. */
int pcb_keys_load(pcb_store *s, const pcb_keyset_text *k, int *created, pcb_status *st);
/* Fresh keysets sealed under the current master key; bumps key_gen. */
int pcb_keys_new(pcb_store *s, pcb_status *st);
/* Sets up the entry crypto (SIV state, AEAD contexts) from the keys. */
int pcb_keys_contexts(pcb_store *s, pcb_status *st);
/* A rotation's old keys, moved aside whole (keys, keysets, their texts,
 * the entry contexts, the master key, its context and the options naming
 * it) so that putting them back cannot fail. Lock held for all four. */
typedef struct pcb_keys_saved pcb_keys_saved;
/* Moves them aside (the store then has no entry contexts until new keys
 * are set up). NULL out of memory, st set, nothing moved. */
pcb_keys_saved *pcb_keys_save(pcb_store *s, pcb_status *st);
/* rotate(): a new master key from new_opt's key file or passphrase (a new
 * passphrase keeps the store's salt and costs). 1, or 0 with st set. */
int pcb_keys_new_master(pcb_store *s, const pcb_store_options *new_opt, pcb_keys_saved *k,
                        pcb_status *st);
/* rotate(lazy=True), after pcb_keys_save (k): a fresh key added to the
 * value keyset as its primary (as Tink's KeysetManager rotate), its text
 * sealed again, the names' keyset and text as saved, the contexts set up;
 * key_gen bumped. 1, or 0 with st set. */
int pcb_keys_add_value_primary(pcb_store *s, const pcb_keys_saved *k, pcb_status *st);
/* restore = 1: the saved keys back, the new ones freed (key_gen bumped:
 * editors seal again); 0: the new ones stay. k (may be NULL) is wiped and
 * freed either way. */
void pcb_keys_end_saved(pcb_store *s, pcb_keys_saved *k, int restore);
/* Another writer's lazy rotation (a merge, file lock held; takes the
 * store's lock): if the file's value keyset text opens under the master
 * key and holds every enabled key of this store's value keyset (same ids
 * and material), it becomes this store's, its primary the one new puts
 * use. 1 adopted; 0 not such an extension (st not set: a re-keying); -1
 * error (st set). On 0 and -1 everything is as it was. */
int pcb_keys_adopt_value_keyset(pcb_store *s, const char *hex, size_t len, pcb_status *st);

#endif /* PCB_STORE_KEYS_H */
