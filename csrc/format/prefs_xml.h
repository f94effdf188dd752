/*
 * format/prefs_xml.h — Android SharedPreferences XML files: writing and strict parsing.
 *
 * Owns: the file syntax only (no crypto, no Python): the writer lives in
 * prefs_write.c, the parser in prefs_parse.c, their number text in prefs_text.c.
 * Thread-safe: no mutable global state. Offsets and lengths are bytes.
 * The format is what Android's XmlUtils.writeMapXml writes:
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
 * & < > " and ' as entities, and every character below 0x20 as a numeric
 * reference &#N; -- TAB, LF and CR included, as Android's FastXmlSerializer
 * does: a literal one would not survive an XML parser's line-end and
 * attribute-value normalisation. U+0000 has no XML form: the writer emits
 * "&#0;" like Android, which this parser rejects, so callers must refuse NUL
 * in names and values. The writer does not validate UTF-8.
 *
 * The parser accepts what Android's parser accepts of this shape: any
 * whitespace between elements, single or double quotes around attribute
 * values, the five named entities and decimal/hex numeric references (&#10;
 * &#x0A;) decoded to UTF-8, an optional UTF-8 BOM and XML declaration, XML
 * comments (also inside text, which then joins around them), self-closing
 * `<string name="N" />` / `<set name="N" />` / `<string />` members, and
 * `<int name="N" value="1"></int>`. Literal line ends are normalised as XML
 * requires (CR LF and CR become LF in text; LF, CR and TAB become a space in
 * attribute values); references are never normalised. It rejects anything
 * else (unknown elements or attributes, nested maps, text inside value
 * elements or between elements, duplicate names after decoding, unterminated
 * tags, invalid UTF-8, control characters XML forbids, references to U+0000,
 * surrogates or beyond U+10FFFF, numbers out of range, malformed floats,
 * booleans other than "true"/"false", CDATA, DOCTYPE, processing
 * instructions, trailing content) with a message naming the byte offset.
 * Values: int/long are [+-]?[0-9]+ in range; float is the decimal syntax
 * Java writes and accepts ("1.5", "-0.0", "1.0E10", ".5", "1e5"), "NaN" or
 * [+-]"Infinity", converted with correct rounding independently of the C
 * locale (no hex floats, suffixes or spaces).
 *
 * The parser does not recurse, never reads outside [data, data + len), and
 * does not allocate per entry: decoded strings go to one reusable scratch
 * buffer that never exceeds the input size plus 256 bytes; the other working
 * memory (duplicate-name table, set member arrays) is O(input size). Buffers
 * that may hold file contents are wiped (OPENSSL_cleanse) before being freed.
 */
#ifndef PCB_FORMAT_PREFS_XML_H
#define PCB_FORMAT_PREFS_XML_H

#include <stddef.h>
#include <stdint.h>

#include "common/buf.h"

typedef enum {
    PCB_PREF_STRING = 0,
    PCB_PREF_STRING_SET = 1,
    PCB_PREF_INT = 2,
    PCB_PREF_LONG = 3,
    PCB_PREF_FLOAT = 4,
    PCB_PREF_BOOLEAN = 5
} pcb_pref_type;

/* One parsed entry; pointers are valid only during the callback. Fields that
 * do not apply to the type are zero/NULL (members is NULL for an empty set). */
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
 * non-zero value if it stopped, or -1 on a syntax error or allocation failure
 * (err, if not NULL, gets a NUL-terminated message like "line 3, byte 57:
 * expected '>' after attributes", or "...: out of memory"; byte offsets count
 * from 0). Every entry reaches the callback only after it has been fully
 * validated, duplicate check included.
 */
int pcb_prefs_parse(const char *data, size_t len, pcb_pref_entry_fn fn, void *arg,
                    char *err, size_t err_len);

/* pcb_prefs_parse without its duplicate-name check, for a caller that finds
 * duplicates itself (the store's map does): it saves a copy of every name. */
#define PCB_PREFS_ALLOW_DUPLICATES 1u
int pcb_prefs_parse_flags(const char *data, size_t len, unsigned flags, pcb_pref_entry_fn fn,
                          void *arg, char *err, size_t err_len);

/* Writers: the header and `<map>` line, one element each, and `</map>`, in
 * Android's layout (4-space indent, `<int name="N" value="1" />`, an empty
 * set as `<set name="N" />`). Names and text are UTF-8 and escaped by the
 * writer. Floats are written as Java's Float.toString does (JDK 19+: the
 * shortest decimal of at least two digits that round-trips, the closest one
 * among equals; plain for 1e-3 <= |v| < 1e7 as "0.001" / "1234567.0", else
 * "1.0E10" / "1.4E-45"; "NaN", "Infinity", "-Infinity", "-0.0"), so
 * parsing gives back the same float bit for bit (NaN as the canonical NaN).
 * On allocation failure b->failed is set and nothing more is appended. */
void pcb_prefs_begin(pcb_buf *b);
void pcb_prefs_string(pcb_buf *b, const char *name, size_t name_len, const char *text, size_t text_len);
void pcb_prefs_int(pcb_buf *b, const char *name, size_t name_len, int32_t v);
void pcb_prefs_long(pcb_buf *b, const char *name, size_t name_len, int64_t v);
void pcb_prefs_float(pcb_buf *b, const char *name, size_t name_len, float v);
void pcb_prefs_boolean(pcb_buf *b, const char *name, size_t name_len, int v);
void pcb_prefs_set(pcb_buf *b, const char *name, size_t name_len, size_t n,
                   const char *const *members, const size_t *member_lens);
void pcb_prefs_end(pcb_buf *b);

#endif /* PCB_FORMAT_PREFS_XML_H */
