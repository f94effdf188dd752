/*
 * fuzz_store_load.c — libFuzzer target for the store's file loader, the
 * SharedPreferences XML parser/writer and the Base64 codec.
 *
 * The input is a store file. For each option set (plain; encrypted lean
 * SIV+GCM; faithful with the read cache; layout=file; plain names with
 * ChaCha20-Poly1305 values) it is written to "<tmp>/fuzz.xml" and opened
 * with pcb_store_open (encrypted sets use a fixed 32-byte master key file,
 * bytes 0x00..0x1f, created 0600 once per process, the key the seed corpus
 * in fuzz/corpus/fuzz_store_load/ was made with). If it opens:
 *   - pcb_store_all must not crash; every entry it hands out must be found by
 *     pcb_store_get and pcb_store_contains with the same value; a plain
 *     store's values must be well-formed serializations;
 *   - pcb_store_get of a few other names (empty, one derived from the input,
 *     a reserved keyset name) must not crash; the reserved name must be
 *     refused by an encrypted store;
 *   - when pcb_store_all succeeded: put one more entry (and, depending on a
 *     checksum of the input, remove the first one listed), commit, close and
 *     reopen with the same options: the store must open and hold exactly the
 *     expected entries (the file we write must always be one we can read
 *     back); for encrypted stores, also (by the checksum) pcb_store_rotate,
 *     close, reopen: the same entries again.
 * Also, directly on the input:
 *   - pcb_prefs_parse on an exact-size, not NUL-terminated copy; if it
 *     parses, writing the entries back with the pcb_prefs_* writer and
 *     parsing that gives the same entries (writer/parser round trip), and
 *     (where the header has it) pcb_prefs_parse_flags with
 *     PCB_PREFS_ALLOW_DUPLICATES gives the same entries too;
 *   - pcb_b64_decode of the input as text (also truncated to a multiple of
 *     4): never writes past pcb_b64_decoded_max(), and whatever decodes
 *     encodes back to exactly the input (one encoding per byte string);
 *   - pcb_b64_decode(pcb_b64_encode(x)) == x for the input's bytes.
 * A violated property abort()s with a message; ASan/UBSan catch the rest.
 *
 * PCB_FUZZ_VERBOSE=1 prints what each option set did with each input.
 * Temporary files go to $PCB_FUZZ_TMPDIR if set, else /dev/shm (tmpfs: the
 * store's fsyncs cost nothing), else $TMPDIR or /tmp, in a directory of
 * their own per process, removed at normal exit.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "format/b64.h"
#include "crypto/cipher.h"
#include "format/prefs_xml.h"
#include "store/store.h"

#define KEY_KEYSET "__androidx_security_crypto_encrypted_prefs_key_keyset__"
#define EXTRA_NAME "pcb-fuzz-extra"
#define EXTRA_TEXT "added by the fuzzer"

static pcb_evp_cache cache;
static int ready;
static int verbose; /* PCB_FUZZ_VERBOSE=1: say what each option set did */
static char tmp_dir[PATH_MAX];
static char store_path[PATH_MAX + 32];
static char key_path[PATH_MAX + 32];

#define DIE(...)                                                                \
    do {                                                                        \
        fprintf(stderr, "fuzz_store_load: PROPERTY VIOLATED: " __VA_ARGS__);    \
        fputc('\n', stderr);                                                    \
        abort();                                                                \
    } while (0)

/* --------------------------------------------------------------- set-up */

static void remove_tmp_dir(void)
{
    DIR *d = opendir(tmp_dir);
    if (d != NULL) {
        struct dirent *e;
        while ((e = readdir(d)) != NULL)
            if (strcmp(e->d_name, ".") != 0 && strcmp(e->d_name, "..") != 0)
                unlinkat(dirfd(d), e->d_name, 0);
        closedir(d);
    }
    rmdir(tmp_dir);
}

static int usable_dir(const char *d)
{
    struct stat sb;
    return d != NULL && d[0] != '\0' && stat(d, &sb) == 0 && S_ISDIR(sb.st_mode)
           && access(d, W_OK | X_OK) == 0;
}

static void setup(void)
{
    pcb_status st = {0};
    verbose = getenv("PCB_FUZZ_VERBOSE") != NULL && getenv("PCB_FUZZ_VERBOSE")[0] == '1';
    if (!pcb_evp_cache_init(&cache, &st)) {
        fprintf(stderr, "fuzz_store_load: pcb_evp_cache_init failed: %s\n", st.msg);
        abort();
    }
    const char *base = getenv("PCB_FUZZ_TMPDIR");
    if (!usable_dir(base))
        base = usable_dir("/dev/shm") ? "/dev/shm" : getenv("TMPDIR");
    if (!usable_dir(base))
        base = "/tmp";
    snprintf(tmp_dir, sizeof tmp_dir, "%s/pcb-fuzz-store-XXXXXX", base);
    if (mkdtemp(tmp_dir) == NULL) {
        perror("fuzz_store_load: mkdtemp");
        abort();
    }
    atexit(remove_tmp_dir);
    snprintf(store_path, sizeof store_path, "%s/fuzz.xml", tmp_dir);
    snprintf(key_path, sizeof key_path, "%s/master.key", tmp_dir);
    uint8_t key[32];
    for (int i = 0; i < 32; i++)
        key[i] = (uint8_t)i;
    int fd = open(key_path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
    if (fd < 0 || fchmod(fd, 0600) != 0 || write(fd, key, sizeof key) != (ssize_t)sizeof key
        || close(fd) != 0) {
        perror("fuzz_store_load: writing the master key file");
        abort();
    }
    ready = 1;
}

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
    (void)argc;
    (void)argv;
    if (!ready)
        setup();
    return 0;
}

static void write_file(const char *path, const uint8_t *data, size_t size)
{
    unlink(path);
    int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
    if (fd < 0) {
        perror("fuzz_store_load: creating the store file");
        abort();
    }
    while (size > 0) {
        ssize_t w = write(fd, data, size);
        if (w < 0) {
            if (errno == EINTR)
                continue;
            perror("fuzz_store_load: writing the store file");
            abort();
        }
        data += w;
        size -= (size_t)w;
    }
    close(fd);
}

/* ------------------------------------------------------------ entries */

typedef struct {
    char *name;
    size_t name_len;
    uint8_t *value;
    size_t value_len;
} kv;

typedef struct {
    kv *items;
    size_t n, cap;
} kv_list;

static void kv_add(kv_list *l, const char *name, size_t nl, const uint8_t *v, size_t vl)
{
    if (l->n == l->cap) {
        l->cap = l->cap ? 2 * l->cap : 16;
        l->items = realloc(l->items, l->cap * sizeof *l->items);
        if (l->items == NULL)
            abort();
    }
    kv *e = &l->items[l->n++];
    e->name = malloc(nl + 1);
    e->value = malloc(vl + 1);
    if (e->name == NULL || e->value == NULL)
        abort();
    if (nl) /* pcb_store_all may pass NULL for an empty name */
        memcpy(e->name, name, nl);
    e->name[nl] = '\0';
    if (vl)
        memcpy(e->value, v, vl);
    e->name_len = nl;
    e->value_len = vl;
}

static void kv_free(kv_list *l)
{
    for (size_t i = 0; i < l->n; i++) {
        free(l->items[i].name);
        free(l->items[i].value);
    }
    free(l->items);
    memset(l, 0, sizeof *l);
}

static int kv_cmp(const void *a, const void *b)
{
    const kv *x = a, *y = b;
    size_t n = x->name_len < y->name_len ? x->name_len : y->name_len;
    int c = memcmp(x->name, y->name, n);
    if (c != 0)
        return c;
    return x->name_len < y->name_len ? -1 : x->name_len > y->name_len;
}

static int collect(void *arg, const char *name, size_t nl, const uint8_t *v, size_t vl)
{
    kv_add(arg, name, nl, v, vl);
    return 0;
}

static uint32_t be32(const uint8_t *p)
{
    return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3];
}

/* 1 if v is a well-formed plaintext serialization (pcb_store.h). */
static int valid_serialization(const uint8_t *v, size_t vl)
{
    if (vl < 4)
        return 0;
    uint32_t type = be32(v);
    const uint8_t *p = v + 4;
    size_t n = vl - 4;
    switch (type) {
    case PCB_PREF_STRING: return n >= 4 && be32(p) == n - 4;
    case PCB_PREF_INT: case PCB_PREF_FLOAT: return n == 4;
    case PCB_PREF_LONG: return n == 8;
    case PCB_PREF_BOOLEAN: return n == 1 && p[0] <= 1;
    case PCB_PREF_STRING_SET:
        for (size_t off = 0; off < n;) {
            if (n - off < 4 || be32(p + off) > n - off - 4)
                return 0;
            off += 4 + be32(p + off);
        }
        return 1;
    default: return 0;
    }
}

/* -------------------------------------------------------- store checks */

typedef struct {
    const char *label;
    pcb_store_options opt;
} option_set;

static option_set sets[] = {
    {"plain", {.encrypted = 0}},
    {"lean", {.encrypted = 1, .key_enc = PCB_KEYENC_SIV, .value_enc = PCB_VALENC_GCM,
              .layout = PCB_LAYOUT_ENTRIES}},
    {"faithful+cache", {.encrypted = 1, .key_enc = PCB_KEYENC_SIV, .value_enc = PCB_VALENC_GCM,
                        .layout = PCB_LAYOUT_ENTRIES, .faithful = 1, .cache = 1}},
    {"file", {.encrypted = 1, .key_enc = PCB_KEYENC_SIV, .value_enc = PCB_VALENC_GCM,
              .layout = PCB_LAYOUT_FILE}},
    {"names-plain+chacha", {.encrypted = 1, .key_enc = PCB_KEYENC_NONE,
                            .value_enc = PCB_VALENC_CHACHA, .layout = PCB_LAYOUT_ENTRIES}},
};
#define N_SETS (sizeof sets / sizeof sets[0])

static void check_get(pcb_store *s, const option_set *os, const char *name, size_t nl,
                      const uint8_t *want, size_t want_len)
{
    pcb_buf out;
    pcb_status st = {0};
    int found = 0;
    pcb_buf_init(&out);
    int ok = pcb_store_get(s, name, nl, &out, &found, &st);
    if (want != NULL) {
        if (!ok || !found)
            DIE("[%s] entry '%.*s' listed by pcb_store_all is not found by pcb_store_get "
                "(ok=%d found=%d: %s)", os->label, (int)nl, name, ok, found, st.msg);
        if (out.len != want_len || memcmp(out.data, want, want_len) != 0)
            DIE("[%s] entry '%.*s': pcb_store_get and pcb_store_all disagree on its value",
                os->label, (int)nl, name);
        memset(&st, 0, sizeof st);
        found = 0;
        if (!pcb_store_contains(s, name, nl, &found, &st) || !found)
            DIE("[%s] entry '%.*s' listed by pcb_store_all: pcb_store_contains says absent",
                os->label, (int)nl, name);
    } else if (ok && found && !valid_serialization((const uint8_t *)out.data, out.len)
               && !os->opt.encrypted) {
        DIE("[%s] entry '%.*s': pcb_store_get returned a malformed serialization", os->label,
            (int)nl, name);
    }
    pcb_buf_free(&out);
}

/* want (sorted) and got (sorted here) hold the same entries. */
static void same_entries(const option_set *os, const char *what, const kv_list *want, kv_list *got)
{
    if (got->n != want->n)
        DIE("[%s] %s %zu entries, read back %zu", os->label, what, want->n, got->n);
    qsort(got->items, got->n, sizeof(kv), kv_cmp);
    for (size_t i = 0; i < want->n; i++) {
        const kv *x = &want->items[i], *y = &got->items[i];
        if (kv_cmp(x, y) != 0)
            DIE("[%s] %s entry '%s', read back '%s'", os->label, what, x->name, y->name);
        if (x->value_len != y->value_len || memcmp(x->value, y->value, x->value_len) != 0)
            DIE("[%s] entry '%s': the value read back differs from the one %s", os->label,
                x->name, what);
    }
}

static pcb_store *open_store(const option_set *os, pcb_status *st)
{
    pcb_store_options opt = os->opt;
    if (opt.encrypted)
        opt.master_key_file = key_path;
    memset(st, 0, sizeof *st);
    return pcb_store_open(store_path, &opt, &cache, NULL, st);
}

static void fuzz_store(const option_set *os, const uint8_t *data, size_t size, unsigned flags)
{
    pcb_status st;
    write_file(store_path, data, size);
    pcb_store *s = open_store(os, &st);
    if (verbose)
        fprintf(stderr, "[%s] open: %s\n", os->label, s ? "ok" : st.msg);
    if (s == NULL) {
        if (st.code == PCB_OK)
            DIE("[%s] pcb_store_open failed without an error", os->label);
        return;
    }
    kv_list before = {0};
    memset(&st, 0, sizeof st);
    int all_ok = pcb_store_all(s, collect, &before, &st);
    if (verbose)
        fprintf(stderr, "[%s] all: %zu entries, %s\n", os->label, before.n, all_ok ? "ok" : st.msg);
    if (!all_ok && st.code == PCB_OK)
        DIE("[%s] pcb_store_all failed without an error", os->label);
    if (all_ok && before.n != pcb_store_count(s))
        DIE("[%s] pcb_store_all listed %zu entries, pcb_store_count says %zu", os->label,
            before.n, pcb_store_count(s));
    for (size_t i = 0; i < before.n; i++) {
        const kv *e = &before.items[i];
        if (!os->opt.encrypted && !valid_serialization(e->value, e->value_len))
            DIE("[%s] entry '%s' has a malformed serialization", os->label, e->name);
        if (i < 8)
            check_get(s, os, e->name, e->name_len, e->value, e->value_len);
    }
    /* Other names: empty, one from the input, and a reserved one. */
    check_get(s, os, "", 0, NULL, 0);
    check_get(s, os, (const char *)data, size < 24 ? size : 24, NULL, 0);
    {
        pcb_buf out;
        int found;
        pcb_buf_init(&out);
        memset(&st, 0, sizeof st);
        int ok = pcb_store_get(s, KEY_KEYSET, sizeof KEY_KEYSET - 1, &out, &found, &st);
        if (os->opt.encrypted && (ok || st.code != PCB_E_RESERVED))
            DIE("[%s] reading the reserved name %s was not refused", os->label, KEY_KEYSET);
        pcb_buf_free(&out);
    }

    if (all_ok) {
        /* What we commit we must be able to read back. */
        int had_extra = 0;
        memset(&st, 0, sizeof st);
        if (!pcb_store_contains(s, EXTRA_NAME, sizeof EXTRA_NAME - 1, &had_extra, &st))
            DIE("[%s] pcb_store_contains failed: %s", os->label, st.msg);
        uint8_t value[4 + 4 + sizeof EXTRA_TEXT - 1] = {0, 0, 0, PCB_PREF_STRING, 0, 0, 0,
                                                         sizeof EXTRA_TEXT - 1};
        memcpy(value + 8, EXTRA_TEXT, sizeof EXTRA_TEXT - 1);
        pcb_edit *e = pcb_edit_new(s, &st);
        if (e == NULL)
            DIE("[%s] pcb_edit_new failed: %s", os->label, st.msg);
        memset(&st, 0, sizeof st);
        int committed = pcb_edit_put(e, EXTRA_NAME, sizeof EXTRA_NAME - 1, value, sizeof value, &st);
        /* Sometimes also remove the first entry listed (tombstones, compaction). */
        if (committed && (flags & 1) && before.n > 0 && !(before.items[0].name_len == sizeof EXTRA_NAME - 1
                && memcmp(before.items[0].name, EXTRA_NAME, sizeof EXTRA_NAME - 1) == 0)) {
            committed = pcb_edit_remove(e, before.items[0].name, before.items[0].name_len, &st);
            if (committed) {
                kv last = before.items[--before.n];
                free(before.items[0].name);
                free(before.items[0].value);
                before.items[0] = last;
            }
        }
        committed = committed && pcb_edit_commit(e, 1, &st);
        pcb_edit_free(e);
        if (!committed) {
            /* Everything that loaded is writable: a plain store's values are
             * serializations of parsed elements, an encrypted store's records
             * are the file's own (validated) text or bytes. */
            DIE("[%s] committing one more entry to a store that loaded fine failed "
                "(class %d): %s", os->label, (int)st.code, st.msg);
        }
        memset(&st, 0, sizeof st);
        if (!pcb_store_close(s, &st))
            DIE("[%s] pcb_store_close failed: %s", os->label, st.msg);
        s = open_store(os, &st);
        if (s == NULL)
            DIE("[%s] the store we just committed does not open again (class %d): %s",
                os->label, (int)st.code, st.msg);
        kv_list after = {0};
        memset(&st, 0, sizeof st);
        if (!pcb_store_all(s, collect, &after, &st))
            DIE("[%s] the store we just committed does not read back (class %d): %s",
                os->label, (int)st.code, st.msg);
        if (!had_extra)
            kv_add(&before, EXTRA_NAME, sizeof EXTRA_NAME - 1, value, sizeof value);
        else
            for (size_t i = 0; i < before.n; i++)
                if (before.items[i].name_len == sizeof EXTRA_NAME - 1
                    && memcmp(before.items[i].name, EXTRA_NAME, sizeof EXTRA_NAME - 1) == 0) {
                    free(before.items[i].value);
                    before.items[i].value = malloc(sizeof value);
                    memcpy(before.items[i].value, value, sizeof value);
                    before.items[i].value_len = sizeof value;
                }
        qsort(before.items, before.n, sizeof(kv), kv_cmp);
        same_entries(os, "committed", &before, &after);
        kv_free(&after);
        if ((flags & 2) && os->opt.encrypted) {
            /* Rotation re-encrypts everything under new keysets: same entries after. */
            memset(&st, 0, sizeof st);
            if (!pcb_store_rotate(s, NULL, &st))
                DIE("[%s] pcb_store_rotate failed (class %d): %s", os->label, (int)st.code, st.msg);
            memset(&st, 0, sizeof st);
            if (!pcb_store_close(s, &st))
                DIE("[%s] pcb_store_close after rotation failed: %s", os->label, st.msg);
            s = open_store(os, &st);
            if (s == NULL)
                DIE("[%s] the rotated store does not open again (class %d): %s", os->label,
                    (int)st.code, st.msg);
            memset(&st, 0, sizeof st);
            if (!pcb_store_all(s, collect, &after, &st))
                DIE("[%s] the rotated store does not read back (class %d): %s", os->label,
                    (int)st.code, st.msg);
            same_entries(os, "rotated", &before, &after);
            kv_free(&after);
        }
    }
    kv_free(&before);
    memset(&st, 0, sizeof st);
    if (!pcb_store_close(s, &st))
        DIE("[%s] pcb_store_close failed: %s", os->label, st.msg);
}

/* ------------------------------------------------ parser/writer round trip */

typedef struct {
    pcb_pref_type type;
    char *name;
    size_t name_len;
    char *text; /* STRING; STRING_SET: members concatenated, each as len(8 bytes) + bytes */
    size_t text_len;
    size_t n_members;
    int64_t i;
    float f;
    int b;
} pentry;

typedef struct {
    pentry *items;
    size_t n, cap;
} plist;

static char *dup_bytes(const char *p, size_t n)
{
    char *d = malloc(n + 1);
    if (d == NULL)
        abort();
    memcpy(d, p, n);
    d[n] = '\0';
    return d;
}

static int collect_pref(void *arg, const pcb_pref_entry *e)
{
    plist *l = arg;
    if (l->n == l->cap) {
        l->cap = l->cap ? 2 * l->cap : 16;
        l->items = realloc(l->items, l->cap * sizeof *l->items);
        if (l->items == NULL)
            abort();
    }
    pentry *p = &l->items[l->n++];
    memset(p, 0, sizeof *p);
    p->type = e->type;
    if (strlen(e->name) != e->name_len && memchr(e->name, 0, e->name_len) == NULL)
        DIE("prefs parser: entry name is not NUL-terminated at name_len");
    p->name = dup_bytes(e->name, e->name_len);
    p->name_len = e->name_len;
    p->i = e->i;
    p->f = e->f;
    p->b = e->b;
    if (e->type == PCB_PREF_STRING) {
        p->text = dup_bytes(e->text, e->text_len);
        p->text_len = e->text_len;
    } else if (e->type == PCB_PREF_STRING_SET) {
        size_t total = 0;
        for (size_t k = 0; k < e->n_members; k++)
            total += 8 + e->member_lens[k];
        p->text = malloc(total + 1);
        if (p->text == NULL)
            abort();
        size_t o = 0;
        for (size_t k = 0; k < e->n_members; k++) {
            uint64_t ml = e->member_lens[k];
            memcpy(p->text + o, &ml, 8);
            memcpy(p->text + o + 8, e->members[k], e->member_lens[k]);
            o += 8 + e->member_lens[k];
        }
        p->text_len = total;
        p->n_members = e->n_members;
    }
    return 0;
}

static void plist_free(plist *l)
{
    for (size_t i = 0; i < l->n; i++) {
        free(l->items[i].name);
        free(l->items[i].text);
    }
    free(l->items);
    memset(l, 0, sizeof *l);
}

static void write_prefs(const plist *l, pcb_buf *b)
{
    pcb_prefs_begin(b);
    for (size_t i = 0; i < l->n; i++) {
        const pentry *e = &l->items[i];
        switch (e->type) {
        case PCB_PREF_STRING: pcb_prefs_string(b, e->name, e->name_len, e->text, e->text_len); break;
        case PCB_PREF_INT: pcb_prefs_int(b, e->name, e->name_len, (int32_t)e->i); break;
        case PCB_PREF_LONG: pcb_prefs_long(b, e->name, e->name_len, e->i); break;
        case PCB_PREF_FLOAT: pcb_prefs_float(b, e->name, e->name_len, e->f); break;
        case PCB_PREF_BOOLEAN: pcb_prefs_boolean(b, e->name, e->name_len, e->b); break;
        case PCB_PREF_STRING_SET: {
            const char **m = malloc((e->n_members + 1) * sizeof *m);
            size_t *ml = malloc((e->n_members + 1) * sizeof *ml);
            if (m == NULL || ml == NULL)
                abort();
            size_t o = 0;
            for (size_t k = 0; k < e->n_members; k++) {
                uint64_t len;
                memcpy(&len, e->text + o, 8);
                ml[k] = (size_t)len;
                m[k] = e->text + o + 8;
                o += 8 + ml[k];
            }
            pcb_prefs_set(b, e->name, e->name_len, e->n_members, m, ml);
            free(m);
            free(ml);
            break;
        }
        }
    }
    pcb_prefs_end(b);
}

static void compare_prefs(const plist *a, const plist *b, const char *xml, size_t xml_len)
{
    if (a->n != b->n)
        DIE("prefs round trip: %zu entries parsed, %zu after writing and parsing again", a->n, b->n);
    for (size_t i = 0; i < a->n; i++) {
        const pentry *x = &a->items[i], *y = &b->items[i];
        const char *bad = NULL;
        if (x->type != y->type)
            bad = "type";
        else if (x->name_len != y->name_len || memcmp(x->name, y->name, x->name_len) != 0)
            bad = "name";
        else if ((x->type == PCB_PREF_STRING || x->type == PCB_PREF_STRING_SET)
                 && (x->text_len != y->text_len || x->n_members != y->n_members
                     || memcmp(x->text, y->text, x->text_len) != 0))
            bad = "text";
        else if ((x->type == PCB_PREF_INT || x->type == PCB_PREF_LONG) && x->i != y->i)
            bad = "number";
        else if (x->type == PCB_PREF_BOOLEAN && (!x->b) != (!y->b))
            bad = "boolean";
        else if (x->type == PCB_PREF_FLOAT
                 && !(isnan(x->f) ? isnan(y->f) : memcmp(&x->f, &y->f, sizeof x->f) == 0))
            bad = "float";
        if (bad) {
            fprintf(stderr, "rewritten XML:\n%.*s\n", (int)(xml_len < 4000 ? xml_len : 4000), xml);
            if (x->type == PCB_PREF_FLOAT)
                fprintf(stderr, "float: parsed %.9g (%a), read back %.9g (%a)\n", (double)x->f,
                        (double)x->f, (double)y->f, (double)y->f);
            DIE("prefs round trip: entry %zu ('%s') changed its %s", i, x->name, bad);
        }
    }
}

static void fuzz_prefs(const uint8_t *data, size_t size)
{
    char *copy = malloc(size ? size : 1); /* exact size, no NUL: overreads are caught */
    if (copy == NULL)
        abort();
    memcpy(copy, data, size);
    char err[96];
    plist first = {0}, second = {0};
    size_t err_len = size > 0 && (data[0] & 1) ? 17 : sizeof err;
    memset(err, 'x', sizeof err);
    int rc = pcb_prefs_parse(copy, size, collect_pref, &first, err, err_len);
    if (rc == -1) {
        if (memchr(err, '\0', err_len) == NULL)
            DIE("prefs parser: error message not NUL-terminated within err_len");
        if (err[0] == '\0')
            DIE("prefs parser: a syntax error without a message");
#ifdef PCB_PREFS_ALLOW_DUPLICATES
        plist relaxed = {0}; /* must not crash either; may succeed (duplicates) */
        pcb_prefs_parse_flags(copy, size, PCB_PREFS_ALLOW_DUPLICATES, collect_pref, &relaxed, err,
                              sizeof err);
        plist_free(&relaxed);
#endif
    } else if (rc != 0) {
        DIE("prefs parser returned %d although the callback never stops it", rc);
    } else {
#ifdef PCB_PREFS_ALLOW_DUPLICATES
        /* Without the duplicate check: the same entries, whenever the strict parse succeeds. */
        plist relaxed = {0};
        if (pcb_prefs_parse_flags(copy, size, PCB_PREFS_ALLOW_DUPLICATES, collect_pref, &relaxed,
                                  err, sizeof err) != 0)
            DIE("prefs parser: fails with PCB_PREFS_ALLOW_DUPLICATES where the strict parse succeeds: %s",
                err);
        compare_prefs(&first, &relaxed, copy, size);
        plist_free(&relaxed);
#endif
        pcb_buf b;
        pcb_buf_init(&b);
        write_prefs(&first, &b);
        if (b.failed)
            abort();
        char *xml = malloc(b.len ? b.len : 1);
        memcpy(xml, b.data, b.len);
        char err2[200];
        if (pcb_prefs_parse(xml, b.len, collect_pref, &second, err2, sizeof err2) != 0) {
            fprintf(stderr, "rewritten XML:\n%.*s\n", (int)(b.len < 4000 ? b.len : 4000), xml);
            DIE("prefs round trip: what the writer wrote does not parse: %s", err2);
        }
        compare_prefs(&first, &second, xml, b.len);
        free(xml);
        pcb_buf_free(&b);
    }
    plist_free(&first);
    plist_free(&second);
    free(copy);
}

/* ---------------------------------------------------------------- Base64 */

static void fuzz_b64(const uint8_t *data, size_t size)
{
    /* decode(encode(x)) == x */
    size_t el = pcb_b64_encoded_len(size);
    char *enc = malloc(el ? el : 1);
    uint8_t *dec = malloc(pcb_b64_decoded_max(el));
    if (enc == NULL || dec == NULL)
        abort();
    if (pcb_b64_encode(data, size, enc) != el)
        DIE("b64: encode of %zu bytes did not give %zu characters", size, el);
    size_t dl = pcb_b64_decode(enc, el, dec);
    if (dl != size || memcmp(dec, data, size) != 0)
        DIE("b64: decode(encode(x)) != x for %zu bytes", size);
    free(enc);
    free(dec);

    /* Arbitrary text: never overruns; what decodes has exactly that encoding. */
    for (int pass = 0; pass < 2; pass++) {
        size_t n = pass == 0 ? size : size & ~(size_t)3;
        if (pass == 1 && n == size)
            break;
        char *text = malloc(n ? n : 1);
        size_t cap = pcb_b64_decoded_max(n);
        uint8_t *out = malloc(cap);
        if (text == NULL || out == NULL)
            abort();
        memcpy(text, data, n);
        size_t r = pcb_b64_decode(text, n, out);
        if (r != (size_t)-1) {
            if (r > cap)
                DIE("b64: decode returned %zu bytes, more than decoded_max %zu", r, cap);
            size_t rl = pcb_b64_encoded_len(r);
            char *back = malloc(rl ? rl : 1);
            if (back == NULL)
                abort();
            pcb_b64_encode(out, r, back);
            if (rl != n || memcmp(back, text, n) != 0)
                DIE("b64: '%.*s' decodes but is not the encoding of what it decodes to",
                    (int)(n < 200 ? n : 200), text);
            free(back);
        }
        free(out);
        free(text);
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (!ready)
        setup();
    if (size > 1 << 20)
        return 0;
    fuzz_b64(data, size);
    fuzz_prefs(data, size);
    /* Which extra steps to take: from a checksum, so that any mutation may flip
     * them (a store file's own bytes, like its final newline, hardly vary). */
    unsigned flags = 0;
    for (size_t i = 0; i < size; i++)
        flags = flags * 31 + data[i];
    flags ^= flags >> 16;
    for (size_t i = 0; i < N_SETS; i++)
        fuzz_store(&sets[i], data, size, flags);
    return 0;
}
