/*
 * fuzz_cipher_args.c — libFuzzer target for the encrypt/decrypt path below
 * Python: argument validation (as pcb_module.c's oneshot does it), then
 * pcb_cipher_open + pcb_cipher_message.
 *
 * Input layout (missing header bytes read as zero, missing key/IV/AAD bytes
 * as a fixed non-zero pattern):
 *   [0] transformation index (mod the table size)
 *   [1] key length, 0..80 (mod 81)
 *   [2] IV: 0..140 bytes (mod 142), 141 = no IV (None)
 *   [3] bits 0-1: number of AAD components (0..3; 0 = aad=None)
 *       bit 2:    rounds=None (default 32) instead of bytes [4..5]
 *       bit 3:    a transformation name follows the header (below)
 *       bits 4-6: TEA/XTEA implementation for the differential check
 *   [4..5] rounds, 0..1100 (big-endian, mod 1101)
 *   if bit 3: one length byte and that many bytes: a name looked up with
 *       pcb_find_transform (as Python's lookup() does); if it names a
 *       transformation, that one replaces byte [0]'s
 *   then per AAD component: one length byte and that many bytes
 *   then key bytes, then IV bytes, then the data (the rest).
 *
 * Properties (abort() on violation; ASan/UBSan catch memory errors):
 *   - arguments the validators accept encrypt, and the output fits
 *     pcb_max_output(); decrypting it with the same arguments gives the data
 *     back;
 *   - TEA/XTEA: every available implementation (reference, scalar, AVX2,
 *     AVX-512) gives the same ciphertext;
 *   - stream scope (what measure(scope="stream") runs, every mode but SIV):
 *     the whole blocks of the data fed in two updates encrypt to the same
 *     bytes as the message (less padding and tag) and decrypt back;
 *   - names: pcb_find_transform never overruns its buffers on any string,
 *     and finds every transformation by its canonical name;
 *   - the raw data as a ciphertext either decrypts or fails with
 *     PCB_E_DECRYPT (what Python sees as DecryptionError) — never a crash,
 *     never another error class.
 * Every output buffer is malloc'ed at exactly pcb_max_output() bytes, so an
 * overrun is an ASan report.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "crypto/cipher.h"
#include "crypto/tea.h"

static pcb_evp_cache cache;
static int cache_ready;

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
    (void)argc;
    (void)argv;
    pcb_status st = {0};
    if (!pcb_evp_cache_init(&cache, &st)) {
        fprintf(stderr, "fuzz_cipher_args: pcb_evp_cache_init failed: %s\n", st.msg);
        abort();
    }
    cache_ready = 1;
    return 0;
}

typedef struct {
    const uint8_t *p;
    size_t n;
} reader;

static uint8_t rd_byte(reader *r)
{
    if (r->n == 0)
        return 0;
    r->n--;
    return *r->p++;
}

/* Takes len bytes into a fresh exact-size buffer; past the input's end the
 * bytes are a fixed non-zero pattern (zeros would hide overwrites of
 * pointers by key or IV bytes). */
static uint8_t *rd_take(reader *r, size_t len)
{
    uint8_t *out = malloc(len ? len : 1);
    if (out == NULL)
        abort();
    size_t k = len < r->n ? len : r->n;
    memcpy(out, r->p, k);
    for (size_t i = k; i < len; i++)
        out[i] = (uint8_t)(0xA5 ^ (i * 29));
    r->p += k;
    r->n -= k;
    return out;
}

#define FAIL(...)                                                                  \
    do {                                                                           \
        fprintf(stderr, "fuzz_cipher_args: PROPERTY VIOLATED: " __VA_ARGS__);      \
        fprintf(stderr, "\n  transformation=%s key_len=%zu iv_len=%s%zu n_aad=%zu " \
                "rounds=%u data_len=%zu\n", t->name, key_len,                      \
                has_iv ? "" : "(none) ", has_iv ? iv_len : 0, n_aad, rounds,       \
                data_len);                                                         \
        abort();                                                                   \
    } while (0)

/* One whole message; returns 1 ok (out/out_len set), 0 failed (st set). */
static int run_message(const pcb_transform *t, int encrypt, const uint8_t *key, size_t key_len,
                       const uint8_t *iv, size_t iv_len, uint32_t rounds, pcb_tea_impl impl,
                       const pcb_bytes *aad, size_t n_aad, const uint8_t *in, size_t in_len,
                       uint8_t **out, size_t *out_len, size_t *cap, pcb_status *st)
{
    pcb_cipher c;
    *cap = pcb_max_output(t, encrypt, in_len);
    *out = malloc(*cap ? *cap : 1);
    *out_len = 0;
    if (*out == NULL)
        abort();
    int ok = pcb_cipher_open(&c, &cache, t, encrypt, key, key_len, iv, iv_len, rounds, impl, st);
    ok = ok && pcb_cipher_message(&c, 0, aad, n_aad, in, in_len, *out, out_len, st);
    pcb_cipher_close(&c);
    return ok;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (!cache_ready)
        LLVMFuzzerInitialize(NULL, NULL);
    size_t n_transforms;
    const pcb_transform *all = pcb_transforms(&n_transforms);
    reader r = {data, size};

    const pcb_transform *t = &all[rd_byte(&r) % n_transforms];
    size_t key_len = rd_byte(&r) % 81;
    size_t iv_sel = rd_byte(&r) % 142;
    const int has_iv = iv_sel != 141;
    size_t iv_len = has_iv ? iv_sel : 0;
    uint8_t flags = rd_byte(&r);
    size_t n_aad = flags & 3;
    const int rounds_none = (flags >> 2) & 1;
    const unsigned impl_sel = (flags >> 4) & 7;
    uint32_t rounds_raw = (uint32_t)rd_byte(&r) << 8;
    rounds_raw = (rounds_raw | rd_byte(&r)) % 1101;
    uint32_t rounds = rounds_none ? 32 : rounds_raw;
    if (pcb_find_transform(t->name) != t) {
        fprintf(stderr, "fuzz_cipher_args: pcb_find_transform(\"%s\") does not find it\n", t->name);
        abort();
    }
    if (flags & 8) {
        size_t len = rd_byte(&r);
        char *name = (char *)rd_take(&r, len + 1); /* exact size with its NUL */
        name[len] = '\0';
        const pcb_transform *named = pcb_find_transform(name);
        if (named != NULL)
            t = named;
        free(name);
    }

    uint8_t *aad_buf[3] = {NULL, NULL, NULL};
    pcb_bytes aad[3];
    for (size_t i = 0; i < n_aad; i++) {
        size_t len = rd_byte(&r);
        aad_buf[i] = rd_take(&r, len);
        aad[i].data = aad_buf[i];
        aad[i].len = len;
    }
    uint8_t *key = rd_take(&r, key_len);
    uint8_t *iv = has_iv ? rd_take(&r, iv_len) : NULL;
    size_t data_len = r.n;
    uint8_t *msg = rd_take(&r, data_len); /* exact-size copy: overreads are caught */

    pcb_status st = {0};
    uint8_t *ct = NULL, *pt = NULL, *raw = NULL, *alt = NULL, *stream_ct = NULL;
    size_t ct_len = 0, pt_len = 0, raw_len = 0, alt_len = 0, cap;

    /* The validations of oneshot(), in its order. */
    if (!pcb_transform_available(&cache, t))
        goto done;
    if (!pcb_check_key_len(t, key_len, &st) || !pcb_check_iv_len(t, has_iv ? iv_len : SIZE_MAX, &st))
        goto done;
    /* aad: None, or one bytes-like for GCM/ChaCha20-Poly1305, or a list for SIV */
    if (n_aad > 0 && !pcb_is_aead(t))
        goto done;
    if (n_aad > 1 && t->mode != PCB_MODE_SIV)
        goto done;
    if (!rounds_none) {
        if (!pcb_has_rounds(t))
            goto done;
        if (rounds < PCB_TEA_MIN_ROUNDS || rounds > PCB_TEA_MAX_ROUNDS)
            goto done;
    }
    const pcb_tea_impl impl = PCB_TEA_IMPL_AUTO;

    /* Decrypting the raw data as a ciphertext: succeeds or fails cleanly. */
    memset(&st, 0, sizeof st);
    if (pcb_check_length(t, 0, data_len, &st)) {
        if (run_message(t, 0, key, key_len, iv, iv_len, rounds, impl, aad, n_aad, msg, data_len,
                        &raw, &raw_len, &cap, &st)) {
            if (raw_len > cap)
                FAIL("decryption wrote %zu bytes into a %zu-byte buffer", raw_len, cap);
        } else if (st.code != PCB_E_DECRYPT) {
            FAIL("decrypting arbitrary bytes failed with error class %d, not DECRYPT: %s",
                 (int)st.code, st.msg);
        }
    } else if (st.code != PCB_E_DECRYPT) {
        FAIL("pcb_check_length(decrypt) failed with class %d, not DECRYPT: %s", (int)st.code, st.msg);
    }

    /* Encrypt, then decrypt: the data must come back. */
    memset(&st, 0, sizeof st);
    if (!pcb_check_length(t, 1, data_len, &st)) {
        if (st.code != PCB_E_VALUE)
            FAIL("pcb_check_length(encrypt) failed with class %d: %s", (int)st.code, st.msg);
        goto done;
    }
    if (!run_message(t, 1, key, key_len, iv, iv_len, rounds, impl, aad, n_aad, msg, data_len,
                     &ct, &ct_len, &cap, &st))
        FAIL("encryption of validated arguments failed (class %d): %s", (int)st.code, st.msg);
    if (ct_len > cap)
        FAIL("encryption wrote %zu bytes into a %zu-byte buffer", ct_len, cap);
    memset(&st, 0, sizeof st);
    if (!pcb_check_length(t, 0, ct_len, &st))
        FAIL("our own %zu-byte ciphertext fails the length check: %s", ct_len, st.msg);
    if (!run_message(t, 0, key, key_len, iv, iv_len, rounds, impl, aad, n_aad, ct, ct_len,
                     &pt, &pt_len, &cap, &st))
        FAIL("decryption of our own ciphertext failed (class %d): %s", (int)st.code, st.msg);
    if (pt_len != data_len || memcmp(pt, msg, data_len) != 0)
        FAIL("round trip mismatch: %zu bytes in, %zu bytes out", data_len, pt_len);

    /* Stream scope: the same bytes as the message, in two updates. */
    if (t->mode != PCB_MODE_SIV) {
        size_t bs = pcb_block_size(t), whole = data_len - data_len % bs;
        size_t split = whole == 0 ? 0 : (msg[0] % (whole / bs + 1)) * bs;
        for (int enc = 1; enc >= 0 && whole > 0; enc--) {
            const uint8_t *in = enc ? msg : stream_ct;
            uint8_t *out = malloc(whole);
            pcb_cipher c;
            memset(&st, 0, sizeof st);
            if (out == NULL)
                abort();
            int ok = pcb_cipher_open(&c, &cache, t, enc, key, key_len, iv, iv_len, rounds, impl, &st)
                     && pcb_cipher_stream_reset(&c, &st)
                     && pcb_cipher_stream(&c, in, out, split, &st)
                     && pcb_cipher_stream(&c, in + split, out + split, whole - split, &st);
            pcb_cipher_close(&c);
            if (!ok)
                FAIL("stream %s of %zu bytes (split at %zu) failed: %s", enc ? "encryption" : "decryption",
                     whole, split, st.msg);
            if (enc) {
                if (memcmp(out, ct, whole) != 0)
                    FAIL("stream encryption of %zu bytes differs from the message's", whole);
                stream_ct = out;
            } else {
                if (memcmp(out, msg, whole) != 0)
                    FAIL("stream decryption of %zu bytes does not give the data back", whole);
                free(out);
            }
        }
    }

    /* TEA/XTEA: every implementation agrees with the one used above. */
    if (pcb_has_rounds(t)) {
        static const pcb_tea_impl impls[] = {PCB_TEA_IMPL_REF, PCB_TEA_IMPL_SCALAR,
                                             PCB_TEA_IMPL_AVX2, PCB_TEA_IMPL_AVX512};
        pcb_tea_impl other = impls[impl_sel % 4];
        if (pcb_tea_impl_available(other)) {
            memset(&st, 0, sizeof st);
            if (!run_message(t, 1, key, key_len, iv, iv_len, rounds, other, aad, n_aad, msg,
                             data_len, &alt, &alt_len, &cap, &st))
                FAIL("encryption with TEA implementation %s failed: %s",
                     pcb_tea_impl_name(other), st.msg);
            if (alt_len != ct_len || memcmp(alt, ct, ct_len) != 0)
                FAIL("TEA implementation %s disagrees with %s", pcb_tea_impl_name(other),
                     pcb_tea_impl_name(pcb_tea_best_impl()));
        }
    }

done:
    free(stream_ct);
    free(alt);
    free(raw);
    free(pt);
    free(ct);
    free(msg);
    free(iv);
    free(key);
    for (size_t i = 0; i < 3; i++)
        free(aad_buf[i]);
    return 0;
}
