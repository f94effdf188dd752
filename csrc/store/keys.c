/*
 * store/keys.c — master key, keysets and the entry crypto contexts (see
 * keys.h).
 */
#include "store/keys.h"
#include "common/sys.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <openssl/crypto.h>
#include <openssl/rand.h>

#include "common/bytes.h"
#include "common/mem.h"
#include "store/aead.h"
#include "store/fileio.h"
#include "store/keyset.h"
#include "store/scrypt.h"

/* ------------------------------------------------------------ the state */

/* kdf_state: the .scrypt file's tag verified; an old untagged file; a tag
 * that did not verify (the keysets then tell a wrong passphrase). */
enum { PCB_KDF_OK, PCB_KDF_LEGACY, PCB_KDF_UNVERIFIED };

/* Every key of a store and everything made from them (keys.h). */
struct pcb_keys {
    pcb_entry_keys e;           /* the primaries and entry contexts (s->ek points here) */
    uint8_t master[MASTER_KEY_LEN];
    const EVP_CIPHER *master_cipher; /* AES-256-GCM */
    pcb_aead_pair master_ctx;   /* under master: the keysets sealed and opened */
    pcb_kdf_params kdf;         /* the scrypt parameters in use (passphrase stores) */
    int kdf_state;              /* PCB_KDF_*: whether the .scrypt file's tag verified at open */
    pcb_buf text[2];            /* the sealed keysets as written: sealed once, not per commit */
    pcb_tink_keyset keyset[2];  /* [0] key, [1] value: every key (the primary copied into e) */
    int pre_tink_values;        /* the value keyset was an earlier release's text: no type URL */
    int rekeying;               /* a rotation is loading a new master key; lock held */
    int loaded;                 /* keys loaded (or none needed) and contexts set up */
    uint64_t key_gen;           /* bumped when the primaries change */
    /* A passphrase rotation's side file, while rekeying: the .scrypt text
     * to write once published (side_len > 0), or a .scrypt it created. */
    char side[512];
    size_t side_len;
    int side_created;
};

#define K(s) ((s)->keys)
#define E(s) (&(s)->keys->e)

struct pcb_keys *pcb_keys_state_new(const pcb_store_options *opt, const pcb_evp_cache *cache)
{
    struct pcb_keys *k = calloc(1, sizeof *k);
    if (k == NULL)
        return NULL;
    pcb_buf_init(&k->text[0]);
    pcb_buf_init(&k->text[1]);
    k->master_cipher = cache->cipher[PCB_EVP_AES256_GCM];
    k->e.value_cipher = opt->value_enc == PCB_VALENC_CHACHA
                        ? cache->cipher[PCB_EVP_CHACHA20_POLY1305]
                        : cache->cipher[PCB_EVP_AES256_GCM];
    k->e.keyset[0] = &k->keyset[0];
    k->e.keyset[1] = &k->keyset[1];
    return k;
}

void pcb_keys_state_free(struct pcb_keys *k)
{
    if (k == NULL)
        return;
    if (k->e.siv_ready)
        pcb_siv_free(&k->e.siv);
    pcb_aead_pair_free(&k->e.value);
    pcb_aead_pair_free(&k->master_ctx);
    pcb_buf_free(&k->text[0]);
    pcb_buf_free(&k->text[1]);
    OPENSSL_cleanse(k, sizeof *k);
    free(k);
}

pcb_entry_keys *pcb_keys_entry(struct pcb_keys *k) { return &k->e; }

uint64_t pcb_keys_gen(const pcb_store *s) { return K(s)->key_gen; }

const pcb_buf *pcb_keys_text(const pcb_store *s, int which) { return &K(s)->text[which]; }

int pcb_keys_pre_tink_values(const pcb_store *s) { return K(s)->pre_tink_values; }

int pcb_keys_ok(const pcb_store *s)
{
    const struct pcb_keys *k = K(s);
    if (k->rekeying)
        return 0; /* only within a rotation's step, never across an unlock */
    if (!s->opt.encrypted) /* a plain store: no keys at all */
        return !k->loaded && k->master_ctx.enc == NULL && !k->e.siv_ready
               && k->e.value.enc == NULL;
    if (!k->loaded) /* at open, before the keysets: no entry context yet */
        return !k->e.siv_ready && k->e.value.enc == NULL;
    return k->master_ctx.enc != NULL && k->master_ctx.dec != NULL
           && !s->codec.key_keyset == !k->e.siv_ready
           && !s->codec.value_keyset == (k->e.value.enc == NULL)
           && (!s->codec.key_keyset || k->keyset[0].n > 0)
           && (!s->codec.value_keyset || k->keyset[1].n > 0)
           && (!s->codec.key_keyset || k->text[0].len > 0)
           && (!s->codec.value_keyset || k->text[1].len > 0);
}

size_t pcb_keys_heap_bytes(const pcb_store *s)
{
    const struct pcb_keys *k = K(s);
    const size_t evp_ctx = 1024; /* OpenSSL's contexts, estimated (not ours to count) */
    return sizeof *k + k->text[0].cap + k->text[1].cap + (k->e.siv_ready ? 2 * evp_ctx : 0)
           + (k->e.value.enc ? 2 * evp_ctx : 0) + (k->master_ctx.enc ? 2 * evp_ctx : 0);
}

/* ------------------------------------------------------------ master key */

int pcb_store_own_options(pcb_store_options *dst, const pcb_store_options *src)
{
    pcb_store_options o = *src;
    o.master_key_file = NULL;
    if (src->master_key_file) { /* a copy (strdup is not C11) */
        size_t n = strlen(src->master_key_file) + 1;
        char *f = malloc(n);
        if (f)
            memcpy(f, src->master_key_file, n);
        o.master_key_file = f;
    }
    o.passphrase = NULL;
    if (src->passphrase) {
        char *p = malloc(src->passphrase_len + 1);
        if (p) {
            memcpy(p, src->passphrase, src->passphrase_len);
            p[src->passphrase_len] = '\0';
        }
        o.passphrase = p;
    }
    if ((src->master_key_file != NULL && o.master_key_file == NULL)
        || (src->passphrase != NULL && o.passphrase == NULL)) {
        free((void *)o.master_key_file);
        if (o.passphrase)
            pcb_wipe_free((void *)o.passphrase, o.passphrase_len + 1);
        return 0;
    }
    *dst = o;
    return 1;
}





/* Refuses a key file that is one of the store's own files: the first
 * commit would destroy the key. */
static int check_key_path(pcb_store *s, const char *path, pcb_status *st)
{
    if (pcb_same_file(path, s->path) || pcb_same_file(path, s->scrypt_path))
        return pcb_fail(st, PCB_E_VALUE, "master_key_file %s is %s, the store's own %s file: the "
                        "key must be kept in a file of its own", path,
                        pcb_same_file(path, s->path) ? s->path : s->scrypt_path,
                        pcb_same_file(path, s->path) ? "data" : "scrypt parameter");
    return 1;
}

/* Loads the 32-byte master key file, creating it (0600) when absent. The
 * file must be the user's own and private (pcb_read_private_file). */
static int master_from_file(pcb_store *s, const char *path, int may_create,
                            uint8_t key[MASTER_KEY_LEN], int *created, pcb_status *st)
{
    int missing;
    *created = 0;
    if (!check_key_path(s, path, st)
        || !pcb_read_private_file(path, MASTER_KEY_LEN, "master key file", key, &missing, st))
        return 0;
    if (!missing)
        return 1;
    if (!may_create) {
        struct stat sb;
        int by_passphrase = pcb_sys_stat(s->scrypt_path, &sb) == 0;
        errno = ENOENT;
        return pcb_fail_os(st, "master key file %s is missing, and %s holds keysets sealed by a "
                           "master key%s", path, s->path,
                           by_passphrase ? ": the store was sealed with a passphrase (its scrypt "
                           "parameter file exists): open it with passphrase=" : "");
    }
    if (!pcb_check_name_fits(path, "master key file", st))
        return 0;
    if (RAND_priv_bytes_ex(s->libctx, key, MASTER_KEY_LEN, 0) != 1)
        return pcb_fail_openssl(st, "generating the master key");
    char *dir = pcb_dir_of(path);
    if (dir == NULL)
        return pcb_oom(st);
    int exists = 0;
    int ok = pcb_atomic_create(path, dir, (const char *)key, MASTER_KEY_LEN, 0600, &exists, st);
    free(dir);
    if (!ok || !exists) {
        *created = ok;
        if (!ok)
            OPENSSL_cleanse(key, MASTER_KEY_LEN);
        return ok;
    }
    /* Another store created it first: use that key. */
    OPENSSL_cleanse(key, MASTER_KEY_LEN);
    if (!pcb_read_private_file(path, MASTER_KEY_LEN, "master key file", key, &missing, st))
        return 0;
    if (missing) {
        errno = ENOENT;
        return pcb_fail_os(st, "master key file %s vanished", path);
    }
    return 1;
}


/* Replaces the .scrypt file with K(s)->kdf tagged under master. */
static int scrypt_rewrite(pcb_store *s, const uint8_t master[MASTER_KEY_LEN], pcb_status *st)
{
    char json[512];
    size_t jl;
    return pcb_scrypt_text(s, &K(s)->kdf, master, json, sizeof json, &jl, st)
           && pcb_atomic_write(s->scrypt_path, s->dir, json, jl, 0600, st);
}

/* A new store's parameters: fresh salt, the asked cost; the file created
 * exclusively (*exists = 1 if another process was first: nothing done). */
static int scrypt_create(pcb_store *s, uint64_t n, uint8_t key[MASTER_KEY_LEN], int *exists,
                         pcb_status *st)
{
    char json[512];
    size_t jl;
    memset(&K(s)->kdf, 0, sizeof K(s)->kdf);
    K(s)->kdf.salt_len = 16;
    K(s)->kdf.n = n;
    K(s)->kdf.r = 8;
    K(s)->kdf.p = 1;
    if (RAND_bytes_ex(s->libctx, K(s)->kdf.salt, K(s)->kdf.salt_len, 0) != 1)
        return pcb_fail_openssl(st, "drawing a salt");
    int ok = pcb_check_name_fits(s->scrypt_path, "scrypt parameter file", st)
             && pcb_scrypt_check(s, &K(s)->kdf, 2, st) && pcb_scrypt_derive(s, &K(s)->kdf, key, st)
             && pcb_scrypt_text(s, &K(s)->kdf, key, json, sizeof json, &jl, st)
             && pcb_atomic_create(s->scrypt_path, s->dir, json, jl, 0600, exists, st);
    if (!ok || *exists)
        OPENSSL_cleanse(key, MASTER_KEY_LEN);
    return ok;
}

/* Derives the master key from the passphrase; the salt and costs live in
 * "<path>.scrypt" (see keys.h for when an existing file is used). */
static int master_from_passphrase(pcb_store *s, int may_create, uint8_t key[MASTER_KEY_LEN],
                                  int *created, pcb_status *st)
{
    /* A rotation (rotate.c sets rekeying): the store has a master key, the old one. */
    const int rotating = K(s)->rekeying;
    const uint64_t asked_n = s->opt.scrypt_n ? s->opt.scrypt_n : DEFAULT_SCRYPT_N;
    uint8_t fresh[MASTER_KEY_LEN];
    pcb_file_bytes f;
    int missing, exists = 0;
    *created = 0;
    K(s)->kdf_state = PCB_KDF_OK;
    for (int attempt = 0;; attempt++) {
        if (!pcb_read_whole_text(s->scrypt_path, 4096, "a scrypt parameter file", &f, &missing, st))
            return 0;
        if (!missing)
            break;
        if (!may_create) {
            errno = ENOENT;
            return pcb_fail_os(st, "scrypt parameter file %s is missing, and %s holds keysets "
                               "sealed by a master key: the store was sealed with a master key "
                               "file (or its scrypt file was deleted): open it with "
                               "master_key_file=", s->scrypt_path, s->path);
        }
        if (!scrypt_create(s, asked_n, fresh, &exists, st))
            return 0;
        if (!exists) {
            memcpy(key, fresh, MASTER_KEY_LEN);
            OPENSSL_cleanse(fresh, sizeof fresh);
            *created = 1;
            /* A rotation to a passphrase: the new salt must be on disk before
             * the store depends on it; a failed rotation removes it again. */
            K(s)->side_created = rotating;
            return 1;
        }
        if (attempt == 1) { /* created and removed under us twice */
            errno = EAGAIN;
            return pcb_fail_os(st, "%s keeps appearing and vanishing", s->scrypt_path);
        }
    }
    int ok = pcb_scrypt_parse(s, &K(s)->kdf, f.data, f.len, st);
    pcb_file_bytes_free(&f, 0);
    if (!ok)
        return 0;
    if (!may_create) {
        /* An existing store: its keysets authenticate the derived key; the
         * tag only tells a changed file from a wrong passphrase then. */
        if (!pcb_scrypt_check(s, &K(s)->kdf, 2, st) || !pcb_scrypt_derive(s, &K(s)->kdf, key, st))
            return 0;
        int v = pcb_scrypt_verify(s, &K(s)->kdf, key, st);
        if (v < 0)
            return 0;
        K(s)->kdf_state = v ? PCB_KDF_OK
                          : K(s)->kdf.version == 1 ? PCB_KDF_LEGACY : PCB_KDF_UNVERIFIED;
        return 1;
    }
    /* A rotation keeps the parameters its old passphrase used (tagged under
     * the old master key), under a new tag. */
    int v = rotating ? pcb_scrypt_verify(s, &K(s)->kdf, K(s)->master, st) : 0;
    if (v < 0)
        return 0;
    if (v && s->opt.scrypt_n && s->opt.scrypt_n != K(s)->kdf.n)
        return pcb_fail(st, PCB_E_VALUE, "a rotation keeps the store's scrypt salt and costs (n=%llu "
                        "in %s): scrypt_n=%llu cannot change them; copy the entries into a new store "
                        "to change them", (unsigned long long)K(s)->kdf.n, s->scrypt_path,
                        (unsigned long long)s->opt.scrypt_n);
    if (v)
        ok = pcb_scrypt_check(s, &K(s)->kdf, 2, st) && pcb_scrypt_derive(s, &K(s)->kdf, fresh, st);
    else /* a new store, or rotation to a file of another origin: it must be ours */
        ok = pcb_scrypt_check(s, &K(s)->kdf, asked_n, st)
             && pcb_scrypt_derive(s, &K(s)->kdf, fresh, st)
             && ((v = pcb_scrypt_verify(s, &K(s)->kdf, fresh, st)) > 0
                 || (v == 0 && pcb_fail(st, PCB_E_DECRYPT,
                        "%s exists but %s: it was made for another passphrase, left by a deleted "
                        "store, or planted; no store can be created over it: remove it if no "
                        "store uses it", s->scrypt_path, K(s)->kdf.version == 1
                        ? "is an old untagged file that cannot be authenticated"
                        : "does not authenticate under this passphrase")));
    if (ok && v && rotating) /* the new tag: written once the store's file is published */
        ok = pcb_scrypt_text(s, &K(s)->kdf, fresh, K(s)->side, sizeof K(s)->side,
                             &K(s)->side_len, st);
    if (ok)
        memcpy(key, fresh, MASTER_KEY_LEN);
    OPENSSL_cleanse(fresh, sizeof fresh);
    return ok;
}


/* The file's text of keyset `which` (Tink's EncryptedKeyset, see keyset.h)
 * into out (reset). */
static int seal_keyset(pcb_store *s, int which, pcb_buf *out, pcb_status *st)
{
    return pcb_keyset_seal(s, &K(s)->keyset[which], K(s)->master_ctx.enc, out, st);
}

/* Copies keyset which's primary into the entry keys (siv_key/siv_kid or
 * value_key/value_kid). */
static void use_primary(pcb_store *s, int which)
{
    const pcb_tink_key *e = pcb_keyset_primary(&K(s)->keyset[which]);
    if (e == NULL)
        return;
    if (which == PCB_KS_KEY) {
        memcpy(E(s)->siv_key, e->key_value, SIV_KEY_LEN);
        pcb_store_be32(E(s)->siv_kid, e->key_id);
    } else {
        memcpy(E(s)->value_key, e->key_value, VALUE_KEY_LEN);
        pcb_store_be32(E(s)->value_kid, e->key_id);
    }
}

/* A fresh key for keyset which (replace: the keyset becomes that one key),
 * made the primary. */
static int fresh_key(pcb_store *s, int which, int replace, pcb_status *st)
{
    if (!pcb_keyset_fresh(s, which, &K(s)->keyset[which], replace, st))
        return 0;
    use_primary(s, which);
    return 1;
}

/* Opens keyset `which` from the file's text and makes its primary the
 * store's key. Returns 1 ok, 2 ok from an earlier release's text, 0 not
 * authentic, -1 malformed, unfit or OpenSSL failure (st set). */
static int open_keyset(pcb_store *s, int which, const char *hex, size_t hex_len, pcb_status *st)
{
    int rc = pcb_keyset_open(s, which, &K(s)->keyset[which], K(s)->master_ctx.dec, hex, hex_len,
                             st);
    if (rc >= 1)
        use_primary(s, which);
    return rc;
}

/* Sets up the entry crypto from siv_key/value_key. */
int pcb_keys_contexts(pcb_store *s, pcb_status *st)
{
    if (s->codec.key_keyset) {
        if (!E(s)->siv_ready) {
            if (!pcb_siv_new(&E(s)->siv, s->cache->cipher[PCB_EVP_AES256_CBC],
                             s->cache->cipher[PCB_EVP_AES256_ECB],
                             s->cache->cipher[PCB_EVP_AES256_CTR]))
                return pcb_fail_openssl(st, "AES-SIV setup");
            E(s)->siv_ready = 1;
        }
        if (!pcb_siv_set_key(&E(s)->siv, E(s)->siv_key, SIV_KEY_LEN))
            return pcb_fail_openssl(st, "AES-SIV key setup");
        memcpy(E(s)->s2v_store, E(s)->siv.d0, 16);
        /* The store name is S2V's constant first component: fold it in once. */
        if (!pcb_s2v_add(&E(s)->siv, E(s)->s2v_store, (const uint8_t *)s->store_name,
                         s->store_name_len))
            return pcb_fail_openssl(st, "AES-SIV S2V");
    }
    if (s->codec.value_keyset) {
        pcb_aead_pair_free(&E(s)->value);
        if (!pcb_aead_pair_new(&E(s)->value, E(s)->value_cipher, E(s)->value_key, st))
            return 0;
    }
    return 1;
}


/* Fresh keysets (one key each), sealed under the current master key. */
int pcb_keys_new(pcb_store *s, pcb_status *st)
{
    if (!fresh_key(s, PCB_KS_KEY, 1, st) || !fresh_key(s, PCB_KS_VALUE, 1, st))
        return 0;
    K(s)->key_gen++;
    K(s)->text[0].len = K(s)->text[1].len = 0;
    if (s->codec.key_keyset && !seal_keyset(s, PCB_KS_KEY, &K(s)->text[0], st))
        return 0;
    if (s->codec.value_keyset && !seal_keyset(s, PCB_KS_VALUE, &K(s)->text[1], st))
        return 0;
    return pcb_keys_contexts(s, st);
}

int pcb_keys_load_master(pcb_store *s, int may_create, int *created, pcb_status *st)
{
    int ok = s->opt.master_key_file
             ? master_from_file(s, s->opt.master_key_file, may_create, K(s)->master, created, st)
             : master_from_passphrase(s, may_create, K(s)->master, created, st);
    if (!ok)
        return 0;
    pcb_aead_pair_free(&K(s)->master_ctx);
    return pcb_aead_pair_new(&K(s)->master_ctx, K(s)->master_cipher, K(s)->master, st);
}


/* Refuses a file whose keysets do not fit the options, before a master key
 * may be created for it (a failed open leaves no new file behind). */
int pcb_keys_check_present(pcb_store *s, const pcb_keyset_text *k, int file_has_entries,
                           pcb_status *st)
{
    const int need[2] = {s->codec.key_keyset, s->codec.value_keyset};
    const int have[2] = {k->hex[0] != NULL, k->hex[1] != NULL};
    if (!have[0] && !have[1]) {
        if (file_has_entries && (need[0] || need[1]))
            return pcb_fail(st, PCB_E_FORMAT, "%s has entries but no keysets: it was not written "
                            "by an encrypted store with these options", s->path);
        return 1;
    }
    for (int i = 0; i < 2; i++)
        if (need[i] != have[i])
            return pcb_fail(st, PCB_E_FORMAT, "%s %s a %s keyset, but the store was opened with "
                            "%s; open it with the options it was created with", s->path,
                            have[i] ? "has" : "lacks", i ? "value" : "key",
                            i ? (need[1] ? "value encryption" : "value_encryption='none'")
                              : (need[0] ? "key_encryption='siv'" : "key_encryption='none'"));
    for (int i = 0; i < 2; i++) { /* keyset_info is in the clear: checked before any key */
        pcb_tink_keyset info;
        char err[200];
        int rc = have[i] ? pcb_keyset_info(k->hex[i], k->len[i], &info, err, sizeof err) : 0;
        if (rc > 0 && !pcb_keyset_check(s, i, &info, 0, st))
            return 0;
    }
    return 1;
}

/* What a keyset failing to open says about the master key's source. */
static const char *master_hint(pcb_store *s)
{
    struct stat sb;
    if (s->opt.passphrase != NULL)
        return K(s)->kdf_state == PCB_KDF_UNVERIFIED
               ? ": the passphrase is wrong, or the scrypt parameters were tampered with (they do "
                 "not authenticate under the key derived from this passphrase)"
               : ": the passphrase is wrong";
    if (pcb_sys_stat(s->scrypt_path, &sb) == 0)
        return ": a scrypt parameter file lies beside the store: was it sealed with a passphrase?";
    return "";
}

/* Loads the file's keysets with the master key, or creates keysets for a new store. */
int pcb_keys_load(pcb_store *s, const pcb_keyset_text *k, int *created, pcb_status *st)
{
    const int need[2] = {s->codec.key_keyset, s->codec.value_keyset};
    const int have[2] = {k->hex[0] != NULL, k->hex[1] != NULL};
    if (!need[0] && !need[1] && !have[0] && !have[1])
        return K(s)->loaded = 1; /* nothing encrypted: no keysets */
    if (!have[0] && !have[1]) {
        *created = 1;
        return K(s)->loaded = pcb_keys_new(s, st);
    }
    int rc[2] = {1, 1};
    if (need[0])
        rc[0] = open_keyset(s, PCB_KS_KEY, k->hex[0], k->len[0], st);
    if (rc[0] >= 0 && need[1])
        rc[1] = open_keyset(s, PCB_KS_VALUE, k->hex[1], k->len[1], st);
    if (rc[0] < 0 || rc[1] < 0)
        return 0;
    K(s)->pre_tink_values = need[1] && rc[1] == 2;
    for (int i = 0; i < 2; i++) { /* kept verbatim: commits rewrite them unchanged */
        K(s)->text[i].len = 0;
        if (need[i] && rc[i] == 2) /* an earlier release's text: written again as Tink's */
            seal_keyset(s, i, &K(s)->text[i], st);
        else if (need[i])
            pcb_buf_append(&K(s)->text[i], k->hex[i], k->len[i]);
        if (st->code)
            return 0;
        if (K(s)->text[i].failed)
            return pcb_oom(st);
    }
    const char *hint = master_hint(s);
    if (rc[0] == 0 && rc[1] == 0 && need[0] && need[1])
        return pcb_fail(st, PCB_E_DECRYPT, "%s: the master key does not match this store "
                        "(neither keyset decrypts)%s", s->path, hint);
    if (rc[0] == 0 || rc[1] == 0) {
        int both = need[0] && need[1];
        return pcb_fail(st, PCB_E_DECRYPT, "%s: entry '%s' (the %s keyset) failed authentication%s%s",
                        s->path, rc[0] == 0 ? KEY_KEYSET : VALUE_KEYSET,
                        rc[0] == 0 ? "key" : "value",
                        both ? " (tampered)" : ": the master key does not match or the keyset was tampered with",
                        both ? "" : hint);
    }
    if (s->opt.passphrase != NULL && K(s)->kdf_state != PCB_KDF_OK) {
        /* The keysets authenticate the key: give an old file (or one whose
         * tag a crashed rotation left stale) its tag; best effort, as a
         * read-only store still opens. */
        pcb_status ignored;
        if (scrypt_rewrite(s, K(s)->master, &ignored))
            K(s)->kdf_state = PCB_KDF_OK;
    }
    return K(s)->loaded = pcb_keys_contexts(s, st);
}


/* 1 if every enabled key of old is in k with the same id, type and
 * material (k is old plus keys added by a lazy rotation). */
static int extends(const pcb_tink_keyset *k, const pcb_tink_keyset *old)
{
    for (size_t i = 0; i < old->n; i++) {
        const pcb_tink_key *o = &old->key[i];
        int found = o->status != PCB_TINK_ENABLED;
        for (size_t j = 0; j < k->n && !found; j++) {
            const pcb_tink_key *n = &k->key[j];
            found = n->key_id == o->key_id && n->status == PCB_TINK_ENABLED
                    && n->key_len == o->key_len && strcmp(n->type_url, o->type_url) == 0
                    && CRYPTO_memcmp(n->key_value, o->key_value, o->key_len) == 0;
        }
        if (!found)
            return 0;
    }
    return 1;
}

/* ------------------------------------------------ rotations (rotate.c, rotate_lazy.c) */

/* What a failed rotation puts back: the whole key state as it was (keys,
 * keysets, their texts, the entry and master contexts themselves, moved
 * aside, not rebuilt, so that putting them back cannot fail; the scrypt
 * parameters and their state), and the options naming the master key. */
struct pcb_keys_saved {
    struct pcb_keys old;    /* old.master_ctx: the old master context once a new one replaced it */
    pcb_store_options opt;
    int new_master;         /* s->opt now owns new strings; opt holds the old ones */
    char side[512];         /* a passphrase rotation's new .scrypt text (side_len > 0) */
    size_t side_len;
    int side_created;       /* the rotation created the .scrypt file: removed if it fails */
};

static void save_keys(pcb_store *s, pcb_keys_saved *k)
{
    PCB_ASSERT_LOCKED(s);
    struct pcb_keys *live = K(s);
    k->old = *live; /* every field; what is owned moves below */
    k->opt = s->opt;
    k->new_master = 0;
    k->side_len = 0;
    for (int i = 0; i < 2; i++)
        pcb_buf_init(&live->text[i]); /* the texts moved aside */
    /* The entry contexts move aside: pcb_keys_new builds new ones. */
    live->e.siv_ready = 0;
    memset(&live->e.siv, 0, sizeof live->e.siv);
    live->e.value.enc = live->e.value.dec = NULL;
    /* The master context stays live until a new master key replaces it. */
    k->old.master_ctx.enc = k->old.master_ctx.dec = NULL;
}

static void free_options(pcb_store_options *o)
{
    free((void *)o->master_key_file);
    if (o->passphrase)
        pcb_wipe_free((void *)o->passphrase, o->passphrase_len + 1);
}

/* The contexts and texts a key state owns, freed (not the struct). */
static void free_owned(struct pcb_keys *k)
{
    pcb_buf_free(&k->text[0]);
    pcb_buf_free(&k->text[1]);
    if (k->e.siv_ready)
        pcb_siv_free(&k->e.siv);
    k->e.siv_ready = 0;
    pcb_aead_pair_free(&k->e.value);
    pcb_aead_pair_free(&k->master_ctx);
}

/* Nothing changed on disk: the old key state and options come back whole
 * (moved back, so this cannot fail); key_gen moves on, never back. */
static void restore_keys(pcb_store *s, pcb_keys_saved *k)
{
    struct pcb_keys *live = K(s);
    const uint64_t gen = live->key_gen > k->old.key_gen ? live->key_gen : k->old.key_gen;
    if (k->new_master) {
        free_options(&s->opt);
        s->opt = k->opt;
        k->new_master = 0;
    }
    if (k->old.master_ctx.enc == NULL) { /* never replaced: the live one is the old one */
        k->old.master_ctx = live->master_ctx;
        live->master_ctx.enc = live->master_ctx.dec = NULL;
    }
    if (k->side_created) /* the failed rotation's new .scrypt goes: nothing depends on it */
        (void)pcb_sys_unlink(s->scrypt_path);
    k->side_created = 0;
    free_owned(live);
    *live = k->old; /* e.keyset points into *live again: copied from it */
    memset(&k->old, 0, sizeof k->old);
    live->key_gen = gen + 1; /* editors encrypt their puts again, under these keys */
}

/* Drops what save_keys kept (after success, or after restore_keys). */
static void drop_saved(pcb_keys_saved *k)
{
    if (k->new_master)
        free_options(&k->opt);
    free_owned(&k->old);
    OPENSSL_cleanse(k, sizeof *k);
}

/* A new master key from a new key file or passphrase. A new passphrase
 * keeps the store's salt and costs (a salt need only be unique per store);
 * its .scrypt file's new tag waits in k until the store's file is
 * published (pcb_keys_write_side). */
int pcb_keys_new_master(pcb_store *s, const pcb_store_options *new_opt, pcb_keys_saved *k,
                      pcb_status *st)
{
    pcb_store_options o = s->opt;
    o.master_key_file = new_opt->master_key_file;
    o.passphrase = new_opt->passphrase;
    o.passphrase_len = new_opt->passphrase_len;
    o.scrypt_n = new_opt->scrypt_n;
    if (!pcb_store_own_options(&s->opt, &o)) /* all or nothing: s->opt as it was */
        return pcb_oom(st);
    int created;
    k->new_master = 1;
    k->old.master_ctx = K(s)->master_ctx; /* kept whole for a rollback */
    K(s)->master_ctx.enc = K(s)->master_ctx.dec = NULL;
    K(s)->rekeying = 1;
    int ok = pcb_keys_load_master(s, 1, &created, st);
    if (ok && K(s)->side_len > 0) { /* the .scrypt text made for the new key, published later */
        memcpy(k->side, K(s)->side, K(s)->side_len);
        k->side_len = K(s)->side_len;
    }
    k->side_created = K(s)->side_created;
    OPENSSL_cleanse(K(s)->side, sizeof K(s)->side);
    K(s)->side_len = 0;
    K(s)->side_created = 0;
    K(s)->rekeying = 0;
    return ok;
}

void pcb_keys_write_side(pcb_store *s, const pcb_keys_saved *k)
{
    PCB_ASSERT_IO(s);
    PCB_ASSERT_UNLOCKED(s);
    pcb_status ignored = {0};
    if (k != NULL && k->side_len > 0)
        (void)pcb_atomic_write(s->scrypt_path, s->dir, k->side, k->side_len, 0600, &ignored);
}

pcb_keys_saved *pcb_keys_save(pcb_store *s, pcb_status *st)
{
    pcb_keys_saved *k = calloc(1, sizeof *k);
    if (k == NULL) {
        pcb_oom(st);
        return NULL;
    }
    save_keys(s, k);
    return k;
}

void pcb_keys_end_saved(pcb_store *s, pcb_keys_saved *k, int restore)
{
    if (k == NULL)
        return;
    if (restore)
        restore_keys(s, k);
    drop_saved(k);
    free(k);
}

/* A buffer's copy of n bytes; 0 with st set when memory ran out. */
static int append_text(pcb_buf *b, const char *text, size_t n, pcb_status *st)
{
    pcb_buf_append(b, text, n);
    return !b->failed || pcb_oom(st);
}

/* After pcb_keys_save, when only the values' keyset changes: the names'
 * keyset text as saved (a copy; the saved one stays whole for a restore). */
static int keep_names_text(pcb_store *s, const pcb_keys_saved *k, pcb_status *st)
{
    return append_text(&K(s)->text[0], k->old.text[0].data, k->old.text[0].len, st);
}

int pcb_keys_add_value_primary(pcb_store *s, const pcb_keys_saved *k, pcb_status *st)
{
    PCB_ASSERT_LOCKED(s);
    if (!keep_names_text(s, k, st) || !fresh_key(s, PCB_KS_VALUE, 0, st)
        || !seal_keyset(s, PCB_KS_VALUE, &K(s)->text[1], st) || !pcb_keys_contexts(s, st))
        return 0;
    K(s)->key_gen++; /* editors seal their puts again, under the new key */
    return 1;
}

int pcb_keys_adopt_value_keyset(pcb_store *s, const char *hex, size_t len, pcb_status *st)
{
    pcb_store_lock(s); /* readers decrypt with the keyset and its contexts */
    /* Everything the adoption may change moves aside through the one mover of key
     * state (pcb_keys_save / pcb_keys_end_saved), so putting it back cannot fail. */
    pcb_keys_saved *k = pcb_keys_save(s, st);
    if (k == NULL) {
        pcb_store_unlock(s);
        return -1;
    }
    pcb_status why = {0};
    int rc = pcb_keyset_open(s, PCB_KS_VALUE, &K(s)->keyset[PCB_KS_VALUE], K(s)->master_ctx.dec,
                             hex, len, &why) == 1
             && extends(&K(s)->keyset[PCB_KS_VALUE], &k->old.keyset[PCB_KS_VALUE]);
    if (rc) {
        use_primary(s, PCB_KS_VALUE);
        rc = keep_names_text(s, k, st) && append_text(&K(s)->text[1], hex, len, st)
             && pcb_keys_contexts(s, st) ? 1 : -1;
    }
    pcb_keys_end_saved(s, k, rc != 1);
    if (rc == 1)
        K(s)->key_gen++; /* editors seal their puts again, under the new primary */
    pcb_store_unlock(s);
    return rc;
}
