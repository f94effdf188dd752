/*
 * store/internal.h — what the store's own files share, and nothing else
 * includes: the pcb_store and pcb_edit structs, the codec chosen at open,
 * the file's reserved names and the store's fixed sizes, the lock helpers
 * and the stage clocks.
 *
 * Files of the store layer and what each owns:
 *   map.c      the arena and hash table (map.h)
 *   fileio.c   whole-file reads, atomic writes, temp files (fileio.h)
 *   entries.h  the map and the plain cache: the one swap of the map, the
 *              one forgetting of the cache (inline)
 *   codec.c    the codec chosen at open; nonces; names and values sealed,
 *              opened and described (codec.h), with the keys keys.c set
 *              up (s->ek, fixed at open: a load, not a call, per get)
 *   keys.c     every key, in its private struct pcb_keys (s->keys): the
 *              master key (key file or scrypt, the .scrypt side file),
 *              keysets sealed and opened, their texts, key_gen, the entry
 *              crypto contexts; a rotation's saved state and undo (keys.h)
 *   scrypt.c   the .scrypt file's format, bounds, derivation and tag, over
 *              parameters keys.c owns (scrypt.h)
 *   keyset.c   the keysets as Tink writes them (EncryptedKeyset, Keyset),
 *              fresh keys, keys found by id (keyset.h)
 *   persist.c  the file's bytes for the map (serialize) and the map from
 *              the file's bytes (load) (persist.h)
 *   lock.c     the writers' file lock and its change counter (lock.h)
 *   merge.c    sharing the file: lock, re-read and merge (merge.h)
 *   store.c    open, close, flush, reads, accounting (store.h)
 *   txn.c      THE path of every write of the file (txn.h): the creation
 *              write at open, and every change: lock, merge, build, write,
 *              then publish (side files after) or put memory back; the
 *              generations and the record of a failed write
 *   check.c    assert_store_ok: the cross-field invariants (PCB_ASSERTS)
 *   commit.c   editors, commit and apply, the background writer (store.h)
 *   rotate.c   key rotation (store.h)
 *   rotate_lazy.c  lazy rotation: a new primary value key (store.h)
 *   bench.c    the timed workloads (bench.h)
 *
 * Locking: `lock` guards the map and the plain cache, the keys and crypto
 * contexts (keys.c's), the generations and the stage clocks; `io_lock`
 * serializes file writes and is
 * taken before `lock` when both are held; an editor's own `lock` comes
 * before both. The file lock (merge.h), which serializes writers across
 * processes and Store objects, is taken after io_lock and before `lock`.
 * Every wait for a mutex goes through pcb_lock_mutex, which
 * tries first and runs the embedder's wait hooks (py/: release the GIL)
 * only when it must block. While `writing` is set (a transaction's write in
 * flight, txn.h) no one else changes memory, so a failed write can put it
 * back exactly. Debug builds assert these rules (PCB_ASSERTS, below), and
 * at every release of `lock` the cross-field invariants (check.c).
 *
 * Generations (txn.c's): mem_gen counts changes applied to memory,
 * disk_gen the latest one on disk. A failed write of applied changes
 * leaves disk_gen behind: they stay pending (write_errno, fail_gen: the
 * generation that failed) until a later write (the writer at the next
 * change, flush, close) gets them out. A failed commit or rotation is
 * undone instead (txn.h).
 */
#ifndef PCB_STORE_INTERNAL_H
#define PCB_STORE_INTERNAL_H

#include <pthread.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "common/buf.h"
#include "common/status.h"
#include "common/timing.h"
#include "common/wait.h"
#include "crypto/evp.h"
#include "crypto/siv.h"
#include "format/tinkpb.h"
#include "store/map.h"
#include "store/merge.h"
#include "store/store.h"

#define KEY_KEYSET "__androidx_security_crypto_encrypted_prefs_key_keyset__"
#define VALUE_KEYSET "__androidx_security_crypto_encrypted_prefs_value_keyset__"
#define SEALED_NAME "__pcb_sealed_map__"
#define PREFIX_LEN 5    /* Tink's output prefix: 0x01 || key_id */
#define NONCE_LEN 12
#define TAG_LEN PCB_AEAD_TAG_LEN
#define SIV_KEY_LEN 64
#define VALUE_KEY_LEN 32
#define MASTER_KEY_LEN 32
#define NONCE_POOL (NONCE_LEN * 256)
#define MAX_FILE ((size_t)1 << 32)   /* 4 GiB: larger files are refused before reading */
#define DEFAULT_SCRYPT_N (1u << 15)

/* What the records of the map hold for a name (see codec.h). */
typedef enum {
    PCB_NAMES_PLAIN,    /* the plain name (records and file) */
    PCB_NAMES_SIV,      /* the raw SIV blob 0x01 || kid || V || C; the file has its Base64 */
    PCB_NAMES_SIV_TEXT  /* faithful: the file's Base64 text of that blob */
} pcb_name_codec;

/* What the records of the map hold for a value. */
typedef enum {
    PCB_VALUES_PLAIN,     /* the plaintext serialization */
    PCB_VALUES_B64_TEXT,  /* faithful, value_encryption='none': its Base64 text */
    PCB_VALUES_AEAD,      /* the raw AEAD blob 0x01 || kid || nonce || ct || tag */
    PCB_VALUES_AEAD_TEXT  /* faithful: the file's Base64 text of that blob */
} pcb_value_codec;

/* How the file holds the map. */
typedef enum {
    PCB_FILE_NATIVE,     /* plain SharedPreferences: native typed elements */
    PCB_FILE_ENTRIES,    /* ESP: keysets, then one Base64 <string> per entry */
    PCB_FILE_SEALED_MAP  /* layout='file': keysets, then the whole map sealed as one value */
} pcb_file_codec;

/* Every rule of how names, values and the file are encoded, decided once
 * at open from the options (pcb_codec_choose): the encoding code reads
 * these, not the options. A few options are read where they are used, each
 * by one owner: cache (entries.h; the get path tests it), the master key's
 * source, passphrase and scrypt_n (keys.c; a rotation replaces them there),
 * value_enc (keys.c's value cipher, keyset.c's key types,
 * codec_backend.c's), crypto_backend (codec_backend.c, which sets bk_*
 * below), lock_timeout (merge.c), encrypted (keys.c, store.c at open). */
typedef struct {
    pcb_name_codec names;
    pcb_value_codec values;
    pcb_file_codec file;
    int per_call_setup;   /* faithful: key schedules set up and nonces drawn per call, as Tink */
    int records_text;     /* records hold the file's text as is (faithful entries) */
    int key_keyset;       /* the file holds a key (AES-SIV) keyset */
    int value_keyset;     /* the file holds a value (AEAD) keyset */
    int plaintext_in_map; /* the map holds plaintext: wiped when freed */
    int xml_names;        /* plain names reach the XML as text (cannot hold NUL) */
    int xml_values;       /* string values reach the XML as text (cannot hold NUL) */
    int bk_values, bk_names; /* sealed on opt.crypto_backend (codec_backend.c) */
} pcb_codec;

typedef struct {
    EVP_CIPHER_CTX *enc, *dec;
} pcb_aead_pair;

/* The primary keys and the entry crypto contexts: what the get and put
 * paths (codec.c, codec_backend.c) and the sealed map (persist.c) read on
 * every call. They live inside keys.c's struct pcb_keys and only keys.c
 * writes them (open, rotation, its undo, a lazy rotation adopted); the
 * store's `ek` points at them from open to close (the address never
 * changes: a rotation's undo copies the old keys back in place), so a read
 * costs a load, not a call. Store lock held. */
typedef struct {
    uint8_t siv_key[SIV_KEY_LEN], value_key[VALUE_KEY_LEN];
    uint8_t siv_kid[4], value_kid[4]; /* the primaries' ids, big-endian as in a prefix */
    pcb_siv siv;                      /* AES-SIV under siv_key (siv_ready) */
    int siv_ready;
    uint8_t s2v_store[16];            /* S2V state after the store name component */
    pcb_aead_pair value;              /* the value AEAD under value_key */
    const EVP_CIPHER *value_cipher;   /* AES-256-GCM or ChaCha20-Poly1305 (the options') */
    const pcb_tink_keyset *keyset[2]; /* [0] key, [1] value: every key (keys.c's) */
} pcb_entry_keys;

struct pcb_store {
    pthread_mutex_t lock;    /* map, cache, keys, crypto contexts, generations */
    pthread_mutex_t io_lock; /* one file write at a time */
    pthread_cond_t cond;
    pthread_t writer;
    int writer_started, writer_stop;
    struct pcb_gens *gens;            /* txn.c's (opaque): generations, `writing`, a failed write */
    pcb_store *fork_prev, *fork_next; /* every open store, for the fork handler (store.c) */
    int registered, sync_ready;       /* in that list; the locks above initialised */

    char *path, *dir, *store_name, *scrypt_path;
    size_t store_name_len;
    pcb_store_options opt;
    pcb_codec codec;
    const pcb_evp_cache *cache;
    OSSL_LIB_CTX *libctx;

    struct pcb_keys *keys; /* keys.c's (opaque): master key, scrypt parameters, keysets, their
                            * texts, key_gen, the master key's context; wiped and freed by keys.c */
    pcb_entry_keys *ek;    /* inside *keys, fixed at open: the primaries and entry contexts */
    struct pcb_codec_bk *bk; /* codec_backend.c: contexts on opt.crypto_backend (NULL: none) */

    uint8_t nonce_pool[NONCE_POOL]; /* codec.c's: value nonces drawn ahead */
    size_t nonce_left;
    unsigned long nonce_fork_gen;

    /* entries.h's: the records, and (cache=1) plain name -> plaintext. Changed
     * in place by commits and loads; replaced, and the cache forgotten, only
     * through entries.h (pcb_entries_swap). */
    pcb_map map;
    pcb_map plain_cache;

    int stages_on;
    uint64_t stage_ns[PCB_STAGE_COUNT];

    pcb_buf scratch; /* name/AAD encodings under the lock */
    pcb_buf sname;   /* reads (lock held): the stored form of the name looked up, kept
                      * between calls so that a get allocates nothing; it holds a SIV
                      * blob or a plain name, which the map holds anyway: wiped when freed */

    pcb_share *share; /* merge.c: other writers of the file (opaque); io_lock */

    /* Debug builds (PCB_ASSERTS): which thread holds lock and io_lock. */
    pthread_t lock_owner, io_owner;
    int lock_owned, io_owned;
};

struct pcb_edit {
    pcb_store *s;
    pthread_mutex_t lock; /* the fields below: an editor may be shared between threads */
    int clear;
    uint64_t key_gen;
    pcb_buf ops; /* records: kind, lengths, plain name, stored name, stored value, plaintext */
    size_t n_ops;
    size_t dedup_at; /* log bytes that trigger the next dedup (0: the first) */
    uint64_t seed;   /* of the dedup's name hash */
    pcb_edit *fork_prev, *fork_next; /* every editor, for the fork handler (store.c) */
};

/* Locks m: at once if free, else around the embedder's wait hooks
 * (common/wait.h). */
static inline void pcb_lock_mutex(pthread_mutex_t *m)
{
    if (pthread_mutex_trylock(m) == 0)
        return;
    void *token = pcb_wait_begin();
    pthread_mutex_lock(m);
    pcb_wait_end(token);
}

/* Lock rules are asserted in debug builds (PCB_ASSERTS: setup.py's
 * PCB_DEBUG=1 and PCB_SANITIZE=1): the store's lock and io_lock go through
 * the helpers below, which record the holder, and every function that
 * needs one asserts it (PCB_ASSERT_LOCKED, PCB_ASSERT_IO), as SQLite's
 * pager asserts its states. Release builds compile them away. */
#ifdef PCB_ASSERTS
#include <assert.h>
#define PCB_ASSERT(c) assert(c)
#define PCB_OWN_(owner, owned) ((owner) = pthread_self(), (owned) = 1)
#define PCB_DISOWN_(owner, owned) (assert((owned) && pthread_equal((owner), pthread_self())), (owned) = 0)
#define PCB_ASSERT_LOCKED(s) assert((s)->lock_owned && pthread_equal((s)->lock_owner, pthread_self()))
#define PCB_ASSERT_IO(s) assert((s)->io_owned && pthread_equal((s)->io_owner, pthread_self()))
#define PCB_ASSERT_UNLOCKED(s) assert(!((s)->lock_owned && pthread_equal((s)->lock_owner, pthread_self())))
/* check.c: the cross-field invariants (generations, `writing` => io_lock
 * held, the cache empty unless cache=1, keys loaded <=> codec ready), as
 * SQLite's assert_pager_state; run at every release of the store's lock. */
void pcb_assert_store_ok(const pcb_store *s);
#define PCB_ASSERT_STORE_OK(s) pcb_assert_store_ok(s)
#else
#define PCB_ASSERT(c) ((void)0)
#define PCB_OWN_(owner, owned) ((void)0)
#define PCB_DISOWN_(owner, owned) ((void)0)
#define PCB_ASSERT_LOCKED(s) ((void)0)
#define PCB_ASSERT_IO(s) ((void)0)
#define PCB_ASSERT_UNLOCKED(s) ((void)0)
#define PCB_ASSERT_STORE_OK(s) ((void)0)
#endif

static inline void pcb_store_lock(pcb_store *s)
{
    PCB_ASSERT_UNLOCKED(s); /* not recursive */
    pcb_lock_mutex(&s->lock);
    PCB_OWN_(s->lock_owner, s->lock_owned);
}
static inline void pcb_store_unlock(pcb_store *s)
{
    PCB_ASSERT_STORE_OK(s);
    PCB_DISOWN_(s->lock_owner, s->lock_owned);
    pthread_mutex_unlock(&s->lock);
}
/* Waits on the store's condition (lock held; held again on return). */
static inline void pcb_store_wait(pcb_store *s)
{
    PCB_ASSERT_STORE_OK(s);
    PCB_DISOWN_(s->lock_owner, s->lock_owned);
    pthread_cond_wait(&s->cond, &s->lock);
    PCB_OWN_(s->lock_owner, s->lock_owned);
}
/* pcb_store_wait for a wait that may be long (flush waiting for the
 * writer, which may wait for another writer's file lock): in slices, the
 * embedder asked between two without the lock (common/wait.h). 1 (check
 * the predicate again), or 0 when the embedder gave up; the lock is held
 * again either way, and may have been let go meanwhile. */
static inline int pcb_store_wait_interruptible(pcb_store *s)
{
    PCB_ASSERT_STORE_OK(s);
    PCB_DISOWN_(s->lock_owner, s->lock_owned);
    int ran_out = pcb_wait_cond_slice(&s->cond, &s->lock);
    PCB_OWN_(s->lock_owner, s->lock_owned);
    if (!ran_out)
        return 1;
    pcb_store_unlock(s);
    int stop = pcb_wait_interrupted();
    pcb_store_lock(s);
    return !stop;
}
/* io_lock: one file write at a time; taken before the store's lock. */
static inline void pcb_io_lock(pcb_store *s)
{
    PCB_ASSERT_UNLOCKED(s);
    PCB_ASSERT(!(s->io_owned && pthread_equal(s->io_owner, pthread_self())));
    pcb_lock_mutex(&s->io_lock);
    PCB_OWN_(s->io_owner, s->io_owned);
}
static inline void pcb_io_unlock(pcb_store *s)
{
    PCB_DISOWN_(s->io_owner, s->io_owned);
    pthread_mutex_unlock(&s->io_lock);
}

/* Stage clocks (lock held): STAGE_BEGIN starts one, each STAGE_END adds the
 * time since the last mark to a stage. */
#define STAGE_BEGIN(s) uint64_t stage_t0_ = (s)->stages_on ? pcb_clock_ns() : 0
#define STAGE_END(s, which)                                        \
    do {                                                           \
        if ((s)->stages_on) {                                      \
            uint64_t t1_ = pcb_clock_ns();                         \
            (s)->stage_ns[which] += t1_ - stage_t0_;               \
            stage_t0_ = t1_;                                       \
        }                                                          \
    } while (0)

/* 1 if name is one of ESP's reserved keyset names (store.h's
 * pcb_store_is_reserved for the embedder). */
static inline int pcb_reserved_name(const char *name, size_t len)
{
    return (len == sizeof KEY_KEYSET - 1 && memcmp(name, KEY_KEYSET, len) == 0)
           || (len == sizeof VALUE_KEYSET - 1 && memcmp(name, VALUE_KEYSET, len) == 0);
}

/* Shared between the layer's files (each defined in the file named). */
/* keys.c: copies the options' strings (the master key's) so the store owns them; 1/0 (memory). */
int pcb_store_own_options(pcb_store_options *dst, const pcb_store_options *src);
/* store.c: pcb_store_all with the lock already held. */
int pcb_store_all_locked(pcb_store *s, pcb_store_entry_fn fn, void *arg, pcb_status *st);
/* commit.c: appends one op to an editor log, its stored forms computed
 * under the current keys (lock held). */
int pcb_edit_encode_op(pcb_store *s, pcb_buf *ops, int kind, const char *name, size_t nl,
                       const uint8_t *pt, size_t pl, pcb_status *st);
/* store.c: an editor joins / leaves the list the fork handler walks (its
 * lock is made afresh in a forked child). */
void pcb_store_register_edit(pcb_edit *e);
void pcb_store_unregister_edit(pcb_edit *e);
#endif /* PCB_STORE_INTERNAL_H */
