/*
 * pcb_store.c — the encrypted key-value store (see pcb_store.h).
 *
 * Memory layout: entries live in one arena as records [name_len | value_len |
 * name | value], 8-byte aligned; an open-addressing table of 8-byte slots
 * (32-bit hash tag, 32-bit record reference) points into it. A hit touches
 * one slot and one record; a miss usually one slot. Records hold what the
 * file holds, decoded: in lean mode the raw SIV blob and raw value blob (the
 * Base64 is undone once, at load); in faithful mode the Base64 text, as
 * Android's SharedPreferencesImpl keeps Strings. The plain baseline keeps the
 * plaintext serialization under the plain name.
 */
#define _GNU_SOURCE
#include "pcb_store.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <time.h>
#include <unistd.h>
#include <dirent.h>

#include <openssl/core_names.h>
#include <openssl/crypto.h>
#include <openssl/err.h>
#include <openssl/kdf.h>
#include <openssl/params.h>
#include <openssl/rand.h>

#include "pcb_b64.h"
#include "pcb_siv.h"
#include "pcb_timing.h"
#include "pcb_value.h"

#define KEY_KEYSET "__androidx_security_crypto_encrypted_prefs_key_keyset__"
#define VALUE_KEYSET "__androidx_security_crypto_encrypted_prefs_value_keyset__"
#define SEALED_NAME "__pcb_sealed_map__"
#define PREFIX_LEN 5    /* 0x01 || key_id */
#define NONCE_LEN 12
#define TAG_LEN 16
#define SIV_KEY_LEN 64
#define VALUE_KEY_LEN 32
#define MASTER_KEY_LEN 32
#define NONCE_POOL (NONCE_LEN * 256)
#define MAX_FILE ((size_t)1 << 32)   /* 4 GiB: larger files are refused before reading */
#define DEFAULT_SCRYPT_N (1u << 15)

/* ------------------------------------------------------------- the map */

#define REF_EMPTY 0u
#define REF_TOMB 1u
#define DEAD_BIT 0x80000000u  /* in name_len: record replaced or removed */
#define BAD_BIT 0x40000000u   /* in name_len: could not be decoded at load */
#define LEN_MASK 0x3fffffffu

typedef struct {
    uint32_t tag;
    uint32_t ref; /* REF_EMPTY, REF_TOMB, or record offset / 8 + 2 */
} slot;

typedef struct {
    uint32_t name_len; /* with DEAD_BIT / BAD_BIT flags */
    uint32_t value_len;
} rec_header;

typedef struct {
    slot *slots;
    size_t mask;   /* capacity - 1; capacity is a power of two */
    size_t live, tombs;
    uint8_t *arena;
    size_t arena_len, arena_cap, garbage;
    uint64_t seed; /* of the hash */
    int secret;    /* holds plaintext: wiped before its memory is released */
} pcb_map;

static uint64_t hash_bytes(uint64_t seed, const uint8_t *p, size_t n)
{
    /* A small multiply-xorshift hash (murmur-style), 8 bytes a step, seeded
     * per map so that a crafted file cannot line its names up on one slot. */
    const uint64_t m = 0xc6a4a7935bd1e995ULL;
    uint64_t h = seed ^ (n * m);
    while (n >= 8) {
        uint64_t k;
        memcpy(&k, p, 8);
        k *= m;
        k ^= k >> 47;
        k *= m;
        h ^= k;
        h *= m;
        p += 8;
        n -= 8;
    }
    uint64_t k = 0;
    for (size_t i = 0; i < n; i++)
        k |= (uint64_t)p[i] << (8 * i);
    h ^= k;
    h *= m;
    h ^= h >> 47;
    h *= m;
    h ^= h >> 47;
    return h;
}

static inline size_t rec_size(uint32_t name_len, uint32_t value_len)
{
    return (sizeof(rec_header) + (name_len & LEN_MASK) + value_len + 7) & ~(size_t)7;
}

static inline rec_header *rec_at(const pcb_map *m, uint32_t ref)
{
    return (rec_header *)(m->arena + (size_t)(ref - 2) * 8);
}

static inline const uint8_t *rec_name(const rec_header *r) { return (const uint8_t *)(r + 1); }
static inline const uint8_t *rec_value(const rec_header *r)
{
    return (const uint8_t *)(r + 1) + (r->name_len & LEN_MASK);
}

/* Frees memory that may have held secrets. */
static void wipe_free(void *p, size_t n)
{
    if (p) {
        OPENSSL_cleanse(p, n);
        free(p);
    }
}

/*
 * Large tables and arenas come straight from mmap with transparent huge
 * pages requested: at 10^6 entries a lookup's two random accesses would
 * otherwise each pay a page-table walk too. Zeroed either way.
 */
#define BIG_ALLOC (4u << 20)

static void *big_alloc(size_t n)
{
    if (n < BIG_ALLOC)
        return calloc(1, n);
    void *p = mmap(NULL, n, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (p == MAP_FAILED)
        return NULL;
#ifdef MADV_HUGEPAGE
    madvise(p, n, MADV_HUGEPAGE);
#endif
    return p;
}

static void big_free(void *p, size_t n, int wipe)
{
    if (p == NULL)
        return;
    if (wipe)
        OPENSSL_cleanse(p, n);
    if (n < BIG_ALLOC)
        free(p);
    else
        munmap(p, n);
}

static int map_init(pcb_map *m, size_t capacity, int secret)
{
    size_t cap = 16;
    while (cap < capacity * 4 / 3 + 1)
        cap <<= 1;
    memset(m, 0, sizeof *m);
    m->secret = secret;
    if (RAND_bytes((unsigned char *)&m->seed, sizeof m->seed) != 1)
        m->seed = (uint64_t)(uintptr_t)m ^ 0x8445d61a4e774912ULL;
    m->slots = big_alloc(cap * sizeof(slot));
    if (m->slots == NULL)
        return 0;
    m->mask = cap - 1;
    return 1;
}

static void map_free(pcb_map *m)
{
    if (m->slots)
        big_free(m->slots, (m->mask + 1) * sizeof(slot), 0);
    big_free(m->arena, m->arena_cap, m->secret);
    memset(m, 0, sizeof *m);
}

/* Makes room for `bytes` more of records without growing one step at a time. */
static int arena_reserve(pcb_map *m, size_t bytes)
{
    if (m->arena_len + bytes <= m->arena_cap)
        return 1;
    /* 1.5x steps: at most a third of the arena is slack right after a step
     * (the footprint goal counts capacity), and the copies stay amortized O(1). */
    size_t cap = m->arena_cap ? m->arena_cap : 4096;
    while (cap < m->arena_len + bytes)
        cap += cap / 2;
    cap = (cap + 4095) & ~(size_t)4095;
    if ((cap - 8) / 8 + 2 > UINT32_MAX)
        return 0;
    uint8_t *a = big_alloc(cap);
    if (a == NULL)
        return 0;
    if (m->arena_len)
        memcpy(a, m->arena, m->arena_len);
    big_free(m->arena, m->arena_cap, m->secret);
    m->arena = a;
    m->arena_cap = cap;
    return 1;
}

/* Gives back the arena's unused tail after a load reserved an upper bound
 * (the file's size) for it. A big (mmap) arena returns whole pages in place,
 * no copy; a small one moves into an exact allocation. The tail was never
 * written past arena_len (map_tail decodes ciphertext only), so needs no wipe. */
static void arena_trim(pcb_map *m)
{
    size_t want = (m->arena_len + 4095) & ~(size_t)4095;
    if (want >= m->arena_cap)
        return;
    if (m->arena_cap >= BIG_ALLOC) {
        if (want < BIG_ALLOC)
            want = BIG_ALLOC; /* big_free decides by size: stay a big allocation */
        if (want < m->arena_cap && munmap(m->arena + want, m->arena_cap - want) == 0)
            m->arena_cap = want;
        return;
    }
    uint8_t *a = big_alloc(want ? want : 4096);
    if (a == NULL)
        return; /* keeping the slack is harmless */
    memcpy(a, m->arena, m->arena_len);
    big_free(m->arena, m->arena_cap, m->secret);
    m->arena = a;
    m->arena_cap = want ? want : 4096;
}

static size_t map_heap_bytes(const pcb_map *m)
{
    return (m->slots ? (m->mask + 1) * sizeof(slot) : 0) + m->arena_cap;
}

/* Slot of name, or of the first free place (*found = 0). */
static size_t map_probe(const pcb_map *m, const uint8_t *name, size_t len, uint64_t h, int *found)
{
    const uint32_t tag = (uint32_t)(h >> 32);
    size_t i = (size_t)h & m->mask, first_free = SIZE_MAX;
    for (;;) {
        const slot *sl = &m->slots[i];
        if (sl->ref == REF_EMPTY) {
            *found = 0;
            return first_free != SIZE_MAX ? first_free : i;
        }
        if (sl->ref == REF_TOMB) {
            if (first_free == SIZE_MAX)
                first_free = i;
        } else if (sl->tag == tag) {
            const rec_header *r = rec_at(m, sl->ref);
            if ((r->name_len & LEN_MASK) == len && memcmp(rec_name(r), name, len) == 0) {
                *found = 1;
                return i;
            }
        }
        i = (i + 1) & m->mask;
    }
}

static const rec_header *map_find(const pcb_map *m, const uint8_t *name, size_t len)
{
    int found;
    size_t i = map_probe(m, name, len, hash_bytes(m->seed, name, len), &found);
    return found ? rec_at(m, m->slots[i].ref) : NULL;
}

static int map_rehash(pcb_map *m, size_t capacity);

/* Keeps the table at most 3/4 full (tombstones count) before one more
 * insert: a full table is rebuilt with room for 1.5x its live entries, which
 * doubles it when it holds no tombstones (map_init adds the 4/3). */
static int map_room_for_one(pcb_map *m)
{
    if ((m->live + m->tombs + 1) * 4 <= (m->mask + 1) * 3)
        return 1;
    return map_rehash(m, (m->live + 1) + (m->live + 1) / 2);
}

/* Appends a record; returns its ref, or 0 on allocation failure. */
static uint32_t arena_append(pcb_map *m, const uint8_t *name, size_t name_len, uint32_t flags,
                             const uint8_t *value, size_t value_len)
{
    size_t need = rec_size((uint32_t)name_len, (uint32_t)value_len);
    if (!arena_reserve(m, need))
        return 0;
    rec_header *r = (rec_header *)(m->arena + m->arena_len);
    r->name_len = (uint32_t)name_len | flags;
    r->value_len = (uint32_t)value_len;
    memcpy((uint8_t *)(r + 1), name, name_len);
    if (value_len)
        memcpy((uint8_t *)(r + 1) + name_len, value, value_len);
    memset((uint8_t *)(r + 1) + name_len + value_len, 0,
           need - sizeof *r - name_len - value_len);
    uint32_t ref = (uint32_t)(m->arena_len / 8 + 2);
    m->arena_len += need;
    return ref;
}

static int map_put(pcb_map *m, const uint8_t *name, size_t name_len, uint32_t flags,
                   const uint8_t *value, size_t value_len)
{
    if (name_len > LEN_MASK || value_len > UINT32_MAX)
        return 0;
    if (!map_room_for_one(m))
        return 0;
    uint64_t h = hash_bytes(m->seed, name, name_len);
    int found;
    size_t i = map_probe(m, name, name_len, h, &found);
    uint32_t ref = arena_append(m, name, name_len, flags, value, value_len);
    if (ref == 0)
        return 0;
    slot *sl = &m->slots[i];
    if (found) {
        rec_header *old = rec_at(m, sl->ref);
        old->name_len |= DEAD_BIT;
        m->garbage += rec_size(old->name_len, old->value_len);
    } else {
        if (sl->ref == REF_TOMB)
            m->tombs--;
        m->live++;
    }
    sl->tag = (uint32_t)(h >> 32);
    sl->ref = ref;
    return 1;
}

/*
 * Loading files records in two steps: a record is appended to the arena as
 * it is parsed (map_tail() gives room to decode a record straight into,
 * map_append_tail() then closes it), and map_file_record() later puts it in
 * the table. The loader runs the second step a few records behind the first,
 * so that each slot can be fetched ahead: a file's worth of random slot
 * misses is most of what a load waits on once the table outgrows the caches.
 */
static uint8_t *map_tail(pcb_map *m, size_t max_name, size_t max_value)
{
    if (max_name > LEN_MASK || max_value > UINT32_MAX
        || !arena_reserve(m, rec_size((uint32_t)max_name, (uint32_t)max_value)))
        return NULL;
    return m->arena + m->arena_len + sizeof(rec_header);
}

/* Closes the record decoded at the tail; returns its ref (not yet in the table). */
static uint32_t map_append_tail(pcb_map *m, size_t name_len, size_t value_len)
{
    rec_header *r = (rec_header *)(m->arena + m->arena_len);
    size_t sz = rec_size((uint32_t)name_len, (uint32_t)value_len);
    r->name_len = (uint32_t)name_len;
    r->value_len = (uint32_t)value_len;
    memset((uint8_t *)(r + 1) + name_len + value_len, 0, sz - sizeof *r - name_len - value_len);
    uint32_t ref = (uint32_t)(m->arena_len / 8 + 2);
    m->arena_len += sz;
    return ref;
}

/* Puts an arena record that is not in the table yet (h: its name's hash)
 * into the table: 1, or 0 if its name is already there (nothing changed). */
static int map_file_record(pcb_map *m, uint32_t ref, uint64_t h)
{
    const rec_header *r = rec_at(m, ref);
    int found;
    size_t i = map_probe(m, rec_name(r), r->name_len & LEN_MASK, h, &found);
    if (found)
        return 0;
    if (m->slots[i].ref == REF_TOMB)
        m->tombs--;
    m->live++;
    m->slots[i].tag = (uint32_t)(h >> 32);
    m->slots[i].ref = ref;
    return 1;
}

static int map_remove(pcb_map *m, const uint8_t *name, size_t name_len)
{
    int found;
    size_t i = map_probe(m, name, name_len, hash_bytes(m->seed, name, name_len), &found);
    if (!found)
        return 0;
    rec_header *r = rec_at(m, m->slots[i].ref);
    r->name_len |= DEAD_BIT;
    m->garbage += rec_size(r->name_len, r->value_len);
    m->slots[i].ref = REF_TOMB;
    m->live--;
    m->tombs++;
    return 1;
}

static void map_clear(pcb_map *m)
{
    memset(m->slots, 0, (m->mask + 1) * sizeof(slot));
    if (m->secret)
        OPENSSL_cleanse(m->arena, m->arena_len);
    m->arena_len = m->garbage = m->live = m->tombs = 0;
}

/* Rebuilds table and arena with only live records (compaction + resize). */
static int map_rehash(pcb_map *m, size_t capacity)
{
    pcb_map fresh;
    if (!map_init(&fresh, capacity > m->live ? capacity : m->live, m->secret))
        return 0;
    size_t live_bytes = m->arena_len - m->garbage;
    if (live_bytes && !arena_reserve(&fresh, live_bytes + live_bytes / 4)) {
        map_free(&fresh);
        return 0;
    }
    for (size_t off = 0; off < m->arena_len;) {
        const rec_header *r = (const rec_header *)(m->arena + off);
        size_t sz = rec_size(r->name_len, r->value_len);
        if (!(r->name_len & DEAD_BIT)) {
            size_t nl = r->name_len & LEN_MASK;
            uint64_t h = hash_bytes(fresh.seed, rec_name(r), nl);
            int found;
            size_t i = map_probe(&fresh, rec_name(r), nl, h, &found);
            memcpy(fresh.arena + fresh.arena_len, r, sz);
            fresh.slots[i].tag = (uint32_t)(h >> 32);
            fresh.slots[i].ref = (uint32_t)(fresh.arena_len / 8 + 2);
            fresh.arena_len += sz;
            fresh.live++;
        }
        off += sz;
    }
    map_free(m);
    *m = fresh;
    return 1;
}

/* Compacts when more than half the arena is dead. */
static int map_maybe_compact(pcb_map *m)
{
    if (m->garbage > 65536 && m->garbage * 2 > m->arena_len)
        return map_rehash(m, m->live + m->live / 2);
    return 1;
}

/* Iterates live records in arena order. */
#define MAP_FOREACH(m, r)                                                          \
    for (size_t off_ = 0; off_ < (m)->arena_len;                                   \
         off_ += rec_size(((const rec_header *)((m)->arena + off_))->name_len,     \
                          ((const rec_header *)((m)->arena + off_))->value_len))   \
        if (!((r = (const rec_header *)((m)->arena + off_))->name_len & DEAD_BIT))

/* ------------------------------------------------------------ the store */

typedef struct {
    EVP_CIPHER_CTX *enc, *dec;
} aead_pair;

struct pcb_store {
    pthread_mutex_t lock;    /* map, keys, crypto contexts, generations */
    pthread_mutex_t io_lock; /* one file write at a time */
    pthread_cond_t cond;
    pthread_t writer;
    int writer_started, writer_stop;
    uint64_t mem_gen, disk_gen;       /* changes applied / changes on disk */
    int writer_errno;                 /* a background write's failure, reported once */
    char writer_error[256];

    char *path, *dir, *store_name, *scrypt_path;
    size_t store_name_len;
    pcb_store_options opt;
    const pcb_evp_cache *cache;
    OSSL_LIB_CTX *libctx;

    uint8_t master[MASTER_KEY_LEN];
    pcb_buf keyset_text[2]; /* the sealed keysets as written: sealed once, not per commit */
    uint8_t siv_key[SIV_KEY_LEN], value_key[VALUE_KEY_LEN];
    uint8_t siv_kid[4], value_kid[4];
    uint64_t key_gen; /* bumped by rotate: editors re-encrypt their puts */
    pcb_siv siv;
    int siv_ready;
    uint8_t s2v_store[16]; /* S2V state after the store name component */
    aead_pair value;
    const EVP_CIPHER *value_cipher;
    const EVP_CIPHER *master_cipher; /* AES-256-GCM */
    aead_pair master_ctx;

    uint8_t nonce_pool[NONCE_POOL];
    size_t nonce_left;
    unsigned long nonce_fork_gen;

    pcb_map map;
    pcb_map plain_cache; /* cache=1: plain name -> plaintext */

    int stages_on;
    uint64_t stage_ns[PCB_STAGE_COUNT];

    pcb_buf scratch; /* name/AAD encodings under the lock */
};

struct pcb_edit {
    pcb_store *s;
    int clear;
    uint64_t key_gen;
    pcb_buf ops; /* records: kind, lengths, plain name, stored name, stored value, plaintext */
    size_t n_ops;
};

#define STAGE_BEGIN(s) uint64_t stage_t0_ = (s)->stages_on ? pcb_clock_ns() : 0
#define STAGE_END(s, which)                                        \
    do {                                                           \
        if ((s)->stages_on) {                                      \
            uint64_t t1_ = pcb_clock_ns();                         \
            (s)->stage_ns[which] += t1_ - stage_t0_;               \
            stage_t0_ = t1_;                                       \
        }                                                          \
    } while (0)

static int os_fail(pcb_status *st, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static int os_fail(pcb_status *st, const char *fmt, ...)
{
    int err = errno;
    char what[320];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(what, sizeof what, fmt, ap);
    va_end(ap);
    st->code = PCB_E_OS;
    st->os_errno = err;
    snprintf(st->msg, sizeof st->msg, "%s: %s", what, strerror(err));
    return 0;
}

static int oom(pcb_status *st)
{
    return pcb_fail(st, PCB_E_MEMORY, "out of memory");
}

int pcb_store_is_reserved(const char *name, size_t len)
{
    return (len == sizeof KEY_KEYSET - 1 && memcmp(name, KEY_KEYSET, len) == 0)
           || (len == sizeof VALUE_KEYSET - 1 && memcmp(name, VALUE_KEYSET, len) == 0);
}

static int check_name(const pcb_store *s, const char *name, size_t len, pcb_status *st)
{
    /* Plain stores refuse them too: a file holding them reads as an encrypted store. */
    (void)s;
    if (pcb_store_is_reserved(name, len))
        return pcb_fail(st, PCB_E_RESERVED,
                        "'%.*s' is reserved for the store's keysets and cannot be read or written",
                        (int)len, name);
    return 1;
}

static void lock(pcb_store *s) { pthread_mutex_lock(&s->lock); }
static void unlock(pcb_store *s) { pthread_mutex_unlock(&s->lock); }

/* ---------------------------------------------------- nonces and AEADs */

/* Bumped in every child after fork(): nonce pools drawn before it are dropped,
 * so parent and child never hand out the same nonce. (getpid() would do, but
 * it is a system call on every put.) */
static volatile unsigned long fork_generation;
static pthread_once_t atfork_once = PTHREAD_ONCE_INIT;
static void on_fork_child(void) { fork_generation++; }
static void register_atfork(void) { pthread_atfork(NULL, NULL, on_fork_child); }

static int next_nonce(pcb_store *s, uint8_t nonce[NONCE_LEN], pcb_status *st)
{
    if (s->opt.faithful) /* Tink draws each nonce from the CSPRNG */
        return RAND_bytes_ex(s->libctx, nonce, NONCE_LEN, 0) == 1
               || pcb_fail_openssl(st, "drawing a nonce");
    unsigned long gen = fork_generation;
    if (s->nonce_left < NONCE_LEN || gen != s->nonce_fork_gen) {
        /* A batch from OpenSSL's DRBG; refilled after fork so that parent
         * and child never share nonces. */
        if (RAND_bytes_ex(s->libctx, s->nonce_pool, NONCE_POOL, 0) != 1)
            return pcb_fail_openssl(st, "drawing nonces");
        s->nonce_left = NONCE_POOL;
        s->nonce_fork_gen = gen;
    }
    uint8_t *p = s->nonce_pool + NONCE_POOL - s->nonce_left;
    memcpy(nonce, p, NONCE_LEN);
    OPENSSL_cleanse(p, NONCE_LEN);
    s->nonce_left -= NONCE_LEN;
    return 1;
}

static int aead_new(aead_pair *a, const EVP_CIPHER *c, const uint8_t *key, pcb_status *st)
{
    a->enc = EVP_CIPHER_CTX_new();
    a->dec = EVP_CIPHER_CTX_new();
    if (a->enc == NULL || a->dec == NULL
        || !EVP_EncryptInit_ex2(a->enc, c, key, NULL, NULL)
        || !EVP_DecryptInit_ex2(a->dec, c, key, NULL, NULL))
        return pcb_fail_openssl(st, "AEAD key setup");
    return 1;
}

static void aead_free(aead_pair *a)
{
    EVP_CIPHER_CTX_free(a->enc);
    EVP_CIPHER_CTX_free(a->dec);
    a->enc = a->dec = NULL;
}

/* out = nonce || ct || tag (len + 28). rekey: set the key up again (faithful). */
static int aead_seal(EVP_CIPHER_CTX *ctx, const uint8_t *rekey, const uint8_t nonce[NONCE_LEN],
                     const uint8_t *aad, size_t aad_len, const uint8_t *in, size_t len,
                     uint8_t *out, pcb_status *st)
{
    int outl;
    memcpy(out, nonce, NONCE_LEN);
    if (!EVP_EncryptInit_ex2(ctx, NULL, rekey, nonce, NULL)
        || (aad_len && !pcb_evp_update(ctx, NULL, NULL, aad, aad_len))
        || (len && !pcb_evp_update(ctx, out + NONCE_LEN, NULL, in, len))
        || !EVP_EncryptFinal_ex(ctx, out + NONCE_LEN + len, &outl)
        || EVP_CIPHER_CTX_ctrl(ctx, EVP_CTRL_AEAD_GET_TAG, TAG_LEN, out + NONCE_LEN + len) <= 0)
        return pcb_fail_openssl(st, "AEAD encryption");
    return 1;
}

/* in = nonce || ct || tag; out gets len - 28 bytes. Returns 1 ok, 0 not
 * authentic (out wiped, st not set), -1 OpenSSL failure (st set). */
static int aead_open(EVP_CIPHER_CTX *ctx, const uint8_t *rekey, const uint8_t *aad, size_t aad_len,
                     const uint8_t *in, size_t len, uint8_t *out, pcb_status *st)
{
    int outl;
    size_t body = len - NONCE_LEN - TAG_LEN;
    if (!EVP_DecryptInit_ex2(ctx, NULL, rekey, in, NULL)
        || EVP_CIPHER_CTX_ctrl(ctx, EVP_CTRL_AEAD_SET_TAG, TAG_LEN, (void *)(in + len - TAG_LEN)) <= 0
        || (aad_len && !pcb_evp_update(ctx, NULL, NULL, aad, aad_len))
        || (body && !pcb_evp_update(ctx, out, NULL, in + NONCE_LEN, body))) {
        pcb_fail_openssl(st, "AEAD decryption");
        return -1;
    }
    if (!EVP_DecryptFinal_ex(ctx, out + body, &outl)) {
        ERR_clear_error();
        OPENSSL_cleanse(out, body);
        return 0;
    }
    return 1;
}

/* ------------------------------------------------------ names and values */

/* Appends a sealed blob in the records' form: raw bytes in lean mode, the
 * file's Base64 text in faithful mode (as ESP's map holds Strings). */
static void append_stored(pcb_store *s, pcb_buf *out, const uint8_t *blob, size_t len)
{
    if (!s->opt.faithful) {
        pcb_buf_append(out, (const char *)blob, len);
        return;
    }
    STAGE_BEGIN(s);
    char *p = pcb_buf_reserve(out, pcb_b64_encoded_len(len));
    if (p)
        out->len += pcb_b64_encode(blob, len, p);
    STAGE_END(s, PCB_STAGE_BASE64);
}

/*
 * The stored form of a plain name, into out (reset): lean SIV the raw blob
 * 0x01 || kid || V || C; faithful SIV its Base64 text; no key encryption the
 * name itself.
 */
static int store_name_of(pcb_store *s, const char *name, size_t len, pcb_buf *out, pcb_status *st)
{
    out->len = 0;
    if (pcb_buf_reserve(out, len + 1) == NULL) /* data is never NULL, even for "" */
        return oom(st);
    if (!s->opt.encrypted || s->opt.key_enc == PCB_KEYENC_NONE || s->opt.layout == PCB_LAYOUT_FILE) {
        pcb_buf_append(out, name, len);
        return !out->failed || oom(st);
    }
    STAGE_BEGIN(s);
    const size_t blob_len = PREFIX_LEN + 16 + len;
    uint8_t stackbuf[512], *blob = blob_len <= sizeof stackbuf ? stackbuf : malloc(blob_len);
    uint8_t d[16];
    int ok = blob != NULL;
    if (!ok)
        return oom(st);
    blob[0] = 0x01;
    memcpy(blob + 1, s->siv_kid, 4);
    if (s->opt.faithful) {
        /* Tink: a fresh key schedule, S2V from scratch, every call. */
        ok = pcb_siv_set_key(&s->siv, s->siv_key, SIV_KEY_LEN);
        memcpy(d, s->siv.d0, 16);
        ok = ok && pcb_s2v_add(&s->siv, d, (const uint8_t *)s->store_name, s->store_name_len);
    } else {
        memcpy(d, s->s2v_store, 16);
    }
    ok = ok && pcb_siv_encrypt(&s->siv, d, (const uint8_t *)name, len, blob + PREFIX_LEN);
    STAGE_END(s, PCB_STAGE_SIV);
    if (ok)
        append_stored(s, out, blob, blob_len);
    if (blob != stackbuf)
        wipe_free(blob, blob_len);
    if (!ok)
        return pcb_fail_openssl(st, "AES-SIV name encryption");
    return !out->failed || oom(st);
}

/* The AAD of a value: the Base64 text of the stored name (or the plain name). */
static const uint8_t *value_aad(pcb_store *s, const uint8_t *sname, size_t slen, size_t *aad_len)
{
    if (s->opt.key_enc == PCB_KEYENC_SIV && !s->opt.faithful && s->opt.layout == PCB_LAYOUT_ENTRIES) {
        s->scratch.len = 0;
        char *p = pcb_buf_reserve(&s->scratch, pcb_b64_encoded_len(slen));
        if (p == NULL)
            return NULL;
        *aad_len = pcb_b64_encode(sname, slen, p);
        return (const uint8_t *)p;
    }
    *aad_len = slen;
    return slen ? sname : (const uint8_t *)""; /* an empty plain name is a valid AAD */
}

/* Stored value of a plaintext: 0x01 || kid || nonce || ct || tag (lean: raw;
 * faithful: Base64 text), or the plaintext itself when values are not encrypted. */
static int seal_value(pcb_store *s, const uint8_t *aad, size_t aad_len, const uint8_t *pt,
                      size_t len, pcb_buf *out, pcb_status *st)
{
    out->len = 0;
    if (!s->opt.encrypted || s->opt.layout == PCB_LAYOUT_FILE
        || (s->opt.value_enc == PCB_VALENC_NONE && !s->opt.faithful)) {
        pcb_buf_append(out, (const char *)pt, len);
        return !out->failed || oom(st);
    }
    if (s->opt.value_enc == PCB_VALENC_NONE) { /* faithful records hold the file's Base64 text */
        char *p = pcb_buf_reserve(out, pcb_b64_encoded_len(len) + 1);
        if (p == NULL)
            return oom(st);
        out->len = pcb_b64_encode(pt, len, p);
        return 1;
    }
    const size_t blob_len = PREFIX_LEN + NONCE_LEN + len + TAG_LEN;
    uint8_t *blob = malloc(blob_len), nonce[NONCE_LEN];
    if (blob == NULL)
        return oom(st);
    STAGE_BEGIN(s);
    int ok = next_nonce(s, nonce, st);
    STAGE_END(s, PCB_STAGE_NONCE);
    blob[0] = 0x01;
    memcpy(blob + 1, s->value_kid, 4);
    ok = ok && aead_seal(s->value.enc, s->opt.faithful ? s->value_key : NULL, nonce, aad, aad_len,
                         pt, len, blob + PREFIX_LEN, st);
    STAGE_END(s, PCB_STAGE_AEAD);
    if (ok)
        append_stored(s, out, blob, blob_len);
    free(blob);
    return ok && (!out->failed || oom(st));
}

/* A name for messages: the plain name if known, else the stored text's start. */
static void describe_entry(pcb_store *s, const rec_header *r, char *out, size_t cap)
{
    size_t nl = r->name_len & LEN_MASK;
    if (s->opt.key_enc == PCB_KEYENC_SIV && !s->opt.faithful && !(r->name_len & BAD_BIT)) {
        char text[48];
        size_t n = nl < 33 ? nl : 33; /* 33 raw bytes -> 44 Base64 characters */
        size_t tl = pcb_b64_encode(rec_name(r), n, text);
        snprintf(out, cap, "%.*s%s", (int)tl, text, n < nl ? "..." : "");
    } else {
        snprintf(out, cap, "%.*s%s", (int)(nl < 44 ? nl : 44), (const char *)rec_name(r),
                 nl > 44 ? "..." : "");
    }
}

/* Plaintext of a record's value into out (reset); aad = the value's AAD. */
static int open_value(pcb_store *s, const rec_header *r, const uint8_t *aad, size_t aad_len,
                      pcb_buf *out, pcb_status *st)
{
    const uint8_t *v = rec_value(r);
    size_t vl = r->value_len;
    uint8_t *decoded = NULL;
    char who[64];
    out->len = 0;
    const int plain = !s->opt.encrypted || s->opt.layout == PCB_LAYOUT_FILE
                      || s->opt.value_enc == PCB_VALENC_NONE;
    if (plain && !(s->opt.faithful && s->opt.encrypted && s->opt.layout == PCB_LAYOUT_ENTRIES)) {
        if (r->name_len & BAD_BIT)
            goto bad_encoding;
        pcb_buf_append(out, (const char *)v, vl);
        return !out->failed || oom(st);
    }
    if (s->opt.faithful) { /* ESP decodes the stored Base64 String each time */
        STAGE_BEGIN(s);
        decoded = malloc(pcb_b64_decoded_max(vl));
        if (decoded == NULL)
            return oom(st);
        size_t n = pcb_b64_decode((const char *)v, vl, decoded);
        STAGE_END(s, PCB_STAGE_BASE64);
        if (n == (size_t)-1) {
            free(decoded);
            goto bad_encoding;
        }
        v = decoded;
        vl = n;
        if (plain) { /* value_encryption='none': the Base64 text was all there was */
            pcb_buf_append(out, (const char *)v, vl);
            free(decoded);
            return !out->failed || oom(st);
        }
    } else if (r->name_len & BAD_BIT) {
        goto bad_encoding;
    }
    if (vl < PREFIX_LEN + NONCE_LEN + TAG_LEN || v[0] != 0x01 || memcmp(v + 1, s->value_kid, 4) != 0) {
        free(decoded);
        describe_entry(s, r, who, sizeof who);
        return pcb_fail(st, PCB_E_DECRYPT,
                        "%s: entry '%s': the value is not sealed by this store's value keyset "
                        "(wrong prefix, key id or length)", s->path, who);
    }
    size_t body = vl - PREFIX_LEN - NONCE_LEN - TAG_LEN;
    uint8_t *p = (uint8_t *)pcb_buf_reserve(out, body + 1);
    if (p == NULL) {
        free(decoded);
        return oom(st);
    }
    STAGE_BEGIN(s);
    int rc = aead_open(s->value.dec, s->opt.faithful ? s->value_key : NULL, aad, aad_len,
                       v + PREFIX_LEN, vl - PREFIX_LEN, p, st);
    STAGE_END(s, PCB_STAGE_AEAD);
    free(decoded);
    if (rc < 0)
        return 0;
    if (rc == 0) {
        describe_entry(s, r, who, sizeof who);
        return pcb_fail(st, PCB_E_DECRYPT,
                        "%s: entry '%s': the value failed authentication (tampered, or moved "
                        "from another entry)", s->path, who);
    }
    out->len = body;
    return 1;
bad_encoding:
    describe_entry(s, r, who, sizeof who);
    return pcb_fail(st, PCB_E_DECRYPT, "%s: entry '%s' is not valid Base64 (corrupted)", s->path, who);
}

/* ---------------------------------------------------------- file I/O */

/* A file's bytes as read: data[len] is a NUL, cap is the allocation. */
typedef struct {
    char *data;
    size_t len, cap;
} file_bytes;

/* Frees what read_whole_file read, wiping it first if it may hold secrets. */
static void file_bytes_free(file_bytes *f, int wipe)
{
    big_free(f->data, f->cap, wipe);
    memset(f, 0, sizeof *f);
}

/* Reads a regular file of at most max_len bytes (larger ones are refused
 * from their size, before any reading). A large file lands in big_alloc
 * memory (huge pages where the kernel gives them): a store file is read
 * once per open and is the largest buffer an open touches. */
static int read_whole_file(const char *path, size_t max_len, const char *what, file_bytes *f,
                           int *missing, pcb_status *st)
{
    memset(f, 0, sizeof *f);
    *missing = 0;
    /* O_NONBLOCK: opening a FIFO must not wait for a writer; it is then
     * refused as not a regular file (the flag means nothing for those). */
    int fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK);
    if (fd < 0) {
        if (errno == ENOENT) {
            *missing = 1;
            return 1;
        }
        return os_fail(st, "cannot open %s", path);
    }
    struct stat sb;
    if (fstat(fd, &sb) != 0) {
        close(fd);
        return os_fail(st, "cannot stat %s", path);
    }
    if (!S_ISREG(sb.st_mode)) {
        close(fd);
        errno = S_ISDIR(sb.st_mode) ? EISDIR : EINVAL;
        return os_fail(st, "%s is not a regular file", path);
    }
    if ((uint64_t)sb.st_size > max_len) {
        close(fd);
        return pcb_fail(st, PCB_E_FORMAT, "%s is %lld bytes, larger than %s may be (%zu bytes)",
                        path, (long long)sb.st_size, what, max_len);
    }
    size_t cap = (size_t)sb.st_size + 1, n = 0;
    char *buf = big_alloc(cap);
    if (buf == NULL) {
        close(fd);
        return oom(st);
    }
    for (;;) {
        if (n == cap) { /* the file grew under us */
            if (n > max_len) {
                big_free(buf, cap, 1);
                close(fd);
                return pcb_fail(st, PCB_E_FORMAT, "%s grew past the %zu bytes it may hold", path, max_len);
            }
            char *bigger = big_alloc(cap * 2);
            if (bigger == NULL) {
                big_free(buf, cap, 1);
                close(fd);
                return oom(st);
            }
            memcpy(bigger, buf, n);
            big_free(buf, cap, 1);
            buf = bigger;
            cap *= 2;
        }
        ssize_t r = read(fd, buf + n, cap - n);
        if (r < 0) {
            if (errno == EINTR)
                continue;
            big_free(buf, cap, 1);
            close(fd);
            return os_fail(st, "cannot read %s", path);
        }
        if (r == 0)
            break;
        n += (size_t)r;
    }
    close(fd);
    buf[n] = '\0'; /* the loop leaves n < cap: text readers may use string functions */
    f->data = buf;
    f->len = n;
    f->cap = cap;
    return 1;
}

static int write_all(int fd, const char *p, size_t n)
{
    while (n > 0) {
        ssize_t w = write(fd, p, n);
        if (w < 0) {
            if (errno == EINTR)
                continue;
            return 0;
        }
        p += w;
        n -= (size_t)w;
    }
    return 1;
}

static int fsync_dir(const char *dir)
{
    int fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (fd < 0)
        return 0;
    int ok = fsync(fd) == 0 || errno == EINVAL; /* some filesystems refuse directory fsync */
    close(fd);
    return ok;
}

/* The temporary files of path: "<dir>/.<base>.<random>.tmp". */
static void tmp_name_of(const char *path, char *out, size_t cap, unsigned long long nonce)
{
    const char *slash = strrchr(path, '/');
    const char *base = slash ? slash + 1 : path;
    int dir_len = slash ? (int)(slash - path + 1) : 0;
    snprintf(out, cap, "%.*s.%s.%016llx.tmp", dir_len, path, base, nonce);
}

/* Writes data to a new temporary file beside path (its name into tmp) and
 * fsyncs it; on failure nothing is left behind. */
static int write_tmp(const char *path, const char *data, size_t len, mode_t mode, char *tmp,
                     size_t tmp_cap, pcb_status *st)
{
    unsigned long long r;
    RAND_bytes((unsigned char *)&r, sizeof r);
    tmp_name_of(path, tmp, tmp_cap, r);
    int fd = open(tmp, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, mode);
    if (fd < 0)
        return os_fail(st, "cannot create %s", tmp);
    int ok = write_all(fd, data, len) && fsync(fd) == 0;
    int err = errno;
    if (close(fd) != 0 && ok) {
        ok = 0;
        err = errno;
    }
    if (!ok) {
        unlink(tmp);
        errno = err;
        return os_fail(st, "cannot write %s", tmp);
    }
    return 1;
}

/* Writes data to path atomically: a new temporary file, fsync, rename over
 * path, fsync the directory. A crash leaves the old file or the new one. */
static int atomic_write(const char *path, const char *dir, const char *data, size_t len,
                        mode_t mode, pcb_status *st)
{
    char tmp[PATH_MAX + 64];
    if (!write_tmp(path, data, len, mode, tmp, sizeof tmp, st))
        return 0;
    if (rename(tmp, path) != 0) {
        int err = errno;
        unlink(tmp);
        errno = err;
        return os_fail(st, "cannot replace %s", path);
    }
    if (!fsync_dir(dir))
        return os_fail(st, "cannot sync directory %s", dir);
    return 1;
}

/* Like atomic_write, but never replaces an existing file: the new file is
 * linked into place, which fails if another process created it first
 * (then *exists = 1 and nothing is written). */
static int atomic_create(const char *path, const char *dir, const char *data, size_t len,
                         mode_t mode, int *exists, pcb_status *st)
{
    char tmp[PATH_MAX + 64];
    *exists = 0;
    if (!write_tmp(path, data, len, mode, tmp, sizeof tmp, st))
        return 0;
    int ok = link(tmp, path) == 0, err = errno;
    unlink(tmp);
    if (!ok && err == EEXIST) {
        *exists = 1;
        return 1;
    }
    if (!ok) {
        errno = err;
        return os_fail(st, "cannot create %s", path);
    }
    if (!fsync_dir(dir))
        return os_fail(st, "cannot sync directory %s", dir);
    return 1;
}

/* Removes temporary files a crash left behind for this store. */
static void remove_stale_tmp(const char *path, const char *dir)
{
    const char *slash = strrchr(path, '/');
    const char *base = slash ? slash + 1 : path;
    char prefix[NAME_MAX + 4];
    snprintf(prefix, sizeof prefix, ".%s.", base);
    size_t pl = strlen(prefix);
    DIR *d = opendir(dir);
    if (d == NULL)
        return;
    struct dirent *e;
    while ((e = readdir(d)) != NULL) {
        size_t n = strlen(e->d_name);
        if (n == pl + 16 + 4 && strncmp(e->d_name, prefix, pl) == 0
            && strcmp(e->d_name + n - 4, ".tmp") == 0)
            unlinkat(dirfd(d), e->d_name, 0);
    }
    closedir(d);
}

/* ------------------------------------------------------------ master key */

static void hex_encode(const uint8_t *in, size_t n, char *out)
{
    static const char digits[] = "0123456789abcdef";
    for (size_t i = 0; i < n; i++) {
        out[2 * i] = digits[in[i] >> 4];
        out[2 * i + 1] = digits[in[i] & 15];
    }
}

static int hex_decode(const char *in, size_t n, uint8_t *out)
{
    if (n % 2)
        return 0;
    for (size_t i = 0; i < n; i += 2) {
        int v = 0;
        for (int j = 0; j < 2; j++) {
            char c = in[i + (size_t)j];
            int d = c >= '0' && c <= '9' ? c - '0' : c >= 'a' && c <= 'f' ? c - 'a' + 10
                  : c >= 'A' && c <= 'F' ? c - 'A' + 10 : -1;
            if (d < 0)
                return 0;
            v = v * 16 + d;
        }
        out[i / 2] = (uint8_t)v;
    }
    return 1;
}

static char *dir_of(const char *path)
{
    const char *slash = strrchr(path, '/');
    if (slash == NULL)
        return strdup(".");
    if (slash == path)
        return strdup("/");
    return strndup(path, (size_t)(slash - path));
}

/* Loads the 32-byte master key file, creating it (0600) when absent. */
static int master_from_file(pcb_store *s, const char *path, int may_create,
                            uint8_t key[MASTER_KEY_LEN], int *created, pcb_status *st)
{
    struct stat sb;
    *created = 0;
    if (stat(path, &sb) != 0) {
        if (errno != ENOENT)
            return os_fail(st, "cannot stat master key file %s", path);
        if (!may_create)
            return os_fail(st, "master key file %s is missing, and %s holds keysets sealed by a "
                           "master key", path, s->path);
        if (RAND_priv_bytes_ex(s->libctx, key, MASTER_KEY_LEN, 0) != 1)
            return pcb_fail_openssl(st, "generating the master key");
        char *dir = dir_of(path);
        if (dir == NULL)
            return oom(st);
        int exists = 0;
        int ok = atomic_create(path, dir, (const char *)key, MASTER_KEY_LEN, 0600, &exists, st);
        free(dir);
        if (!ok)
            return 0;
        if (!exists) {
            *created = 1;
            return 1;
        }
        /* Another store created it first: use that key. */
        OPENSSL_cleanse(key, MASTER_KEY_LEN);
        if (stat(path, &sb) != 0)
            return os_fail(st, "cannot stat master key file %s", path);
    }
    if (!S_ISREG(sb.st_mode)) {
        errno = S_ISDIR(sb.st_mode) ? EISDIR : EINVAL;
        return os_fail(st, "master key file %s is not a regular file", path);
    }
    if (sb.st_mode & 077)
        return pcb_fail(st, PCB_E_PERMISSION,
                        "master key file %s is accessible by group or others (mode %04o); "
                        "it must be private to its owner: run chmod 600 %s",
                        path, (unsigned)(sb.st_mode & 07777), path);
    file_bytes f;
    int missing;
    if (sb.st_size != MASTER_KEY_LEN) /* refused from its size, unread */
        return pcb_fail(st, PCB_E_FORMAT, "master key file %s must hold exactly 32 bytes, holds %lld",
                        path, (long long)sb.st_size);
    if (!read_whole_file(path, MASTER_KEY_LEN, "a master key", &f, &missing, st))
        return 0;
    if (missing) {
        errno = ENOENT;
        return os_fail(st, "master key file %s vanished", path);
    }
    size_t len = f.len;
    int ok = len == MASTER_KEY_LEN;
    if (ok)
        memcpy(key, f.data, MASTER_KEY_LEN);
    file_bytes_free(&f, 1);
    if (!ok)
        return pcb_fail(st, PCB_E_FORMAT, "master key file %s must hold exactly 32 bytes, holds %zu",
                        path, len);
    return 1;
}

/* Reads "key": <number> from our own small JSON file. */
static int json_u64(const char *json, const char *key, uint64_t *out)
{
    char pat[32];
    snprintf(pat, sizeof pat, "\"%s\":", key);
    const char *p = strstr(json, pat);
    if (p == NULL)
        return 0;
    p += strlen(pat);
    while (*p == ' ')
        p++;
    char *end;
    errno = 0;
    unsigned long long v = strtoull(p, &end, 10);
    if (end == p || errno)
        return 0;
    *out = v;
    return 1;
}

static int scrypt_derive(pcb_store *s, const uint8_t *salt, size_t salt_len, uint64_t n,
                         uint64_t r, uint64_t p, uint8_t key[MASTER_KEY_LEN], pcb_status *st)
{
    EVP_KDF *kdf = EVP_KDF_fetch(s->libctx, "SCRYPT", NULL);
    EVP_KDF_CTX *kctx = kdf ? EVP_KDF_CTX_new(kdf) : NULL;
    OSSL_PARAM params[] = {
        OSSL_PARAM_construct_octet_string(OSSL_KDF_PARAM_PASSWORD, (void *)s->opt.passphrase,
                                          s->opt.passphrase_len),
        OSSL_PARAM_construct_octet_string(OSSL_KDF_PARAM_SALT, (void *)salt, salt_len),
        OSSL_PARAM_construct_uint64(OSSL_KDF_PARAM_SCRYPT_N, &n),
        OSSL_PARAM_construct_uint64(OSSL_KDF_PARAM_SCRYPT_R, &r),
        OSSL_PARAM_construct_uint64(OSSL_KDF_PARAM_SCRYPT_P, &p),
        OSSL_PARAM_construct_end(),
    };
    int ok = kctx != NULL && EVP_KDF_derive(kctx, key, MASTER_KEY_LEN, params) == 1;
    EVP_KDF_CTX_free(kctx);
    EVP_KDF_free(kdf);
    return ok || pcb_fail_openssl(st, "scrypt key derivation");
}

/* Derives the master key from the passphrase; the salt and costs live in
 * "<path>.scrypt", created with fresh ones when absent. */
static int master_from_passphrase(pcb_store *s, int may_create, uint8_t key[MASTER_KEY_LEN],
                                  int *created, pcb_status *st)
{
    file_bytes f;
    int missing;
    uint8_t salt[16];
    uint64_t n = s->opt.scrypt_n ? s->opt.scrypt_n : DEFAULT_SCRYPT_N, r = 8, p = 1;
    *created = 0;
    if (!read_whole_file(s->scrypt_path, 4096, "a scrypt parameter file", &f, &missing, st))
        return 0;
    if (missing && !may_create) {
        errno = ENOENT;
        return os_fail(st, "scrypt parameter file %s is missing, and %s holds keysets sealed by "
                       "the key it derives", s->scrypt_path, s->path);
    }
    if (missing) {
        char json[160], hex[33];
        if (RAND_bytes_ex(s->libctx, salt, sizeof salt, 0) != 1)
            return pcb_fail_openssl(st, "drawing a salt");
        hex_encode(salt, sizeof salt, hex);
        hex[32] = '\0';
        int jl = snprintf(json, sizeof json,
                          "{\"kdf\": \"scrypt\", \"salt\": \"%s\", \"n\": %llu, \"r\": %llu, \"p\": %llu}\n",
                          hex, (unsigned long long)n, (unsigned long long)r, (unsigned long long)p);
        if (!atomic_write(s->scrypt_path, s->dir, json, (size_t)jl, 0600, st))
            return 0;
        *created = 1;
    } else {
        const char *data = f.data, *sp = strstr(data, "\"salt\": \"");
        int ok = sp != NULL && f.len < 4096 && json_u64(data, "n", &n) && json_u64(data, "r", &r)
                 && json_u64(data, "p", &p) && strlen(sp) > 9 + 32 && sp[9 + 32] == '"'
                 && hex_decode(sp + 9, 32, salt) && n >= 2 && (n & (n - 1)) == 0
                 && n <= ((uint64_t)1 << 24) && r >= 1 && r <= 64 && p >= 1 && p <= 16;
        file_bytes_free(&f, 0);
        if (!ok)
            return pcb_fail(st, PCB_E_FORMAT,
                            "%s is not a valid scrypt parameter file (expected {\"kdf\": \"scrypt\", "
                            "\"salt\": 32 hex digits, \"n\": power of two <= 2^24, \"r\", \"p\"})",
                            s->scrypt_path);
    }
    return scrypt_derive(s, salt, sizeof salt, n, r, p, key, st);
}

/* --------------------------------------------------------------- keysets */

/* hex(nonce || GCM(master, kid || key) || tag) into out (reset). */
static int seal_keyset(pcb_store *s, const uint8_t kid[4], const uint8_t *key, size_t key_len,
                       pcb_buf *out, pcb_status *st)
{
    uint8_t pt[4 + SIV_KEY_LEN], sealed[NONCE_LEN + 4 + SIV_KEY_LEN + TAG_LEN], nonce[NONCE_LEN];
    size_t sl = NONCE_LEN + 4 + key_len + TAG_LEN;
    memcpy(pt, kid, 4);
    memcpy(pt + 4, key, key_len);
    int ok = RAND_bytes_ex(s->libctx, nonce, NONCE_LEN, 0) == 1
             && aead_seal(s->master_ctx.enc, NULL, nonce, NULL, 0, pt, 4 + key_len, sealed, st);
    OPENSSL_cleanse(pt, sizeof pt);
    if (!ok)
        return st->code ? 0 : pcb_fail_openssl(st, "sealing a keyset");
    out->len = 0;
    char *p = pcb_buf_reserve(out, 2 * sl);
    if (p == NULL)
        return oom(st);
    hex_encode(sealed, sl, p);
    out->len = 2 * sl;
    return 1;
}

/* Returns 1 ok, 0 not authentic, -1 malformed or OpenSSL failure (st set). */
static int open_keyset(pcb_store *s, const char *hex, size_t hex_len, uint8_t kid[4],
                       uint8_t *key, size_t key_len, pcb_status *st)
{
    uint8_t sealed[NONCE_LEN + 4 + SIV_KEY_LEN + TAG_LEN], pt[4 + SIV_KEY_LEN];
    size_t sl = NONCE_LEN + 4 + key_len + TAG_LEN;
    if (hex_len != 2 * sl || !hex_decode(hex, hex_len, sealed)) {
        pcb_fail(st, PCB_E_DECRYPT, "%s: a keyset entry is malformed (expected %zu hex digits)",
                 s->path, 2 * sl);
        return -1;
    }
    int rc = aead_open(s->master_ctx.dec, NULL, NULL, 0, sealed, sl, pt, st);
    if (rc == 1) {
        memcpy(kid, pt, 4);
        memcpy(key, pt + 4, key_len);
    }
    OPENSSL_cleanse(pt, sizeof pt);
    return rc;
}

/* Sets up the entry crypto from siv_key/value_key. */
static int key_contexts(pcb_store *s, pcb_status *st)
{
    if (s->opt.key_enc == PCB_KEYENC_SIV && s->opt.layout == PCB_LAYOUT_ENTRIES) {
        if (!s->siv_ready) {
            if (!pcb_siv_new(&s->siv, s->cache->cipher[PCB_EVP_AES256_CBC],
                             s->cache->cipher[PCB_EVP_AES256_ECB],
                             s->cache->cipher[PCB_EVP_AES256_CTR]))
                return pcb_fail_openssl(st, "AES-SIV setup");
            s->siv_ready = 1;
        }
        if (!pcb_siv_set_key(&s->siv, s->siv_key, SIV_KEY_LEN))
            return pcb_fail_openssl(st, "AES-SIV key setup");
        memcpy(s->s2v_store, s->siv.d0, 16);
        /* The store name is S2V's constant first component: fold it in once. */
        if (!pcb_s2v_add(&s->siv, s->s2v_store, (const uint8_t *)s->store_name, s->store_name_len))
            return pcb_fail_openssl(st, "AES-SIV S2V");
    }
    if (s->opt.value_enc != PCB_VALENC_NONE || s->opt.layout == PCB_LAYOUT_FILE) {
        aead_free(&s->value);
        if (!aead_new(&s->value, s->value_cipher, s->value_key, st))
            return 0;
    }
    return 1;
}

static int uses_key_keyset(const pcb_store *s);
static int uses_value_keyset(const pcb_store *s);

/* Fresh keysets, sealed under the current master key. */
static int new_keys(pcb_store *s, pcb_status *st)
{
    if (RAND_priv_bytes_ex(s->libctx, s->siv_key, SIV_KEY_LEN, 0) != 1
        || RAND_priv_bytes_ex(s->libctx, s->value_key, VALUE_KEY_LEN, 0) != 1
        || RAND_bytes_ex(s->libctx, s->siv_kid, 4, 0) != 1
        || RAND_bytes_ex(s->libctx, s->value_kid, 4, 0) != 1)
        return pcb_fail_openssl(st, "generating keysets");
    s->key_gen++;
    s->keyset_text[0].len = s->keyset_text[1].len = 0;
    if (uses_key_keyset(s) && !seal_keyset(s, s->siv_kid, s->siv_key, SIV_KEY_LEN, &s->keyset_text[0], st))
        return 0;
    if (uses_value_keyset(s)
        && !seal_keyset(s, s->value_kid, s->value_key, VALUE_KEY_LEN, &s->keyset_text[1], st))
        return 0;
    return key_contexts(s, st);
}

static int uses_key_keyset(const pcb_store *s)
{
    return s->opt.key_enc == PCB_KEYENC_SIV && s->opt.layout == PCB_LAYOUT_ENTRIES;
}

static int uses_value_keyset(const pcb_store *s)
{
    return s->opt.value_enc != PCB_VALENC_NONE || s->opt.layout == PCB_LAYOUT_FILE;
}

/* ------------------------------------------------------- serialization */

/* Writes one plain entry (native elements) from its plaintext serialization. */
static int write_native(pcb_buf *b, const char *name, size_t nl, const uint8_t *v, size_t vl)
{
    if (vl < 4)
        return 0;
    uint32_t type = pcb_be32(v);
    const uint8_t *p = v + 4;
    size_t n = vl - 4;
    switch (type) {
    case PCB_PREF_STRING:
        if (n < 4 || pcb_be32(p) != n - 4)
            return 0;
        pcb_prefs_string(b, name, nl, (const char *)p + 4, n - 4);
        return 1;
    case PCB_PREF_INT:
        if (n != 4)
            return 0;
        pcb_prefs_int(b, name, nl, (int32_t)pcb_be32(p));
        return 1;
    case PCB_PREF_LONG:
        if (n != 8)
            return 0;
        pcb_prefs_long(b, name, nl, (int64_t)pcb_be64(p));
        return 1;
    case PCB_PREF_FLOAT: {
        if (n != 4)
            return 0;
        uint32_t bits = pcb_be32(p);
        float f;
        memcpy(&f, &bits, 4);
        pcb_prefs_float(b, name, nl, f);
        return 1;
    }
    case PCB_PREF_BOOLEAN:
        if (n != 1 || p[0] > 1)
            return 0;
        pcb_prefs_boolean(b, name, nl, p[0]);
        return 1;
    case PCB_PREF_STRING_SET: {
        const uint8_t *run;
        size_t count = 0, len, off = 4;
        int rc;
        while ((rc = pcb_value_next_run(v, vl, &off, &run, &len)) == 1)
            count++;
        if (rc < 0)
            return 0;
        const char **members = malloc((count ? count : 1) * sizeof *members);
        size_t *lens = malloc((count ? count : 1) * sizeof *lens);
        if (members == NULL || lens == NULL) {
            free(members);
            free(lens);
            b->failed = 1;
            return 1;
        }
        off = 4;
        for (size_t i = 0; pcb_value_next_run(v, vl, &off, &run, &len) == 1; i++) {
            members[i] = (const char *)run;
            lens[i] = len;
        }
        pcb_prefs_set(b, name, nl, count, members, lens);
        free(members);
        free(lens);
        return 1;
    }
    default:
        return 0;
    }
}

/* The plain SharedPreferences XML of a map keyed by plain names. */
static int serialize_plain(const pcb_map *m, pcb_buf *b, const char *path, pcb_status *st)
{
    const rec_header *r;
    pcb_prefs_begin(b);
    MAP_FOREACH(m, r) {
        if (!write_native(b, (const char *)rec_name(r), r->name_len & LEN_MASK, rec_value(r), r->value_len))
            return pcb_fail(st, PCB_E_FORMAT, "%s: an entry's value is not a valid serialization", path);
    }
    pcb_prefs_end(b);
    return !b->failed || oom(st);
}

/* The file's bytes for the current state (called with the lock held). */
static int serialize(pcb_store *s, pcb_buf *b, pcb_status *st)
{
    pcb_buf tmp, tmp2;
    int ok = 1;
    b->len = 0;
    if (!s->opt.encrypted)
        return serialize_plain(&s->map, b, s->path, st);
    pcb_buf_init(&tmp);
    pcb_buf_init(&tmp2);
    pcb_prefs_begin(b);
    if (uses_key_keyset(s))
        pcb_prefs_string(b, KEY_KEYSET, sizeof KEY_KEYSET - 1, s->keyset_text[0].data,
                         s->keyset_text[0].len);
    if (uses_value_keyset(s))
        pcb_prefs_string(b, VALUE_KEYSET, sizeof VALUE_KEYSET - 1, s->keyset_text[1].data,
                         s->keyset_text[1].len);
    if (ok && s->opt.layout == PCB_LAYOUT_FILE) {
        /* The whole map as plain XML, sealed as one value (AAD: the store name). */
        pcb_buf inner, sealed;
        pcb_buf_init(&inner);
        pcb_buf_init(&sealed);
        ok = serialize_plain(&s->map, &inner, s->path, st);
        if (ok) {
            STAGE_BEGIN(s);
            size_t blob_len = PREFIX_LEN + NONCE_LEN + inner.len + TAG_LEN;
            uint8_t *blob = (uint8_t *)pcb_buf_reserve(&sealed, blob_len), nonce[NONCE_LEN];
            ok = blob != NULL && next_nonce(s, nonce, st);
            if (ok) {
                blob[0] = 0x01;
                memcpy(blob + 1, s->value_kid, 4);
                ok = aead_seal(s->value.enc, NULL, nonce, (const uint8_t *)s->store_name,
                               s->store_name_len, (const uint8_t *)inner.data, inner.len,
                               blob + PREFIX_LEN, st);
                STAGE_END(s, PCB_STAGE_AEAD);
            } else if (blob == NULL) {
                oom(st);
            }
            if (ok) {
                tmp.len = 0;
                char *t = pcb_buf_reserve(&tmp, pcb_b64_encoded_len(blob_len));
                ok = t != NULL || oom(st);
                if (ok) {
                    tmp.len = pcb_b64_encode(blob, blob_len, t);
                    pcb_prefs_string(b, SEALED_NAME, sizeof SEALED_NAME - 1, tmp.data, tmp.len);
                }
                STAGE_END(s, PCB_STAGE_BASE64);
            }
        }
        pcb_buf_free(&inner);
        pcb_buf_free(&sealed);
    } else if (ok) {
        const rec_header *r;
        const int text = s->opt.faithful; /* records already hold the file's text */
        MAP_FOREACH(&s->map, r) {
            const char *name = (const char *)rec_name(r), *value = (const char *)rec_value(r);
            size_t nl = r->name_len & LEN_MASK, vl = r->value_len;
            if (!text && !(r->name_len & BAD_BIT)) {
                if (s->opt.key_enc == PCB_KEYENC_SIV) {
                    tmp.len = 0;
                    char *t = pcb_buf_reserve(&tmp, pcb_b64_encoded_len(nl));
                    if (t == NULL)
                        break;
                    tmp.len = pcb_b64_encode(rec_name(r), nl, t);
                    name = tmp.data;
                    nl = tmp.len;
                }
                tmp2.len = 0; /* values are always Base64 in the file */
                char *t = pcb_buf_reserve(&tmp2, pcb_b64_encoded_len(vl));
                if (t == NULL)
                    break;
                tmp2.len = pcb_b64_encode(rec_value(r), vl, t);
                value = tmp2.data;
                vl = tmp2.len;
            }
            pcb_prefs_string(b, name, nl, value, vl);
        }
        if (tmp.failed || tmp2.failed)
            ok = oom(st);
    }
    pcb_prefs_end(b);
    pcb_buf_free(&tmp);
    pcb_buf_free(&tmp2);
    return ok && (!b->failed || oom(st));
}

/* Serializes and writes (io_lock held by the caller; takes the lock itself).
 * Sets *gen to the generation written. */
static int write_snapshot(pcb_store *s, uint64_t *gen, pcb_status *st)
{
    pcb_buf b;
    pcb_buf_init(&b);
    lock(s);
    int ok = serialize(s, &b, st);
    *gen = s->mem_gen;
    unlock(s);
    if (ok) {
        STAGE_BEGIN(s);
        ok = atomic_write(s->path, s->dir, b.data, b.len, 0600, st);
        STAGE_END(s, PCB_STAGE_IO);
    }
    pcb_buf_free(&b);
    return ok;
}

/* ------------------------------------------------------------- loading */

#define LOAD_AHEAD 16 /* records appended before their slot is needed */

typedef struct {
    pcb_store *s;
    pcb_status *st;
    char *keyset_hex[2];
    size_t keyset_len[2];
    char *sealed_text;
    size_t sealed_len;
    pcb_buf value; /* scratch for serializations */
    uint8_t *dec;  /* scratch for Base64 decoding */
    size_t dec_cap;
    int into_plain; /* parsing the inner map of layout=file */
    /* records appended but not yet filed in the table, oldest at ahead_head */
    struct {
        uint64_t h;
        uint32_t ref;
    } ahead[LOAD_AHEAD];
    size_t n_ahead, ahead_head;
} load_ctx;

static uint8_t *dec_scratch(load_ctx *c, size_t n)
{
    if (n > c->dec_cap) {
        size_t cap = c->dec_cap ? c->dec_cap : 256;
        while (cap < n)
            cap *= 2;
        uint8_t *p = malloc(cap);
        if (p == NULL)
            return NULL;
        wipe_free(c->dec, c->dec_cap);
        c->dec = p;
        c->dec_cap = cap;
    }
    return c->dec;
}

/* Files the oldest appended record in the table; 0 with the error set if
 * its name is already there. */
static int load_file_oldest(load_ctx *c)
{
    pcb_map *m = &c->s->map;
    uint64_t h = c->ahead[c->ahead_head].h;
    uint32_t ref = c->ahead[c->ahead_head].ref;
    c->ahead_head = (c->ahead_head + 1) % LOAD_AHEAD;
    c->n_ahead--;
    if (map_file_record(m, ref, h))
        return 1;
    char who[64];
    describe_entry(c->s, rec_at(m, ref), who, sizeof who);
    return pcb_fail(c->st, PCB_E_FORMAT, "%s: entry '%s' appears twice (duplicate name)",
                    c->s->path, who);
}

static int load_flush(load_ctx *c)
{
    while (c->n_ahead > 0)
        if (!load_file_oldest(c))
            return 0;
    return 1;
}

/* Room in the table for one more record besides the queued ones; growing
 * it rebuilds from the arena, so everything queued is filed first. */
static int load_room(load_ctx *c)
{
    pcb_map *m = &c->s->map;
    if ((m->live + m->tombs + c->n_ahead + 1) * 4 <= (m->mask + 1) * 3)
        return 1;
    return load_flush(c) && (map_room_for_one(m) || oom(c->st));
}

/* Queues a record just appended: its slot is fetched now and filed
 * LOAD_AHEAD records later, when the fetch has landed. */
static int load_queue(load_ctx *c, uint32_t ref)
{
    pcb_map *m = &c->s->map;
    const rec_header *r = rec_at(m, ref);
    uint64_t h = hash_bytes(m->seed, rec_name(r), r->name_len & LEN_MASK);
    __builtin_prefetch(&m->slots[h & m->mask], 1);
    if (c->n_ahead == LOAD_AHEAD && !load_file_oldest(c))
        return 0;
    size_t at = (c->ahead_head + c->n_ahead) % LOAD_AHEAD;
    c->ahead[at].h = h;
    c->ahead[at].ref = ref;
    c->n_ahead++;
    return 1;
}

/* Appends a record and queues it; 1, or 0 with the error set. */
static int load_record(load_ctx *c, const uint8_t *name, size_t nl, uint32_t flags,
                       const uint8_t *value, size_t vl)
{
    if (nl > LEN_MASK || vl > UINT32_MAX)
        return oom(c->st);
    if (!load_room(c))
        return 0;
    uint32_t ref = arena_append(&c->s->map, name, nl, flags, value, vl);
    return ref != 0 ? load_queue(c, ref) : oom(c->st);
}

/* Plaintext serialization of a parsed native element. */
static void serialize_entry(pcb_buf *b, const pcb_pref_entry *e)
{
    b->len = 0;
    pcb_buf_put_be32(b, (uint32_t)e->type);
    switch (e->type) {
    case PCB_PREF_STRING:
        pcb_buf_put_be32(b, (uint32_t)e->text_len);
        pcb_buf_append(b, e->text, e->text_len);
        break;
    case PCB_PREF_STRING_SET:
        for (size_t i = 0; i < e->n_members; i++) {
            pcb_buf_put_be32(b, (uint32_t)e->member_lens[i]);
            pcb_buf_append(b, e->members[i], e->member_lens[i]);
        }
        break;
    case PCB_PREF_INT:
        pcb_buf_put_be32(b, (uint32_t)(int32_t)e->i);
        break;
    case PCB_PREF_LONG:
        pcb_buf_put_be32(b, (uint32_t)((uint64_t)e->i >> 32));
        pcb_buf_put_be32(b, (uint32_t)e->i);
        break;
    case PCB_PREF_FLOAT: {
        uint32_t bits;
        memcpy(&bits, &e->f, 4);
        pcb_buf_put_be32(b, bits);
        break;
    }
    case PCB_PREF_BOOLEAN: {
        char v = e->b ? 1 : 0;
        pcb_buf_append(b, &v, 1);
        break;
    }
    }
}

static int load_entry(void *arg, const pcb_pref_entry *e)
{
    load_ctx *c = arg;
    pcb_store *s = c->s;
    if (!s->opt.encrypted || c->into_plain) {
        if (pcb_store_is_reserved(e->name, e->name_len))
            return pcb_fail(c->st, PCB_E_FORMAT, "%s holds keysets: it is an encrypted store; "
                            "open it with encrypted=True", s->path), 1;
        serialize_entry(&c->value, e);
        if (c->value.failed)
            return oom(c->st), 1;
        return !load_record(c, (const uint8_t *)e->name, e->name_len, 0,
                            (const uint8_t *)c->value.data, c->value.len);
    }
    if (e->type != PCB_PREF_STRING)
        return pcb_fail(c->st, PCB_E_FORMAT,
                        "%s: entry '%.40s' is a native <%s> element, which an encrypted store never "
                        "writes (is this a plain store? open it with encrypted=False)", s->path,
                        e->name, e->type == PCB_PREF_INT ? "int" : e->type == PCB_PREF_LONG ? "long"
                        : e->type == PCB_PREF_FLOAT ? "float" : e->type == PCB_PREF_BOOLEAN ? "boolean"
                        : "set"), 1;
    for (int k = 0; k < 2; k++) {
        const char *reserved = k ? VALUE_KEYSET : KEY_KEYSET;
        if (e->name_len == strlen(reserved) && memcmp(e->name, reserved, e->name_len) == 0) {
            if (c->keyset_hex[k] != NULL)
                return pcb_fail(c->st, PCB_E_FORMAT, "%s: entry '%s' appears twice (duplicate name)", s->path, reserved), 1;
            c->keyset_hex[k] = strndup(e->text, e->text_len);
            c->keyset_len[k] = e->text_len;
            return c->keyset_hex[k] ? 0 : (oom(c->st), 1);
        }
    }
    if (s->opt.layout == PCB_LAYOUT_FILE) {
        if (e->name_len == sizeof SEALED_NAME - 1 && memcmp(e->name, SEALED_NAME, e->name_len) == 0) {
            if (c->sealed_text != NULL)
                return pcb_fail(c->st, PCB_E_FORMAT, "%s: entry '%s' appears twice (duplicate name)", s->path,
                                SEALED_NAME), 1;
            c->sealed_text = strndup(e->text, e->text_len);
            c->sealed_len = e->text_len;
            return c->sealed_text ? 0 : (oom(c->st), 1);
        }
        return pcb_fail(c->st, PCB_E_FORMAT, "%s: entry '%.40s' does not belong in a layout='file' "
                        "store (is it an entries store? open it with layout='entries')",
                        s->path, e->name), 1;
    }
    const uint8_t *name = (const uint8_t *)e->name, *value = (const uint8_t *)e->text;
    size_t nl = e->name_len, vl = e->text_len;
    uint32_t flags = 0;
    if (!s->opt.faithful && s->opt.key_enc == PCB_KEYENC_SIV) {
        /* The common case: Base64 decoded straight into the new record. */
        if (!load_room(c))
            return 1;
        uint8_t *rec = map_tail(&s->map, pcb_b64_decoded_max(nl), pcb_b64_decoded_max(vl));
        if (rec == NULL)
            return oom(c->st), 1;
        size_t dn = pcb_b64_decode(e->name, nl, rec);
        size_t dv = dn == (size_t)-1 ? dn : pcb_b64_decode(e->text, vl, rec + dn);
        if (dn != (size_t)-1 && dv != (size_t)-1)
            return !load_queue(c, map_append_tail(&s->map, dn, dv));
        /* undecodable: kept as text below, reported as corrupt when read */
    }
    if (!s->opt.faithful) {
        /* Lean records hold the decoded bytes; undecodable text is kept as
         * is and reported as corrupt when the entry is read. */
        uint8_t *buf = dec_scratch(c, pcb_b64_decoded_max(nl) + pcb_b64_decoded_max(vl));
        if (buf == NULL)
            return oom(c->st), 1;
        size_t dn = nl, dv = vl;
        if (s->opt.key_enc == PCB_KEYENC_SIV)
            dn = pcb_b64_decode(e->name, nl, buf);
        if (dn != (size_t)-1 && s->opt.key_enc == PCB_KEYENC_SIV)
            name = buf;
        uint8_t *vbuf = buf + pcb_b64_decoded_max(nl);
        dv = pcb_b64_decode(e->text, vl, vbuf);
        if (dn == (size_t)-1 || dv == (size_t)-1) {
            flags = BAD_BIT;
            name = (const uint8_t *)e->name;
        } else {
            nl = dn;
            value = vbuf;
            vl = dv;
        }
    }
    return !load_record(c, name, nl, flags, value, vl);
}

static int parse_into(pcb_store *s, load_ctx *c, const char *data, size_t len, const char *what)
{
    char err[200];
    /* Size the map for the file up front (a line per entry at most; records
     * are no larger than their text), instead of growing it step by step. */
    size_t lines = 1;
    for (const char *q = data, *end = data + len; (q = memchr(q, '\n', (size_t)(end - q))) != NULL; q++)
        lines++;
    if ((lines > s->map.mask / 2 && !map_rehash(&s->map, lines)) || !arena_reserve(&s->map, len))
        return oom(c->st);
    /* The map finds duplicate names itself, so the parser need not copy them all. */
    int rc = pcb_prefs_parse_flags(data, len, PCB_PREFS_ALLOW_DUPLICATES, load_entry, c, err, sizeof err);
    if (rc == 0 && !load_flush(c))
        return 0;
    if (rc == 0)
        arena_trim(&s->map);
    if (rc == -1)
        return pcb_fail(c->st, PCB_E_FORMAT, "%s is not a valid SharedPreferences XML file (%s): %s",
                        s->path, what, err);
    return rc == 0;
}

/* Refuses a file whose keysets do not fit the options, before a master key
 * may be created for it (a failed open leaves no new file behind). */
static int check_keysets_present(pcb_store *s, load_ctx *c, int file_has_entries, pcb_status *st)
{
    const int need[2] = {uses_key_keyset(s), uses_value_keyset(s)};
    const int have[2] = {c->keyset_hex[0] != NULL, c->keyset_hex[1] != NULL};
    if (!have[0] && !have[1]) {
        if (file_has_entries && (need[0] || need[1]))
            return pcb_fail(st, PCB_E_FORMAT, "%s has entries but no keysets: it was not written "
                            "by an encrypted store with these options", s->path);
        return 1;
    }
    for (int k = 0; k < 2; k++)
        if (need[k] != have[k])
            return pcb_fail(st, PCB_E_FORMAT, "%s %s a %s keyset, but the store was opened with "
                            "%s; open it with the options it was created with", s->path,
                            have[k] ? "has" : "lacks", k ? "value" : "key",
                            k ? (need[1] ? "value encryption" : "value_encryption='none'")
                              : (need[0] ? "key_encryption='siv'" : "key_encryption='none'"));
    return 1;
}

/* Loads the file's keysets with the master key, or creates keysets for a new store. */
static int load_keys(pcb_store *s, load_ctx *c, int file_has_entries, int *created, pcb_status *st)
{
    const int need[2] = {uses_key_keyset(s), uses_value_keyset(s)};
    const int have[2] = {c->keyset_hex[0] != NULL, c->keyset_hex[1] != NULL};
    if (!need[0] && !need[1] && !have[0] && !have[1])
        return 1; /* nothing encrypted: no keysets */
    (void)file_has_entries; /* checked by check_keysets_present */
    if (!have[0] && !have[1]) {
        *created = 1;
        return new_keys(s, st);
    }
    int rc[2] = {1, 1};
    if (need[0])
        rc[0] = open_keyset(s, c->keyset_hex[0], c->keyset_len[0], s->siv_kid, s->siv_key,
                            SIV_KEY_LEN, st);
    if (rc[0] >= 0 && need[1])
        rc[1] = open_keyset(s, c->keyset_hex[1], c->keyset_len[1], s->value_kid, s->value_key,
                            VALUE_KEY_LEN, st);
    if (rc[0] < 0 || rc[1] < 0)
        return 0;
    for (int k = 0; k < 2; k++) { /* kept verbatim: commits rewrite them unchanged */
        s->keyset_text[k].len = 0;
        if (need[k])
            pcb_buf_append(&s->keyset_text[k], c->keyset_hex[k], c->keyset_len[k]);
        if (s->keyset_text[k].failed)
            return oom(st);
    }
    if (rc[0] == 0 && rc[1] == 0 && need[0] && need[1])
        return pcb_fail(st, PCB_E_DECRYPT, "%s: the master key does not match this store "
                        "(neither keyset decrypts)", s->path);
    if (rc[0] == 0 || rc[1] == 0) {
        int both = need[0] && need[1];
        return pcb_fail(st, PCB_E_DECRYPT, "%s: entry '%s' (the %s keyset) failed authentication%s",
                        s->path, rc[0] == 0 ? KEY_KEYSET : VALUE_KEYSET,
                        rc[0] == 0 ? "key" : "value",
                        both ? " (tampered)" : ": the master key does not match or the keyset was tampered with");
    }
    return key_contexts(s, st);
}

static int load_master(pcb_store *s, int may_create, int *created, pcb_status *st);

static int load(pcb_store *s, int *created, pcb_status *st)
{
    file_bytes f;
    int missing, ok;
    load_ctx c;
    memset(&c, 0, sizeof c);
    c.s = s;
    c.st = st;
    pcb_buf_init(&c.value);
    if (!read_whole_file(s->path, MAX_FILE, "a store (4 GiB)", &f, &missing, st))
        return 0;
    ok = missing || parse_into(s, &c, f.data, f.len, "the store file");
    if (ok && s->opt.encrypted) {
        /* The master key is created only for a store without keysets, so a
         * failed open never leaves a new key file behind. */
        int has_entries = s->map.live > 0 || c.sealed_text != NULL, created_master = 0;
        int has_keysets = c.keyset_hex[0] != NULL || c.keyset_hex[1] != NULL;
        ok = check_keysets_present(s, &c, has_entries, st)
             && load_master(s, !has_keysets, &created_master, st)
             && load_keys(s, &c, has_entries, created, st);
        *created |= created_master;
        if (ok && c.sealed_text != NULL) {
            /* layout=file: unseal the map and parse it as plain XML. */
            size_t n = pcb_b64_decoded_max(c.sealed_len);
            uint8_t *blob = malloc(n ? n : 1);
            size_t bl = blob ? pcb_b64_decode(c.sealed_text, c.sealed_len, blob) : 0;
            ok = blob != NULL || oom(st);
            if (ok && (bl == (size_t)-1 || bl < PREFIX_LEN + NONCE_LEN + TAG_LEN || blob[0] != 1
                       || memcmp(blob + 1, s->value_kid, 4) != 0))
                ok = pcb_fail(st, PCB_E_DECRYPT, "%s: entry '%s' is corrupted (bad encoding, "
                              "prefix or key id)", s->path, SEALED_NAME);
            if (ok) {
                size_t body = bl - PREFIX_LEN - NONCE_LEN - TAG_LEN;
                char *inner = malloc(body + 1);
                ok = inner != NULL || oom(st);
                if (ok) {
                    int rc = aead_open(s->value.dec, NULL, (const uint8_t *)s->store_name,
                                       s->store_name_len, blob + PREFIX_LEN, bl - PREFIX_LEN,
                                       (uint8_t *)inner, st);
                    if (rc == 0)
                        ok = pcb_fail(st, PCB_E_DECRYPT, "%s: entry '%s' (the sealed map) failed "
                                      "authentication (tampered)", s->path, SEALED_NAME);
                    else if (rc < 0)
                        ok = 0;
                    else {
                        c.into_plain = 1;
                        ok = parse_into(s, &c, inner, body, "the sealed map");
                    }
                    wipe_free(inner, body + 1);
                }
            }
            free(blob);
        }
        if (ok && *created) {
            /* First launch: persist the new keysets at once, as ESP does. */
            uint64_t gen;
            pthread_mutex_lock(&s->io_lock);
            ok = write_snapshot(s, &gen, st);
            pthread_mutex_unlock(&s->io_lock);
        }
    }
    for (int k = 0; k < 2; k++)
        wipe_free(c.keyset_hex[k], c.keyset_len[k]);
    free(c.sealed_text);
    pcb_buf_free(&c.value);
    wipe_free(c.dec, c.dec_cap);
    file_bytes_free(&f, 0); /* ciphertext, or a plain store's own public text */
    return ok;
}

/* ------------------------------------------------------------ open/close */

/* Whether the main map holds any plaintext (then it is wiped when freed). */
static int plaintext_in_map(const pcb_store_options *o)
{
    return !o->encrypted || o->key_enc == PCB_KEYENC_NONE || o->value_enc == PCB_VALENC_NONE
           || o->layout == PCB_LAYOUT_FILE;
}

static void store_free(pcb_store *s)
{
    if (s == NULL)
        return;
    if (s->siv_ready)
        pcb_siv_free(&s->siv);
    aead_free(&s->value);
    aead_free(&s->master_ctx);
    map_free(&s->map);
    map_free(&s->plain_cache);
    pcb_buf_free(&s->scratch);
    pcb_buf_free(&s->keyset_text[0]);
    pcb_buf_free(&s->keyset_text[1]);
    free(s->path);
    free(s->dir);
    free(s->store_name);
    free(s->scrypt_path);
    if (s->opt.passphrase)
        wipe_free((void *)s->opt.passphrase, s->opt.passphrase_len + 1);
    free((void *)s->opt.master_key_file);
    pthread_mutex_destroy(&s->lock);
    pthread_mutex_destroy(&s->io_lock);
    pthread_cond_destroy(&s->cond);
    OPENSSL_cleanse(s, sizeof *s);
    free(s);
}

/* Copies the options' strings so the store owns them. */
static int own_options(pcb_store_options *dst, const pcb_store_options *src)
{
    *dst = *src;
    dst->master_key_file = src->master_key_file ? strdup(src->master_key_file) : NULL;
    dst->passphrase = NULL;
    if (src->passphrase) {
        char *p = malloc(src->passphrase_len + 1);
        if (p) {
            memcpy(p, src->passphrase, src->passphrase_len);
            p[src->passphrase_len] = '\0';
        }
        dst->passphrase = p;
    }
    return (src->master_key_file == NULL || dst->master_key_file != NULL)
           && (src->passphrase == NULL || dst->passphrase != NULL);
}

static int load_master(pcb_store *s, int may_create, int *created, pcb_status *st)
{
    int ok = s->opt.master_key_file
             ? master_from_file(s, s->opt.master_key_file, may_create, s->master, created, st)
             : master_from_passphrase(s, may_create, s->master, created, st);
    if (!ok)
        return 0;
    aead_free(&s->master_ctx);
    return aead_new(&s->master_ctx, s->master_cipher, s->master, st);
}

pcb_store *pcb_store_open(const char *path, const pcb_store_options *opt,
                          const pcb_evp_cache *cache, int *created_key, pcb_status *st)
{
    int created_keys = 0;
    if (created_key)
        *created_key = 0;
    if (opt->encrypted && (opt->master_key_file == NULL) == (opt->passphrase == NULL)) {
        pcb_fail(st, PCB_E_VALUE, "an encrypted store needs exactly one of master_key_file= or passphrase=");
        return NULL;
    }
    if (opt->encrypted && (cache->cipher[PCB_EVP_AES256_GCM] == NULL
                           || (opt->value_enc == PCB_VALENC_CHACHA
                               && cache->cipher[PCB_EVP_CHACHA20_POLY1305] == NULL))) {
        pcb_fail(st, PCB_E_UNSUPPORTED, "this OpenSSL lacks the ciphers the store needs");
        return NULL;
    }
    pcb_store *s = calloc(1, sizeof *s);
    if (s == NULL) {
        oom(st);
        return NULL;
    }
    pthread_once(&atfork_once, register_atfork);
    pthread_mutex_init(&s->lock, NULL);
    pthread_mutex_init(&s->io_lock, NULL);
    pthread_cond_init(&s->cond, NULL);
    pcb_buf_init(&s->scratch);
    pcb_buf_init(&s->keyset_text[0]);
    pcb_buf_init(&s->keyset_text[1]);
    s->cache = cache;
    s->libctx = cache->libctx;
    s->master_cipher = cache->cipher[PCB_EVP_AES256_GCM];
    s->value_cipher = opt->value_enc == PCB_VALENC_CHACHA ? cache->cipher[PCB_EVP_CHACHA20_POLY1305]
                                                          : cache->cipher[PCB_EVP_AES256_GCM];
    if (!own_options(&s->opt, opt)) {
        store_free(s);
        oom(st);
        return NULL;
    }
    s->path = strdup(path);
    s->dir = dir_of(path);
    const char *slash = strrchr(path, '/');
    const char *base = slash ? slash + 1 : path;
    size_t bl = strlen(base);
    if (bl > 4 && strcmp(base + bl - 4, ".xml") == 0)
        bl -= 4;
    s->store_name = strndup(base, bl);
    s->store_name_len = bl;
    size_t pl = strlen(path);
    s->scrypt_path = malloc(pl + 8);
    if (s->path == NULL || s->dir == NULL || s->store_name == NULL || s->scrypt_path == NULL
        || !map_init(&s->map, 16, plaintext_in_map(opt))
        || (opt->cache && !map_init(&s->plain_cache, 16, 1))) {
        store_free(s);
        oom(st);
        return NULL;
    }
    memcpy(s->scrypt_path, path, pl);
    memcpy(s->scrypt_path + pl, ".scrypt", 8);
    if (bl == 0) {
        pcb_fail(st, PCB_E_VALUE, "store path %s has no file name", path);
        store_free(s);
        return NULL;
    }
    /* Fail here, not at the first commit, and before any key file is made. */
    struct stat dir_sb;
    int dir_ok = stat(s->dir, &dir_sb) == 0;
    if (dir_ok && !S_ISDIR(dir_sb.st_mode)) {
        errno = ENOTDIR;
        dir_ok = 0;
    }
    if (!dir_ok) {
        os_fail(st, "the store's directory %s is not usable", s->dir);
        store_free(s);
        return NULL;
    }
    remove_stale_tmp(s->path, s->dir);
    if (!load(s, &created_keys, st)) {
        store_free(s);
        return NULL;
    }
    if (created_key)
        *created_key = created_keys;
    return s;
}

static void *writer_main(void *arg);

int pcb_store_flush(pcb_store *s, pcb_status *st)
{
    lock(s);
    while (s->disk_gen < s->mem_gen && s->writer_errno == 0 && s->writer_started)
        pthread_cond_wait(&s->cond, &s->lock);
    int err = s->writer_errno;
    if (err) {
        st->code = PCB_E_OS;
        st->os_errno = err;
        snprintf(st->msg, sizeof st->msg, "%s", s->writer_error);
        s->writer_errno = 0;
    }
    unlock(s);
    return err == 0;
}

int pcb_store_close(pcb_store *s, pcb_status *st)
{
    int ok = pcb_store_flush(s, st);
    if (s->writer_started) {
        lock(s);
        s->writer_stop = 1;
        pthread_cond_broadcast(&s->cond);
        unlock(s);
        pthread_join(s->writer, NULL);
    }
    store_free(s);
    return ok;
}

/* ------------------------------------------------------------- reading */

static int cache_lookup(pcb_store *s, const char *name, size_t len, pcb_buf *out, int *found)
{
    const rec_header *r = map_find(&s->plain_cache, (const uint8_t *)name, len);
    if (r == NULL)
        return 0;
    out->len = 0;
    pcb_buf_append(out, (const char *)rec_value(r), r->value_len);
    *found = 1;
    return 1;
}

/* Looks name up (lock held): the record or NULL, and the AAD its value needs. */
static const rec_header *lookup(pcb_store *s, const char *name, size_t len, pcb_buf *sname,
                                pcb_status *st, int *failed)
{
    *failed = 0;
    if (!store_name_of(s, name, len, sname, st)) {
        *failed = 1;
        return NULL;
    }
    STAGE_BEGIN(s);
    const rec_header *r = map_find(&s->map, (const uint8_t *)sname->data, sname->len);
    STAGE_END(s, PCB_STAGE_LOOKUP);
    return r;
}

int pcb_store_get(pcb_store *s, const char *name, size_t len, pcb_buf *out, int *found,
                  pcb_status *st)
{
    pcb_buf sname;
    int failed, ok = 1;
    *found = 0;
    out->len = 0;
    if (!check_name(s, name, len, st))
        return 0;
    lock(s);
    if (s->opt.cache && cache_lookup(s, name, len, out, found)) {
        unlock(s);
        return 1;
    }
    pcb_buf_init(&sname);
    const rec_header *r = lookup(s, name, len, &sname, st, &failed);
    if (failed) {
        ok = 0;
    } else if (r != NULL) {
        size_t aad_len;
        STAGE_BEGIN(s);
        const uint8_t *aad = value_aad(s, (const uint8_t *)sname.data, sname.len, &aad_len);
        STAGE_END(s, PCB_STAGE_BASE64);
        ok = aad != NULL ? open_value(s, r, aad, aad_len, out, st) : oom(st);
        if (ok) {
            *found = 1;
            if (s->opt.cache && !map_put(&s->plain_cache, (const uint8_t *)name, len, 0,
                                         (const uint8_t *)out->data, out->len))
                ok = oom(st);
        }
    }
    unlock(s);
    pcb_buf_free(&sname);
    return ok;
}

int pcb_store_contains(pcb_store *s, const char *name, size_t len, int *found, pcb_status *st)
{
    pcb_buf sname;
    int failed;
    *found = 0;
    if (!check_name(s, name, len, st))
        return 0;
    lock(s);
    if (s->opt.cache && map_find(&s->plain_cache, (const uint8_t *)name, len) != NULL) {
        unlock(s);
        *found = 1;
        return 1;
    }
    pcb_buf_init(&sname);
    const rec_header *r = lookup(s, name, len, &sname, st, &failed);
    unlock(s);
    pcb_buf_free(&sname);
    *found = r != NULL;
    return !failed;
}

size_t pcb_store_count(pcb_store *s)
{
    lock(s);
    size_t n = s->map.live;
    unlock(s);
    return n;
}

/* The plain name of a record (SIV-decrypted when names are encrypted). */
static int plain_name_of(pcb_store *s, const rec_header *r, pcb_buf *out, pcb_status *st)
{
    const uint8_t *n = rec_name(r);
    size_t nl = r->name_len & LEN_MASK;
    uint8_t *decoded = NULL;
    char who[64];
    out->len = 0;
    if (pcb_buf_reserve(out, nl + 1) == NULL) /* data is never NULL, even for "" */
        return oom(st);
    if (s->opt.key_enc == PCB_KEYENC_NONE || s->opt.layout == PCB_LAYOUT_FILE || !s->opt.encrypted) {
        pcb_buf_append(out, (const char *)n, nl);
        return !out->failed || oom(st);
    }
    if (s->opt.faithful) {
        decoded = malloc(pcb_b64_decoded_max(nl));
        if (decoded == NULL)
            return oom(st);
        size_t dl = pcb_b64_decode((const char *)n, nl, decoded);
        if (dl == (size_t)-1) {
            free(decoded);
            describe_entry(s, r, who, sizeof who);
            return pcb_fail(st, PCB_E_DECRYPT, "%s: entry '%s': the name is not valid Base64 (corrupted)",
                            s->path, who);
        }
        n = decoded;
        nl = dl;
    } else if (r->name_len & BAD_BIT) {
        describe_entry(s, r, who, sizeof who);
        return pcb_fail(st, PCB_E_DECRYPT, "%s: entry '%s' is not valid Base64 (corrupted)", s->path, who);
    }
    int ok = 1;
    if (nl < PREFIX_LEN + 16 || n[0] != 0x01 || memcmp(n + 1, s->siv_kid, 4) != 0) {
        describe_entry(s, r, who, sizeof who);
        ok = pcb_fail(st, PCB_E_DECRYPT, "%s: entry '%s': the name is not sealed by this store's "
                      "key keyset (wrong prefix, key id or length)", s->path, who);
    } else {
        char *p = pcb_buf_reserve(out, nl - PREFIX_LEN - 16 + 1);
        uint8_t d[16];
        if (p == NULL) {
            ok = oom(st);
        } else {
            if (s->opt.faithful) {
                ok = pcb_siv_set_key(&s->siv, s->siv_key, SIV_KEY_LEN);
                memcpy(d, s->siv.d0, 16);
                ok = ok && pcb_s2v_add(&s->siv, d, (const uint8_t *)s->store_name, s->store_name_len);
                if (!ok)
                    pcb_fail_openssl(st, "AES-SIV");
            } else {
                memcpy(d, s->s2v_store, 16);
            }
            int rc = ok ? pcb_siv_decrypt(&s->siv, d, n + PREFIX_LEN, nl - PREFIX_LEN, (uint8_t *)p) : -1;
            if (rc < 0 && ok) {
                ok = pcb_fail_openssl(st, "AES-SIV name decryption");
            } else if (rc == 0) {
                describe_entry(s, r, who, sizeof who);
                ok = pcb_fail(st, PCB_E_DECRYPT, "%s: entry '%s': the name failed authentication "
                              "(tampered)", s->path, who);
            } else if (ok) {
                out->len = nl - PREFIX_LEN - 16;
            }
        }
    }
    free(decoded);
    return ok;
}

static int all_locked(pcb_store *s, pcb_store_entry_fn fn, void *arg, pcb_status *st)
{
    pcb_buf name, value, sname;
    const rec_header *r;
    int ok = 1;
    pcb_buf_init(&name);
    pcb_buf_init(&value);
    pcb_buf_init(&sname);
    MAP_FOREACH(&s->map, r) {
        if (!plain_name_of(s, r, &name, st)) {
            ok = 0;
            break;
        }
        const rec_header *target = r;
        const uint8_t *aad = rec_name(r);
        size_t aad_len = r->name_len & LEN_MASK;
        if (s->opt.faithful && s->opt.encrypted && s->opt.key_enc == PCB_KEYENC_SIV
            && s->opt.layout == PCB_LAYOUT_ENTRIES) {
            /* ESP's getAll(): decrypt the name, then getDecryptedObject(name)
             * encrypts it again and looks it up. */
            int failed;
            target = lookup(s, name.data, name.len, &sname, st, &failed);
            if (failed) {
                ok = 0;
                break;
            }
            aad = (const uint8_t *)sname.data;
            aad_len = sname.len;
            if (target == NULL)
                continue;
        } else if (s->opt.encrypted) {
            aad = value_aad(s, rec_name(r), r->name_len & LEN_MASK, &aad_len);
            if (aad == NULL) {
                ok = oom(st);
                break;
            }
        }
        if (!open_value(s, target, aad, aad_len, &value, st)) {
            ok = 0;
            break;
        }
        if (fn != NULL && fn(arg, name.data, name.len, (const uint8_t *)value.data, value.len) != 0) {
            ok = 0;
            break;
        }
    }
    pcb_buf_free(&name);
    pcb_buf_free(&value);
    pcb_buf_free(&sname);
    return ok;
}

int pcb_store_all(pcb_store *s, pcb_store_entry_fn fn, void *arg, pcb_status *st)
{
    lock(s);
    int ok = all_locked(s, fn, arg, st);
    unlock(s);
    return ok;
}

/* ------------------------------------------------------------- editing */

/* Op record: kind(1) plain_len(4) sname_len(4) svalue_len(4) pt_len(4), then the bytes. */
#define OP_PUT 1
#define OP_REMOVE 2
#define OP_HEADER 17

pcb_edit *pcb_edit_new(pcb_store *s, pcb_status *st)
{
    pcb_edit *e = calloc(1, sizeof *e);
    if (e == NULL) {
        oom(st);
        return NULL;
    }
    e->s = s;
    lock(s);
    e->key_gen = s->key_gen;
    unlock(s);
    pcb_buf_init(&e->ops);
    return e;
}

void pcb_edit_free(pcb_edit *e)
{
    if (e == NULL)
        return;
    pcb_buf_free(&e->ops);
    free(e);
}

static void put_u32_le(pcb_buf *b, size_t v)
{
    uint32_t x = (uint32_t)v;
    pcb_buf_append(b, (const char *)&x, 4);
}

/* Appends one op, its stored forms computed under the current keys (lock held). */
static int encode_op(pcb_store *s, pcb_buf *ops, int kind, const char *name, size_t nl,
                     const uint8_t *pt, size_t pl, pcb_status *st)
{
    pcb_buf sname, svalue;
    int ok;
    pcb_buf_init(&sname);
    pcb_buf_init(&svalue);
    ok = store_name_of(s, name, nl, &sname, st);
    if (ok && kind == OP_PUT) {
        size_t aad_len;
        STAGE_BEGIN(s);
        const uint8_t *aad = value_aad(s, (const uint8_t *)sname.data, sname.len, &aad_len);
        STAGE_END(s, PCB_STAGE_BASE64);
        ok = aad != NULL ? seal_value(s, aad, aad_len, pt, pl, &svalue, st) : oom(st);
    }
    if (ok) {
        char k = (char)kind;
        pcb_buf_append(ops, &k, 1);
        put_u32_le(ops, nl);
        put_u32_le(ops, sname.len);
        put_u32_le(ops, svalue.len);
        put_u32_le(ops, kind == OP_PUT ? pl : 0);
        pcb_buf_append(ops, name, nl);
        pcb_buf_append(ops, sname.data, sname.len);
        pcb_buf_append(ops, svalue.data, svalue.len);
        if (kind == OP_PUT)
            pcb_buf_append(ops, (const char *)pt, pl);
        ok = !ops->failed || oom(st);
    }
    pcb_buf_free(&sname);
    pcb_buf_free(&svalue);
    return ok;
}

/* Names and strings that reach the XML file as text must not hold U+0000:
 * XML cannot represent it, so the file could never be read back. */
static int name_is_plain_text(const pcb_store *s)
{
    return !s->opt.encrypted || s->opt.key_enc == PCB_KEYENC_NONE || s->opt.layout == PCB_LAYOUT_FILE;
}

static int check_xml_name(const pcb_store *s, const char *name, size_t nl, pcb_status *st)
{
    if (name_is_plain_text(s) && memchr(name, 0, nl) != NULL)
        return pcb_fail(st, PCB_E_VALUE, "this store keeps names as XML text, which cannot hold "
                        "the character U+0000 (NUL); remove it from the name");
    return 1;
}

static int check_xml_value(const pcb_store *s, const uint8_t *v, size_t vl, pcb_status *st)
{
    if ((s->opt.encrypted && s->opt.layout == PCB_LAYOUT_ENTRIES) || vl < 4)
        return 1; /* values are Base64 in the file */
    uint32_t type = pcb_be32(v);
    if (type != PCB_PREF_STRING && type != PCB_PREF_STRING_SET)
        return 1;
    /* a string is one length-prefixed run, a set several: the same walk */
    const uint8_t *run;
    size_t off = 4, len;
    while (pcb_value_next_run(v, vl, &off, &run, &len) == 1)
        if (memchr(run, 0, len) != NULL)
            return pcb_fail(st, PCB_E_VALUE, "this store keeps strings as XML text, which cannot "
                            "hold the character U+0000 (NUL); remove it from the value");
    return 1;
}

int pcb_edit_put(pcb_edit *e, const char *name, size_t nl, const uint8_t *value, size_t vl,
                 pcb_status *st)
{
    if (!check_name(e->s, name, nl, st) || !check_xml_name(e->s, name, nl, st)
        || !check_xml_value(e->s, value, vl, st))
        return 0;
    if (nl > (1u << 28) || vl > (1u << 30))
        return pcb_fail(st, PCB_E_VALUE, "entry too large (names up to 256 MiB, values up to 1 GiB)");
    pcb_store *s = e->s;
    lock(s);
    int ok = encode_op(s, &e->ops, OP_PUT, name, nl, value, vl, st);
    unlock(s);
    e->n_ops += ok;
    return ok;
}

int pcb_edit_remove(pcb_edit *e, const char *name, size_t nl, pcb_status *st)
{
    if (!check_name(e->s, name, nl, st))
        return 0;
    if (name_is_plain_text(e->s) && memchr(name, 0, nl) != NULL)
        return 1; /* no such entry can exist */
    pcb_store *s = e->s;
    lock(s);
    int ok = encode_op(s, &e->ops, OP_REMOVE, name, nl, NULL, 0, st); /* ESP encrypts the key */
    unlock(s);
    e->n_ops += ok;
    return ok;
}

void pcb_edit_clear(pcb_edit *e)
{
    e->clear = 1;
}

static uint32_t get_u32_le(const char *p)
{
    uint32_t x;
    memcpy(&x, p, 4);
    return x;
}

/* Applies the editor's ops to memory (lock held). */
static int apply_ops(pcb_store *s, pcb_edit *e, pcb_status *st)
{
    pcb_buf redone;
    const pcb_buf *ops = &e->ops;
    pcb_buf_init(&redone);
    if (e->key_gen != s->key_gen) {
        /* Keys rotated since the puts were encrypted: encrypt them again. */
        for (size_t off = 0; off < ops->len;) {
            const char *p = ops->data + off;
            size_t nl = get_u32_le(p + 1), sl = get_u32_le(p + 5), vl = get_u32_le(p + 9),
                   pl = get_u32_le(p + 13);
            if (!encode_op(s, &redone, p[0], p + OP_HEADER, nl,
                           (const uint8_t *)p + OP_HEADER + nl + sl + vl, pl, st)) {
                pcb_buf_free(&redone);
                return 0;
            }
            off += OP_HEADER + nl + sl + vl + pl;
        }
        ops = &redone;
    }
    if (e->clear) {
        map_clear(&s->map);
        if (s->opt.cache)
            map_clear(&s->plain_cache);
    }
    int ok = 1;
    for (size_t off = 0; off < ops->len && ok;) {
        const char *p = ops->data + off;
        size_t nl = get_u32_le(p + 1), sl = get_u32_le(p + 5), vl = get_u32_le(p + 9),
               pl = get_u32_le(p + 13);
        const uint8_t *name = (const uint8_t *)p + OP_HEADER;
        const uint8_t *sname = name + nl, *svalue = sname + sl;
        if (p[0] == OP_PUT)
            ok = map_put(&s->map, sname, sl, 0, svalue, vl) || oom(st);
        else
            map_remove(&s->map, sname, sl);
        if (s->opt.cache)
            map_remove(&s->plain_cache, name, nl);
        off += OP_HEADER + nl + sl + vl + pl;
    }
    pcb_buf_free(&redone);
    if (ok)
        ok = map_maybe_compact(&s->map) || oom(st);
    s->mem_gen++;
    return ok;
}

static int start_writer(pcb_store *s, pcb_status *st)
{
    if (s->writer_started)
        return 1;
    sigset_t all, old;
    sigfillset(&all);
    pthread_sigmask(SIG_SETMASK, &all, &old); /* the writer never takes signals */
    int rc = pthread_create(&s->writer, NULL, writer_main, s);
    pthread_sigmask(SIG_SETMASK, &old, NULL);
    if (rc != 0) {
        errno = rc;
        return os_fail(st, "cannot start the background writer");
    }
    s->writer_started = 1;
    return 1;
}

int pcb_edit_commit(pcb_edit *e, int sync, pcb_status *st)
{
    pcb_store *s = e->s;
    int ok;
    if (sync) {
        uint64_t gen;
        pthread_mutex_lock(&s->io_lock);
        lock(s);
        ok = apply_ops(s, e, st);
        unlock(s);
        ok = ok && write_snapshot(s, &gen, st);
        if (ok) {
            lock(s);
            if (gen > s->disk_gen)
                s->disk_gen = gen;
            pthread_cond_broadcast(&s->cond);
            unlock(s);
        }
        pthread_mutex_unlock(&s->io_lock);
    } else {
        lock(s);
        ok = apply_ops(s, e, st) && start_writer(s, st);
        pthread_cond_broadcast(&s->cond);
        unlock(s);
    }
    e->ops.len = 0;
    e->n_ops = 0;
    e->clear = 0;
    e->key_gen = s->key_gen;
    return ok;
}

static void *writer_main(void *arg)
{
    pcb_store *s = arg;
    lock(s);
    for (;;) {
        while (!s->writer_stop && s->disk_gen >= s->mem_gen)
            pthread_cond_wait(&s->cond, &s->lock);
        if (s->disk_gen >= s->mem_gen && s->writer_stop)
            break;
        unlock(s);
        pcb_status st = {0};
        uint64_t gen;
        pthread_mutex_lock(&s->io_lock);
        int ok = write_snapshot(s, &gen, &st);
        pthread_mutex_unlock(&s->io_lock);
        lock(s);
        if (ok) {
            if (gen > s->disk_gen)
                s->disk_gen = gen;
        } else {
            /* Reported by the next flush/close; later changes retry. */
            s->writer_errno = st.code == PCB_E_OS ? st.os_errno : EIO;
            snprintf(s->writer_error, sizeof s->writer_error, "background write failed: %.200s", st.msg);
            s->disk_gen = s->mem_gen;
        }
        pthread_cond_broadcast(&s->cond);
    }
    unlock(s);
    return NULL;
}

/* ------------------------------------------------------------- rotation */

typedef struct {
    pcb_map *fresh;
    pcb_store *s; /* already holding the new keys */
    pcb_status *st;
    pcb_buf sname, svalue;
} rotate_ctx;

static int rotate_entry(void *arg, const char *name, size_t nl, const uint8_t *v, size_t vl)
{
    rotate_ctx *c = arg;
    size_t aad_len;
    if (!store_name_of(c->s, name, nl, &c->sname, c->st))
        return 1;
    const uint8_t *aad = value_aad(c->s, (const uint8_t *)c->sname.data, c->sname.len, &aad_len);
    if (aad == NULL || !seal_value(c->s, aad, aad_len, v, vl, &c->svalue, c->st)
        || !map_put(c->fresh, (const uint8_t *)c->sname.data, c->sname.len, 0,
                    (const uint8_t *)c->svalue.data, c->svalue.len))
        return c->st->code ? 1 : (oom(c->st), 1);
    return 0;
}

typedef struct {
    pcb_buf names, values; /* concatenated, with lengths */
} plain_dump;

static int dump_entry(void *arg, const char *name, size_t nl, const uint8_t *v, size_t vl)
{
    plain_dump *d = arg;
    put_u32_le(&d->names, nl);
    pcb_buf_append(&d->names, name, nl);
    put_u32_le(&d->values, vl);
    pcb_buf_append(&d->values, (const char *)v, vl);
    return d->names.failed || d->values.failed;
}

int pcb_store_rotate(pcb_store *s, const pcb_store_options *new_opt, pcb_status *st)
{
    if (!s->opt.encrypted)
        return pcb_fail(st, PCB_E_VALUE, "a plain store has no keys to rotate");
    if (!pcb_store_flush(s, st))
        return 0;
    plain_dump d;
    pcb_buf_init(&d.names);
    pcb_buf_init(&d.values);
    pthread_mutex_lock(&s->io_lock);
    lock(s);
    /* 1. Every entry decrypted under the old keys (the seed's migration). */
    int ok = all_locked(s, dump_entry, &d, st) || (st->code ? 0 : oom(st));
    struct {
        uint8_t siv_key[SIV_KEY_LEN], value_key[VALUE_KEY_LEN], siv_kid[4], value_kid[4];
        uint8_t master[MASTER_KEY_LEN];
    } saved_keys; /* the old keys, restored on failure */
    memcpy(saved_keys.siv_key, s->siv_key, SIV_KEY_LEN);
    memcpy(saved_keys.value_key, s->value_key, VALUE_KEY_LEN);
    memcpy(saved_keys.siv_kid, s->siv_kid, 4);
    memcpy(saved_keys.value_kid, s->value_kid, 4);
    memcpy(saved_keys.master, s->master, MASTER_KEY_LEN);
    pcb_store_options old_opt = s->opt;
    pcb_buf old_text[2] = {s->keyset_text[0], s->keyset_text[1]};
    pcb_buf_init(&s->keyset_text[0]);
    pcb_buf_init(&s->keyset_text[1]);
    int new_master = 0;
    if (ok && new_opt != NULL && (new_opt->master_key_file || new_opt->passphrase)) {
        /* 2. A new master key, from a new file or passphrase. */
        pcb_store_options o = s->opt;
        o.master_key_file = new_opt->master_key_file;
        o.passphrase = new_opt->passphrase;
        o.passphrase_len = new_opt->passphrase_len;
        o.scrypt_n = new_opt->scrypt_n;
        ok = own_options(&s->opt, &o) || oom(st);
        if (ok) {
            /* A new passphrase keeps the store's salt and costs (a salt need
             * only be unique per store), so no second file must change
             * atomically with the store. */
            int created;
            new_master = 1;
            ok = load_master(s, 1, &created, st);
        }
    }
    /* 3. New keysets; every entry encrypted again into a fresh map. */
    pcb_map fresh;
    rotate_ctx rc = {&fresh, s, st, {0}, {0}};
    pcb_buf_init(&rc.sname);
    pcb_buf_init(&rc.svalue);
    int have_fresh = ok && map_init(&fresh, s->map.live, s->map.secret);
    ok = ok && (have_fresh || oom(st)) && new_keys(s, st);
    for (size_t no = 0, vo = 0; ok && no < d.names.len;) {
        size_t nl = get_u32_le(d.names.data + no), vl = get_u32_le(d.values.data + vo);
        ok = rotate_entry(&rc, d.names.data + no + 4, nl, (const uint8_t *)d.values.data + vo + 4, vl) == 0;
        no += 4 + nl;
        vo += 4 + vl;
    }
    if (ok) {
        pcb_map old = s->map;
        s->map = fresh;
        have_fresh = 0;
        s->mem_gen++;
        unlock(s);
        uint64_t gen;
        ok = write_snapshot(s, &gen, st);
        lock(s);
        if (ok) {
            map_free(&old);
            s->disk_gen = gen;
        } else {
            fresh = s->map;
            have_fresh = 1;
            s->map = old;
        }
    }
    if (!ok) {
        /* Nothing changed on disk: put the old keys back. */
        memcpy(s->siv_key, saved_keys.siv_key, SIV_KEY_LEN);
        memcpy(s->value_key, saved_keys.value_key, VALUE_KEY_LEN);
        memcpy(s->siv_kid, saved_keys.siv_kid, 4);
        memcpy(s->value_kid, saved_keys.value_kid, 4);
        memcpy(s->master, saved_keys.master, MASTER_KEY_LEN);
        if (new_master) {
            free((void *)s->opt.master_key_file);
            if (s->opt.passphrase)
                wipe_free((void *)s->opt.passphrase, s->opt.passphrase_len + 1);
            s->opt = old_opt;
        }
        for (int k = 0; k < 2; k++) {
            pcb_buf_free(&s->keyset_text[k]);
            s->keyset_text[k] = old_text[k];
            pcb_buf_init(&old_text[k]);
        }
        pcb_status ignored = {0};
        aead_free(&s->master_ctx);
        aead_new(&s->master_ctx, s->master_cipher, s->master, &ignored);
        s->key_gen++;
        key_contexts(s, &ignored);
    } else if (new_master) {
        free((void *)old_opt.master_key_file);
        if (old_opt.passphrase)
            wipe_free((void *)old_opt.passphrase, old_opt.passphrase_len + 1);
    }
    if (have_fresh)
        map_free(&fresh);
    pcb_buf_free(&old_text[0]);
    pcb_buf_free(&old_text[1]);
    OPENSSL_cleanse(&saved_keys, sizeof saved_keys);
    unlock(s);
    pthread_mutex_unlock(&s->io_lock);
    pcb_buf_free(&rc.sname);
    pcb_buf_free(&rc.svalue);
    pcb_buf_free(&d.names);
    pcb_buf_free(&d.values);
    return ok;
}

/* ---------------------------------------------------------- accounting */

size_t pcb_store_heap_bytes(pcb_store *s)
{
    lock(s);
    /* Our own allocations by capacity; OpenSSL's contexts (key schedules,
     * GHASH tables) are estimated at ~1 KiB each (they are not ours to count). */
    const size_t evp_ctx = 1024;
    size_t n = sizeof *s + map_heap_bytes(&s->map) + map_heap_bytes(&s->plain_cache)
               + s->scratch.cap + s->keyset_text[0].cap + s->keyset_text[1].cap
               + (s->siv_ready ? 2 * evp_ctx : 0) + (s->value.enc ? 2 * evp_ctx : 0)
               + (s->master_ctx.enc ? 2 * evp_ctx : 0)
               + strlen(s->path) + strlen(s->dir) + strlen(s->store_name) + strlen(s->scrypt_path) + 4;
    unlock(s);
    return n;
}

uint64_t pcb_store_disk_bytes(pcb_store *s)
{
    struct stat sb;
    return stat(s->path, &sb) == 0 ? (uint64_t)sb.st_size : 0;
}

void pcb_store_stage_clocks(pcb_store *s, int on)
{
    lock(s);
    s->stages_on = on;
    unlock(s);
}

void pcb_store_take_stages(pcb_store *s, uint64_t ns[PCB_STAGE_COUNT])
{
    lock(s);
    memcpy(ns, s->stage_ns, sizeof s->stage_ns);
    memset(s->stage_ns, 0, sizeof s->stage_ns);
    unlock(s);
}
