/*
 * store/store.h — the encrypted key-value store: EncryptedSharedPreferences'
 * format and semantics, and the plain SharedPreferences baseline.
 *
 * Owns: the in-memory map (open addressing over an arena, laid out so a
 * lookup touches few cache lines), the entry crypto (AES-SIV names,
 * AES-GCM/ChaCha20-Poly1305 values, keysets sealed under a master key), the
 * master key (a 0600 file or scrypt from a passphrase), loading, atomic
 * commits (temporary file, fsync, rename, directory fsync), apply()'s
 * background writer thread, rotation, a decrypted read-through cache, the
 * "faithful" mode that repeats ESP's per-call work, and the stage clocks and
 * heap accounting the benchmarks read. No Python: every call takes a
 * pcb_status and may run without the GIL. Thread-safe: one mutex guards the
 * map and keys, another serializes file writes, each editor has its own;
 * a forked child gets fresh locks and its own writer. Across processes and
 * store objects, writes take a file lock and merge other writers' changes
 * per key (store/merge.h), reads take none.
 *
 * Values cross this API in ESP's plaintext serialization: a big-endian int32
 * type id (pcb_pref_type) followed by the payload (string: int32 length +
 * UTF-8; string set: per member int32 length + bytes; int: int32; long:
 * int64; float: IEEE float32; boolean: one byte), all big-endian.
 */
#ifndef PCB_STORE_H
#define PCB_STORE_H

#include <stddef.h>
#include <stdint.h>

#include "common/buf.h"
#include "common/status.h"
#include "crypto/evp.h"
#include "format/prefs_xml.h"

typedef enum { PCB_KEYENC_NONE = 0, PCB_KEYENC_SIV = 1 } pcb_key_encryption;
typedef enum { PCB_VALENC_NONE = 0, PCB_VALENC_GCM = 1, PCB_VALENC_CHACHA = 2 } pcb_value_encryption;
typedef enum { PCB_LAYOUT_ENTRIES = 0, PCB_LAYOUT_FILE = 1 } pcb_layout;

typedef struct {
    int encrypted;                 /* 0: the plain SharedPreferences baseline */
    pcb_key_encryption key_enc;
    pcb_value_encryption value_enc;
    pcb_layout layout;
    int cache;                     /* decrypted read-through cache */
    int faithful;                  /* repeat ESP's per-call work */
    const char *master_key_file;   /* exactly one of these two when encrypted */
    const char *passphrase;
    size_t passphrase_len;
    uint64_t scrypt_n;             /* cost for a new passphrase file (0: default 2^15) */
    double lock_timeout;           /* seconds a write waits for another writer's file lock
                                      (0: the default, 10 s; negative: no wait) */
    int crypto_backend;            /* pcb_backend of the per-entry crypto (0: OpenSSL), or
                                      PCB_STORE_BK_AUTO: the floor kernels where they serve
                                      the options on this CPU, else OpenSSL */
} pcb_store_options;

#define PCB_STORE_BK_AUTO (-1)

/* The largest scrypt_n a new passphrase file may ask for (with r = 8 it
 * needs 128 r N = 1 GiB, the most scrypt may take). */
#define PCB_SCRYPT_N_MAX ((uint64_t)1 << 20)

/* Where time goes in put/get, accumulated while stage clocks are on. */
typedef enum {
    PCB_STAGE_SIV, PCB_STAGE_NONCE, PCB_STAGE_AEAD, PCB_STAGE_BASE64,
    PCB_STAGE_LOOKUP, PCB_STAGE_IO, PCB_STAGE_COUNT
} pcb_stage;

typedef struct pcb_store pcb_store;
typedef struct pcb_edit pcb_edit;

/* Opens (creating if absent) the store at path. *created_key (may be NULL)
 * is set when this open generated the master key and keysets. The store's
 * paths are fixed here: the file path reaches (its final symbolic links
 * followed; a link itself is kept by every write), named absolutely in its
 * canonical directory, with its lock file "<file>-lock" and scrypt file
 * "<file>.scrypt" beside it; a later chdir() or a swapped link changes
 * nothing. The store name (the names' associated data, ESP's prefs file
 * name) is that file's base name without ".xml". */
pcb_store *pcb_store_open(const char *path, const pcb_store_options *opt,
                          const pcb_evp_cache *cache, int *created_key, pcb_status *st);
/* Waits for pending writes, wipes keys and frees. Returns 1, or 0 if a
 * background write had failed (st set); the store is freed either way. */
int pcb_store_close(pcb_store *s, pcb_status *st);

/* The value of name: *found = 0 if absent. out gets the plaintext
 * serialization (it is reset first). Returns 1, or 0 with st set. */
int pcb_store_get(pcb_store *s, const char *name, size_t name_len, pcb_buf *out,
                  int *found, pcb_status *st);
int pcb_store_contains(pcb_store *s, const char *name, size_t name_len, int *found,
                       pcb_status *st);
size_t pcb_store_count(pcb_store *s);

/* Calls fn for every entry with its plain name and plaintext serialization;
 * fn returns 0 to go on. Returns 1, or 0 with st set (or if fn stopped). */
typedef int (*pcb_store_entry_fn)(void *arg, const char *name, size_t name_len,
                                  const uint8_t *value, size_t value_len);
int pcb_store_all(pcb_store *s, pcb_store_entry_fn fn, void *arg, pcb_status *st);

/* Editors: puts are encrypted at once (as ESP's Editor does), applied to
 * memory and disk at commit. */
pcb_edit *pcb_edit_new(pcb_store *s, pcb_status *st);
int pcb_edit_put(pcb_edit *e, const char *name, size_t name_len, const uint8_t *value,
                 size_t value_len, pcb_status *st);
int pcb_edit_remove(pcb_edit *e, const char *name, size_t name_len, pcb_status *st);
void pcb_edit_clear(pcb_edit *e);
/* At commit, before the puts: removes every entry whose name does not open
 * (which no plain name reaches), each noted for the merge, in the
 * same all-or-nothing apply as the rest (commit.c start_map). */
void pcb_edit_remove_unreadable(pcb_edit *e);
/* sync = 1: commit() — written and durable on return; if the write fails,
 * 0 with st set and memory as before the commit (all or nothing). sync = 0:
 * apply() — memory now (all or nothing), disk on the writer thread; a
 * failed background write stays pending (see pcb_store_flush). The editor
 * is emptied either way. Editors are thread-safe: a put racing a commit
 * lands in it or in the next one; the last op on a name wins, a clear is
 * done first (Android's order). */
int pcb_edit_commit(pcb_edit *e, int sync, pcb_status *st);
void pcb_edit_free(pcb_edit *e);

/* Waits until every applied change is on disk; if a background write
 * failed, tries once more here. 0 with st set while changes stay pending
 * (every later flush/close/commit retries them); never waits forever. */
int pcb_store_flush(pcb_store *s, pcb_status *st);

/* Re-encrypts everything under new keysets, and under a new master key when
 * new_opt names one (NULL: keep it); atomic like commit. */
int pcb_store_rotate(pcb_store *s, const pcb_store_options *new_opt, pcb_status *st);
/* Lazy rotation (rotate_lazy.c): a new primary key added to the value
 * keyset, nothing re-encrypted; later puts use it, older entries still open
 * under their keys. The keysets are written at once. */
int pcb_store_rotate_lazy(pcb_store *s, pcb_status *st);

/* The store name and the absolute file path fixed at open (pcb_store_open);
 * owned by the store, constant while it is open. */
const char *pcb_store_name(const pcb_store *s);
const char *pcb_store_file(const pcb_store *s);

/* Heap bytes the store holds (its own allocations) and the file's size. */
size_t pcb_store_heap_bytes(pcb_store *s);
uint64_t pcb_store_disk_bytes(pcb_store *s);

/* Stage clocks: on/off, and read-and-reset of the accumulated ns. */
void pcb_store_stage_clocks(pcb_store *s, int on);
void pcb_store_take_stages(pcb_store *s, uint64_t ns[PCB_STAGE_COUNT]);

/* Which library seals this store's names and values, crypto_backend="auto"
 * resolved (pcb_backend_name: "floor", "openssl", ...): "none" for a part
 * the store does not encrypt; a whole-map layout is sealed by "openssl".
 * Static strings; the options are fixed at open, so no lock is needed. */
void pcb_store_crypto_libraries(const pcb_store *s, const char **names, const char **values);

/* The floor of put/get's crypto stages at one entry's sizes: the store's
 * per-entry crypto alone, on the floor kernels (crypto/floor.h) keyed with
 * the store's primary keys, each in a bare loop of n calls timed in 5
 * slices (the least mean per call, ns). *siv_ns: floor AES-SIV encryption
 * of a name_len-byte name with the store name folded in (get and put both
 * seal the name); *aead_ns: floor AES-GCM of a value_len-byte serialization
 * with the associated data the store's records use (the Base64 of the
 * sealed name, or the plain name), opened (get) or sealed (put). 0 where the
 * stage has no floor: the store does not seal that part, its value AEAD is
 * ChaCha20-Poly1305, or this CPU lacks the floor. Takes the store's lock to
 * copy the keys, not while timing. 1, or 0 (memory) with st set. */
int pcb_store_stage_floor(pcb_store *s, int put, size_t name_len, size_t value_len, uint64_t n,
                          uint64_t *siv_ns, uint64_t *aead_ns, pcb_status *st);

/* A wait for a store or editor lock that is busy, or for another writer's
 * file lock, runs the embedder's hooks (common/wait.h: py/ releases the GIL,
 * and gives up a file-lock wait on Ctrl-C: PCB_E_INTERRUPTED). */

/* 1 if opt's crypto_backend has what opt needs (always for OpenSSL), else 0
 * with st set (PCB_E_VALUE naming the backends that have it); open checks it. */
int pcb_store_check_backend(const pcb_store_options *opt, const pcb_evp_cache *cache,
                            pcb_status *st);

/* 1 if name is one of ESP's reserved keyset names. */
int pcb_store_is_reserved(const char *name, size_t name_len);

#endif /* PCB_STORE_H */
