/*
 * store/inspect.h — what a store file holds, read without any key.
 *
 * Owns: one pass over a file (the store's XML parser) that reports its
 * layout (plain SharedPreferences, ESP entries, or a sealed map), each
 * keyset's plaintext keyset_info (key ids, type URLs, status, output prefix,
 * primary) and its encoding, and how many entry names and values carry each
 * key id in their Tink prefix. Nothing is decrypted and nothing written.
 * Thread-safe (no shared state). Sizes are bytes, counts entries.
 */
#ifndef PCB_STORE_INSPECT_H
#define PCB_STORE_INSPECT_H

#include <stddef.h>
#include <stdint.h>

#include "common/status.h"
#include "format/tinkpb.h"

#define PCB_INSPECT_KIDS 64 /* distinct key ids counted; more go to `overflow` */

typedef enum {
    PCB_INSPECT_PLAIN,   /* no keysets: SharedPreferences' native elements */
    PCB_INSPECT_ENTRIES, /* ESP: keysets, then one encrypted <string> per entry */
    PCB_INSPECT_SEALED   /* layout='file': keysets and one sealed map */
} pcb_inspect_layout;

typedef enum {
    PCB_KSFMT_ABSENT,
    PCB_KSFMT_TINK,         /* EncryptedKeyset with keyset_info (as Java's Tink writes) */
    PCB_KSFMT_TINK_NO_INFO, /* EncryptedKeyset without keyset_info (key ids unknown) */
    PCB_KSFMT_PRE_TINK      /* an earlier release of this store's own text */
} pcb_keyset_format;

typedef struct {
    uint32_t key_id;
    uint64_t n;
} pcb_kid_count;

/* Entries by the key id of their Tink prefix (0x01 || key id). */
typedef struct {
    pcb_kid_count kid[PCB_INSPECT_KIDS];
    size_t n;
    uint64_t unprefixed; /* not Base64 of a Tink-prefixed blob (plain text, or too short) */
    uint64_t overflow;   /* prefixed, with a key id beyond the first PCB_INSPECT_KIDS */
} pcb_kid_counts;

typedef struct {
    pcb_inspect_layout layout;
    uint64_t file_bytes;
    uint64_t entries;        /* elements other than the keysets and the sealed map */
    uint64_t native_entries; /* of those, non-<string> elements (a plain store's) */
    int has_sealed_map;
    pcb_keyset_format format[2]; /* [0] key keyset, [1] value keyset */
    pcb_tink_keyset info[2];     /* keyset_info (no key material) when format is TINK */
    size_t keyset_chars[2];
    pcb_kid_counts names, values; /* the sealed map counts as one value */
} pcb_inspect;

/* Inspects the file at path into *out (zeroed first). 1, or 0 with st set:
 * OSError (missing or unreadable), StoreFormatError (not SharedPreferences
 * XML, or a keyset that is not a Tink EncryptedKeyset). */
int pcb_store_inspect(const char *path, pcb_inspect *out, pcb_status *st);

#endif /* PCB_STORE_INSPECT_H */
