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
 * Failure: if the file cannot be written, the old primary is back, and the
 * new key stays in the keyset as a non-primary key (an entry applied while
 * the file was being written may be sealed under it), so memory and the
 * next write agree.
 */
#include "store/store.h"

#include <string.h>

#include <openssl/crypto.h>

#include "store/internal.h"
#include "store/keys.h"
#include "store/keyset.h"
#include "store/persist.h"

int pcb_store_rotate_lazy(pcb_store *s, pcb_status *st)
{
    if (s->codec.file == PCB_FILE_NATIVE)
        return pcb_fail(st, PCB_E_VALUE, "a plain store has no keys to rotate");
    if (!s->codec.value_keyset)
        return pcb_fail(st, PCB_E_VALUE, "lazy rotation adds a value key, and this store has no "
                        "value keyset (value_encryption='none'): use rotate() (lazy=False)");
    if (!pcb_store_flush(s, st))
        return 0;
    pthread_mutex_lock(&s->io_lock);
    pcb_store_lock(s);
    uint32_t old_primary = s->keyset[PCB_KS_VALUE].primary_key_id;
    int ok = pcb_keyset_fresh(s, PCB_KS_VALUE, 0, st)
             && pcb_keyset_seal(s, PCB_KS_VALUE, &s->keyset_text[1], st)
             && pcb_keys_contexts(s, st);
    int added = s->keyset[PCB_KS_VALUE].primary_key_id != old_primary;
    s->key_gen++; /* editors seal their puts again, under the new key */
    uint64_t gen = 0;
    if (ok) {
        s->mem_gen++;
        pcb_store_unlock(s);
        ok = pcb_persist_write(s, &gen, st);
        pcb_store_lock(s);
        if (ok && gen > s->disk_gen)
            s->disk_gen = gen;
    }
    if (!ok && added) { /* the old primary back; the new key kept as a spare */
        pcb_status ignored = {0};
        s->keyset[PCB_KS_VALUE].primary_key_id = old_primary;
        pcb_keyset_use_primary(s, PCB_KS_VALUE);
        pcb_keyset_seal(s, PCB_KS_VALUE, &s->keyset_text[1], &ignored);
        pcb_keys_contexts(s, &ignored);
        s->key_gen++;
    }
    pthread_cond_broadcast(&s->cond);
    pcb_store_unlock(s);
    pthread_mutex_unlock(&s->io_lock);
    return ok;
}
