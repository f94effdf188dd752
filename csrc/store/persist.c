/*
 * store/persist.c — the store's file: serializing the map and loading it
 * (see persist.h).
 */
#define _GNU_SOURCE
#include "store/persist.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include <openssl/crypto.h>

#include "common/mem.h"
#include "format/b64.h"
#include "format/prefs_xml.h"
#include "format/value.h"
#include "store/codec.h"
#include "store/entries.h"
#include "store/fileio.h"
#include "store/keys.h"
#include "store/merge.h"

/* ------------------------------------------------------- serialization */

/* The plain SharedPreferences XML of a map keyed by plain names. */
static int serialize_native(const pcb_map *m, pcb_buf *b, const char *path, pcb_status *st)
{
    const rec_header *r;
    pcb_prefs_begin(b);
    PCB_MAP_FOREACH(m, r) {
        if (!pcb_value_to_xml(b, (const char *)rec_name(r), r->name_len & LEN_MASK, rec_value(r),
                              r->value_len))
            return pcb_fail(st, PCB_E_FORMAT, "%s: an entry's value is not a valid serialization", path);
    }
    pcb_prefs_end(b);
    return !b->failed || pcb_oom(st);
}

/* Appends the Base64 text of p[0..n) as a <string> element's text part:
 * into tmp (reset), returning it; NULL when out of memory. */
static const char *b64_text(pcb_buf *tmp, const uint8_t *p, size_t n, size_t *len)
{
    tmp->len = 0;
    char *t = pcb_buf_reserve(tmp, pcb_b64_encoded_len(n));
    if (t == NULL)
        return NULL;
    *len = tmp->len = pcb_b64_encode(p, n, t);
    return t;
}

/* layout='file': the whole map as plain XML, sealed as one value (AAD: the
 * store name), written as one Base64 <string>. */
static int serialize_sealed_map(pcb_store *s, pcb_buf *b, pcb_status *st)
{
    pcb_buf inner, sealed, text;
    pcb_buf_init(&inner);
    pcb_buf_init(&sealed);
    pcb_buf_init(&text);
    int ok = serialize_native(&s->map, &inner, s->path, st);
    size_t blob_len = PREFIX_LEN + NONCE_LEN + inner.len + TAG_LEN, tl;
    uint8_t *blob = ok ? (uint8_t *)pcb_buf_reserve(&sealed, blob_len) : NULL, nonce[NONCE_LEN];
    ok = ok && (blob != NULL || pcb_oom(st));
    STAGE_BEGIN(s);
    if (ok && pcb_codec_nonce(s, nonce, st)) {
        blob[0] = 0x01;
        memcpy(blob + 1, s->ek->value_kid, 4);
        ok = pcb_store_seal(s->ek->value.enc, NULL, nonce, (const uint8_t *)s->store_name,
                            s->store_name_len, (const uint8_t *)inner.data, inner.len,
                            blob + PREFIX_LEN, st);
        STAGE_END(s, PCB_STAGE_AEAD);
    } else {
        ok = 0;
    }
    const char *t = ok ? b64_text(&text, blob, blob_len, &tl) : NULL;
    if (t != NULL)
        pcb_prefs_string(b, SEALED_NAME, sizeof SEALED_NAME - 1, t, tl);
    else if (ok)
        ok = pcb_oom(st);
    STAGE_END(s, PCB_STAGE_BASE64);
    pcb_buf_free(&inner);
    pcb_buf_free(&sealed);
    pcb_buf_free(&text);
    return ok;
}

/* ESP's entries: one <string> per record, name and value as the file's text
 * (records that hold raw bytes are Base64-encoded; undecodable ones kept
 * from the load are written back as they were). */
static int serialize_entries(pcb_store *s, pcb_buf *b, pcb_status *st)
{
    const rec_header *r;
    pcb_buf tn, tv;
    int ok = 1;
    pcb_buf_init(&tn);
    pcb_buf_init(&tv);
    PCB_MAP_FOREACH(&s->map, r) {
        const char *name = (const char *)rec_name(r), *value = (const char *)rec_value(r);
        size_t nl = r->name_len & LEN_MASK, vl = r->value_len;
        if (!s->codec.records_text) {
            if (s->codec.names == PCB_NAMES_SIV && !(r->name_len & NAME_TEXT_BIT))
                name = b64_text(&tn, rec_name(r), nl, &nl);
            if (!(r->name_len & BAD_BIT)) /* values are Base64 in the file */
                value = b64_text(&tv, rec_value(r), vl, &vl);
            if (name == NULL || value == NULL) {
                ok = pcb_oom(st);
                break;
            }
        }
        pcb_prefs_string(b, name, nl, value, vl);
    }
    pcb_buf_free(&tn);
    pcb_buf_free(&tv);
    return ok;
}

/* The file's bytes for the current state (lock held). */
static int serialize(pcb_store *s, pcb_buf *b, pcb_status *st)
{
    PCB_ASSERT_LOCKED(s);
    b->len = 0;
    if (s->codec.file == PCB_FILE_NATIVE)
        return serialize_native(&s->map, b, s->path, st);
    pcb_prefs_begin(b);
    if (s->codec.key_keyset)
        pcb_prefs_string(b, KEY_KEYSET, sizeof KEY_KEYSET - 1, pcb_keys_text(s, 0)->data,
                         pcb_keys_text(s, 0)->len);
    if (s->codec.value_keyset)
        pcb_prefs_string(b, VALUE_KEYSET, sizeof VALUE_KEYSET - 1, pcb_keys_text(s, 1)->data,
                         pcb_keys_text(s, 1)->len);
    int ok = s->codec.file == PCB_FILE_SEALED_MAP ? serialize_sealed_map(s, b, st)
                                                  : serialize_entries(s, b, st);
    pcb_prefs_end(b);
    return ok && (!b->failed || pcb_oom(st));
}

int pcb_persist_serialize(pcb_store *s, pcb_buf *b, pcb_status *st)
{
    return serialize(s, b, st);
}

int pcb_persist_write_bytes(pcb_store *s, const pcb_buf *b, pcb_status *st)
{
    PCB_ASSERT(pcb_share_held(s)); /* a transaction's (txn.c), or a new store's load */
    PCB_ASSERT_UNLOCKED(s);
    /* Timed without the lock, added under it (the stage clocks are the lock's). */
    uint64_t t0 = pcb_clock_ns();
    int ok = pcb_atomic_write(s->path, s->dir, b->data, b->len, 0600, st);
    uint64_t dt = pcb_clock_ns() - t0;
    pcb_store_lock(s);
    if (s->stages_on)
        s->stage_ns[PCB_STAGE_IO] += dt;
    pcb_store_unlock(s);
    return ok;
}

/* ------------------------------------------------------------- loading */

#define LOAD_AHEAD 16 /* records appended before their slot is needed */

typedef struct {
    pcb_store *s;
    pcb_map *m; /* the map records go into: the store's, or a merge's fresh one */
    pcb_status *st;
    pcb_keyset_text keysets;
    char *sealed_text;
    size_t sealed_len;
    pcb_buf value; /* scratch for serializations */
    uint8_t *dec;  /* scratch for Base64 decoding */
    size_t dec_cap;
    int into_plain; /* parsing the inner map of layout=file */
    /* records appended but not yet filed in the table, oldest at ahead_head */
    struct {
        uint64_t h;
        uint32_t ref;
    } ahead[LOAD_AHEAD];
    size_t n_ahead, ahead_head;
} load_ctx;

static uint8_t *dec_scratch(load_ctx *c, size_t n)
{
    if (n > c->dec_cap) {
        size_t cap = c->dec_cap ? c->dec_cap : 256;
        while (cap < n)
            cap *= 2;
        uint8_t *p = malloc(cap);
        if (p == NULL)
            return NULL;
        pcb_wipe_free(c->dec, c->dec_cap);
        c->dec = p;
        c->dec_cap = cap;
    }
    return c->dec;
}

/* Files the oldest appended record in the table; 0 with the error set if
 * its name is already there. */
static int load_file_oldest(load_ctx *c)
{
    pcb_map *m = c->m;
    uint64_t h = c->ahead[c->ahead_head].h;
    uint32_t ref = c->ahead[c->ahead_head].ref;
    c->ahead_head = (c->ahead_head + 1) % LOAD_AHEAD;
    c->n_ahead--;
    if (pcb_map_file_record(m, ref, h))
        return 1;
    char who[64];
    pcb_codec_describe(c->s, rec_at(m, ref), who, sizeof who);
    return pcb_fail(c->st, PCB_E_FORMAT, "%s: entry '%s' appears twice (duplicate name)",
                    c->s->path, who);
}

static int load_flush(load_ctx *c)
{
    while (c->n_ahead > 0)
        if (!load_file_oldest(c))
            return 0;
    return 1;
}

/* Room in the table for one more record besides the queued ones; growing
 * it rebuilds from the arena, so everything queued is filed first. */
static int load_room(load_ctx *c)
{
    pcb_map *m = c->m;
    if ((m->live + m->tombs + c->n_ahead + 1) * 4 <= (m->mask + 1) * 3)
        return 1;
    return load_flush(c) && (pcb_map_room_for_one(m) || pcb_oom(c->st));
}

/* Queues a record just appended: its slot is fetched now and filed
 * LOAD_AHEAD records later, when the fetch has landed. */
static int load_queue(load_ctx *c, uint32_t ref)
{
    pcb_map *m = c->m;
    const rec_header *r = rec_at(m, ref);
    uint64_t h = pcb_map_hash(m->seed, rec_name(r), r->name_len & LEN_MASK);
    __builtin_prefetch(&m->slots[h & m->mask], 1);
    if (c->n_ahead == LOAD_AHEAD && !load_file_oldest(c))
        return 0;
    size_t at = (c->ahead_head + c->n_ahead) % LOAD_AHEAD;
    c->ahead[at].h = h;
    c->ahead[at].ref = ref;
    c->n_ahead++;
    return 1;
}

/* Appends a record and queues it; 1, or 0 with the error set. */
static int load_record(load_ctx *c, const uint8_t *name, size_t nl, uint32_t flags,
                       const uint8_t *value, size_t vl)
{
    if (nl > LEN_MASK || vl > UINT32_MAX)
        return pcb_fail(c->st, PCB_E_FORMAT, "%s: an entry's name or value is too long (names "
                        "up to 512 MiB, values up to 4 GiB)", c->s->path);
    if (!load_room(c))
        return 0;
    uint32_t ref = pcb_map_append(c->m, name, nl, flags, value, vl);
    return ref != 0 ? load_queue(c, ref) : pcb_oom(c->st);
}

/* A plain store's entry (or one of layout='file''s sealed map): the
 * plaintext serialization under the plain name. */
static int load_native(load_ctx *c, const pcb_pref_entry *e)
{
    if (pcb_reserved_name(e->name, e->name_len))
        return pcb_fail(c->st, PCB_E_FORMAT, "%s holds keysets: it is an encrypted store; "
                        "open it with encrypted=True", c->s->path);
    pcb_value_from_entry(&c->value, e);
    if (c->value.failed)
        return pcb_oom(c->st);
    return load_record(c, (const uint8_t *)e->name, e->name_len, 0,
                       (const uint8_t *)c->value.data, c->value.len);
}

/* Keeps the text of a special entry (a keyset, the sealed map) once. */
static int keep_text(load_ctx *c, const pcb_pref_entry *e, char **text, size_t *len)
{
    if (*text != NULL)
        return pcb_fail(c->st, PCB_E_FORMAT, "%s: entry '%s' appears twice (duplicate name)",
                        c->s->path, e->name);
    *text = strndup(e->text, e->text_len);
    *len = e->text_len;
    return *text != NULL || pcb_oom(c->st);
}

static int is_name(const pcb_pref_entry *e, const char *name)
{
    return e->name_len == strlen(name) && memcmp(e->name, name, e->name_len) == 0;
}

/* An entry of ESP's layout, the record holding what the codec says: raw
 * bytes (lean: the Base64 undone once, here) or the file's text (faithful).
 * Undecodable text is kept as is, flagged, and reported when read. */
static int load_encrypted_entry(load_ctx *c, const pcb_pref_entry *e)
{
    pcb_store *s = c->s;
    const uint8_t *name = (const uint8_t *)e->name, *value = (const uint8_t *)e->text;
    size_t nl = e->name_len, vl = e->text_len;
    if (s->codec.records_text)
        return load_record(c, name, nl, 0, value, vl);
    const int siv = s->codec.names == PCB_NAMES_SIV;
    if (siv) {
        /* The common case: Base64 decoded straight into the new record. */
        if (!load_room(c))
            return 0;
        uint8_t *rec = pcb_map_tail(c->m, pcb_b64_decoded_max(nl), pcb_b64_decoded_max(vl));
        if (rec == NULL)
            return pcb_oom(c->st);
        size_t dn = pcb_b64_decode(e->name, nl, rec);
        size_t dv = dn == (size_t)-1 ? dn : pcb_b64_decode(e->text, vl, rec + dn);
        if (dn != (size_t)-1 && dv != (size_t)-1)
            return load_queue(c, pcb_map_append_tail(c->m, dn, dv));
    }
    uint8_t *buf = dec_scratch(c, pcb_b64_decoded_max(nl) + pcb_b64_decoded_max(vl));
    if (buf == NULL)
        return pcb_oom(c->st);
    size_t dn = siv ? pcb_b64_decode(e->name, nl, buf) : nl;
    uint8_t *vbuf = buf + pcb_b64_decoded_max(nl);
    size_t dv = pcb_b64_decode(e->text, vl, vbuf);
    /* An undecodable name: both kept as the file's text. No lookup reaches
     * it (a sealed name starts with byte 0x01, which XML text cannot hold);
     * all() names it and Editor.remove_unreadable() drops it. */
    if (dn == (size_t)-1)
        return load_record(c, name, nl, NAME_TEXT_BIT | BAD_BIT, value, vl);
    /* An undecodable value: its text kept under the decoded name, so that
     * get/in/remove/put reach it by its plain name (get raises naming it). */
    if (dv == (size_t)-1)
        return load_record(c, siv ? buf : name, dn, BAD_BIT, value, vl);
    return load_record(c, siv ? buf : name, dn, 0, vbuf, dv);
}

/* The parser's callback: 0 to go on, 1 to stop (the error in c->st). */
static int load_entry(void *arg, const pcb_pref_entry *e)
{
    load_ctx *c = arg;
    pcb_store *s = c->s;
    if (s->codec.file == PCB_FILE_NATIVE || c->into_plain)
        return !load_native(c, e);
    if (e->type != PCB_PREF_STRING)
        return pcb_fail(c->st, PCB_E_FORMAT,
                        "%s: entry '%.40s' is a native <%s> element, which an encrypted store never "
                        "writes (is this a plain store? open it with encrypted=False)", s->path,
                        e->name, e->type == PCB_PREF_INT ? "int" : e->type == PCB_PREF_LONG ? "long"
                        : e->type == PCB_PREF_FLOAT ? "float" : e->type == PCB_PREF_BOOLEAN ? "boolean"
                        : "set"), 1;
    for (int k = 0; k < 2; k++)
        if (is_name(e, k ? VALUE_KEYSET : KEY_KEYSET))
            return !keep_text(c, e, &c->keysets.hex[k], &c->keysets.len[k]);
    if (s->codec.file == PCB_FILE_SEALED_MAP) {
        if (is_name(e, SEALED_NAME))
            return !keep_text(c, e, &c->sealed_text, &c->sealed_len);
        return pcb_fail(c->st, PCB_E_FORMAT, "%s: entry '%.40s' does not belong in a layout='file' "
                        "store (is it an entries store? open it with layout='entries')",
                        s->path, e->name), 1;
    }
    return !load_encrypted_entry(c, e);
}

static int parse_into(pcb_store *s, load_ctx *c, const char *data, size_t len, const char *what)
{
    char err[200];
    /* Size the map for the file up front (a line per entry at most; records
     * are no larger than their text), instead of growing it step by step. */
    size_t lines = 1;
    for (const char *q = data, *end = data + len; (q = memchr(q, '\n', (size_t)(end - q))) != NULL; q++)
        lines++;
    if ((lines > c->m->mask / 2 && !pcb_map_rehash(c->m, lines)) || !pcb_map_reserve(c->m, len))
        return pcb_oom(c->st);
    /* The map finds duplicate names itself, so the parser need not copy them all. */
    int rc = pcb_prefs_parse_flags(data, len, PCB_PREFS_ALLOW_DUPLICATES, load_entry, c, err, sizeof err);
    if (rc == 0 && !load_flush(c))
        return 0;
    if (rc == 0)
        pcb_map_trim(c->m);
    if (rc == -1)
        return pcb_fail(c->st, PCB_E_FORMAT, "%s is not a valid SharedPreferences XML file (%s): %s",
                        s->path, what, err);
    return rc == 0;
}

/* The sealed map failed authentication: 1 if it opens under the other value
 * AEAD with the same key (the store opened with the wrong value_encryption),
 * 0 if not (tampered; st set only on a failure). inner: scratch, wiped. */
static int sealed_by_other_aead(pcb_store *s, const uint8_t *blob, size_t bl, char *inner,
                                pcb_status *st)
{
    const EVP_CIPHER *other = pcb_codec_other_aead(s);
    pcb_aead_pair alt = {NULL, NULL};
    int rc = 0;
    if (other != NULL && pcb_aead_pair_new(&alt, other, s->ek->value_key, st))
        rc = pcb_store_unseal(alt.dec, NULL, (const uint8_t *)s->store_name, s->store_name_len,
                              blob + PREFIX_LEN, bl - PREFIX_LEN, (uint8_t *)inner, st);
    pcb_aead_pair_free(&alt);
    OPENSSL_cleanse(inner, bl - PREFIX_LEN - NONCE_LEN - TAG_LEN);
    return rc == 1;
}

/* layout='file': unseals the map and parses it as plain XML. */
static int load_sealed_map(pcb_store *s, load_ctx *c, pcb_status *st)
{
    size_t n = pcb_b64_decoded_max(c->sealed_len);
    uint8_t *blob = malloc(n ? n : 1);
    size_t bl = blob ? pcb_b64_decode(c->sealed_text, c->sealed_len, blob) : 0;
    char *inner = NULL;
    size_t body = 0;
    int ok = blob != NULL || pcb_oom(st);
    if (ok && (bl == (size_t)-1 || bl < PREFIX_LEN + NONCE_LEN + TAG_LEN || blob[0] != 1
               || memcmp(blob + 1, s->ek->value_kid, 4) != 0))
        ok = pcb_fail(st, PCB_E_DECRYPT, "%s: entry '%s' is corrupted (bad encoding, "
                      "prefix or key id)", s->path, SEALED_NAME);
    if (ok) {
        body = bl - PREFIX_LEN - NONCE_LEN - TAG_LEN;
        inner = malloc(body + 1);
        ok = inner != NULL || pcb_oom(st);
    }
    if (ok) {
        int rc = pcb_store_unseal(s->ek->value.dec, NULL, (const uint8_t *)s->store_name,
                                  s->store_name_len, blob + PREFIX_LEN, bl - PREFIX_LEN,
                                  (uint8_t *)inner, st);
        if (rc == 0 && sealed_by_other_aead(s, blob, bl, inner, st))
            ok = pcb_codec_aead_mismatch(s, st);
        else if (rc == 0)
            ok = st->code ? 0 : pcb_fail(st, PCB_E_DECRYPT, "%s: entry '%s' (the sealed map) "
                                         "failed authentication (tampered)", s->path, SEALED_NAME);
        else if (rc < 0)
            ok = 0;
        else {
            c->into_plain = 1;
            ok = parse_into(s, c, inner, body, "the sealed map");
        }
    }
    if (inner)
        pcb_wipe_free(inner, body + 1);
    free(blob);
    return ok;
}

/* After the file's entries: the keys (master key created only for a store
 * without keysets, so a failed open never leaves a new key file behind),
 * the sealed map, and, on first launch (*created), the file lock taken (or
 * kept from the check that the file is still as it was read) for the new
 * keysets' first write, which the opener makes at once through txn.c as
 * ESP does (pcb_txn_create), so that two processes creating one store end
 * with one set of keysets (*again = 1 when another writer got there first:
 * load again). */
static int load_keys_and_rest(pcb_store *s, load_ctx *c, int *created, int *again,
                              pcb_status *st)
{
    int has_entries = c->m->live > 0 || c->sealed_text != NULL, created_master = 0;
    int has_keysets = c->keysets.hex[0] != NULL || c->keysets.hex[1] != NULL;
    int ok = pcb_keys_check_present(s, &c->keysets, has_entries, st)
             && pcb_keys_load_master(s, !has_keysets, &created_master, st);
    if (ok && !has_keysets && (s->codec.key_keyset || s->codec.value_keyset)) {
        ok = pcb_share_lock(s, st);
        if (ok && !pcb_share_file_unchanged(s)) {
            *again = 1;
            return 0;
        }
    }
    ok = ok && pcb_keys_load(s, &c->keysets, created, st);
    *created |= created_master;
    if (ok && c->sealed_text != NULL)
        ok = load_sealed_map(s, c, st);
    else if (ok && !*created && pcb_keys_pre_tink_values(s))
        /* A Tink keyset's type URL names its AEAD (checked as it opened); an
         * earlier release's keyset text does not: its entries tell. */
        ok = pcb_codec_check_value_aead(s, st);
    if (ok && *created) /* held for the first write (pcb_txn_create) */
        ok = pcb_share_held(s) || pcb_share_lock(s, st);
    return ok;
}

static void load_ctx_free(load_ctx *c)
{
    for (int k = 0; k < 2; k++)
        pcb_wipe_free(c->keysets.hex[k], c->keysets.len[k]);
    free(c->sealed_text);
    pcb_buf_free(&c->value);
    pcb_wipe_free(c->dec, c->dec_cap);
}

int pcb_persist_load(pcb_store *s, int *created, pcb_status *st)
{
    for (int attempt = 0;; attempt++) {
        pcb_file_bytes f;
        int missing, ok, again = 0;
        load_ctx c;
        memset(&c, 0, sizeof c);
        c.s = s;
        c.m = &s->map;
        c.st = st;
        pcb_buf_init(&c.value);
        /* Readers take no lock: every write is an atomic rename, so the file
         * read is one writer's whole file; the lock file's counter and the
         * file's identity, taken first, tell a later commit whether to merge. */
        pcb_share_seen(s);
        if (!pcb_read_whole_text(s->path, MAX_FILE, "a store (4 GiB)", &f, &missing, st))
            return 0;
        ok = missing || parse_into(s, &c, f.data, f.len, "the store file");
        if (ok && s->codec.file != PCB_FILE_NATIVE)
            ok = load_keys_and_rest(s, &c, created, &again, st);
        if (!ok || !*created) /* else kept for the creation write */
            pcb_share_unlock(s);
        load_ctx_free(&c);
        pcb_file_bytes_free(&f, 0); /* ciphertext, or a plain store's own public text */
        if (!again)
            return ok;
        if (attempt == 8) {
            errno = EBUSY;
            return pcb_fail_os(st, "%s kept changing while this store was being created", s->path);
        }
        pcb_entries_reset(s); /* another writer created it meanwhile: read theirs */
    }
}

/* The file's keysets are the ones this store holds (a merge cannot mix
 * entries sealed under two keysets), or a value keyset that another
 * writer's lazy rotation extended, which this store then adopts (keys.h). */
static int same_keysets(pcb_store *s, const load_ctx *c, pcb_status *st)
{
    int empty = c->m->live == 0 && c->sealed_text == NULL;
    for (int k = 0; k < 2; k++) {
        int used = k ? s->codec.value_keyset : s->codec.key_keyset;
        const pcb_buf *ours = pcb_keys_text(s, k);
        if (c->keysets.hex[k] == NULL ? (!used || empty)
                                      : (used && c->keysets.len[k] == ours->len
                                         && memcmp(c->keysets.hex[k], ours->data, ours->len) == 0))
            continue;
        if (k == 1 && used && c->keysets.hex[k] != NULL) {
            int rc = pcb_keys_adopt_value_keyset(s, c->keysets.hex[k], c->keysets.len[k], st);
            if (rc == 1)
                continue;
            if (rc < 0)
                return 0;
        }
        return pcb_fail(st, PCB_E_FORMAT, "%s was re-keyed by another writer (rotate) or "
                        "replaced since this store read it; its entries cannot be merged: "
                        "reopen the store (nothing was written)", s->path);
    }
    return 1;
}

int pcb_persist_read_map(pcb_store *s, pcb_map *into, pcb_status *st)
{
    pcb_file_bytes f;
    int missing, ok;
    load_ctx c;
    memset(&c, 0, sizeof c);
    c.s = s;
    c.m = into;
    c.st = st;
    pcb_buf_init(&c.value);
    if (!pcb_read_whole_text(s->path, MAX_FILE, "a store (4 GiB)", &f, &missing, st))
        return 0;
    ok = missing || parse_into(s, &c, f.data, f.len, "the store file");
    if (ok && !missing && s->codec.file != PCB_FILE_NATIVE)
        ok = same_keysets(s, &c, st);
    if (ok && c.sealed_text != NULL) {
        pcb_store_lock(s); /* the value AEAD's contexts are shared with readers */
        ok = load_sealed_map(s, &c, st);
        pcb_store_unlock(s);
    }
    load_ctx_free(&c);
    pcb_file_bytes_free(&f, 0);
    return ok;
}
