/*
 * store/keys.h — the store's keys: the master key and the two keysets.
 *
 * Owns: the master key (a 32-byte 0600 key file standing in for the Android
 * Keystore, created exclusively when absent, refused unless the user's own
 * and private and distinct from the store's files; or scrypt from a
 * passphrase with its salt and costs in "<store>.scrypt"), the rules of
 * that file (its format, bounds and tag are scrypt.h's; here: created
 * exclusively; tagged with HMAC-SHA256 under a key derived from the scrypt
 * output; bounded before any work; a new store or
 * a rotation adopts an existing one only if it authenticates under the
 * derived key, or under the old master key for a rotation, and is no weaker
 * than asked; an existing store's file may be an old untagged one, tagged
 * once its keysets open), the keysets (a key id and
 * key for the names' AES-SIV and one for the values' AEAD) sealed under the
 * master key with AES-256-GCM as the file stores them, opening them again,
 * fresh keysets for a new store or a rotation, and setting up the entry
 * crypto contexts from them.
 *
 * The state is one struct pcb_keys, private to this file (the store holds an
 * opaque pointer, s->keys): the master key and its AES-256-GCM context, the
 * scrypt parameters and whether their tag verified, the two keysets (every
 * key) and their sealed texts, whether the value keyset was an earlier
 * release's text, key_gen, and the primaries with the entry contexts
 * (pcb_entry_keys, internal.h: s->ek points into it at open, for the get
 * and put paths). Made, wiped and freed here (pcb_keys_state_new / _free);
 * every change goes through the functions below, and a rotation moves the
 * whole state aside (pcb_keys_save) so that its undo puts back exactly what
 * was, the KDF parameters included.
 *
 * Thread safety: called with the store's lock held (or before the store is
 * shared), except pcb_keys_write_side (io_lock and the file lock held).
 * Lengths are bytes.
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

/* The key state of a new store (nothing loaded: no master key, no
 * keysets); NULL out of memory. The store's ek is pcb_keys_entry of it. */
struct pcb_keys *pcb_keys_state_new(const pcb_store_options *opt, const pcb_evp_cache *cache);
/* Wipes and frees it, contexts included; NULL is fine. */
void pcb_keys_state_free(struct pcb_keys *k);
/* The primaries and entry contexts inside k (fixed for k's life). */
pcb_entry_keys *pcb_keys_entry(struct pcb_keys *k);
/* Bumped whenever the primaries change (rotations, their undo, a lazy
 * rotation adopted): an editor whose puts were sealed at another key_gen
 * seals them again. */
uint64_t pcb_keys_gen(const pcb_store *s);
/* The sealed text of keyset which (0 key, 1 value), as the file holds it. */
const pcb_buf *pcb_keys_text(const pcb_store *s, int which);
/* 1 if the value keyset was an earlier release's text (no type URL). */
int pcb_keys_pre_tink_values(const pcb_store *s);
/* assert_store_ok's part (check.c): no rotation step half done; before
 * the keys are loaded no entry context exists, and once they are, the
 * master context, keysets, texts and entry contexts are exactly those the
 * codec needs (a plain store: none). */
int pcb_keys_ok(const pcb_store *s);
/* Heap bytes of the key state (accounting; OpenSSL contexts estimated). */
size_t pcb_keys_heap_bytes(const pcb_store *s);

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
/* A rotation's old keys, moved aside whole (the whole struct pcb_keys:
 * keys, keysets, their texts, the entry contexts, the master key, its
 * context, the scrypt parameters and their state; and the options naming
 * the master key) so that putting them back cannot fail. A passphrase
 * rotation also keeps here the .scrypt file's new text, written only once
 * the store's file is published (pcb_keys_write_side): a rotation that
 * fails never changed the side file. Lock held for all but that write. */
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
/* The side file a published rotation changes (txn.h's after_write: io_lock
 * and the file lock held, the store's lock not, after the store's file is
 * on disk): a passphrase rotation's .scrypt, its tag under the new master
 * key (salt and costs kept). Best effort: the store's file is already
 * published, and a stale tag is told from tampering at the next open (the
 * keysets authenticate the key) and written again there. k may be NULL. */
void pcb_keys_write_side(pcb_store *s, const pcb_keys_saved *k);
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
