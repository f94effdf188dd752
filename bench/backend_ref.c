/*
 * bench/backend_ref.c — each crypto library's own call in a bare C loop, the
 * reference bench/bench_backends.py puts pycipherbench beside where the
 * library ships no benchmark program of its own (Debian's nettle-bin has no
 * nettle-benchmark; libgcrypt's bench-slope, Mbed TLS's benchmark and
 * libsodium's tests are not packaged).
 *
 *   backend_ref LIB MODE BYTES SECONDS  ->  prints bytes per second (wall clock)
 *   LIB: nettle | gcrypt | mbedtls | sodium   MODE: ctr | gcm
 *
 * ctr: AES-128-CTR, one key and IV, BYTES-long updates in place, as `openssl
 * speed -evp aes-128-ctr` and nettle-benchmark do (= pycipherbench's stream
 * scope). gcm: one whole AES-GCM message of BYTES per operation with a fresh
 * 12-byte IV, the key schedule kept, tag written (= message scope); AES-128,
 * except libsodium's AES-256 (the only one it has).
 * Built by the bench script with the flags pkg-config gives; -DREF_<LIB>.
 */
#define _POSIX_C_SOURCE 200809L
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#ifdef REF_NETTLE
#include <nettle/aes.h>
#include <nettle/ctr.h>
#include <nettle/gcm.h>
#endif
#ifdef REF_GCRYPT
#include <gcrypt.h>
#endif
#ifdef REF_MBEDTLS
#include <mbedtls/aes.h>
#include <mbedtls/gcm.h>
#endif
#ifdef REF_SODIUM
#include <sodium.h>
#endif

static double now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static void bump(uint8_t *iv)
{
    for (int i = 7; i >= 0; i--)
        if (++iv[i] != 0)
            break;
}

int main(int argc, char **argv)
{
    if (argc != 5) {
        fprintf(stderr, "usage: %s LIB ctr|gcm BYTES SECONDS\n", argv[0]);
        return 2;
    }
    const char *lib = argv[1];
    const int gcm = strcmp(argv[2], "gcm") == 0;
    size_t n = (size_t)strtoull(argv[3], NULL, 10);
    double seconds = atof(argv[4]);
    uint8_t key[32] = {1, 2, 3}, iv[16] = {4, 5, 6}, tag[16];
    uint8_t *buf = calloc(1, n + 16), *out = calloc(1, n + 16);
    uint64_t ops = 0;
    double t0, t1;
    if (!buf || !out)
        return 1;
    (void)lib, (void)tag, (void)out, (void)gcm;

#define LOOP(body)                                                     \
    do {                                                               \
        for (int w = 0; w < 200; w++) { body; } /* warm-up */          \
        t0 = now();                                                    \
        do {                                                           \
            for (int k = 0; k < 64; k++) { body; }                     \
            ops += 64;                                                 \
        } while ((t1 = now()) - t0 < seconds);                         \
    } while (0)

#ifdef REF_NETTLE
    if (strcmp(lib, "nettle") == 0) {
        if (gcm) {
            struct gcm_aes128_ctx c;
            gcm_aes128_set_key(&c, key);
            LOOP(bump(iv); gcm_aes128_set_iv(&c, 12, iv); gcm_aes128_encrypt(&c, n, out, buf);
                 gcm_aes128_digest(&c, 16, tag));
        } else {
            struct aes128_ctx c;
            aes128_set_encrypt_key(&c, key);
            LOOP(ctr_crypt(&c, (nettle_cipher_func *)aes128_encrypt, 16, iv, n, buf, buf));
        }
    }
#endif
#ifdef REF_GCRYPT
    if (strcmp(lib, "gcrypt") == 0) {
        gcry_cipher_hd_t h;
        gcry_check_version(NULL);
        gcry_control(GCRYCTL_DISABLE_SECMEM, 0);
        gcry_control(GCRYCTL_INITIALIZATION_FINISHED, 0);
        gcry_cipher_open(&h, GCRY_CIPHER_AES128, gcm ? GCRY_CIPHER_MODE_GCM : GCRY_CIPHER_MODE_CTR, 0);
        gcry_cipher_setkey(h, key, 16);
        if (gcm) {
            LOOP(bump(iv); gcry_cipher_reset(h); gcry_cipher_setiv(h, iv, 12); gcry_cipher_final(h);
                 gcry_cipher_encrypt(h, out, n, buf, n); gcry_cipher_gettag(h, tag, 16));
        } else {
            gcry_cipher_setctr(h, iv, 16);
            LOOP(gcry_cipher_encrypt(h, buf, n, NULL, 0));
        }
        gcry_cipher_close(h);
    }
#endif
#ifdef REF_MBEDTLS
    if (strcmp(lib, "mbedtls") == 0) {
        if (gcm) {
            mbedtls_gcm_context c;
            mbedtls_gcm_init(&c);
            mbedtls_gcm_setkey(&c, MBEDTLS_CIPHER_ID_AES, key, 128);
            LOOP(bump(iv); mbedtls_gcm_crypt_and_tag(&c, MBEDTLS_GCM_ENCRYPT, n, iv, 12, NULL, 0, buf,
                                                     out, 16, tag));
            mbedtls_gcm_free(&c);
        } else {
            mbedtls_aes_context c;
            uint8_t stream[16];
            size_t off = 0;
            mbedtls_aes_init(&c);
            mbedtls_aes_setkey_enc(&c, key, 128);
            LOOP(mbedtls_aes_crypt_ctr(&c, n, &off, iv, stream, buf, buf));
            mbedtls_aes_free(&c);
        }
    }
#endif
#ifdef REF_SODIUM
    if (strcmp(lib, "sodium") == 0) {
        crypto_aead_aes256gcm_state st;
        unsigned long long clen;
        if (sodium_init() < 0 || !gcm || !crypto_aead_aes256gcm_is_available())
            return 3;
        crypto_aead_aes256gcm_beforenm(&st, key);
        LOOP(bump(iv); crypto_aead_aes256gcm_encrypt_afternm(out, &clen, buf, n, NULL, 0, NULL, iv, &st));
    }
#endif
    if (ops == 0) {
        fprintf(stderr, "%s %s: not built in\n", lib, argv[2]);
        return 3;
    }
    printf("%.1f\n", (double)ops * (double)n / (t1 - t0));
    free(buf);
    free(out);
    return 0;
}
