/*
 * pcb_store_bench.c — timed store workloads (see pcb_store_bench.h).
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
#include "common/bytes.h"
#include "format/value.h"

#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <openssl/crypto.h>
#include <openssl/rand.h>

const char *const pcb_workload_names[PCB_WL_COUNT + 1] = {
    "put", "get", "get_missing", "contains", "all", "commit", "apply", "open_cold", "open_warm",
    "rotate", NULL,
};

typedef struct {
    const pcb_store_bench_params *p;
    const pcb_evp_cache *cache;
    char path[PATH_MAX], key_path[PATH_MAX];
    pcb_store_options opt;
    pcb_store *store;
    char *names;         /* n_keys names of key_len characters, back to back */
    char *missing;       /* n_missing names that are not in the store */
    size_t n_missing;
    uint32_t *order;     /* a shuffled access order over the names */
    char *in_order;      /* the names copied in that order: the store sees random
                          * keys, but reading them costs the benchmark no cache miss */
    size_t cursor, miss_cursor, put_counter;
    uint8_t *value;      /* the plaintext serialization every put stores */
    size_t value_len;
    pcb_buf out;         /* reused by gets */
    uint64_t *durable_ring; /* apply: durable ns of the last `repeats` calls */
    uint64_t calls;
    uint32_t p_repeats;
    pcb_status st;
} bench;

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

/* The value every put stores, in ESP's plaintext serialization. */
static int make_value(bench *b, pcb_status *st)
{
    const size_t vl = b->p->value_len;
    size_t n;
    switch (b->p->value_type) {
    case PCB_PREF_STRING: n = 8 + vl; break;
    case PCB_PREF_STRING_SET: n = 4 + 3 * (4 + vl); break; /* three members */
    case PCB_PREF_INT: case PCB_PREF_FLOAT: n = 8; break;
    case PCB_PREF_LONG: n = 12; break;
    default: n = 5; break;
    }
    b->value = malloc(n);
    if (b->value == NULL)
        return fail_oom(st);
    b->value_len = n;
    pcb_store_be32(b->value, (uint32_t)b->p->value_type);
    switch (b->p->value_type) {
    case PCB_PREF_STRING:
        pcb_store_be32(b->value + 4, (uint32_t)vl);
        return random_text(b->cache, (char *)b->value + 8, vl, st);
    case PCB_PREF_STRING_SET:
        for (int m = 0; m < 3; m++) {
            uint8_t *q = b->value + 4 + (size_t)m * (4 + vl);
            pcb_store_be32(q, (uint32_t)vl);
            if (!random_text(b->cache, (char *)q + 4, vl, st))
                return 0;
            if (vl)
                q[4] = (uint8_t)('a' + m); /* distinct members */
        }
        return 1;
    case PCB_PREF_BOOLEAN:
        b->value[4] = 1;
        return 1;
    default:
        return RAND_bytes_ex(b->cache->libctx, b->value + 4, n - 4, 0) == 1
               || pcb_fail_openssl(st, "drawing values");
    }
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

/* The store with its n_keys entries, committed. */
static int populate(bench *b, pcb_status *st)
{
    if (!open_store(b, NULL, st))
        return 0;
    pcb_edit *e = pcb_edit_new(b->store, st);
    if (e == NULL)
        return 0;
    int ok = 1;
    for (size_t i = 0; ok && i < b->p->n_keys; i++) {
        ok = pcb_edit_put(e, name_at(b, i), b->p->key_len, b->value, b->value_len, st);
        /* Commit in slices so the editor's buffer stays small. */
        if (ok && (i + 1) % 65536 == 0)
            ok = pcb_edit_commit(e, 0, st);
    }
    ok = ok && pcb_edit_commit(e, 1, st);
    pcb_edit_free(e);
    return ok;
}

static void unlink_store_files(bench *b)
{
    char scrypt_path[PATH_MAX + 8];
    unlink(b->path);
    unlink(b->key_path);
    snprintf(scrypt_path, sizeof scrypt_path, "%s.scrypt", b->path);
    unlink(scrypt_path);
}

/* Puts of existing names with a fresh value each time (as an app updating). */
static int do_puts(bench *b, pcb_edit *e, size_t n)
{
    for (size_t i = 0; i < n; i++)
        if (!pcb_edit_put(e, next_name(b), b->p->key_len, b->value, b->value_len, &b->st))
            return 0;
    return 1;
}

static int run(void *arg, uint64_t n, uint64_t *self_ns)
{
    bench *b = arg;
    const pcb_store_bench_params *p = b->p;
    int found;
    switch (p->workload) {
    case PCB_WL_PUT: {
        pcb_edit *e = pcb_edit_new(b->store, &b->st);
        if (e == NULL)
            return -1;
        int ok = do_puts(b, e, n);
        pcb_edit_free(e); /* discarded: put alone is timed, not commit */
        return ok ? 0 : -1;
    }
    case PCB_WL_GET:
        for (uint64_t i = 0; i < n; i++) {
            if (!pcb_store_get(b->store, next_name(b), p->key_len, &b->out, &found, &b->st))
                return -1;
            if (!found) {
                pcb_fail(&b->st, PCB_E_VALUE, "benchmark bug: an entry went missing");
                return -1;
            }
        }
        return 0;
    case PCB_WL_GET_MISSING:
        for (uint64_t i = 0; i < n; i++) {
            const char *name = b->missing + b->miss_cursor * p->key_len;
            if (++b->miss_cursor == b->n_missing)
                b->miss_cursor = 0;
            if (!pcb_store_get(b->store, name, p->key_len, &b->out, &found, &b->st))
                return -1;
        }
        return 0;
    case PCB_WL_CONTAINS:
        for (uint64_t i = 0; i < n; i++)
            if (!pcb_store_contains(b->store, next_name(b), p->key_len, &found, &b->st))
                return -1;
        return 0;
    case PCB_WL_ALL:
        for (uint64_t i = 0; i < n; i++)
            if (!pcb_store_all(b->store, NULL, NULL, &b->st))
                return -1;
        return 0;
    case PCB_WL_COMMIT:
        for (uint64_t i = 0; i < n; i++) {
            pcb_edit *e = pcb_edit_new(b->store, &b->st);
            int ok = e != NULL && do_puts(b, e, p->batch) && pcb_edit_commit(e, 1, &b->st);
            pcb_edit_free(e);
            if (!ok)
                return -1;
        }
        return 0;
    case PCB_WL_APPLY: {
        /* Blocked: the puts and apply() the caller waits for. Durable: until
         * the background write has landed (flush). */
        uint64_t blocked = 0, durable = 0;
        for (uint64_t i = 0; i < n; i++) {
            uint64_t t0 = pcb_clock_ns();
            pcb_edit *e = pcb_edit_new(b->store, &b->st);
            int ok = e != NULL && do_puts(b, e, p->batch) && pcb_edit_commit(e, 0, &b->st);
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
        if (b->durable_ring)
            b->durable_ring[b->calls++ % b->p_repeats] = durable;
        return 0;
    }
    case PCB_WL_OPEN_COLD: {
        uint64_t total = 0;
        for (uint64_t i = 0; i < n; i++) {
            int created = 0;
            if (!close_store(b, &b->st))
                return -1;
            unlink_store_files(b);
            uint64_t t0 = pcb_clock_ns();
            int ok = open_store(b, &created, &b->st);
            total += pcb_clock_ns() - t0;
            if (!ok)
                return -1;
        }
        *self_ns = total;
        return 0;
    }
    case PCB_WL_OPEN_WARM: {
        uint64_t total = 0;
        for (uint64_t i = 0; i < n; i++) {
            if (!close_store(b, &b->st))
                return -1;
            uint64_t t0 = pcb_clock_ns();
            int ok = open_store(b, NULL, &b->st);
            total += pcb_clock_ns() - t0;
            if (!ok)
                return -1;
        }
        *self_ns = total;
        return 0;
    }
    case PCB_WL_ROTATE:
        for (uint64_t i = 0; i < n; i++)
            if (!pcb_store_rotate(b->store, NULL, &b->st))
                return -1;
        return 0;
    default:
        pcb_fail(&b->st, PCB_E_VALUE, "unknown workload");
        return -1;
    }
}

int pcb_store_bench(const pcb_store_bench_params *p, const pcb_evp_cache *cache,
                    const pcb_timing_params *tp, pcb_timing_result *tr,
                    pcb_store_bench_extra *extra, pcb_status *st)
{
    bench b;
    int ok = 1;
    memset(&b, 0, sizeof b);
    b.p = p;
    b.cache = cache;
    b.opt = p->opt;
    b.p_repeats = tp->repeats;
    pcb_buf_init(&b.out);
    if (snprintf(b.path, sizeof b.path, "%s/bench_prefs.xml", p->dir) >= (int)sizeof b.path
        || snprintf(b.key_path, sizeof b.key_path, "%s/bench_master.key", p->dir) >= (int)sizeof b.key_path)
        return pcb_fail(st, PCB_E_VALUE, "directory path too long");
    if (p->opt.encrypted) {
        if (p->use_passphrase) {
            b.opt.passphrase = "correct horse battery staple";
            b.opt.passphrase_len = strlen(b.opt.passphrase);
            b.opt.master_key_file = NULL;
        } else {
            b.opt.master_key_file = b.key_path;
            b.opt.passphrase = NULL;
        }
    }
    unlink_store_files(&b);
    const size_t n_keys = p->n_keys;
    b.n_missing = n_keys < 65536 ? (n_keys ? n_keys : 1) : 65536;
    b.names = malloc(n_keys * p->key_len + 1);
    b.missing = malloc(b.n_missing * p->key_len + 1);
    b.order = malloc((n_keys ? n_keys : 1) * sizeof *b.order);
    if (b.names == NULL || b.missing == NULL || b.order == NULL) {
        ok = fail_oom(st);
        goto done;
    }
    ok = random_text(cache, b.names, n_keys * p->key_len, st)
         && random_text(cache, b.missing, b.n_missing * p->key_len, st) && make_value(&b, st);
    if (!ok)
        goto done;
    /* Fisher-Yates with OpenSSL's generator: a random access order. */
    for (size_t i = 0; i < n_keys; i++)
        b.order[i] = (uint32_t)i;
    for (size_t i = n_keys; i > 1; i--) {
        uint64_t r;
        if (RAND_bytes_ex(cache->libctx, (unsigned char *)&r, sizeof r, 0) != 1) {
            ok = pcb_fail_openssl(st, "shuffling");
            goto done;
        }
        size_t j = (size_t)(r % i);
        uint32_t t = b.order[i - 1];
        b.order[i - 1] = b.order[j];
        b.order[j] = t;
    }
    b.in_order = malloc(n_keys * p->key_len + 1);
    if (b.in_order == NULL) {
        ok = fail_oom(st);
        goto done;
    }
    for (size_t i = 0; i < n_keys; i++)
        memcpy(b.in_order + i * p->key_len, name_at(&b, b.order[i]), p->key_len);
    if (!populate(&b, st)) {
        ok = 0;
        goto done;
    }
    extra->entries = pcb_store_count(b.store);
    extra->heap_bytes = pcb_store_heap_bytes(b.store);
    extra->disk_bytes = pcb_store_disk_bytes(b.store);
    switch (p->workload) {
    case PCB_WL_ALL: case PCB_WL_OPEN_WARM: case PCB_WL_ROTATE:
        extra->payload = (b.value_len - 4) * n_keys;
        break;
    case PCB_WL_COMMIT: case PCB_WL_APPLY:
        extra->payload = (b.value_len - 4) * p->batch;
        break;
    case PCB_WL_OPEN_COLD:
        extra->payload = 0;
        break;
    default:
        extra->payload = b.value_len - 4;
    }
    if (p->workload == PCB_WL_OPEN_COLD) {
        /* Cold opens start from nothing: drop the populated store. */
        ok = close_store(&b, st);
        unlink_store_files(&b);
        ok = ok && open_store(&b, NULL, st);
        if (!ok)
            goto done;
    }

    /* The engine calls run() for warm-up and calibration, then once per
     * sample: apply's durable times go to a ring of `repeats` cells, so the
     * last `repeats` calls, the samples, are what it holds at the end. */
    if (p->workload == PCB_WL_APPLY && extra->durable_ns) {
        b.durable_ring = calloc(tp->repeats, sizeof *b.durable_ring);
        if (b.durable_ring == NULL) {
            ok = fail_oom(st);
            goto done;
        }
    }
    if (pcb_time_kernel(run, &b, tp, tr) != 0) {
        *st = b.st;
        ok = 0;
        goto done;
    }
    if (b.durable_ring)
        for (uint32_t i = 0; i < tp->repeats; i++)
            extra->durable_ns[i] = b.durable_ring[(b.calls - tp->repeats + i) % tp->repeats];

    if (p->stages && (p->workload == PCB_WL_PUT || p->workload == PCB_WL_GET)) {
        /* The breakdown: the same operation with stage clocks on. */
        uint64_t n = tr->iterations < 20000 ? tr->iterations : 20000, self = UINT64_MAX;
        if (n == 0)
            n = 1;
        pcb_store_take_stages(b.store, extra->stage_ns);
        pcb_store_stage_clocks(b.store, 1);
        uint64_t t0 = pcb_clock_ns();
        int rc = run(&b, n, &self);
        uint64_t dt = pcb_clock_ns() - t0;
        pcb_store_stage_clocks(b.store, 0);
        pcb_store_take_stages(b.store, extra->stage_ns);
        if (rc != 0) {
            *st = b.st;
            ok = 0;
            goto done;
        }
        for (int i = 0; i < PCB_STAGE_COUNT; i++)
            extra->stage_ns[i] /= n;
        extra->stage_total_ns = dt / n;
        extra->have_stages = 1;
    }
done:
    if (b.store) {
        pcb_status ignored = {0};
        if (!close_store(&b, ok ? st : &ignored))
            ok = 0;
    }
    unlink_store_files(&b);
    free(b.names);
    free(b.missing);
    free(b.order);
    free(b.in_order);
    free(b.durable_ring);
    if (b.value)
        OPENSSL_cleanse(b.value, b.value_len);
    free(b.value);
    pcb_buf_free(&b.out);
    return ok;
}
