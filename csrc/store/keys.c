/*
 * store/keys.c — master key, keysets and the entry crypto contexts (see
 * keys.h).
 */
#include "store/keys.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include <openssl/core_names.h>
#include <openssl/crypto.h>
#include <openssl/kdf.h>
#include <openssl/params.h>
#include <openssl/rand.h>

#include "store/codec.h"
#include "store/fileio.h"
#include "store/keyset.h"

/* ------------------------------------------------------------ master key */

static void hex_encode(const uint8_t *in, size_t n, char *out)
{
    static const char digits[] = "0123456789abcdef";
    for (size_t i = 0; i < n; i++) {
        out[2 * i] = digits[in[i] >> 4];
        out[2 * i + 1] = digits[in[i] & 15];
    }
}

static int hex_decode(const char *in, size_t n, uint8_t *out)
{
    if (n % 2)
        return 0;
    for (size_t i = 0; i < n; i += 2) {
        int v = 0;
        for (int j = 0; j < 2; j++) {
            char c = in[i + (size_t)j];
            int d = c >= '0' && c <= '9' ? c - '0' : c >= 'a' && c <= 'f' ? c - 'a' + 10
                  : c >= 'A' && c <= 'F' ? c - 'A' + 10 : -1;
            if (d < 0)
                return 0;
            v = v * 16 + d;
        }
        out[i / 2] = (uint8_t)v;
    }
    return 1;
}


/* Loads the 32-byte master key file, creating it (0600) when absent. */
static int master_from_file(pcb_store *s, const char *path, int may_create,
                            uint8_t key[MASTER_KEY_LEN], int *created, pcb_status *st)
{
    struct stat sb;
    *created = 0;
    if (stat(path, &sb) != 0) {
        if (errno != ENOENT)
            return pcb_fail_os(st, "cannot stat master key file %s", path);
        if (!may_create)
            return pcb_fail_os(st, "master key file %s is missing, and %s holds keysets sealed by a "
                           "master key", path, s->path);
        if (RAND_priv_bytes_ex(s->libctx, key, MASTER_KEY_LEN, 0) != 1)
            return pcb_fail_openssl(st, "generating the master key");
        char *dir = pcb_dir_of(path);
        if (dir == NULL)
            return pcb_oom(st);
        int exists = 0;
        int ok = pcb_atomic_create(path, dir, (const char *)key, MASTER_KEY_LEN, 0600, &exists, st);
        free(dir);
        if (!ok)
            return 0;
        if (!exists) {
            *created = 1;
            return 1;
        }
        /* Another store created it first: use that key. */
        OPENSSL_cleanse(key, MASTER_KEY_LEN);
        if (stat(path, &sb) != 0)
            return pcb_fail_os(st, "cannot stat master key file %s", path);
    }
    if (!S_ISREG(sb.st_mode)) {
        errno = S_ISDIR(sb.st_mode) ? EISDIR : EINVAL;
        return pcb_fail_os(st, "master key file %s is not a regular file", path);
    }
    if (sb.st_mode & 077)
        return pcb_fail(st, PCB_E_PERMISSION,
                        "master key file %s is accessible by group or others (mode %04o); "
                        "it must be private to its owner: run chmod 600 %s",
                        path, (unsigned)(sb.st_mode & 07777), path);
    pcb_file_bytes f;
    int missing;
    if (sb.st_size != MASTER_KEY_LEN) /* refused from its size, unread */
        return pcb_fail(st, PCB_E_FORMAT, "master key file %s must hold exactly 32 bytes, holds %lld",
                        path, (long long)sb.st_size);
    if (!pcb_read_whole_file(path, MASTER_KEY_LEN, "a master key", &f, &missing, st))
        return 0;
    if (missing) {
        errno = ENOENT;
        return pcb_fail_os(st, "master key file %s vanished", path);
    }
    size_t len = f.len;
    int ok = len == MASTER_KEY_LEN;
    if (ok)
        memcpy(key, f.data, MASTER_KEY_LEN);
    pcb_file_bytes_free(&f, 1);
    if (!ok)
        return pcb_fail(st, PCB_E_FORMAT, "master key file %s must hold exactly 32 bytes, holds %zu",
                        path, len);
    return 1;
}

/* Reads "key": <number> from our own small JSON file. */
static int json_u64(const char *json, const char *key, uint64_t *out)
{
    char pat[32];
    snprintf(pat, sizeof pat, "\"%s\":", key);
    const char *p = strstr(json, pat);
    if (p == NULL)
        return 0;
    p += strlen(pat);
    while (*p == ' ')
        p++;
    char *end;
    errno = 0;
    unsigned long long v = strtoull(p, &end, 10);
    if (end == p || errno)
        return 0;
    *out = v;
    return 1;
}

static int scrypt_derive(pcb_store *s, const uint8_t *salt, size_t salt_len, uint64_t n,
                         uint64_t r, uint64_t p, uint8_t key[MASTER_KEY_LEN], pcb_status *st)
{
    EVP_KDF *kdf = EVP_KDF_fetch(s->libctx, "SCRYPT", NULL);
    EVP_KDF_CTX *kctx = kdf ? EVP_KDF_CTX_new(kdf) : NULL;
    OSSL_PARAM params[] = {
        OSSL_PARAM_construct_octet_string(OSSL_KDF_PARAM_PASSWORD, (void *)s->opt.passphrase,
                                          s->opt.passphrase_len),
        OSSL_PARAM_construct_octet_string(OSSL_KDF_PARAM_SALT, (void *)salt, salt_len),
        OSSL_PARAM_construct_uint64(OSSL_KDF_PARAM_SCRYPT_N, &n),
        OSSL_PARAM_construct_uint64(OSSL_KDF_PARAM_SCRYPT_R, &r),
        OSSL_PARAM_construct_uint64(OSSL_KDF_PARAM_SCRYPT_P, &p),
        OSSL_PARAM_construct_end(),
    };
    int ok = kctx != NULL && EVP_KDF_derive(kctx, key, MASTER_KEY_LEN, params) == 1;
    EVP_KDF_CTX_free(kctx);
    EVP_KDF_free(kdf);
    return ok || pcb_fail_openssl(st, "scrypt key derivation");
}

/* Derives the master key from the passphrase; the salt and costs live in
 * "<path>.scrypt", created with fresh ones when absent. */
static int master_from_passphrase(pcb_store *s, int may_create, uint8_t key[MASTER_KEY_LEN],
                                  int *created, pcb_status *st)
{
    pcb_file_bytes f;
    int missing;
    uint8_t salt[16];
    uint64_t n = s->opt.scrypt_n ? s->opt.scrypt_n : DEFAULT_SCRYPT_N, r = 8, p = 1;
    *created = 0;
    if (!pcb_read_whole_file(s->scrypt_path, 4096, "a scrypt parameter file", &f, &missing, st))
        return 0;
    if (missing && !may_create) {
        errno = ENOENT;
        return pcb_fail_os(st, "scrypt parameter file %s is missing, and %s holds keysets sealed by "
                       "the key it derives", s->scrypt_path, s->path);
    }
    if (missing) {
        char json[160], hex[33];
        if (RAND_bytes_ex(s->libctx, salt, sizeof salt, 0) != 1)
            return pcb_fail_openssl(st, "drawing a salt");
        hex_encode(salt, sizeof salt, hex);
        hex[32] = '\0';
        int jl = snprintf(json, sizeof json,
                          "{\"kdf\": \"scrypt\", \"salt\": \"%s\", \"n\": %llu, \"r\": %llu, \"p\": %llu}\n",
                          hex, (unsigned long long)n, (unsigned long long)r, (unsigned long long)p);
        if (!pcb_atomic_write(s->scrypt_path, s->dir, json, (size_t)jl, 0600, st))
            return 0;
        *created = 1;
    } else {
        const char *data = f.data, *sp = strstr(data, "\"salt\": \"");
        int ok = sp != NULL && f.len < 4096 && json_u64(data, "n", &n) && json_u64(data, "r", &r)
                 && json_u64(data, "p", &p) && strlen(sp) > 9 + 32 && sp[9 + 32] == '"'
                 && hex_decode(sp + 9, 32, salt) && n >= 2 && (n & (n - 1)) == 0
                 && n <= ((uint64_t)1 << 24) && r >= 1 && r <= 64 && p >= 1 && p <= 16;
        pcb_file_bytes_free(&f, 0);
        if (!ok)
            return pcb_fail(st, PCB_E_FORMAT,
                            "%s is not a valid scrypt parameter file (expected {\"kdf\": \"scrypt\", "
                            "\"salt\": 32 hex digits, \"n\": power of two <= 2^24, \"r\", \"p\"})",
                            s->scrypt_path);
    }
    return scrypt_derive(s, salt, sizeof salt, n, r, p, key, st);
}


/* The file's text of keyset `which` (Tink's EncryptedKeyset, see keyset.h)
 * into out (reset). */
static int seal_keyset(pcb_store *s, int which, pcb_buf *out, pcb_status *st)
{
    return pcb_keyset_seal(s, which, out, st);
}

/* Opens keyset `which` from the file's text and makes its primary the
 * store's key. Returns 1 ok, 2 ok from an earlier release's text, 0 not
 * authentic, -1 malformed, unfit or OpenSSL failure (st set). */
static int open_keyset(pcb_store *s, int which, const char *hex, size_t hex_len, pcb_status *st)
{
    int rc = pcb_keyset_open(s, which, hex, hex_len, st);
    if (rc >= 1)
        pcb_keyset_use_primary(s, which);
    return rc;
}

/* Sets up the entry crypto from siv_key/value_key. */
int pcb_keys_contexts(pcb_store *s, pcb_status *st)
{
    if (s->codec.key_keyset) {
        if (!s->siv_ready) {
            if (!pcb_siv_new(&s->siv, s->cache->cipher[PCB_EVP_AES256_CBC],
                             s->cache->cipher[PCB_EVP_AES256_ECB],
                             s->cache->cipher[PCB_EVP_AES256_CTR]))
                return pcb_fail_openssl(st, "AES-SIV setup");
            s->siv_ready = 1;
        }
        if (!pcb_siv_set_key(&s->siv, s->siv_key, SIV_KEY_LEN))
            return pcb_fail_openssl(st, "AES-SIV key setup");
        memcpy(s->s2v_store, s->siv.d0, 16);
        /* The store name is S2V's constant first component: fold it in once. */
        if (!pcb_s2v_add(&s->siv, s->s2v_store, (const uint8_t *)s->store_name, s->store_name_len))
            return pcb_fail_openssl(st, "AES-SIV S2V");
    }
    if (s->codec.value_keyset) {
        pcb_aead_pair_free(&s->value);
        if (!pcb_aead_pair_new(&s->value, s->value_cipher, s->value_key, st))
            return 0;
    }
    return 1;
}


/* Fresh keysets (one key each), sealed under the current master key. */
int pcb_keys_new(pcb_store *s, pcb_status *st)
{
    if (!pcb_keyset_fresh(s, PCB_KS_KEY, 1, st) || !pcb_keyset_fresh(s, PCB_KS_VALUE, 1, st))
        return 0;
    s->key_gen++;
    s->keyset_text[0].len = s->keyset_text[1].len = 0;
    if (s->codec.key_keyset && !seal_keyset(s, PCB_KS_KEY, &s->keyset_text[0], st))
        return 0;
    if (s->codec.value_keyset && !seal_keyset(s, PCB_KS_VALUE, &s->keyset_text[1], st))
        return 0;
    return pcb_keys_contexts(s, st);
}

int pcb_keys_load_master(pcb_store *s, int may_create, int *created, pcb_status *st)
{
    int ok = s->opt.master_key_file
             ? master_from_file(s, s->opt.master_key_file, may_create, s->master, created, st)
             : master_from_passphrase(s, may_create, s->master, created, st);
    if (!ok)
        return 0;
    pcb_aead_pair_free(&s->master_ctx);
    return pcb_aead_pair_new(&s->master_ctx, s->master_cipher, s->master, st);
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

/* Loads the file's keysets with the master key, or creates keysets for a new store. */
int pcb_keys_load(pcb_store *s, const pcb_keyset_text *k, int *created, pcb_status *st)
{
    const int need[2] = {s->codec.key_keyset, s->codec.value_keyset};
    const int have[2] = {k->hex[0] != NULL, k->hex[1] != NULL};
    if (!need[0] && !need[1] && !have[0] && !have[1])
        return 1; /* nothing encrypted: no keysets */
    if (!have[0] && !have[1]) {
        *created = 1;
        return pcb_keys_new(s, st);
    }
    int rc[2] = {1, 1};
    if (need[0])
        rc[0] = open_keyset(s, PCB_KS_KEY, k->hex[0], k->len[0], st);
    if (rc[0] >= 0 && need[1])
        rc[1] = open_keyset(s, PCB_KS_VALUE, k->hex[1], k->len[1], st);
    if (rc[0] < 0 || rc[1] < 0)
        return 0;
    for (int i = 0; i < 2; i++) { /* kept verbatim: commits rewrite them unchanged */
        s->keyset_text[i].len = 0;
        if (need[i] && rc[i] == 2) /* an earlier release's text: written again as Tink's */
            seal_keyset(s, i, &s->keyset_text[i], st);
        else if (need[i])
            pcb_buf_append(&s->keyset_text[i], k->hex[i], k->len[i]);
        if (st->code)
            return 0;
        if (s->keyset_text[i].failed)
            return pcb_oom(st);
    }
    if (rc[0] == 0 && rc[1] == 0 && need[0] && need[1])
        return pcb_fail(st, PCB_E_DECRYPT, "%s: the master key does not match this store "
                        "(neither keyset decrypts)", s->path);
    if (rc[0] == 0 || rc[1] == 0) {
        int both = need[0] && need[1];
        return pcb_fail(st, PCB_E_DECRYPT, "%s: entry '%s' (the %s keyset) failed authentication%s",
                        s->path, rc[0] == 0 ? KEY_KEYSET : VALUE_KEYSET,
                        rc[0] == 0 ? "key" : "value",
                        both ? " (tampered)" : ": the master key does not match or the keyset was tampered with");
    }
    return pcb_keys_contexts(s, st);
}

