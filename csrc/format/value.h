/*
 * format/value.h — ESP's plaintext serialization of a value, the one home of
 * its rules.
 *
 * Owns: encoding a value (type id, then payload), parsing one strictly into a
 * pcb_value view, walking a string set's members, checking strings for NUL,
 * and converting to and from SharedPreferences XML elements (plain stores
 * and the sealed map keep values as native elements). The store, its Python
 * types and its benchmarks all encode and decode through here.
 *
 * The serialization (EncryptedSharedPreferences' EncryptedType + payload):
 * a big-endian int32 type id (pcb_pref_type: STRING 0, STRING_SET 1, INT 2,
 * LONG 3, FLOAT 4, BOOLEAN 5), then: string: int32 length + UTF-8; string
 * set: per member int32 length + bytes; int: int32; long: int64; float:
 * IEEE float32 bits; boolean: one byte 0 or 1. All big-endian. Lengths are
 * bytes. Pure functions, thread-safe.
 */
#ifndef PCB_FORMAT_VALUE_H
#define PCB_FORMAT_VALUE_H

#include <stddef.h>
#include <stdint.h>

#include "common/buf.h"
#include "format/prefs_xml.h"

/* A parsed serialization; pointers point into it. */
typedef struct {
    pcb_pref_type type;
    int64_t i;              /* INT (int32 range) and LONG */
    float f;                /* FLOAT */
    int b;                  /* BOOLEAN: 0 or 1 */
    const uint8_t *text;    /* STRING: its bytes (not NUL-terminated) */
    size_t text_len;
    size_t n_members;       /* STRING_SET: walk them with pcb_value_next_run */
} pcb_value;

/* Parses v[0..vl) strictly: 1 with *out set, 0 if malformed (unknown type
 * id, a length past the end or short of it, a boolean other than 0/1). */
int pcb_value_parse(const uint8_t *v, size_t vl, pcb_value *out);

/* pcb_value_parse, and every string (or string-set member) valid UTF-8 as
 * Java writes it (no overlong forms, surrogates or code points past
 * U+10FFFF): 1 if a reader can take v as a value, 0 if not. */
int pcb_value_check(const uint8_t *v, size_t vl);

/*
 * Next length-prefixed run of v[0..vl) at *off (start at 4, after the type
 * id): 1 with run and len set and off advanced, 0 at the end, -1 if a length
 * runs past the end. A string is one run, a string set one run per member.
 */
int pcb_value_next_run(const uint8_t *v, size_t vl, size_t *off, const uint8_t **run,
                       size_t *len);

/* 1 if a string or string-set member of v holds U+0000 (XML cannot). */
int pcb_value_has_nul(const uint8_t *v, size_t vl);

/* Encoding: pcb_value_begin resets b and writes the type id; then one
 * pcb_value_put_run (string) or one per member (string set), or one of the
 * scalar writers. Allocation failures set b->failed. */
void pcb_value_begin(pcb_buf *b, pcb_pref_type type);
void pcb_value_put_run(pcb_buf *b, const char *s, size_t n);
void pcb_value_put_int(pcb_buf *b, int32_t v);
void pcb_value_put_long(pcb_buf *b, int64_t v);
void pcb_value_put_float(pcb_buf *b, float v);
void pcb_value_put_bool(pcb_buf *b, int v);

/* The serialization of a parsed XML element, into b (reset). */
void pcb_value_from_entry(pcb_buf *b, const pcb_pref_entry *e);
/* Appends the XML element for name = v; 0 if v is malformed (nothing
 * written). Allocation failures set b->failed. */
int pcb_value_to_xml(pcb_buf *b, const char *name, size_t nl, const uint8_t *v, size_t vl);

#endif /* PCB_FORMAT_VALUE_H */
