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

#include <openssl/crypto.h>

#include "store/codec.h"
#include "store/internal.h"
#include "store/keys.h"
#include "store/keyset.h"
#include "store/txn.h"

/* The value keyset's state, moved aside whole for a rollback. */
typedef struct {
    pcb_tink_keyset keyset;
    pcb_buf text;
    uint8_t key[VALUE_KEY_LEN], kid[4];
    pcb_aead_pair ctx;
} saved_value_keys;

static void save_value_keys(pcb_store *s, saved_value_keys *k)
{
    k->keyset = s->keyset[PCB_KS_VALUE];
    k->text = s->keyset_text[1];
    pcb_buf_init(&s->keyset_text[1]);
    memcpy(k->key, s->value_key, VALUE_KEY_LEN);
    memcpy(k->kid, s->value_kid, 4);
    k->ctx = s->value; /* moved, not rebuilt: putting it back cannot fail */
    s->value.enc = s->value.dec = NULL;
}

/* keep = 0: everything as it was; 1: the new state stays. Either way the
 * saved copy is wiped. */
static void end_value_keys(pcb_store *s, saved_value_keys *k, int keep)
{
    if (keep) {
        pcb_buf_free(&k->text);
        pcb_aead_pair_free(&k->ctx);
    } else {
        s->keyset[PCB_KS_VALUE] = k->keyset;
        pcb_buf_free(&s->keyset_text[1]);
        s->keyset_text[1] = k->text;
        memcpy(s->value_key, k->key, VALUE_KEY_LEN);
        memcpy(s->value_kid, k->kid, 4);
        pcb_aead_pair_free(&s->value);
        s->value = k->ctx;
        s->key_gen++; /* editors seal their puts again, under the old primary */
    }
    OPENSSL_cleanse(k, sizeof *k);
}

static void lazy_publish(pcb_store *s, void *arg) { end_value_keys(s, arg, 1); }
static void lazy_undo(pcb_store *s, void *arg) { end_value_keys(s, arg, 0); }

int pcb_store_rotate_lazy(pcb_store *s, pcb_status *st)
{
    if (s->codec.file == PCB_FILE_NATIVE)
        return pcb_fail(st, PCB_E_VALUE, "a plain store has no keys to rotate");
    if (!s->codec.value_keyset)
        return pcb_fail(st, PCB_E_VALUE, "lazy rotation adds a value key, and this store has no "
                        "value keyset (value_encryption='none'): use rotate() (lazy=False)");
    if (!pcb_store_flush(s, st))
        return 0;
    saved_value_keys k;
    const pcb_txn_change change = {lazy_publish, lazy_undo, &k};
    pcb_txn t;
    if (!pcb_txn_begin(&t, s, &change, st))
        return 0;
    save_value_keys(s, &k); /* under the lock: after the merge, which may adopt a keyset */
    if (pcb_keyset_fresh(s, PCB_KS_VALUE, 0, st)
        && pcb_keyset_seal(s, PCB_KS_VALUE, &s->keyset_text[1], st)
        && pcb_keys_contexts(s, st)) {
        s->key_gen++; /* editors seal their puts again, under the new key */
        (void)pcb_txn_write(&t, st);
    }
    return pcb_txn_end(&t);
}
