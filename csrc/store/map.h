/*
 * store/map.h — the store's in-memory map: an arena of records and an
 * open-addressing hash table over it.
 *
 * Owns: the record layout, the table, growth, compaction and lookups.
 * Entries live in one arena as records [name_len | value_len | name | value],
 * 8-byte aligned; a table of 8-byte slots (32-bit hash tag, 32-bit record
 * reference) points into it, so a hit touches one slot and one record and a
 * miss usually one slot. Names and values are opaque bytes here: what they
 * hold (plain, SIV blobs, Base64 text) is store/codec's business. The hash is
 * seeded per map so a crafted file cannot line its names up on one slot.
 * A map that holds plaintext (`secret`) is wiped before its memory goes
 * back. Sizes are bytes. Not thread-safe: the store's lock guards it.
 */
#ifndef PCB_STORE_MAP_H
#define PCB_STORE_MAP_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>

#define REF_EMPTY 0u
#define REF_TOMB 1u
#define DEAD_BIT 0x80000000u  /* in name_len: record replaced or removed */
#define BAD_BIT 0x40000000u   /* in name_len: the value could not be decoded at load: the
                                 record's value holds the file's text */
#define NAME_TEXT_BIT 0x20000000u /* in name_len: the name could not be decoded at load: the
                                     record's name holds the file's text (with BAD_BIT) */
#define LEN_MASK 0x1fffffffu  /* names up to 512 MiB (puts allow 256 MiB) */

typedef struct {
    uint32_t tag;
    uint32_t ref; /* REF_EMPTY, REF_TOMB, or record offset / 8 + 2 */
} slot;

typedef struct {
    uint32_t name_len; /* with DEAD_BIT / BAD_BIT / NAME_TEXT_BIT flags */
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

static inline uint64_t pcb_map_hash(uint64_t seed, const uint8_t *p, size_t n)
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

/* Slot of name, or of the first free place (*found = 0). */
static inline size_t pcb_map_probe(const pcb_map *m, const uint8_t *name, size_t len, uint64_t h, int *found)
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
            /* The record's next two lines (the rest of a short name and its
             * value) fetched beside its first, not one after the other once
             * the compare and the value's reader reach them. */
            __builtin_prefetch((const uint8_t *)r + 64);
            __builtin_prefetch((const uint8_t *)r + 128);
            if ((r->name_len & LEN_MASK) == len && memcmp(rec_name(r), name, len) == 0) {
                *found = 1;
                return i;
            }
        }
        i = (i + 1) & m->mask;
    }
}

static inline const rec_header *pcb_map_find(const pcb_map *m, const uint8_t *name, size_t len)
{
    int found;
    size_t i = pcb_map_probe(m, name, len, pcb_map_hash(m->seed, name, len), &found);
    return found ? rec_at(m, m->slots[i].ref) : NULL;
}

/* Empty map with room for `capacity` records before it grows; 1/0 (memory). */
int pcb_map_init(pcb_map *m, size_t capacity, int secret);
void pcb_map_free(pcb_map *m);
/* Room for `bytes` more of records; 1/0. */
int pcb_map_reserve(pcb_map *m, size_t bytes);
/* Gives back the arena's unused tail (after a load reserved an upper bound). */
void pcb_map_trim(pcb_map *m);
size_t pcb_map_heap_bytes(const pcb_map *m);
/* Keeps the table at most 3/4 full before one more insert; 1/0. */
int pcb_map_room_for_one(pcb_map *m);
/* Appends a record (not yet in the table); its ref, or 0 on failure. */
uint32_t pcb_map_append(pcb_map *m, const uint8_t *name, size_t name_len, uint32_t flags,
                        const uint8_t *value, size_t value_len);
/* Inserts or replaces name = value; 1/0 (memory or a length over the limits). */
int pcb_map_put(pcb_map *m, const uint8_t *name, size_t name_len, uint32_t flags,
                const uint8_t *value, size_t value_len);
/* Loading in two steps: pcb_map_tail gives room to decode a record into
 * (NULL on failure), pcb_map_append_tail closes it and returns its ref,
 * pcb_map_file_record later puts it in the table (h: its name's hash): 1, or
 * 0 if the name is already there (nothing changed). */
uint8_t *pcb_map_tail(pcb_map *m, size_t max_name, size_t max_value);
uint32_t pcb_map_append_tail(pcb_map *m, size_t name_len, size_t value_len);
int pcb_map_file_record(pcb_map *m, uint32_t ref, uint64_t h);
/* 1 if name was there and is removed. */
int pcb_map_remove(pcb_map *m, const uint8_t *name, size_t name_len);
void pcb_map_clear(pcb_map *m);
/* Rebuilds table and arena with only live records, for `capacity`; 1/0. */
int pcb_map_rehash(pcb_map *m, size_t capacity);
/* Compacts when more than half the arena is dead; 1/0. */
int pcb_map_maybe_compact(pcb_map *m);

/* Iterates live records in arena order. */
#define PCB_MAP_FOREACH(m, r)                                                          \
    for (size_t off_ = 0; off_ < (m)->arena_len;                                   \
         off_ += rec_size(((const rec_header *)((m)->arena + off_))->name_len,     \
                          ((const rec_header *)((m)->arena + off_))->value_len))   \
        if (!((r = (const rec_header *)((m)->arena + off_))->name_len & DEAD_BIT))

#endif /* PCB_STORE_MAP_H */
