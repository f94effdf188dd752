/*
 * format/prefs_names.c — the duplicate-name set of a parse (see
 * prefs_names.h).
 */
#include "format/prefs_names.h"

#include <stdlib.h>
#include <string.h>

#include <openssl/crypto.h>
#include <openssl/rand.h>
#include "common/siphash.h"
#include "common/sys.h"

/* Wiping reallocation: old (old_cap bytes, `used` kept) wiped and freed. */
static void *pcb_grow_wipe(void *old, size_t old_cap, size_t used, size_t new_cap)
{
    void *n = malloc(new_cap);
    if (n == NULL)
        return NULL;
    if (old != NULL) {
        memcpy(n, old, used);
        OPENSSL_cleanse(old, old_cap);
        free(old);
    }
    return n;
}

char *pcb_grow_capped(char **buf, size_t *cap, size_t used, size_t n, size_t limit)
{
    if (n > SIZE_MAX / 4 - used)
        return NULL;
    size_t need = used + n, c = *cap ? *cap * 2 : 256;
    if (c < need)
        c = need;
    if (c > limit && need <= limit)
        c = limit;
    char *b = pcb_grow_wipe(*buf, *cap, used, c);
    if (b == NULL)
        return NULL;
    *buf = b;
    *cap = c;
    return b;
}

/* The hash key: the kernel's randomness where it is one call away without
 * blocking (Linux getrandom; elsewhere, or forced, getentropy), else
 * OpenSSL's; with neither (early boot), any key still gives correct results. */
static void random_key(uint64_t key[2], const void *salt, size_t len)
{
    if (pcb_sys_getentropy(key, 2 * sizeof key[0]) == 0)
        return;
    if (RAND_bytes((unsigned char *)key, 2 * sizeof key[0]) == 1)
        return;
    key[0] = (uint64_t)(uintptr_t)salt ^ 0x9E3779B97F4A7C15ULL;
    key[1] = (uint64_t)len * 0xD6E8FEB86659FD93ULL;
}

void pcb_name_set_init(pcb_name_set *ns, const unsigned char *input, size_t input_len)
{
    uint64_t key[2];
    memset(ns, 0, sizeof *ns);
    ns->input = input;
    ns->input_len = input_len;
    random_key(key, ns, input_len);
    ns->k0 = key[0];
    ns->k1 = key[1];
}

void pcb_name_set_free(pcb_name_set *ns)
{
    if (ns->arena != NULL) {
        OPENSSL_cleanse(ns->arena, ns->arena_cap);
        free(ns->arena);
    }
    free(ns->names);
    free(ns->slots);
    memset(ns, 0, sizeof *ns);
}

static const unsigned char *name_bytes(const pcb_name_set *ns, const pcb_name_ref *r)
{
    return (r->off2 & 1) ? (const unsigned char *)ns->arena + (r->off2 >> 1)
                         : ns->input + (r->off2 >> 1);
}

static int slots_grow(pcb_name_set *ns)
{
    size_t n = ns->n_slots ? ns->n_slots * 2 : 1024;
    if (n > SIZE_MAX / sizeof(uint32_t))
        return -1;
    uint32_t *s = calloc(n, sizeof(uint32_t));
    if (s == NULL)
        return -1;
    for (size_t i = 0; i < ns->n_names; i++) {
        size_t j = (size_t)ns->names[i].hash & (n - 1);
        while (s[j] != 0)
            j = (j + 1) & (n - 1);
        s[j] = (uint32_t)(i + 1);
    }
    free(ns->slots);
    ns->slots = s;
    ns->n_slots = n;
    return 0;
}

/* Where a name that is not raw input goes: the arena, whose total content
 * is at most the input size (growth is capped there). */
static int arena_copy(pcb_name_set *ns, const char *name, size_t len, size_t *off2)
{
    if (len > ns->arena_cap - ns->arena_len
        && pcb_grow_capped(&ns->arena, &ns->arena_cap, ns->arena_len, len, ns->input_len) == NULL)
        return -1;
    if (len > 0)
        memcpy(ns->arena + ns->arena_len, name, len);
    *off2 = ns->arena_len << 1 | 1;
    ns->arena_len += len;
    return 0;
}

int pcb_name_set_add(pcb_name_set *ns, const char *name, size_t len, size_t raw_off)
{
    if (ns->n_names >= UINT32_MAX - 1)
        return -2;
    if ((ns->n_names + 1) * 2 > ns->n_slots && slots_grow(ns) != 0)
        return -1;
    uint64_t h = pcb_siphash13(ns->k0, ns->k1, (const unsigned char *)name, len);
    size_t mask = ns->n_slots - 1, j = (size_t)h & mask;
    for (; ns->slots[j] != 0; j = (j + 1) & mask) {
        const pcb_name_ref *r = &ns->names[ns->slots[j] - 1];
        if (r->hash == h && r->len == len && memcmp(name_bytes(ns, r), name, len) == 0)
            return 1;
    }
    if (ns->n_names == ns->names_cap) {
        size_t cap = ns->names_cap ? ns->names_cap * 2 : 512;
        if (cap > SIZE_MAX / sizeof(pcb_name_ref))
            return -1;
        pcb_name_ref *nr = realloc(ns->names, cap * sizeof(pcb_name_ref));
        if (nr == NULL)
            return -1;
        ns->names = nr;
        ns->names_cap = cap;
    }
    size_t off2 = raw_off << 1;
    if (raw_off == SIZE_MAX && arena_copy(ns, name, len, &off2) != 0)
        return -1;
    ns->names[ns->n_names] = (pcb_name_ref){off2, len, h};
    ns->slots[j] = (uint32_t)(ns->n_names + 1);
    ns->n_names++;
    return 0;
}
