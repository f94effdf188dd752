/*
 * store/bench.c — timed store workloads (see bench.h).
 *
 * Everything an operation needs (names, values, the access order) is made
 * before the clock starts. Reads go through the keys in a shuffled order, so
 * a large store is read the way an app reads it: without locality. Workloads
 * whose operations need untimed work between them (deleting the files before
 * a cold open, closing after a warm one, waiting for durability after an
 * apply) time themselves.
 */
#define _GNU_SOURCE
#include "store/bench.h"
#include "common/sys.h"
#include "store/fileio.h"
#include "store/lock.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <openssl/crypto.h>

#ifndef O_CLOEXEC /* older systems: the scratch copy is closed before anything could exec */
#define O_CLOEXEC 0
#endif
#include <openssl/rand.h>

#include "format/tinkpb.h"
#include "format/value.h"
#include "store/map.h"

const char *const pcb_workload_names[PCB_WL_COUNT + 1] = {
    "put", "get", "get_missing", "contains", "all", "commit", "apply", "open_cold", "open_warm",
    "rotate", "rotate_lazy", "migrate", "migrate_keys", NULL,
};

struct pcb_store_bench {
    const pcb_store_bench_params *p;
    const pcb_evp_cache *cache;
    char path[PATH_MAX], key_path[PATH_MAX];
    /* migrate: the plain file migrated from; migrate_keys: the new store,
     * built in its own directory under the same base name (the names'
     * associated data), with its new master key, then renamed over path. */
    char old_path[PATH_MAX], new_dir[PATH_MAX], new_path[PATH_MAX], new_key_path[PATH_MAX];
    pcb_file_bytes before; /* migrate*: the file every migration starts from */
    pcb_store_options opt;
    pcb_store *store;
    char *names;         /* n_keys names of key_len characters, back to back */
    char *missing;       /* n_missing names that are not in the store */
    size_t n_missing;
    uint32_t *order;     /* a shuffled access order over the names */
    char *in_order;      /* the names copied in that order: the store sees random
                          * keys, but reading them costs the benchmark no cache miss */
    size_t cursor, miss_cursor, put_counter;
    pcb_buf value;       /* the plaintext serialization every put stores */
    pcb_buf out;         /* reused by gets */
    uint64_t last_durable_ns; /* apply: of the last call */
    unsigned lazy_rotations;  /* rotate_lazy: since the keysets last held one key */
    pcb_store_bench_footprint footprint;
    pcb_edit *migrate_edit;   /* migrate*: the new store's editor during copy_all */
    char scratch[PATH_MAX + 8];
    pcb_status st;
};
typedef struct pcb_store_bench bench;

static int fail_oom(pcb_status *st)
{
    return pcb_fail(st, PCB_E_MEMORY, "out of memory preparing the benchmark");
}

/* Random printable names: [A-Za-z0-9], like the seed's random strings. */
static int random_text(const pcb_evp_cache *cache, char *out, size_t n, pcb_status *st)
{
    static const char alphabet[] =
        "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789";
    if (n && RAND_bytes_ex(cache->libctx, (unsigned char *)out, n, 0) != 1)
        return pcb_fail_openssl(st, "drawing random names");
    for (size_t i = 0; i < n; i++)
        out[i] = alphabet[(unsigned char)out[i] % 62];
    return 1;
}

/* The value every put stores, in ESP's plaintext serialization: random
 * text for strings (three distinct members for a set), random bits else. */
static int make_value(bench *b, pcb_status *st)
{
    const size_t vl = b->p->value_len;
    char *text = malloc(vl + 1);
    uint8_t bits[8];
    int ok = text != NULL ? random_text(b->cache, text, vl, st) : fail_oom(st);
    ok = ok && (RAND_bytes_ex(b->cache->libctx, bits, sizeof bits, 0) == 1
                || pcb_fail_openssl(st, "drawing values"));
    if (ok) {
        int32_t i32;
        int64_t i64;
        float f;
        memcpy(&i32, bits, 4);
        memcpy(&i64, bits, 8);
        memcpy(&f, bits, 4);
        pcb_value_begin(&b->value, b->p->value_type);
        switch (b->p->value_type) {
        case PCB_PREF_STRING: pcb_value_put_run(&b->value, text, vl); break;
        case PCB_PREF_STRING_SET:
            for (int m = 0; m < 3; m++) {
                if (vl)
                    text[0] = (char)('a' + m); /* distinct members */
                pcb_value_put_run(&b->value, text, vl);
            }
            break;
        case PCB_PREF_INT: pcb_value_put_int(&b->value, i32); break;
        case PCB_PREF_LONG: pcb_value_put_long(&b->value, i64); break;
        case PCB_PREF_FLOAT: pcb_value_put_float(&b->value, f); break;
        default: pcb_value_put_bool(&b->value, 1); break;
        }
        ok = !b->value.failed || fail_oom(st);
    }
    free(text);
    return ok;
}

static const char *name_at(const bench *b, size_t i)
{
    return b->names + i * b->p->key_len;
}

/* The next name in the shuffled order. */
static const char *next_name(bench *b)
{
    const char *name = b->in_order + b->cursor * b->p->key_len;
    if (++b->cursor == b->p->n_keys)
        b->cursor = 0;
    return name;
}

static int open_store(bench *b, int *created, pcb_status *st)
{
    b->store = pcb_store_open(b->path, &b->opt, b->cache, created, st);
    return b->store != NULL;
}

static int close_store(bench *b, pcb_status *st)
{
    int ok = 1;
    if (b->store)
        ok = pcb_store_close(b->store, st);
    b->store = NULL;
    return ok;
}

/* Puts the n_keys entries into store, committed. */
static int fill(bench *b, pcb_store *store, pcb_status *st)
{
    pcb_edit *e = pcb_edit_new(store, st);
    if (e == NULL)
        return 0;
    int ok = 1;
    for (size_t i = 0; ok && i < b->p->n_keys; i++) {
        ok = pcb_edit_put(e, name_at(b, i), b->p->key_len, (const uint8_t *)b->value.data, b->value.len, st);
        /* Commit in slices so the editor's buffer stays small. */
        if (ok && (i + 1) % 65536 == 0)
            ok = pcb_edit_commit(e, 0, st);
        if (ok && (i & 4095) == 4095 && b->p->interrupted != NULL
            && b->p->interrupted(b->p->interrupt_arg)) {
            memset(st, 0, sizeof *st); /* the embedder's error stands */
            ok = 0;
        }
    }
    ok = ok && pcb_edit_commit(e, 1, st);
    pcb_edit_free(e);
    return ok;
}

/* The store with its n_keys entries, committed. */
static int populate(bench *b, pcb_status *st)
{
    return open_store(b, NULL, st) && fill(b, b->store, st);
}

static void unlink_store_files(bench *b)
{
    char side[PATH_MAX + 8];
    pcb_sys_unlink(b->path);
    pcb_sys_unlink(b->key_path);
    snprintf(side, sizeof side, "%s.scrypt", b->path);
    pcb_sys_unlink(side);
    /* The bench's own store, no other writer: its lock file goes too. */
    snprintf(side, sizeof side, "%s" PCB_LOCK_SUFFIX, b->path);
    pcb_sys_unlink(side);
}

/* Puts of existing names with a fresh value each time (as an app updating). */
static int do_puts(bench *b, pcb_edit *e, size_t n)
{
    for (size_t i = 0; i < n; i++)
        if (!pcb_edit_put(e, next_name(b), b->p->key_len, (const uint8_t *)b->value.data, b->value.len, &b->st))
            return 0;
    return 1;
}

/* One function per workload, each running n operations (see pcb_run_fn). */

static int run_put(bench *b, uint64_t n, uint64_t *self_ns)
{
    (void)self_ns;
    pcb_edit *e = pcb_edit_new(b->store, &b->st);
    if (e == NULL)
        return -1;
    int ok = do_puts(b, e, n);
    pcb_edit_free(e); /* discarded: put alone is timed, not commit */
    return ok ? 0 : -1;
}

static int run_get(bench *b, uint64_t n, uint64_t *self_ns)
{
    int found;
    (void)self_ns;
    for (uint64_t i = 0; i < n; i++) {
        if (!pcb_store_get(b->store, next_name(b), b->p->key_len, &b->out, &found, &b->st))
            return -1;
        if (!found)
            return pcb_fail(&b->st, PCB_E_VALUE, "benchmark bug: an entry went missing") - 1;
    }
    return 0;
}

static int run_get_missing(bench *b, uint64_t n, uint64_t *self_ns)
{
    int found;
    (void)self_ns;
    for (uint64_t i = 0; i < n; i++) {
        const char *name = b->missing + b->miss_cursor * b->p->key_len;
        if (++b->miss_cursor == b->n_missing)
            b->miss_cursor = 0;
        if (!pcb_store_get(b->store, name, b->p->key_len, &b->out, &found, &b->st))
            return -1;
        if (found)
            return pcb_fail(&b->st, PCB_E_VALUE, "benchmark bug: a missing name was found") - 1;
    }
    return 0;
}

static int run_contains(bench *b, uint64_t n, uint64_t *self_ns)
{
    int found;
    (void)self_ns;
    for (uint64_t i = 0; i < n; i++)
        if (!pcb_store_contains(b->store, next_name(b), b->p->key_len, &found, &b->st))
            return -1;
    return 0;
}

static int run_all(bench *b, uint64_t n, uint64_t *self_ns)
{
    (void)self_ns;
    for (uint64_t i = 0; i < n; i++)
        if (!pcb_store_all(b->store, NULL, NULL, &b->st))
            return -1;
    return 0;
}

static int run_commit(bench *b, uint64_t n, uint64_t *self_ns)
{
    (void)self_ns;
    for (uint64_t i = 0; i < n; i++) {
        pcb_edit *e = pcb_edit_new(b->store, &b->st);
        int ok = e != NULL && do_puts(b, e, b->p->batch) && pcb_edit_commit(e, 1, &b->st);
        pcb_edit_free(e);
        if (!ok)
            return -1;
    }
    return 0;
}

/* Blocked: the puts and apply() the caller waits for (the timed part).
 * Durable: until the background write has landed (flush). */
static int run_apply(bench *b, uint64_t n, uint64_t *self_ns)
{
    uint64_t blocked = 0, durable = 0;
    for (uint64_t i = 0; i < n; i++) {
        uint64_t t0 = pcb_clock_ns();
        pcb_edit *e = pcb_edit_new(b->store, &b->st);
        int ok = e != NULL && do_puts(b, e, b->p->batch) && pcb_edit_commit(e, 0, &b->st);
        uint64_t t1 = pcb_clock_ns();
        pcb_edit_free(e);
        ok = ok && pcb_store_flush(b->store, &b->st);
        uint64_t t2 = pcb_clock_ns();
        if (!ok)
            return -1;
        blocked += t1 - t0;
        durable += t2 - t0;
    }
    *self_ns = blocked;
    b->last_durable_ns += durable; /* summed over the slices of one sample */
    return 0;
}

/* Open timed alone: a cold open first deletes the files (a first launch),
 * a warm one reopens what is there. */
static int run_open(bench *b, uint64_t n, uint64_t *self_ns, int cold)
{
    uint64_t total = 0;
    for (uint64_t i = 0; i < n; i++) {
        int created = 0;
        if (!close_store(b, &b->st))
            return -1;
        if (cold)
            unlink_store_files(b);
        uint64_t t0 = pcb_clock_ns();
        int ok = open_store(b, cold ? &created : NULL, &b->st);
        total += pcb_clock_ns() - t0;
        if (!ok)
            return -1;
    }
    *self_ns = total;
    return 0;
}

static int run_open_cold(bench *b, uint64_t n, uint64_t *self_ns) { return run_open(b, n, self_ns, 1); }
static int run_open_warm(bench *b, uint64_t n, uint64_t *self_ns) { return run_open(b, n, self_ns, 0); }

static int run_rotate(bench *b, uint64_t n, uint64_t *self_ns)
{
    (void)self_ns;
    for (uint64_t i = 0; i < n; i++)
        if (!pcb_store_rotate(b->store, NULL, &b->st))
            return -1;
    return 0;
}

/* Lazy rotations timed alone; before the value keyset would hold more keys
 * than a keyset may, a full rotation (untimed) starts it again. */
static int run_rotate_lazy(bench *b, uint64_t n, uint64_t *self_ns)
{
    uint64_t total = 0;
    for (uint64_t i = 0; i < n; i++) {
        if (b->lazy_rotations == PCB_TINK_MAX_KEYS - 1) {
            if (!pcb_store_rotate(b->store, NULL, &b->st))
                return -1;
            b->lazy_rotations = 0;
        }
        uint64_t t0 = pcb_clock_ns();
        int ok = pcb_store_rotate_lazy(b->store, &b->st);
        total += pcb_clock_ns() - t0;
        if (!ok)
            return -1;
        b->lazy_rotations++;
    }
    *self_ns = total;
    return 0;
}

/* Writes the file a migration starts from (untimed): a fresh copy of the
 * bytes captured after populating, the previous migration's result gone. */
static int restore_before(bench *b, const char *path)
{
    pcb_sys_unlink(path);
    int fd = pcb_sys_open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
    if (fd < 0)
        return pcb_fail_os(&b->st, "writing the file a migration starts from");
    size_t done = 0;
    while (done < b->before.len) {
        ssize_t w = pcb_sys_write(fd, b->before.data + done, b->before.len - done);
        if (w <= 0) {
            int e = w < 0 ? errno : EIO;
            pcb_sys_close(fd);
            errno = e;
            return pcb_fail_os(&b->st, "writing the file a migration starts from");
        }
        done += (size_t)w;
    }
    return pcb_sys_close(fd) == 0 || pcb_fail_os(&b->st, "closing the migration's file");
}

/* pcb_store_all's callback: every entry put into the new store's editor. */
static int put_into(void *arg, const char *name, size_t name_len, const uint8_t *value,
                    size_t value_len)
{
    bench *b = arg;
    pcb_edit *e = b->migrate_edit;
    return pcb_edit_put(e, name, name_len, value, value_len, &b->st) ? 0 : 1;
}

/* Reads every entry of `from` and writes them all into `to` with one durable
 * commit: the article's migrateIfNeeded (and the alpha03 keyset move). */
static int copy_all(bench *b, pcb_store *from, pcb_store *to)
{
    b->migrate_edit = pcb_edit_new(to, &b->st);
    if (b->migrate_edit == NULL)
        return 0;
    int ok = pcb_store_all(from, put_into, b, &b->st) && pcb_edit_commit(b->migrate_edit, 1, &b->st);
    pcb_edit_free(b->migrate_edit);
    b->migrate_edit = NULL;
    return ok;
}

static void unlink_with_lock(const char *path)
{
    char side[PATH_MAX + 8];
    pcb_sys_unlink(path);
    snprintf(side, sizeof side, "%s" PCB_LOCK_SUFFIX, path);
    pcb_sys_unlink(side);
}

/* migrate: first launch after the update. Untimed: a fresh copy of the
 * plain SharedPreferences file, no encrypted store yet. Timed: open the
 * plain file, create the encrypted store (its keys), read all + write all
 * with one durable commit, close the plain file, remove it. */
static int run_migrate(bench *b, uint64_t n, uint64_t *self_ns)
{
    uint64_t total = 0;
    pcb_store_options plain = b->opt;
    plain.encrypted = 0;
    plain.master_key_file = NULL;
    plain.passphrase = NULL;
    plain.passphrase_len = 0;
    for (uint64_t i = 0; i < n; i++) {
        if (!close_store(b, &b->st))
            return -1;
        unlink_store_files(b);
        if (!restore_before(b, b->old_path))
            return -1;
        uint64_t t0 = pcb_clock_ns();
        pcb_store *old = pcb_store_open(b->old_path, &plain, b->cache, NULL, &b->st);
        int ok = old != NULL && open_store(b, NULL, &b->st) && copy_all(b, old, b->store);
        if (old != NULL) {
            pcb_status ignored = {0};
            ok = pcb_store_close(old, ok ? &b->st : &ignored) && ok;
        }
        ok = ok && (pcb_sys_unlink(b->old_path) == 0
                    || pcb_fail_os(&b->st, "removing the migrated plain file"));
        total += pcb_clock_ns() - t0;
        unlink_with_lock(b->old_path);
        if (!ok)
            return -1;
        if (pcb_store_count(b->store) != b->p->n_keys) /* untimed: the work was done */
            return pcb_fail(&b->st, PCB_E_VALUE, "benchmark bug: the migration lost entries") - 1;
    }
    *self_ns = total;
    return 0;
}

/* migrate_keys: an encrypted store moved to new keysets under a new master
 * key in a new file (the 1.1.0-alpha03 case). Untimed: a fresh copy of the
 * old store's file. Timed: open it with the old key, create the new store
 * (new master key, new keysets) beside it, read all + write all with one
 * durable commit, close both, rename the new file over the old one. */
static int run_migrate_keys(bench *b, uint64_t n, uint64_t *self_ns)
{
    uint64_t total = 0;
    pcb_store_options fresh = b->opt;
    if (fresh.passphrase == NULL)
        fresh.master_key_file = b->new_key_path;
    for (uint64_t i = 0; i < n; i++) {
        if (!close_store(b, &b->st))
            return -1;
        unlink_with_lock(b->new_path);
        pcb_sys_unlink(b->new_key_path);
        snprintf(b->scratch, sizeof b->scratch, "%s.scrypt", b->new_path);
        pcb_sys_unlink(b->scratch);
        if (!restore_before(b, b->path))
            return -1;
        uint64_t t0 = pcb_clock_ns();
        pcb_store *to = NULL;
        int ok = open_store(b, NULL, &b->st)
                 && (to = pcb_store_open(b->new_path, &fresh, b->cache, NULL, &b->st)) != NULL
                 && copy_all(b, b->store, to);
        size_t moved = ok ? pcb_store_count(to) : 0; /* a counter read: checked after the clock */
        pcb_status ignored = {0};
        ok = close_store(b, ok ? &b->st : &ignored) && ok;
        if (to != NULL)
            ok = pcb_store_close(to, ok ? &b->st : &ignored) && ok;
        ok = ok && (pcb_sys_rename(b->new_path, b->path) == 0
                    || pcb_fail_os(&b->st, "renaming the re-keyed store over the old one"));
        ok = ok && (pcb_fsync_dir(b->p->dir) || pcb_fail_os(&b->st, "syncing the directory"));
        total += pcb_clock_ns() - t0;
        if (!ok)
            return -1;
        if (moved != b->p->n_keys)
            return pcb_fail(&b->st, PCB_E_VALUE, "benchmark bug: the re-keying lost entries") - 1;
    }
    *self_ns = total;
    return 0;
}

typedef int (*workload_fn)(bench *b, uint64_t n, uint64_t *self_ns);

static const workload_fn workloads[PCB_WL_COUNT] = {
    [PCB_WL_PUT] = run_put, [PCB_WL_GET] = run_get, [PCB_WL_GET_MISSING] = run_get_missing,
    [PCB_WL_CONTAINS] = run_contains, [PCB_WL_ALL] = run_all, [PCB_WL_COMMIT] = run_commit,
    [PCB_WL_APPLY] = run_apply, [PCB_WL_OPEN_COLD] = run_open_cold,
    [PCB_WL_OPEN_WARM] = run_open_warm, [PCB_WL_ROTATE] = run_rotate,
    [PCB_WL_ROTATE_LAZY] = run_rotate_lazy, [PCB_WL_MIGRATE] = run_migrate,
    [PCB_WL_MIGRATE_KEYS] = run_migrate_keys,
};

int pcb_store_bench_run(void *arg, uint64_t n, uint64_t *self_ns)
{
    bench *b = arg;
    if ((unsigned)b->p->workload >= PCB_WL_COUNT)
        return pcb_fail(&b->st, PCB_E_VALUE, "unknown workload") - 1;
    return workloads[b->p->workload](b, n, self_ns);
}

/* The store's paths and the master key option the benchmark uses. */
static int set_paths(bench *b, pcb_status *st)
{
    const pcb_store_bench_params *p = b->p;
    if (snprintf(b->path, sizeof b->path, "%s/bench_prefs.xml", p->dir) >= (int)sizeof b->path
        || snprintf(b->key_path, sizeof b->key_path, "%s/bench_master.key", p->dir)
               >= (int)sizeof b->key_path)
        return pcb_fail(st, PCB_E_VALUE, "directory path too long");
    if (snprintf(b->old_path, sizeof b->old_path, "%s/bench_plain_prefs.xml", p->dir)
            >= (int)sizeof b->old_path
        || snprintf(b->new_dir, sizeof b->new_dir, "%s/new", p->dir) >= (int)sizeof b->new_dir
        || snprintf(b->new_path, sizeof b->new_path, "%s/bench_prefs.xml", b->new_dir)
               >= (int)sizeof b->new_path
        || snprintf(b->new_key_path, sizeof b->new_key_path, "%s/bench_new_master.key", p->dir)
               >= (int)sizeof b->new_key_path)
        return pcb_fail(st, PCB_E_VALUE, "directory path too long");
    if (p->opt.encrypted) {
        if (p->use_passphrase) {
            b->opt.passphrase = "correct horse battery staple";
            b->opt.passphrase_len = strlen(b->opt.passphrase);
            b->opt.master_key_file = NULL;
        } else {
            b->opt.master_key_file = b->key_path;
            b->opt.passphrase = NULL;
        }
    }
    return 1;
}

/* Missing names: as many as the store's, up to 65,536 (n_keys >= 1). */
static size_t n_missing_of(size_t n_keys)
{
    return n_keys < 65536 ? (n_keys ? n_keys : 1) : 65536;
}

size_t pcb_store_bench_min_key_len(size_t n_keys)
{
    /* Names are drawn from 62^key_len; at least twice the names needed, so
     * that drawing distinct ones takes two tries each at most on average. */
    const double need = 2.0 * (double)(n_keys + n_missing_of(n_keys));
    size_t kl = 1;
    for (double room = 62; room < need; room *= 62)
        kl++;
    return kl;
}

/* Redraws names until the n_keys names and the missing ones are all
 * distinct: n_keys puts make n_keys entries and get_missing always misses.
 * Skipped when a repeat among them is less likely than 2^-40. */
static int make_distinct(bench *b, pcb_status *st)
{
    const size_t kl = b->p->key_len, n = b->p->n_keys, total = n + b->n_missing;
    double log2_room = (double)kl * 5.954196310386876; /* log2(62) */
    double log2_pairs = 2.0 * (double)(64 - __builtin_clzll((unsigned long long)total));
    if (log2_room >= log2_pairs + 40)
        return 1;
    size_t cap = 16;
    while (cap < total * 2)
        cap <<= 1;
    uint32_t *slots = calloc(cap, sizeof *slots); /* 0 empty, else the name's index + 1 */
    if (slots == NULL)
        return fail_oom(st);
    for (size_t i = 0; i < total; i++) {
        char *name = i < n ? b->names + i * kl : b->missing + (i - n) * kl;
        for (;;) {
            size_t j = (size_t)pcb_map_hash(0, (const uint8_t *)name, kl) & (cap - 1);
            int dup = 0;
            for (; slots[j] != 0 && !dup; j = (j + 1) & (cap - 1)) {
                size_t o = slots[j] - 1;
                dup = memcmp(o < n ? b->names + o * kl : b->missing + (o - n) * kl, name, kl) == 0;
            }
            if (!dup) {
                slots[j] = (uint32_t)(i + 1);
                break;
            }
            if (!random_text(b->cache, name, kl, st)) {
                free(slots);
                return 0;
            }
        }
    }
    free(slots);
    return 1;
}

/* Names, missing names, the value, and a shuffled access order (Fisher-Yates
 * with OpenSSL's generator), all made before any clock runs. */
static int prepare_inputs(bench *b, pcb_status *st)
{
    const size_t n_keys = b->p->n_keys, kl = b->p->key_len;
    b->n_missing = n_missing_of(n_keys);
    if (kl < pcb_store_bench_min_key_len(n_keys))
        return pcb_fail(st, PCB_E_VALUE, "key_len=%zu makes too few distinct names for n_keys=%zu "
                        "(and the names get_missing looks up): key_len >= %zu",
                        kl, n_keys, pcb_store_bench_min_key_len(n_keys));
    b->names = malloc(n_keys * kl + 1);
    b->missing = malloc(b->n_missing * kl + 1);
    b->order = malloc((n_keys ? n_keys : 1) * sizeof *b->order);
    b->in_order = malloc(n_keys * kl + 1);
    if (b->names == NULL || b->missing == NULL || b->order == NULL || b->in_order == NULL)
        return fail_oom(st);
    if (!random_text(b->cache, b->names, n_keys * kl, st)
        || !random_text(b->cache, b->missing, b->n_missing * kl, st) || !make_distinct(b, st)
        || !make_value(b, st))
        return 0;
    for (size_t i = 0; i < n_keys; i++)
        b->order[i] = (uint32_t)i;
    for (size_t i = n_keys; i > 1; i--) {
        uint64_t r;
        if (RAND_bytes_ex(b->cache->libctx, (unsigned char *)&r, sizeof r, 0) != 1)
            return pcb_fail_openssl(st, "shuffling");
        size_t j = (size_t)(r % i);
        uint32_t t = b->order[i - 1];
        b->order[i - 1] = b->order[j];
        b->order[j] = t;
    }
    for (size_t i = 0; i < n_keys; i++)
        memcpy(b->in_order + i * kl, name_at(b, b->order[i]), kl);
    return 1;
}

/* Plaintext bytes one operation of the workload handles. */
static size_t payload_of(const bench *b)
{
    const size_t per_value = b->value.len - 4;
    switch (b->p->workload) {
    case PCB_WL_ALL: case PCB_WL_OPEN_WARM: case PCB_WL_ROTATE: case PCB_WL_MIGRATE:
    case PCB_WL_MIGRATE_KEYS:
        return per_value * b->p->n_keys;
    case PCB_WL_COMMIT: case PCB_WL_APPLY: return per_value * b->p->batch;
    case PCB_WL_OPEN_COLD: case PCB_WL_ROTATE_LAZY: return 0; /* no plaintext touched */
    default: return per_value;
    }
}

int pcb_store_bench_stages_run(bench *b, uint64_t n, pcb_store_bench_stages *out,
                               pcb_status *st)
{
    uint64_t self = UINT64_MAX, ns[PCB_STAGE_COUNT];
    if (b->p->workload != PCB_WL_PUT && b->p->workload != PCB_WL_GET)
        return pcb_fail(st, PCB_E_VALUE, "the stage breakdown is measured for put and get only");
    if (n == 0)
        n = 1;
    pcb_store_take_stages(b->store, ns); /* drop what earlier calls left */
    pcb_store_stage_clocks(b->store, 1);
    uint64_t t0 = pcb_clock_ns();
    int rc = pcb_store_bench_run(b, n, &self);
    uint64_t dt = pcb_clock_ns() - t0;
    pcb_store_stage_clocks(b->store, 0);
    pcb_store_take_stages(b->store, out->stage_ns);
    if (rc != 0) {
        *st = b->st;
        return 0;
    }
    for (int i = 0; i < PCB_STAGE_COUNT; i++)
        out->stage_ns[i] /= n;
    out->stage_total_ns = dt / n;
    return pcb_store_stage_floor(b->store, b->p->workload == PCB_WL_PUT, b->p->key_len,
                                 b->value.len, n, &out->siv_floor_ns, &out->aead_floor_ns, st);
}

const pcb_status *pcb_store_bench_error(const bench *b) { return &b->st; }
uint64_t pcb_store_bench_last_durable_ns(const bench *b) { return b->last_durable_ns; }
void pcb_store_bench_begin(void *b) { ((bench *)b)->last_durable_ns = 0; }
void pcb_store_bench_get_footprint(const bench *b, pcb_store_bench_footprint *f) { *f = b->footprint; }

/* What every migration starts from, captured once: migrate, the plain
 * SharedPreferences file of the same entries (the encrypted store removed:
 * the footprint is the one it will have); migrate_keys, the encrypted
 * store's file under its master key, and the empty directory of the new one. */
static int prepare_migration(bench *b, pcb_status *st)
{
    int missing = 0, ok = close_store(b, st);
    const char *from = b->path;
    if (ok && b->p->workload == PCB_WL_MIGRATE) {
        pcb_store_options plain = b->opt;
        plain.encrypted = 0;
        plain.master_key_file = NULL;
        plain.passphrase = NULL;
        plain.passphrase_len = 0;
        unlink_store_files(b);
        pcb_store *old = pcb_store_open(b->old_path, &plain, b->cache, NULL, st);
        ok = old != NULL && fill(b, old, st);
        if (old != NULL) {
            pcb_status ignored = {0};
            ok = pcb_store_close(old, ok ? st : &ignored) && ok;
        }
        from = b->old_path;
    } else if (ok && mkdir(b->new_dir, 0700) != 0 && errno != EEXIST) {
        ok = pcb_fail_os(st, "creating the migration's directory");
    }
    ok = ok && pcb_read_whole_file(from, SIZE_MAX, "the store file", &b->before, &missing, st);
    if (ok && missing)
        ok = pcb_fail(st, PCB_E_VALUE, "benchmark bug: the file to migrate from is missing");
    if (b->p->workload == PCB_WL_MIGRATE)
        unlink_with_lock(b->old_path);
    return ok;
}

/* The populated store and its footprint; open_cold then starts empty. */
static int populate_instance(bench *b, pcb_status *st)
{
    if (!populate(b, st))
        return 0;
    b->footprint.entries = pcb_store_count(b->store);
    b->footprint.heap_bytes = pcb_store_heap_bytes(b->store);
    b->footprint.disk_bytes = pcb_store_disk_bytes(b->store);
    b->footprint.payload = payload_of(b);
    pcb_store_crypto_libraries(b->store, &b->footprint.names_crypto, &b->footprint.values_crypto);
    if (b->p->workload == PCB_WL_OPEN_COLD) {
        int ok = close_store(b, st);
        unlink_store_files(b);
        return ok && open_store(b, NULL, st);
    }
    if (b->p->workload == PCB_WL_MIGRATE || b->p->workload == PCB_WL_MIGRATE_KEYS)
        return prepare_migration(b, st);
    return 1;
}

pcb_store_bench *pcb_store_bench_open(const pcb_store_bench_params *p, const pcb_evp_cache *cache,
                                      pcb_status *st)
{
    bench *b = calloc(1, sizeof *b);
    if (b == NULL) {
        fail_oom(st);
        return NULL;
    }
    b->p = p;
    b->cache = cache;
    b->opt = p->opt;
    pcb_buf_init(&b->out);
    pcb_buf_init(&b->value);
    if (!set_paths(b, st)) {
        free(b);
        return NULL;
    }
    unlink_store_files(b);
    if (!prepare_inputs(b, st) || !populate_instance(b, st)) {
        pcb_status ignored = {0};
        pcb_store_bench_close(b, &ignored);
        return NULL;
    }
    return b;
}

int pcb_store_bench_close(bench *b, pcb_status *st)
{
    if (b == NULL)
        return 1;
    int ok = close_store(b, st);
    unlink_store_files(b);
    if (b->p->workload == PCB_WL_MIGRATE || b->p->workload == PCB_WL_MIGRATE_KEYS) {
        unlink_with_lock(b->old_path);
        unlink_with_lock(b->new_path);
        pcb_sys_unlink(b->new_key_path);
        rmdir(b->new_dir);
    }
    if (b->before.data != NULL)
        pcb_file_bytes_free(&b->before, 1); /* a store file: wiped like the store's own reads */
    free(b->names);
    free(b->missing);
    free(b->order);
    free(b->in_order);
    pcb_buf_free(&b->value);
    pcb_buf_free(&b->out);
    free(b);
    return ok;
}
