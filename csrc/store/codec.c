/*
 * store/codec.c — names and values between their plain and stored forms
 * (see codec.h).
 */
#include "store/codec.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <openssl/crypto.h>
#include <openssl/rand.h>

#include "common/mem.h"
#include "format/b64.h"
#include "format/value.h"
#include "store/codec_backend.h"
#include "store/keyset.h"

/* ------------------------------------------------------------- choosing */

static pthread_once_t atfork_once = PTHREAD_ONCE_INIT;
static void register_atfork(void);

pcb_codec pcb_codec_choose(const pcb_store_options *o)
{
    pcb_codec c;
    pthread_once(&atfork_once, register_atfork); /* before the first nonce */
    memset(&c, 0, sizeof c);
    const int entries = o->encrypted && o->layout == PCB_LAYOUT_ENTRIES;
    c.file = !o->encrypted ? PCB_FILE_NATIVE : entries ? PCB_FILE_ENTRIES : PCB_FILE_SEALED_MAP;
    c.per_call_setup = o->faithful;
    c.records_text = entries && o->faithful; /* as Android's map holds Strings */
    c.names = !entries || o->key_enc == PCB_KEYENC_NONE ? PCB_NAMES_PLAIN
              : o->faithful ? PCB_NAMES_SIV_TEXT : PCB_NAMES_SIV;
    if (!entries)
        c.values = PCB_VALUES_PLAIN; /* plain store, or sealed as one map */
    else if (o->value_enc == PCB_VALENC_NONE)
        c.values = o->faithful ? PCB_VALUES_B64_TEXT : PCB_VALUES_PLAIN;
    else
        c.values = o->faithful ? PCB_VALUES_AEAD_TEXT : PCB_VALUES_AEAD;
    c.key_keyset = c.names != PCB_NAMES_PLAIN;
    c.value_keyset = o->encrypted && (o->value_enc != PCB_VALENC_NONE || !entries);
    c.plaintext_in_map = c.names == PCB_NAMES_PLAIN || c.values == PCB_VALUES_PLAIN
                         || c.values == PCB_VALUES_B64_TEXT;
    c.xml_names = c.names == PCB_NAMES_PLAIN;
    c.xml_values = c.file != PCB_FILE_ENTRIES; /* entries hold values as Base64 */
    return c;
}

/* ---------------------------------------------------- nonces and AEADs */

/* Bumped in every child after fork(): nonce pools drawn before it are dropped,
 * so parent and child never hand out the same nonce. (getpid() would do, but
 * it is a system call on every put.) */
static volatile unsigned long fork_generation;
static void on_fork_child(void) { fork_generation++; }
static void register_atfork(void) { pthread_atfork(NULL, NULL, on_fork_child); }

int pcb_codec_nonce(pcb_store *s, uint8_t nonce[NONCE_LEN], pcb_status *st)
{
    if (s->codec.per_call_setup) /* Tink draws each nonce from the CSPRNG */
        return RAND_bytes_ex(s->libctx, nonce, NONCE_LEN, 0) == 1
               || pcb_fail_openssl(st, "drawing a nonce");
    unsigned long gen = fork_generation;
    if (s->nonce_left < NONCE_LEN || gen != s->nonce_fork_gen) {
        /* A batch from OpenSSL's DRBG; refilled after fork so that parent
         * and child never share nonces. */
        if (RAND_bytes_ex(s->libctx, s->nonce_pool, NONCE_POOL, 0) != 1)
            return pcb_fail_openssl(st, "drawing nonces");
        s->nonce_left = NONCE_POOL;
        s->nonce_fork_gen = gen;
    }
    uint8_t *p = s->nonce_pool + NONCE_POOL - s->nonce_left;
    memcpy(nonce, p, NONCE_LEN);
    OPENSSL_cleanse(p, NONCE_LEN);
    s->nonce_left -= NONCE_LEN;
    return 1;
}

/* ------------------------------------------------------------- checks */

int pcb_codec_check_name(const pcb_store *s, const char *name, size_t len, pcb_status *st)
{
    /* Plain stores refuse them too: a file holding them reads as an encrypted store. */
    (void)s;
    if (pcb_reserved_name(name, len))
        return pcb_fail(st, PCB_E_RESERVED,
                        "'%.*s' is reserved for the store's keysets and cannot be read or written",
                        (int)len, name);
    return 1;
}

/* Names and strings that reach the XML file as text must not hold U+0000:
 * XML cannot represent it, so the file could never be read back. */
int pcb_codec_check_put(const pcb_store *s, const char *name, size_t nl, const uint8_t *v,
                        size_t vl, pcb_status *st)
{
    if (!pcb_codec_check_name(s, name, nl, st))
        return 0;
    if (s->codec.xml_names && memchr(name, 0, nl) != NULL)
        return pcb_fail(st, PCB_E_VALUE, "this store keeps names as XML text, which cannot hold "
                        "the character U+0000 (NUL); remove it from the name");
    if (s->codec.xml_values && pcb_value_has_nul(v, vl))
        return pcb_fail(st, PCB_E_VALUE, "this store keeps strings as XML text, which cannot "
                        "hold the character U+0000 (NUL); remove it from the value");
    return 1;
}

/* ------------------------------------------------------------- names */

/* Appends a sealed blob in the records' form: raw bytes, or the file's
 * Base64 text when records hold text (as ESP's map holds Strings). */
static void append_stored(pcb_store *s, pcb_buf *out, const uint8_t *blob, size_t len)
{
    if (!s->codec.records_text) {
        pcb_buf_append(out, (const char *)blob, len);
        return;
    }
    STAGE_BEGIN(s);
    char *p = pcb_buf_reserve(out, pcb_b64_encoded_len(len));
    if (p)
        out->len += pcb_b64_encode(blob, len, p);
    STAGE_END(s, PCB_STAGE_BASE64);
}

/* The S2V state after the store name: folded in once at keying, or (per-call
 * set-up, as Tink, or a non-primary key other_key) from a fresh key schedule. */
static int s2v_start(pcb_store *s, const uint8_t *other_key, uint8_t d[16])
{
    if (!s->codec.per_call_setup && other_key == NULL) {
        memcpy(d, s->ek->s2v_store, 16);
        return 1;
    }
    if (!pcb_siv_set_key(&s->ek->siv, other_key ? other_key : s->ek->siv_key, SIV_KEY_LEN))
        return 0;
    memcpy(d, s->ek->siv.d0, 16);
    return pcb_s2v_add(&s->ek->siv, d, (const uint8_t *)s->store_name, s->store_name_len);
}

int pcb_codec_name(pcb_store *s, const char *name, size_t len, pcb_buf *out, pcb_status *st)
{
    out->len = 0;
    if (pcb_buf_reserve(out, len + 1) == NULL) /* data is never NULL, even for "" */
        return pcb_oom(st);
    if (s->codec.names == PCB_NAMES_PLAIN) {
        pcb_buf_append(out, name, len);
        return !out->failed || pcb_oom(st);
    }
    STAGE_BEGIN(s);
    const size_t blob_len = PREFIX_LEN + 16 + len;
    /* Raw records: sealed in place in out; text records: into a blob Base64 then copies. */
    const int in_place = !s->codec.records_text;
    uint8_t stackbuf[512], *blob = in_place ? (uint8_t *)pcb_buf_reserve(out, blob_len)
                                   : blob_len <= sizeof stackbuf ? stackbuf : malloc(blob_len);
    uint8_t d[16];
    if (blob == NULL)
        return pcb_oom(st);
    blob[0] = 0x01;
    memcpy(blob + 1, s->ek->siv_kid, 4);
    int ok = s->codec.bk_names
             ? pcb_codec_bk_siv_seal(s, (const uint8_t *)name, len, blob + PREFIX_LEN, st)
             : s2v_start(s, NULL, d)
               && pcb_siv_encrypt(&s->ek->siv, d, (const uint8_t *)name, len, blob + PREFIX_LEN);
    STAGE_END(s, PCB_STAGE_SIV);
    if (ok && in_place)
        out->len = blob_len;
    else if (ok)
        append_stored(s, out, blob, blob_len);
    if (!in_place && blob != stackbuf)
        pcb_wipe_free(blob, blob_len);
    if (!ok)
        return s->codec.bk_names ? 0 : pcb_fail_openssl(st, "AES-SIV name encryption");
    return !out->failed || pcb_oom(st);
}

void pcb_codec_describe(const pcb_store *s, const rec_header *r, char *out, size_t cap)
{
    size_t nl = r->name_len & LEN_MASK;
    if (s->codec.names == PCB_NAMES_SIV && !(r->name_len & NAME_TEXT_BIT)) {
        char text[48];
        size_t n = nl < 33 ? nl : 33; /* 33 raw bytes -> 44 Base64 characters */
        size_t tl = pcb_b64_encode(rec_name(r), n, text);
        snprintf(out, cap, "%.*s%s", (int)tl, text, n < nl ? "..." : "");
    } else {
        snprintf(out, cap, "%.*s%s", (int)(nl < 44 ? nl : 44), (const char *)rec_name(r),
                 nl > 44 ? "..." : "");
    }
}

/* Said of a name that does not open: no plain name reaches its entry. */
#define UNREACHABLE "; no name reaches the entry: an editor's remove_unreadable() removes it"

/* A DecryptionError naming the entry: "<path>: entry '<name>'<what>". */
static int entry_error(const pcb_store *s, const rec_header *r, const char *what, pcb_status *st)
{
    char who[64];
    pcb_codec_describe(s, r, who, sizeof who);
    return pcb_fail(st, PCB_E_DECRYPT, "%s: entry '%s'%s", s->path, who, what);
}

/* The record's text decoded from Base64 into a new allocation (*out,
 * *out_len): 1, 0 if it is not valid Base64, -1 out of memory (st set). */
static int decode_text(const uint8_t *text, size_t len, uint8_t **out, size_t *out_len,
                       pcb_status *st)
{
    *out = malloc(pcb_b64_decoded_max(len));
    if (*out == NULL)
        return pcb_oom(st) - 1;
    *out_len = pcb_b64_decode((const char *)text, len, *out);
    if (*out_len != (size_t)-1)
        return 1;
    free(*out);
    *out = NULL;
    return 0;
}

static size_t no_name_opens(pcb_store *s);

/* The plain name of record r; *auth_failed (may be NULL) set when its
 * AES-SIV did not authenticate. probe: the message for such a failure
 * checks whether any other name opens (no_name_opens). */
static int plain_name(pcb_store *s, const rec_header *r, pcb_buf *out, pcb_status *st,
                      int probe, int *auth_failed)
{
    const uint8_t *n = rec_name(r);
    size_t nl = r->name_len & LEN_MASK;
    uint8_t *decoded = NULL;
    out->len = 0;
    if (pcb_buf_reserve(out, nl + 1) == NULL) /* data is never NULL, even for "" */
        return pcb_oom(st);
    if (s->codec.names == PCB_NAMES_PLAIN) {
        pcb_buf_append(out, (const char *)n, nl);
        return !out->failed || pcb_oom(st);
    }
    if (s->codec.names == PCB_NAMES_SIV_TEXT) {
        int rc = decode_text(n, nl, &decoded, &nl, st);
        if (rc <= 0)
            return rc < 0 ? 0 : entry_error(s, r, ": the name is not valid Base64 (corrupted)"
                                            UNREACHABLE, st);
        n = decoded;
    } else if (r->name_len & NAME_TEXT_BIT) {
        return entry_error(s, r, ": the name is not valid Base64 (corrupted)" UNREACHABLE, st);
    }
    int ok = 1, rc = 0, tried = 0, other_tried = 0, failed_auth = 0;
    char *p = NULL;
    size_t pos = 0, skip = 0;
    const pcb_tink_keyset *ks = s->ek->keyset[PCB_KS_KEY];
    const pcb_tink_key *e;
    /* Every key that may have sealed it, as Tink's primitive set: prefixed
     * keys matching its first 5 bytes, then RAW keys (pcb_keyset_next). */
    while (ok && rc == 0 && (e = pcb_keyset_next(ks, n, nl, &pos, &skip)) != NULL) {
        if (nl - skip < 16)
            continue;
        if (p == NULL && (p = pcb_buf_reserve(out, nl - 16 + 1)) == NULL) {
            ok = pcb_oom(st);
            break;
        }
        /* The primary runs on the store's keyed state; any other key on its own. */
        const uint8_t *key = e->key_id == ks->primary_key_id ? NULL : e->key_value;
        uint8_t d[16];
        tried = 1;
        other_tried |= key != NULL;
        if (s->codec.bk_names) {
            rc = pcb_codec_bk_siv_open(s, key, n + skip, nl - skip, (uint8_t *)p, st);
            if (rc < 0)
                ok = 0;
        } else if (!s2v_start(s, key, d)) {
            ok = pcb_fail_openssl(st, "AES-SIV");
        } else if ((rc = pcb_siv_decrypt(&s->ek->siv, d, n + skip, nl - skip, (uint8_t *)p)) < 0) {
            ok = pcb_fail_openssl(st, "AES-SIV name decryption");
        }
        if (ok && rc == 1)
            out->len = nl - skip - 16;
    }
    if (ok && !tried) {
        ok = entry_error(s, r, ": the name is not sealed by this store's key keyset (wrong "
                         "prefix, key id or length)" UNREACHABLE, st);
    } else if (ok && rc == 0) {
        ok = 0;
        failed_auth = 1; /* the message below, with the primary key back */
    }
    if (other_tried && !s->codec.bk_names
        && !pcb_siv_set_key(&s->ek->siv, s->ek->siv_key, SIV_KEY_LEN)
        && (ok || failed_auth)) { /* the primary back */
        ok = pcb_fail_openssl(st, "AES-SIV key setup");
        failed_auth = 0;
    }
    free(decoded);
    if (auth_failed != NULL)
        *auth_failed = failed_auth;
    size_t none_of = failed_auth && probe ? no_name_opens(s) : 0; /* issue 17: renamed, a link */
    if (none_of >= 2)
        pcb_fail(st, PCB_E_DECRYPT, "%s: no entry's name opens under the store name '%s' (%zu "
                 "tried): the file was probably written under another store name (was it "
                 "renamed or reached through a link?); nothing is tampered-checked: open it by its "
                 "original base name (remove_unreadable() would drop every entry)", s->path,
                 s->store_name, none_of);
    else if (none_of == 1) { /* the only name: tampered, or another store name */
        char what[320];
        snprintf(what, sizeof what, ": the name failed authentication (tampered, or the file was "
                 "written under another store name than '%s': was it renamed or reached through "
                 "a link?)" UNREACHABLE, s->store_name);
        entry_error(s, r, what, st);
    } else if (failed_auth)
        entry_error(s, r, ": the name failed authentication (tampered)" UNREACHABLE, st);
    return ok;
}

int pcb_codec_plain_name(pcb_store *s, const rec_header *r, pcb_buf *out, pcb_status *st)
{
    return plain_name(s, r, out, st, 1, NULL);
}

/* After a name failed authentication: how many names sealed by this
 * store's key keyset failed too, of the first 64 tried, when none of them
 * opens under this store name (as when the file was written under another
 * name); 0 if one opens (the failure is then that entry's own). */
static size_t no_name_opens(pcb_store *s)
{
    const rec_header *r;
    pcb_buf tmp;
    size_t tried = 0;
    pcb_buf_init(&tmp);
    PCB_MAP_FOREACH(&s->map, r) {
        pcb_status ignored = {0};
        int auth_failed = 0;
        if (plain_name(s, r, &tmp, &ignored, 0, &auth_failed)) {
            tried = 0;
            break;
        }
        if (auth_failed && ++tried == 64)
            break; /* others may open, but the first 64 tell */
    }
    pcb_buf_free(&tmp);
    return tried;
}

/* ------------------------------------------------------------- values */

const uint8_t *pcb_codec_value_aad(pcb_store *s, const uint8_t *sname, size_t slen,
                                   size_t *aad_len)
{
    if (s->codec.names == PCB_NAMES_SIV) { /* the file's text of the raw blob */
        s->scratch.len = 0;
        char *p = pcb_buf_reserve(&s->scratch, pcb_b64_encoded_len(slen));
        if (p == NULL)
            return NULL;
        *aad_len = pcb_b64_encode(sname, slen, p);
        return (const uint8_t *)p;
    }
    *aad_len = slen;
    return slen ? sname : (const uint8_t *)""; /* an empty plain name is a valid AAD */
}

int pcb_codec_seal_value(pcb_store *s, const uint8_t *aad, size_t aad_len, const uint8_t *pt,
                         size_t len, pcb_buf *out, pcb_status *st)
{
    out->len = 0;
    switch (s->codec.values) {
    case PCB_VALUES_PLAIN:
        pcb_buf_append(out, (const char *)pt, len);
        return !out->failed || pcb_oom(st);
    case PCB_VALUES_B64_TEXT: {
        char *p = pcb_buf_reserve(out, pcb_b64_encoded_len(len) + 1);
        if (p == NULL)
            return pcb_oom(st);
        out->len = pcb_b64_encode(pt, len, p);
        return 1;
    }
    default:
        break;
    }
    const size_t blob_len = PREFIX_LEN + NONCE_LEN + len + TAG_LEN;
    uint8_t *blob = malloc(blob_len), nonce[NONCE_LEN];
    if (blob == NULL)
        return pcb_oom(st);
    STAGE_BEGIN(s);
    int ok = pcb_codec_nonce(s, nonce, st);
    STAGE_END(s, PCB_STAGE_NONCE);
    blob[0] = 0x01;
    memcpy(blob + 1, s->ek->value_kid, 4);
    if (s->codec.bk_values)
        ok = ok && pcb_codec_bk_seal(s, nonce, aad, aad_len, pt, len, blob + PREFIX_LEN, st);
    else
        ok = ok && pcb_store_seal(s->ek->value.enc,
                                  s->codec.per_call_setup ? s->ek->value_key : NULL,
                                  nonce, aad, aad_len, pt, len, blob + PREFIX_LEN, st);
    STAGE_END(s, PCB_STAGE_AEAD);
    if (ok)
        append_stored(s, out, blob, blob_len);
    free(blob);
    return ok && (!out->failed || pcb_oom(st));
}

/* The value blob in[0..len) (no prefix) opened with key e of the value
 * keyset into p: 1, 0 not authentic, -1 failure (st set). */
static int open_with_key(pcb_store *s, const pcb_tink_key *e, const uint8_t *aad,
                         size_t aad_len, const uint8_t *in, size_t len, uint8_t *p,
                         pcb_status *st)
{
    /* Keys of the primary's id are of the option's type (pcb_keyset_open refuses
     * anything else), so only the others need the type check (a strcmp). */
    const int primary = e->key_id == s->ek->keyset[PCB_KS_VALUE]->primary_key_id;
    if (!primary && pcb_keyset_is_other_type(s, PCB_KS_VALUE, e)) {
        /* A non-primary key of the other AEAD (keyset.h): its own contexts, on OpenSSL. */
        const EVP_CIPHER *c = pcb_codec_other_aead(s);
        pcb_aead_pair tmp = {NULL, NULL};
        if (c == NULL) /* this OpenSSL lacks it: nothing opens under that key */
            return 0;
        if (!pcb_aead_pair_new(&tmp, c, e->key_value, st))
            return -1;
        int rc = pcb_store_unseal(tmp.dec, NULL, aad, aad_len, in, len, p, st);
        pcb_aead_pair_free(&tmp);
        return rc;
    }
    if (s->codec.bk_values)
        return pcb_codec_bk_unseal(s, primary ? NULL : e->key_value, aad, aad_len, in, len, p, st);
    const uint8_t *key = !primary ? e->key_value
                         : s->codec.per_call_setup ? s->ek->value_key : NULL;
    int rc = pcb_store_unseal(s->ek->value.dec, key, aad, aad_len, in, len, p, st);
    if (!primary && !EVP_DecryptInit_ex2(s->ek->value.dec, NULL, s->ek->value_key, NULL, NULL))
        rc = pcb_fail_openssl(st, "AEAD key setup") - 1; /* the primary back */
    return rc;
}

/* AEAD blob v[0..vl) -> plaintext into out: tried under every key that may
 * have sealed it, in Tink's order (pcb_keyset_next). */
static int open_blob(pcb_store *s, const rec_header *r, const uint8_t *aad, size_t aad_len,
                     const uint8_t *v, size_t vl, pcb_buf *out, pcb_status *st)
{
    const pcb_tink_keyset *ks = s->ek->keyset[PCB_KS_VALUE];
    const pcb_tink_key *e;
    size_t pos = 0, skip = 0;
    uint8_t *p = NULL;
    int rc = 0, tried = 0;
    STAGE_BEGIN(s);
    while (rc == 0 && (e = pcb_keyset_next(ks, v, vl, &pos, &skip)) != NULL) {
        if (vl - skip < NONCE_LEN + TAG_LEN)
            continue;
        if (p == NULL && (p = (uint8_t *)pcb_buf_reserve(out, vl - NONCE_LEN - TAG_LEN + 1)) == NULL)
            return pcb_oom(st);
        tried = 1;
        rc = open_with_key(s, e, aad, aad_len, v + skip, vl - skip, p, st);
    }
    STAGE_END(s, PCB_STAGE_AEAD);
    if (rc < 0)
        return 0;
    if (!tried)
        return entry_error(s, r, ": the value is not sealed by this store's value keyset "
                           "(wrong prefix, key id or length)", st);
    if (rc == 0)
        return entry_error(s, r, ": the value failed authentication (tampered, or moved "
                           "from another entry)", st);
    out->len = vl - skip - NONCE_LEN - TAG_LEN;
    return 1;
}

static int open_value(pcb_store *s, const rec_header *r, const uint8_t *aad, size_t aad_len,
                      pcb_buf *out, pcb_status *st)
{
    const uint8_t *v = rec_value(r);
    size_t vl = r->value_len;
    out->len = 0;
    if (!s->codec.records_text) { /* raw records: plaintext or a raw blob */
        if (r->name_len & BAD_BIT)
            return entry_error(s, r, r->name_len & NAME_TEXT_BIT
                               ? ": the name is not valid Base64 (corrupted)"
                               : ": the value is not valid Base64 (corrupted)", st);
        if (s->codec.values == PCB_VALUES_PLAIN) {
            pcb_buf_append(out, (const char *)v, vl);
            return !out->failed || pcb_oom(st);
        }
        return open_blob(s, r, aad, aad_len, v, vl, out, st);
    }
    /* ESP decodes the stored Base64 String each time. */
    uint8_t *decoded;
    STAGE_BEGIN(s);
    int ok = decode_text(v, vl, &decoded, &vl, st);
    STAGE_END(s, PCB_STAGE_BASE64);
    if (ok <= 0)
        return ok < 0 ? 0 : entry_error(s, r, ": the value is not valid Base64 (corrupted)", st);
    if (s->codec.values == PCB_VALUES_B64_TEXT) { /* the Base64 text was all there was */
        pcb_buf_append(out, (const char *)decoded, vl);
        ok = !out->failed || pcb_oom(st);
    } else {
        ok = open_blob(s, r, aad, aad_len, decoded, vl, out, st);
    }
    free(decoded);
    return ok;
}

int pcb_codec_open_value(pcb_store *s, const rec_header *r, const uint8_t *aad, size_t aad_len,
                         pcb_buf *out, pcb_status *st)
{
    if (!open_value(s, r, aad, aad_len, out, st))
        return 0;
    /* An entry of ESP's layout may hold anything that opens (values='none'
     * has no tag at all): a value no reader could take is this entry's
     * error, named, not a nameless one later. (Plain stores and the sealed
     * map build their values from typed XML elements, always well formed.) */
    if (s->codec.file == PCB_FILE_ENTRIES
        && !pcb_value_check((const uint8_t *)out->data, out->len)) {
        OPENSSL_cleanse(out->data, out->len);
        out->len = 0;
        return entry_error(s, r, ": the value is not a valid serialization (unknown type id, "
                           "bad lengths or invalid UTF-8: corrupted)", st);
    }
    return 1;
}

/* ------------------------------------------- the value AEAD of the file */

static const char *aead_option(const EVP_CIPHER *c, const pcb_evp_cache *cache)
{
    return c == cache->cipher[PCB_EVP_CHACHA20_POLY1305] ? "'chacha20-poly1305'" : "'gcm'";
}

const EVP_CIPHER *pcb_codec_other_aead(const pcb_store *s)
{
    return s->ek->value_cipher == s->cache->cipher[PCB_EVP_AES256_GCM]
           ? s->cache->cipher[PCB_EVP_CHACHA20_POLY1305]
           : s->cache->cipher[PCB_EVP_AES256_GCM];
}

int pcb_codec_aead_mismatch(const pcb_store *s, pcb_status *st)
{
    return pcb_fail(st, PCB_E_FORMAT, "%s: its values are sealed with value_encryption=%s, but "
                    "the store was opened with value_encryption=%s; open it with the option it "
                    "was created with", s->path, aead_option(pcb_codec_other_aead(s), s->cache),
                    aead_option(s->ek->value_cipher, s->cache));
}

/* 1 the value opens with dec, 0 it does not authenticate, -1 it cannot
 * tell (not a well-formed blob: the entry's own error when read), -2 a
 * failure (st set). */
static int probe_value(pcb_store *s, const rec_header *r, EVP_CIPHER_CTX *dec, pcb_buf *out,
                       pcb_status *st)
{
    const uint8_t *v = rec_value(r), *aad;
    size_t vl = r->value_len, aad_len;
    uint8_t *decoded = NULL;
    if (r->name_len & BAD_BIT)
        return -1;
    if (s->codec.records_text) {
        int rc = decode_text(v, vl, &decoded, &vl, st);
        if (rc <= 0)
            return rc < 0 ? -2 : -1;
        v = decoded;
    }
    int rc = -1;
    aad = pcb_codec_value_aad(s, rec_name(r), r->name_len & LEN_MASK, &aad_len);
    if (aad == NULL)
        rc = pcb_oom(st) - 2;
    else if (vl >= PREFIX_LEN + NONCE_LEN + TAG_LEN && v[0] == 0x01
             && memcmp(v + 1, s->ek->value_kid, 4) == 0) {
        uint8_t *p = (uint8_t *)pcb_buf_reserve(out, vl - PREFIX_LEN - NONCE_LEN - TAG_LEN + 1);
        if (p == NULL)
            rc = pcb_oom(st) - 2;
        else {
            rc = pcb_store_unseal(dec, s->codec.per_call_setup ? s->ek->value_key : NULL, aad,
                                  aad_len,
                                  v + PREFIX_LEN, vl - PREFIX_LEN, p, st);
            OPENSSL_cleanse(p, vl - PREFIX_LEN - NONCE_LEN - TAG_LEN);
            if (rc < 0)
                rc = -2;
        }
    }
    free(decoded);
    return rc;
}

#define PROBE_MAX 64 /* entries tried before giving up (each failing under both AEADs) */

int pcb_codec_check_value_aead(pcb_store *s, pcb_status *st)
{
    if (s->codec.values != PCB_VALUES_AEAD && s->codec.values != PCB_VALUES_AEAD_TEXT)
        return 1;
    const EVP_CIPHER *other = pcb_codec_other_aead(s);
    pcb_aead_pair alt = {NULL, NULL};
    pcb_buf out;
    const rec_header *r;
    int tried = 0, verdict = 1; /* 1 accept, 0 refuse, -2 failure */
    pcb_buf_init(&out);
    PCB_MAP_FOREACH(&s->map, r) {
        int rc = probe_value(s, r, s->ek->value.dec, &out, st);
        if (rc == 1 || rc == -2) {
            verdict = rc == 1 ? 1 : -2;
            break;
        }
        if (rc < 0)
            continue; /* malformed: says nothing about the AEAD */
        if (other == NULL) /* this OpenSSL lacks the other AEAD: the entry's own error */
            break;
        if (alt.dec == NULL && !pcb_aead_pair_new(&alt, other, s->ek->value_key, st)) {
            verdict = -2;
            break;
        }
        rc = probe_value(s, r, alt.dec, &out, st);
        if (rc == 1 || rc == -2) {
            verdict = rc == 1 ? 0 : -2;
            break;
        }
        if (++tried == PROBE_MAX)
            break; /* tampered entries: each raises when read */
    }
    pcb_aead_pair_free(&alt);
    pcb_buf_free(&out);
    if (verdict == 0)
        return pcb_codec_aead_mismatch(s, st);
    return verdict == 1;
}
