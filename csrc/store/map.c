/*
 * store/map.c — the arena and hash table (see map.h).
 */
#include "store/map.h"

#include <stdlib.h>
#include <openssl/crypto.h>
#include <openssl/rand.h>

#include "common/mem.h"

int pcb_map_init(pcb_map *m, size_t capacity, int secret)
{
    size_t cap = 16;
    while (cap < capacity * 4 / 3 + 1)
        cap <<= 1;
    memset(m, 0, sizeof *m);
    m->secret = secret;
    if (RAND_bytes((unsigned char *)&m->seed, sizeof m->seed) != 1)
        m->seed = (uint64_t)(uintptr_t)m ^ 0x8445d61a4e774912ULL;
    m->slots = pcb_big_alloc(cap * sizeof(slot));
    if (m->slots == NULL)
        return 0;
    m->mask = cap - 1;
    return 1;
}

void pcb_map_free(pcb_map *m)
{
    if (m->slots)
        pcb_big_free(m->slots, (m->mask + 1) * sizeof(slot), 0);
    pcb_big_free(m->arena, m->arena_cap, m->secret);
    memset(m, 0, sizeof *m);
}

/* Makes room for `bytes` more of records without growing one step at a time. */
int pcb_map_reserve(pcb_map *m, size_t bytes)
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
    uint8_t *a = pcb_big_alloc(cap);
    if (a == NULL)
        return 0;
    if (m->arena_len)
        memcpy(a, m->arena, m->arena_len);
    pcb_big_free(m->arena, m->arena_cap, m->secret);
    m->arena = a;
    m->arena_cap = cap;
    return 1;
}

/* Gives back the arena's unused tail after a load reserved an upper bound
 * (the file's size) for it. A big (mmap) arena returns whole pages in place,
 * no copy; a small one moves into an exact allocation. The tail was never
 * written past arena_len (map_tail decodes ciphertext only), so needs no wipe. */
void pcb_map_trim(pcb_map *m)
{
    size_t want = (m->arena_len + 4095) & ~(size_t)4095;
    if (want >= m->arena_cap)
        return;
    if (m->arena_cap >= PCB_BIG_ALLOC) {
        pcb_big_shrink(m->arena, &m->arena_cap, want); /* in place, no copy */
        return;
    }
    uint8_t *a = pcb_big_alloc(want ? want : 4096);
    if (a == NULL)
        return; /* keeping the slack is harmless */
    memcpy(a, m->arena, m->arena_len);
    pcb_big_free(m->arena, m->arena_cap, m->secret);
    m->arena = a;
    m->arena_cap = want ? want : 4096;
}

size_t pcb_map_heap_bytes(const pcb_map *m)
{
    return (m->slots ? (m->mask + 1) * sizeof(slot) : 0) + m->arena_cap;
}

/* Keeps the table at most 3/4 full (tombstones count) before one more
 * insert: a full table is rebuilt with room for 1.5x its live entries, which
 * doubles it when it holds no tombstones (map_init adds the 4/3). */
int pcb_map_room_for_one(pcb_map *m)
{
    if ((m->live + m->tombs + 1) * 4 <= (m->mask + 1) * 3)
        return 1;
    return pcb_map_rehash(m, (m->live + 1) + (m->live + 1) / 2);
}

/* Appends a record; returns its ref, or 0 on allocation failure. */
uint32_t pcb_map_append(pcb_map *m, const uint8_t *name, size_t name_len, uint32_t flags,
                             const uint8_t *value, size_t value_len)
{
    size_t need = rec_size((uint32_t)name_len, (uint32_t)value_len);
    if (!pcb_map_reserve(m, need))
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

int pcb_map_put(pcb_map *m, const uint8_t *name, size_t name_len, uint32_t flags,
                   const uint8_t *value, size_t value_len)
{
    if (name_len > LEN_MASK || value_len > UINT32_MAX)
        return 0;
    if (!pcb_map_room_for_one(m))
        return 0;
    uint64_t h = pcb_map_hash(m->seed, name, name_len);
    int found;
    size_t i = pcb_map_probe(m, name, name_len, h, &found);
    uint32_t ref = pcb_map_append(m, name, name_len, flags, value, value_len);
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
 * it is parsed (pcb_map_tail() gives room to decode a record straight into,
 * pcb_map_append_tail() then closes it), and pcb_map_file_record() later puts it in
 * the table. The loader runs the second step a few records behind the first,
 * so that each slot can be fetched ahead: a file's worth of random slot
 * misses is most of what a load waits on once the table outgrows the caches.
 */
uint8_t *pcb_map_tail(pcb_map *m, size_t max_name, size_t max_value)
{
    if (max_name > LEN_MASK || max_value > UINT32_MAX
        || !pcb_map_reserve(m, rec_size((uint32_t)max_name, (uint32_t)max_value)))
        return NULL;
    return m->arena + m->arena_len + sizeof(rec_header);
}

/* Closes the record decoded at the tail; returns its ref (not yet in the table). */
uint32_t pcb_map_append_tail(pcb_map *m, size_t name_len, size_t value_len)
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
int pcb_map_file_record(pcb_map *m, uint32_t ref, uint64_t h)
{
    const rec_header *r = rec_at(m, ref);
    int found;
    size_t i = pcb_map_probe(m, rec_name(r), r->name_len & LEN_MASK, h, &found);
    if (found)
        return 0;
    if (m->slots[i].ref == REF_TOMB)
        m->tombs--;
    m->live++;
    m->slots[i].tag = (uint32_t)(h >> 32);
    m->slots[i].ref = ref;
    return 1;
}

int pcb_map_remove(pcb_map *m, const uint8_t *name, size_t name_len)
{
    int found;
    size_t i = pcb_map_probe(m, name, name_len, pcb_map_hash(m->seed, name, name_len), &found);
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

void pcb_map_clear(pcb_map *m)
{
    memset(m->slots, 0, (m->mask + 1) * sizeof(slot));
    if (m->secret)
        OPENSSL_cleanse(m->arena, m->arena_len);
    m->arena_len = m->garbage = m->live = m->tombs = 0;
}

/* Rebuilds table and arena with only live records (compaction + resize). */
int pcb_map_rehash(pcb_map *m, size_t capacity)
{
    pcb_map fresh;
    if (!pcb_map_init(&fresh, capacity > m->live ? capacity : m->live, m->secret))
        return 0;
    size_t live_bytes = m->arena_len - m->garbage;
    if (live_bytes && !pcb_map_reserve(&fresh, live_bytes + live_bytes / 4)) {
        pcb_map_free(&fresh);
        return 0;
    }
    for (size_t off = 0; off < m->arena_len;) {
        const rec_header *r = (const rec_header *)(m->arena + off);
        size_t sz = rec_size(r->name_len, r->value_len);
        if (!(r->name_len & DEAD_BIT)) {
            size_t nl = r->name_len & LEN_MASK;
            uint64_t h = pcb_map_hash(fresh.seed, rec_name(r), nl);
            int found;
            size_t i = pcb_map_probe(&fresh, rec_name(r), nl, h, &found);
            memcpy(fresh.arena + fresh.arena_len, r, sz);
            fresh.slots[i].tag = (uint32_t)(h >> 32);
            fresh.slots[i].ref = (uint32_t)(fresh.arena_len / 8 + 2);
            fresh.arena_len += sz;
            fresh.live++;
        }
        off += sz;
    }
    pcb_map_free(m);
    *m = fresh;
    return 1;
}

/* Compacts when more than half the arena is dead. */
int pcb_map_maybe_compact(pcb_map *m)
{
    if (m->garbage > 65536 && m->garbage * 2 > m->arena_len)
        return pcb_map_rehash(m, m->live + m->live / 2);
    return 1;
}

