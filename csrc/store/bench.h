/*
 * store/bench.h — timed workloads on the store, run in C without the GIL.
 *
 * Owns: one instance of a workload (a store of n_keys entries built in a
 * given directory, with names, values and a shuffled access order made
 * before any clock runs), the per-workload operation loops handed to the
 * timing engine (put, get, get_missing, contains, all, commit, apply,
 * open_cold, open_warm, rotate, rotate_lazy, migrate, migrate_keys), the stage breakdown
 * of put and get, and the footprint per entry. The migrations start every
 * operation from a fresh copy of a file captured after populating (written
 * untimed), and time the read-all + write-all + file removal or rename. Calibration, samples and rounds are the caller's.
 * Units: times in ns, sizes in bytes, lengths in characters. Thread safety:
 * one benchmark owns its directory and store; run it without the GIL (it
 * calls back into nothing Python).
 */
#ifndef PCB_STORE_BENCH_H
#define PCB_STORE_BENCH_H

#include <stddef.h>
#include <stdint.h>

#include "store/store.h"
#include "common/timing.h"

typedef enum {
    PCB_WL_PUT, PCB_WL_GET, PCB_WL_GET_MISSING, PCB_WL_CONTAINS, PCB_WL_ALL, PCB_WL_COMMIT,
    PCB_WL_APPLY, PCB_WL_OPEN_COLD, PCB_WL_OPEN_WARM, PCB_WL_ROTATE, PCB_WL_ROTATE_LAZY,
    PCB_WL_MIGRATE, PCB_WL_MIGRATE_KEYS, PCB_WL_COUNT
} pcb_workload;

/* The workloads' names, NULL-terminated. */
extern const char *const pcb_workload_names[PCB_WL_COUNT + 1];

typedef struct {
    pcb_workload workload;
    size_t n_keys;       /* entries in the store before timing */
    size_t key_len;      /* characters per key name */
    size_t value_len;    /* characters per string value (members of a set) */
    pcb_pref_type value_type;
    size_t batch;        /* puts per commit/apply */
    const char *dir;     /* an empty directory the benchmark may fill */
    pcb_store_options opt; /* master_key_file/passphrase are set by the benchmark */
    int use_passphrase;  /* derive the master key with scrypt instead of a key file */
    int stages;          /* also measure the stage breakdown (put, get) */
    /* Polled every few thousand entries while populating (NULL: never): a
     * non-zero return stops pcb_store_bench_open, which then fails with
     * st->code 0 (the embedder has its own error, e.g. KeyboardInterrupt). */
    int (*interrupted)(void *arg);
    void *interrupt_arg;
} pcb_store_bench_params;

typedef struct {
    uint64_t stage_ns[PCB_STAGE_COUNT]; /* per operation, mean over the breakdown run */
    uint64_t stage_total_ns;            /* per operation in the breakdown run */
    /* The floor of the crypto stages (pcb_store_stage_floor), measured right
     * after them at the same sizes: 0 where a stage has none. */
    uint64_t siv_floor_ns, aead_floor_ns;
} pcb_store_bench_stages;

typedef struct {
    uint64_t heap_bytes, disk_bytes, entries; /* right after populating */
    size_t payload;         /* plaintext value bytes an operation handles */
    /* The library that sealed the names and the values (static strings:
     * pcb_store_crypto_libraries), crypto_backend="auto" resolved. */
    const char *names_crypto, *values_crypto;
} pcb_store_bench_footprint;

/* The shortest key_len that gives n_keys distinct names and as many
 * (up to 65,536) distinct missing ones, from [A-Za-z0-9]. */
size_t pcb_store_bench_min_key_len(size_t n_keys);

/* One instance of a workload: its inputs made, its store populated. */
typedef struct pcb_store_bench pcb_store_bench;

/* Makes the names, values and access order, and a store of n_keys entries
 * in p->dir (empty for open_cold); p must outlive the object. NULL with st set. */
pcb_store_bench *pcb_store_bench_open(const pcb_store_bench_params *p, const pcb_evp_cache *cache,
                                      pcb_status *st);
/* The workload as the timing engine runs it (a pcb_run_fn over a
 * pcb_store_bench *); on failure pcb_store_bench_error says why. */
int pcb_store_bench_run(void *bench, uint64_t n, uint64_t *self_ns);
const pcb_status *pcb_store_bench_error(const pcb_store_bench *b);
/* apply: ns, summed over the last sample's calls, from each start until its writes were durable. */
uint64_t pcb_store_bench_last_durable_ns(const pcb_store_bench *b);
/* Starts the durable-time sum again (before a call the engine may run in
 * slices: apply adds each slice's durable time). */
void pcb_store_bench_begin(void *b);
void pcb_store_bench_get_footprint(const pcb_store_bench *b, pcb_store_bench_footprint *f);
/* put/get: n more operations with the stage clocks on, then the crypto
 * stages' floor (n calls each); 1, or 0 with st set. */
int pcb_store_bench_stages_run(pcb_store_bench *b, uint64_t n, pcb_store_bench_stages *out,
                               pcb_status *st);
/* Closes the store, removes its files, frees everything. 1, or 0 (st set)
 * if closing reported a failed write; freed either way. NULL is fine. */
int pcb_store_bench_close(pcb_store_bench *b, pcb_status *st);

#endif /* PCB_STORE_BENCH_H */
