/*
 * format/prefs_names.h — internal to format/prefs_parse: the set of entry
 * names a parse has seen, to refuse duplicates.
 *
 * Owns: an open-addressing table keyed by SipHash-1-3 under a random key per
 * parse (hash flooding cannot make a parse quadratic). Names that decoded to
 * their raw bytes are referenced in the input; the others are copied to an
 * arena bounded by the input size, wiped when freed. Also the parser's
 * capped, wiping buffer growth (pcb_grow_capped), shared by both. Sizes are bytes. One
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

/* Grows a wiping buffer of *cap bytes holding `used` to room for n more:
 * capacity doubles (from 256) but stays at `limit` when the content fits
 * there (the caller knows its content never exceeds it). The block is
 * returned (and *buf, *cap updated), or NULL on failure (untouched). */
char *pcb_grow_capped(char **buf, size_t *cap, size_t used, size_t n, size_t limit);

#endif /* PCB_FORMAT_PREFS_NAMES_H */
