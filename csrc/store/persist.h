/*
 * store/persist.h — the store's file and its map, both ways.
 *
 * Owns: the file's bytes for the map, in the codec's layout (native
 * elements; ESP's keysets and Base64 entries; or the sealed map), written
 * atomically through store/fileio; and loading: the file read and parsed
 * strictly, records decoded into the map as the codec says (records filed
 * in the table a few behind the parser so their slots can be prefetched),
 * duplicates refused, keysets handed to store/keys, the sealed map opened.
 * Lengths are bytes.
 */
#ifndef PCB_STORE_PERSIST_H
#define PCB_STORE_PERSIST_H

#include "store/internal.h"

/* The file's bytes for memory as it is (store lock held), into b (reset). */
int pcb_persist_serialize(pcb_store *s, pcb_buf *b, pcb_status *st);
/* Writes b as the file, atomically (the file lock held: the caller is
 * txn.c, a transaction or a new store's first write; the store lock not).
 * 1, or 0 with st set. */
int pcb_persist_write_bytes(pcb_store *s, const pcb_buf *b, pcb_status *st);
/* Loads the file into the empty map, with its keys (or new ones for a new
 * store: *created = 1; the file lock is then still held, and the caller's
 * next step is the first write, txn.c's pcb_txn_create, which releases it).
 * 1, or 0 with st set and the lock not held. */
int pcb_persist_load(pcb_store *s, int *created, pcb_status *st);
/* Reads the file as it is now into the empty map `into` (the merge's
 * fresh map), refusing a file sealed under other keysets; a missing file
 * gives an empty map. File lock held. 1, or 0 with st set. */
int pcb_persist_read_map(pcb_store *s, pcb_map *into, pcb_status *st);

#endif /* PCB_STORE_PERSIST_H */
