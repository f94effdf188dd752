/*
 * store/mmkv.c — the MMKV design model (see mmkv.h: a model written from MMKV's public
 * description, not MMKV's code; its encryption is unauthenticated by design).
 */
#define _GNU_SOURCE
#include "store/mmkv.h"
#include "common/busguard.h"
#include "common/sys.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#ifndef O_CLOEXEC /* older systems: set it after open */
#define O_CLOEXEC 0
#define PCB_MMKV_SET_CLOEXEC(fd) ((fd) >= 0 ? (void)fcntl((fd), F_SETFD, FD_CLOEXEC) : (void)0)
#else
#define PCB_MMKV_SET_CLOEXEC(fd) ((void)0)
#endif

#include <openssl/crypto.h>

/* memcpy that takes (NULL, 0): an empty name, value or key may come as a NULL pointer. */
static inline void copy_bytes(void *dst, const void *src, size_t n)
{
    if (n)
        memcpy(dst, src, n);
}
#include <openssl/evp.h>
#include <openssl/rand.h>

#define MMKV_PAGE 4096u
#define META_SIZE 4096u
#define META_CRC 0
#define META_VERSION 4
#define META_SEQ 8
#define META_IV 12
#define META_ACTUAL 28
#define META_VERSION_VALUE 3u /* the meta layout with IV and actual size */
#define HOLDER 0x00ffffffu    /* the item-size holder at the content's start */
#define HOLDER_LEN 4u
#define MAX_CONTENT 0x40000000u /* 1 GiB: the model's limit */

typedef struct {
    uint32_t hash, name_off, name_len, val_off, val_len, used;
} ent; /* offsets into the plaintext content; val_len 0: removed */

struct pcb_mmkv {
    pthread_mutex_t mu;
    char *path, *meta_path; /* for messages */
    int fd, meta_fd;
    /* Set once a store into a mapping faulted or the file was found cut
     * below its mapping: every later call but close refuses (OSError). */
    int broken;
    /* What a guarded section allocated, freed by the fault path (a
     * siglongjmp skips the section's own frees): write_back's record
     * buffer and table, get's copy, load's decrypt context. */
    uint8_t *scratch;
    size_t scratch_len;
    ent *scratch_tab;
    EVP_CIPHER_CTX *dec;
    uint8_t *map, *meta;
    size_t map_size;
    uint32_t actual, crc, seq;
    int encrypted;
    uint8_t key[16], iv[16];
    EVP_CIPHER_CTX *enc;
    uint8_t *plain; /* encrypted: the decrypted content (map_size - 4 bytes) */
    ent *tab;
    size_t tab_cap, tab_used, live;
};

/* ---- CRC-32 (reflected 0xEDB88320, zlib's) */

static uint32_t crc_table[256];
static pthread_once_t crc_once = PTHREAD_ONCE_INIT;

static void crc_init(void)
{
    for (uint32_t i = 0; i < 256; i++) {
        uint32_t c = i;
        for (int k = 0; k < 8; k++)
            c = (c & 1) ? 0xEDB88320u ^ (c >> 1) : c >> 1;
        crc_table[i] = c;
    }
}

uint32_t pcb_crc32(uint32_t crc, const uint8_t *p, size_t n)
{
    pthread_once(&crc_once, crc_init);
    crc = ~crc;
    for (size_t i = 0; i < n; i++)
        crc = crc_table[(crc ^ p[i]) & 0xff] ^ (crc >> 8);
    return ~crc;
}

/* ---- little helpers */

static uint32_t le32(const uint8_t *p)
{
    return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

static void put_le32(uint8_t *p, uint32_t v)
{
    p[0] = (uint8_t)v, p[1] = (uint8_t)(v >> 8), p[2] = (uint8_t)(v >> 16), p[3] = (uint8_t)(v >> 24);
}

static size_t varint_len(uint32_t v)
{
    size_t n = 1;
    while (v >= 0x80)
        v >>= 7, n++;
    return n;
}

static size_t put_varint(uint8_t *p, uint32_t v)
{
    size_t n = 0;
    while (v >= 0x80)
        p[n++] = (uint8_t)(v | 0x80), v >>= 7;
    p[n++] = (uint8_t)v;
    return n;
}

/* 1 with *v and *pos advanced, 0 if malformed or past end. */
static int get_varint(const uint8_t *p, size_t end, size_t *pos, uint32_t *v)
{
    uint64_t x = 0;
    for (int shift = 0; shift < 35; shift += 7) {
        if (*pos >= end)
            return 0;
        uint8_t b = p[(*pos)++];
        x |= (uint64_t)(b & 0x7f) << shift;
        if (!(b & 0x80)) {
            if (x > 0xffffffffu)
                return 0;
            *v = (uint32_t)x;
            return 1;
        }
    }
    return 0;
}

static uint32_t fnv1a(const uint8_t *p, size_t n)
{
    uint32_t h = 2166136261u;
    for (size_t i = 0; i < n; i++)
        h = (h ^ p[i]) * 16777619u;
    return h;
}

static uint8_t *content(pcb_mmkv *m)
{
    return m->encrypted ? m->plain : m->map + 4;
}

/* ---- the map: open addressing over the plaintext content */

static ent *find(pcb_mmkv *m, const uint8_t *name, size_t len, uint32_t h)
{
    const uint8_t *c = content(m);
    size_t mask = m->tab_cap - 1;
    for (size_t i = h & mask;; i = (i + 1) & mask) {
        ent *e = &m->tab[i];
        if (!e->used || (e->hash == h && e->name_len == len && memcmp(c + e->name_off, name, len) == 0))
            return e;
    }
}

static int tab_grow(pcb_mmkv *m, pcb_status *st)
{
    size_t cap = m->tab_cap ? m->tab_cap * 2 : 64;
    ent *old = m->tab;
    size_t old_cap = m->tab_cap;
    ent *t = calloc(cap, sizeof *t);
    if (!t)
        return pcb_oom(st);
    m->tab = t, m->tab_cap = cap;
    for (size_t i = 0; i < old_cap; i++)
        if (old[i].used) {
            size_t mask = cap - 1, j = old[i].hash & mask;
            while (t[j].used)
                j = (j + 1) & mask;
            t[j] = old[i];
        }
    free(old);
    return 1;
}

/* Records name -> value at content offsets (a later record replaces). */
static int tab_set(pcb_mmkv *m, uint32_t name_off, uint32_t name_len, uint32_t val_off,
                   uint32_t val_len, pcb_status *st)
{
    if ((m->tab_used + 1) * 10 > m->tab_cap * 7 && !tab_grow(m, st))
        return 0;
    const uint8_t *name = content(m) + name_off;
    uint32_t h = fnv1a(name, name_len);
    ent *e = find(m, name, name_len, h);
    if (!e->used) {
        m->tab_used++;
        *e = (ent){h, name_off, name_len, 0, 0, 1};
    } else {
        e->name_off = name_off; /* the newest record's copy of the name */
    }
    if (e->val_len && !val_len)
        m->live--;
    else if (!e->val_len && val_len)
        m->live++;
    e->val_off = val_off, e->val_len = val_len;
    return 1;
}

/* ---- the meta file, the cipher stream */

static void write_meta(pcb_mmkv *m)
{
    put_le32(m->map, m->actual);
    put_le32(m->meta + META_CRC, m->crc);
    put_le32(m->meta + META_VERSION, META_VERSION_VALUE);
    put_le32(m->meta + META_SEQ, m->seq);
    memcpy(m->meta + META_IV, m->iv, 16);
    put_le32(m->meta + META_ACTUAL, m->actual);
}

/* The encrypt context positioned at content offset `at` (CFB's register is the last
 * ciphertext block: restart from it and replay the partial block's plaintext). */
static int cipher_at(pcb_mmkv *m, uint32_t at, pcb_status *st)
{
    uint32_t b = at - at % 16;
    const uint8_t *iv = b == 0 ? m->iv : m->map + 4 + b - 16;
    uint8_t scratch[16];
    int outl;
    if (!m->enc && !(m->enc = EVP_CIPHER_CTX_new()))
        return pcb_oom(st);
    if (EVP_EncryptInit_ex(m->enc, EVP_aes_128_cfb128(), NULL, m->key, iv) != 1
        || (at > b && EVP_EncryptUpdate(m->enc, scratch, &outl, m->plain + b, (int)(at - b)) != 1))
        return pcb_fail_openssl(st, "mmkv model: AES-128-CFB");
    OPENSSL_cleanse(scratch, sizeof scratch);
    return 1;
}

/* Writes plaintext bytes at content offset `at` into the file (encrypting in-stream). */
static int emit(pcb_mmkv *m, uint32_t at, const uint8_t *p, size_t n, pcb_status *st)
{
    if (!m->encrypted) {
        memmove(m->map + 4 + at, p, n);
        return 1;
    }
    int outl;
    memmove(m->plain + at, p, n);
    if (EVP_EncryptUpdate(m->enc, m->map + 4 + at, &outl, m->plain + at, (int)n) != 1)
        return pcb_fail_openssl(st, "mmkv model: AES-128-CFB");
    return 1;
}

/* ---- the SIGBUS guard (common/busguard.h)
 *
 * Every access to the two mappings runs in a guarded section; a fault in
 * one becomes an OSError, and the handle is broken (a jump may leave a
 * write-back half done or the cipher stream mid-block): it refuses every
 * call but close. What a section allocates is in the handle's scratch
 * fields, freed by the fault path. The file keeps its last complete state
 * (the meta and the header are written last), unless the fault cut a
 * write-back short. */

/* The guard's test: addr is in one of m's mappings. */
static int in_mappings(const void *ctx, const void *addr)
{
    const pcb_mmkv *m = ctx;
    uintptr_t a = (uintptr_t)addr;
    return (m->map != NULL && a - (uintptr_t)m->map < m->map_size)
           || (m->meta != NULL && a - (uintptr_t)m->meta < META_SIZE);
}

#define BUS_GUARD(g, handle) PCB_BUS_GUARD(g, in_mappings, handle)

static void scratch_free(pcb_mmkv *m)
{
    if (m->scratch != NULL) {
        OPENSSL_cleanse(m->scratch, m->scratch_len);
        free(m->scratch);
    }
    m->scratch = NULL, m->scratch_len = 0;
    free(m->scratch_tab);
    m->scratch_tab = NULL;
    EVP_CIPHER_CTX_free(m->dec);
    m->dec = NULL;
}

/* 1 if both files are at least as long as their mappings; else the handle
 * is broken and 0 with *st: OSError (ESTALE) naming the file. */
static int check_size(pcb_mmkv *m, pcb_status *st)
{
    struct stat sb;
    const char *what[2] = {m->path, m->meta_path};
    int fds[2] = {m->fd, m->meta_fd};
    size_t sizes[2] = {m->map_size, META_SIZE};
    for (int i = 0; i < 2; i++) {
        if (pcb_sys_fstat(fds[i], &sb) != 0)
            return pcb_fail_os(st, "mmkv model: cannot stat %s", what[i]);
        if ((uint64_t)sb.st_size < sizes[i]) {
            m->broken = 1;
            errno = ESTALE;
            return pcb_fail_os(st, "mmkv model: %s was truncated by another process to %lld bytes, "
                               "below the %zu bytes mapped; its records there are gone and the "
                               "handle refuses every call but close (reopen it)",
                               what[i], (long long)sb.st_size, sizes[i]);
        }
    }
    return 1;
}

/* The fault path: what the section allocated freed, the handle broken, and
 * the cause said (a truncated file, else a page its file system could not
 * back). 0 with *st. */
static int bus_failed(pcb_mmkv *m, const char *during, pcb_status *st)
{
    scratch_free(m);
    m->broken = 1;
    if (!check_size(m, st))
        return 0; /* cut below the mapping (ESTALE), or fstat failed */
    errno = EIO;
    return pcb_fail_os(st, "mmkv model: %s faulted (SIGBUS) on a page of %s or %s although both "
                       "files are whole: their file system could not back the page (a full disk "
                       "where blocks cannot be reserved, or an I/O error); the handle refuses "
                       "every call but close", during, m->path, m->meta_path);
}

static int refuse_broken(pcb_mmkv *m, pcb_status *st)
{
    errno = EIO;
    return pcb_fail_os(st, "mmkv model: %s is unusable since its mapping faulted or the file was "
                       "truncated by another process; close it and reopen", m->path);
}

/* ---- growing a file: its blocks reserved */

/* fd's file made `size` bytes with every block allocated (a full disk or
 * RLIMIT_FSIZE fail here, before any store into the mapping); on failure
 * the file is cut back to `old` bytes (what a partial reservation added is
 * released) and 0 with *st names path. */
static int reserve(int fd, size_t old, size_t size, const char *path, pcb_status *st)
{
    int rc = pcb_sys_fallocate(fd, 0, (off_t)size);
    if (rc == 0)
        return 1;
    struct stat sb;
    if (pcb_sys_fstat(fd, &sb) == 0 && (uint64_t)sb.st_size > old)
        (void)pcb_sys_ftruncate(fd, (off_t)old);
    errno = rc;
    return pcb_fail_os(st, "mmkv model: cannot reserve %zu bytes for %s", size, path);
}

/* The data file grown to size, remapped; the plaintext copy grown with it.
 * On failure nothing of the model changed (the file is cut back). */
static int remap(pcb_mmkv *m, size_t size, pcb_status *st)
{
    uint8_t *q = NULL;
    if (m->encrypted && !(q = malloc(size - 4)))
        return pcb_oom(st);
    if (!reserve(m->fd, m->map_size, size, m->path, st)) {
        free(q);
        return 0;
    }
    void *p = pcb_sys_mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_SHARED, m->fd, 0);
    if (p == MAP_FAILED) {
        pcb_fail_os(st, "mmkv model: mmap of %zu bytes of %s", size, m->path);
        free(q);
        return 0;
    }
    if (m->map)
        munmap(m->map, m->map_size);
    m->map = p, m->map_size = size;
    if (m->encrypted) {
        if (m->plain) {
            copy_bytes(q, m->plain, m->actual);
            OPENSSL_cleanse(m->plain, m->actual);
            free(m->plain);
        }
        m->plain = q;
    }
    return 1;
}

/* Full write-back: the live records (but `skip`'s) from the start, the file doubled
 * until they and `need` more bytes fit, a new IV and sequence number. In a
 * guarded section (its buffer and table are the handle's scratch). */
static int write_back(pcb_mmkv *m, const uint8_t *skip, size_t skip_len, size_t need,
                      pcb_status *st)
{
    const uint8_t *c = content(m);
    size_t total = HOLDER_LEN;
    for (size_t i = 0; i < m->tab_cap; i++) {
        ent *e = &m->tab[i];
        if (e->used && e->val_len && !(e->name_len == skip_len && memcmp(c + e->name_off, skip, skip_len) == 0))
            total += varint_len(e->name_len) + e->name_len + varint_len(e->val_len) + e->val_len;
    }
    size_t size = m->map_size;
    while (4 + total + need > size) {
        if (size >= MAX_CONTENT)
            return pcb_fail(st, PCB_E_VALUE, "mmkv model: over %u bytes of content", MAX_CONTENT);
        size *= 2;
    }
    /* Another process cutting the file is seen here, before the file is
     * grown back over the hole (beside the grow's own system calls; a
     * write-back in place faults on a cut page instead, in the guard). */
    if (size != m->map_size && !check_size(m, st))
        return 0;
    uint8_t iv[16];
    if (m->encrypted && RAND_bytes(iv, 16) != 1)
        return pcb_fail_openssl(st, "mmkv model: a new IV");
    m->scratch = malloc(total), m->scratch_len = total;
    m->scratch_tab = calloc(m->tab_cap, sizeof *m->scratch_tab);
    uint8_t *buf = m->scratch;
    ent *tab = m->scratch_tab;
    if (!buf || !tab) {
        scratch_free(m);
        return pcb_oom(st);
    }
    size_t pos = put_varint(buf, HOLDER), n = 0;
    for (size_t i = 0; i < m->tab_cap; i++) {
        ent *e = &m->tab[i];
        if (!e->used || !e->val_len || (e->name_len == skip_len && memcmp(c + e->name_off, skip, skip_len) == 0))
            continue;
        ent ne = *e;
        pos += put_varint(buf + pos, e->name_len);
        ne.name_off = (uint32_t)pos;
        copy_bytes(buf + pos, c + e->name_off, e->name_len), pos += e->name_len;
        pos += put_varint(buf + pos, e->val_len);
        ne.val_off = (uint32_t)pos;
        copy_bytes(buf + pos, c + e->val_off, e->val_len), pos += e->val_len;
        size_t mask = m->tab_cap - 1, j = ne.hash & mask;
        while (tab[j].used)
            j = (j + 1) & mask;
        tab[j] = ne, n++;
    }
    /* The grow first: a full disk fails it with nothing of the model changed. */
    if (size != m->map_size && !remap(m, size, st)) {
        scratch_free(m);
        return 0;
    }
    uint32_t old = m->actual;
    if (m->encrypted) {
        memcpy(m->iv, iv, 16);
        OPENSSL_cleanse(iv, sizeof iv);
    }
    m->actual = 0;
    int ok = (!m->encrypted || cipher_at(m, 0, st)) && emit(m, 0, buf, total, st);
    if (!ok) { /* OpenSSL failed mid-rewrite: the content is no longer the table's */
        scratch_free(m);
        m->broken = 1;
        return 0;
    }
    if (old > total) {
        memset(m->map + 4 + total, 0, old - total);
        if (m->encrypted)
            OPENSSL_cleanse(m->plain + total, old - total);
    }
    m->scratch_tab = NULL;
    OPENSSL_cleanse(m->scratch, m->scratch_len);
    free(m->scratch);
    m->scratch = NULL, m->scratch_len = 0;
    free(m->tab);
    m->tab = tab, m->tab_used = n, m->live = n;
    m->actual = (uint32_t)total;
    m->crc = pcb_crc32(0, m->map + 4, total);
    m->seq++;
    write_meta(m);
    return 1;
}

/* ---- open / close */

/* Reads the mapped files into the table. In a guarded section (the decrypt
 * context is the handle's). */
static int load(pcb_mmkv *m, const char *path, pcb_status *st)
{
    m->actual = le32(m->map);
    int fresh = m->actual == 0 && le32(m->meta + META_VERSION) == 0;
    if (fresh) {
        if (m->encrypted && RAND_bytes(m->iv, 16) != 1)
            return pcb_fail_openssl(st, "mmkv model: an IV");
        uint8_t holder[HOLDER_LEN];
        put_varint(holder, HOLDER);
        if ((m->encrypted && !cipher_at(m, 0, st)) || !emit(m, 0, holder, HOLDER_LEN, st))
            return 0;
        m->actual = HOLDER_LEN;
        m->crc = pcb_crc32(0, m->map + 4, HOLDER_LEN);
        write_meta(m);
        return 1;
    }
    if (m->actual > m->map_size - 4 || m->actual < HOLDER_LEN || m->actual > MAX_CONTENT
        || le32(m->meta + META_ACTUAL) != m->actual)
        return pcb_fail(st, PCB_E_FORMAT, "%s: actual size %u does not fit the file (%zu bytes) "
                        "or its meta file", path, m->actual, m->map_size);
    m->crc = le32(m->meta + META_CRC);
    m->seq = le32(m->meta + META_SEQ);
    memcpy(m->iv, m->meta + META_IV, 16);
    if (pcb_crc32(0, m->map + 4, m->actual) != m->crc)
        return pcb_fail(st, PCB_E_FORMAT, "%s: CRC-32 of the %u content bytes does not match "
                        "%s.crc (the model refuses it; MMKV would discard or recover)",
                        path, m->actual, path);
    if (m->encrypted) {
        m->dec = EVP_CIPHER_CTX_new();
        int outl, ok = m->dec && EVP_DecryptInit_ex(m->dec, EVP_aes_128_cfb128(), NULL, m->key, m->iv) == 1
                       && EVP_DecryptUpdate(m->dec, m->plain, &outl, m->map + 4, (int)m->actual) == 1;
        EVP_CIPHER_CTX_free(m->dec);
        m->dec = NULL;
        if (!ok)
            return pcb_fail_openssl(st, "mmkv model: AES-128-CFB");
        if (!cipher_at(m, m->actual, st))
            return 0;
    }
    const uint8_t *c = content(m);
    size_t pos = 0;
    uint32_t holder, nlen, vlen;
    if (!get_varint(c, m->actual, &pos, &holder))
        return pcb_fail(st, PCB_E_FORMAT, "%s: no item-size holder (a wrong crypt key?)", path);
    while (pos < m->actual) {
        if (!get_varint(c, m->actual, &pos, &nlen) || nlen > m->actual - pos)
            return pcb_fail(st, PCB_E_FORMAT, "%s: a malformed record at %zu (a wrong crypt key?)", path, pos);
        uint32_t noff = (uint32_t)pos;
        pos += nlen;
        if (!get_varint(c, m->actual, &pos, &vlen) || vlen > m->actual - pos)
            return pcb_fail(st, PCB_E_FORMAT, "%s: a malformed record at %zu (a wrong crypt key?)", path, pos);
        if (!tab_set(m, noff, nlen, (uint32_t)pos, vlen, st))
            return 0;
        pos += vlen;
    }
    return 1;
}

/* Opens path (creating it), sized to a multiple of 4 KiB (at least min) with
 * every block reserved (a file left sparse by an older writer too), mapped. */
static int map_file(const char *path, size_t min, int *fd, uint8_t **map, size_t *size,
                    pcb_status *st)
{
    struct stat sb;
    *fd = pcb_sys_open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0600);
    PCB_MMKV_SET_CLOEXEC(*fd);
    if (*fd < 0)
        return pcb_fail_os(st, "mmkv model: %s", path);
    if (pcb_sys_fstat(*fd, &sb) != 0)
        return pcb_fail_os(st, "mmkv model: %s", path);
    size_t sz = (size_t)sb.st_size;
    size_t want = sz < min ? min : (sz + MMKV_PAGE - 1) / MMKV_PAGE * MMKV_PAGE;
    if (!reserve(*fd, sz, want, path, st))
        return 0;
    void *p = pcb_sys_mmap(NULL, want, PROT_READ | PROT_WRITE, MAP_SHARED, *fd, 0);
    if (p == MAP_FAILED)
        return pcb_fail_os(st, "mmkv model: mmap of %s", path);
    *map = p, *size = want;
    return 1;
}

int pcb_mmkv_open(const char *path, const uint8_t *key, size_t key_len, pcb_mmkv **out,
                  pcb_status *st)
{
    if (key_len > 16)
        return pcb_fail(st, PCB_E_VALUE, "an MMKV crypt key is at most 16 bytes, got %zu", key_len);
    size_t plen = strlen(path);
    pcb_mmkv *m = calloc(1, sizeof *m);
    if (m != NULL) {
        m->path = strdup(path);
        m->meta_path = malloc(plen + 5);
    }
    if (!m || !m->path || !m->meta_path) {
        if (m)
            free(m->path), free(m->meta_path);
        free(m);
        return pcb_oom(st);
    }
    memcpy(m->meta_path, path, plen), memcpy(m->meta_path + plen, ".crc", 5);
    pthread_mutex_init(&m->mu, NULL);
    m->fd = m->meta_fd = -1;
    m->encrypted = key_len > 0;
    copy_bytes(m->key, key, key_len); /* zero-padded to 16 bytes */
    pcb_bus_install();
    size_t meta_size = 0;
    int ok = map_file(path, MMKV_PAGE, &m->fd, &m->map, &m->map_size, st)
             && map_file(m->meta_path, META_SIZE, &m->meta_fd, &m->meta, &meta_size, st)
             && tab_grow(m, st);
    if (ok && m->encrypted && !(m->plain = malloc(m->map_size - 4)))
        ok = pcb_oom(st);
    if (ok) {
        pcb_bus_guard g;
        if (BUS_GUARD(g, m)) {
            ok = bus_failed(m, "opening", st);
        } else {
            pcb_bus_arm(&g);
            ok = load(m, path, st);
            pcb_bus_disarm();
        }
    }
    if (!ok) {
        pcb_mmkv_close(m);
        return 0;
    }
    *out = m;
    return 1;
}

void pcb_mmkv_close(pcb_mmkv *m)
{
    if (!m)
        return;
    if (m->map)
        munmap(m->map, m->map_size);
    if (m->meta)
        munmap(m->meta, META_SIZE);
    if (m->fd >= 0)
        pcb_sys_close(m->fd);
    if (m->meta_fd >= 0)
        pcb_sys_close(m->meta_fd);
    if (m->plain) {
        OPENSSL_cleanse(m->plain, m->map_size - 4);
        free(m->plain);
    }
    scratch_free(m);
    EVP_CIPHER_CTX_free(m->enc);
    OPENSSL_cleanse(m->key, sizeof m->key);
    free(m->tab);
    free(m->path);
    free(m->meta_path);
    pthread_mutex_destroy(&m->mu);
    free(m);
}

/* ---- reads and writes */

/* A load from a mapped byte, kept (volatile): in a guarded section, a page
 * the file no longer backs faults here. */
static inline void touch(const uint8_t *p)
{
    (void)*(const volatile uint8_t *)p;
}

/* Every call's first loads: the data file's header page and the meta page,
 * so a file cut below a page is seen by any call (no system call), also
 * where the call would read only the encrypted model's plaintext copy. */
static void touch_heads(const pcb_mmkv *m)
{
    touch(m->map);
    touch(m->meta);
}

/* The mapped bytes of [off, off + n) of the content: their first and last
 * pages (a record is at most a few pages; its middle is read by a copy
 * where the model reads the mapping). */
static void touch_span(const pcb_mmkv *m, uint32_t off, uint32_t n)
{
    if (n) {
        touch(m->map + 4 + off);
        touch(m->map + 4 + off + n - 1);
    }
}

/* get's section: the value copied into the handle's scratch. 1, 0 (absent), -1. */
static int get_section(pcb_mmkv *m, const uint8_t *name, size_t name_len, pcb_status *st)
{
    touch_heads(m);
    ent *e = find(m, name, name_len, fnv1a(name, name_len));
    if (!e->used || !e->val_len)
        return 0;
    if (m->encrypted) /* its plaintext copy answers: the file's bytes must still be there */
        touch_span(m, e->val_off, e->val_len);
    if (!(m->scratch = malloc(e->val_len)))
        return pcb_oom(st), -1;
    m->scratch_len = e->val_len;
    copy_bytes(m->scratch, content(m) + e->val_off, e->val_len);
    return 1;
}

int pcb_mmkv_get(pcb_mmkv *m, const uint8_t *name, size_t name_len, uint8_t **value,
                 size_t *value_len, pcb_status *st)
{
    int r;
    pthread_mutex_lock(&m->mu);
    pcb_bus_guard g;
    if (m->broken) {
        r = refuse_broken(m, st) - 1;
    } else if (BUS_GUARD(g, m)) {
        r = bus_failed(m, "a get", st) - 1;
    } else {
        pcb_bus_arm(&g);
        r = get_section(m, name, name_len, st);
        pcb_bus_disarm();
        if (r == 1) {
            *value = m->scratch, *value_len = m->scratch_len;
            m->scratch = NULL, m->scratch_len = 0;
        }
    }
    pthread_mutex_unlock(&m->mu);
    return r;
}

int pcb_mmkv_contains(pcb_mmkv *m, const uint8_t *name, size_t name_len, pcb_status *st)
{
    int r;
    pthread_mutex_lock(&m->mu);
    pcb_bus_guard g;
    if (m->broken) {
        r = refuse_broken(m, st) - 1;
    } else if (BUS_GUARD(g, m)) {
        r = bus_failed(m, "a contains", st) - 1;
    } else {
        pcb_bus_arm(&g);
        touch_heads(m);
        ent *e = find(m, name, name_len, fnv1a(name, name_len));
        r = e->used && e->val_len;
        if (r)
            touch_span(m, e->name_off, e->name_len);
        pcb_bus_disarm();
    }
    pthread_mutex_unlock(&m->mu);
    return r;
}

/* put's section: the record appended (after a write-back when it does not
 * fit), then the CRC, the header and the meta, then the table: a put that
 * fails (a grow refused, out of memory) leaves the model and the file as
 * they were; nothing can fail after the write-back or the meta. */
static int put_section(pcb_mmkv *m, const uint8_t *name, size_t name_len, const uint8_t *rec,
                       size_t r, uint32_t noff, uint32_t voff, size_t value_len, pcb_status *st)
{
    touch_heads(m); /* a cut file seen before anything changes */
    /* The table's room first: after a write-back (which drops name's old
     * record) nothing may fail, or the put would be half applied. */
    if ((m->tab_used + 1) * 10 > m->tab_cap * 7 && !tab_grow(m, st))
        return 0;
    if (4 + (size_t)m->actual + r > m->map_size && !write_back(m, name, name_len, r, st))
        return 0;
    uint32_t at = m->actual;
    if (!emit(m, at, rec, r, st)) {
        m->broken = 1; /* the cipher stream stopped mid-record */
        return 0;
    }
    m->crc = pcb_crc32(m->crc, m->map + 4 + at, r);
    m->actual = at + (uint32_t)r;
    write_meta(m);
    return tab_set(m, at + noff, (uint32_t)name_len, at + voff, (uint32_t)value_len, st);
}

int pcb_mmkv_put(pcb_mmkv *m, const uint8_t *name, size_t name_len, const uint8_t *value,
                 size_t value_len, pcb_status *st)
{
    if (name_len == 0 || name_len > MAX_CONTENT / 4 || value_len > MAX_CONTENT / 4)
        return pcb_fail(st, PCB_E_VALUE, "mmkv model: a name of 1..%u bytes and a value of at "
                        "most that, got %zu and %zu", MAX_CONTENT / 4, name_len, value_len);
    size_t r = varint_len((uint32_t)name_len) + name_len + varint_len((uint32_t)value_len) + value_len;
    uint8_t *rec = malloc(r);
    if (!rec)
        return pcb_oom(st);
    size_t pos = put_varint(rec, (uint32_t)name_len);
    uint32_t noff = (uint32_t)pos;
    copy_bytes(rec + pos, name, name_len), pos += name_len;
    pos += put_varint(rec + pos, (uint32_t)value_len);
    uint32_t voff = (uint32_t)pos;
    copy_bytes(rec + pos, value, value_len);
    int ok;
    pthread_mutex_lock(&m->mu);
    pcb_bus_guard g;
    if (m->broken) {
        ok = refuse_broken(m, st);
    } else if (BUS_GUARD(g, m)) {
        ok = bus_failed(m, "a put", st);
    } else {
        pcb_bus_arm(&g);
        ok = put_section(m, name, name_len, rec, r, noff, voff, value_len, st);
        pcb_bus_disarm();
    }
    pthread_mutex_unlock(&m->mu);
    OPENSSL_cleanse(rec, r);
    free(rec);
    return ok;
}

int pcb_mmkv_sync(pcb_mmkv *m, pcb_status *st)
{
    pthread_mutex_lock(&m->mu);
    int ok;
    if (m->broken)
        ok = refuse_broken(m, st);
    else if (!check_size(m, st)) /* a cut file: msync would call the lost records durable */
        ok = 0;
    else if (pcb_sys_msync(m->map, m->map_size, MS_SYNC) != 0)
        ok = pcb_fail_os(st, "mmkv model: msync of %s", m->path);
    else if (pcb_sys_msync(m->meta, META_SIZE, MS_SYNC) != 0)
        ok = pcb_fail_os(st, "mmkv model: msync of %s", m->meta_path);
    else
        ok = 1;
    pthread_mutex_unlock(&m->mu);
    return ok;
}

size_t pcb_mmkv_count(pcb_mmkv *m)
{
    pthread_mutex_lock(&m->mu);
    size_t n = m->live;
    pthread_mutex_unlock(&m->mu);
    return n;
}

size_t pcb_mmkv_file_size(pcb_mmkv *m)
{
    pthread_mutex_lock(&m->mu);
    size_t n = m->map_size + META_SIZE;
    pthread_mutex_unlock(&m->mu);
    return n;
}

size_t pcb_mmkv_used(pcb_mmkv *m)
{
    pthread_mutex_lock(&m->mu);
    size_t n = m->actual;
    pthread_mutex_unlock(&m->mu);
    return n;
}
