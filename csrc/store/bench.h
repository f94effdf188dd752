/*
 * store/bench.h — timed workloads on the store, run in C without the GIL.
 *
 * Owns: building a store of n_keys entries in a given directory, the
 * per-workload operation loops handed to the timing engine (put, get,
 * get_missing, contains, all, commit, apply, open_cold, open_warm, rotate),
 * the stage breakdown of put and get, and the footprint per entry.
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
    PCB_WL_APPLY, PCB_WL_OPEN_COLD, PCB_WL_OPEN_WARM, PCB_WL_ROTATE, PCB_WL_COUNT
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
} pcb_store_bench_params;

typedef struct {
    uint64_t *durable_ns;   /* apply: per sample, until durable (caller-allocated, repeats) */
    uint64_t stage_ns[PCB_STAGE_COUNT]; /* per operation, mean over the breakdown run */
    uint64_t stage_total_ns;            /* per operation in the breakdown run */
    int have_stages;
    uint64_t heap_bytes, disk_bytes, entries;
    size_t payload;         /* plaintext value bytes an operation handles */
} pcb_store_bench_extra;

/* Runs the workload; 1 on success, 0 with st set. */
int pcb_store_bench(const pcb_store_bench_params *p, const pcb_evp_cache *cache,
                    const pcb_timing_params *tp, pcb_timing_result *tr,
                    pcb_store_bench_extra *extra, pcb_status *st);

#endif /* PCB_STORE_BENCH_H */
