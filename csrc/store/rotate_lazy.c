/*
 * store/rotate_lazy.c — lazy rotation (see store.h): a new primary key is
 * added to the value keyset, as Tink's KeysetManager rotate does, and
 * nothing is re-encrypted. New values are sealed under the new key; older
 * ones keep opening under theirs (codec.c finds a key by the id in a
 * ciphertext's prefix). The keysets are written with the next file write,
 * made at once.
 *
 * Only the value keyset rotates. ESP looks a name up by its deterministic
 * encryption under the key keyset's primary, and each value's associated
 * data is its encrypted name: a new names key would hide every older entry
 * from lookups until it was re-encrypted, name and value both, which is the
 * full rotation (rotate.c).
 *
 * One transaction (txn.h), like every change: the file lock taken and
 * other writers' changes merged in first (under the keysets the file
 * holds, so a commit by another writer is no re-keying), then the new
 * value keyset built beside the old, written, and published; if the write
 * fails, the value keyset, its text, the primary, the contexts and the
 * generations are exactly what they were (the new key is gone) and editors
 * seal their puts again under the old primary.
 */
#include "store/store.h"

#include <string.h>

#include "store/internal.h"
#include "store/keys.h"
#include "store/txn.h"

static void lazy_publish(pcb_store *s, void *arg) { pcb_keys_end_saved(s, *(pcb_keys_saved **)arg, 0); }
static void lazy_undo(pcb_store *s, void *arg) { pcb_keys_end_saved(s, *(pcb_keys_saved **)arg, 1); }

int pcb_store_rotate_lazy(pcb_store *s, pcb_status *st)
{
    if (s->codec.file == PCB_FILE_NATIVE)
        return pcb_fail(st, PCB_E_VALUE, "a plain store has no keys to rotate");
    if (!s->codec.value_keyset)
        return pcb_fail(st, PCB_E_VALUE, "lazy rotation adds a value key, and this store has no "
                        "value keyset (value_encryption='none'): use rotate() (lazy=False)");
    if (!pcb_store_flush(s, st))
        return 0;
    pcb_keys_saved *k = NULL; /* keys.c: the keys before, NULL until saved */
    const pcb_txn_change change = {lazy_publish, lazy_undo, &k};
    pcb_txn t;
    if (!pcb_txn_begin(&t, s, &change, st))
        return 0;
    /* Under the lock, after the merge (which may have adopted a keyset). */
    if ((k = pcb_keys_save(s, st)) != NULL && pcb_keys_add_value_primary(s, k, st))
        (void)pcb_txn_write(&t, st);
    return pcb_txn_end(&t);
}
