/*
 * store/store.c — opening and closing a store, flushing, reads and
 * accounting (see store.h; the layer's map is in internal.h).
 */
#define _GNU_SOURCE
#include "store/store.h"
#include "common/sys.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include <openssl/crypto.h>

#include "common/mem.h"
#include "store/codec.h"
#include "store/codec_backend.h"
#include "store/entries.h"
#include "store/fileio.h"
#include "store/internal.h"
#include "store/keys.h"
#include "store/txn.h"
#include "store/persist.h"

int pcb_store_is_reserved(const char *name, size_t len)
{
    return pcb_reserved_name(name, len);
}

/* ------------------------------------------------------- fork */

/* Every open store, so that a forked child can make them its own. */
static pthread_mutex_t registry_lock = PTHREAD_MUTEX_INITIALIZER;
static pcb_store *registry;
static pcb_edit *edit_registry;
static pthread_once_t registry_once = PTHREAD_ONCE_INIT;

static void fork_prepare(void) { pthread_mutex_lock(&registry_lock); }
static void fork_parent(void) { pthread_mutex_unlock(&registry_lock); }

/* In the child only the forking thread exists: no writer, and no other
 * thread will ever release a lock it held at the fork. Each store gets
 * fresh locks and no writer; its pending changes are written by the
 * child's own flush/close, or by a writer its next apply() starts. */
static void fork_child(void)
{
    pthread_mutex_init(&registry_lock, NULL);
    for (pcb_store *s = registry; s != NULL; s = s->fork_next) {
        pthread_mutex_init(&s->lock, NULL);
        pthread_mutex_init(&s->io_lock, NULL);
        pthread_cond_init(&s->cond, NULL);
        s->writer_started = 0;
        s->writer_stop = 0;
        pcb_txn_after_fork_child(s);
        s->lock_owned = s->io_owned = 0; /* the debug record of who held them (internal.h) */
        pcb_share_after_fork_child(s->share); /* a parent's file lock stays the parent's */
    }
    for (pcb_edit *e = edit_registry; e != NULL; e = e->fork_next)
        pthread_mutex_init(&e->lock, NULL);
}

static void registry_init(void) { pthread_atfork(fork_prepare, fork_parent, fork_child); }

static void registry_add(pcb_store *s)
{
    pcb_lock_mutex(&registry_lock);
    s->fork_prev = NULL;
    s->fork_next = registry;
    if (registry != NULL)
        registry->fork_prev = s;
    registry = s;
    pthread_mutex_unlock(&registry_lock);
}

static void registry_remove(pcb_store *s)
{
    pcb_lock_mutex(&registry_lock);
    if (s->fork_prev != NULL)
        s->fork_prev->fork_next = s->fork_next;
    else if (registry == s)
        registry = s->fork_next;
    if (s->fork_next != NULL)
        s->fork_next->fork_prev = s->fork_prev;
    s->fork_prev = s->fork_next = NULL;
    pthread_mutex_unlock(&registry_lock);
}

void pcb_store_register_edit(pcb_edit *e)
{
    pthread_once(&registry_once, registry_init);
    pcb_lock_mutex(&registry_lock);
    e->fork_prev = NULL;
    e->fork_next = edit_registry;
    if (edit_registry != NULL)
        edit_registry->fork_prev = e;
    edit_registry = e;
    pthread_mutex_unlock(&registry_lock);
}

void pcb_store_unregister_edit(pcb_edit *e)
{
    pcb_lock_mutex(&registry_lock);
    if (e->fork_prev != NULL)
        e->fork_prev->fork_next = e->fork_next;
    else if (edit_registry == e)
        edit_registry = e->fork_next;
    if (e->fork_next != NULL)
        e->fork_next->fork_prev = e->fork_prev;
    e->fork_prev = e->fork_next = NULL;
    pthread_mutex_unlock(&registry_lock);
}

/* ------------------------------------------------------------ open/close */

static void store_free(pcb_store *s)
{
    if (s == NULL)
        return;
    if (s->registered)
        registry_remove(s);
    pcb_codec_bk_free(s);
    pcb_keys_state_free(s->keys); /* wiped: keys.c's */
    pcb_map_free(&s->map);
    pcb_map_free(&s->plain_cache);
    pcb_buf_free(&s->scratch);
    pcb_buf_free(&s->sname);
    pcb_share_free(s->share);
    pcb_txn_gens_free(s->gens);
    free(s->path);
    free(s->dir);
    free(s->store_name);
    free(s->scrypt_path);
    if (s->opt.passphrase)
        pcb_wipe_free((void *)s->opt.passphrase, s->opt.passphrase_len + 1);
    free((void *)s->opt.master_key_file);
    if (s->sync_ready) {
        pthread_mutex_destroy(&s->lock);
        pthread_mutex_destroy(&s->io_lock);
        pthread_cond_destroy(&s->cond);
    }
    OPENSSL_cleanse(s, sizeof *s);
    free(s);
}

/* Copies the options' strings so the store owns them; all or nothing:
 * on failure *dst is untouched. */
/* The store's locks and condition; 1, or 0 with st set (nothing to undo). */
static int sync_init(pcb_store *s, pcb_status *st)
{
    int rc = pthread_mutex_init(&s->lock, NULL);
    if (rc == 0 && (rc = pthread_mutex_init(&s->io_lock, NULL)) != 0)
        pthread_mutex_destroy(&s->lock);
    if (rc == 0 && (rc = pthread_cond_init(&s->cond, NULL)) != 0) {
        pthread_mutex_destroy(&s->lock);
        pthread_mutex_destroy(&s->io_lock);
    }
    if (rc != 0) {
        errno = rc;
        return pcb_fail_os(st, "cannot create the store's locks");
    }
    s->sync_ready = 1;
    return 1;
}

/* A store struct for path with its own copies of the options and names,
 * before any file is touched; NULL with st set. */
static pcb_store *store_new(const char *path, const pcb_store_options *opt,
                            const pcb_evp_cache *cache, pcb_status *st)
{
    pcb_store *s = calloc(1, sizeof *s);
    if (s == NULL) {
        pcb_oom(st);
        return NULL;
    }
    pcb_buf_init(&s->scratch);
    pcb_buf_init(&s->sname);
    s->codec = pcb_codec_choose(opt);
    s->cache = cache;
    s->libctx = cache->libctx;
    if ((s->keys = pcb_keys_state_new(opt, cache)) == NULL) {
        pcb_oom(st);
        store_free(s);
        return NULL;
    }
    s->ek = pcb_keys_entry(s->keys); /* the get and put paths read the keys through it */
    /* Paths and names fixed here (issue 17): the file the path reaches
     * (final symbolic links followed), in its canonical directory, as an
     * absolute name; so a later chdir() or a swapped link changes nothing,
     * and the store name (the names' associated data) is the file's own
     * base name, whatever link it was reached through. */
    char *fixed = pcb_fixed_path(path, "store", st);
    if (fixed == NULL) {
        store_free(s);
        return NULL;
    }
    s->path = fixed;
    const char *base = strrchr(fixed, '/') + 1; /* absolute: it has a slash */
    size_t bl = strlen(base), pl = strlen(fixed);
    if (bl > 4 && strcmp(base + bl - 4, ".xml") == 0)
        bl -= 4;
    s->dir = pcb_dir_of(fixed);
    s->store_name = strndup(base, bl);
    s->store_name_len = bl;
    s->scrypt_path = malloc(pl + 8);
    if (!pcb_store_own_options(&s->opt, opt) || s->dir == NULL
        || s->store_name == NULL || s->scrypt_path == NULL
        || !pcb_map_init(&s->map, 16, s->codec.plaintext_in_map)
        || (opt->cache && !pcb_map_init(&s->plain_cache, 16, 1))) {
        store_free(s);
        pcb_oom(st);
        return NULL;
    }
    memcpy(s->scrypt_path, fixed, pl);
    memcpy(s->scrypt_path + pl, ".scrypt", 8);
    if (!pcb_codec_bk_check(&s->opt, cache, st)) {
        store_free(s);
        return NULL;
    }
    s->codec.bk_values = pcb_codec_bk_values(s);
    s->codec.bk_names = pcb_codec_bk_names(s);
    if (bl == 0) {
        pcb_fail(st, PCB_E_VALUE, "store path %s has no file name", path);
        store_free(s);
        return NULL;
    }
    if (!sync_init(s, st)) {
        store_free(s);
        return NULL;
    }
    if ((s->share = pcb_share_new()) == NULL || (s->gens = pcb_txn_gens_new()) == NULL) {
        pcb_oom(st);
        store_free(s);
        return NULL;
    }
    pthread_once(&registry_once, registry_init);
    registry_add(s);
    s->registered = 1;
    return s;
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
    pcb_store *s = store_new(path, opt, cache, st);
    if (s == NULL)
        return NULL;
    /* The directory was checked as the path was fixed (store_new): failing
     * here, not at the first commit, and before any key file is made. */
    if (!pcb_check_name_fits(s->path, "store file", st)) { /* else it would never commit */
        store_free(s);
        return NULL;
    }
    /* A new store's keysets are written at once, through the one write
     * path (txn.c), under the file lock the load kept. */
    if (!pcb_persist_load(s, &created_keys, st) || (created_keys && !pcb_txn_create(s, st))) {
        store_free(s);
        return NULL;
    }
    if (created_key)
        *created_key = created_keys;
    return s;
}

/* Waits for the writer while it can still make progress on the changes
 * applied before this call (later ones are not waited for: a busy apply()
 * loop cannot hold a flush forever); if it failed on them (or there is
 * none, as in a forked child) writes here once more. */
int pcb_store_flush(pcb_store *s, pcb_status *st)
{
    pcb_store_lock(s);
    const uint64_t target = pcb_txn_mem_gen(s);
    while (s->writer_started && !s->writer_stop && pcb_txn_flushing(s, target))
        if (!pcb_store_wait_interruptible(s)) { /* Ctrl-C (common/wait.h) */
            pcb_store_unlock(s);
            return pcb_fail(st, PCB_E_INTERRUPTED, "interrupted while waiting for the "
                            "background write; the applied changes stay pending");
        }
    int pending = !pcb_txn_on_disk(s, target);
    pcb_store_unlock(s);
    return !pending || pcb_txn_write_pending(s, 1, st);
}

int pcb_store_close(pcb_store *s, pcb_status *st)
{
    int ok = pcb_store_flush(s, st);
    if (s->writer_started) {
        pcb_store_lock(s);
        s->writer_stop = 1;
        pthread_cond_broadcast(&s->cond);
        pcb_store_unlock(s);
        pthread_join(s->writer, NULL);
    }
    store_free(s);
    return ok;
}

/* ------------------------------------------------------------- reading */

static int cache_lookup(pcb_store *s, const char *name, size_t len, pcb_buf *out, int *found)
{
    const rec_header *r = pcb_entries_cached(s, name, len);
    if (r == NULL)
        return 0;
    out->len = 0;
    pcb_buf_append(out, (const char *)rec_value(r), r->value_len);
    *found = 1;
    return 1;
}

/* After a read (lock held): s->sname is kept for the next one, unless it
 * failed (its flag is sticky) or grew past 64 KiB for a long name. */
static void done_sname(pcb_store *s)
{
    if (s->sname.failed || s->sname.cap > 65536) {
        pcb_buf_free(&s->sname);
        pcb_buf_init(&s->sname);
    }
}

/* Looks name up (lock held): the record or NULL, and the AAD its value needs. */
static const rec_header *lookup(pcb_store *s, const char *name, size_t len, pcb_buf *sname,
                                pcb_status *st, int *failed)
{
    *failed = 0;
    if (!pcb_codec_name(s, name, len, sname, st)) {
        *failed = 1;
        return NULL;
    }
    STAGE_BEGIN(s);
    const rec_header *r = pcb_map_find(&s->map, (const uint8_t *)sname->data, sname->len);
    STAGE_END(s, PCB_STAGE_LOOKUP);
    return r;
}

int pcb_store_get(pcb_store *s, const char *name, size_t len, pcb_buf *out, int *found,
                  pcb_status *st)
{
    int failed, ok = 1;
    *found = 0;
    out->len = 0;
    if (!pcb_codec_check_name(s, name, len, st))
        return 0;
    pcb_store_lock(s);
    if (s->opt.cache && cache_lookup(s, name, len, out, found)) {
        pcb_store_unlock(s);
        return 1;
    }
    pcb_buf *sname = &s->sname;
    const rec_header *r = lookup(s, name, len, sname, st, &failed);
    if (failed) {
        ok = 0;
    } else if (r != NULL) {
        size_t aad_len;
        STAGE_BEGIN(s);
        const uint8_t *aad = pcb_codec_value_aad(s, (const uint8_t *)sname->data, sname->len, &aad_len);
        STAGE_END(s, PCB_STAGE_BASE64);
        ok = aad != NULL ? pcb_codec_open_value(s, r, aad, aad_len, out, st) : pcb_oom(st);
        if (ok) {
            *found = 1;
            if (s->opt.cache && !pcb_entries_cache_put(s, name, len, (const uint8_t *)out->data,
                                                       out->len))
                ok = pcb_oom(st);
        }
    }
    done_sname(s);
    pcb_store_unlock(s);
    return ok;
}

int pcb_store_contains(pcb_store *s, const char *name, size_t len, int *found, pcb_status *st)
{
    int failed;
    *found = 0;
    if (!pcb_codec_check_name(s, name, len, st))
        return 0;
    pcb_store_lock(s);
    if (s->opt.cache && pcb_entries_cached(s, name, len) != NULL) {
        pcb_store_unlock(s);
        *found = 1;
        return 1;
    }
    const rec_header *r = lookup(s, name, len, &s->sname, st, &failed);
    done_sname(s);
    pcb_store_unlock(s);
    *found = r != NULL;
    return !failed;
}

size_t pcb_store_count(pcb_store *s)
{
    pcb_store_lock(s);
    size_t n = s->map.live;
    pcb_store_unlock(s);
    return n;
}

int pcb_store_all_locked(pcb_store *s, pcb_store_entry_fn fn, void *arg, pcb_status *st)
{
    pcb_buf name, value, sname;
    const rec_header *r;
    int ok = 1;
    pcb_buf_init(&name);
    pcb_buf_init(&value);
    pcb_buf_init(&sname);
    PCB_MAP_FOREACH(&s->map, r) {
        if (!pcb_codec_plain_name(s, r, &name, st)) {
            ok = 0;
            break;
        }
        const rec_header *target = r;
        size_t aad_len;
        const uint8_t *aad;
        if (s->codec.names == PCB_NAMES_SIV_TEXT) {
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
        } else {
            aad = pcb_codec_value_aad(s, rec_name(r), r->name_len & LEN_MASK, &aad_len);
            if (aad == NULL) {
                ok = pcb_oom(st);
                break;
            }
        }
        if (!pcb_codec_open_value(s, target, aad, aad_len, &value, st)) {
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
    pcb_store_lock(s);
    int ok = pcb_store_all_locked(s, fn, arg, st);
    pcb_store_unlock(s);
    return ok;
}

/* ---------------------------------------------------------- accounting */

size_t pcb_store_heap_bytes(pcb_store *s)
{
    pcb_store_lock(s);
    /* Our own allocations by capacity; OpenSSL's contexts (key schedules,
     * GHASH tables) are estimated at ~1 KiB each (they are not ours to count). */
    size_t n = sizeof *s + pcb_map_heap_bytes(&s->map) + pcb_map_heap_bytes(&s->plain_cache)
               + s->scratch.cap + s->sname.cap + pcb_keys_heap_bytes(s)
               + strlen(s->path) + strlen(s->dir) + strlen(s->store_name) + strlen(s->scrypt_path) + 4;
    pcb_store_unlock(s);
    return n;
}

const char *pcb_store_name(const pcb_store *s) { return s->store_name; }

const char *pcb_store_file(const pcb_store *s) { return s->path; }

uint64_t pcb_store_disk_bytes(pcb_store *s)
{
    struct stat sb;
    return pcb_sys_stat(s->path, &sb) == 0 ? (uint64_t)sb.st_size : 0;
}

void pcb_store_stage_clocks(pcb_store *s, int on)
{
    pcb_store_lock(s);
    s->stages_on = on;
    pcb_store_unlock(s);
}

void pcb_store_take_stages(pcb_store *s, uint64_t ns[PCB_STAGE_COUNT])
{
    pcb_store_lock(s);
    memcpy(ns, s->stage_ns, sizeof s->stage_ns);
    memset(s->stage_ns, 0, sizeof s->stage_ns);
    pcb_store_unlock(s);
}