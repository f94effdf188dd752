/*
 * fuzz_floor.c — differential libFuzzer target for the floor kernels
 * (crypto/floor.h) against OpenSSL: AES-GCM against EVP's AES-128/256-GCM,
 * AES-SIV against crypto/siv (S2V and CTR on EVP, the store's OpenSSL path).
 *
 * Input layout: byte [0] picks the case:
 *   bit 0  0 GCM, 1 SIV
 *   bit 1  key size: GCM 16 / 32 bytes, SIV 32 / 64 bytes
 *   bit 2  GCM: encrypt and decrypt in place (out == in)
 *   bits 3-4  SIV: associated-data components (0..3)
 * byte [1]: GCM associated-data length; SIV: the first component's length
 * (later components take byte [2] and byte [3]); byte [4]: where to tamper;
 * then the key (64 bytes, the first 16/32/64 used), the 12-byte GCM IV, the
 * associated data, and the rest as plaintext. Short inputs are zero-padded.
 *
 * Properties (abort() on violation): the floor's ciphertext and tag are
 * OpenSSL's; the floor opens OpenSSL's output to the plaintext; flipping
 * any one byte of it (tag, ciphertext, or SIV's V) makes the floor refuse it
 * and leave the output zeroed. GCM checks every long-message loop this CPU
 * has (PCB_FLOOR_VAES=512, 256, none: set before each key setup, floor.h),
 * so a plaintext of 512 bytes or more reaches the 512-bit loop. On a
 * CPU without AES-NI + PCLMULQDQ every input returns at once
 * (pcb_floor_missing()).
 *
 * Built with -DPCB_FLOOR_SWEEP (no libFuzzer; tests/test_floor.py does) it
 * is a program that feeds a fixed sweep of inputs instead: every GCM length
 * 0..1200 (each remainder after the 512-bit loop's whole passes) and ones
 * around 4 KiB, 16 KiB and 64 KiB, both key sizes, with and without
 * associated data, in place and not, and prints "ok N".
 */
#define _POSIX_C_SOURCE 200809L /* setenv */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <openssl/evp.h>

#include "crypto/floor.h"
#include "crypto/siv.h"

#define DIE(...)                                                           \
    do {                                                                   \
        fprintf(stderr, "fuzz_floor: PROPERTY VIOLATED: " __VA_ARGS__);    \
        fputc('\n', stderr);                                               \
        abort();                                                           \
    } while (0)

static void gcm_ref(const uint8_t *key, size_t kl, const uint8_t iv[12], const uint8_t *aad,
                    size_t al, const uint8_t *p, size_t n, uint8_t *out)
{
    EVP_CIPHER_CTX *c = EVP_CIPHER_CTX_new();
    int l = 0;
    if (c == NULL
        || !EVP_EncryptInit_ex2(c, kl == 16 ? EVP_aes_128_gcm() : EVP_aes_256_gcm(), key, iv, NULL)
        || (al && !EVP_EncryptUpdate(c, NULL, &l, aad, (int)al))
        || (n && !EVP_EncryptUpdate(c, out, &l, p, (int)n))
        || !EVP_EncryptFinal_ex(c, out + n, &l)
        || EVP_CIPHER_CTX_ctrl(c, EVP_CTRL_GCM_GET_TAG, 16, out + n) <= 0)
        DIE("OpenSSL's GCM failed");
    EVP_CIPHER_CTX_free(c);
}

static int all_zero(const uint8_t *p, size_t n)
{
    uint8_t acc = 0;
    for (size_t i = 0; i < n; i++)
        acc |= p[i];
    return acc == 0;
}

/* One GCM case on the loop PCB_FLOOR_VAES names, if this CPU has it (it
 * narrows, never widens; want: OpenSSL's output). */
static void check_gcm_on(const char *loop, int bits, const uint8_t *h, const uint8_t *key, const uint8_t *iv,
                         const uint8_t *aad, size_t al, const uint8_t *p, size_t n,
                         const uint8_t *want)
{
    const size_t kl = (h[0] & 2) ? 32 : 16;
    if (setenv("PCB_FLOOR_VAES", loop, 1) != 0)
        DIE("setenv failed");
    if (pcb_floor_gcm_loop_bits() != bits)
        return;
    uint8_t *got = malloc(n + 16), *back = malloc(n + 16);
    pcb_floor_gcm *k = pcb_floor_gcm_new(key, kl);
    if (!got || !back || !k)
        DIE("out of memory");
    if (h[0] & 4) { /* in place */
        memcpy(got, p, n);
        pcb_floor_gcm_seal(k, iv, aad, al, got, n, got);
    } else {
        pcb_floor_gcm_seal(k, iv, aad, al, p, n, got);
    }
    if (memcmp(want, got, n + 16) != 0)
        DIE("GCM seal differs from OpenSSL (loop %s, key %zu, aad %zu, len %zu)", loop, kl, al, n);
    memcpy(back, want, n + 16);
    if (!pcb_floor_gcm_open(k, iv, aad, al, back, n, want + n, (h[0] & 4) ? back : got)
        || memcmp((h[0] & 4) ? back : got, p, n) != 0)
        DIE("GCM open of OpenSSL's output failed (loop %s, key %zu, aad %zu, len %zu)", loop, kl,
            al, n);
    size_t at = (size_t)h[4] % (n + 16);
    memcpy(back, want, n + 16);
    back[at] ^= 0x01;
    memset(got, 0x5a, n);
    if (pcb_floor_gcm_open(k, iv, aad, al, back, n, back + n, got) != 0)
        DIE("GCM opened a tampered message (loop %s, byte %zu of %zu)", loop, at, n + 16);
    if (!all_zero(got, n))
        DIE("GCM left plaintext of a tampered message");
    pcb_floor_gcm_free(k);
    free(got), free(back);
}

static void check_gcm(const uint8_t *h, const uint8_t *key, const uint8_t *iv, const uint8_t *rest,
                      size_t rest_len)
{
    static const struct {
        const char *name;
        int bits;
    } loops[] = {{"512", 512}, {"256", 256}, {"none", 128}};
    const size_t kl = (h[0] & 2) ? 32 : 16;
    size_t al = h[1] < rest_len ? h[1] : rest_len;
    const uint8_t *aad = rest, *p = rest + al;
    size_t n = rest_len - al;
    uint8_t *want = malloc(n + 16);
    if (!want)
        DIE("out of memory");
    gcm_ref(key, kl, iv, aad, al, p, n, want);
    for (size_t i = 0; i < sizeof loops / sizeof *loops; i++)
        check_gcm_on(loops[i].name, loops[i].bits, h, key, iv, aad, al, p, n, want);
    free(want);
}

static void check_siv(const uint8_t *h, const uint8_t *key, const uint8_t *rest, size_t rest_len)
{
    const size_t kl = (h[0] & 2) ? 64 : 32;
    const int ncomp = (h[0] >> 3) & 3;
    const uint8_t *comp[3];
    size_t clen[3], off = 0;
    for (int i = 0; i < ncomp; i++) {
        clen[i] = h[1 + i] < rest_len - off ? h[1 + i] : rest_len - off;
        comp[i] = rest + off;
        off += clen[i];
    }
    const uint8_t *p = rest + off;
    size_t n = rest_len - off;
    pcb_siv ref;
    memset(&ref, 0, sizeof ref);
    const int big = kl == 64;
    if (!pcb_siv_new(&ref, big ? EVP_aes_256_cbc() : EVP_aes_128_cbc(),
                     big ? EVP_aes_256_ecb() : EVP_aes_128_ecb(),
                     big ? EVP_aes_256_ctr() : EVP_aes_128_ctr())
        || !pcb_siv_set_key(&ref, key, kl))
        DIE("crypto/siv set-up failed");
    pcb_floor_siv *k = pcb_floor_siv_new(key, kl);
    uint8_t dr[16], df[16];
    uint8_t *want = malloc(n + 16), *got = malloc(n + 16), *back = malloc(n + 16);
    if (!k || !want || !got || !back)
        DIE("out of memory");
    memcpy(dr, ref.d0, 16);
    pcb_floor_s2v_start(k, df);
    for (int i = 0; i < ncomp; i++) {
        if (!pcb_s2v_add(&ref, dr, comp[i], clen[i]))
            DIE("crypto/siv S2V failed");
        pcb_floor_s2v_add(k, df, comp[i], clen[i]);
    }
    if (memcmp(dr, df, 16) != 0)
        DIE("S2V state differs after %d component(s)", ncomp);
    if (!pcb_siv_encrypt(&ref, dr, p, n, want))
        DIE("crypto/siv encrypt failed");
    pcb_floor_siv_seal(k, df, p, n, got);
    if (memcmp(want, got, n + 16) != 0)
        DIE("SIV seal differs from OpenSSL (key %zu, %d components, len %zu)", kl, ncomp, n);
    if (!pcb_floor_siv_open(k, df, want, n + 16, back) || memcmp(back, p, n) != 0)
        DIE("SIV open of OpenSSL's output failed (key %zu, len %zu)", kl, n);
    size_t at = (size_t)h[4] % (n + 16);
    memcpy(got, want, n + 16);
    got[at] ^= 0x80;
    memset(back, 0x5a, n + 16);
    if (pcb_floor_siv_open(k, df, got, n + 16, back) != 0)
        DIE("SIV opened a tampered message (byte %zu of %zu)", at, n + 16);
    if (!all_zero(back, n))
        DIE("SIV left plaintext of a tampered message");
    pcb_siv_free(&ref);
    pcb_floor_siv_free(k);
    free(want), free(got), free(back);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    enum { HEAD = 5, KEY = 64, IV = 12, FIXED = HEAD + KEY + IV };
    if (pcb_floor_missing() != NULL)
        return 0;
    uint8_t fixed[FIXED] = {0};
    memcpy(fixed, data, size < FIXED ? size : FIXED);
    size_t rest_len = size > FIXED ? size - FIXED : 0;
    /* an exact-size copy, so a read past the message is an ASan report */
    uint8_t *rest = malloc(rest_len ? rest_len : 1);
    if (rest == NULL)
        return 0;
    memcpy(rest, data + FIXED, rest_len);
    if (fixed[0] & 1)
        check_siv(fixed, fixed + HEAD, rest, rest_len);
    else
        check_gcm(fixed, fixed + HEAD, fixed + HEAD + KEY, rest, rest_len);
    free(rest);
    return 0;
}

#ifdef PCB_FLOOR_SWEEP
int main(void)
{
    enum { FIXED = 5 + 64 + 12 };
    static const size_t extra[] = {4096 - 17, 4096 + 17, 16384, 16384 + 113, 65536 + 5};
    static uint8_t buf[FIXED + 255 + 65536 + 113];
    unsigned long cases = 0;
    for (size_t i = 0; i < sizeof buf; i++)
        buf[i] = (uint8_t)(i * 131 + (i >> 8) * 7 + 1);
    for (size_t j = 0; j <= 1200 + sizeof extra / sizeof *extra; j++) {
        size_t n = j <= 1200 ? j : extra[j - 1201];
        for (int c = 0; c < 8; c++) { /* key size, in place, associated data */
            size_t al = (c & 1) ? 20 + n % 53 : 0;
            buf[0] = (uint8_t)(((c >> 1) & 1) << 1 | ((c >> 2) & 1) << 2); /* GCM */
            buf[1] = (uint8_t)al;
            buf[4] = (uint8_t)(n + (size_t)c * 37); /* where to tamper */
            buf[5] ^= (uint8_t)j;                   /* a new key now and then */
            if (LLVMFuzzerTestOneInput(buf, FIXED + al + n) != 0)
                return 1;
            cases++;
        }
    }
    printf("ok %lu\n", cases);
    return 0;
}
#endif
