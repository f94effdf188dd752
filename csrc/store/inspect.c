/*
 * store/inspect.c — a store file described without a key (see inspect.h).
 */
#include "store/inspect.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "common/bytes.h"
#include "format/b64.h"
#include "format/prefs_xml.h"
#include "store/fileio.h"
#include "store/internal.h"
#include "store/keyset.h"

typedef struct {
    pcb_inspect *out;
    const char *path;
    pcb_status *st;
    uint8_t *buf; /* Base64 scratch */
    size_t cap;
} inspect_ctx;

static int is_name(const pcb_pref_entry *e, const char *name)
{
    return e->name_len == strlen(name) && memcmp(e->name, name, e->name_len) == 0;
}

static void count_kid(pcb_kid_counts *c, uint32_t kid)
{
    for (size_t i = 0; i < c->n; i++)
        if (c->kid[i].key_id == kid) {
            c->kid[i].n++;
            return;
        }
    if (c->n == PCB_INSPECT_KIDS) {
        c->overflow++;
        return;
    }
    c->kid[c->n].key_id = kid;
    c->kid[c->n++].n = 1;
}

/* Counts a Base64 text by the key id of its Tink prefix (min: the shortest
 * blob of its kind after the prefix). 1, or 0 out of memory. */
static int count_text(inspect_ctx *c, pcb_kid_counts *k, const char *text, size_t len, size_t min)
{
    size_t need = pcb_b64_decoded_max(len) + 1;
    if (need > c->cap) {
        uint8_t *p = realloc(c->buf, need);
        if (p == NULL)
            return pcb_oom(c->st);
        c->buf = p;
        c->cap = need;
    }
    size_t n = pcb_b64_decode(text, len, c->buf);
    if (n == (size_t)-1 || n < PREFIX_LEN + min || c->buf[0] != 0x01)
        k->unprefixed++;
    else
        count_kid(k, pcb_load_be32(c->buf + 1));
    return 1;
}

static int keyset_entry(inspect_ctx *c, int which, const pcb_pref_entry *e)
{
    pcb_inspect *o = c->out;
    static const char *const entry[2] = {KEY_KEYSET, VALUE_KEYSET};
    char err[200];
    if (o->format[which] != PCB_KSFMT_ABSENT)
        return pcb_fail(c->st, PCB_E_FORMAT, "%s: entry '%s' appears twice (duplicate name)",
                        c->path, entry[which]);
    o->keyset_chars[which] = e->text_len;
    int rc = pcb_keyset_info(e->text, e->text_len, &o->info[which], err, sizeof err);
    if (rc < 0)
        return pcb_fail(c->st, PCB_E_FORMAT, "%s: entry '%s' (the %s keyset) is not a Tink "
                        "EncryptedKeyset: %s", c->path, entry[which], which ? "value" : "key", err);
    if (rc > 0)
        o->format[which] = PCB_KSFMT_TINK;
    else
        o->format[which] = e->text_len == 2 * (NONCE_LEN + 4 + (which ? VALUE_KEY_LEN : SIV_KEY_LEN)
                                               + TAG_LEN) ? PCB_KSFMT_PRE_TINK : PCB_KSFMT_TINK_NO_INFO;
    return 1;
}

static int on_entry(void *arg, const pcb_pref_entry *e)
{
    inspect_ctx *c = arg;
    pcb_inspect *o = c->out;
    if (e->type == PCB_PREF_STRING) {
        for (int k = 0; k < 2; k++)
            if (is_name(e, k ? VALUE_KEYSET : KEY_KEYSET))
                return !keyset_entry(c, k, e);
        if (is_name(e, SEALED_NAME)) {
            o->has_sealed_map = 1;
            return !count_text(c, &o->values, e->text, e->text_len, NONCE_LEN + TAG_LEN);
        }
    }
    o->entries++;
    if (e->type != PCB_PREF_STRING) {
        o->native_entries++;
        return 0;
    }
    return !count_text(c, &o->names, e->name, e->name_len, 16)
           || !count_text(c, &o->values, e->text, e->text_len, NONCE_LEN + TAG_LEN);
}

int pcb_store_inspect(const char *path, pcb_inspect *out, pcb_status *st)
{
    pcb_file_bytes f;
    int missing;
    char err[200];
    memset(out, 0, sizeof *out);
    if (!pcb_read_whole_file(path, MAX_FILE, "a store (4 GiB)", &f, &missing, st))
        return 0;
    if (missing) {
        errno = ENOENT;
        return pcb_fail_os(st, "cannot inspect %s", path);
    }
    inspect_ctx c = {out, path, st, NULL, 0};
    out->file_bytes = f.len;
    int rc = pcb_prefs_parse(f.data, f.len, on_entry, &c, err, sizeof err);
    free(c.buf);
    pcb_file_bytes_free(&f, 0);
    if (rc == -1)
        return pcb_fail(st, PCB_E_FORMAT, "%s is not a valid SharedPreferences XML file: %s",
                        path, err);
    if (rc != 0)
        return 0;
    int keysets = out->format[0] != PCB_KSFMT_ABSENT || out->format[1] != PCB_KSFMT_ABSENT;
    out->layout = !keysets ? PCB_INSPECT_PLAIN
                  : out->has_sealed_map ? PCB_INSPECT_SEALED : PCB_INSPECT_ENTRIES;
    if (!keysets) { /* a plain store's strings are not ciphertexts */
        memset(&out->names, 0, sizeof out->names);
        memset(&out->values, 0, sizeof out->values);
    }
    return 1;
}
