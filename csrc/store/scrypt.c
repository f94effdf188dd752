/*
 * store/scrypt.c — the scrypt parameter file's format, bounds, derivation
 * and tag (see scrypt.h).
 */
#include "store/scrypt.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <openssl/core_names.h>
#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/kdf.h>
#include <openssl/params.h>

#include "format/hex.h"

/* The bounds a scrypt parameter file is checked against before any work:
 * N a power of two up to 2^22, r and p small, at most 1 GiB of memory
 * (128 r N bytes, OpenSSL's own limit) and N r p at most 2^24 (a few
 * seconds); a salt of 16 to 64 bytes, not all zero. */
#define SCRYPT_MAX_N ((uint64_t)1 << 22)
#define SCRYPT_MAX_R 32
#define SCRYPT_MAX_P 16
#define SCRYPT_MAX_MEM ((uint64_t)1 << 30)
#define SCRYPT_MAX_WORK ((uint64_t)1 << 24)
#define SCRYPT_SALT_MIN 16
#define SCRYPT_SALT_MAX 64
#define SCRYPT_FILE_VERSION 2 /* 1: no version, no tag (still read for existing stores) */

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
    if (end == p || errno || *p == '-')
        return 0;
    *out = v;
    return 1;
}

/* Reads "key": "<hex>" (min..max bytes) into out; its length into *len. */
static int json_hex(const char *json, const char *key, uint8_t *out, size_t min, size_t max,
                    size_t *len)
{
    char pat[32];
    snprintf(pat, sizeof pat, "\"%s\": \"", key);
    const char *p = strstr(json, pat);
    if (p == NULL)
        return 0;
    p += strlen(pat);
    const char *q = strchr(p, '"');
    size_t n = q ? (size_t)(q - p) : 0;
    if (q == NULL || n % 2 || n < 2 * min || n > 2 * max || !pcb_hex_decode(p, n, out))
        return 0;
    *len = n / 2;
    return 1;
}

/* Parses the file's text into *p (no bounds checked yet). */
int pcb_scrypt_parse(pcb_store *s, pcb_kdf_params *p, const char *data, size_t len, pcb_status *st)
{
    uint64_t version = 1;
    size_t mac_len = 0;
    memset(p, 0, sizeof *p);
    int ok = len < 4096 && strstr(data, "\"kdf\": \"scrypt\"") != NULL
             && (strstr(data, "\"version\":") == NULL || json_u64(data, "version", &version))
             && (version == 1 || version == SCRYPT_FILE_VERSION)
             && json_hex(data, "salt", p->salt, 1, SCRYPT_SALT_MAX, &p->salt_len)
             && json_u64(data, "n", &p->n) && json_u64(data, "r", &p->r)
             && json_u64(data, "p", &p->p)
             && (version == 1 || json_hex(data, "mac", p->mac, 32, 32, &mac_len));
    p->version = (int)version;
    if (!ok)
        return pcb_fail(st, PCB_E_FORMAT,
                        "%s is not a valid scrypt parameter file (expected {\"kdf\": \"scrypt\", "
                        "\"version\": 2, \"salt\": hex, \"n\", \"r\", \"p\": numbers, \"mac\": 64 hex "
                        "digits})", s->scrypt_path);
    return 1;
}

/* The bounds above, and n >= min_n, checked before any work. */
int pcb_scrypt_check(pcb_store *s, const pcb_kdf_params *kp, uint64_t min_n, pcb_status *st)
{
    const uint64_t n = kp->n, r = kp->r, p = kp->p;
    size_t zero = 0;
    for (size_t i = 0; i < kp->salt_len; i++)
        zero += kp->salt[i] == 0;
    if (n < 2 || (n & (n - 1)) || n > SCRYPT_MAX_N)
        return pcb_fail(st, PCB_E_FORMAT, "%s: scrypt n=%llu is not a power of two from 2 to 2^22",
                        s->scrypt_path, (unsigned long long)n);
    if (r < 1 || r > SCRYPT_MAX_R || p < 1 || p > SCRYPT_MAX_P)
        return pcb_fail(st, PCB_E_FORMAT, "%s: scrypt r=%llu, p=%llu are outside the bounds (r from "
                        "1 to %d, p from 1 to %d)", s->scrypt_path, (unsigned long long)r,
                        (unsigned long long)p, SCRYPT_MAX_R, SCRYPT_MAX_P);
    if (128 * r * n > SCRYPT_MAX_MEM)
        return pcb_fail(st, PCB_E_FORMAT, "%s: scrypt n=%llu, r=%llu would need %llu MiB of memory, "
                        "more than the 1024 MiB allowed", s->scrypt_path, (unsigned long long)n,
                        (unsigned long long)r, (unsigned long long)((128 * r * n) >> 20));
    if (n * r * p > SCRYPT_MAX_WORK)
        return pcb_fail(st, PCB_E_FORMAT, "%s: scrypt n*r*p = %llu is more work than the 2^24 "
                        "allowed (each open would take minutes)", s->scrypt_path,
                        (unsigned long long)(n * r * p));
    if (kp->salt_len < SCRYPT_SALT_MIN || zero == kp->salt_len)
        return pcb_fail(st, PCB_E_FORMAT, "%s: the scrypt salt must be %d to %d bytes and not all "
                        "zero (it is %zu bytes%s)", s->scrypt_path, SCRYPT_SALT_MIN, SCRYPT_SALT_MAX,
                        kp->salt_len, zero == kp->salt_len ? ", all zero" : "");
    if (n < min_n)
        return pcb_fail(st, PCB_E_FORMAT, "%s: scrypt n=%llu is weaker than the n=%llu asked for a "
                        "new store; remove the file if no store uses it, or pass scrypt_n=%llu",
                        s->scrypt_path, (unsigned long long)n, (unsigned long long)min_n,
                        (unsigned long long)n);
    return 1;
}

int pcb_scrypt_derive(pcb_store *s, const pcb_kdf_params *kp, uint8_t key[MASTER_KEY_LEN],
                      pcb_status *st)
{
    uint64_t n = kp->n, r = kp->r, p = kp->p;
    EVP_KDF *kdf = EVP_KDF_fetch(s->libctx, "SCRYPT", NULL);
    EVP_KDF_CTX *kctx = kdf ? EVP_KDF_CTX_new(kdf) : NULL;
    OSSL_PARAM params[] = {
        OSSL_PARAM_construct_octet_string(OSSL_KDF_PARAM_PASSWORD, (void *)s->opt.passphrase,
                                          s->opt.passphrase_len),
        OSSL_PARAM_construct_octet_string(OSSL_KDF_PARAM_SALT, (void *)kp->salt, kp->salt_len),
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

/* The parameters' tag under a master key: HMAC-SHA256 keyed with
 * HMAC-SHA256(master, label) over "scrypt v2 salt=<hex> n=N r=R p=P". */
static int scrypt_mac(pcb_store *s, const pcb_kdf_params *p, const uint8_t master[MASTER_KEY_LEN],
                      uint8_t mac[32], pcb_status *st)
{
    static const char label[] = "pycipherbench scrypt parameters v2";
    char text[80 + 2 * SCRYPT_SALT_MAX], hex[2 * SCRYPT_SALT_MAX + 1];
    uint8_t mkey[32];
    size_t ml = 0, tl;
    pcb_hex_encode(p->salt, p->salt_len, hex);
    hex[2 * p->salt_len] = '\0';
    tl = (size_t)snprintf(text, sizeof text, "scrypt v2 salt=%s n=%llu r=%llu p=%llu", hex,
                          (unsigned long long)p->n, (unsigned long long)p->r,
                          (unsigned long long)p->p);
    int ok = EVP_Q_mac(s->libctx, "HMAC", NULL, "SHA256", NULL, master, MASTER_KEY_LEN,
                       (const unsigned char *)label, sizeof label - 1, mkey, sizeof mkey, &ml) != NULL
             && ml == 32
             && EVP_Q_mac(s->libctx, "HMAC", NULL, "SHA256", NULL, mkey, sizeof mkey,
                          (const unsigned char *)text, tl, mac, 32, &ml) != NULL && ml == 32;
    OPENSSL_cleanse(mkey, sizeof mkey);
    return ok || pcb_fail_openssl(st, "HMAC of the scrypt parameters");
}

/* Whether p's tag authenticates under master (1/0; -1 with st set). */
int pcb_scrypt_verify(pcb_store *s, const pcb_kdf_params *p, const uint8_t master[MASTER_KEY_LEN],
                      pcb_status *st)
{
    uint8_t mac[32];
    if (p->version != SCRYPT_FILE_VERSION)
        return 0;
    if (!scrypt_mac(s, p, master, mac, st))
        return -1;
    return CRYPTO_memcmp(mac, p->mac, 32) == 0;
}

/* The file's text for p (its tag and version set) with its tag under master. */
int pcb_scrypt_text(pcb_store *s, pcb_kdf_params *p, const uint8_t master[MASTER_KEY_LEN],
                    char *out, size_t cap, size_t *len, pcb_status *st)
{
    char salt[2 * SCRYPT_SALT_MAX + 1], mac[65];
    if (!scrypt_mac(s, p, master, p->mac, st))
        return 0;
    p->version = SCRYPT_FILE_VERSION;
    pcb_hex_encode(p->salt, p->salt_len, salt);
    salt[2 * p->salt_len] = '\0';
    pcb_hex_encode(p->mac, 32, mac);
    mac[64] = '\0';
    int n = snprintf(out, cap, "{\"kdf\": \"scrypt\", \"version\": %d, \"salt\": \"%s\", \"n\": %llu, "
                     "\"r\": %llu, \"p\": %llu, \"mac\": \"%s\"}\n", SCRYPT_FILE_VERSION, salt,
                     (unsigned long long)p->n, (unsigned long long)p->r,
                     (unsigned long long)p->p, mac);
    *len = (size_t)n;
    return n > 0 && (size_t)n < cap ? 1 : pcb_fail(st, PCB_E_VALUE, "scrypt parameter text too long");
}
