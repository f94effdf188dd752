/*
 * format/prefs_names.h — internal to format/prefs_parse: the set of entry
 * names a parse has seen, to refuse duplicates.
 *
 * Owns: an open-addressing table keyed by SipHash-1-3 under a random key per
 * parse (hash flooding cannot make a parse quadratic). Names that decoded to
 * their raw bytes are referenced in the input; the others are copied to an
 * arena bounded by the input size, wiped when freed. Sizes are bytes. One
 * set per parse: not thread-safe.
 */
#ifndef PCB_FORMAT_PREFS_NAMES_H
#define PCB_FORMAT_PREFS_NAMES_H

#include <stddef.h>
#include <stdint.h>

typedef struct {
    size_t off2; /* offset << 1 | 1 if in the arena, 0 if in the input */
    size_t len;
    uint64_t hash;
} pcb_name_ref;

typedef struct {
    const unsigned char *input; /* the document: raw names point into it */
    size_t input_len;
    pcb_name_ref *names;
    size_t n_names, names_cap;
    uint32_t *slots; /* index + 1 into names, 0 = empty */
    size_t n_slots;  /* power of two */
    char *arena;
    size_t arena_len, arena_cap;
    uint64_t k0, k1;
} pcb_name_set;

/* An empty set for names of input[0..input_len). */
void pcb_name_set_init(pcb_name_set *ns, const unsigned char *input, size_t input_len);
void pcb_name_set_free(pcb_name_set *ns);
/* Adds name (its decoded bytes; raw_off its place in the input when it
 * decoded to its raw bytes, else SIZE_MAX): 0 added, 1 seen before, -1 out
 * of memory, -2 too many names. */
int pcb_name_set_add(pcb_name_set *ns, const char *name, size_t len, size_t raw_off);

/* Wiping reallocation: a new block of new_cap with old's first `used` bytes;
 * old (old_cap bytes) is wiped and freed. NULL (old untouched) on failure. */
void *pcb_grow_wipe(void *old, size_t old_cap, size_t used, size_t new_cap);

#endif /* PCB_FORMAT_PREFS_NAMES_H */
