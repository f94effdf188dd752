/*
 * pcb_prefs_xml.h — Android SharedPreferences XML files: writing and strict parsing.
 *
 * Owns: the file syntax only (no crypto, no Python). The format is what
 * Android's XmlUtils.writeMapXml writes:
 *
 *   <?xml version='1.0' encoding='utf-8' standalone='yes' ?>
 *   <map>
 *       <string name="NAME">TEXT</string>
 *       <int name="NAME" value="-5" />
 *       <long name="NAME" value="123" />
 *       <float name="NAME" value="1.5" />
 *       <boolean name="NAME" value="true" />
 *       <set name="NAME">
 *           <string>MEMBER</string>
 *       </set>
 *   </map>
 *
 * (an empty map may be written `<map />`; a string value may be empty:
 * `<string name="N"></string>`). Text and attribute values are escaped:
 * & < > " and ' as entities, and characters below 0x20 other than \t \n \r as
 * numeric references &#N;. The parser accepts what Android's parser accepts
 * of this shape: any whitespace between elements, single or double quotes
 * around attribute values, the five named entities and decimal/hex numeric
 * references (&#10; &#x0A;) decoded to UTF-8, an optional XML declaration,
 * and XML comments; it rejects anything else (unknown elements, duplicate
 * names, unterminated tags, invalid UTF-8, numbers out of range, trailing
 * garbage) with a message naming the byte offset.
 */
#ifndef PCB_PREFS_XML_H
#define PCB_PREFS_XML_H

#include <stddef.h>
#include <stdint.h>

typedef enum {
    PCB_PREF_STRING = 0,
    PCB_PREF_STRING_SET = 1,
    PCB_PREF_INT = 2,
    PCB_PREF_LONG = 3,
    PCB_PREF_FLOAT = 4,
    PCB_PREF_BOOLEAN = 5
} pcb_pref_type;

/* One parsed entry; pointers are valid only during the callback. */
typedef struct {
    pcb_pref_type type;
    const char *name;     /* UTF-8, unescaped, NUL-terminated */
    size_t name_len;
    const char *text;     /* STRING: the unescaped text, NUL-terminated */
    size_t text_len;
    int64_t i;            /* INT (range of int32) and LONG */
    float f;              /* FLOAT */
    int b;                /* BOOLEAN */
    size_t n_members;     /* STRING_SET */
    const char *const *members;      /* NUL-terminated, unescaped */
    const size_t *member_lens;
} pcb_pref_entry;

/* Returns 0 to continue, non-zero to stop parsing (returned by the parser). */
typedef int (*pcb_pref_entry_fn)(void *arg, const pcb_pref_entry *e);

/*
 * Parses a whole file held in memory. Returns 0 on success, the callback's
 * non-zero value if it stopped, or -1 on a syntax error (err gets a message
 * like "line 3, byte 57: expected '>' after attributes").
 */
int pcb_prefs_parse(const char *data, size_t len, pcb_pref_entry_fn fn, void *arg,
                    char *err, size_t err_len);

/* A growable output buffer the writer appends to. */
typedef struct {
    char *data;
    size_t len, cap;
    int failed; /* set on allocation failure; later appends do nothing */
} pcb_buf;

void pcb_buf_init(pcb_buf *b);
void pcb_buf_free(pcb_buf *b);      /* wipes (OPENSSL_cleanse) then frees */
void pcb_buf_append(pcb_buf *b, const char *s, size_t n);
/* Reserves room for n more bytes and returns where they go (NULL on failure);
 * the caller then adds n to b->len. */
char *pcb_buf_reserve(pcb_buf *b, size_t n);

/* Writers: the header and `<map>` line, one element each, and `</map>`.
 * Names and text are UTF-8 and escaped by the writer. Floats are written as
 * Java's Float.toString would for the common cases (shortest repr that
 * round-trips; "NaN", "Infinity", "-Infinity"). */
void pcb_prefs_begin(pcb_buf *b);
void pcb_prefs_string(pcb_buf *b, const char *name, size_t name_len, const char *text, size_t text_len);
void pcb_prefs_int(pcb_buf *b, const char *name, size_t name_len, int32_t v);
void pcb_prefs_long(pcb_buf *b, const char *name, size_t name_len, int64_t v);
void pcb_prefs_float(pcb_buf *b, const char *name, size_t name_len, float v);
void pcb_prefs_boolean(pcb_buf *b, const char *name, size_t name_len, int v);
void pcb_prefs_set(pcb_buf *b, const char *name, size_t name_len, size_t n,
                   const char *const *members, const size_t *member_lens);
void pcb_prefs_end(pcb_buf *b);

#endif /* PCB_PREFS_XML_H */
